//! `speclens model`: the speedup model's table on the command line (docs/MODEL.md), optionally fed
//! with a measured E and measured per-position rates (the CLI builds the report from its flags),
//! or calibrated on a plain sweep's curve (`--calibrate`). Arithmetic only; runs anywhere.

use speclens_shared::model::context::ContextReport;
use speclens_shared::model::speedup::ModelReport;

use crate::error::CollectorError;

/// Print the report as text or JSON.
pub fn run(report: &ModelReport, json: bool) -> Result<(), CollectorError> {
    if json {
        let text = serde_json::to_string_pretty(report).map_err(|e| CollectorError::Output(e.to_string()))?;
        crate::console::print(&format!("{text}\n"))
    } else {
        crate::console::print(&report.render())
    }
}

/// `--context`: the break-even by context, as text or JSON.
pub fn run_context(report: &ContextReport, json: bool) -> Result<(), CollectorError> {
    if json {
        let text = serde_json::to_string_pretty(report).map_err(|e| CollectorError::Output(e.to_string()))?;
        crate::console::print(&format!("{text}\n"))
    } else {
        crate::console::print(&format!("\n{}", report.render()))
    }
}

/// `--calibrate SWEEP`: the roofline fitted to the plain arm of a sweep (its `sweep.json` or the
/// folder holding it) and the B* it predicts from a measured E, `d` draft tokens per draft and
/// draft cost `c`.
pub fn calibrate(sweep: &std::path::Path, e: f64, d: f64, c: f64, json: bool) -> Result<(), CollectorError> {
    let file = if sweep.is_dir() {
        sweep.join("sweep.json")
    } else {
        sweep.to_path_buf()
    };
    let bytes = crate::files::read(&file, crate::files::Kind::Result)
        .map_err(|why| CollectorError::InvalidArgument(format!("--calibrate: {}: {why}", file.display())))?;
    let table: speclens_shared::sweep::SweepFile = serde_json::from_slice(&bytes).map_err(|err| {
        CollectorError::InvalidArgument(format!("--calibrate: {} is not a sweep.json: {err}", file.display()))
    })?;
    if !table.axis.is_concurrency() {
        return Err(CollectorError::InvalidArgument(
            "--calibrate takes a concurrency sweep: a rate sweep's levels are no batch sizes".into(),
        ));
    }
    let plain: Vec<(f64, f64)> = table
        .head()
        .rows
        .iter()
        .filter_map(|r| Some((r.level, r.base_output_tokens_per_s?)))
        .collect();
    let fit = speclens_shared::model::calibrate::RooflineFit::of(&plain).ok_or_else(|| {
        CollectorError::InvalidArgument(format!(
            "--calibrate: {} has {} plain points with a throughput; the fit needs two",
            file.display(),
            plain.len()
        ))
    })?;
    if json {
        let v = serde_json::json!({"fit": fit, "measured_e": e, "draft_tokens": d, "draft_cost": c,
                                   "break_even_batch": fit.break_even(e, d, c)});
        crate::console::print(&format!("{v:#}\n"))
    } else {
        crate::console::print(&format!("{}\n", fit.sentence(e, d, c)))
    }
}
