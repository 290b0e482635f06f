//! What a speculative step costs against a plain one at each level of a concurrency sweep, and
//! the acceptance length that load needs for speculation to pay (docs/MODEL.md, "Step cost").
//!
//! At one concurrency both arms run the same batch. A plain step emits one token per
//! sequence and a speculative step E, so the output-throughput ratio (spec ÷ plain, the
//! figure the sweep's verdict reads) is `E × t_plain ÷ t_spec`: a speculative step costs
//! `E ÷ ratio` plain steps, and speculation pays (ratio > 1) exactly while E exceeds that
//! cost, which is also the E the load needs. Reading the cost from the same throughputs as the
//! verdict means the two cannot disagree at any level; the median TPOTs are kept beside it.

use serde::{Deserialize, Serialize};

use super::levels::{throughput, unsteady, Level, NamedPoint, BASE_ARM};
use crate::model::speedup::{draft_share, step_cost, Costs};
use crate::results::run_result::RunResult;

/// The definition shown on hover wherever the step cost is.
pub const STEP_COST_DEFINITION: &str = "A speculative step's cost in plain steps at this concurrency: E ÷ the output-throughput ratio to plain at that level (a plain step emits one token per sequence, a speculative one E; the ratio is the one the sweep's verdict reads). Speculation pays while the measured acceptance length E exceeds it, so it is also the E the load needs.";

/// One level of one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCostRow {
    pub level: f64,
    /// The arm's acceptance length at this level (its point's 1 + accepted ÷ drafts).
    pub acceptance_length: f64,
    pub spec_median_tpot_ms: f64,
    pub base_median_tpot_ms: f64,
    /// A speculative step in plain steps, `E ÷ (spec ÷ plain output throughput)`: also the
    /// acceptance length this load needs for speculation to pay.
    pub step_cost: f64,
    /// The model's step cost at this batch with the sweep's costs and the point's draft tokens
    /// per draft, and the share of it the model charges to drafting.
    pub model_step_cost: f64,
    pub model_draft_share: f64,
    /// Both points had a steady window (their TPOT is the load's, not a ramp's).
    pub steady: bool,
}

impl StepCostRow {
    /// The acceptance length this load needs: the step cost.
    pub fn needed_acceptance_length(&self) -> f64 {
        self.step_cost
    }

    /// Measured E less the E needed: positive while speculation pays.
    pub fn margin(&self) -> f64 {
        self.acceptance_length - self.step_cost
    }

    /// The overview's sentence about this level of arm `arm`.
    pub fn sentence(&self, arm: &str) -> String {
        let verdict = if self.margin() > 0.0 { "pays" } else { "does not pay" };
        format!(
            "At {} concurrent requests a speculative step of {arm} costs {:.2} plain steps: it would need an acceptance length of {:.2} or more, it measures {:.2}, so speculation {verdict} there (the model: {:.2} plain steps).",
            self.level,
            self.step_cost,
            self.needed_acceptance_length(),
            self.acceptance_length,
            self.model_step_cost
        )
    }
}

/// The acceptance length and draft tokens per draft of one point, from its counts (k where
/// the engine counts no draft tokens).
pub fn acceptance(result: &RunResult) -> Option<(f64, f64)> {
    let (drafts, accepted, draft_tokens) = result.spec_counts()?;
    let e = crate::figures::acceptance_length(accepted, drafts)?;
    let per_draft = draft_tokens
        .map(|t| t / drafts)
        .or(result.spec_decode_num_spec_tokens.map(f64::from))?;
    Some((e, per_draft))
}

/// One concurrency's row from the arm's point and plain's, when both measured TPOT and the
/// arm's acceptance was counted.
pub fn row(batch: u64, spec: &RunResult, base: &RunResult, costs: Costs) -> Option<StepCostRow> {
    let (e, draft_tokens) = acceptance(spec)?;
    let (spec_tpot, base_tpot) = (spec.median_tpot_ms?, base.median_tpot_ms?);
    let (spec_tokens_per_s, base_tokens_per_s) = (throughput(spec)?, throughput(base)?);
    if !(spec_tokens_per_s > 0.0 && base_tokens_per_s > 0.0) {
        return None;
    }
    let batch = batch as f64;
    Some(StepCostRow {
        level: batch,
        acceptance_length: e,
        spec_median_tpot_ms: spec_tpot,
        base_median_tpot_ms: base_tpot,
        step_cost: e * base_tokens_per_s / spec_tokens_per_s,
        model_step_cost: step_cost(draft_tokens, costs, batch),
        model_draft_share: draft_share(draft_tokens, costs, batch),
        steady: !(unsteady(spec) || unsteady(base)),
    })
}

/// `arm`'s step cost at each concurrency plain measured too, ascending.
pub(super) fn rows(points: &[NamedPoint<'_>], arm: &str, costs: Costs) -> Vec<StepCostRow> {
    let mut rows: Vec<StepCostRow> = points
        .iter()
        .filter(|p| p.arm == arm)
        .filter_map(|p| {
            let Level::Concurrency(batch) = p.level else {
                return None;
            };
            let base = points.iter().find(|b| b.arm == BASE_ARM && b.level == p.level)?;
            row(batch, p.result, base.result, costs)
        })
        .collect();
    rows.sort_by(|a, b| a.level.total_cmp(&b.level));
    rows
}

/// The console table of one arm's rows.
pub fn render(arm: &str, rows: &[StepCostRow], costs: Option<Costs>) -> String {
    let model = costs.map_or_else(String::new, |c| {
        format!("; the model's at c = {}, T* = {}", c.draft_cost, c.ridge_tokens)
    });
    let mut out = format!(
        "Step cost, {arm} (a speculative step in plain steps = E ÷ the throughput ratio to plain, also the acceptance length the load needs{model}):\n"
    );
    out.push_str(&format!(
        "{:>12} {:>12} {:>12} {:>10} {:>12} {:>12}\n",
        "concurrency", "E measured", "E needed", "margin", "model cost", "draft share"
    ));
    for r in rows {
        let ramp = if r.steady { "" } else { "  (no steady window)" };
        out.push_str(&format!(
            "{:>12} {:>12.2} {:>12.2} {:>+10.2} {:>12.2} {:>11.0}%{ramp}\n",
            r.level,
            r.acceptance_length,
            r.needed_acceptance_length(),
            r.margin(),
            r.model_step_cost,
            r.model_draft_share * 100.0
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point's result: steady output throughput, median TPOT and `(drafts, draft tokens,
    /// accepted)`.
    fn point(tokens_per_s: f64, tpot_ms: f64, counts: Option<(u64, u64, u64)>) -> RunResult {
        let mut r = RunResult {
            median_tpot_ms: Some(tpot_ms),
            steady_output_throughput: Some(tokens_per_s),
            ..RunResult::default()
        };
        if let Some((drafts, tokens, accepted)) = counts {
            r.spec_decode_num_drafts = Some(drafts);
            r.spec_decode_draft_tokens = Some(tokens);
            r.spec_decode_accepted_tokens = Some(accepted);
        }
        r
    }

    #[test]
    fn the_step_cost_is_e_over_the_throughput_ratio_and_the_e_a_load_needs() {
        // Worked example: at 64, plain gives 1,000 tokens/s; the arm accepts 1900 of 3000 draft
        // tokens in 1000 drafts (E = 2.9, d = 3) and gives 1,450 tokens/s, a ratio of 1.45. A
        // speculative step emits 2.9 tokens in the time of 2.9 ÷ 1.45 = 2 plain steps: it needs
        // E ≥ 2.00 and has 0.90 to spare. The TPOTs are kept, not used.
        let (spec, base) = (point(1450.0, 13.1, Some((1000, 3000, 1900))), point(1000.0, 20.0, None));
        // c = 0.1, T* = 64: verify 64·4/64 = 4, draft 3·0.1·1 = 0.3, plain 1 → 4.3 plain
        // steps, 7 % of them drafting.
        let costs = Costs {
            draft_cost: 0.1,
            ridge_tokens: 64.0,
        };
        let row = row(64, &spec, &base, costs).unwrap();
        assert!((row.acceptance_length - 2.9).abs() < 1e-12);
        assert!((row.step_cost - 2.0).abs() < 1e-9, "{row:?}");
        assert_eq!(row.needed_acceptance_length(), row.step_cost);
        assert!((row.margin() - 0.9).abs() < 1e-9);
        assert!((row.model_step_cost - 4.3).abs() < 1e-12);
        assert!((row.model_draft_share - 0.3 / 4.3).abs() < 1e-12);
        assert!(row.steady);
        assert_eq!(
            row.sentence("spec"),
            "At 64 concurrent requests a speculative step of spec costs 2.00 plain steps: it would need an acceptance length of 2.00 or more, it measures 2.90, so speculation pays there (the model: 4.30 plain steps)."
        );
        // Where spec's throughput equals plain's the step costs exactly E: no margin, and the
        // verdict is the throughput table's (a ratio of 1.0 does not pay).
        let even = point(1000.0, 13.1, Some((1000, 3000, 1900)));
        let row = super::row(8, &even, &base, costs).unwrap();
        assert!(row.margin().abs() < 1e-12 && row.sentence("spec").contains("does not pay"));
        // The model's cost below the ridge: one bandwidth-bound step plus the drafts.
        assert!((row.model_step_cost - (1.0 + 0.3)).abs() < 1e-12);
    }
}
