//! Both spec-decode paths of a finished run: the counters' window of every scraped endpoint
//! (before/after, voided by a restart the live scrapes saw), the Prometheus path, the
//! per-request payloads, and what the paths say about each other.

use speclens_shared::engine::Engine;
use std::collections::BTreeMap;

use speclens_shared::capped::CappedLog;
use speclens_shared::results::run_result::EngineLoad;
use speclens_shared::run::aggregate::SpecAggregator;
use speclens_shared::run::notices::{Notices, PathFigures};
use speclens_shared::run::record::RunTally;
use speclens_shared::scrape::{
    derive, flat_positions, window_before, window_delta, window_result_with, CounterSet, GaugeMeans, LoadSample,
    ResultStatus, ScrapeFailure, SpecCounters, SpecDecodeData, SpecDecodeResult, WindowFacts,
};

use super::prometheus::FleetOutcome;
use super::scrape::{Endpoint, Timeline};
use crate::net::redact_url;

/// The before/after scrape of one endpoint, as fetched.
pub struct Scrapes {
    pub endpoint: Endpoint,
    pub before: Result<CounterSet, ScrapeFailure>,
    pub after: Result<CounterSet, ScrapeFailure>,
    /// The engine's load each snapshot showed, where it exports it.
    pub before_load: Option<LoadSample>,
    pub after_load: Option<LoadSample>,
}

/// The before/after scrape of one endpoint.
pub struct ScrapeWindow {
    pub endpoint: Endpoint,
    pub before: Result<CounterSet, ScrapeFailure>,
    pub after: Result<CounterSet, ScrapeFailure>,
    /// Restarts the live scrapes saw on this endpoint during the window.
    pub live_resets: CappedLog,
    /// The engine gauges of each scrape in the window (the live ones, then "after").
    pub gauges: Vec<BTreeMap<String, f64>>,
}

impl ScrapeWindow {
    /// The window's result. A restart seen by the live scrapes makes it N/A even when the two
    /// snapshots alone look fine: after a restart, "after" holds only the growth since it.
    pub fn result(&self) -> SpecDecodeResult {
        let mut r = window_result_with(
            &redact_url(&self.endpoint.url),
            self.before.clone(),
            self.after.clone(),
            &GaugeMeans::over(&self.gauges),
        );
        if let (Some(first), ResultStatus::Ok) = (self.live_resets.first(), r.status) {
            r.status = ResultStatus::Na;
            r.data = None;
            r.error = Some(format!(
                "Counter reset detected during the window by the live scrapes: {first} (the before/after delta would hold only the growth since the restart)"
            ));
        }
        r
    }

    /// The schema of the counters read after the window.
    fn schema(&self) -> Option<Engine> {
        self.after.as_ref().ok().map(CounterSet::schema)
    }

    /// llama.cpp's largest rounded counter value in either snapshot.
    fn rounded_max(&self) -> Option<u64> {
        let of = |r: &Result<CounterSet, ScrapeFailure>| r.as_ref().ok().and_then(|c| c.rounded_max);
        of(&self.before).max(of(&self.after))
    }

    /// The counters' growth over the window, when its result is valid.
    pub fn delta(&self) -> Option<SpecCounters> {
        if !self.live_resets.is_empty() {
            return None;
        }
        match (window_before(self.before.clone(), &self.after), &self.after) {
            (Ok(b), Ok(a)) => window_delta(&b, a).ok(),
            _ => None,
        }
    }
}

/// What the run measured of speculative decoding, by path.
pub struct SpecPaths {
    /// Direct `/metrics` before/after, per endpoint.
    pub windows: Vec<ScrapeWindow>,
    /// Live scrapes (direct and Prometheus).
    pub timeline: Timeline,
    /// The Prometheus path's window and its breakdown, when configured.
    pub fleet: Option<FleetOutcome>,
    /// Per-request payloads.
    pub spec: SpecAggregator,
    /// Per-request payloads rejected, by reason.
    pub rejected: BTreeMap<String, u64>,
    /// What the paths say about each other and the server.
    pub notices: Notices,
    /// The engine's own load over the window (the first endpoint that exports it).
    pub engine_load: Option<EngineLoad>,
}

impl SpecPaths {
    /// Put the paths together from the scrapes and the window's folded records.
    pub fn new(
        endpoints: Vec<Scrapes>,
        timeline: Timeline,
        fleet: Option<FleetOutcome>,
        tally: &RunTally,
    ) -> SpecPaths {
        let resets_of = |label: &str| -> CappedLog { timeline.resets.get(label).cloned().unwrap_or_default() };
        let engine_load = endpoints.iter().find_map(|s| {
            let during: Vec<LoadSample> = timeline
                .loads
                .iter()
                .filter(|(label, _)| *label == s.endpoint.label)
                .map(|(_, l)| *l)
                .collect();
            EngineLoad::over(s.before_load.as_ref(), &during, s.after_load.as_ref())
        });
        let windows: Vec<ScrapeWindow> = endpoints
            .into_iter()
            .map(|s| {
                let mut gauges: Vec<BTreeMap<String, f64>> = timeline
                    .gauges
                    .iter()
                    .filter(|(label, _)| *label == s.endpoint.label)
                    .map(|(_, g)| g.clone())
                    .collect();
                if let Ok(after) = &s.after {
                    if !after.gauges.is_empty() {
                        gauges.push(after.gauges.clone());
                    }
                }
                ScrapeWindow {
                    live_resets: resets_of(&s.endpoint.label),
                    gauges,
                    endpoint: s.endpoint,
                    before: s.before,
                    after: s.after,
                }
            })
            .collect();
        let notices = assess(&windows, fleet.as_ref(), tally);
        SpecPaths {
            windows,
            timeline,
            fleet,
            spec: tally.spec.clone(),
            rejected: tally.rejected.clone(),
            notices,
            engine_load,
        }
    }

    /// Whether the server showed no speculation at all: every endpoint's `/metrics` answered
    /// without spec-decode counters and no answer carried per-request stats (a failed scrape
    /// says nothing either way).
    pub fn shows_no_speculation(&self) -> bool {
        !self.windows.is_empty()
            && self
                .windows
                .iter()
                .all(|w| matches!(w.after, Err(ScrapeFailure::NoSpecMetrics)))
            && self.spec.summary().is_none()
            && self.rejected.is_empty()
    }

    /// The run's headline acceptance: the direct scrapes summed over every endpoint whose
    /// window is valid (of the first such endpoint's engine), else the Prometheus path.
    pub fn headline(&self) -> Option<SpecDecodeData> {
        let valid: Vec<(&ScrapeWindow, SpecCounters)> =
            self.windows.iter().filter_map(|w| w.delta().map(|d| (w, d))).collect();
        let direct = valid.first().and_then(|(first, _)| {
            let schema = first.schema()?;
            let same: Vec<&(&ScrapeWindow, SpecCounters)> =
                valid.iter().filter(|(w, _)| w.schema() == Some(schema)).collect();
            let mut sum = SpecCounters::default();
            same.iter().for_each(|(_, d)| sum.add(d));
            let mut missing: Vec<String> = Vec::new();
            for (w, _) in &same {
                if let Ok(after) = &w.after {
                    missing.extend(
                        after
                            .missing
                            .iter()
                            .filter(|m| !missing.contains(m))
                            .cloned()
                            .collect::<Vec<_>>(),
                    );
                }
            }
            let facts = WindowFacts {
                gauges: GaugeMeans::over(same.iter().flat_map(|(w, _)| w.gauges.iter())),
                rounded_max: same.iter().filter_map(|(w, _)| w.rounded_max()).max(),
                missing,
                spec_config: same
                    .iter()
                    .find_map(|(w, _)| w.after.as_ref().ok().and_then(|a| a.spec_config.clone())),
                engines: same
                    .iter()
                    .filter_map(|(w, _)| w.after.as_ref().ok())
                    .map(CounterSet::engines)
                    .max()
                    .unwrap_or(0),
                flat_positions: same.iter().find_map(|(w, _)| flat_positions(w.after.as_ref().ok()?)),
            };
            derive(schema, &sum, &facts).ok()
        });
        direct.or_else(|| self.fleet.as_ref().and_then(|f| f.result.data.clone()))
    }
}

/// The two paths side by side (see `speclens_shared::run::notices`): the counters' window, when every
/// scraped endpoint's is valid (else the Prometheus path's), against the run's per-request totals.
fn assess(windows: &[ScrapeWindow], fleet: Option<&FleetOutcome>, tally: &RunTally) -> Notices {
    let deltas: Vec<SpecCounters> = windows.iter().filter_map(ScrapeWindow::delta).collect();
    // Only vLLM's schema counts what the per-request path counts (drafts, draft tokens and
    // accepted tokens); TensorRT-LLM's and SGLang's counters cannot be set against it.
    let comparable = windows
        .iter()
        .all(|w| matches!(w.schema(), Some(Engine::Vllm | Engine::LlamaCpp)));
    let other_engine = !deltas.is_empty() && !comparable;
    let counters = if !windows.is_empty() && deltas.len() == windows.len() && comparable {
        let mut sum = SpecCounters::default();
        deltas.iter().for_each(|d| sum.add(d));
        Some(sum)
    } else {
        fleet.and_then(|f| f.result.data.as_ref()).and_then(|d| {
            Some(SpecCounters::new(
                d.num_drafts?,
                d.draft_tokens?,
                d.accepted_tokens,
                &[],
            ))
        })
    };
    let plain = !windows.is_empty()
        && windows
            .iter()
            .all(|w| matches!(w.after, Err(ScrapeFailure::NoSpecMetrics)));
    let server_speculates = if counters.is_some() || other_engine {
        Some(true)
    } else if plain {
        Some(false)
    } else {
        None
    };
    Notices::assess(&PathFigures {
        counters: counters.as_ref(),
        per_request: tally.spec.totals(),
        per_request_k: tally.spec.num_spec_tokens(),
        requests: tally.requests,
        successful: tally.completed,
        with_stats: tally.with_stats,
        server_speculates,
    })
}
