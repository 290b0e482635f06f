//! The model calibrated on the user's own engine: the roofline's ridge T* and a sequence's
//! token rate fitted to a plain arm's throughput by concurrency, then B* predicted from a
//! measured acceptance length before any speculative sweep (docs/MODEL.md, "Calibration").
//!
//! Below the ridge a plain step costs the same whatever the batch, so throughput grows with
//! the batch; above it the step grows with the batch, so throughput stays: `T(B) = r·min(B, T*)`.

use serde::{Deserialize, Serialize};

use crate::model::speedup::{break_even_batch, Costs};

/// Candidate ridges tried per decade of batch size.
const GRID_PER_DECADE: f64 = 200.0;

/// The plain arm's curve fitted to `T(B) = r·min(B, T*)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RooflineFit {
    /// The fitted ridge, in concurrent sequences (token positions of a plain step).
    pub ridge_tokens: f64,
    /// One sequence's tokens per second below the ridge (1 ÷ a plain step's time).
    pub tokens_per_s_per_sequence: f64,
    /// Root-mean-square relative error of the fit over the points.
    pub rms_relative_error: f64,
    /// Whether the curve flattened inside the sweep: otherwise the ridge is only known to lie
    /// at or above the highest level, and the fit returns that level.
    pub ridge_within_sweep: bool,
    pub points: usize,
}

impl RooflineFit {
    /// Fit `(concurrency, output tokens/s)` points: for each candidate ridge on a log grid from
    /// half the lowest level to the highest, the rate is the geometric mean of
    /// `T ÷ min(B, T*)`; the ridge whose relative residuals are smallest wins. Two points at
    /// least, each positive.
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
        let (lo, hi) = ((b_min / 2.0).ln(), b_max.ln());
        let steps = ((hi - lo) / std::f64::consts::LN_10 * GRID_PER_DECADE).ceil().max(1.0) as usize;
        let fit_at = |ridge: f64| {
            let logs: Vec<f64> = p.iter().map(|(b, t)| t.ln() - b.min(ridge).ln()).collect();
            let ln_r = logs.iter().sum::<f64>() / logs.len() as f64;
            let sse: f64 = logs.iter().map(|l| (l - ln_r).powi(2)).sum();
            (ridge, ln_r.exp(), sse)
        };
        let (ridge, rate, sse) = (0..=steps)
            .map(|i| fit_at((lo + (hi - lo) * i as f64 / steps as f64).exp()))
            .min_by(|a, b| a.2.total_cmp(&b.2))?;
        Some(RooflineFit {
            ridge_tokens: ridge,
            tokens_per_s_per_sequence: rate,
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
            "Calibrated prediction: B* = {:.1} from plain's curve ({ridge}, {:.1} tokens/s a sequence, fit error {:.1} % over {} points) and E = {e:.2} (d = {draft_tokens:.2}, c = {draft_cost})",
            self.break_even(e, draft_tokens, draft_cost),
            self.tokens_per_s_per_sequence,
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
}
