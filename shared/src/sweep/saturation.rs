//! Where one arm's throughput stops following its load: the knee of throughput against load,
//! and the level from which it is over-saturated (latency grows without throughput), so a
//! crossing found on a saturated plain arm is not taken for a deployment answer
//! (docs/MODEL.md, "Knee and over-saturation").

use serde::{Deserialize, Serialize};

/// Over-saturated: throughput grew by less than this fraction from the level below…
pub const FLAT_THROUGHPUT: f64 = 0.05;
/// …while the median E2E latency grew by more than this fraction.
pub const GROWING_LATENCY: f64 = 0.20;

/// One arm's knee and over-saturation, by level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// The knee of throughput against load (Kneedle on the log of the level), with three levels
    /// or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<f64>,
    /// The first level whose throughput grew by under 5 % from the level below while its
    /// median E2E latency grew by over 20 %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_saturated_from: Option<f64>,
}

impl Saturation {
    /// From `(level, output tokens/s, median E2E ms)` points, in any order.
    pub fn of(points: &[(f64, f64, f64)]) -> Saturation {
        let mut p: Vec<(f64, f64, f64)> = points
            .iter()
            .copied()
            .filter(|(l, t, d)| *l > 0.0 && t.is_finite() && d.is_finite())
            .collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        let over_saturated_from = p
            .windows(2)
            .find(|w| w[1].1 < w[0].1 * (1.0 + FLAT_THROUGHPUT) && w[1].2 > w[0].2 * (1.0 + GROWING_LATENCY))
            .map(|w| w[1].0);
        Saturation {
            knee: knee(&p),
            over_saturated_from,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.knee.is_none() && self.over_saturated_from.is_none()
    }

    /// The console's phrase: "knee 8, over-saturated from 16".
    pub fn phrase(&self) -> String {
        let knee = self.knee.map_or_else(|| "no knee".to_string(), |k| format!("knee {k}"));
        let over = self.over_saturated_from.map_or_else(
            || "not over-saturated".to_string(),
            |o| format!("over-saturated from {o}"),
        );
        format!("{knee}, {over}")
    }
}

/// Kneedle (Satopää et al., 2011) on a concave rising curve: with the log of the level and the
/// throughput each scaled to [0, 1], the level where throughput stands furthest above the
/// straight line between the first and last points.
fn knee(p: &[(f64, f64, f64)]) -> Option<f64> {
    if p.len() < 3 {
        return None;
    }
    let (x0, x1) = (p[0].0.ln(), p[p.len() - 1].0.ln());
    let (y0, y1) = p.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), q| {
        (lo.min(q.1), hi.max(q.1))
    });
    if !(x1 > x0 && y1 > y0) {
        return None;
    }
    p.iter()
        .map(|q| (q.0, (q.1 - y0) / (y1 - y0) - (q.0.ln() - x0) / (x1 - x0)))
        .filter(|(_, d)| *d > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(level, _)| level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roofline_s_knee_is_its_ridge_and_queueing_is_over_saturation() {
        // A plain server on a ridge of 8 concurrent sequences: throughput grows with the batch
        // up to 8, then stays; latency stays, then grows with the batch.
        let points: Vec<(f64, f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
            .iter()
            .map(|&b: &f64| (b, b.min(8.0) * 100.0, 100.0 * (b / 8.0).max(1.0)))
            .collect();
        let s = Saturation::of(&points);
        assert_eq!(s.knee, Some(8.0));
        assert_eq!(s.over_saturated_from, Some(16.0));
        assert_eq!(s.phrase(), "knee 8, over-saturated from 16");
        // Still rising at the top: no over-saturation; two levels: no knee.
        let rising = Saturation::of(&[(1.0, 100.0, 10.0), (4.0, 390.0, 10.5), (16.0, 1500.0, 11.0)]);
        assert_eq!(rising.over_saturated_from, None);
        assert_eq!(Saturation::of(&points[..2]).knee, None);
        // Flat throughput without growing latency (a client-side limit) is not over-saturation.
        let flat = Saturation::of(&[(1.0, 100.0, 10.0), (2.0, 101.0, 10.0)]);
        assert_eq!(flat.over_saturated_from, None);
    }
}
