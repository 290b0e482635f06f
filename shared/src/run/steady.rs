//! Steady-state throughput of a closed-loop run: output tokens counted only while every slot
//! is busy with staggered requests, from the end of the first wave (the c-th response: the
//! synchronised ramp-up is over) to the last send (after it slots empty one by one: the drain).
//! `vllm bench serve`'s `output_throughput` divides all tokens by the whole duration, ramp-up
//! and stragglers included; at high concurrency with few waves those dominate and make a sweep's
//! crossing wander (docs/METRICS.md §5).

use serde::{Deserialize, Serialize};

use crate::run::record::RequestRecord;

/// The steady window of one run and what arrived in it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    /// Window start and end, milliseconds after the run started.
    pub start_ms: f64,
    pub end_ms: f64,
    /// Output tokens that arrived inside the window.
    pub output_tokens: f64,
    pub output_tokens_per_s: f64,
}

/// The arrival time and token count of each piece of a response: its chunks when streamed
/// (the tokens spread evenly over them), else the whole answer at its end.
fn arrivals(r: &RequestRecord) -> Vec<(f64, f64)> {
    let tokens = r.output_tokens as f64;
    match (r.ttft_ms, r.e2el_ms) {
        (Some(ttft), _) if !r.itl_ms.is_empty() => {
            let per_chunk = tokens / (r.itl_ms.len() + 1) as f64;
            let mut at = r.start_ms + ttft;
            let mut out = vec![(at, per_chunk)];
            for gap in &r.itl_ms {
                at += gap;
                out.push((at, per_chunk));
            }
            out
        }
        (_, Some(e2el)) => vec![(r.start_ms + e2el, tokens)],
        _ => Vec::new(),
    }
}

/// The steady window of a closed-loop run at `concurrency`, or `None` when the run never got
/// there (fewer responses than slots, or its last send before the first wave ended: too few
/// requests per slot). Two passes over the records: [`SteadyScan`] and [`SteadyCount`].
pub fn steady_state<'a, I>(records: I, concurrency: u64) -> Option<SteadyState>
where
    I: IntoIterator<Item = &'a RequestRecord>,
    I::IntoIter: Clone,
{
    let records = records.into_iter();
    let mut scan = SteadyScan::new(concurrency)?;
    records.clone().for_each(|r| scan.observe(r));
    let mut count = scan.window()?;
    records.for_each(|r| count.count(r));
    Some(count.finish())
}

/// A finite time that orders totally (for the heap of earliest ends).
#[derive(Debug, Clone, Copy, PartialEq)]
struct At(f64);

impl Eq for At {}

impl PartialOrd for At {
    fn partial_cmp(&self, other: &At) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for At {
    fn cmp(&self, other: &At) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The first pass: the window's ends from the records, in memory bounded by the concurrency
/// (the `c` earliest response ends and the latest send).
#[derive(Debug, Clone)]
pub struct SteadyScan {
    slots: usize,
    /// The `slots` earliest ends seen so far (a max-heap: the latest of them on top).
    earliest_ends: std::collections::BinaryHeap<At>,
    last_send_ms: f64,
    /// Σ e2el and how many, for the mean request time.
    e2el_sum_ms: f64,
    e2el_count: u64,
}

impl SteadyScan {
    /// A scan for a closed loop of `concurrency` slots (`None` for none).
    pub fn new(concurrency: u64) -> Option<SteadyScan> {
        let slots = usize::try_from(concurrency).ok().filter(|c| *c >= 1)?;
        Some(SteadyScan {
            slots,
            earliest_ends: std::collections::BinaryHeap::with_capacity(slots + 1),
            last_send_ms: f64::NEG_INFINITY,
            e2el_sum_ms: 0.0,
            e2el_count: 0,
        })
    }

    pub fn observe(&mut self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        self.last_send_ms = self.last_send_ms.max(r.start_ms);
        if let Some(e2el) = r.e2el_ms.filter(|e| e.is_finite()) {
            self.e2el_sum_ms += e2el;
            self.e2el_count += 1;
        }
        if let Some(end) = r.e2el_ms.map(|e| r.start_ms + e).filter(|t| t.is_finite()) {
            self.earliest_ends.push(At(end));
            if self.earliest_ends.len() > self.slots {
                self.earliest_ends.pop();
            }
        }
    }

    /// The window (from the c-th response to the last send) and its second pass; `None` when
    /// the run never filled its slots, or when the window is shorter than a mean request: then
    /// no slot finishes a whole request inside it, and the count would measure where its edges
    /// fall between responses (two requests per slot in lockstep give a window of a few
    /// microseconds between the waves) rather than the server.
    pub fn window(&self) -> Option<SteadyCount> {
        if self.earliest_ends.len() < self.slots || self.e2el_count == 0 {
            return None;
        }
        let start_ms = self.earliest_ends.peek()?.0;
        let mean_e2el_ms = self.e2el_sum_ms / self.e2el_count as f64;
        (self.last_send_ms - start_ms >= mean_e2el_ms).then_some(SteadyCount {
            start_ms,
            end_ms: self.last_send_ms,
            output_tokens: 0.0,
        })
    }
}

/// The second pass: the output tokens that arrived inside the window.
#[derive(Debug, Clone)]
pub struct SteadyCount {
    start_ms: f64,
    end_ms: f64,
    output_tokens: f64,
}

impl SteadyCount {
    pub fn count(&mut self, r: &RequestRecord) {
        if r.warmup || !r.success {
            return;
        }
        self.output_tokens += arrivals(r)
            .into_iter()
            .filter(|(at, _)| *at > self.start_ms && *at <= self.end_ms)
            .map(|(_, tokens)| tokens)
            .sum::<f64>();
    }

    pub fn finish(self) -> SteadyState {
        SteadyState {
            start_ms: self.start_ms,
            end_ms: self.end_ms,
            output_tokens: self.output_tokens,
            output_tokens_per_s: self.output_tokens / ((self.end_ms - self.start_ms) / 1e3),
        }
    }
}

/// The median of some values and their spread (min, max); `None` for none.
pub fn median_and_spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((median, v[0], v[n - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(start_ms: f64, e2el_ms: f64, tokens: u64, itl: Vec<f64>) -> RequestRecord {
        RequestRecord {
            request_id: 0,
            url: "u".into(),
            category: None,
            warmup: false,
            start_ms,
            success: true,
            ttft_ms: Some(e2el_ms - itl.iter().sum::<f64>()),
            e2el_ms: Some(e2el_ms),
            itl_ms: itl,
            input_tokens: 10,
            output_tokens: tokens,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn the_window_runs_from_the_first_wave_to_the_last_send() {
        // Two slots, each request 100 ms, 10 tokens in 10 chunks 10 ms apart (first at 10 ms).
        let gaps = vec![10.0; 9];
        let runs = [
            record(0.0, 100.0, 10, gaps.clone()),
            record(0.0, 100.0, 10, gaps.clone()),
            record(100.0, 100.0, 10, gaps.clone()),
            record(100.0, 100.0, 10, gaps.clone()),
            record(200.0, 100.0, 10, gaps.clone()),
            record(200.0, 100.0, 10, gaps.clone()),
        ];
        let s = steady_state(&runs, 2).unwrap();
        assert_eq!((s.start_ms, s.end_ms), (100.0, 200.0));
        // Inside (100, 200]: the second wave's 10 chunks from each slot.
        assert!((s.output_tokens - 20.0).abs() < 1e-9, "{s:?}");
        assert!((s.output_tokens_per_s - 200.0).abs() < 1e-9);
        // One wave only: no steady window.
        assert_eq!(steady_state(&runs[..2], 2), None);
        assert_eq!(steady_state(&runs, 7), None);
    }

    #[test]
    fn a_window_shorter_than_a_request_is_no_window() {
        // Two requests per slot, nearly in lockstep: the window (101, 101.5] holds a sliver of
        // one chunk, which would read as 20,000 tokens/s or as nothing.
        let gaps = vec![10.0; 9];
        let runs = [
            record(0.0, 100.0, 10, gaps.clone()),
            record(0.0, 101.0, 10, gaps.clone()),
            record(100.0, 100.0, 10, gaps.clone()),
            record(101.5, 100.0, 10, gaps.clone()),
        ];
        assert_eq!(steady_state(&runs, 2), None);
    }

    #[test]
    fn medians_and_spreads() {
        assert_eq!(median_and_spread(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(median_and_spread(&[4.0, 1.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(median_and_spread(&[]), None);
    }
}
