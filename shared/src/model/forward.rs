//! `vllm bench forward` as a step-cost source (docs/FORMATS.md, "vllm bench forward"): its
//! `--output-json` cases (each a shape of requests — query length, KV length, draft tokens — and
//! the median time of one forward pass at that shape), with the drafter and without it
//! (`--exclude-drafter`), fitted to the linear step-cost model of `context`: the target's pass
//! from the cases without the drafter, the drafter's from what the cases with it add.

use serde::Deserialize;

use crate::error::Error;
use crate::model::context::{LinearForward, LinearStepCosts};

/// One request of a case's shape.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct ForwardRequest {
    pub query_len: u64,
    pub kv_len: u64,
    #[serde(default)]
    pub num_draft_tokens: u64,
}

/// One case of `vllm bench forward --output-json`: its name, its requests and the median time
/// of a forward pass in microseconds (the per-rank detail is not read).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ForwardCase {
    pub case: String,
    pub requests: Vec<ForwardRequest>,
    pub median_us: f64,
}

impl ForwardCase {
    /// Tokens the pass processes (Σ query lengths).
    fn batched(&self) -> f64 {
        self.requests.iter().map(|r| r.query_len as f64).sum()
    }

    /// Tokens of context the pass reads (Σ KV lengths).
    fn kv(&self) -> f64 {
        self.requests.iter().map(|r| r.kv_len as f64).sum()
    }

    /// Tokens the drafter proposes for one request and the one it starts from (k + 1), the
    /// largest of the case's requests.
    fn spec_tokens(&self) -> f64 {
        self.requests.iter().map(|r| r.num_draft_tokens).max().unwrap_or(0) as f64 + 1.0
    }
}

/// The cases of an `--output-json` file (its text).
pub fn read_cases(text: &str) -> Result<Vec<ForwardCase>, Error> {
    let cases: Vec<ForwardCase> = serde_json::from_str(text)
        .map_err(|e| Error::ModelInput(format!("not a vllm bench forward --output-json file: {e}")))?;
    if let Some(bad) = cases
        .iter()
        .find(|c| c.requests.is_empty() || !(c.median_us.is_finite() && c.median_us > 0.0))
    {
        return Err(Error::ModelInput(format!(
            "case {:?} has no requests or no positive median_us",
            bad.case
        )));
    }
    Ok(cases)
}

/// The linear step costs the two files give: the target's pass fitted to `target_only` (run with
/// `--exclude-drafter`) as fixed + per batched token + per KV token; the drafter's fitted to what
/// each case of `with_drafter` takes beyond that target pass, as fixed + per spec token (k + 1) +
/// per KV token. `vllm bench forward` times neither sampling nor the CPU's step overhead, so
/// the overhead is 0.
pub fn fit(with_drafter: &[ForwardCase], target_only: &[ForwardCase]) -> Result<LinearStepCosts, Error> {
    let target_rows: Vec<([f64; 3], f64)> = target_only
        .iter()
        .map(|c| ([1.0, c.batched(), c.kv()], c.median_us * 1e-6))
        .collect();
    let [fixed_s, per_batched_token_s, per_kv_token_s] = least_squares(&target_rows).ok_or_else(|| {
        Error::ModelInput(
            "the target-only cases (--exclude-drafter) need three shapes at least, varying the batch and the KV length"
                .into(),
        )
    })?;
    let target = LinearForward {
        fixed_s,
        per_batched_token_s,
        per_kv_token_s,
    };
    let draft_rows: Vec<([f64; 3], f64)> = with_drafter
        .iter()
        .map(|c| {
            let draft_s = c.median_us * 1e-6 - target.seconds(c.batched(), c.kv());
            ([1.0, c.spec_tokens(), c.kv()], draft_s)
        })
        .collect();
    let [fixed_s, per_batched_token_s, per_kv_token_s] = least_squares(&draft_rows).ok_or_else(|| {
        Error::ModelInput(
            "the cases with the drafter need three shapes at least, varying the draft tokens and the KV length".into(),
        )
    })?;
    Ok(LinearStepCosts {
        target,
        draft: LinearForward {
            fixed_s,
            per_batched_token_s,
            per_kv_token_s,
        },
        overhead_s: 0.0,
    })
}

/// Ordinary least squares of `y ≈ a·x` over three coefficients (normal equations, Gaussian
/// elimination with partial pivoting); `None` when the rows do not determine them.
fn least_squares(rows: &[([f64; 3], f64)]) -> Option<[f64; 3]> {
    let mut m = [[0.0; 4]; 3];
    for (x, y) in rows {
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += x[i] * x[j];
            }
            m[i][3] += x[i] * y;
        }
    }
    let scale = (0..3).map(|i| m[i][i].abs()).fold(0.0, f64::max);
    for col in 0..3 {
        let pivot = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() <= 1e-12 * scale.max(f64::MIN_POSITIVE) {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col];
        for (row, r) in m.iter_mut().enumerate() {
            if row != col {
                let f = r[col] / pivot_row[col];
                for (x, p) in r.iter_mut().zip(pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    Some([m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::context::{BreakEven, StepCosts};

    const WITH_DRAFTER: &str = include_str!("../../../tests/fixtures/written_vllm_bench_forward_0.34_drafter.json");
    const TARGET_ONLY: &str =
        include_str!("../../../tests/fixtures/written_vllm_bench_forward_0.34_exclude_drafter.json");

    /// A fixture's JSON without its `//` source lines.
    fn fixture(text: &str) -> String {
        text.lines()
            .filter(|l| !l.starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The written fixture's times are a known linear model (target 6,000 µs + 20 µs a batched
    /// token + 0.04 µs a KV token; drafter 2,000 µs + 1 µs a spec token + 0.002 µs a KV token):
    /// the fit recovers it, and B* per context follows by hand.
    #[test]
    fn the_forward_cases_give_the_step_costs_and_the_break_even_by_context() {
        let with = read_cases(&fixture(WITH_DRAFTER)).unwrap();
        let without = read_cases(&fixture(TARGET_ONLY)).unwrap();
        let costs = fit(&with, &without).unwrap();
        let close = |got: f64, want: f64| assert!((got - want).abs() <= 1e-9 * want.abs().max(1e-6), "{got} vs {want}");
        close(costs.target.fixed_s, 6.0e-3);
        close(costs.target.per_batched_token_s, 20e-6);
        close(costs.target.per_kv_token_s, 0.04e-6);
        close(costs.draft.fixed_s, 2.0e-3);
        close(costs.draft.per_batched_token_s, 1e-6);
        close(costs.draft.per_kv_token_s, 0.002e-6);
        // At L = 1000 and k = 3 (µs): plain = 6000 + 20B + 40B, spec = 6000 + 80B + 40B + 2004 + 2B.
        // E = 1.8 breaks even where 1.8·(6000 + 60B) = 8004 + 122B: B* = 2796 ÷ 14 = 199.71.
        // At L = 4000 the needed E tends to 248 ÷ 180 = 1.38 < 1.8: it pays at every batch.
        let model = StepCosts::Linear(costs);
        let BreakEven::At(b) = model.break_even_batch(1.8, 1000.0, 3.0) else {
            panic!("{:?}", model.break_even_batch(1.8, 1000.0, 3.0))
        };
        assert!((b - 2796.0 / 14.0).abs() < 1e-6, "{b}");
        assert!(matches!(model.break_even_batch(1.8, 4000.0, 3.0), BreakEven::Beyond(_)));
    }

    #[test]
    fn too_few_shapes_or_a_bad_file_are_named() {
        let without = read_cases(&fixture(TARGET_ONLY)).unwrap();
        let err = fit(&without[..1], &without[..2]).unwrap_err().to_string();
        assert!(err.contains("three shapes at least"), "{err}");
        assert!(read_cases("{}")
            .unwrap_err()
            .to_string()
            .contains("not a vllm bench forward"));
        let empty = r#"[{"case": "x", "requests": [], "median_us": 5.0}]"#;
        assert!(read_cases(empty).unwrap_err().to_string().contains("case \"x\""));
    }
}
