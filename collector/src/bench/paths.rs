//! Both spec-decode paths of a finished run: the counters' window of every scraped endpoint
//! (before/after, voided by a restart the live scrapes saw), the Prometheus path, the
//! per-request payloads, and what the paths say about each other.

use std::collections::BTreeMap;

use speclens_shared::aggregate::SpecAggregator;
use speclens_shared::notices::{Notices, PathFigures};
use speclens_shared::run::RequestRecord;
use speclens_shared::scrape::{
    derive_stats, window_delta, window_result, CounterSet, ResultStatus, ScrapeFailure, SpecCounters, SpecDecodeData,
    SpecDecodeResult,
};

use super::prometheus::FleetOutcome;
use super::redact_url;
use super::scrape::{Endpoint, Reset, Timeline};

/// The before/after scrape of one endpoint, as fetched.
pub struct Scrapes {
    pub endpoint: Endpoint,
    pub before: Result<CounterSet, ScrapeFailure>,
    pub after: Result<CounterSet, ScrapeFailure>,
}

/// The before/after scrape of one endpoint.
pub struct ScrapeWindow {
    pub endpoint: Endpoint,
    pub before: Result<CounterSet, ScrapeFailure>,
    pub after: Result<CounterSet, ScrapeFailure>,
    /// Restarts the live scrapes saw on this endpoint during the window.
    pub live_resets: Vec<String>,
}

impl ScrapeWindow {
    /// The window's result. A restart seen by the live scrapes makes it N/A even when the two
    /// snapshots alone look fine: after a restart, "after" holds only the growth since it.
    pub fn result(&self) -> SpecDecodeResult {
        let mut r = window_result(&redact_url(&self.endpoint.url), self.before.clone(), self.after.clone());
        if let (Some(first), ResultStatus::Ok) = (self.live_resets.first(), r.status) {
            r.status = ResultStatus::Na;
            r.data = None;
            r.error = Some(format!(
                "Counter reset detected during the window by the live scrapes: {first} (the before/after delta would hold only the growth since the restart)"
            ));
        }
        r
    }

    /// The counters' growth over the window, when its result is valid.
    pub fn delta(&self) -> Option<SpecCounters> {
        if !self.live_resets.is_empty() {
            return None;
        }
        match (&self.before, &self.after) {
            (Ok(b), Ok(a)) => window_delta(b, a).ok(),
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
}

impl SpecPaths {
    /// Put the paths together from the scrapes and the window's records.
    pub fn new(
        endpoints: Vec<Scrapes>,
        timeline: Timeline,
        fleet: Option<FleetOutcome>,
        records: &[RequestRecord],
    ) -> SpecPaths {
        let resets_of = |label: &str| -> Vec<String> {
            timeline
                .resets
                .iter()
                .filter(|r: &&Reset| r.endpoint == label)
                .map(|r| r.message.clone())
                .collect()
        };
        let windows: Vec<ScrapeWindow> = endpoints
            .into_iter()
            .map(|s| ScrapeWindow {
                live_resets: resets_of(&s.endpoint.label),
                endpoint: s.endpoint,
                before: s.before,
                after: s.after,
            })
            .collect();
        let mut spec = SpecAggregator::new();
        let mut rejected: BTreeMap<String, u64> = BTreeMap::new();
        for r in records.iter().filter(|r| !r.warmup && r.success) {
            if let Some(rec) = &r.spec_decode_acceptance {
                spec.push(rec);
            }
            if let Some(reason) = &r.spec_decode_rejected {
                *rejected
                    .entry(reason.split(':').next().unwrap_or(reason).to_string())
                    .or_default() += 1;
            }
        }
        let notices = assess(&windows, fleet.as_ref(), &spec, records);
        SpecPaths {
            windows,
            timeline,
            fleet,
            spec,
            rejected,
            notices,
        }
    }

    /// The run's headline acceptance: the direct scrapes summed over every endpoint whose
    /// window is valid, else the Prometheus path.
    pub fn headline(&self) -> Option<SpecDecodeData> {
        let mut sum = SpecCounters::default();
        let mut any = false;
        for d in self.windows.iter().filter_map(ScrapeWindow::delta) {
            sum.add(&d);
            any = true;
        }
        let direct = if any { derive_stats(&sum).ok() } else { None };
        direct.or_else(|| self.fleet.as_ref().and_then(|f| f.result.data.clone()))
    }
}

/// The two paths side by side (see `speclens_shared::notices`): the counters' window, when every
/// scraped endpoint's is valid (else the Prometheus path's), against the run's per-request totals.
fn assess(
    windows: &[ScrapeWindow],
    fleet: Option<&FleetOutcome>,
    spec: &SpecAggregator,
    records: &[RequestRecord],
) -> Notices {
    let deltas: Vec<SpecCounters> = windows.iter().filter_map(ScrapeWindow::delta).collect();
    let counters = if !windows.is_empty() && deltas.len() == windows.len() {
        let mut sum = SpecCounters::default();
        deltas.iter().for_each(|d| sum.add(d));
        Some(sum)
    } else {
        fleet
            .and_then(|f| f.result.data.as_ref())
            .map(|d| SpecCounters::new(d.num_drafts, d.draft_tokens, d.accepted_tokens, &[]))
    };
    let plain = !windows.is_empty()
        && windows
            .iter()
            .all(|w| matches!(w.after, Err(ScrapeFailure::NoSpecMetrics)));
    let server_speculates = if counters.is_some() {
        Some(true)
    } else if plain {
        Some(false)
    } else {
        None
    };
    let window = || records.iter().filter(|r| !r.warmup);
    Notices::assess(&PathFigures {
        counters: counters.as_ref(),
        per_request: spec.totals(),
        per_request_k: spec.num_spec_tokens(),
        requests: window().count() as u64,
        successful: window().filter(|r| r.success).count() as u64,
        with_stats: window().filter(|r| r.spec_decode_acceptance.is_some()).count() as u64,
        server_speculates,
    })
}
