//! What `accept` writes: one category's acceptance (`accept-<category>.json`) and the matrix of
//! every category, with the pooled figure over them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One category of an accept matrix, as written to `accept-<category>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryAcceptance {
    pub category: String,
    /// `per_request` or `scrape`.
    pub path: String,
    pub requests: u64,
    /// Tokens per verify step, bonus included.
    pub acceptance_length: f64,
    /// Percent.
    pub acceptance_rate: f64,
    /// Unconditional rate by draft position (0-based keys, as vLLM).
    pub per_position_acceptance_rates: BTreeMap<u32, f64>,
    pub num_spec_steps: u64,
    pub accepted_tokens: u64,
    pub draft_tokens: u64,
    /// Half-width of the 95 % interval of the mean per-request acceptance length (1.96 s/√n),
    /// when at least two requests carried stats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_length_ci95: Option<f64>,
    /// The bench run this was measured in.
    pub run: String,
}

impl CategoryAcceptance {
    /// The acceptance length with its 95 % interval when it has one: `2.740 ± 0.051`.
    pub fn length_text(&self) -> String {
        match self.acceptance_length_ci95 {
            Some(h) => format!("{:.3} ± {h:.3}", self.acceptance_length),
            None => format!("{:.3}", self.acceptance_length),
        }
    }

    /// The per-position rates numbered from 0, as vLLM's `position` label: `0: 0.800, 1: 0.560`.
    pub fn positions_text(&self) -> String {
        let parts: Vec<String> = self
            .per_position_acceptance_rates
            .iter()
            .map(|(i, v)| format!("{i}: {v:.3}"))
            .collect();
        parts.join(", ")
    }
}

/// An accept folder's categories (`/api/accept/<id>`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AcceptMatrix {
    pub categories: Vec<CategoryAcceptance>,
}

impl AcceptMatrix {
    /// Every category's acceptance pooled: 1 + Σ accepted ÷ Σ verify steps, and the requests
    /// it is over; none without a step.
    pub fn pooled(categories: &[CategoryAcceptance]) -> Option<(f64, u64)> {
        let steps: u64 = categories.iter().map(|c| c.num_spec_steps).sum();
        let accepted: u64 = categories.iter().map(|c| c.accepted_tokens).sum();
        let requests = categories.iter().map(|c| c.requests).sum();
        crate::figures::acceptance_length_of_counts(accepted, steps).map(|e| (e, requests))
    }

    /// "Pooled over every category: acceptance length 2.712 (360 requests)."
    pub fn pooled_line(categories: &[CategoryAcceptance]) -> Option<String> {
        let (e, requests) = AcceptMatrix::pooled(categories)?;
        Some(format!(
            "Pooled over every category: acceptance length {e:.3} ({requests} requests)."
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accept_matrix_pools_its_categories_and_shows_intervals() {
        let row = |category: &str, steps: u64, accepted: u64, ci95: Option<f64>| CategoryAcceptance {
            category: category.into(),
            path: "per_request".into(),
            requests: 10,
            acceptance_length: 1.0 + accepted as f64 / steps as f64,
            acceptance_rate: 50.0,
            per_position_acceptance_rates: BTreeMap::from([(0, 0.8), (1, 0.5)]),
            num_spec_steps: steps,
            accepted_tokens: accepted,
            draft_tokens: steps * 2,
            acceptance_length_ci95: ci95,
            run: "all".into(),
        };
        let rows = [row("a", 100, 150, Some(0.0512)), row("b", 300, 150, None)];
        assert_eq!(AcceptMatrix::pooled(&rows), Some((1.0 + 300.0 / 400.0, 20)));
        assert_eq!(
            AcceptMatrix::pooled_line(&rows).unwrap(),
            "Pooled over every category: acceptance length 1.750 (20 requests)."
        );
        assert_eq!(rows[0].length_text(), "2.500 ± 0.051");
        assert_eq!(rows[1].length_text(), "1.500");
        assert_eq!(rows[0].positions_text(), "0: 0.800, 1: 0.500");
        assert_eq!(AcceptMatrix::pooled(&[]), None);
    }
}
