//! A sweep's points: one as measured (its median repeat, spread and categories' TPOT), and the
//! ones an earlier sweep left in the folder, pooled with this sweep's when they were measured
//! against the same servers and workload, with its `sweep.json`'s spreads, schedules and order.

use std::collections::BTreeMap;
use std::path::Path;

use speclens_shared::results::run_result::RunResult;
use speclens_shared::sweep::arms;
use speclens_shared::sweep::{EarlierPoint, Level, SweepFile};

use crate::error::CollectorError;

/// One point as measured: the median repeat's result and the repeats' spread of its figure.
pub(super) struct Measured {
    pub(super) arm: String,
    pub(super) level: Level,
    pub(super) result: RunResult,
    pub(super) spread: Option<(f64, f64)>,
    /// Median TPOT by prompt category (prompts with categories only).
    pub(super) category_tpot_ms: Option<BTreeMap<String, f64>>,
}

/// The median TPOT of a run's successful requests by prompt category, from its records
/// (`None` when no record has a category).
pub(super) fn category_tpot(run: &std::path::Path) -> Result<Option<BTreeMap<String, f64>>, CollectorError> {
    let records = run.join(crate::results_folder::history::RECORDS);
    if !records.is_file() {
        return Ok(None);
    }
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    crate::results_folder::history::for_each_record(&records, |r| {
        let (Some(category), Some(ttft), Some(e2el)) = (&r.category, r.ttft_ms, r.e2el_ms) else {
            return;
        };
        if r.success && !r.warmup && r.output_tokens > 1 {
            by.entry(category.clone())
                .or_default()
                .push((e2el - ttft) / (r.output_tokens - 1) as f64);
        }
    })
    .map_err(CollectorError::Output)?;
    let medians: BTreeMap<String, f64> = by
        .into_iter()
        .map(|(category, mut v)| {
            v.sort_by(f64::total_cmp);
            (category, v[(v.len() - 1) / 2])
        })
        .collect();
    Ok((!medians.is_empty()).then_some(medians))
}

/// The point files in `out` that this sweep did not measure again (of the same axis), each
/// compared with what this sweep measured: its server with this sweep's point of the same arm,
/// its workload with any of this sweep's points. Those that differ are left out unless
/// `join_stale`. A joined point keeps the repeats' spread the folder's earlier `sweep.json`
/// (`before`) measured for it. Returns the points to pool and what was found.
pub(super) fn earlier_points(
    out: &std::path::Path,
    before: Option<&SweepFile>,
    ran: &[Measured],
    join_stale: bool,
) -> Result<(Vec<Measured>, Vec<EarlierPoint>), CollectorError> {
    let axis = ran.first().map(|p| p.level.axis());
    let found = crate::commands::read::result_files(out)?;
    for (_, why) in &found.skipped {
        eprintln!("speclens sweep: skipped {why}");
    }
    let (mut pooled, mut seen) = (Vec::new(), Vec::new());
    for (name, result) in found.files {
        let Some((arm, level)) = arms::parse_point_name(&name) else {
            continue;
        };
        // Points of the other axis belong to another sweep.
        if axis.is_some_and(|a| a != level.axis()) || ran.iter().any(|m| m.arm == arm && m.level == level) {
            continue;
        }
        let mut differences = ran
            .first()
            .map_or_else(Vec::new, |m| m.result.workload_differences(&result));
        if let Some(same_arm) = ran.iter().find(|m| m.arm == arm) {
            differences.extend(same_arm.result.server_differences(&result));
        }
        let joined = differences.is_empty() || join_stale;
        seen.push(EarlierPoint {
            point: arms::point_id(&arm, level),
            sweep_started: result.sweep_started.clone(),
            differences,
            joined,
        });
        if joined {
            let category_tpot_ms = category_tpot(&out.join(arms::point_id(&arm, level))).ok().flatten();
            let spread = before.and_then(|t| earlier_spread(t, &arm, level));
            pooled.push(Measured {
                arm,
                level,
                spread,
                result,
                category_tpot_ms,
            });
        }
    }
    Ok((pooled, seen))
}

/// The folder's `sweep.json` from an earlier sweep, when there is one that reads; one that is
/// there but does not read is named, with what starts afresh without it.
pub(super) fn earlier_sweep(out: &Path) -> Option<SweepFile> {
    let path = out.join("sweep.json");
    std::fs::symlink_metadata(&path).ok()?;
    let read = crate::files::read(&path, crate::files::Kind::Result)
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()));
    read.map_err(|why| {
        eprintln!(
            "speclens sweep: the earlier {} is not used ({why}): its adaptive arms' schedules, its repeats' spreads and its arms' order start afresh; the points' own result files still join",
            path.display()
        );
    })
    .ok()
}

/// The repeats' spread an earlier sweep measured for `arm`'s point at `level` (plain's from
/// any arm's table), so a point joined from its files keeps its range on the chart.
fn earlier_spread(table: &SweepFile, arm: &str, level: Level) -> Option<(f64, f64)> {
    let row = |t: &speclens_shared::sweep::PairTable| {
        t.rows
            .iter()
            .find(|r| r.axis == level.axis() && r.level == level.value())
            .copied()
    };
    if arm == arms::BASE_ARM {
        let tables = table.arms.arms.iter().map(|a| &a.table).chain(table.plain.as_ref());
        tables.filter_map(row).find_map(|r| r.base_spread)
    } else {
        row(&table.arms.arm(arm)?.table)?.spec_spread
    }
}
