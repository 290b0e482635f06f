//! Reset-aware accumulation over periodic scrapes, as Prometheus's `increase()`: the live
//! samplers' running totals.

use std::collections::BTreeMap;

use super::counters::{CounterSet, SpecCounters};
use super::schema::Family;
use crate::capped::CappedLog;

/// Reset-aware accumulation over periodic scrapes (Prometheus `increase()` semantics): a
/// counter that drops is taken to have restarted from zero, so its new value is growth.
#[derive(Debug, Clone, Default)]
pub struct IncreaseAccumulator {
    last: Option<CounterSet>,
    /// Growth summed over all label sets since the first observed scrape.
    pub total: SpecCounters,
    /// Growth per label set since the first observed scrape.
    pub series: BTreeMap<String, SpecCounters>,
    /// The resets detected, each naming the counter (the first few in full).
    pub resets: CappedLog,
}

impl IncreaseAccumulator {
    /// Fold in the next scrape; returns the growth since the previous one.
    pub fn observe(&mut self, next: &CounterSet) -> SpecCounters {
        let mut step_total = SpecCounters::default();
        if let Some(prev) = &self.last {
            for (key, now) in &next.series {
                // A label set seen for the first time contributes from its second scrape on.
                let Some(was) = prev.series.get(key) else { continue };
                let mut step = SpecCounters::default();
                let resets = &mut self.resets;
                let mut grow = |name: &dyn Fn() -> String, was: u64, now: u64| -> u64 {
                    if now >= was {
                        now - was
                    } else {
                        resets.record(|| format!("{} went down from {was} to {now}: counted as a restart", name()));
                        now
                    }
                };
                let scalar = |family: Family| move || next.counter_name(family, key);
                step.num_drafts = grow(&scalar(Family::Drafts), was.num_drafts, now.num_drafts);
                step.num_draft_tokens = grow(&scalar(Family::DraftTokens), was.num_draft_tokens, now.num_draft_tokens);
                step.num_accepted_tokens = grow(
                    &scalar(Family::Accepted),
                    was.num_accepted_tokens,
                    now.num_accepted_tokens,
                );
                if let (Some(w), Some(n)) = (was.generation_tokens, now.generation_tokens) {
                    step.generation_tokens = Some(grow(&scalar(Family::Generation), w, n));
                }
                if let (Some(w), Some(n)) = (was.requests, now.requests) {
                    step.requests = Some(grow(&scalar(Family::Requests), w, n));
                }
                for (family, now_at, was_at, step_at) in [
                    (
                        Family::PerPos,
                        &now.accepted_per_pos,
                        &was.accepted_per_pos,
                        &mut step.accepted_per_pos,
                    ),
                    (
                        Family::DraftedPerPos,
                        &now.drafted_per_pos,
                        &was.drafted_per_pos,
                        &mut step.drafted_per_pos,
                    ),
                ] {
                    for (pos, v) in now_at {
                        let w = was_at.get(pos).copied().unwrap_or(0);
                        let name = || next.position_name(family, key, *pos);
                        step_at.insert(*pos, grow(&name, w, *v));
                    }
                }
                self.series.entry(key.clone()).or_default().add(&step);
                step_total.add(&step);
            }
        }
        self.total.add(&step_total);
        self.last = Some(next.clone());
        step_total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scrape::testing::{counters, single};

    #[test]
    fn accumulator_follows_increase_semantics_across_a_restart() {
        let mut acc = IncreaseAccumulator::default();
        assert_eq!(
            acc.observe(&single(counters(100, 300, 150, &[80]))),
            SpecCounters::default()
        );
        let step = acc.observe(&single(counters(110, 330, 160, &[85])));
        assert_eq!(step, counters(10, 30, 10, &[5]));
        // Restart: the new values are growth since the reset.
        let step = acc.observe(&single(counters(4, 12, 6, &[3])));
        assert_eq!(step, counters(4, 12, 6, &[3]));
        assert_eq!(acc.total, counters(14, 42, 16, &[8]));
        assert_eq!(acc.resets.count, 4);
        assert!(acc.resets.kept[0].contains("vllm:spec_decode_num_drafts_total{engine=\"0\"} went down from 110 to 4"));
    }
}
