//! Engine gauges averaged: over the label sets of one scrape, and over a window's scrapes.

use std::collections::BTreeMap;

/// A running mean of a gauge's finite values.
#[derive(Default)]
pub(crate) struct GaugeMean {
    sum: f64,
    n: usize,
}

impl GaugeMean {
    pub(crate) fn push(&mut self, v: f64) {
        if v.is_finite() {
            self.sum += v;
            self.n += 1;
        }
    }
    pub(crate) fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// Engine gauges averaged over a window's scrapes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GaugeMeans {
    /// Mean of each gauge over the scrapes that had it, by metric name.
    pub means: BTreeMap<String, f64>,
    /// Scrapes averaged.
    pub scrapes: usize,
}

impl GaugeMeans {
    /// The mean of each gauge over the given scrapes.
    pub fn over<'a>(scrapes: impl IntoIterator<Item = &'a BTreeMap<String, f64>>) -> GaugeMeans {
        let mut sums: BTreeMap<String, GaugeMean> = BTreeMap::new();
        let mut n = 0;
        for gauges in scrapes {
            n += 1;
            for (name, v) in gauges {
                sums.entry(name.clone()).or_default().push(*v);
            }
        }
        GaugeMeans {
            means: sums
                .iter()
                .filter_map(|(k, g)| g.mean().map(|m| (k.clone(), m)))
                .collect(),
            scrapes: n,
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<f64> {
        self.means.get(name).copied()
    }

    pub(crate) fn described(&self, name: &str) -> String {
        let n = self.scrapes;
        format!(
            "mean of the gauge {name} over {n} scrape{} in the window (the engine's recent iterations, not a count over the window)",
            if n == 1 { "" } else { "s" }
        )
    }
}
