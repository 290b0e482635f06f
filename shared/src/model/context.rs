//! Step costs with a context term (docs/MODEL.md, "Break-even in batch and context"): what a
//! plain and a speculative decode step cost at B sequences of L context tokens each, in one of
//! two forms — the roofline of `speedup` with the KV bytes a step reads, or a linear fit of
//! measured step times (time = fixed + per batched token + per KV token, as SpecDecode-Bench's
//! predictor writes it) — and what follows from them: the acceptance length a load needs, the
//! speedup, the break-even batch B*(L) and the context L*(B) above which speculation loses.

use serde::{Deserialize, Serialize};

use crate::model::speedup::{break_even_batch, Costs};

/// The largest batch and context the break-even searches look at.
pub const MAX_BATCH: f64 = 1_048_576.0;
pub const MAX_CONTEXT: f64 = 4_194_304.0;

/// KV bytes per context token ÷ weight bytes of an 8B-class model at bf16 with grouped-query
/// attention (Llama-3.1-8B: 32 layers × 8 KV heads × 128 dims × K and V × 2 bytes = 128 KiB
/// per token, against 16.06 GB of weights).
pub const KV_RATIO_8B_BF16: f64 = 131_072.0 / 16.06e9;

/// One forward pass of a linear step-cost fit, in seconds: `fixed + per batched token × tokens
/// processed + per KV token × tokens of context read`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinearForward {
    pub fixed_s: f64,
    pub per_batched_token_s: f64,
    pub per_kv_token_s: f64,
}

impl LinearForward {
    /// The pass's time for `batched` tokens processed over `kv` tokens of context.
    pub fn seconds(&self, batched: f64, kv: f64) -> f64 {
        self.fixed_s + self.per_batched_token_s * batched + self.per_kv_token_s * kv
    }
}

/// A linear step-cost model: the target's forward, one draft pass per speculative step and a
/// per-step overhead (scheduling, sampling), as SpecDecode-Bench's simulator charges a step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinearStepCosts {
    pub target: LinearForward,
    pub draft: LinearForward,
    pub overhead_s: f64,
}

impl LinearStepCosts {
    /// SpecDecode-Bench's published fit for Llama-3.1-8B with an EAGLE drafter on one H100
    /// under vLLM (its `predictor.py`, class `Llama8BH100`).
    pub const LLAMA8B_H100: LinearStepCosts = LinearStepCosts {
        target: LinearForward {
            fixed_s: 5.88590713e-3,
            per_batched_token_s: 2.10103129e-5,
            per_kv_token_s: 3.92645679e-8,
        },
        draft: LinearForward {
            fixed_s: 2.13526175e-3,
            per_batched_token_s: 8.41429603e-7,
            per_kv_token_s: 2.37768493e-9,
        },
        overhead_s: 1.20683946e-3,
    };
}

/// The cost of a decode step at a batch and a context, in one of two forms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum StepCosts {
    /// The roofline of `speedup` with the KV cache: a step reads the weights once and each
    /// sequence's context (`kv_ratio` = KV bytes per context token ÷ weight bytes); a plain
    /// and a verify step read the same KV; each draft pass reads the drafter's weights (c of
    /// the target's) and `draft_kv_share` of the target's KV. Units: one weight read.
    Roofline {
        costs: Costs,
        kv_ratio: f64,
        draft_kv_share: f64,
    },
    /// Measured step times (seconds), fitted linearly.
    Linear(LinearStepCosts),
}

/// A break-even along one axis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "at", rename_all = "snake_case")]
pub enum BreakEven {
    /// Speculation loses from the start of the axis (batch 1, or no context).
    Never,
    /// Speculation pays below this point and loses above it.
    At(f64),
    /// Speculation still pays at the end of the searched axis.
    Beyond(f64),
}

/// The axis a [`BreakEven`] lies on, for its sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakEvenAxis {
    Batch,
    Context,
}

impl BreakEven {
    /// The console's words: `B* = 42.0 (speculation loses at larger batches)`, and so on.
    pub fn sentence(&self, axis: BreakEvenAxis) -> String {
        match (axis, *self) {
            (BreakEvenAxis::Batch, BreakEven::At(b)) => format!("B* = {b:.1} (speculation loses at larger batches)"),
            (BreakEvenAxis::Batch, BreakEven::Never) => "speculation loses even at batch 1".to_string(),
            (BreakEvenAxis::Batch, BreakEven::Beyond(b)) => format!("speculation pays at every batch up to {b}"),
            (BreakEvenAxis::Context, BreakEven::At(l)) => {
                format!("L* = {l:.0} tokens (speculation loses at longer contexts)")
            }
            (BreakEvenAxis::Context, BreakEven::Never) => "speculation loses even without context".to_string(),
            (BreakEvenAxis::Context, BreakEven::Beyond(l)) => {
                format!("speculation pays at every context up to {l} tokens")
            }
        }
    }
}

impl StepCosts {
    /// A plain step (one token per sequence) at `batch` sequences of `context` tokens each.
    pub fn plain_step(&self, batch: f64, context: f64) -> f64 {
        match *self {
            StepCosts::Roofline { costs, kv_ratio, .. } => {
                (1.0 + batch * context * kv_ratio).max(batch / costs.ridge_tokens)
            }
            StepCosts::Linear(l) => l.target.seconds(batch, batch * context) + l.overhead_s,
        }
    }

    /// A speculative step drafting `draft_tokens` (d) per sequence: the verify pass over d + 1
    /// positions a sequence and the drafting.
    pub fn spec_step(&self, batch: f64, context: f64, draft_tokens: f64) -> f64 {
        let kv = batch * context;
        match *self {
            StepCosts::Roofline {
                costs,
                kv_ratio,
                draft_kv_share,
            } => {
                let t = costs.ridge_tokens;
                let verify = (1.0 + kv * kv_ratio).max(batch * (draft_tokens + 1.0) / t);
                let c = costs.draft_cost;
                let draft = draft_tokens * (c + draft_kv_share * kv * kv_ratio).max(c * batch / t);
                verify + draft
            }
            StepCosts::Linear(l) => {
                l.target.seconds(batch * (draft_tokens + 1.0), kv)
                    + l.draft.seconds(draft_tokens + 1.0, kv)
                    + l.overhead_s
            }
        }
    }

    /// The acceptance length a load needs: a speculative step's cost in plain steps. Speculation
    /// pays while the measured E is above it.
    pub fn needed_e(&self, batch: f64, context: f64, draft_tokens: f64) -> f64 {
        self.spec_step(batch, context, draft_tokens) / self.plain_step(batch, context)
    }

    /// Speedup over plain decoding: `E ÷ needed E`.
    pub fn speedup(&self, e: f64, batch: f64, context: f64, draft_tokens: f64) -> f64 {
        e / self.needed_e(batch, context, draft_tokens)
    }

    /// B*(L): the batch above which speculation with acceptance length `e` loses at context
    /// `context`. On the roofline without context it is the closed form `T*·(E − d·c)/(d + 1)`;
    /// otherwise the first crossing on a log grid of batches from 1, refined by bisection.
    pub fn break_even_batch(&self, e: f64, context: f64, draft_tokens: f64) -> BreakEven {
        if let StepCosts::Roofline { costs, .. } = self {
            if context == 0.0 {
                let b = break_even_batch(e, draft_tokens, *costs);
                return if self.speedup(e, 1.0, 0.0, draft_tokens) <= 1.0 {
                    BreakEven::Never
                } else {
                    BreakEven::At(b)
                };
            }
        }
        first_loss(|b| self.needed_e(b, context, draft_tokens) - e, 1.0, MAX_BATCH)
    }

    /// L*(B): the context above which speculation with acceptance length `e` loses at `batch`.
    pub fn break_even_context(&self, e: f64, batch: f64, draft_tokens: f64) -> BreakEven {
        first_loss(|l| self.needed_e(batch, l, draft_tokens) - e, 0.0, MAX_CONTEXT)
    }

    /// Where speculation that loses at `batch` without context starts paying as the context
    /// grows (the KV read keeping long-context steps bandwidth-bound): `Beyond` when it does
    /// not within the searched contexts.
    pub fn pays_from_context(&self, e: f64, batch: f64, draft_tokens: f64) -> BreakEven {
        first_loss(|l| e - self.needed_e(batch, l, draft_tokens), 0.0, MAX_CONTEXT)
    }
}

/// The batches the context report's table shows.
pub const REPORT_BATCHES: [f64; 8] = [1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// `speclens model --context`: the acceptance length each (context, batch) needs, and with a
/// measured E, B*(L) per context and L*(B) at the report's batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextReport {
    pub step_costs: StepCosts,
    /// Where the step costs come from, in words.
    pub source: String,
    pub k: u32,
    /// Draft tokens per draft charged (k unless measured).
    pub draft_tokens: f64,
    pub batches: Vec<f64>,
    pub rows: Vec<ContextRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_e: Option<f64>,
    /// The batch L* is given at.
    pub batch: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_even_context: Option<BreakEven>,
}

/// One context of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextRow {
    pub context: f64,
    /// The acceptance length needed at each of the report's batches.
    pub needed_e: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_even_batch: Option<BreakEven>,
}

impl ContextReport {
    pub fn new(
        step_costs: StepCosts,
        source: &str,
        k: u32,
        draft_tokens: f64,
        contexts: &[f64],
        measured_e: Option<f64>,
        batch: f64,
    ) -> ContextReport {
        let rows = contexts
            .iter()
            .map(|&l| ContextRow {
                context: l,
                needed_e: REPORT_BATCHES
                    .iter()
                    .map(|&b| step_costs.needed_e(b, l, draft_tokens))
                    .collect(),
                break_even_batch: measured_e.map(|e| step_costs.break_even_batch(e, l, draft_tokens)),
            })
            .collect();
        ContextReport {
            step_costs,
            source: source.to_string(),
            k,
            draft_tokens,
            batches: REPORT_BATCHES.to_vec(),
            rows,
            measured_e,
            batch,
            break_even_context: measured_e.map(|e| step_costs.break_even_context(e, batch, draft_tokens)),
        }
    }

    /// The console text.
    pub fn render(&self) -> String {
        let mut out = format!(
            "Break-even by context (k = {}, {} draft tokens per draft; step costs: {}):\n",
            self.k, self.draft_tokens, self.source
        );
        out.push_str("Acceptance length needed (speculation pays while the measured E is above it):\n");
        out.push_str(&format!("{:>10}", "context"));
        for b in &self.batches {
            out.push_str(&format!("{:>8}", format!("B={b}")));
        }
        out.push('\n');
        for r in &self.rows {
            out.push_str(&format!("{:>10}", r.context));
            for e in &r.needed_e {
                out.push_str(&format!("{e:>8.2}"));
            }
            out.push('\n');
        }
        if let Some(e) = self.measured_e {
            out.push_str(&format!("With the measured E = {e:.2}:\n"));
            for r in &self.rows {
                let text = r
                    .break_even_batch
                    .map_or(String::new(), |b| b.sentence(BreakEvenAxis::Batch));
                out.push_str(&format!("  context {}: {text}\n", r.context));
            }
            let text = self
                .break_even_context
                .map_or(String::new(), |l| l.sentence(BreakEvenAxis::Context));
            out.push_str(&format!("  at batch {}: {text}\n", self.batch));
        }
        out
    }
}

/// Where `loss` (needed E − E) first turns non-negative on `[from, to]`: 240 log-spaced points
/// (from 1 when `from` is 0), then 100 bisections between the last winning and the first losing
/// point.
fn first_loss(loss: impl Fn(f64) -> f64, from: f64, to: f64) -> BreakEven {
    if loss(from) >= 0.0 {
        return BreakEven::Never;
    }
    const POINTS: usize = 240;
    let low = from.max(1.0);
    let step = (to / low).ln() / POINTS as f64;
    let mut win = from;
    for i in 0..=POINTS {
        let x = low * (step * i as f64).exp();
        if loss(x) >= 0.0 {
            let mut lose = x;
            for _ in 0..100 {
                let mid = 0.5 * (win + lose);
                if loss(mid) >= 0.0 {
                    lose = mid;
                } else {
                    win = mid;
                }
            }
            return BreakEven::At(0.5 * (win + lose));
        }
        win = x;
    }
    BreakEven::Beyond(to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::speedup::{speedup, GPU_PRESETS};

    fn roofline(draft_cost: f64, kv_ratio: f64, draft_kv_share: f64) -> StepCosts {
        StepCosts::Roofline {
            costs: Costs {
                draft_cost,
                ridge_tokens: GPU_PRESETS[0].ridge_tokens,
            },
            kv_ratio,
            draft_kv_share,
        }
    }

    #[test]
    fn without_context_the_roofline_is_today_s_model_and_its_worked_values() {
        let model = roofline(0.0, KV_RATIO_8B_BF16, 0.0);
        let costs = Costs::H100_FREE_DRAFTS;
        for (e, d) in [(1.4, 1.0), (1.624, 3.0), (3.2, 3.0), (2.5, 2.5)] {
            for b in [1.0, 32.0, 100.0, 295.0, 1000.0] {
                let want = speedup(e, d, costs, b);
                assert!((model.speedup(e, b, 0.0, d) - want).abs() < 1e-12, "E {e} d {d} B {b}");
            }
        }
        // docs/MODEL.md's worked values: B* = 206.5, 119.77, 236.0 (and 184.4 / 210.7 for d).
        let b = |e: f64, d: f64| match model.break_even_batch(e, 0.0, d) {
            BreakEven::At(b) => (b * 100.0).round() / 100.0,
            other => panic!("{other:?}"),
        };
        assert_eq!((b(1.4, 1.0), b(1.624, 3.0), b(3.2, 3.0)), (206.5, 119.77, 236.0));
        assert_eq!((b(2.5, 3.0), b(2.5, 2.5)), (184.38, 210.71));
        // The search finds the closed form's B* too, at a vanishing context.
        let BreakEven::At(searched) = model.break_even_batch(3.2, 1e-9, 3.0) else {
            panic!()
        };
        assert!((searched - 236.0).abs() < 1e-6, "{searched}");
    }

    /// SpecDecode-Bench's Llama-3.1-8B/H100 fit: the acceptance length needed at B requests of
    /// L context tokens each, k = 3 (docs/MODEL.md derives the table).
    #[test]
    fn specdecode_bench_s_published_fit_gives_the_acceptance_length_each_load_needs() {
        let model = StepCosts::Linear(LinearStepCosts::LLAMA8B_H100);
        let batches = [1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];
        let needed = |l: f64| -> Vec<f64> {
            batches
                .iter()
                .map(|&b| (model.needed_e(b, l, 3.0) * 100.0).round() / 100.0)
                .collect()
        };
        assert_eq!(needed(1000.0), [1.31, 1.35, 1.40, 1.47, 1.58, 1.71, 1.84, 1.94]);
        assert_eq!(needed(4000.0), [1.30, 1.32, 1.33, 1.35, 1.37, 1.38, 1.39, 1.40]);
        // By hand at B = 1, L = 1000: plain = 1000·3.926e-8 + 2.101e-5 + 5.886e-3 + 1.207e-3,
        // spec adds 3 more batched tokens and a draft pass of 4 tokens over the same KV.
        let plain = 1000.0 * 3.92645679e-8 + 2.10103129e-5 + 5.88590713e-3 + 1.20683946e-3;
        assert!((model.plain_step(1.0, 1000.0) - plain).abs() < 1e-15);
        let spec = plain + 3.0 * 2.10103129e-5 + 2.13526175e-3 + 4.0 * 8.41429603e-7 + 1000.0 * 2.37768493e-9;
        assert!((model.spec_step(1.0, 1000.0, 3.0) - spec).abs() < 1e-15);
    }

    #[test]
    fn context_moves_the_break_even_right_when_the_kv_read_dominates() {
        // The KV read is shared by the plain and the verify step: longer context keeps the
        // verify step memory-bound longer, and B* moves right.
        let model = roofline(0.0, KV_RATIO_8B_BF16, 0.0);
        let at = |l: f64| match model.break_even_batch(2.5, l, 3.0) {
            BreakEven::At(b) => b,
            other => panic!("{other:?}"),
        };
        let (b0, b250, b500) = (at(0.0), at(250.0), at(500.0));
        assert!(b0 < b250 && b250 < b500, "{b0} {b250} {b500}");
        // At B*(L) the speculative and the plain step cost the same per token.
        assert!((model.speedup(2.5, b500, 500.0, 3.0) - 1.0).abs() < 1e-9);
        // At large batch the plain step stays memory-bound (it reads B·L of KV) while the verify
        // step turns compute-bound, so the needed E tends to (d + 1) ÷ (T*·L·KV ratio): above
        // about 665 tokens of context that is below 2.5, and E = 2.5 pays at every batch.
        assert_eq!(model.break_even_batch(2.5, 1_000.0, 3.0), BreakEven::Beyond(MAX_BATCH));
        // The linear fit: the needed E falls with context at every batch, so no L* there.
        let linear = StepCosts::Linear(LinearStepCosts::LLAMA8B_H100);
        assert_eq!(
            linear.break_even_context(2.0, 64.0, 3.0),
            BreakEven::Beyond(MAX_CONTEXT)
        );
    }

    #[test]
    fn a_drafter_reading_its_own_kv_gives_a_context_above_which_speculation_loses() {
        // A drafter reading 30 % of the target's KV per draft pass: long-context steps cost
        // 1 + 3·0.3 = 1.9 plain steps, so E = 1.8 loses past some context even at batch 1.
        let model = roofline(0.05, KV_RATIO_8B_BF16, 0.3);
        let BreakEven::At(l_star) = model.break_even_context(1.8, 1.0, 3.0) else {
            panic!("{:?}", model.break_even_context(1.8, 1.0, 3.0))
        };
        assert!(model.needed_e(1.0, l_star * 0.99, 3.0) < 1.8);
        assert!(model.needed_e(1.0, l_star * 1.01, 3.0) > 1.8);
        // With more sequences the same KV is reached at a shorter context.
        let BreakEven::At(l_star_64) = model.break_even_context(1.8, 64.0, 3.0) else {
            panic!()
        };
        assert!(l_star_64 < l_star, "{l_star_64} {l_star}");
        // An acceptance that never pays at batch 1 has no break-even at all.
        assert_eq!(model.break_even_batch(1.1, 1000.0, 3.0), BreakEven::Never);
    }
}
