//! The dashboard's WebSocket protocol (versioned), its wire types only: a hello, a full snapshot
//! of the run, then deltas a few times per second with sequence numbers, and a finished
//! message. What a snapshot carries is `view`; the page's side of it is `live_state`; what the
//! page derives from a run is `positions`.

use serde::{Deserialize, Serialize};

use crate::run::aggregate::SpecSummary;
use crate::run::record::LatencyStats;
use crate::sweep::SweepFile;
use crate::view::run::{Distributions, Progress, RunStatus, RunView, Tiles, TimelinePoint};

/// Bumped whenever a message changes shape; the page refuses other versions with a message.
pub const PROTOCOL_VERSION: u32 = 4;

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
    /// Time per output token after the first (per request), beside the per-chunk ITL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<LatencyStats>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_output_tokens_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_window_s: Option<f64>,
}

/// Deltas are made and applied here, where the wire needs them.
impl RunView {
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
            tpot_ms: self.tpot_ms.clone(),
            e2el_ms: self.e2el_ms.clone(),
            distributions: self.distributions.clone(),
            per_request: self.per_request.clone(),
            not_available: self.not_available.clone(),
            notices: self.notices.clone(),
            mean_draft_tokens: self.mean_draft_tokens,
            output_tokens_per_s: self.output_tokens_per_s,
            steady_output_tokens_per_s: self.steady_output_tokens_per_s,
            steady_window_s: self.steady_window_s,
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
        self.tpot_ms = d.tpot_ms;
        self.e2el_ms = d.e2el_ms;
        self.distributions = d.distributions;
        self.per_request = d.per_request;
        self.not_available = d.not_available;
        self.notices = d.notices;
        self.mean_draft_tokens = d.mean_draft_tokens;
        self.output_tokens_per_s = d.output_tokens_per_s;
        self.steady_output_tokens_per_s = d.steady_output_tokens_per_s;
        self.steady_window_s = d.steady_window_s;
    }
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
    /// The command feeding this dashboard has measured all it will (the demo's end): a page
    /// that watched it run moves on to the overview.
    SessionOver,
    /// The sweep this dashboard follows, as far as it has gone: after each point, the table of
    /// the points measured so far (`done` false), then the saved `sweep.json` (`done` true).
    /// New in protocol 4.
    Sweep {
        done: bool,
        table: Box<SweepFile>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::run::tests::point;
    use crate::view::run::RunView;

    /// A delta and a snapshot of a saved run (a `vllm bench serve` result of the fixtures, with
    /// a scrape point and per-request stats), as the wire carries them.
    fn wire_messages() -> String {
        let text = include_str!("../../../tests/fixtures/vllm_bench_results/spec-c16.json");
        let result: crate::results::run_result::RunResult = serde_json::from_str(text).unwrap();
        let mut run = crate::view::run::run_view_from_result(&result);
        let mut p = point(1.5);
        p.per_position = [(0, 0.75), (1, 0.5)].into_iter().collect();
        run.timeline.push(p);
        let delta = run.delta_since(&RunView::idle());
        [
            ServerMessage::Delta {
                seq: 7,
                delta: Box::new(delta),
            },
            ServerMessage::Snapshot {
                seq: 8,
                run: Box::new(run),
            },
        ]
        .iter()
        .map(|m| serde_json::to_string(m).unwrap() + "\n")
        .collect()
    }

    #[test]
    fn the_wire_bytes_of_a_delta_and_a_snapshot_are_kept_from_protocol_3() {
        let fixture = include_str!("../../../tests/fixtures/speclens_protocol_v3_messages.jsonl");
        let expected: String = fixture
            .lines()
            .filter(|l| !l.starts_with("//"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(wire_messages(), expected);
    }

    #[test]
    fn integer_keyed_maps_survive_the_round_trip() {
        let mut agg = crate::run::aggregate::SpecAggregator::new();
        agg.push(&crate::request::per_request::SpecRecord {
            engine: crate::engine::Engine::Vllm,
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
            unmerged_pr: None,
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
        let mut client = crate::view::live_state::LiveState::default();
        client.apply(serde_json::from_str(&text).unwrap());
        assert!(client.incompatible.unwrap().contains("protocol 99"));
    }
}
