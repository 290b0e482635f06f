//! One latency's figures as `vllm bench serve` reports them: mean, median, population standard
//! deviation and the percentiles asked for, keyed by vLLM's percentile names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sample::Sample;

/// Mean, median, std and percentiles of one latency, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub mean: f64,
    pub median: f64,
    /// Population standard deviation (numpy's default, as vLLM).
    pub std: f64,
    /// Requested percentiles, keyed by their name (`99`, `99.9`).
    pub percentiles: BTreeMap<String, f64>,
}

impl LatencyStats {
    /// Statistics of `values`; `None` when there are none.
    pub fn from_values(values: Vec<f64>, percentiles: &[f64]) -> Option<LatencyStats> {
        LatencyStats::from_sample(&Sample::of(values), percentiles)
    }

    /// Statistics of a folded sample; `None` when empty.
    pub fn from_sample(sample: &Sample, percentiles: &[f64]) -> Option<LatencyStats> {
        let m = sample.moments()?;
        let mut qs = vec![50.0];
        qs.extend_from_slice(percentiles);
        let values = sample.percentiles(&qs);
        Some(LatencyStats {
            mean: m.mean,
            median: values[0],
            std: m.std,
            percentiles: percentiles
                .iter()
                .zip(&values[1..])
                .map(|(p, v)| (percentile_name(*p), *v))
                .collect(),
        })
    }
}

/// `99` → "99", `99.9` → "99.9" (vLLM's key form `p99_ttft_ms`, `p99.9_ttft_ms`).
pub fn percentile_name(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}
