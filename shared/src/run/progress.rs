//! A run as it goes and as it ends: its status, request counts, vLLM Grafana's tiles, the
//! timeline of scrapes and the distributions' bins. Result files store them; the page's view
//! of a run (`view::run`) shows them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::run::aggregate::Bins;
use crate::run::record::RunTally;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// No run yet (the dashboard was started before any benchmark).
    Idle,
    Running,
    Finished,
    /// Stopped early (Ctrl-C): the figures cover what finished.
    Partial,
}

/// Request counts so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    /// Requests planned (absent for duration-bound runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    pub elapsed_s: f64,
}

/// vLLM Grafana's headline tiles, from the live scrape (None: "No traffic").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tiles {
    /// Percent.
    pub acceptance_rate: Option<f64>,
    pub acceptance_length: Option<f64>,
    pub accepted_per_s: Option<f64>,
    pub drafted_per_s: Option<f64>,
    pub drafts_per_s: Option<f64>,
    /// Share of the drafting steps' output that came from accepted drafts, percent: see
    /// [`draft_share_pct`].
    pub draft_share: Option<f64>,
}

/// "Output from drafts": of the tokens the drafting steps emitted, the percentage that were
/// accepted drafts. Each step emits its accepted drafts plus one token of the target's own, so
/// over one window (an interval or the whole run) that is accepted / (accepted + drafts): both
/// counters come from the same scrape window, so the share never mixes an interval with the
/// run. `None` without drafts.
pub fn draft_share_pct(accepted_tokens: f64, drafts: f64) -> Option<f64> {
    (drafts > 0.0 && accepted_tokens >= 0.0).then(|| accepted_tokens / (accepted_tokens + drafts) * 100.0)
}

/// One live-scrape interval of one endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    pub endpoint: String,
    /// Seconds since the run started (end of the interval).
    pub t_s: f64,
    pub interval_s: f64,
    pub accepted_per_s: f64,
    pub drafted_per_s: f64,
    pub drafts_per_s: f64,
    /// Percent; absent when nothing was drafted in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_length: Option<f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_position: BTreeMap<u32, f64>,
    /// Scrape failure of this interval, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Bins per distribution chart (⌈√n⌉ up to this many).
pub const MAX_BINS: usize = 40;

/// The run's distributions as chart bins: latencies of successful requests and the per-request
/// acceptance length. Also written to `result.json` so a past run shows the same charts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Distributions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<Bins>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<Bins>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<Bins>,
    /// Per-request mean acceptance length (requests that took spec-decode steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_length: Option<Bins>,
}

impl Distributions {
    /// The window's distributions, from its folded records.
    pub fn of(tally: &RunTally) -> Distributions {
        Distributions {
            ttft_ms: Bins::of(&tally.ttft_ms, MAX_BINS),
            itl_ms: Bins::of(&tally.itl_ms, MAX_BINS),
            e2el_ms: Bins::of(&tally.e2el_ms, MAX_BINS),
            acceptance_length: tally.spec.acceptance_length_bins(MAX_BINS),
        }
    }
}
