//! Each spec-decode figure of a window, per engine, written once as counters combined: the
//! collector evaluates a formula over a window's counter deltas (`derive`), and `watch::promql`
//! writes the same formula as PromQL for Prometheus's recording rules and Grafana's panels, so a
//! dashboard and a benchmark report share one definition.

use std::collections::{BTreeMap, BTreeSet};

use super::counters::SpecCounters;
use super::gauges::GaugeMeans;
use super::schema::Family;
use crate::engine::Engine;

/// One counter a formula reads, in an engine's schema (its prefix and position label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// A family's growth, summed over label sets and, for a per-position family, positions.
    Total(Family),
    /// A per-position family's growth at one 0-based position.
    At(Family, u32),
    /// A per-position family's growth kept by position (the per-position figures).
    ByPosition(Family),
}

/// `sign × count`, one term of a sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    pub negative: bool,
    pub count: Count,
}

const fn plus(count: Count) -> Term {
    Term { negative: false, count }
}

const fn minus(count: Count) -> Term {
    Term { negative: true, count }
}

/// How a formula's numerator N and denominator D make the figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `1 + N / D`: tokens per verify step, the bonus token included.
    Length,
    /// `100 × N / D`.
    Percent,
    /// `N / D`.
    Fraction,
    /// `N` per second (PromQL); the window's growth `N` for the collector.
    PerSecond,
}

/// A figure as counters combined: `form(Σ numerator, Σ denominator)`; none where D is 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Formula {
    pub form: Form,
    pub numerator: &'static [Term],
    pub denominator: &'static [Term],
}

/// Where a figure comes from: a formula over counters, or an engine gauge's mean over the window
/// times `scale` (the engine's own recent-iterations figure, where it counts nothing better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Source {
    Counters(Formula),
    Gauge { name: &'static str, scale: f64 },
}

/// The figures a window has, each with one meaning on every engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    /// Accepted ÷ drafted draft tokens, percent.
    AcceptanceRatePct,
    /// Tokens per verify step, bonus included: `1 + accepted ÷ drafts`.
    AcceptanceLength,
    /// Drafts whose first i + 1 tokens were all accepted ÷ drafts, by position i.
    PositionAcceptanceRate,
    /// Verify steps that drafted, per second.
    DraftsPerS,
    /// Draft tokens proposed per second.
    DraftTokensPerS,
    /// Draft tokens accepted per second.
    AcceptedTokensPerS,
}

impl Figure {
    pub const ALL: [Figure; 6] = [
        Figure::AcceptanceRatePct,
        Figure::AcceptanceLength,
        Figure::PositionAcceptanceRate,
        Figure::DraftsPerS,
        Figure::DraftTokensPerS,
        Figure::AcceptedTokensPerS,
    ];
}

use Count::{At, ByPosition, Total};
use Family::{Accepted, DraftTokens, DraftedPerPos, Drafts, Generation, PerPos, Requests};

/// vLLM's (and llama.cpp's) counters, vLLM's definitions (`vllm/v1/spec_decode/metrics.py`).
pub(crate) const VLLM_RATE: Formula = Formula {
    form: Form::Percent,
    numerator: &[plus(Total(Accepted))],
    denominator: &[plus(Total(DraftTokens))],
};
pub(crate) const VLLM_LENGTH: Formula = Formula {
    form: Form::Length,
    numerator: &[plus(Total(Accepted))],
    denominator: &[plus(Total(Drafts))],
};
pub(crate) const VLLM_POSITION: Formula = Formula {
    form: Form::Fraction,
    numerator: &[plus(ByPosition(PerPos))],
    denominator: &[plus(Total(Drafts))],
};

/// TensorRT-LLM's per-position pair, added as each request finishes: drafts are the steps that
/// drafted position 0; vLLM's definitions over them.
pub(crate) const TRTLLM_PAIR_RATE: Formula = Formula {
    form: Form::Percent,
    numerator: &[plus(Total(PerPos))],
    denominator: &[plus(Total(DraftedPerPos))],
};
pub(crate) const TRTLLM_PAIR_LENGTH: Formula = Formula {
    form: Form::Length,
    numerator: &[plus(Total(PerPos))],
    denominator: &[plus(At(DraftedPerPos, 0))],
};
pub(crate) const TRTLLM_PAIR_POSITION: Formula = Formula {
    form: Form::Fraction,
    numerator: &[plus(ByPosition(PerPos))],
    denominator: &[plus(At(DraftedPerPos, 0))],
};

/// SGLang: every request's first token comes from prefill and each verify step gives its
/// accepted drafts plus one, so accepted = Δgeneration − Δrequests − Δverify.
pub(crate) const SGLANG_ACCEPTED: &[Term] = &[plus(Total(Generation)), minus(Total(Requests)), minus(Total(Drafts))];
/// SGLang's length as (Δgeneration − Δrequests) ÷ Δverify: 1 + accepted ÷ steps, written as the
/// tokens the steps gave over the steps.
pub(crate) const SGLANG_LENGTH: Formula = Formula {
    form: Form::Fraction,
    numerator: &[plus(Total(Generation)), minus(Total(Requests))],
    denominator: &[plus(Total(Drafts))],
};

const fn per_second(numerator: &'static [Term]) -> Source {
    Source::Counters(Formula {
        form: Form::PerSecond,
        numerator,
        denominator: &[],
    })
}

const VLLM_DRAFTS_PER_S: Source = per_second(&[plus(Total(Drafts))]);
const VLLM_DRAFT_TOKENS_PER_S: Source = per_second(&[plus(Total(DraftTokens))]);
const VLLM_ACCEPTED_PER_S: Source = per_second(&[plus(Total(Accepted))]);
const TRTLLM_DRAFTS_PER_S: Source = per_second(&[plus(At(DraftedPerPos, 0))]);
const TRTLLM_DRAFT_TOKENS_PER_S: Source = per_second(&[plus(Total(DraftedPerPos))]);
const TRTLLM_ACCEPTED_PER_S: Source = per_second(&[plus(Total(PerPos))]);
const SGLANG_ACCEPTED_PER_S: Source = per_second(SGLANG_ACCEPTED);

/// The sources of a figure on an engine, in order of preference (TensorRT-LLM's pair, then its
/// iteration counters and gauges); empty where the engine cannot give the figure. In PromQL the
/// first whose series exist and whose denominator grew wins (`or`); the collector picks the
/// same way from what its scrapes hold (`derive`).
pub fn sources(engine: Engine, figure: Figure) -> &'static [Source] {
    use Figure::*;
    match (engine, figure) {
        (Engine::Vllm | Engine::LlamaCpp, AcceptanceRatePct) => &[Source::Counters(VLLM_RATE)],
        (Engine::Vllm | Engine::LlamaCpp, AcceptanceLength) => &[Source::Counters(VLLM_LENGTH)],
        (Engine::Vllm | Engine::LlamaCpp, PositionAcceptanceRate) => &[Source::Counters(VLLM_POSITION)],
        (Engine::Vllm | Engine::LlamaCpp | Engine::Sglang, DraftsPerS) => &[VLLM_DRAFTS_PER_S],
        (Engine::Vllm | Engine::LlamaCpp, DraftTokensPerS) => &[VLLM_DRAFT_TOKENS_PER_S],
        (Engine::Vllm | Engine::LlamaCpp, AcceptedTokensPerS) => &[VLLM_ACCEPTED_PER_S],
        (Engine::Trtllm, AcceptanceRatePct) => &[Source::Counters(TRTLLM_PAIR_RATE), Source::Counters(VLLM_RATE)],
        (Engine::Trtllm, AcceptanceLength) => &[
            Source::Counters(TRTLLM_PAIR_LENGTH),
            Source::Gauge {
                name: "trtllm_spec_decode_acceptance_length",
                scale: 1.0,
            },
            Source::Gauge {
                name: "trtllm_avg_decoded_tokens_per_iter",
                scale: 1.0,
            },
        ],
        (Engine::Trtllm, PositionAcceptanceRate) => &[Source::Counters(TRTLLM_PAIR_POSITION)],
        (Engine::Trtllm, DraftsPerS) => &[TRTLLM_DRAFTS_PER_S],
        (Engine::Trtllm, DraftTokensPerS) => &[TRTLLM_DRAFT_TOKENS_PER_S, VLLM_DRAFT_TOKENS_PER_S],
        (Engine::Trtllm, AcceptedTokensPerS) => &[TRTLLM_ACCEPTED_PER_S, VLLM_ACCEPTED_PER_S],
        (Engine::Sglang, AcceptanceRatePct) => &[Source::Gauge {
            name: "sglang:spec_accept_rate",
            scale: 100.0,
        }],
        (Engine::Sglang, AcceptanceLength) => &[Source::Counters(SGLANG_LENGTH)],
        (Engine::Sglang, PositionAcceptanceRate | DraftTokensPerS) => &[],
        (Engine::Sglang, AcceptedTokensPerS) => &[SGLANG_ACCEPTED_PER_S],
    }
}

impl Count {
    /// The count's growth in a window's delta (a per-position family summed for `ByPosition`).
    pub fn of(self, delta: &SpecCounters) -> u64 {
        let sum = |m: &BTreeMap<u32, u64>| m.values().fold(0u64, |a, v| a.saturating_add(*v));
        match self {
            Total(Drafts) => delta.num_drafts,
            Total(DraftTokens) => delta.num_draft_tokens,
            Total(Accepted) => delta.num_accepted_tokens,
            Total(Generation) => delta.generation_tokens.unwrap_or(0),
            Total(Requests) => delta.requests.unwrap_or(0),
            Total(PerPos) | ByPosition(PerPos) => sum(&delta.accepted_per_pos),
            Total(DraftedPerPos) | ByPosition(DraftedPerPos) => sum(&delta.drafted_per_pos),
            At(PerPos, p) => delta.accepted_per_pos.get(&p).copied().unwrap_or(0),
            At(DraftedPerPos, p) => delta.drafted_per_pos.get(&p).copied().unwrap_or(0),
            At(_, _) | ByPosition(_) => 0,
        }
    }

    /// The count at one position (`ByPosition` at `pos`; the others as they are).
    fn at(self, delta: &SpecCounters, pos: u32) -> u64 {
        match self {
            ByPosition(family) => At(family, pos).of(delta),
            other => other.of(delta),
        }
    }
}

/// `Σ sign × count` over a window, with each count read by `read`.
fn signed_sum(terms: &[Term], read: impl Fn(Count) -> u64) -> i128 {
    terms
        .iter()
        .map(|t| {
            let v = i128::from(read(t.count));
            if t.negative {
                -v
            } else {
                v
            }
        })
        .sum()
}

/// `Σ sign × count` over a window's delta in whole tokens (0 where the negative terms outweigh
/// the positive ones).
pub fn signed_count(terms: &[Term], delta: &SpecCounters) -> u64 {
    signed_sum(terms, |c| c.of(delta)).clamp(0, i128::from(u64::MAX)) as u64
}

impl Formula {
    /// The numerator's growth in a window, in whole tokens.
    pub fn numerator_count(&self, delta: &SpecCounters) -> u64 {
        signed_count(self.numerator, delta)
    }

    /// The denominator's growth in a window, in whole tokens.
    pub fn denominator_count(&self, delta: &SpecCounters) -> u64 {
        signed_count(self.denominator, delta)
    }

    /// The figure over a window's counter delta; `None` where the denominator is 0.
    pub fn eval(&self, delta: &SpecCounters) -> Option<f64> {
        self.eval_with(|c| c.of(delta))
    }

    fn eval_with(&self, read: impl Fn(Count) -> u64) -> Option<f64> {
        let n = signed_sum(self.numerator, &read) as f64;
        if self.form == Form::PerSecond {
            return Some(n);
        }
        let d = signed_sum(self.denominator, &read) as f64;
        match self.form {
            Form::Length => crate::figures::acceptance_length(n, d),
            Form::Percent => crate::figures::acceptance_rate_pct(n, d),
            Form::Fraction => (d > 0.0).then(|| n / d),
            Form::PerSecond => unreachable!(),
        }
    }

    /// Whether the numerator keeps its per-position family by position.
    pub fn by_position(&self) -> bool {
        self.numerator.iter().any(|t| matches!(t.count, ByPosition(_)))
    }

    /// A per-position formula at each position the delta has (either per-position family);
    /// empty where the denominator is 0.
    pub fn eval_by_position(&self, delta: &SpecCounters) -> BTreeMap<u32, f64> {
        positions(delta)
            .into_iter()
            .filter_map(|p| self.eval_with(|c| c.at(delta, p)).map(|v| (p, v)))
            .collect()
    }
}

/// The positions a window's delta has in either per-position family.
pub fn positions(delta: &SpecCounters) -> BTreeSet<u32> {
    delta
        .accepted_per_pos
        .keys()
        .chain(delta.drafted_per_pos.keys())
        .copied()
        .collect()
}

impl Source {
    /// The figure from this source over a window: a formula of its delta, a gauge's mean.
    pub fn eval(&self, delta: &SpecCounters, gauges: &GaugeMeans) -> Option<f64> {
        match self {
            Source::Counters(f) => f.eval(delta),
            Source::Gauge { name, scale } => gauges.get(name).map(|v| v * scale),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scrape::testing::counters;

    #[test]
    fn worked_examples_per_engine() {
        // vLLM: 100 drafts of 3 tokens, 150 accepted, positions 80 / 50 / 20.
        let d = counters(100, 300, 150, &[80, 50, 20]);
        assert_eq!(VLLM_RATE.eval(&d), Some(50.0));
        assert_eq!(VLLM_LENGTH.eval(&d), Some(2.5));
        let by_pos = VLLM_POSITION.eval_by_position(&d);
        assert_eq!(by_pos, [(0, 0.8), (1, 0.5), (2, 0.2)].into_iter().collect());
        let drafts = sources(Engine::Vllm, Figure::DraftsPerS)[0];
        assert_eq!(drafts.eval(&d, &GaugeMeans::default()), Some(100.0));
        // TensorRT-LLM's pair: 40 steps drafted position 0, 30 reached 1; 30 + 12 accepted.
        let t = SpecCounters {
            drafted_per_pos: [(0, 40), (1, 30)].into_iter().collect(),
            accepted_per_pos: [(0, 30), (1, 12)].into_iter().collect(),
            ..SpecCounters::default()
        };
        assert_eq!(TRTLLM_PAIR_LENGTH.eval(&t), Some(1.0 + 42.0 / 40.0));
        assert_eq!(TRTLLM_PAIR_RATE.eval(&t), Some(42.0 / 70.0 * 100.0));
        assert_eq!(
            TRTLLM_PAIR_POSITION.eval_by_position(&t),
            [(0, 0.75), (1, 0.3)].into_iter().collect()
        );
        let drafts = sources(Engine::Trtllm, Figure::DraftsPerS)[0];
        assert_eq!(drafts.eval(&t, &GaugeMeans::default()), Some(40.0));
        // SGLang: 500 tokens over 10 requests and 200 verify steps: 290 accepted, length 2.45.
        let mut s = SpecCounters::new(200, 0, 0, &[]);
        s.generation_tokens = Some(500);
        s.requests = Some(10);
        let accepted = sources(Engine::Sglang, Figure::AcceptedTokensPerS)[0];
        assert_eq!(accepted.eval(&s, &GaugeMeans::default()), Some(290.0));
        assert_eq!(SGLANG_LENGTH.eval(&s), Some(2.45));
        assert!(sources(Engine::Sglang, Figure::PositionAcceptanceRate).is_empty());
        // No drafts: no length, no rate.
        assert_eq!(VLLM_LENGTH.eval(&SpecCounters::default()), None);
    }

    #[test]
    fn a_gauge_source_reads_the_windows_mean() {
        let gauges = GaugeMeans {
            means: [("sglang:spec_accept_rate".to_string(), 0.6)].into_iter().collect(),
            scrapes: 3,
        };
        let rate = sources(Engine::Sglang, Figure::AcceptanceRatePct)[0];
        assert_eq!(rate.eval(&SpecCounters::default(), &gauges), Some(60.0));
    }
}
