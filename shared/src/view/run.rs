//! What the page shows of a run, the same live and saved: its status and progress, the tiles,
//! the timeline of scrapes, the latency statistics and distributions, and the per-request
//! summary. The WebSocket protocol (`protocol`) carries it; a saved `result.json` becomes one
//! through [`run_view_from_result`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::run_result::RunResult;
use crate::run::aggregate::SpecSummary;
pub use crate::run::progress::{draft_share_pct, Distributions, Progress, RunStatus, Tiles, TimelinePoint, MAX_BINS};
use crate::run::record::LatencyStats;

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
    /// The per-token ITL, tokens per chunk and E2E normalized interactivity (a saved run's).
    #[serde(default, skip_serializing_if = "crate::run::chunks::ChunkFigures::is_empty")]
    pub chunks: crate::run::chunks::ChunkFigures,
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
    /// The "content-invalid for acceptance" mark's sentence, for a saved run that carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_invalid: Option<String>,
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
            chunks: Default::default(),
            distributions: Distributions::default(),
            per_request: None,
            not_available: Vec::new(),
            notices: Vec::new(),
            content_invalid: None,
            mean_draft_tokens: None,
            output_tokens_per_s: 0.0,
            steady_output_tokens_per_s: None,
            steady_window_s: None,
            previous: None,
        }
    }
}

/// A saved run (`result.json`) as a finished [`RunView`], so the page shows past runs with the
/// same views as live ones. Missing keys stay empty; nothing is recomputed from token counts.
pub fn run_view_from_result(result: &RunResult) -> RunView {
    let per_s = |n: Option<u64>| {
        let duration = result.duration.filter(|d| *d > 0.0)?;
        Some(n? as f64 / duration)
    };
    let accepted = result.spec_decode_accepted_tokens;
    let tiles = Tiles {
        acceptance_rate: result.spec_decode_acceptance_rate,
        acceptance_length: result.spec_decode_acceptance_length,
        accepted_per_s: per_s(accepted),
        drafted_per_s: per_s(result.spec_decode_draft_tokens),
        drafts_per_s: per_s(result.spec_decode_num_drafts),
        draft_share: accepted
            .zip(result.spec_decode_num_drafts)
            .and_then(|(a, d)| draft_share_pct(a as f64, d as f64)),
    };
    let spec = result.spec_decode.clone().unwrap_or_default();
    RunView {
        label: result.label.clone(),
        model: result.model_id.clone().unwrap_or_default(),
        status: if result.partial {
            RunStatus::Partial
        } else {
            RunStatus::Finished
        },
        progress: Progress {
            sent: result.requests(),
            completed: result.completed.unwrap_or(0),
            failed: result.failed.unwrap_or(0),
            total: result.num_prompts,
            elapsed_s: result.duration.filter(|d| *d > 0.0).unwrap_or(0.0),
        },
        tiles,
        timeline: spec.timeline,
        ttft_ms: result.latency("ttft"),
        itl_ms: result.latency("itl"),
        tpot_ms: result.latency("tpot"),
        e2el_ms: result.latency("e2el"),
        chunks: result.chunk_figures(),
        distributions: result.distributions.clone().unwrap_or_default(),
        not_available: result.not_available(),
        per_request: spec.per_request,
        // A run recovered from its records says so first.
        notices: result
            .recovered
            .iter()
            .cloned()
            .chain(result.notices.iter().flat_map(|n| n.messages.clone()))
            .collect(),
        content_invalid: crate::results::content_mark::content_invalid_sentence(&result.content_invalid()),
        mean_draft_tokens: result
            .spec_decode_draft_tokens
            .zip(result.spec_decode_num_drafts)
            .filter(|(_, drafts)| *drafts > 0)
            .map(|(tokens, drafts)| tokens as f64 / drafts as f64)
            .or(result.spec_decode_mean_draft_tokens),
        output_tokens_per_s: result.output_throughput.unwrap_or(0.0),
        steady_output_tokens_per_s: result.steady_output_throughput,
        steady_window_s: result.steady_window_s,
        previous: None,
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

#[cfg(test)]
mod view_tests {
    use super::*;

    #[test]
    fn a_vllm_result_becomes_a_finished_view() {
        let v = serde_json::json!({
            "label": "spec-c16", "model_id": "m", "completed": 30, "failed": 2, "num_prompts": 32, "duration": 2.0,
            "total_output_tokens": 3000, "output_throughput": 1500.0, "mean_ttft_ms": 20.0, "median_ttft_ms": 19.0,
            "p99_ttft_ms": 40.0, "spec_decode_acceptance_rate": 60.0, "spec_decode_acceptance_length": 2.8,
            "spec_decode_accepted_tokens": 1200, "spec_decode_draft_tokens": 2000, "spec_decode_num_drafts": 500
        });
        let run = run_view_from_result(&serde_json::from_value(v).unwrap());
        assert_eq!(run.status, RunStatus::Finished);
        assert_eq!((run.progress.completed, run.progress.failed), (30, 2));
        assert_eq!(run.tiles.acceptance_rate, Some(60.0));
        assert_eq!(run.tiles.accepted_per_s, Some(600.0));
        assert_eq!(
            run.tiles.draft_share,
            Some(1200.0 / 1700.0 * 100.0),
            "accepted / (accepted + drafts)"
        );
        assert_eq!(run.ttft_ms.unwrap().percentiles["99"], 40.0);
        assert_eq!(run.not_available.len(), 1);
        assert_eq!(run.mean_draft_tokens, Some(4.0), "2000 draft tokens in 500 drafts");
        assert!(run.notices.is_empty());
    }

    #[test]
    fn a_runs_notices_reach_its_view() {
        let v = serde_json::json!({
            "spec_decode_num_drafts": 300, "spec_decode_draft_tokens": 778,
            "notices": {"messages": ["Paths disagree: …", "Drafts were shorter than k: …"], "per_request_stats_missing": false}
        });
        let run = run_view_from_result(&serde_json::from_value(v).unwrap());
        assert_eq!(run.notices, ["Paths disagree: …", "Drafts were shorter than k: …"]);
        assert_eq!(run.mean_draft_tokens, Some(778.0 / 300.0));
    }
}
