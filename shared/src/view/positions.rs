//! What the page derives from a run's view: acceptance by draft position for each path (the
//! per-request histogram, each scraped endpoint over the whole run) and acceptance per endpoint.

use std::collections::BTreeMap;

use crate::figures::{acceptance_length, acceptance_rate_pct};
use crate::view::run::RunView;

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
                // Only endpoints with drafts are summed.
                acceptance_length: acceptance_length(accepted, drafts).unwrap_or(1.0),
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
                acceptance_rate: acceptance_rate_pct(accepted, drafted),
                acceptance_length: acceptance_length(accepted, drafts),
                drafts,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::view::run::tests::point;
    use crate::view::run::*;

    #[test]
    fn positions_come_from_each_path_over_the_whole_run() {
        let mut run = RunView::idle();
        let mut agg = crate::run::aggregate::SpecAggregator::new();
        agg.push(&crate::request::per_request::SpecRecord {
            engine: crate::engine::Engine::Vllm,
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
            unmerged_pr: None,
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
}
