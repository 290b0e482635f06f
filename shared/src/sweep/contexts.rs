//! The sweep along context length: one concurrency sweep per input length, and what moves
//! between them — B* per context (measured, with its range, beside the model's B*(L)), L* per
//! concurrency, and per context the acceptance length beside the step cost, so a user sees
//! which of the two moved (docs/MODEL.md, "Break-even in batch and context").

use serde::{Deserialize, Serialize};

use super::arms::Arms;
use super::pair::{PairTable, Prediction};
use crate::model::context::{BreakEven, BreakEvenAxis, StepCosts, MAX_CONTEXT};
use crate::model::speedup::{sweep_crossing, RatioPoint};

/// A change below this share (of acceptance length or step cost) between two contexts is
/// "held" rather than "moved".
pub const MOVED_SHARE: f64 = 0.05;

/// What a context sweep lengthens: each prompt's own input, or a prefix every prompt shares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextAxis {
    /// `--input-tokens L1,L2,…`: every prompt its own L tokens, prefilled in full.
    #[default]
    InputTokens,
    /// `--prefix-tokens L1,L2,…`: L tokens every prompt shares, before its own input; a server
    /// with prefix caching computes them once, so the context grows and the prefill does not.
    PrefixTokens,
}

impl ContextAxis {
    /// The unit of a length on this axis, as tables and charts name it.
    pub fn tokens_name(self) -> &'static str {
        match self {
            ContextAxis::InputTokens => "input tokens",
            ContextAxis::PrefixTokens => "shared-prefix tokens",
        }
    }

    /// The flag that gives this axis its lengths.
    pub fn flag(self) -> &'static str {
        match self {
            ContextAxis::InputTokens => "--input-tokens",
            ContextAxis::PrefixTokens => "--prefix-tokens",
        }
    }

    /// What the context of a decode step is made of, on this axis.
    pub fn context_definition(self) -> &'static str {
        match self {
            ContextAxis::InputTokens => "context = input + half the output, the mean a decode step holds",
            ContextAxis::PrefixTokens => {
                "context = shared prefix + input + half the output, the mean a decode step holds; the prefix cached, its prefill paid once"
            }
        }
    }

    fn is_input(&self) -> bool {
        *self == ContextAxis::InputTokens
    }
}

/// The lengths a context sweep measures: shortest first, each once (`256,256` is one length,
/// so no context sweep).
pub fn distinct_lengths(lengths: &[u32]) -> Vec<u32> {
    let mut lengths = lengths.to_vec();
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

/// Every context of a sweep over input lengths, as `sweep.json`'s `contexts` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextSweep {
    /// What the lengths lengthen (absent in files written before the shared-prefix axis).
    #[serde(default, skip_serializing_if = "ContextAxis::is_input")]
    pub axis: ContextAxis,
    /// The KV bytes a token held costs against the weights a step reads, and the drafter's
    /// share of it, that the model's B*(L) and L*(B) charge.
    pub kv_ratio: f64,
    pub draft_kv_share: f64,
    /// One entry per input length, shortest first.
    pub contexts: Vec<ContextSlice>,
    /// L* per arm and concurrency: the input length above which speculation loses there.
    pub by_concurrency: Vec<ContextCrossing>,
    /// Input lengths asked for and not measured (the sweep was stopped): the summary is
    /// partial.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_measured: Vec<u32>,
}

/// One length of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextSlice {
    /// The length swept, on the sweep's axis: the input tokens, or the shared prefix's.
    pub input_tokens: u32,
    /// The context a decode step holds on average: the prompt (shared prefix and input) plus
    /// half the output.
    pub mean_context_tokens: f64,
    /// Its sweep's folder, relative to the sweep's own (empty: the sweep's own folder).
    pub folder: String,
    pub arms: Vec<ContextArm>,
}

impl ContextSlice {
    /// The speculative arm named `name` at this length.
    pub fn arm(&self, name: &str) -> Option<&ContextArm> {
        self.arms.iter().find(|a| a.arm == name)
    }
}

/// One speculative arm at one input length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextArm {
    pub arm: String,
    /// The measured crossing: where the output-throughput ratio falls through 1.0, or the side
    /// the sweep stayed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<BreakEven>,
    /// Where the crossing can lie given the repeats' spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_interval: Option<(f64, f64)>,
    /// The model's B*(L) at this context, fed with this context's E and draft length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<BreakEven>,
    /// Acceptance length pooled over the arm's points at this context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_length: Option<f64>,
    /// A speculative step in plain steps at the highest level every length measured, from throughput: E ÷ the
    /// spec ÷ plain output-throughput ratio (the acceptance length that load needs, with
    /// everything a step pays at this context: the KV read, the drafting, the prefills it
    /// shares steps with), and that level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_cost_level: Option<f64>,
}

/// L* of one arm at one concurrency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextCrossing {
    pub arm: String,
    pub level: f64,
    /// The spec ÷ plain output-throughput ratio at each input length.
    pub ratios: Vec<(u32, f64)>,
    /// Where the ratio falls through 1.0 along the input length (rises through it, with
    /// `pays_above`), or the side it stayed on.
    pub measured: BreakEven,
    /// The crossing is where speculation starts paying (the ratio rises with the context), not
    /// where it stops.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pays_above: bool,
    /// Where it can lie given the repeats' spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_interval: Option<(f64, f64)>,
    /// The model's L*(B) in input tokens, fed with the shortest context's E.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<BreakEven>,
    /// The model's crossing is where speculation starts paying.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_pays_above: bool,
}

/// The first input length where the ratio rises through 1.0 (interpolated), as
/// [`sweep_crossing`] finds where it falls.
fn rising_crossing(points: &[RatioPoint]) -> Option<f64> {
    points.windows(2).find_map(|w| {
        let (p, q) = (w[0], w[1]);
        (p.ratio <= 1.0 && q.ratio > 1.0)
            .then(|| p.concurrency + (q.concurrency - p.concurrency) * (1.0 - p.ratio) / (q.ratio - p.ratio))
    })
}

/// What a decode step holds beyond the length swept, on average: the prompt's other part and
/// half the output.
fn held_beyond_length(i: &ContextInput<'_>) -> f64 {
    f64::from(i.other_prompt_tokens) + f64::from(i.output_tokens) / 2.0
}

/// One measured sweep at one input length (its arms against plain): what
/// [`ContextSweep::new`] reads.
pub struct ContextInput<'a> {
    /// The length swept (input or shared prefix).
    pub input_tokens: u32,
    /// The prompt's other part: the shared prefix on the input axis, the input on the prefix
    /// axis.
    pub other_prompt_tokens: u32,
    pub output_tokens: u32,
    pub folder: String,
    pub arms: &'a Arms,
}

/// The measured crossing of a table, or the side the sweep stayed on (`None`: no ratio).
pub fn measured_break_even(table: &PairTable) -> Option<BreakEven> {
    if let Some(c) = table.crossing {
        return Some(BreakEven::At(c));
    }
    let ratios: Vec<(f64, f64)> = table
        .rows
        .iter()
        .filter_map(|r| r.ratio().map(|x| (r.level, x)))
        .collect();
    let (first, last) = (ratios.first()?, ratios.last()?);
    Some(if first.1 <= 1.0 {
        BreakEven::Never
    } else {
        BreakEven::Beyond(last.0)
    })
}

/// The highest level at which every length has a spec ÷ plain ratio for `arm`: the load where
/// a step's cost differs most between lengths (at a low batch every step is bandwidth-bound
/// and costs about the same).
fn common_highest_level(inputs: &[&ContextInput<'_>], arm: &str) -> Option<f64> {
    let levels_of = |i: &ContextInput<'_>| -> Vec<f64> {
        i.arms
            .arm(arm)
            .map(|a| {
                a.table
                    .rows
                    .iter()
                    .filter(|r| r.ratio().is_some())
                    .map(|r| r.level)
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = levels_of(inputs.first()?);
    first
        .into_iter()
        .filter(|l| inputs.iter().all(|i| levels_of(i).contains(l)))
        .max_by(f64::total_cmp)
}

impl ContextSweep {
    pub fn new(inputs: &[ContextInput<'_>], axis: ContextAxis, kv_ratio: f64, draft_kv_share: f64) -> ContextSweep {
        let mut inputs: Vec<&ContextInput<'_>> = inputs.iter().collect();
        inputs.sort_by_key(|i| i.input_tokens);
        let contexts: Vec<ContextSlice> = inputs
            .iter()
            .map(|i| {
                let mean_context_tokens = f64::from(i.input_tokens) + held_beyond_length(i);
                ContextSlice {
                    input_tokens: i.input_tokens,
                    mean_context_tokens,
                    folder: i.folder.clone(),
                    arms: i
                        .arms
                        .arms
                        .iter()
                        .map(|arm| {
                            let model = arm.table.prediction.map(|p| {
                                let costs = StepCosts::Roofline {
                                    costs: p.costs,
                                    kv_ratio,
                                    draft_kv_share,
                                };
                                costs.break_even_batch(p.measured_e, mean_context_tokens, p.draft_tokens)
                            });
                            // At the highest level every length measured for this arm, so the
                            // lengths compare at one load.
                            let highest = common_highest_level(&inputs, &arm.name)
                                .and_then(|level| Some((level, arm.ratio_at(level)?.0)));
                            let step_cost = match (arm.acceptance_length, highest) {
                                (Some(e), Some((level, ratio))) if ratio > 0.0 => Some((e / ratio, level)),
                                _ => None,
                            };
                            ContextArm {
                                arm: arm.name.clone(),
                                measured: measured_break_even(&arm.table),
                                measured_interval: arm.table.crossing_interval,
                                model,
                                acceptance_length: arm.acceptance_length,
                                step_cost: step_cost.map(|c| c.0),
                                step_cost_level: step_cost.map(|c| c.1),
                            }
                        })
                        .collect(),
                }
            })
            .collect();
        let by_concurrency = context_crossings(&inputs, kv_ratio, draft_kv_share);
        ContextSweep {
            axis,
            kv_ratio,
            draft_kv_share,
            contexts,
            by_concurrency,
            not_measured: Vec::new(),
        }
    }

    /// Per context after the first, for `arm`: how its acceptance length and step cost moved
    /// against the shortest context's, and which of the two moved more.
    pub fn what_moved(&self, arm: &str) -> Vec<String> {
        let Some(first) = self.contexts.first() else {
            return Vec::new();
        };
        let Some(base) = first.arm(arm) else { return Vec::new() };
        let change = |now: Option<f64>, then: Option<f64>| match (now, then) {
            (Some(n), Some(t)) if t > 0.0 => Some(n / t - 1.0),
            _ => None,
        };
        self.contexts[1..]
            .iter()
            .filter_map(|slice| {
                let now = slice.arm(arm)?;
                let e = change(now.acceptance_length, base.acceptance_length);
                let cost = change(now.step_cost, base.step_cost);
                let pct = |c: Option<f64>| c.map_or("not measured".to_string(), |c| format!("{:+.1} %", c * 100.0));
                let verdict = match (e, cost) {
                    (Some(e), Some(c)) if e.abs() < MOVED_SHARE && c.abs() < MOVED_SHARE => {
                        "neither moved by 5 % or more".to_string()
                    }
                    (Some(e), Some(c)) if e.abs() >= c.abs() => "the acceptance moved, not the step cost".to_string(),
                    (Some(_), Some(_)) => "the step cost moved, not the acceptance".to_string(),
                    _ => "no common level to tell them apart".to_string(),
                };
                Some(format!(
                    "At {} {} against {}: acceptance length {}, step cost {}: {verdict}.",
                    slice.input_tokens,
                    self.axis.tokens_name(),
                    first.input_tokens,
                    pct(e),
                    pct(cost)
                ))
            })
            .collect()
    }

    /// The arms, in the sweep's order.
    pub fn arm_names(&self) -> Vec<String> {
        self.contexts
            .first()
            .map(|s| s.arms.iter().map(|a| a.arm.clone()).collect())
            .unwrap_or_default()
    }

    /// The per-context table of `arm`, as the console and the page show it: input tokens, the
    /// measured B*, the model's, E, and the step cost with its level.
    pub fn rows(&self, arm: &str) -> Vec<[String; 5]> {
        self.contexts
            .iter()
            .filter_map(|slice| {
                let a = slice.arm(arm)?;
                let measured = a
                    .measured
                    .map_or("—".to_string(), |m| measured_batch_text(m, a.measured_interval));
                let model = a.model.map_or("—".to_string(), |m| m.sentence(BreakEvenAxis::Batch));
                let e = a.acceptance_length.map_or("—".to_string(), |e| format!("{e:.2}"));
                let cost = match (a.step_cost, a.step_cost_level) {
                    (Some(c), Some(level)) => format!("{c:.2} (at {level})"),
                    _ => "—".to_string(),
                };
                Some([slice.input_tokens.to_string(), measured, model, e, cost])
            })
            .collect()
    }

    /// One sentence per arm and level: L* measured, and the model's beside it.
    pub fn crossing_lines(&self) -> Vec<String> {
        self.by_concurrency.iter().map(ContextCrossing::sentence).collect()
    }

    /// The console text: B* per context, what moved, L* per concurrency.
    pub fn render(&self) -> String {
        let mut out = format!(
            "\nBreak-even by context (measured first, the model's B*(L) beside it; {}):\n",
            self.axis.context_definition()
        );
        for arm in &self.arm_names() {
            out.push_str(&format!(
                "  arm {arm}:\n  {:>12}  {:<44} {:<40} {:>9}  step cost (E ÷ speedup)\n",
                self.axis.tokens_name(),
                "measured",
                "model",
                "E"
            ));
            for [tokens, measured, model, e, cost] in self.rows(arm) {
                out.push_str(&format!("  {tokens:>12}  {measured:<44} {model:<40} {e:>9}  {cost}\n"));
            }
            for line in self.what_moved(arm) {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out.push_str(&format!(
            "L* by concurrency (the length in {} above which speculation loses there):\n",
            self.axis.tokens_name()
        ));
        for line in self.crossing_lines() {
            out.push_str(&format!("  {line}\n"));
        }
        if let Some(line) = self.partial_line() {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str(ENGINE_LINES_NOTE);
        out.push('\n');
        out
    }

    /// When the sweep stopped before every length: which were not measured.
    pub fn partial_line(&self) -> Option<String> {
        (!self.not_measured.is_empty()).then(|| {
            let lengths: Vec<String> = self.not_measured.iter().map(u32::to_string).collect();
            format!(
                "Partial: the sweep stopped before input lengths {}; the figures above are of the lengths measured.",
                lengths.join(", ")
            )
        })
    }
}

/// A measured B*: the crossing with the repeats' range, or the side the sweep stayed on, in
/// the words of the levels it swept.
pub fn measured_batch_text(b: BreakEven, interval: Option<(f64, f64)>) -> String {
    match (b, interval) {
        (BreakEven::At(b), Some((lo, hi))) => format!("B* = {b:.1} ({lo:.1}–{hi:.1})"),
        (BreakEven::Never, _) => "speculation loses from the first level swept".to_string(),
        (b, _) => b.sentence(BreakEvenAxis::Batch),
    }
}

/// Where the engine lines of a context sweep hold.
pub const ENGINE_LINES_NOTE: &str = "The engine lines above hold for the shortest input length; vLLM's per-context draft-length schedule (PR #54801, RFC #48627) is not released, so none is written for the longer ones.";

/// The definition shown on hover beside B* per context.
pub const CONTEXT_BREAK_EVEN_DEFINITION: &str = "B* per input length: at each length the sweep measured every concurrency level; B* is where the spec ÷ plain output-throughput ratio falls through 1.0 there (a ring: it paid at every level swept). The model's B*(L) is the roofline with the KV a step reads (--kv-ratio), fed with that length's acceptance length, at the context a decode step holds on average (input + half the output); it does not charge the prefill.";

/// The definition shown on hover beside the step cost per context.
pub const CONTEXT_STEP_COST_DEFINITION: &str = "The step cost at each input length, from throughput: the acceptance length E divided by the spec ÷ plain output-throughput ratio at the highest concurrency every length measured (where a step's cost differs most between lengths), so the acceptance length that load needs with everything a step pays at that length (the KV read, the drafting, the prefills it shares steps with). Speculation pays there while E is above it; between two lengths, whichever of the two moved more is named.";

/// The definition shown on hover beside L* per concurrency.
pub const CONTEXT_CROSSING_DEFINITION: &str = "L* per concurrency: along the input length at one concurrency, where the spec ÷ plain output-throughput ratio falls through 1.0 (speculation loses at longer prompts), or rises through it (speculation starts paying at longer prompts); the model's L*(B) beside it.";

impl ContextCrossing {
    /// `spec at concurrency 16: L* = 1536 tokens (…) · model: …`.
    pub fn sentence(&self) -> String {
        let measured = match self.measured {
            BreakEven::At(l) if self.pays_above => {
                let range = self
                    .measured_interval
                    .map_or(String::new(), |(lo, hi)| format!(" ({lo:.0}–{hi:.0})"));
                format!("L* = {l:.0} tokens{range} (speculation loses below it, pays above)")
            }
            BreakEven::At(l) => match self.measured_interval {
                Some((lo, hi)) => format!("L* = {l:.0} tokens ({lo:.0}–{hi:.0})"),
                None => BreakEven::At(l).sentence(BreakEvenAxis::Context),
            },
            BreakEven::Never => "speculation loses from the shortest input length swept".to_string(),
            m => m.sentence(BreakEvenAxis::Context),
        };
        let model = self.model.map_or(String::new(), |m| {
            let text = match m {
                BreakEven::At(l) if self.model_pays_above => {
                    format!("L* = {l:.0} tokens (speculation loses below it, pays above)")
                }
                BreakEven::Beyond(l) if self.model_pays_above => {
                    format!("speculation loses at every context up to {l} tokens")
                }
                m => m.sentence(BreakEvenAxis::Context),
            };
            format!(" · model: {text}")
        });
        format!("{} at concurrency {}: {measured}{model}", self.arm, self.level)
    }
}

/// L* per arm and level present at every context: the ratio against input length, its
/// crossing, the crossings of its low and high ends, and the model's L*(B).
fn context_crossings(inputs: &[&ContextInput<'_>], kv_ratio: f64, draft_kv_share: f64) -> Vec<ContextCrossing> {
    let Some(first) = inputs.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for arm in &first.arms.arms {
        for row in &arm.table.rows {
            let mut ratios = Vec::new();
            let mut lows = Vec::new();
            let mut highs = Vec::new();
            for i in inputs {
                let Some((ratio, (lo, hi))) = i.arms.arm(&arm.name).and_then(|a| a.ratio_at(row.level)) else {
                    continue;
                };
                let at = f64::from(i.input_tokens);
                ratios.push((i.input_tokens, ratio));
                lows.push(RatioPoint {
                    concurrency: at,
                    ratio: lo,
                });
                highs.push(RatioPoint {
                    concurrency: at,
                    ratio: hi,
                });
            }
            if ratios.len() < 2 {
                continue;
            }
            let points: Vec<RatioPoint> = ratios
                .iter()
                .map(|&(l, ratio)| RatioPoint {
                    concurrency: f64::from(l),
                    ratio,
                })
                .collect();
            let pays_above = ratios[0].1 <= 1.0 && rising_crossing(&points).is_some();
            let crossing = |points: &[RatioPoint]| {
                if pays_above {
                    rising_crossing(points)
                } else {
                    sweep_crossing(points)
                }
            };
            let measured = match crossing(&points) {
                Some(l) => BreakEven::At(l),
                None if ratios[0].1 <= 1.0 => BreakEven::Never,
                None => BreakEven::Beyond(f64::from(ratios[ratios.len() - 1].0)),
            };
            let repeated = arm
                .table
                .rows
                .iter()
                .any(|r| r.spec_spread.is_some() || r.base_spread.is_some());
            let measured_interval = if repeated && matches!(measured, BreakEven::At(_)) {
                // A rising ratio's low ends cross later than its high ends: sorted, the range.
                crossing(&lows).zip(crossing(&highs)).map(|(a, b)| (a.min(b), a.max(b)))
            } else {
                None
            };
            let held_beyond = held_beyond_length(first);
            // The model's context is what a decode step holds (input + half the output): an L*
            // inside the output's half means no input length is short enough.
            let model = arm
                .table
                .prediction
                .map(|p| model_context_crossing(&p, row.level, held_beyond, kv_ratio, draft_kv_share));
            out.push(ContextCrossing {
                arm: arm.name.clone(),
                level: row.level,
                ratios,
                measured,
                pays_above,
                measured_interval,
                model: model.map(|m| m.0),
                model_pays_above: model.is_some_and(|m| m.1),
            });
        }
    }
    out
}

/// The model's L*(B) at `level` in the axis's tokens (the context less `held_beyond`, what a
/// step holds beyond the length swept), and whether it is where speculation starts
/// paying (the KV read keeping long-context steps bandwidth-bound) rather than stops.
fn model_context_crossing(
    p: &Prediction,
    level: f64,
    held_beyond: f64,
    kv_ratio: f64,
    draft_kv_share: f64,
) -> (BreakEven, bool) {
    let in_input_tokens = |b: BreakEven| match b {
        BreakEven::At(l) if l <= held_beyond => BreakEven::Never,
        BreakEven::At(l) => BreakEven::At(l - held_beyond),
        BreakEven::Beyond(l) => BreakEven::Beyond((l - held_beyond).max(0.0)),
        BreakEven::Never => BreakEven::Never,
    };
    let costs = StepCosts::Roofline {
        costs: p.costs,
        kv_ratio,
        draft_kv_share,
    };
    match costs.break_even_context(p.measured_e, level, p.draft_tokens) {
        BreakEven::Never => match costs.pays_from_context(p.measured_e, level, p.draft_tokens) {
            // Paying from inside the output's half: at every input length.
            BreakEven::At(l) if l <= held_beyond => (BreakEven::Beyond(MAX_CONTEXT - held_beyond), false),
            b => (in_input_tokens(b), true),
        },
        b => (in_input_tokens(b), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::speedup::Costs;
    use crate::sweep::arms::ArmSweep;
    use crate::sweep::pair::SweepRow;
    use crate::sweep::Level;

    const COSTS: Costs = Costs {
        draft_cost: 0.0,
        ridge_tokens: 64.0,
    };

    /// A sweep of one arm at concurrency 1, 8 and 32 with these spec ÷ plain ratios and E.
    fn sweep(ratios: [f64; 3], e: f64) -> Arms {
        let rows: Vec<SweepRow> = [1u64, 8, 32]
            .iter()
            .zip(ratios)
            .map(|(&c, r)| SweepRow {
                spec_output_tokens_per_s: Some(100.0 * r),
                base_output_tokens_per_s: Some(100.0),
                ..SweepRow::at(Level::Concurrency(c))
            })
            .collect();
        let table = PairTable::new(rows, Some(Prediction::new(e, 3, None, COSTS)));
        let arm = ArmSweep {
            k: Some(3),
            acceptance_length: Some(e),
            step_cost: Vec::new(),
            name: "spec".into(),
            adaptive: false,
            drafts: None,
            per_position_acceptance_rates: Vec::new(),
            table,
            latency: Vec::new(),
            engine: Vec::new(),
            by_category: Vec::new(),
            saturation: Default::default(),
            calibrated: None,
            sustained_within_slo: None,
        };
        Arms {
            arms: vec![arm],
            ..Arms::default()
        }
    }

    fn input(tokens: u32, arms: &Arms) -> ContextInput<'_> {
        ContextInput {
            input_tokens: tokens,
            other_prompt_tokens: 0,
            output_tokens: 128,
            folder: format!("context-{tokens}"),
            arms,
        }
    }

    #[test]
    fn the_crossing_per_context_and_per_concurrency_come_from_the_measured_ratios() {
        let short = sweep([1.5, 1.2, 0.8], 2.4);
        let long = sweep([1.3, 0.9, 0.7], 2.4);
        let sweep = ContextSweep::new(
            &[input(4096, &long), input(256, &short)],
            ContextAxis::InputTokens,
            1e-5,
            0.0,
        );
        assert_eq!(sweep.contexts[0].input_tokens, 256, "shortest first");
        let b = |i: usize| match sweep.contexts[i].arms[0].measured {
            Some(BreakEven::At(b)) => b,
            other => panic!("{other:?}"),
        };
        // 8 + 24 × 0.2 ÷ 0.4 = 20, and 1 + 7 × 0.3 ÷ 0.4 = 6.25.
        assert!(
            (b(0) - 20.0).abs() < 1e-9 && (b(1) - 6.25).abs() < 1e-9,
            "{} {}",
            b(0),
            b(1)
        );
        // At concurrency 8 the ratio falls from 1.2 to 0.9 between 256 and 4096 tokens.
        let at8 = sweep.by_concurrency.iter().find(|r| r.level == 8.0).unwrap();
        let want = 256.0 + 3840.0 * 0.2 / 0.3;
        assert!(
            matches!(at8.measured, BreakEven::At(l) if (l - want).abs() < 1e-9),
            "{at8:?}"
        );
        let at1 = sweep.by_concurrency.iter().find(|r| r.level == 1.0).unwrap();
        assert_eq!(at1.measured, BreakEven::Beyond(4096.0));
        let at32 = sweep.by_concurrency.iter().find(|r| r.level == 32.0).unwrap();
        assert_eq!(at32.measured, BreakEven::Never);
        // The model's B*(L): a KV term read once per step whatever the draft width keeps the
        // long context's steps bandwidth-bound, so its crossing moves right (here past the
        // searched batches).
        let short_b = match sweep.contexts[0].arms[0].model {
            Some(BreakEven::At(b)) => b,
            other => panic!("{other:?}"),
        };
        match sweep.contexts[1].arms[0].model {
            Some(BreakEven::At(b)) => assert!(b > short_b, "{b} against {short_b}"),
            Some(BreakEven::Beyond(_)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_moved_names_the_acceptance_or_the_step_cost() {
        // Step cost E ÷ ratio at concurrency 32, the highest: 2.4 ÷ 0.8 = 3.0; 2.35 ÷ 0.7 =
        // 3.357 (+11.9 %, E −2.1 %); 1.6 ÷ 0.7 = 2.286 (−23.8 %, E −33.3 %).
        let short = sweep([1.5, 1.2, 0.8], 2.4);
        let cost_moved = sweep([1.3, 0.9, 0.7], 2.35);
        let e_moved = sweep([1.1, 0.9, 0.7], 1.6);
        let s = ContextSweep::new(
            &[input(256, &short), input(4096, &cost_moved)],
            ContextAxis::InputTokens,
            0.0,
            0.0,
        );
        let lines = s.what_moved("spec");
        assert_eq!(
            lines,
            vec!["At 4096 input tokens against 256: acceptance length -2.1 %, step cost +11.9 %: the step cost moved, not the acceptance."]
        );
        let s = ContextSweep::new(
            &[input(256, &short), input(4096, &e_moved)],
            ContextAxis::InputTokens,
            0.0,
            0.0,
        );
        assert!(s.what_moved("spec")[0].ends_with("the acceptance moved, not the step cost."));
        let text = s.render();
        assert!(text.contains("L* by concurrency"), "{text}");
        assert!(text.contains("PR #54801"), "{text}");
    }

    #[test]
    fn a_ratio_that_rises_with_context_gives_the_length_speculation_starts_paying_from() {
        let short = sweep([1.5, 0.9, 0.8], 2.4);
        let long = sweep([1.6, 1.2, 0.9], 2.4);
        let s = ContextSweep::new(
            &[input(256, &short), input(4096, &long)],
            ContextAxis::InputTokens,
            1e-5,
            0.0,
        );
        let at8 = s.by_concurrency.iter().find(|r| r.level == 8.0).unwrap();
        assert!(at8.pays_above, "{at8:?}");
        let want = 256.0 + 3840.0 * 0.1 / 0.3;
        assert!(
            matches!(at8.measured, BreakEven::At(l) if (l - want).abs() < 1e-9),
            "{at8:?}"
        );
        assert!(
            s.render()
                .contains("spec at concurrency 8: L* = 1536 tokens (speculation loses below it, pays above)"),
            "{}",
            s.render()
        );
    }

    #[test]
    fn the_step_cost_compares_the_lengths_at_one_level_and_a_rising_range_is_ordered() {
        let mut short = sweep([1.5, 0.9, 0.8], 2.4);
        let mut long = sweep([1.6, 1.2, 0.9], 2.4);
        // The long length has no ratio at concurrency 32: both compare at 8.
        long.arms[0].table.rows[2].base_output_tokens_per_s = None;
        for arms in [&mut short, &mut long] {
            for row in &mut arms.arms[0].table.rows {
                let v = row.spec_output_tokens_per_s.unwrap_or(0.0);
                row.spec_spread = Some((v * 0.95, v * 1.05));
            }
        }
        let s = ContextSweep::new(
            &[input(256, &short), input(4096, &long)],
            ContextAxis::InputTokens,
            1e-5,
            0.0,
        );
        for c in &s.contexts {
            assert_eq!(c.arms[0].step_cost_level, Some(8.0), "{c:?}");
        }
        // 2.4 ÷ 0.9 at 8 for the short length.
        assert!((s.contexts[0].arms[0].step_cost.unwrap() - 2.4 / 0.9).abs() < 1e-12);
        let at8 = s.by_concurrency.iter().find(|r| r.level == 8.0).unwrap();
        let (lo, hi) = at8.measured_interval.expect("a range from the spreads");
        assert!(lo <= hi, "{lo} {hi}");
        assert!(at8.pays_above);
        // Stopped before a length: the summary says it is partial.
        let mut partial = s.clone();
        partial.not_measured = vec![16384];
        assert!(partial
            .render()
            .contains("Partial: the sweep stopped before input lengths 16384"));
        assert_eq!(s.partial_line(), None);
    }

    #[test]
    fn a_sweep_that_stays_on_one_side_says_which() {
        let table = sweep([1.5, 1.2, 1.1], 2.4).arms[0].table.clone();
        assert_eq!(measured_break_even(&table), Some(BreakEven::Beyond(32.0)));
        let table = sweep([0.9, 0.8, 0.7], 2.4).arms[0].table.clone();
        assert_eq!(measured_break_even(&table), Some(BreakEven::Never));
    }
}
