//! An "adaptive" arm judged by what it does: a server running a draft-length schedule (vLLM's
//! `num_speculative_tokens_per_batch_size`, SGLang's `--speculative-adaptive`, TensorRT-LLM's
//! `draft_len_schedule`) set beside the best fixed choice at each level (a fixed-k arm or
//! plain), by the sweep's compared figure and median TPOT.
//!
//! Its acceptance length is not comparable with a fixed-k arm's: the engines count a draft only
//! when a step drafted at least one token, so the steps the schedule turns off are in no
//! count; the length stays flat while the speedup falls.

use serde::{Deserialize, Serialize};

use super::levels::Axis;

/// What an adaptive arm's acceptance length means, said wherever it is shown.
pub const ADAPTIVE_ACCEPTANCE_NOTE: &str = "counts only steps that drafted";

/// How the schedule fares against the best fixed choice at one level, the repeats' ranges
/// deciding: `Ahead` when its worst repeat beats the other's best, `Behind` the other way
/// round, `Tied` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Ahead,
    Tied,
    Behind,
}

impl Verdict {
    /// The verdict of an adaptive arm's ratio bounds against the best fixed choice's.
    pub fn of(bounds: (f64, f64), best_bounds: (f64, f64)) -> Verdict {
        if bounds.0 > best_bounds.1 {
            Verdict::Ahead
        } else if bounds.1 < best_bounds.0 {
            Verdict::Behind
        } else {
            Verdict::Tied
        }
    }

    fn word(self) -> &'static str {
        match self {
            Verdict::Ahead => "ahead",
            Verdict::Tied => "tied",
            Verdict::Behind => "behind",
        }
    }
}

/// One level of an adaptive arm against the best fixed choice there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveLevel {
    pub level: f64,
    /// The adaptive arm's ratio to plain (the sweep's compared figure) and its repeats' range.
    pub ratio: f64,
    pub bounds: (f64, f64),
    /// The fixed-k arm measured best at this level, `None` for plain (ratio 1).
    pub best_fixed: Option<String>,
    pub best_ratio: f64,
    pub best_bounds: (f64, f64),
    /// Median TPOT (ms) of the adaptive arm and of the best fixed choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_median_tpot_ms: Option<f64>,
    pub verdict: Verdict,
}

/// An adaptive arm, level by level, against the best fixed choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveJudgement {
    pub arm: String,
    pub levels: Vec<AdaptiveLevel>,
}

impl AdaptiveJudgement {
    /// How many levels the schedule is ahead of, tied with and behind the best fixed choice.
    pub fn tally(&self) -> (usize, usize, usize) {
        let count = |v: Verdict| self.levels.iter().filter(|l| l.verdict == v).count();
        (count(Verdict::Ahead), count(Verdict::Tied), count(Verdict::Behind))
    }

    /// One sentence: the schedule against the best fixed choice over the levels measured.
    pub fn summary(&self) -> String {
        let (ahead, tied, behind) = self.tally();
        format!(
            "the schedule of {} is ahead of the best fixed choice at {ahead}, tied at {tied} and behind at {behind} of {} levels",
            self.arm,
            self.levels.len()
        )
    }

    /// The console text: a line per level, then the summary.
    pub fn render(&self, axis: Axis) -> String {
        let figure = match axis {
            Axis::Concurrency => "output throughput",
            Axis::RequestRate => "median E2E latency",
        };
        let mut out = format!(
            "Adaptive arm {} (a server running a schedule), against the best fixed choice at each level by {figure} ÷ plain and median TPOT; its acceptance length {ADAPTIVE_ACCEPTANCE_NOTE}:\n",
            self.arm
        );
        let range = |(lo, hi): (f64, f64)| {
            if (hi - lo).abs() > 1e-12 {
                format!(" ({lo:.3}–{hi:.3})")
            } else {
                String::new()
            }
        };
        let tpot = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.2} ms"));
        for l in &self.levels {
            out.push_str(&format!(
                "  {:>10}: {:.3}{} against {} {:.3}{}: {}; median TPOT {} vs {}\n",
                l.level,
                l.ratio,
                range(l.bounds),
                l.best_fixed.as_deref().unwrap_or("plain"),
                l.best_ratio,
                range(l.best_bounds),
                l.verdict.word(),
                tpot(l.median_tpot_ms),
                tpot(l.best_median_tpot_ms),
            ));
        }
        out.push_str(&format!("  {}\n", self.summary()));
        out
    }
}
