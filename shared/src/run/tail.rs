//! Who pays in the tail: each request's acceptance length against its E2E latency and TPOT.
//! Folded one request at a time: the correlations are exact over every request (running
//! co-moments); the quartiles, the p99's composition and the scatter come from the pairs kept,
//! every one up to [`TAIL_PAIRS_KEPT`] and a uniform sample of them beyond (docs/METRICS.md).

use serde::{Deserialize, Serialize};

use crate::sample::percentile;

/// Requests whose pairs are kept exactly; beyond it, a uniform sample of this many (Vitter's
/// algorithm R with a fixed seed, so a run's sample is reproducible).
pub const TAIL_PAIRS_KEPT: usize = 1 << 16;

/// Points of the scatter written to `result.json` (evenly taken from the pairs kept).
pub const SCATTER_POINTS: usize = 1000;

/// The definition shown on hover wherever the tail attribution is.
pub const TAIL_DEFINITION: &str = "Per request: its acceptance length (tokens per verify step) against its end-to-end latency and TPOT. The correlation is Pearson's over every request with both; the slowest requests are those at or above the run's p99 E2E latency, counted by the acceptance quartile they fall in (quartile 1: the lowest acceptance).";

/// Running co-moments of two variables (Welford), for an exact Pearson correlation.
#[derive(Debug, Clone, Copy, Default)]
struct CoMoments {
    n: f64,
    mean_x: f64,
    mean_y: f64,
    m2_x: f64,
    m2_y: f64,
    c_xy: f64,
}

impl CoMoments {
    fn push(&mut self, x: f64, y: f64) {
        self.n += 1.0;
        let dx = x - self.mean_x;
        self.mean_x += dx / self.n;
        let dy = y - self.mean_y;
        self.mean_y += dy / self.n;
        self.m2_x += dx * (x - self.mean_x);
        self.m2_y += dy * (y - self.mean_y);
        self.c_xy += dx * (y - self.mean_y);
    }

    /// Pearson's r; `None` under three pairs or when either variable is constant.
    fn correlation(&self) -> Option<f64> {
        let denominator = (self.m2_x * self.m2_y).sqrt();
        (self.n >= 3.0 && denominator > 0.0).then(|| (self.c_xy / denominator).clamp(-1.0, 1.0))
    }
}

/// One request: acceptance length, E2E latency and TPOT (ms; none for a one-token answer).
pub type TailPoint = (f64, f64, Option<f64>);

/// The run's requests folded for [`TailAttribution`].
#[derive(Debug, Clone, Default)]
pub struct TailTally {
    requests: u64,
    e2el: CoMoments,
    tpot: CoMoments,
    pairs: Vec<TailPoint>,
    rng: u64,
}

impl TailTally {
    /// Fold in one successful request with per-request acceptance.
    pub fn push(&mut self, acceptance_length: f64, e2el_ms: f64, tpot_ms: Option<f64>) {
        if !(acceptance_length.is_finite() && e2el_ms.is_finite()) {
            return;
        }
        self.requests += 1;
        self.e2el.push(acceptance_length, e2el_ms);
        let tpot_ms = tpot_ms.filter(|t| t.is_finite());
        if let Some(t) = tpot_ms {
            self.tpot.push(acceptance_length, t);
        }
        let point = (acceptance_length, e2el_ms, tpot_ms);
        if self.pairs.len() < TAIL_PAIRS_KEPT {
            self.pairs.push(point);
            return;
        }
        // Algorithm R: the i-th request replaces a kept one with probability kept ÷ i.
        let slot = self.next_random() % self.requests;
        if let Some(kept) = self.pairs.get_mut(slot as usize) {
            *kept = point;
        }
    }

    /// splitmix64: a fixed-seed generator (no clock, no OS randomness in this crate).
    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The attribution, once at least four requests carried acceptance.
    pub fn attribution(&self) -> Option<TailAttribution> {
        if self.pairs.len() < 4 {
            return None;
        }
        let mut lengths: Vec<f64> = self.pairs.iter().map(|p| p.0).collect();
        lengths.sort_by(f64::total_cmp);
        let mut e2el: Vec<f64> = self.pairs.iter().map(|p| p.1).collect();
        e2el.sort_by(f64::total_cmp);
        let quartiles = [25.0, 50.0, 75.0].map(|q| percentile(&lengths, q).unwrap_or(f64::NAN));
        let p99_e2el_ms = percentile(&e2el, 99.0)?;
        let mut slowest_by_quartile = [0u64; 4];
        for p in self.pairs.iter().filter(|p| p.1 >= p99_e2el_ms) {
            slowest_by_quartile[quartile_of(p.0, &quartiles)] += 1;
        }
        let step = self.pairs.len().div_ceil(SCATTER_POINTS).max(1);
        Some(TailAttribution {
            requests: self.requests,
            sampled: self.pairs.len() as u64,
            correlation_e2el: self.e2el.correlation(),
            correlation_tpot: self.tpot.correlation(),
            quartiles,
            p99_e2el_ms,
            slowest_by_quartile,
            points: self.pairs.iter().step_by(step).copied().collect(),
        })
    }
}

/// The acceptance quartile (0: the lowest) of length `e`; a value on a bound belongs below it.
fn quartile_of(e: f64, quartiles: &[f64; 3]) -> usize {
    quartiles.iter().position(|q| e <= *q).unwrap_or(3)
}

/// Per-request acceptance against latency, and who the slowest requests are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailAttribution {
    /// Successful requests with per-request acceptance and an E2E latency.
    pub requests: u64,
    /// Pairs the quartiles and the p99 come from: every request, or a uniform sample.
    pub sampled: u64,
    /// Pearson's r of acceptance length with E2E latency and with TPOT, over every request.
    pub correlation_e2el: Option<f64>,
    pub correlation_tpot: Option<f64>,
    /// The acceptance length's 25th, 50th and 75th percentiles.
    pub quartiles: [f64; 3],
    pub p99_e2el_ms: f64,
    /// The requests at or above the p99 E2E latency, by acceptance quartile, lowest first.
    pub slowest_by_quartile: [u64; 4],
    /// `[acceptance length, E2E ms, TPOT ms]` of up to [`SCATTER_POINTS`] requests.
    pub points: Vec<TailPoint>,
}

impl TailAttribution {
    /// The one line the console and the run page print.
    pub fn sentence(&self) -> String {
        let r = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:+.2}"));
        let slowest: u64 = self.slowest_by_quartile.iter().sum();
        let sample = if self.sampled < self.requests {
            format!(" (from a uniform sample of {})", self.sampled)
        } else {
            String::new()
        };
        format!(
            "Who pays in the tail ({} requests): acceptance length and E2E latency correlate at {} (TPOT {}); of the {slowest} requests at or above the p99 E2E latency ({:.1} ms){sample}, {} are in the lowest acceptance quartile (E ≤ {:.2}), {}, {} and {} in the others",
            self.requests,
            r(self.correlation_e2el),
            r(self.correlation_tpot),
            self.p99_e2el_ms,
            self.slowest_by_quartile[0],
            self.quartiles[0],
            self.slowest_by_quartile[1],
            self.slowest_by_quartile[2],
            self.slowest_by_quartile[3],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pearson's r by the two-pass textbook formula, the reference the running one is held to.
    fn pearson(xs: &[f64], ys: &[f64]) -> f64 {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (mx, my) = (mean(xs), mean(ys));
        let cov: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
        let sx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum::<f64>().sqrt();
        let sy: f64 = ys.iter().map(|y| (y - my).powi(2)).sum::<f64>().sqrt();
        cov / (sx * sy)
    }

    #[test]
    fn the_correlation_is_pearson_s_and_the_slowest_come_from_their_quartile() {
        // 100 requests: E from 1.0 to 3.97, E2E falling with E (1000 ÷ E ms), TPOT likewise.
        let mut t = TailTally::default();
        for i in 0..100 {
            let e = 1.0 + f64::from(i) * 0.03;
            t.push(e, 1000.0 / e, Some(30.0 / e));
        }
        let a = t.attribution().unwrap();
        assert_eq!((a.requests, a.sampled), (100, 100));
        // Pearson's r of (e, 1/e) over this range, computed by hand: strongly negative.
        let (xs, ys): (Vec<f64>, Vec<f64>) = (0..100)
            .map(|i| 1.0 + f64::from(i) * 0.03)
            .map(|e| (e, 1000.0 / e))
            .unzip();
        let want = pearson(&xs, &ys);
        assert!((a.correlation_e2el.unwrap() - want).abs() < 1e-9, "{a:?} vs {want}");
        assert!(want < -0.9);
        // The p99 (numpy's linear interpolation) falls between the two slowest; only the
        // slowest is at or above it, in the lowest quartile.
        assert_eq!(a.slowest_by_quartile, [1, 0, 0, 0]);
        assert!((a.quartiles[1] - (1.0 + 49.5 * 0.03)).abs() < 1e-9);
        assert!(a.sentence().contains("correlate at -0.9"), "{}", a.sentence());
        assert!(
            a.sentence().contains("1 are in the lowest acceptance quartile"),
            "{}",
            a.sentence()
        );
        // Too few requests, or a constant variable: no figure rather than a made one.
        let mut few = TailTally::default();
        for _ in 0..3 {
            few.push(2.0, 10.0, None);
        }
        assert_eq!(few.attribution(), None);
        few.push(2.0, 10.0, None);
        assert_eq!(few.attribution().unwrap().correlation_e2el, None);
    }

    #[test]
    fn past_the_kept_pairs_a_uniform_sample_stays_and_the_correlation_stays_exact() {
        let mut t = TailTally::default();
        let n = TAIL_PAIRS_KEPT as u64 * 2;
        // Two halves: the second's requests are all slower, so a uniform sample keeps about
        // half of each; E cycles through seven values and E2E falls with it.
        let pair = |i: u64| {
            let e = 1.0 + (i % 7) as f64 * 0.3;
            let base = if i >= n / 2 { 200.0 } else { 100.0 };
            (e, base + 50.0 / e)
        };
        for i in 0..n {
            let (e, e2el) = pair(i);
            t.push(e, e2el, None);
        }
        let a = t.attribution().unwrap();
        assert_eq!((a.requests, a.sampled), (n, TAIL_PAIRS_KEPT as u64));
        // The correlation is over every request, not the sample: a two-pass Pearson of all n.
        let (xs, ys): (Vec<f64>, Vec<f64>) = (0..n).map(pair).unzip();
        let want = pearson(&xs, &ys);
        let got = a.correlation_e2el.expect("a correlation: E varies");
        assert!((got - want).abs() < 1e-9 * want.abs(), "{got} vs {want}");
        assert!(a.points.len() <= SCATTER_POINTS);
        let late = t.pairs.iter().filter(|p| p.1 > 180.0).count() as f64 / TAIL_PAIRS_KEPT as f64;
        assert!((late - 0.5).abs() < 0.02, "{late}");
        assert!(
            a.sentence().contains("from a uniform sample of 65536"),
            "{}",
            a.sentence()
        );
    }
}
