//! `speclens read DIR`: tabulate every result file in a folder — ours and `vllm bench serve`'s
//! alike — with acceptance as the files report it (never recomputed from token counts), and
//! the sweep crossing when both arms are there.

use std::path::{Path, PathBuf};

use comfy_table::{presets, CellAlignment, Table};
use speclens_shared::model::Costs;
use speclens_shared::results::RunResult;
use speclens_shared::sweep::{Arm, SweepTable};

use crate::error::CollectorError;
use crate::history::read_result;

/// Result files in `dir`: `*.json` holding `vllm bench serve` keys, and `*/result.json`.
pub fn result_files(dir: &Path) -> Result<Vec<(String, RunResult)>, CollectorError> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| CollectorError::Output(format!("cannot read {}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let inner = path.join("result.json");
            if inner.is_file() {
                paths.push(inner);
            }
        } else if path.extension().is_some_and(|e| e == "json") {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths
        .into_iter()
        .filter_map(|path| {
            let result = read_result(&path)?;
            Some((path.strip_prefix(dir).unwrap_or(&path).display().to_string(), result))
        })
        .collect())
}

fn num(v: Option<impl Into<f64>>, decimals: usize) -> String {
    v.map_or_else(|| "—".into(), |x| format!("{:.decimals$}", x.into()))
}

fn count(v: Option<u64>) -> String {
    v.map_or_else(|| "—".into(), |x| x.to_string())
}

/// The sweep table of the `spec-c<N>.json` / `base-c<N>.json` among `files`, when both arms
/// are there.
pub fn sweep_of(files: &[(String, RunResult)], costs: Costs) -> Option<SweepTable> {
    let points: Vec<(Arm, u64, &RunResult)> = files
        .iter()
        .filter_map(|(name, r)| Arm::parse_point_name(name).map(|(arm, c)| (arm, c, r)))
        .collect();
    let has = |arm: Arm| points.iter().any(|p| p.0 == arm);
    (has(Arm::Spec) && has(Arm::Base)).then(|| SweepTable::from_points(&points, costs))
}

/// The table of result files.
pub fn render(files: &[(String, RunResult)]) -> String {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "file",
        "completed",
        "failed",
        "req/s",
        "out tok/s",
        "mean TTFT ms",
        "mean ITL ms",
        "accept rate %",
        "accept length",
    ]);
    for (name, v) in files {
        table.add_row(vec![
            name.clone(),
            count(v.completed),
            count(v.failed),
            num(v.request_throughput, 2),
            num(v.output_throughput, 1),
            num(v.mean_ttft_ms, 2),
            num(v.mean_itl_ms, 2),
            num(v.spec_decode_acceptance_rate, 2),
            num(v.spec_decode_acceptance_length, 2),
        ]);
    }
    for i in 1..9 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("{table}\n")
}

/// `speclens read DIR`.
pub fn run(dir: &Path) -> Result<(), CollectorError> {
    let files = result_files(dir)?;
    if files.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} holds no result files (JSON with `completed` and `output_throughput`)",
            dir.display()
        )));
    }
    let mut out = render(&files);
    if let Some(table) = sweep_of(&files, Costs::H100_FREE_DRAFTS) {
        out.push('\n');
        out.push_str(&table.render());
    }
    crate::console::print(&out)
}
