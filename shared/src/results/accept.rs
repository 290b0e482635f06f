//! What `accept` writes: one category's acceptance (`accept-<category>.json`), the matrix of
//! every category with the pooled figure over them, and the category × draft-position matrix
//! (`position-matrix.json`, `position-matrix.csv`) with the heat map's colours.

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

/// Per-request acceptance folded by group (a prompt category, or the served model a request
/// named): one [`CategoryAcceptance`] row per group whose requests carried stats.
#[derive(Debug, Default)]
pub struct GroupFold {
    groups: BTreeMap<String, GroupSums>,
}

#[derive(Debug, Default)]
struct GroupSums {
    requests: u64,
    steps: u64,
    accepted: u64,
    drafted: u64,
    /// Verify steps that accepted at least position p + 1 drafts, by position p.
    at_least: BTreeMap<u32, u64>,
    /// Per-request acceptance lengths: their spread gives the interval.
    lengths: crate::sample::Sample,
}

impl GroupFold {
    /// One successful request of `group` and its per-request stats.
    pub fn push(&mut self, group: &str, spec: &crate::request::per_request::SpecRecord) {
        let s = match self.groups.get_mut(group) {
            Some(s) => s,
            None => self.groups.entry(group.to_string()).or_default(),
        };
        s.requests += 1;
        s.steps += spec.num_spec_steps;
        s.accepted += spec.num_accepted_draft_tokens;
        s.drafted += spec.num_draft_tokens;
        if let Some(e) =
            crate::figures::acceptance_length_of_counts(spec.num_accepted_draft_tokens, spec.num_spec_steps)
        {
            s.lengths.push(e);
        }
        let k = spec
            .num_spec_tokens
            .unwrap_or_else(|| spec.acceptance_histogram.keys().max().copied().unwrap_or(0));
        for pos in 0..k {
            let hits: u64 = spec.acceptance_histogram.range(pos + 1..).map(|(_, c)| c).sum();
            *s.at_least.entry(pos).or_default() += hits;
        }
    }

    /// The groups' rows (by name; groups without a verify step left out), measured in `run`.
    pub fn rows(self, run: &str) -> Vec<CategoryAcceptance> {
        self.groups
            .into_iter()
            .filter(|(_, s)| s.steps > 0)
            .map(|(category, s)| CategoryAcceptance {
                category,
                path: "per_request".into(),
                requests: s.requests,
                acceptance_length: crate::figures::acceptance_length_of_counts(s.accepted, s.steps).unwrap_or(1.0),
                acceptance_rate: if s.drafted > 0 {
                    s.accepted as f64 / s.drafted as f64 * 100.0
                } else {
                    0.0
                },
                per_position_acceptance_rates: s
                    .at_least
                    .iter()
                    .map(|(p, c)| (*p, *c as f64 / s.steps as f64))
                    .collect(),
                num_spec_steps: s.steps,
                accepted_tokens: s.accepted,
                draft_tokens: s.drafted,
                acceptance_length_ci95: ci95(s.lengths.len(), s.lengths.moments().map(|m| m.std)),
                run: run.to_string(),
            })
            .collect()
    }
}

/// The 95 % half-width of a mean of `n` values of population spread `std`: 1.96 s/√n with the
/// sample's s (n − 1); `None` below two values.
pub fn ci95(n: u64, std: Option<f64>) -> Option<f64> {
    let std = std?;
    (n >= 2 && std.is_finite()).then(|| 1.96 * std * (n as f64 / (n as f64 - 1.0)).sqrt() / (n as f64).sqrt())
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

/// The file names of the category × position matrix an accept folder holds.
pub const POSITION_MATRIX_JSON: &str = "position-matrix.json";
pub const POSITION_MATRIX_CSV: &str = "position-matrix.csv";

/// Acceptance per category and draft position, the table drafter builders publish (a row per
/// category, a column per position, the pooled row last): each cell the unconditional rate at
/// that position, accepted at position p ÷ verify steps, as vLLM's per-position counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionMatrix {
    /// Draft positions, 0-based as vLLM's `position` label.
    pub positions: Vec<u32>,
    pub rows: Vec<PositionRow>,
    /// Every category's steps together: Σ accepted at p ÷ Σ steps of the categories that draft
    /// position p.
    pub pooled: PositionRow,
}

/// One row of a [`PositionMatrix`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionRow {
    pub category: String,
    pub requests: u64,
    pub num_spec_steps: u64,
    /// One per position of the matrix; `None` where this row drafted no such position.
    pub rates: Vec<Option<f64>>,
}

/// The row name of the pooled figures.
pub const POOLED_ROW: &str = "pooled";

impl PositionMatrix {
    /// The matrix of `categories`; `None` without a category that has a position.
    pub fn of(categories: &[CategoryAcceptance]) -> Option<PositionMatrix> {
        let positions: Vec<u32> = categories
            .iter()
            .flat_map(|c| c.per_position_acceptance_rates.keys().copied())
            .collect::<std::collections::BTreeSet<u32>>()
            .into_iter()
            .collect();
        if positions.is_empty() {
            return None;
        }
        let rows: Vec<PositionRow> = categories
            .iter()
            .map(|c| PositionRow {
                category: c.category.clone(),
                requests: c.requests,
                num_spec_steps: c.num_spec_steps,
                rates: positions
                    .iter()
                    .map(|p| c.per_position_acceptance_rates.get(p).copied())
                    .collect(),
            })
            .collect();
        let pooled_at = |i: usize| {
            let (hits, steps) = rows
                .iter()
                .filter_map(|r| Some((r.rates[i]? * r.num_spec_steps as f64, r.num_spec_steps)))
                .fold((0.0, 0u64), |(h, s), (rh, rs)| (h + rh, s + rs));
            (steps > 0).then(|| hits / steps as f64)
        };
        let pooled = PositionRow {
            category: POOLED_ROW.into(),
            requests: rows.iter().map(|r| r.requests).sum(),
            num_spec_steps: rows.iter().map(|r| r.num_spec_steps).sum(),
            rates: (0..positions.len()).map(pooled_at).collect(),
        };
        Some(PositionMatrix {
            positions,
            rows,
            pooled,
        })
    }

    /// The categories' rows, then the pooled row.
    pub fn all_rows(&self) -> impl Iterator<Item = &PositionRow> {
        self.rows.iter().chain(std::iter::once(&self.pooled))
    }

    /// The matrix as CSV: `category,requests,num_spec_steps,position_0,…`, a row per category
    /// and the pooled row last; an empty cell where a row has no such position. Category names
    /// are quoted as RFC 4180 asks (they come from the user's dataset).
    pub fn csv(&self) -> String {
        let mut out = String::from("category,requests,num_spec_steps");
        for p in &self.positions {
            out.push_str(&format!(",position_{p}"));
        }
        out.push('\n');
        for row in self.all_rows() {
            out.push_str(&csv_field(&row.category));
            out.push_str(&format!(",{},{}", row.requests, row.num_spec_steps));
            for rate in &row.rates {
                out.push(',');
                if let Some(r) = rate {
                    out.push_str(&format!("{r:.6}"));
                }
            }
            out.push('\n');
        }
        out
    }
}

/// One CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A heat-map cell's colour for a rate in [0, 1]: white at 0 to a deep blue at 1 (one hue, so
/// the order reads without a legend and in grey), as `rgb(r, g, b)`.
pub fn heat_colour(rate: f64) -> String {
    let [r, g, b] = heat_rgb(rate);
    format!("rgb({r}, {g}, {b})")
}

/// A rate's cell colour as red, green and blue: white at 0 to deep blue at 1.
fn heat_rgb(rate: f64) -> [u8; 3] {
    let t = rate.clamp(0.0, 1.0);
    let mix = |from: f64, to: f64| (from + (to - from) * t).round() as u8;
    [mix(255.0, 8.0), mix(255.0, 69.0), mix(255.0, 148.0)]
}

/// Text that reads on a [`heat_colour`] cell: whichever of near-black and white contrasts more
/// with it (WCAG's relative luminance; the two tie at about 0.19).
pub fn heat_text_colour(rate: f64) -> &'static str {
    let linear = |channel: u8| {
        let c = f64::from(channel) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let [r, g, b] = heat_rgb(rate);
    let luminance = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
    if luminance < 0.19 {
        "#fff"
    } else {
        "#111"
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

    #[test]
    fn the_position_matrix_pools_by_steps_and_leaves_absent_positions_empty() {
        let row = |category: &str, steps: u64, rates: &[(u32, f64)]| CategoryAcceptance {
            category: category.into(),
            path: "per_request".into(),
            requests: 4,
            acceptance_length: 2.0,
            acceptance_rate: 50.0,
            per_position_acceptance_rates: rates.iter().copied().collect(),
            num_spec_steps: steps,
            accepted_tokens: steps,
            draft_tokens: steps * 2,
            acceptance_length_ci95: None,
            run: "all".into(),
        };
        // A k = 3 category and a k = 2 one: position 2 pools over the first only.
        let rows = [
            row("code", 100, &[(0, 0.9), (1, 0.6), (2, 0.3)]),
            row("chat, \"qa\"", 300, &[(0, 0.5), (1, 0.2)]),
        ];
        let m = PositionMatrix::of(&rows).unwrap();
        assert_eq!(m.positions, [0, 1, 2]);
        assert_eq!(m.rows[1].rates, [Some(0.5), Some(0.2), None]);
        let pooled: Vec<f64> = m.pooled.rates.iter().map(|r| r.unwrap()).collect();
        let want = [(90.0 + 150.0) / 400.0, (60.0 + 60.0) / 400.0, 0.3];
        for (got, want) in pooled.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{pooled:?}");
        }
        assert_eq!((m.pooled.requests, m.pooled.num_spec_steps), (8, 400));
        assert_eq!(
            m.csv(),
            "category,requests,num_spec_steps,position_0,position_1,position_2\n\
             code,4,100,0.900000,0.600000,0.300000\n\
             \"chat, \"\"qa\"\"\",4,300,0.500000,0.200000,\n\
             pooled,8,400,0.600000,0.300000,0.300000\n"
        );
        assert_eq!(PositionMatrix::of(&[row("none", 0, &[])]), None);
        assert_eq!(heat_colour(0.0), "rgb(255, 255, 255)");
        assert_eq!(heat_colour(1.0), "rgb(8, 69, 148)");
        assert_eq!(heat_colour(7.0), heat_colour(1.0));
        assert_eq!((heat_text_colour(0.2), heat_text_colour(0.9)), ("#111", "#fff"));
        // Just past the middle the cell is still light: dark text reads better there.
        assert_eq!(heat_text_colour(0.55), "#111");
    }
}
