//! The dashboard's WebSocket protocol (versioned): a hello, a full snapshot of the run, then
//! deltas a few times per second with sequence numbers, and a finished message. A client that
//! connects late, reconnects, or lags behind gets a fresh snapshot; it applies a delta only when
//! its sequence number follows the last one it has.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::aggregate::{Bins, SpecAggregator, SpecSummary};
use crate::results::RunResult;
use crate::run::LatencyStats;

/// Bumped whenever a message changes shape; the page refuses other versions with a message.
pub const PROTOCOL_VERSION: u32 = 3;

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
    /// Share of output tokens that came from accepted drafts, percent.
    pub draft_share: Option<f64>,
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
    pub fn from_values(ttft_ms: &[f64], itl_ms: &[f64], e2el_ms: &[f64], spec: &SpecAggregator) -> Distributions {
        Distributions {
            ttft_ms: Bins::from_values(ttft_ms, MAX_BINS),
            itl_ms: Bins::from_values(itl_ms, MAX_BINS),
            e2el_ms: Bins::from_values(e2el_ms, MAX_BINS),
            acceptance_length: spec.acceptance_length_bins(MAX_BINS),
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
    /// Output tokens per second over the run so far.
    pub output_tokens_per_s: f64,
}

impl RunView {
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
            e2el_ms: None,
            distributions: Distributions::default(),
            per_request: None,
            not_available: Vec::new(),
            notices: Vec::new(),
            mean_draft_tokens: None,
            output_tokens_per_s: 0.0,
        }
    }

    /// What changed since `older` (which must be an earlier state of the same run).
    pub fn delta_since(&self, older: &RunView) -> RunDelta {
        let fresh = older.timeline.len().min(self.timeline.len());
        RunDelta {
            status: self.status,
            progress: self.progress.clone(),
            tiles: self.tiles.clone(),
            timeline_append: self.timeline[fresh..].to_vec(),
            ttft_ms: self.ttft_ms.clone(),
            itl_ms: self.itl_ms.clone(),
            e2el_ms: self.e2el_ms.clone(),
            distributions: self.distributions.clone(),
            per_request: self.per_request.clone(),
            not_available: self.not_available.clone(),
            notices: self.notices.clone(),
            mean_draft_tokens: self.mean_draft_tokens,
            output_tokens_per_s: self.output_tokens_per_s,
        }
    }

    /// Apply a delta made by [`RunView::delta_since`].
    pub fn apply(&mut self, d: RunDelta) {
        self.status = d.status;
        self.progress = d.progress;
        self.tiles = d.tiles;
        self.timeline.extend(d.timeline_append);
        self.ttft_ms = d.ttft_ms;
        self.itl_ms = d.itl_ms;
        self.e2el_ms = d.e2el_ms;
        self.distributions = d.distributions;
        self.per_request = d.per_request;
        self.not_available = d.not_available;
        self.notices = d.notices;
        self.mean_draft_tokens = d.mean_draft_tokens;
        self.output_tokens_per_s = d.output_tokens_per_s;
    }
}

/// Measured acceptance by draft position of one path, over the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct PathPositions {
    /// "per-request", or "scrape [endpoint]".
    pub label: String,
    /// Index 0 = draft position 1.
    pub rates: Vec<f64>,
    /// Mean acceptance length E of the same path.
    pub acceptance_length: f64,
}

impl RunView {
    /// Acceptance by position for each path that has it: the per-request path first (its pooled
    /// histogram: a draft at position i is accepted when a step accepted ≥ i), then each scraped
    /// endpoint over the run (its intervals weighted by their drafts).
    pub fn positions_by_path(&self) -> Vec<PathPositions> {
        let mut paths = Vec::new();
        if let Some(s) = &self.per_request {
            let hist = &s.pooled_spec_decode_acceptance_histogram;
            let steps: u64 = hist.values().sum();
            if let (Some(k), true) = (hist.keys().max(), steps > 0) {
                paths.push(PathPositions {
                    label: "per-request".into(),
                    rates: (1..=*k)
                        .map(|pos| hist.range(pos..).map(|(_, c)| *c).sum::<u64>() as f64 / steps as f64)
                        .collect(),
                    acceptance_length: s
                        .spec_decode_token_weighted_acceptance_length
                        .as_ref()
                        .map_or(1.0, |d| d.avg),
                });
            }
        }
        // Per endpoint: Σ drafts and Σ accepted, and Σ rate × drafts per position.
        let mut endpoints: BTreeMap<&str, (f64, f64, BTreeMap<u32, f64>)> = BTreeMap::new();
        for p in self.timeline.iter().filter(|p| !p.per_position.is_empty()) {
            let drafts = p.drafts_per_s * p.interval_s;
            if !(drafts.is_finite() && drafts > 0.0) {
                continue;
            }
            let e = endpoints.entry(&p.endpoint).or_default();
            e.0 += drafts;
            e.1 += p.accepted_per_s * p.interval_s;
            for (pos, rate) in &p.per_position {
                *e.2.entry(*pos).or_default() += rate * drafts;
            }
        }
        for (endpoint, (drafts, accepted, weighted)) in endpoints {
            paths.push(PathPositions {
                label: format!("scrape [{endpoint}]"),
                rates: weighted.values().map(|w| w / drafts).collect(),
                acceptance_length: 1.0 + accepted / drafts,
            });
        }
        paths
    }
}

/// One endpoint's acceptance over the whole run, from its live scrapes.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointAcceptance {
    /// `host:port`, or `prometheus/<instance>` for the Prometheus path.
    pub endpoint: String,
    /// Percent; `None` when nothing was drafted.
    pub acceptance_rate: Option<f64>,
    pub acceptance_length: Option<f64>,
    /// Drafts (verify steps with drafts) counted.
    pub drafts: f64,
}

impl RunView {
    /// Acceptance per endpoint (replica) over the run: each interval's rates times its length,
    /// summed (so the figures are the counters' growth over the scraped intervals).
    pub fn acceptance_by_endpoint(&self) -> Vec<EndpointAcceptance> {
        let mut sums: BTreeMap<&str, (f64, f64, f64)> = BTreeMap::new();
        for p in self.timeline.iter().filter(|p| p.error.is_none()) {
            let e = sums.entry(&p.endpoint).or_default();
            e.0 += p.accepted_per_s * p.interval_s;
            e.1 += p.drafted_per_s * p.interval_s;
            e.2 += p.drafts_per_s * p.interval_s;
        }
        sums.into_iter()
            .map(|(endpoint, (accepted, drafted, drafts))| EndpointAcceptance {
                endpoint: endpoint.to_string(),
                acceptance_rate: (drafted > 0.0).then(|| accepted / drafted * 100.0),
                acceptance_length: (drafts > 0.0).then(|| 1.0 + accepted / drafts),
                drafts,
            })
            .collect()
    }
}

/// The changes between two views: new timeline points, the rest replaced whole (small).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDelta {
    pub status: RunStatus,
    pub progress: Progress,
    pub tiles: Tiles,
    pub timeline_append: Vec<TimelinePoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<LatencyStats>,
    #[serde(default)]
    pub distributions: Distributions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request: Option<SpecSummary>,
    pub not_available: Vec<String>,
    #[serde(default)]
    pub notices: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_draft_tokens: Option<f64>,
    pub output_tokens_per_s: f64,
}

/// Messages from the collector to the page: `{"type": …, "body": {…}}`. Adjacently tagged,
/// because serde cannot read integer-keyed maps (histograms, positions) inside an internally
/// tagged enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "body", rename_all = "snake_case")]
pub enum ServerMessage {
    Hello {
        protocol_version: u32,
        speclens_version: String,
    },
    Snapshot {
        seq: u64,
        run: Box<RunView>,
    },
    Delta {
        seq: u64,
        delta: Box<RunDelta>,
    },
    Finished {
        seq: u64,
        run: Box<RunView>,
    },
}

/// The page's copy of the run, fed message by message.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveState {
    pub run: RunView,
    pub seq: Option<u64>,
    /// Set when the server speaks another protocol version.
    pub incompatible: Option<String>,
}

/// What the client must do after a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Updated,
    /// A delta did not follow the last sequence number: reconnect for a fresh snapshot.
    NeedSnapshot,
    Ignored,
}

impl Default for LiveState {
    fn default() -> Self {
        LiveState {
            run: RunView::idle(),
            seq: None,
            incompatible: None,
        }
    }
}

impl LiveState {
    pub fn apply(&mut self, message: ServerMessage) -> Applied {
        match message {
            ServerMessage::Hello {
                protocol_version,
                speclens_version,
            } => {
                if protocol_version != PROTOCOL_VERSION {
                    self.incompatible = Some(format!(
                        "the collector (speclens {speclens_version}) speaks protocol {protocol_version}, this page speaks {PROTOCOL_VERSION}: reload the page"
                    ));
                }
                Applied::Ignored
            }
            ServerMessage::Snapshot { seq, run } | ServerMessage::Finished { seq, run } => {
                self.run = *run;
                self.seq = Some(seq);
                Applied::Updated
            }
            ServerMessage::Delta { seq, delta } => match self.seq {
                Some(last) if seq == last + 1 => {
                    self.run.apply(*delta);
                    self.seq = Some(seq);
                    Applied::Updated
                }
                Some(last) if seq <= last => Applied::Ignored,
                _ => Applied::NeedSnapshot,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(t: f64) -> TimelinePoint {
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
    fn snapshot_then_deltas_rebuild_the_run_and_gaps_ask_for_a_snapshot() {
        let mut server = RunView::idle();
        server.status = RunStatus::Running;
        let mut client = LiveState::default();
        assert_eq!(
            client.apply(ServerMessage::Snapshot {
                seq: 7,
                run: Box::new(server.clone())
            }),
            Applied::Updated
        );
        let before = server.clone();
        server.timeline.push(point(1.0));
        server.progress.completed = 3;
        let d = server.delta_since(&before);
        assert_eq!(d.timeline_append.len(), 1);
        assert_eq!(
            client.apply(ServerMessage::Delta {
                seq: 8,
                delta: Box::new(d.clone())
            }),
            Applied::Updated
        );
        assert_eq!(client.run, server);
        assert_eq!(
            client.apply(ServerMessage::Delta {
                seq: 8,
                delta: Box::new(d.clone())
            }),
            Applied::Ignored
        );
        assert_eq!(
            client.apply(ServerMessage::Delta {
                seq: 10,
                delta: Box::new(d)
            }),
            Applied::NeedSnapshot
        );
        assert_eq!(client.run, server, "a gap never corrupts the state");
    }

    #[test]
    fn positions_come_from_each_path_over_the_whole_run() {
        let mut run = RunView::idle();
        let mut agg = crate::aggregate::SpecAggregator::new();
        agg.push(&crate::per_request::SpecRecord {
            engine: crate::per_request::EngineKind::Vllm,
            mean_acceptance_length: 2.0,
            draft_acceptance_rate: 0.5,
            // 4 steps: accepted 0, 1, 2, 3 of k = 3.
            acceptance_histogram: [(0, 1), (1, 1), (2, 1), (3, 1)].into_iter().collect(),
            num_accepted_draft_tokens: 6,
            num_draft_tokens: 12,
            num_spec_steps: 4,
            num_spec_tokens: Some(3),
            completion_tokens: None,
            per_step_accepted: None,
            per_step_drafted: None,
        });
        run.per_request = agg.summary();
        // Two intervals of one endpoint: 10 drafts at [1.0, 0.5], 30 drafts at [0.6, 0.1].
        let mut a = point(1.0);
        (a.drafts_per_s, a.accepted_per_s) = (10.0, 15.0);
        a.per_position = [(0, 1.0), (1, 0.5)].into_iter().collect();
        let mut b = point(2.0);
        (b.drafts_per_s, b.accepted_per_s) = (30.0, 21.0);
        b.per_position = [(0, 0.6), (1, 0.1)].into_iter().collect();
        run.timeline = vec![a, b];
        let paths = run.positions_by_path();
        assert_eq!(paths.len(), 2);
        assert_eq!(paths[0].label, "per-request");
        assert_eq!(paths[0].rates, vec![0.75, 0.5, 0.25]);
        assert_eq!(paths[0].acceptance_length, 2.5);
        assert_eq!(paths[1].label, "scrape [h:1]");
        assert!((paths[1].rates[0] - 0.7).abs() < 1e-12 && (paths[1].rates[1] - 0.2).abs() < 1e-12);
        assert!((paths[1].acceptance_length - 1.9).abs() < 1e-12);
    }

    #[test]
    fn acceptance_per_endpoint_sums_the_intervals() {
        let mut run = RunView::idle();
        let mut a = point(1.0); // 10 accepted, 20 drafted, 5 drafts
        a.endpoint = "b:2".into();
        let mut failed = point(2.0);
        failed.error = Some("down".into());
        run.timeline = vec![point(1.0), point(2.0), a, failed];
        let by = run.acceptance_by_endpoint();
        assert_eq!(by.len(), 2);
        assert_eq!((by[0].endpoint.as_str(), by[0].drafts), ("b:2", 5.0));
        assert_eq!(
            (by[1].acceptance_rate, by[1].acceptance_length),
            (Some(50.0), Some(3.0))
        );
    }

    #[test]
    fn integer_keyed_maps_survive_the_round_trip() {
        let mut agg = crate::aggregate::SpecAggregator::new();
        agg.push(&crate::per_request::SpecRecord {
            engine: crate::per_request::EngineKind::Vllm,
            mean_acceptance_length: 2.0,
            draft_acceptance_rate: 0.5,
            acceptance_histogram: [(0, 1), (2, 1)].into_iter().collect(),
            num_accepted_draft_tokens: 2,
            num_draft_tokens: 4,
            num_spec_steps: 2,
            num_spec_tokens: Some(2),
            completion_tokens: None,
            per_step_accepted: None,
            per_step_drafted: None,
        });
        let mut run = RunView::idle();
        run.per_request = agg.summary();
        let mut p = point(1.0);
        p.per_position = [(0, 0.5), (1, 0.5)].into_iter().collect();
        run.timeline.push(p);
        let message = ServerMessage::Snapshot {
            seq: 1,
            run: Box::new(run),
        };
        let text = serde_json::to_string(&message).unwrap();
        assert_eq!(serde_json::from_str::<ServerMessage>(&text).unwrap(), message);
    }

    #[test]
    fn messages_are_tagged_json_and_versions_are_checked() {
        let text = serde_json::to_string(&ServerMessage::Hello {
            protocol_version: 99,
            speclens_version: "9.9".into(),
        })
        .unwrap();
        assert!(
            text.starts_with(r#"{"type":"hello","body":{"protocol_version":99"#),
            "{text}"
        );
        let mut client = LiveState::default();
        client.apply(serde_json::from_str(&text).unwrap());
        assert!(client.incompatible.unwrap().contains("protocol 99"));
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
            .zip(result.total_output_tokens)
            .filter(|(_, o)| *o > 0)
            .map(|(a, o)| (a as f64 / o as f64 * 100.0).min(100.0)),
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
        e2el_ms: result.latency("e2el"),
        distributions: result.distributions.clone().unwrap_or_default(),
        not_available: result.not_available(),
        per_request: spec.per_request,
        notices: result.notices.as_ref().map(|n| n.messages.clone()).unwrap_or_default(),
        mean_draft_tokens: result
            .spec_decode_draft_tokens
            .zip(result.spec_decode_num_drafts)
            .filter(|(_, drafts)| *drafts > 0)
            .map(|(tokens, drafts)| tokens as f64 / drafts as f64)
            .or(result.spec_decode_mean_draft_tokens),
        output_tokens_per_s: result.output_throughput.unwrap_or(0.0),
    }
}

#[cfg(test)]
mod result_tests {
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
        assert_eq!(run.tiles.draft_share, Some(40.0));
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
