//! The model calibrated on the user's own engine: the roofline's ridge T* and a sequence's
//! token rate fitted to a plain arm's throughput by concurrency, then B* predicted from a
//! measured acceptance length before any speculative sweep (docs/MODEL.md, "Calibration"), and
//! the rule for when a sweep shows that prediction at all.
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
            "Calibrated prediction (before the sweep): B* = {:.1} from plain's curve fitted to the roofline with a per-token overhead ({ridge}, {:.1} tokens/s a sequence, {:.3} ms a token of each sequence in the batch, fit error {:.1} % over {} points) and E = {e:.2} (d = {draft_tokens:.2}, c = {draft_cost})",
            self.break_even(e, draft_tokens, draft_cost),
            self.tokens_per_s_per_sequence,
            self.per_token_overhead_s * 1e3,
            self.rms_relative_error * 100.0,
            self.points
        )
    }
}

/// Requests the calibration's acceptance length is pooled over, from the arm's lowest level up
/// (a level of a few requests gives a noisy E).
pub const CALIBRATION_MIN_REQUESTS: u64 = 50;

/// The model calibrated on plain's curve, fed with an arm's low-load acceptance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibratedPrediction {
    pub fit: RooflineFit,
    /// The arm's acceptance length and draft tokens per draft, pooled over its levels from
    /// `from_level` (when more than one) to `at_level`.
    pub acceptance_length: f64,
    pub draft_tokens: f64,
    pub at_level: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_level: Option<f64>,
    pub draft_cost: f64,
    pub break_even_batch: f64,
    /// Requests the acceptance length was pooled over (0 in files written before it).
    #[serde(default)]
    pub requests: u64,
}

/// When a calibrated B* is shown at all, the rule every page and the console apply: fewer
/// plain levels than this leave the fit's three parameters (step, overhead, ridge) free.
pub const CALIBRATION_MIN_PLAIN_LEVELS: usize = 3;

/// The largest root-mean-square relative error of plain's fitted curve a shown calibrated B*
/// may rest on.
pub const CALIBRATION_MAX_FIT_ERROR: f64 = 0.05;

/// The rule, as the console and the pages state it.
pub const CALIBRATION_RULE: &str = "a calibrated B* is shown when plain's curve has 3 or more levels with its fitted ridge between two of them, fits within 5 % RMS, and the acceptance comes from 50 or more requests";

impl CalibratedPrediction {
    /// Why this prediction fails [`CALIBRATION_RULE`], or `None` when it passes.
    pub fn withheld_because(&self) -> Option<String> {
        let fit = &self.fit;
        if fit.points < CALIBRATION_MIN_PLAIN_LEVELS {
            Some(format!("plain has {} levels", fit.points))
        } else if !fit.ridge_within_sweep {
            Some("plain's throughput never flattened inside the sweep, so its ridge is not measured".to_string())
        } else if fit.rms_relative_error > CALIBRATION_MAX_FIT_ERROR {
            Some(format!("the fit is off by {:.1} % RMS", fit.rms_relative_error * 100.0))
        } else if self.requests < CALIBRATION_MIN_REQUESTS {
            Some(format!("the acceptance comes from {} requests", self.requests))
        } else {
            None
        }
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
            .starts_with("Calibrated prediction (before the sweep): B* = 6."));
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

    /// The display rule: the demo's shape (7 plain levels, ridge inside, E from 68 requests) is
    /// shown; two plain levels (an exact fit whatever the ridge), a curve that never flattened,
    /// a poor fit or an E from 4 requests are withheld, each with its reason.
    #[test]
    fn a_calibrated_b_star_is_shown_only_when_its_inputs_carry_it() {
        let t = |b: f64| b / (6.0e-3 * (b / 74.0).max(1.0) + 2.7e-5 * b);
        let levels = [1.0, 16.0, 32.0, 48.0, 64.0, 80.0, 96.0];
        let points: Vec<(f64, f64)> = levels.iter().map(|&b| (b, t(b))).collect();
        let of = |fit: RooflineFit, requests: u64| CalibratedPrediction {
            break_even_batch: fit.break_even(2.9, 3.0, 0.0),
            fit,
            acceptance_length: 2.9,
            draft_tokens: 3.0,
            at_level: 16.0,
            from_level: Some(1.0),
            draft_cost: 0.0,
            requests,
        };
        let good = RooflineFit::of(&points).unwrap();
        assert_eq!(of(good, 68).withheld_because(), None);
        let two = RooflineFit::of(&points[..2]).unwrap();
        assert_eq!(of(two, 68).withheld_because().unwrap(), "plain has 2 levels");
        let rising = RooflineFit::of(&points[..3]).unwrap();
        assert!(of(rising, 68).withheld_because().unwrap().contains("never flattened"));
        let poor = RooflineFit {
            rms_relative_error: 0.08,
            ..good
        };
        assert_eq!(of(poor, 68).withheld_because().unwrap(), "the fit is off by 8.0 % RMS");
        assert_eq!(
            of(good, 4).withheld_because().unwrap(),
            "the acceptance comes from 4 requests"
        );
    }
}
