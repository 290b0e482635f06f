//! Spec-minus-plain latency in a sweep: each arm's latency figures beside plain's at each level
//! (the median and the percentiles asked for of TTFT, TPOT, ITL and E2E latency, and the
//! per-token ITL where both servers' chunks were counted), where the median gains while the
//! tail regresses, and the console's table of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::levels::{NamedPoint, BASE_ARM};
use crate::results::run_result::RunResult;

/// One latency figure of an arm and of plain at one point, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyPair {
    pub spec_ms: f64,
    pub base_ms: f64,
}

impl LatencyPair {
    /// Spec minus plain: negative when speculation is faster.
    pub fn delta_ms(&self) -> f64 {
        self.spec_ms - self.base_ms
    }
}

/// Spec-minus-plain latency at one level, by result key (`median_ttft_ms`, `p99_itl_ms`…).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRow {
    pub level: f64,
    pub figures: BTreeMap<String, LatencyPair>,
}

/// The families the table shows, in its order: TPOT first (per-chunk ITL grows under
/// speculation while TPOT falls, so TPOT says what a user gains), then TTFT, ITL per chunk and
/// per token side by side, E2E latency.
const SHOWN: [&str; 5] = ["tpot", "ttft", "itl", "itl_per_token", "e2el"];

/// The latency keys a result holds for `family`: its median and each percentile asked for.
fn latency_keys(result: &RunResult, family: &str) -> Vec<(String, f64)> {
    let mut keys = Vec::new();
    let median = match family {
        "ttft" => result.median_ttft_ms,
        "tpot" => result.median_tpot_ms,
        "itl" => result.median_itl_ms,
        "itl_per_token" => result.chunk_figures().itl_per_token.map(|s| s.median),
        _ => result.median_e2el_ms,
    };
    if let Some(v) = median {
        keys.push((format!("median_{family}_ms"), v));
    }
    let suffix = format!("_{family}_ms");
    for (key, value) in &result.extra {
        if key.starts_with('p') && key.ends_with(&suffix) {
            if let Some(v) = value.as_f64() {
                keys.push((key.clone(), v));
            }
        }
    }
    keys
}

/// Spec-minus-plain latency rows of `arm`.
pub(super) fn latency_rows(points: &[NamedPoint<'_>], arm: &str) -> Vec<LatencyRow> {
    let mut rows: Vec<LatencyRow> = points
        .iter()
        .filter(|p| p.arm == arm)
        .filter_map(|p| {
            let base = points.iter().find(|b| b.arm == BASE_ARM && b.level == p.level)?;
            let mut figures = BTreeMap::new();
            for family in SHOWN {
                let base_keys = latency_keys(base.result, family);
                for (key, spec_ms) in latency_keys(p.result, family) {
                    if let Some((_, base_ms)) = base_keys.iter().find(|(k, _)| *k == key) {
                        figures.insert(
                            key,
                            LatencyPair {
                                spec_ms,
                                base_ms: *base_ms,
                            },
                        );
                    }
                }
            }
            (!figures.is_empty()).then_some(LatencyRow {
                level: p.level.value(),
                figures,
            })
        })
        .collect();
    rows.sort_by(|a, b| a.level.total_cmp(&b.level));
    rows
}

/// Where an arm's median TPOT improves on plain's while its p99 E2E latency regresses: the
/// slowest requests pay for the median's gain (one line per level).
pub fn tail_regressions<'a>(arms: impl Iterator<Item = (&'a str, &'a [LatencyRow])>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, rows) in arms {
        for row in rows {
            let (Some(median), Some(p99)) = (row.figures.get("median_tpot_ms"), row.figures.get("p99_e2el_ms")) else {
                continue;
            };
            if median.delta_ms() < 0.0 && p99.delta_ms() > 0.0 {
                out.push(format!(
                    "{} at {}: the median TPOT improves on plain ({:+.2} ms) while the p99 E2E latency regresses ({:+.2} ms): the slowest requests pay for the median's gain",
                    name,
                    row.level,
                    median.delta_ms(),
                    p99.delta_ms()
                ));
            }
        }
    }
    out
}

pub fn render_latency<'a>(arms: impl Iterator<Item = (&'a str, &'a [LatencyRow])> + Clone) -> String {
    let mut out = String::new();
    for line in tail_regressions(arms.clone()) {
        out.push_str(&format!("Note: {line}\n"));
    }
    for (name, rows) in arms.filter(|(_, rows)| !rows.is_empty()) {
        // By family (TPOT first: per-chunk ITL grows under speculation while TPOT falls, so
        // TPOT says what a user gains), the median before the percentiles.
        let mut keys: Vec<&String> = rows[0].figures.keys().collect();
        let rank = |k: &str| {
            let family = SHOWN
                .iter()
                .position(|f| k.ends_with(&format!("_{f}_ms")))
                .unwrap_or(SHOWN.len());
            let percentile: f64 = k
                .strip_prefix('p')
                .and_then(|r| r.split('_').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or(0.0);
            (family, (percentile * 1000.0) as u64)
        };
        keys.sort_by_key(|k| rank(k));
        out.push_str(&format!(
            "Latency, {} minus plain (ms; negative: faster; ITL is per chunk, so it grows when a step sends several tokens; itl_per_token spreads each chunk's gap over its tokens):\n",
            name
        ));
        out.push_str(&format!("{:>12}", "level"));
        for k in &keys {
            out.push_str(&format!(" {:>16}", k.trim_end_matches("_ms")));
        }
        out.push('\n');
        for row in rows {
            out.push_str(&format!("{:>12}", row.level));
            for k in &keys {
                let cell = row
                    .figures
                    .get(*k)
                    .map_or_else(|| "—".to_string(), |p| format!("{:+.2}", p.delta_ms()));
                out.push_str(&format!(" {cell:>16}"));
            }
            out.push('\n');
        }
    }
    out
}
