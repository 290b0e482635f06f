//! One latency's figures as `vllm bench serve` reports them: mean, median, population standard
//! deviation and the percentiles asked for, keyed by vLLM's percentile names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

    /// Write the figures into a result's keys in `vllm bench serve`'s shape: `mean_{name}`,
    /// `median_{name}`, `std_{name}` and `p<N>_{name}`, where `name` carries the unit
    /// (`ttft_ms`, `tokens_per_chunk`).
    pub fn write_keys(&self, name: &str, keys: &mut BTreeMap<String, Value>) {
        for (stat, v) in [("mean", self.mean), ("median", self.median), ("std", self.std)] {
            keys.insert(format!("{stat}_{name}"), v.into());
        }
        for (p, v) in &self.percentiles {
            keys.insert(format!("p{p}_{name}"), (*v).into());
        }
    }

    /// The figures [`LatencyStats::write_keys`] wrote under `name`; `None` without a mean (a
    /// missing median reads as the mean, a missing std as 0).
    pub fn read_keys(name: &str, keys: &BTreeMap<String, Value>) -> Option<LatencyStats> {
        let number = |stat: &str| keys.get(&format!("{stat}_{name}")).and_then(Value::as_f64);
        let mean = number("mean")?;
        Some(LatencyStats {
            mean,
            median: number("median").unwrap_or(mean),
            std: number("std").unwrap_or(0.0),
            percentiles: percentiles_under(name, keys),
        })
    }
}

/// The percentiles written under `p<N>_{name}` keys, keyed by their name (`99`, `99.9`).
pub fn percentiles_under(name: &str, keys: &BTreeMap<String, Value>) -> BTreeMap<String, f64> {
    let suffix = format!("_{name}");
    keys.iter()
        .filter_map(|(k, v)| Some((k.strip_prefix('p')?.strip_suffix(&suffix)?, v.as_f64()?)))
        .filter(|(p, _)| p.parse::<f64>().is_ok())
        .map(|(p, v)| (p.to_string(), v))
        .collect()
}

/// `99` → "99", `99.9` → "99.9" (vLLM's key form `p99_ttft_ms`, `p99.9_ttft_ms`).
pub fn percentile_name(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}
