//! The model calibrated on the user's own engine: the roofline's ridge T* and a sequence's
//! token rate fitted to a plain arm's throughput by concurrency, then B* predicted from a
//! measured acceptance length before any speculative sweep (docs/MODEL.md, "Calibration").
//!
//! Below the ridge a plain step costs the same whatever the batch, so throughput grows with
//! the batch; above it the step grows with the batch, so throughput stays. A real server also
//! spends some time per token of every sequence in the batch (sampling, detokenising, streaming),
//! which bends the curve before its ridge; so a plain step is fitted as
//! `t(B) = s·max(1, B/T*) + o·B` and the throughput as `T(B) = B ÷ t(B)`. That overhead is paid
//! per emitted token, by a speculative step as by a plain one, so it cancels in B*: only the
//! ridge and the acceptance set it.

use serde::{Deserialize, Serialize};

use crate::model::speedup::{break_even_batch, Costs};

/// Candidate ridges tried per decade of batch size.
const GRID_PER_DECADE: f64 = 200.0;

/// How far above the highest level the ridge is looked for (a curve still rising there bounds
/// it from below only, and the fit says so).
const RIDGE_SEARCH_ABOVE: f64 = 4.0;

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// `(ridge, s, o, squared relative residuals)` at one candidate ridge: the step time
/// `y = B ÷ T` fitted as `s·max(1, B/T*) + o·B` by least squares on `(fit − y) ÷ y`.
fn fit_at(points: &[(f64, f64)], ridge: f64) -> (f64, f64, f64, f64) {
    let rows: Vec<(f64, f64)> = points
        .iter()
        .map(|&(b, t)| {
            let y = b / t;
            ((b / ridge).max(1.0) / y, b / y)
        })
        .collect();
    let (a11, a12, a22) = rows.iter().fold((0.0, 0.0, 0.0), |(x, y, z), r| {
        (x + r.0 * r.0, y + r.0 * r.1, z + r.1 * r.1)
    });
    let (b1, b2) = rows.iter().fold((0.0, 0.0), |(x, y), r| (x + r.0, y + r.1));
    let det = a11 * a22 - a12 * a12;
    let (mut s, mut o) = (b1 / a11, 0.0);
    if det > 1e-12 * a11 * a22 {
        let (s2, o2) = ((b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det);
        if o2 >= 0.0 && s2 > 0.0 {
            (s, o) = (s2, o2);
        }
    }
    let sse = rows.iter().map(|r| (s * r.0 + o * r.1 - 1.0).powi(2)).sum();
    (ridge, s, o, sse)
}

/// The plain arm's curve fitted to `T(B) = B ÷ (s·max(1, B/T*) + o·B)` (`r = 1/s`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RooflineFit {
    /// The fitted ridge, in concurrent sequences (token positions of a plain step).
    pub ridge_tokens: f64,
    /// One sequence's tokens per second below the ridge (1 ÷ a plain step's time).
    pub tokens_per_s_per_sequence: f64,
    /// The fitted time per token of each sequence in the batch, beyond the roofline's step
    /// (seconds): 0 for a curve the roofline alone fits, and in files written before it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub per_token_overhead_s: f64,
    /// Root-mean-square relative error of the fit over the points.
    pub rms_relative_error: f64,
    /// Whether the curve flattened inside the sweep: otherwise the ridge is only known to lie
    /// at or above the highest level, and the fit returns that level.
    pub ridge_within_sweep: bool,
    pub points: usize,
}

impl RooflineFit {
    /// Fit `(concurrency, output tokens/s)` points: for each candidate ridge on a log grid from
    /// half the lowest level to four times the highest, `s` and `o` by least squares on the
    /// relative error of the step time `B ÷ T` (`o` held at 0 when it would go negative); the
    /// ridge whose residuals are smallest wins. Two points at least, each positive.
    pub fn of(points: &[(f64, f64)]) -> Option<RooflineFit> {
        let p: Vec<(f64, f64)> = points
            .iter()
            .copied()
            .filter(|(b, t)| *b > 0.0 && *t > 0.0 && b.is_finite() && t.is_finite())
            .collect();
        if p.len() < 2 {
            return None;
        }
        let b_min = p.iter().map(|q| q.0).fold(f64::INFINITY, f64::min);
        let b_max = p.iter().map(|q| q.0).fold(0.0, f64::max);
        let (lo, hi) = ((b_min / 2.0).ln(), (b_max * RIDGE_SEARCH_ABOVE).ln());
        let steps = ((hi - lo) / std::f64::consts::LN_10 * GRID_PER_DECADE).ceil().max(1.0) as usize;
        let (ridge, step_s, overhead_s, sse) = (0..=steps)
            .map(|i| fit_at(&p, (lo + (hi - lo) * i as f64 / steps as f64).exp()))
            .min_by(|a, b| a.3.total_cmp(&b.3))?;
        Some(RooflineFit {
            ridge_tokens: ridge.min(b_max),
            tokens_per_s_per_sequence: 1.0 / step_s,
            per_token_overhead_s: overhead_s,
            rms_relative_error: (sse / p.len() as f64).sqrt(),
            ridge_within_sweep: ridge < b_max * 0.999,
            points: p.len(),
        })
    }

    /// B* from a measured acceptance length `e`, draft tokens per draft `d` and draft cost `c`
    /// on the fitted ridge.
    pub fn break_even(&self, e: f64, draft_tokens: f64, draft_cost: f64) -> f64 {
        break_even_batch(
            e,
            draft_tokens,
            Costs {
                draft_cost,
                ridge_tokens: self.ridge_tokens,
            },
        )
    }

    /// One line: the fit and what it predicts.
    pub fn sentence(&self, e: f64, draft_tokens: f64, draft_cost: f64) -> String {
        let ridge = if self.ridge_within_sweep {
            format!("ridge T* = {:.1}", self.ridge_tokens)
        } else {
            format!(
                "ridge T* ≥ {:.1} (plain never flattened inside the sweep, so B* is a lower bound)",
                self.ridge_tokens
            )
        };
        format!(
            "Calibrated prediction: B* = {:.1} from plain's curve fitted to the roofline with a per-token overhead ({ridge}, {:.1} tokens/s a sequence, {:.3} ms a token of each sequence in the batch, fit error {:.1} % over {} points) and E = {e:.2} (d = {draft_tokens:.2}, c = {draft_cost})",
            self.break_even(e, draft_tokens, draft_cost),
            self.tokens_per_s_per_sequence,
            self.per_token_overhead_s * 1e3,
            self.rms_relative_error * 100.0,
            self.points
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roofline_s_ridge_and_rate_are_recovered_and_b_star_follows() {
        // 50 tokens/s a sequence, ridge 12: 50, 100, 200, 400, 600, 600, 600.
        let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|&b: &f64| (b, 50.0 * b.min(12.0)))
            .collect();
        let fit = RooflineFit::of(&points).unwrap();
        assert!((fit.ridge_tokens - 12.0).abs() < 0.2, "{fit:?}");
        assert!((fit.tokens_per_s_per_sequence - 50.0).abs() < 0.5, "{fit:?}");
        assert!(fit.rms_relative_error < 0.01 && fit.ridge_within_sweep);
        // B* = T*·(E − d·c) ÷ (d + 1) = 12 × (2.5 − 0.3) ÷ 4 = 6.6.
        assert!((fit.break_even(2.5, 3.0, 0.1) - 6.6).abs() < 0.15);
        assert!(fit
            .sentence(2.5, 3.0, 0.1)
            .starts_with("Calibrated prediction: B* = 6."));
        // Still rising at the top: the ridge is only bounded below, and said so.
        let rising = RooflineFit::of(&points[..3]).unwrap();
        assert!(!rising.ridge_within_sweep && rising.ridge_tokens >= 3.99, "{rising:?}");
        assert!(rising.sentence(2.5, 3.0, 0.0).contains("a lower bound"));
        assert_eq!(RooflineFit::of(&points[..1]), None);
    }

    /// A curve bent before its ridge by a per-token overhead (the shape of the demo's plain arm:
    /// 6.0 ms a step, ridge 74, 0.027 ms a token of each sequence): a plain roofline puts the
    /// ridge where the bend is; the fit with the overhead finds the ridge and the overhead.
    #[test]
    fn a_curve_bent_before_its_ridge_keeps_its_ridge() {
        let t = |b: f64| b / (6.0e-3 * (b / 74.0).max(1.0) + 2.7e-5 * b);
        let points: Vec<(f64, f64)> = [1.0, 16.0, 32.0, 48.0, 64.0, 80.0, 96.0]
            .iter()
            .map(|&b| (b, t(b)))
            .collect();
        let fit = RooflineFit::of(&points).unwrap();
        assert!((fit.ridge_tokens - 74.0).abs() < 1.0, "{fit:?}");
        assert!((fit.per_token_overhead_s - 2.7e-5).abs() < 1e-6, "{fit:?}");
        assert!(fit.rms_relative_error < 1e-3 && fit.ridge_within_sweep, "{fit:?}");
        // B* = 74 × 2.9 ÷ 4 = 53.65: the overhead, paid per token by both arms, cancels.
        assert!(
            (fit.break_even(2.9, 3.0, 0.0) - 53.65).abs() < 0.8,
            "{}",
            fit.break_even(2.9, 3.0, 0.0)
        );
    }
}
