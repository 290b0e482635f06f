//! A distribution folded one value at a time in bounded memory: every value kept (exact
//! percentiles, as numpy computes them) up to [`EXACT_LIMIT`] values, then an HDR histogram at
//! 3 significant digits (each percentile within 0.1 % of a value at that rank). The count, sum,
//! mean, standard deviation, minimum and maximum stay exact either way (docs/METRICS.md §2.8).

use hdrhistogram::Histogram;

/// Values kept exactly before the histogram takes over: every run of up to this many values (a
/// few thousand requests' inter-token gaps) reports what numpy would; 512 KiB at most.
pub const EXACT_LIMIT: usize = 1 << 16;

/// Histogram units per value unit: values are recorded as integer millionths (nanoseconds for
/// milliseconds), so values down to 2·10⁻³ are still exact at 3 significant digits.
const SCALE: f64 = 1e6;

/// Significant decimal digits the histogram keeps.
pub const HISTOGRAM_DIGITS: u8 = 3;

/// Linear-interpolation percentile of sorted values: `idx = q/100·(n−1)`.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let idx = q / 100.0 * (n - 1) as f64;
    let lo = idx.floor() as usize;
    let hi = idx.ceil() as usize;
    let frac = idx - lo as f64;
    Some(sorted[lo] + frac * (sorted[hi] - sorted[lo]))
}

/// One metric's values, folded as they come.
#[derive(Debug, Clone)]
pub struct Sample {
    count: u64,
    /// Running moments (Welford) and extremes, exact whatever the count.
    sum: f64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    /// Every value, while there are at most [`EXACT_LIMIT`].
    exact: Vec<f64>,
    /// The values in millionths once there were more.
    histogram: Option<Histogram<u64>>,
}

impl Default for Sample {
    fn default() -> Sample {
        Sample {
            count: 0,
            sum: 0.0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            exact: Vec::new(),
            histogram: None,
        }
    }
}

/// The moments of a sample: (sum, mean, population standard deviation, min, max).
pub struct Moments {
    pub sum: f64,
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub max: f64,
}

impl Sample {
    pub fn new() -> Sample {
        Sample::default()
    }

    /// A sample of `values` (any order; non-finite ones are left out).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Sample {
        let mut s = Sample::new();
        values.into_iter().for_each(|v| s.push(v));
        s
    }

    /// Fold in one value; a non-finite one is left out.
    pub fn push(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.count += 1;
        self.sum += v;
        let delta = v - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (v - self.mean);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        match &mut self.histogram {
            Some(h) => record(h, v),
            None if self.exact.len() < EXACT_LIMIT => self.exact.push(v),
            None => {
                let mut h = Histogram::new(HISTOGRAM_DIGITS).expect("3 significant digits is a valid histogram");
                for kept in self.exact.drain(..) {
                    record(&mut h, kept);
                }
                record(&mut h, v);
                self.exact = Vec::new();
                self.histogram = Some(h);
            }
        }
    }

    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether every value is still kept (percentiles are exact).
    pub fn is_exact(&self) -> bool {
        self.histogram.is_none()
    }

    /// Sum, mean, population standard deviation, min and max; `None` when empty. While every
    /// value is kept they are computed from the sorted values, as numpy does.
    pub fn moments(&self) -> Option<Moments> {
        if self.count == 0 {
            return None;
        }
        if self.is_exact() {
            let sorted = self.sorted();
            let n = sorted.len() as f64;
            let sum: f64 = sorted.iter().sum();
            let mean = sum / n;
            let std = (sorted.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n).sqrt();
            return Some(Moments {
                sum,
                mean,
                std,
                min: sorted[0],
                max: sorted[sorted.len() - 1],
            });
        }
        Some(Moments {
            sum: self.sum,
            mean: self.mean,
            std: (self.m2 / self.count as f64).max(0.0).sqrt(),
            min: self.min,
            max: self.max,
        })
    }

    /// The `qs` percentiles (0–100) in order: linear interpolation between the kept values
    /// (numpy's default), else the histogram's value at that rank, clamped to the exact
    /// extremes. Empty when the sample is.
    pub fn percentiles(&self, qs: &[f64]) -> Vec<f64> {
        if self.count == 0 {
            return Vec::new();
        }
        match &self.histogram {
            None => {
                let sorted = self.sorted();
                qs.iter().map(|q| percentile(&sorted, *q).unwrap_or(f64::NAN)).collect()
            }
            Some(h) => qs
                .iter()
                .map(|q| {
                    let at = h.value_at_quantile((q / 100.0).clamp(0.0, 1.0)) as f64 / SCALE;
                    at.clamp(self.min, self.max)
                })
                .collect(),
        }
    }

    /// The values at these 0-based ranks of the sorted values (a rank past the last gives the
    /// largest); from the histogram, the value at that rank's quantile, clamped to the exact
    /// extremes. Empty when the sample is.
    pub fn at_ranks(&self, ranks: &[usize]) -> Vec<f64> {
        if self.count == 0 {
            return Vec::new();
        }
        match &self.histogram {
            None => {
                let sorted = self.sorted();
                ranks.iter().map(|r| sorted[(*r).min(sorted.len() - 1)]).collect()
            }
            Some(h) => ranks
                .iter()
                .map(|r| {
                    let q = ((*r as f64 + 0.5) / self.count as f64).clamp(0.0, 1.0);
                    (h.value_at_quantile(q) as f64 / SCALE).clamp(self.min, self.max)
                })
                .collect(),
        }
    }

    /// The values with how often each occurs (histogram buckets once it took over): what
    /// [`crate::run::aggregate::Bins::from_counted`] draws.
    pub fn counted(&self) -> Vec<(f64, u64)> {
        match &self.histogram {
            None => self.exact.iter().map(|v| (*v, 1)).collect(),
            Some(h) => h
                .iter_recorded()
                .map(|v| (v.value_iterated_to() as f64 / SCALE, v.count_at_value()))
                .collect(),
        }
    }

    fn sorted(&self) -> Vec<f64> {
        let mut v = self.exact.clone();
        v.sort_by(f64::total_cmp);
        v
    }
}

/// Record `v` in millionths (negative values as 0, the largest at the histogram's top).
fn record(h: &mut Histogram<u64>, v: f64) {
    let units = (v * SCALE).round().clamp(0.0, (u64::MAX >> 2) as f64) as u64;
    let _ = h.record(units);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_until_the_limit_then_within_the_stated_error() {
        let small = Sample::of([3.0, 1.0, 2.0, f64::NAN, 4.0]);
        assert!(small.is_exact());
        assert_eq!(small.len(), 4);
        assert_eq!(small.percentiles(&[0.0, 50.0, 100.0]), vec![1.0, 2.5, 4.0]);
        let m = small.moments().unwrap();
        assert_eq!((m.sum, m.mean, m.min, m.max), (10.0, 2.5, 1.0, 4.0));
        assert!((m.std - 1.25f64.sqrt()).abs() < 1e-15);

        // A skewed, latency-like sample larger than the limit: percentiles within 0.1 % of the
        // exact ones, moments exact to rounding.
        let values: Vec<f64> = (0..EXACT_LIMIT * 3)
            .map(|i| {
                let u = (i as f64 * 0.618_033_988_75).fract();
                5.0 + 200.0 * u.powi(4)
            })
            .collect();
        let big = Sample::of(values.iter().copied());
        assert!(!big.is_exact());
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let qs = [1.0, 25.0, 50.0, 90.0, 99.0, 99.9];
        for (q, got) in qs.iter().zip(big.percentiles(&qs)) {
            let want = percentile(&sorted, *q).unwrap();
            assert!((got - want).abs() <= want * 1e-3, "p{q}: {got} against {want}");
        }
        let m = big.moments().unwrap();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!((m.mean - mean).abs() < 1e-9 * mean);
        assert_eq!((m.min, m.max), (sorted[0], sorted[sorted.len() - 1]));
        let counted: u64 = big.counted().iter().map(|(_, c)| c).sum();
        assert_eq!(counted, big.len());
    }

    #[test]
    fn an_empty_sample_has_no_figures() {
        let s = Sample::new();
        assert!(s.moments().is_none() && s.percentiles(&[50.0]).is_empty() && s.counted().is_empty());
    }
}
