//! What the page shows of a run, the same live and saved: its status and progress, the tiles,
//! the timeline of scrapes, the latency statistics and distributions, and the per-request
//! summary. The WebSocket protocol (`protocol`) carries it; result files (`results`) store it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::aggregate::{Bins, SpecSummary};
use crate::run::{LatencyStats, RunTally};

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

/// Everything the live page shows about one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub label: String,
    pub model: String,
    pub status: RunStatus,
    pub progress: Progress,
    pub tiles: Tiles,
    pub timeline: Vec<TimelinePoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<LatencyStats>,
    /// Time per output token after the first (per request), beside the per-chunk ITL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<LatencyStats>,
    #[serde(default)]
    pub distributions: Distributions,
    /// Per-request path (AIPerf's figures), when requests carry stats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request: Option<SpecSummary>,
    /// Why a path has no data.
    pub not_available: Vec<String>,
    /// What the finished run noticed about its paths (see `notices::Notices`).
    #[serde(default)]
    pub notices: Vec<String>,
    /// Measured draft tokens per draft of the finished run (below k for proposers that draft
    /// less when their match is short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_draft_tokens: Option<f64>,
    /// Output tokens per second over the whole run (so far).
    pub output_tokens_per_s: f64,
    /// Output tokens per second in the steady window, and that window's length, once the run
    /// is saved and had one (the figure sweeps compare).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_output_tokens_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_window_s: Option<f64>,
    /// The run this hub finished just before this one started (a sweep's previous point): its
    /// whole-run tiles stand, labelled as its, until this run's first scrape interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<PreviousRun>,
}

/// A finished run's label and tiles, kept beside the next run of the same hub.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreviousRun {
    pub label: String,
    pub tiles: Tiles,
}

/// Scrape intervals a saved run's timelines need before they are drawn.
pub const MIN_TIMELINE_INTERVALS: usize = 4;

impl RunView {
    /// What a tile shows: this run's figure, else the previous run's with its label, else
    /// nothing yet.
    pub fn tile_or_previous(&self, pick: fn(&Tiles) -> Option<f64>) -> (Option<f64>, Option<&str>) {
        match (pick(&self.tiles), &self.previous) {
            (Some(v), _) => (Some(v), None),
            (None, Some(p)) => match pick(&p.tiles) {
                Some(v) => (Some(v), Some(p.label.as_str())),
                None => (None, None),
            },
            (None, None) => (None, None),
        }
    }

    /// Why a saved run's timelines are not drawn: its scrapes covered fewer than
    /// [`MIN_TIMELINE_INTERVALS`] intervals of any one endpoint, so "over time" would be a dot or
    /// two. A running run always draws (its timeline is still growing).
    pub fn timeline_too_short(&self) -> Option<String> {
        if matches!(self.status, RunStatus::Running | RunStatus::Idle) {
            return None;
        }
        let mut per_endpoint: BTreeMap<&str, (usize, f64)> = BTreeMap::new();
        for p in &self.timeline {
            let entry = per_endpoint.entry(p.endpoint.as_str()).or_insert((0, p.interval_s));
            entry.0 += 1;
        }
        let (intervals, interval_s) = per_endpoint
            .values()
            .copied()
            .max_by_key(|(n, _)| *n)
            .unwrap_or((0, 0.0));
        if intervals >= MIN_TIMELINE_INTERVALS {
            return None;
        }
        let covered = match intervals {
            0 => "no scrape interval".to_string(),
            1 => format!("1 scrape interval of {interval_s:.2} s"),
            n => format!("{n} scrape intervals of {interval_s:.2} s"),
        };
        Some(format!(
            "Not drawn: this run lasted {:.2} s, {covered}; a timeline needs at least {MIN_TIMELINE_INTERVALS}. \
             A longer run (--duration or more --num-prompts) or a shorter --scrape-interval draws one.",
            self.progress.elapsed_s
        ))
    }

    /// An empty view before any run.
    pub fn idle() -> RunView {
        RunView {
            label: String::new(),
            model: String::new(),
            status: RunStatus::Idle,
            progress: Progress::default(),
            tiles: Tiles::default(),
            timeline: Vec::new(),
            ttft_ms: None,
            itl_ms: None,
            tpot_ms: None,
            e2el_ms: None,
            distributions: Distributions::default(),
            per_request: None,
            not_available: Vec::new(),
            notices: Vec::new(),
            mean_draft_tokens: None,
            output_tokens_per_s: 0.0,
            steady_output_tokens_per_s: None,
            steady_window_s: None,
            previous: None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn point(t: f64) -> TimelinePoint {
        TimelinePoint {
            endpoint: "h:1".into(),
            t_s: t,
            interval_s: 1.0,
            accepted_per_s: 10.0,
            drafted_per_s: 20.0,
            drafts_per_s: 5.0,
            acceptance_rate: Some(50.0),
            acceptance_length: Some(3.0),
            per_position: BTreeMap::new(),
            error: None,
        }
    }

    #[test]
    fn a_saved_run_draws_its_timeline_only_over_enough_intervals() {
        let mut run = RunView::idle();
        run.status = RunStatus::Finished;
        run.progress.elapsed_s = 0.31;
        run.timeline = vec![point(0.25)];
        let why = run.timeline_too_short().expect("one interval is not a timeline");
        assert!(
            why.starts_with("Not drawn: this run lasted 0.31 s, 1 scrape interval of 1.00 s;"),
            "{why}"
        );
        // Two endpoints of three intervals each are still three intervals, not six.
        run.timeline = (1..=3)
            .flat_map(|t| {
                let other = TimelinePoint {
                    endpoint: "h:2".into(),
                    ..point(f64::from(t))
                };
                [point(f64::from(t)), other]
            })
            .collect();
        assert!(run.timeline_too_short().unwrap().contains("3 scrape intervals"));
        run.timeline.push(point(4.0));
        assert_eq!(run.timeline_too_short(), None);
        // While it runs, the timeline grows and is drawn from its first point.
        run.timeline.truncate(1);
        run.status = RunStatus::Running;
        assert_eq!(run.timeline_too_short(), None);
    }
}
