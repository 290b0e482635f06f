//! The server-scrape path (docs/METRICS.md §1), from a `/metrics` text to a window's figures, in
//! order of use: which engine and families a text holds (`schema`), the counters of one scrape
//! (`counters`), the text read into them (`parse`), gauges averaged (`gauges`), the engine's load
//! (`load`), each figure's formula per engine, shared with the PromQL writer (`formulas`), a window's
//! delta and figures (`derive`), one server's window result and its
//! AISBench console block (`window`), and reset-aware accumulation for live sampling (`live`).

pub mod counters;
pub mod derive;
pub mod fleet;
pub mod formulas;
pub mod gauges;
pub mod live;
pub mod load;
pub mod parse;
pub mod prom;
pub mod schema;
pub mod window;

pub use counters::{CounterSet, SpecConfig, SpecCounters};
pub use derive::{
    derive, derive_since_start, derive_stats, flat_positions, window_delta, SpecDecodeData, WindowFacts, NO_ACTIVITY,
};
pub use gauges::GaugeMeans;
pub use live::IncreaseAccumulator;
pub use load::LoadSample;
pub use parse::{counters_from_text, parse_metrics, MetricsSnapshot, ScrapeFailure, SglangGauges};
pub use schema::{COUNTER_PREFIXES, ENGINE_GAUGES};
pub use window::{
    console_block, window_before, window_result, window_result_with, RawPhases, ResultStatus, SpecDecodeResult,
};

/// Counters and counter sets the unit tests build.
#[cfg(test)]
pub(crate) mod testing {
    use std::collections::BTreeMap;

    use super::{CounterSet, SpecCounters};

    /// One label set's counters from its three totals and per-position values.
    pub fn counters(drafts: u64, tokens: u64, accepted: u64, per_pos: &[u64]) -> SpecCounters {
        SpecCounters::new(drafts, tokens, accepted, per_pos)
    }

    /// A vLLM scrape with one label set (`engine="0"`).
    pub fn single(c: SpecCounters) -> CounterSet {
        CounterSet {
            prefix: "vllm:".into(),
            total: c.clone(),
            series: [("engine=\"0\"".to_string(), c)].into_iter().collect(),
            gauges: BTreeMap::new(),
            rounded_max: None,
            missing: Vec::new(),
            spec_config: None,
        }
    }
}
