//! The speedup model of speculative decoding (docs/MODEL.md): expected tokens per step E(α, k), the
//! implied α of a measured E, speedup S(B) under a roofline, the break-even batch, the crossing
//! of a measured sweep, and the per-position extension that picks the best k.
//!
//! Everything here is arithmetic: nothing is measured, and the costs listed in
//! [`UNCHARGED_COSTS`] are not modelled.

use serde::{Deserialize, Serialize};

/// Costs the model does not charge; each moves the real crossing to smaller batches.
pub const UNCHARGED_COSTS: [&str; 4] = [
    "KV-cache slots reserved for draft tokens",
    "the sampler's sort over k+1 rows per request",
    "the proposer's own time, folded into one draft-cost fraction c",
    "CUDA-graph bucketing across the sweep's batch sizes",
];

/// The model table's standing disclaimer.
pub const NOTHING_MEASURED: &str = "Everything above is arithmetic. Nothing was measured.";

/// Draft proposers with a known cost fraction c (a draft step's cost / a target step's cost).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Proposer {
    /// Prompt-lookup n-gram: c = 0.
    Ngram,
    /// A 1B draft model for an 8B target: c = 0.165.
    Drafter1b,
    /// Any other cost fraction.
    Custom(f64),
}

impl Proposer {
    pub fn draft_cost(self) -> f64 {
        match self {
            Proposer::Ngram => 0.0,
            Proposer::Drafter1b => 0.165,
            Proposer::Custom(c) => c,
        }
    }

    /// Short name used on the command line and in URLs.
    pub fn key(self) -> &'static str {
        match self {
            Proposer::Ngram => "ngram",
            Proposer::Drafter1b => "1b-draft",
            Proposer::Custom(_) => "custom",
        }
    }
}

/// A GPU's roofline ridge in token positions (bf16 dense peak FLOP/s ÷ HBM bytes/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuPreset {
    pub key: &'static str,
    pub name: &'static str,
    pub ridge_tokens: f64,
}

/// Known ridges. H100 SXM: 989 TFLOP/s ÷ 3.35 TB/s; H200: 989 ÷ 4.8; A100 SXM: 312 ÷ 2.04.
pub const GPU_PRESETS: [GpuPreset; 3] = [
    GpuPreset {
        key: "h100",
        name: "H100 SXM (bf16)",
        ridge_tokens: 295.0,
    },
    GpuPreset {
        key: "h200",
        name: "H200 (bf16)",
        ridge_tokens: 206.0,
    },
    GpuPreset {
        key: "a100",
        name: "A100 SXM (bf16)",
        ridge_tokens: 153.0,
    },
];

/// Look up a GPU preset by key (`h100`, `h200`, `a100`).
pub fn gpu_preset(key: &str) -> Option<GpuPreset> {
    GPU_PRESETS.iter().copied().find(|g| g.key.eq_ignore_ascii_case(key))
}

/// Expected tokens per verify step, bonus included: `Σ_{i=0..k} α^i`; `k + 1` when α ≥ 1.
pub fn expected_tokens(alpha: f64, k: u32) -> f64 {
    if alpha >= 1.0 {
        return f64::from(k) + 1.0;
    }
    let alpha = alpha.max(0.0);
    (1.0 - alpha.powi(k as i32 + 1)) / (1.0 - alpha)
}

/// The α whose E(α, k) equals `e`: bisection on [0, 0.999999], 200 iterations; 0 when E ≤ 1,
/// 1 when E ≥ k + 1.
pub fn implied_alpha(e: f64, k: u32) -> f64 {
    if e <= 1.0 {
        return 0.0;
    }
    if e >= f64::from(k) + 1.0 {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0f64, 0.999_999f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if expected_tokens(mid, k) < e {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The hardware and proposer side of the model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// Draft cost fraction c.
    pub draft_cost: f64,
    /// Roofline ridge T* in token positions.
    pub ridge_tokens: f64,
}

impl Costs {
    /// H100 SXM (bf16) with a free proposer: the prediction's costs where nothing else is known.
    pub const H100_FREE_DRAFTS: Costs = Costs {
        draft_cost: 0.0,
        ridge_tokens: GPU_PRESETS[0].ridge_tokens,
    };
}

/// `S(B) = E·max(1, B/T*) / (max(1, B(d+1)/T*) + d·c·max(1, B/T*))`, where `d` is the draft
/// tokens per draft: k for a proposer that always drafts k tokens, the measured mean for one
/// that drafts fewer when it has less to go on (n-gram, suffix).
pub fn speedup(e: f64, draft_tokens: f64, costs: Costs, batch: f64) -> f64 {
    e / step_cost(draft_tokens, costs, batch)
}

/// What a speculative step costs in plain steps at batch `B`:
/// `(max(1, B(d+1)/T*) + d·c·max(1, B/T*)) ÷ max(1, B/T*)`. Speculation pays while the
/// acceptance length E exceeds it (`S = E ÷ step cost`), so it is also the E a load needs.
pub fn step_cost(draft_tokens: f64, costs: Costs, batch: f64) -> f64 {
    let (verify, draft, plain) = step_parts(draft_tokens, costs, batch);
    (verify + draft) / plain
}

/// The share of a speculative step the model charges to drafting, `d·c·max(1, B/T*)` of the
/// step's `verify + draft` (0 for a free proposer such as n-gram).
pub fn draft_share(draft_tokens: f64, costs: Costs, batch: f64) -> f64 {
    let (verify, draft, _) = step_parts(draft_tokens, costs, batch);
    draft / (verify + draft)
}

/// A speculative step's verify and draft parts and a plain step, in bandwidth-bound steps.
fn step_parts(draft_tokens: f64, costs: Costs, batch: f64) -> (f64, f64, f64) {
    let t = costs.ridge_tokens;
    let plain = (batch / t).max(1.0);
    let verify = (batch * (draft_tokens + 1.0) / t).max(1.0);
    (verify, draft_tokens * costs.draft_cost * plain, plain)
}

/// Speedup at batch 1: `E / (1 + d·c)` (`d`: draft tokens per draft, as in [`speedup`]).
pub fn speedup_batch1(e: f64, draft_tokens: f64, draft_cost: f64) -> f64 {
    e / (1.0 + draft_tokens * draft_cost)
}

/// Asymptotic speedup (large batch): `E / ((d+1) + d·c)`, always below 1.
pub fn speedup_asymptotic(e: f64, draft_tokens: f64, draft_cost: f64) -> f64 {
    e / ((draft_tokens + 1.0) + draft_tokens * draft_cost)
}

/// Break-even batch `B* = T*·(E − d·c)/(d + 1)`: beyond it speculation loses.
pub fn break_even_batch(e: f64, draft_tokens: f64, costs: Costs) -> f64 {
    costs.ridge_tokens * (e - draft_tokens * costs.draft_cost) / (draft_tokens + 1.0)
}

/// One measured sweep point: spec output tok/s ÷ base output tok/s at a concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioPoint {
    pub concurrency: f64,
    pub ratio: f64,
}

/// The interpolated concurrency where the ratio first falls through 1.0: the first pair (in
/// increasing concurrency) with `r_prev > 1.0 ≥ r`. `None`: no crossing inside the swept range.
pub fn sweep_crossing(points: &[RatioPoint]) -> Option<f64> {
    let mut sorted: Vec<RatioPoint> = points.iter().copied().filter(|p| p.ratio.is_finite()).collect();
    sorted.sort_by(|a, b| a.concurrency.total_cmp(&b.concurrency));
    sorted.windows(2).find_map(|w| {
        let (p, q) = (w[0], w[1]);
        (p.ratio > 1.0 && q.ratio <= 1.0)
            .then(|| p.concurrency + (q.concurrency - p.concurrency) * (p.ratio - 1.0) / (p.ratio - q.ratio))
    })
}

/// One row of the model table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    pub alpha: f64,
    pub k: u32,
    pub expected_tokens: f64,
    pub speedup_batch1: f64,
    pub speedup_asymptotic: f64,
    pub break_even_batch: f64,
}

impl ModelRow {
    pub fn new(alpha: f64, k: u32, costs: Costs) -> ModelRow {
        ModelRow::from_expected(alpha, expected_tokens(alpha, k), k, costs)
    }

    /// A row for a measured E (α is then the implied one), with full k-token drafts.
    pub fn from_expected(alpha: f64, e: f64, k: u32, costs: Costs) -> ModelRow {
        ModelRow::with_draft_tokens(alpha, e, k, f64::from(k), costs)
    }

    /// A row whose costs charge `draft_tokens` per draft (a measured mean below k).
    pub fn with_draft_tokens(alpha: f64, e: f64, k: u32, draft_tokens: f64, costs: Costs) -> ModelRow {
        ModelRow {
            alpha,
            k,
            expected_tokens: e,
            speedup_batch1: speedup_batch1(e, draft_tokens, costs.draft_cost),
            speedup_asymptotic: speedup_asymptotic(e, draft_tokens, costs.draft_cost),
            break_even_batch: break_even_batch(e, draft_tokens, costs),
        }
    }

    /// Whether speculation pays at all (S(1) > 1); otherwise B* has no meaning.
    pub fn pays_at_batch1(&self) -> bool {
        self.speedup_batch1 > 1.0
    }
}

/// The α × k table.
pub fn model_table(alphas: &[f64], ks: &[u32], costs: Costs) -> Vec<ModelRow> {
    alphas
        .iter()
        .flat_map(|a| ks.iter().map(move |k| ModelRow::new(*a, *k, costs)))
        .collect()
}

/// `E = 1 + Σ_{i<k} p_i` from measured unconditional per-position rates (no geometric decay
/// assumed). Uses at most `k` entries.
pub fn expected_tokens_per_position(rates: &[f64], k: u32) -> f64 {
    1.0 + rates.iter().take(k as usize).sum::<f64>()
}

/// One candidate k of the per-position extension.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KChoice {
    pub k: u32,
    pub expected_tokens: f64,
    pub speedup: f64,
}

/// For every k' ≤ `rates.len()`, E from the first k' rates and S at `batch`.
pub fn per_position_choices(rates: &[f64], costs: Costs, batch: f64) -> Vec<KChoice> {
    (1..=rates.len() as u32)
        .map(|k| {
            let e = expected_tokens_per_position(rates, k);
            KChoice {
                k,
                expected_tokens: e,
                speedup: speedup(e, f64::from(k), costs, batch),
            }
        })
        .collect()
}

/// The k' that maximises S at `batch` (the smallest on ties); `None` without rates.
pub fn best_k(rates: &[f64], costs: Costs, batch: f64) -> Option<KChoice> {
    per_position_choices(rates, costs, batch)
        .into_iter()
        .fold(None, |best: Option<KChoice>, c| match best {
            Some(b) if b.speedup >= c.speedup => Some(b),
            _ => Some(c),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: Costs = Costs {
        draft_cost: 0.0,
        ridge_tokens: 295.0,
    };

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() < tol
    }

    #[test]
    fn worked_values_alpha_04_k1() {
        let row = ModelRow::new(0.4, 1, H100);
        assert!(close(row.expected_tokens, 1.4, 1e-12));
        assert!(close(row.speedup_batch1, 1.4, 1e-12));
        assert!(close(row.speedup_asymptotic, 0.7, 1e-12));
        assert!(close(row.break_even_batch, 206.5, 1e-9));
        assert!(close(speedup(row.expected_tokens, 1.0, H100, 1.0), 1.4, 1e-12));
        assert!(close(speedup(row.expected_tokens, 1.0, H100, 1e9), 0.7, 1e-6));
    }

    #[test]
    fn worked_values_alpha_04_k3_and_measured_e() {
        let row = ModelRow::new(0.4, 3, H100);
        assert!(close(row.expected_tokens, 1.624, 1e-12));
        assert_eq!(format!("{:.2}", row.break_even_batch), "119.77");
        let alpha = implied_alpha(3.2, 3);
        assert_eq!(format!("{alpha:.4}"), "0.8527");
        assert!(close(break_even_batch(3.2, 3.0, H100), 236.0, 1e-9));
    }

    #[test]
    fn implied_alpha_edges() {
        assert_eq!(implied_alpha(0.5, 3), 0.0);
        assert_eq!(implied_alpha(1.0, 3), 0.0);
        assert_eq!(implied_alpha(4.0, 3), 1.0);
        assert_eq!(expected_tokens(1.0, 3), 4.0);
        assert_eq!(expected_tokens(0.0, 3), 1.0);
    }

    #[test]
    fn speedup_crosses_one_at_the_break_even_batch_with_draft_cost() {
        let costs = Costs {
            draft_cost: 0.165,
            ridge_tokens: 206.0,
        };
        let e = expected_tokens(0.8, 4);
        let b = break_even_batch(e, 4.0, costs);
        assert!(
            close(speedup(e, 4.0, costs, b), 1.0, 1e-9),
            "{}",
            speedup(e, 4.0, costs, b)
        );
    }

    #[test]
    fn sweep_crossing_interpolates_the_first_fall() {
        let pts = [
            (1.0, 1.8),
            (8.0, 1.4),
            (32.0, 1.1),
            (64.0, 0.9),
            (128.0, 1.2),
            (256.0, 0.7),
        ]
        .map(|(c, r)| RatioPoint {
            concurrency: c,
            ratio: r,
        });
        assert!(close(sweep_crossing(&pts).unwrap(), 32.0 + 32.0 * 0.1 / 0.2, 1e-9));
        let never = [(1.0, 1.5), (8.0, 1.2)].map(|(c, r)| RatioPoint {
            concurrency: c,
            ratio: r,
        });
        assert_eq!(sweep_crossing(&never), None);
        let exact = [(1.0, 1.5), (8.0, 1.0)].map(|(c, r)| RatioPoint {
            concurrency: c,
            ratio: r,
        });
        assert_eq!(sweep_crossing(&exact), Some(8.0));
    }

    #[test]
    fn best_k_uses_measured_positions_not_geometric_decay() {
        // Measured rates fall faster than geometric: longer k stops paying at batch 100.
        let rates = [0.8, 0.55, 0.3, 0.12, 0.05];
        let costs = Costs {
            draft_cost: 0.0,
            ridge_tokens: 295.0,
        };
        let best = best_k(&rates, costs, 100.0).unwrap();
        assert_eq!(best.k, 2, "{:?}", per_position_choices(&rates, costs, 100.0));
        assert!(close(expected_tokens_per_position(&rates, 2), 2.35, 1e-12));
        // At batch 1 every extra draft is free (c = 0), so the longest k wins.
        assert_eq!(best_k(&rates, costs, 1.0).unwrap().k, 5);
        assert_eq!(best_k(&[], costs, 1.0), None);
    }

    #[test]
    fn table_covers_alpha_by_k() {
        let t = model_table(&[0.4, 0.8], &[1, 2, 3], H100);
        assert_eq!(t.len(), 6);
        assert_eq!((t[4].alpha, t[4].k), (0.8, 2));
    }

    #[test]
    fn presets() {
        assert_eq!(gpu_preset("H100").unwrap().ridge_tokens, 295.0);
        assert_eq!(gpu_preset("h200").unwrap().ridge_tokens, 206.0);
        assert_eq!(Proposer::Drafter1b.draft_cost(), 0.165);
        assert_eq!(Proposer::Ngram.draft_cost(), 0.0);
    }

    proptest::proptest! {
        #[test]
        fn implied_alpha_inverts_expected_tokens(k in 1u32..12, frac in 0.001f64..0.999) {
            let e = 1.0 + frac * f64::from(k);
            let alpha = implied_alpha(e, k);
            proptest::prop_assert!((expected_tokens(alpha, k) - e).abs() < 1e-6, "k={} e={} alpha={}", k, e, alpha);
        }
    }
}

/// What `speclens model` computes: the table, the measured-E reading and the best k.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReport {
    pub draft_cost: f64,
    pub proposer: String,
    pub ridge_tokens: f64,
    pub gpu: String,
    pub rows: Vec<ModelRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<MeasuredReading>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_k: Option<BestK>,
    /// What a step at k = 0 on a speculative server costs beyond a plain server's step, when
    /// given (`--zero-k-tax`): charged against the best k at the batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_k_tax: Option<f64>,
    pub note: String,
    pub uncharged_costs: Vec<String>,
}

/// A measured acceptance to feed the model: E at k, and the draft tokens per draft when
/// measured (below k for proposers that draft less when their match is short).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub e: f64,
    pub k: u32,
    pub draft_tokens: Option<f64>,
}

/// How the costs' draft length was chosen, for the console: measured, or k assumed.
pub fn draft_tokens_phrase(k: u32, measured_draft_tokens: Option<f64>) -> String {
    match measured_draft_tokens {
        Some(d) => format!("{d:.2} draft tokens per draft, measured"),
        None => format!("full {k}-token drafts assumed"),
    }
}

/// The model fed with a measured acceptance length.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeasuredReading {
    pub measured_e: f64,
    pub k: u32,
    /// Draft tokens per draft the costs charge (k unless measured).
    pub draft_tokens: f64,
    pub draft_tokens_measured: bool,
    pub implied_alpha: f64,
    pub break_even_batch: f64,
    pub speedup_batch1: f64,
    pub speedup_asymptotic: f64,
}

/// The best k from measured per-position rates at one batch size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestK {
    pub batch: f64,
    pub rates: Vec<f64>,
    pub choices: Vec<KChoice>,
    pub best: KChoice,
}

impl ModelReport {
    /// Build the report; `measured` is (E, k), `rates_at` is (per-position rates, batch).
    pub fn new(
        alphas: &[f64],
        ks: &[u32],
        costs: Costs,
        proposer: &str,
        gpu: &str,
        measured: Option<Measured>,
        rates_at: Option<(&[f64], f64)>,
    ) -> ModelReport {
        let measured = measured.map(|Measured { e, k, draft_tokens }| {
            let d = draft_tokens.unwrap_or(f64::from(k));
            let row = ModelRow::with_draft_tokens(implied_alpha(e, k), e, k, d, costs);
            MeasuredReading {
                measured_e: e,
                k,
                draft_tokens: d,
                draft_tokens_measured: draft_tokens.is_some(),
                implied_alpha: row.alpha,
                break_even_batch: row.break_even_batch,
                speedup_batch1: row.speedup_batch1,
                speedup_asymptotic: row.speedup_asymptotic,
            }
        });
        let best_k = rates_at.and_then(|(rates, batch)| {
            best_k(rates, costs, batch).map(|best| BestK {
                batch,
                rates: rates.to_vec(),
                choices: per_position_choices(rates, costs, batch),
                best,
            })
        });
        ModelReport {
            draft_cost: costs.draft_cost,
            proposer: proposer.to_string(),
            ridge_tokens: costs.ridge_tokens,
            gpu: gpu.to_string(),
            rows: model_table(alphas, ks, costs),
            measured,
            best_k,
            zero_k_tax: None,
            note: NOTHING_MEASURED.to_string(),
            uncharged_costs: UNCHARGED_COSTS.iter().map(|c| c.to_string()).collect(),
        }
    }

    /// The report charging `tax` for a step at k = 0 (a fraction: 0.15 is 15 % more than a
    /// plain step), as vllm-project/vllm #51575 measured for a schedule pinned to k = 0.
    pub fn with_zero_k_tax(mut self, tax: f64) -> ModelReport {
        self.zero_k_tax = Some(tax);
        self
    }

    /// Where the best k at the batch stands against k = 0 on the same server (its tax charged)
    /// and against a plain server; `None` without rates or a tax.
    pub fn zero_k_sentence(&self) -> Option<String> {
        let (b, tax) = (self.best_k.as_ref()?, self.zero_k_tax?);
        let zero = 1.0 / (1.0 + tax);
        let (k, s) = (b.best.k, b.best.speedup);
        let verdict = if s >= 1.0 {
            format!("k = {k} beats both: speculate")
        } else if s > zero {
            format!("k = {k} beats k = 0 on this server but not a plain server: route this load to a plain server, or keep k = {k} rather than k = 0 here")
        } else {
            "no k beats k = 0 on this server, and k = 0 loses to a plain server: route this load to a plain server"
                .to_string()
        };
        Some(format!(
            "k = 0 on this server: S = {zero:.2}× (the k = 0 tax, +{:.0} % a step: a speculative server drafting nothing, vllm-project/vllm #51575); a plain server: S = 1.00×. {verdict}",
            tax * 100.0
        ))
    }

    /// The console text.
    pub fn render(&self) -> String {
        let mut out = format!(
            "Speedup model: draft cost c = {} ({}), ridge T* = {} token positions ({})\n\n",
            self.draft_cost, self.proposer, self.ridge_tokens, self.gpu
        );
        out.push_str("     α    k        E   S(B=1)     S(∞)   break-even B*\n");
        for r in &self.rows {
            let b = if r.pays_at_batch1() {
                format!("{:.1}", r.break_even_batch)
            } else {
                "never".into()
            };
            out.push_str(&format!(
                "{:>6.2} {:>4} {:>8.3} {:>7.2}× {:>7.2}× {:>15}\n",
                r.alpha, r.k, r.expected_tokens, r.speedup_batch1, r.speedup_asymptotic, b
            ));
        }
        if let Some(m) = &self.measured {
            out.push_str(&format!(
                "\nMeasured E = {} at k = {} ({}): implied α = {:.4}, predicted break-even B* = {:.1}, S(B=1) = {:.2}×, S(∞) = {:.2}×\n",
                m.measured_e,
                m.k,
                draft_tokens_phrase(m.k, m.draft_tokens_measured.then_some(m.draft_tokens)),
                m.implied_alpha,
                m.break_even_batch,
                m.speedup_batch1,
                m.speedup_asymptotic
            ));
        }
        if let Some(b) = &self.best_k {
            let rates: Vec<String> = b.rates.iter().map(|r| format!("{r}")).collect();
            out.push_str(&format!(
                "\nBest k at batch {} from measured per-position rates [{}]:\n",
                b.batch,
                rates.join(", ")
            ));
            for c in &b.choices {
                let mark = if c.k == b.best.k { "  ← best" } else { "" };
                out.push_str(&format!(
                    "  k = {:>2}: E = {:.3}, S = {:.2}×{mark}\n",
                    c.k, c.expected_tokens, c.speedup
                ));
            }
            if let Some(line) = self.zero_k_sentence() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out.push_str(&format!(
            "\n{}\nCosts the model does not charge (each moves the real crossing left):\n",
            self.note
        ));
        for c in &self.uncharged_costs {
            out.push_str(&format!("  - {c}\n"));
        }
        out
    }
}

#[cfg(test)]
mod report_tests {
    use super::*;

    /// The k = 0 tax decides between k, k = 0 on the same server and a plain server.
    #[test]
    fn the_k_zero_tax_is_charged_against_the_best_k() {
        let costs = Costs {
            draft_cost: 0.0,
            ridge_tokens: 8.0,
        };
        let at = |batch: f64, tax: f64| {
            ModelReport::new(&[0.6], &[1], costs, "ngram", "test", None, Some((&[0.5], batch)))
                .with_zero_k_tax(tax)
                .zero_k_sentence()
                .unwrap()
        };
        // k = 1 with rate 0.5: E = 1.5 and S = 1.5 ÷ max(1, 2B/8) below the ridge: 1.5 at 4,
        // 0.92 at 6.5, between k = 0 on this server (1 ÷ 1.15 = 0.87) and plain (1).
        assert!(at(4.0, 0.15).contains("k = 1 beats both"));
        let between = at(6.5, 0.15);
        assert!(
            between.contains("S = 0.87×") && between.contains("not a plain server"),
            "{between}"
        );
        assert!(at(6.5, 0.05).contains("no k beats k = 0 on this server"));
        let plain = ModelReport::new(&[0.6], &[1], costs, "ngram", "test", None, Some((&[0.5], 6.5)));
        assert_eq!(plain.zero_k_sentence(), None, "no tax given");
    }

    #[test]
    fn report_holds_the_worked_values_in_json_and_text() {
        let costs = Costs {
            draft_cost: 0.0,
            ridge_tokens: 295.0,
        };
        let r = ModelReport::new(
            &[0.4],
            &[1, 3],
            costs,
            "ngram",
            "H100 SXM (bf16)",
            Some(Measured {
                e: 3.2,
                k: 3,
                draft_tokens: None,
            }),
            Some((&[0.8, 0.55, 0.3, 0.12, 0.05], 100.0)),
        );
        let json = serde_json::to_value(&r).unwrap();
        let close = |v: &serde_json::Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-9;
        assert!(close(&json["rows"][0]["expected_tokens"], 1.4));
        assert!(close(&json["rows"][0]["speedup_batch1"], 1.4));
        assert!(close(&json["rows"][0]["speedup_asymptotic"], 0.7));
        assert!(close(&json["rows"][0]["break_even_batch"], 206.5));
        assert!(close(&json["rows"][1]["expected_tokens"], 1.624));
        assert!(close(&json["rows"][1]["break_even_batch"], 295.0 * 1.624 / 4.0));
        assert!(close(&json["measured"]["break_even_batch"], 236.0));
        assert!((json["measured"]["implied_alpha"].as_f64().unwrap() - 0.8527).abs() < 5e-5);
        assert_eq!(json["best_k"]["best"]["k"], 2);
        let text = r.render();
        assert!(
            text.contains("  0.40    1    1.400    1.40×    0.70×           206.5\n"),
            "{text}"
        );
        assert!(
            text.contains("  0.40    3    1.624    1.62×    0.41×           119.8\n"),
            "{text}"
        );
        assert!(
            text.contains("implied α = 0.8527, predicted break-even B* = 236.0"),
            "{text}"
        );
        assert!(text.contains("Everything above is arithmetic. Nothing was measured."));
        assert!(text.contains("  k =  2: E = 2.350, S = 2.31×  ← best"), "{text}");
        assert!(text.contains("at k = 3 (full 3-token drafts assumed)"), "{text}");
    }

    #[test]
    fn a_measured_draft_length_moves_the_break_even() {
        let costs = Costs {
            draft_cost: 0.0,
            ridge_tokens: 295.0,
        };
        let report = |draft_tokens| {
            let measured = Measured {
                e: 2.5,
                k: 3,
                draft_tokens,
            };
            ModelReport::new(&[0.4], &[3], costs, "ngram", "H100", Some(measured), None)
        };
        // B* = T*·E/(d+1): 295·2.5/4 with full drafts, 295·2.5/3.5 with 2.5-token drafts.
        assert!((report(None).measured.unwrap().break_even_batch - 184.375).abs() < 1e-9);
        let r = report(Some(2.5));
        let short = r.measured.unwrap();
        assert!((short.break_even_batch - 295.0 * 2.5 / 3.5).abs() < 1e-9);
        assert!(short.draft_tokens_measured);
        assert!(
            r.render().contains("at k = 3 (2.50 draft tokens per draft, measured)"),
            "{}",
            r.render()
        );
    }
}
