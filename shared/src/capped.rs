//! Lines a run may see without end (counter resets, series short of samples), kept bounded: how
//! many there were, and the first few in full.
//!
//! A `/metrics` of 100,000 series whose counters fall at every scrape would otherwise add
//! 300,000 lines a scrape to memory and to `result.json`; what a reader needs is that it
//! happened, how often, and an example or two.

use serde::{Deserialize, Serialize};

/// How many lines a [`CappedLog`] keeps in full.
pub const LINES_KEPT: usize = 10;

/// A count of events and the text of the first [`LINES_KEPT`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CappedLog {
    /// Every event recorded.
    pub count: u64,
    /// The first events' text, in order.
    pub kept: Vec<String>,
}

impl CappedLog {
    /// Record one event; its text is made only while there is room to keep it.
    pub fn record(&mut self, text: impl FnOnce() -> String) {
        self.count += 1;
        if self.kept.len() < LINES_KEPT {
            self.kept.push(text());
        }
    }

    /// Fold in another log's events (its kept text while there is room).
    pub fn absorb(&mut self, other: CappedLog) {
        self.count += other.count;
        let room = LINES_KEPT.saturating_sub(self.kept.len());
        self.kept.extend(other.kept.into_iter().take(room));
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The first event's text.
    pub fn first(&self) -> Option<&str> {
        self.kept.first().map(String::as_str)
    }

    /// Events counted whose text was not kept.
    pub fn dropped(&self) -> u64 {
        self.count - self.kept.len() as u64
    }

    /// The kept lines, each with `prefix`, then one line saying how many more there were (when
    /// any were not kept): what the console, the page and `result.json` show.
    pub fn lines(&self, prefix: &str, what: &str) -> Vec<String> {
        let mut lines: Vec<String> = self.kept.iter().map(|l| format!("{prefix}{l}")).collect();
        if self.dropped() > 0 {
            lines.push(format!(
                "{prefix}… and {} more {what} not listed ({} in all)",
                self.dropped(),
                self.count
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_lines_and_counts_the_rest_without_making_their_text() {
        let mut log = CappedLog::default();
        let mut made = 0;
        for i in 0..1000 {
            log.record(|| {
                made += 1;
                format!("reset {i}")
            });
        }
        assert_eq!((log.count, log.kept.len(), made), (1000, LINES_KEPT, LINES_KEPT));
        let lines = log.lines("[a] ", "resets");
        assert_eq!(lines.len(), LINES_KEPT + 1);
        assert_eq!(lines[0], "[a] reset 0");
        assert_eq!(lines[LINES_KEPT], "[a] … and 990 more resets not listed (1000 in all)");
    }

    #[test]
    fn absorbing_adds_counts_and_keeps_text_while_there_is_room() {
        let mut a = CappedLog::default();
        for i in 0..8 {
            a.record(|| format!("a{i}"));
        }
        let mut b = CappedLog::default();
        for i in 0..5 {
            b.record(|| format!("b{i}"));
        }
        a.absorb(b);
        assert_eq!(a.count, 13);
        assert_eq!(a.kept.len(), LINES_KEPT);
        assert_eq!(a.kept[8..], ["b0".to_string(), "b1".to_string()]);
        assert_eq!(a.dropped(), 3);
        let small = CappedLog {
            count: 1,
            kept: vec!["x".into()],
        };
        assert_eq!(small.lines("", "resets"), ["x"]);
    }
}
