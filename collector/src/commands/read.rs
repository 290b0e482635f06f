//! `speclens read DIR`: tabulate every result file in a folder — ours and `vllm bench serve`'s
//! alike — with acceptance as the files report it (never recomputed from token counts), and
//! the sweep crossing when both arms are there.

use std::path::{Path, PathBuf};

use comfy_table::{presets, CellAlignment, Table};
use speclens_shared::model::speedup::Costs;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::sweep::arms::{self, NamedPoint, BASE_ARM};
use speclens_shared::sweep::{Level, SweepFile};

use crate::error::CollectorError;
use crate::results_folder::history::read_result;

/// The result files of a folder, by name relative to it, and why each file that looked like one
/// could not be read.
pub struct Found {
    pub files: Vec<(String, RunResult)>,
    /// By name: why it did not read.
    pub skipped: Vec<(String, String)>,
}

/// Result files in `dir`: `*.json` holding `vllm bench serve` keys, `*/result.json`, and the
/// records of runs killed before they saved one (`*/.records.jsonl.tmp`) or that could not
/// write it (`*/records.jsonl`).
pub fn result_files(dir: &Path) -> Result<Found, CollectorError> {
    let mut paths: Vec<PathBuf> = Vec::new();
    // `dir` itself a run killed before it saved its result: read from its records, as partial.
    let records_of = crate::results_folder::history::is_records;
    if let Some(records) = crate::results_folder::history::run_file(dir).filter(|p| records_of(p)) {
        paths.push(records);
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| CollectorError::Output(format!("cannot read {}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        // A file reached through a link out of `dir` is as good as absent.
        let within = |p: &Path| crate::results_folder::history::inside(dir, p).is_some();
        if path.is_dir() {
            // A run killed before it saved its result is read from its records, as partial.
            if let Some(inner) = crate::results_folder::history::run_file(&path).filter(|p| p.is_file() && within(p)) {
                paths.push(inner);
            }
        } else if path.extension().is_some_and(|e| e == "json") && within(&path) {
            paths.push(path);
        }
    }
    paths.sort();
    let (mut files, mut skipped) = (Vec::new(), Vec::new());
    for path in paths {
        match read_result(&path) {
            Ok(Some(result)) => files.push((path.strip_prefix(dir).unwrap_or(&path).display().to_string(), result)),
            Ok(None) => {}
            Err(why) => skipped.push((path.strip_prefix(dir).unwrap_or(&path).display().to_string(), why)),
        }
    }
    Ok(Found { files, skipped })
}

fn num(v: Option<impl Into<f64>>, decimals: usize) -> String {
    v.map_or_else(|| "—".into(), |x| format!("{:.decimals$}", x.into()))
}

fn count(v: Option<u64>) -> String {
    v.map_or_else(|| "—".into(), |x| x.to_string())
}

/// The sweep table of the `<arm>-c<N>.json` / `base-c<N>.json` (or `-r<rate>`) among `files`,
/// when a speculative arm and the plain one are there.
pub fn sweep_of(files: &[(String, RunResult)], costs: Costs) -> Option<SweepFile> {
    let named: Vec<(String, Level, &RunResult)> = files
        .iter()
        .filter_map(|(name, r)| arms::parse_point_name(name).map(|(arm, level)| (arm, level, r)))
        .collect();
    let points: Vec<NamedPoint<'_>> = named
        .iter()
        .map(|(arm, level, result)| NamedPoint {
            arm,
            level: *level,
            result,
            spread: None,
            category_tpot_ms: None,
        })
        .collect();
    let has_base = points.iter().any(|p| p.arm == BASE_ARM);
    let has_spec = points.iter().any(|p| p.arm != BASE_ARM);
    (has_base && has_spec).then(|| SweepFile::of_arms(&points, costs, None, &[], &[]))
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
    let Found { files, skipped } = result_files(dir)?;
    for (_, why) in &skipped {
        eprintln!("speclens read: skipped {why}");
    }
    for (name, result) in &files {
        if let Some(how) = &result.recovered {
            eprintln!("speclens read: {name}: {how}");
        }
    }
    if files.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} holds no result files (JSON with `completed` and `output_throughput`)",
            dir.display()
        )));
    }
    let mut out = render(&files);
    // The TTFT split of each file whose server timed its requests (vLLM 0.33).
    for (name, result) in &files {
        if let Some(split) = result.ttft_split() {
            out.push_str(&format!("{name}: {}\n", split.sentence()));
        }
    }
    if let Some(table) = sweep_of(&files, Costs::H100_FREE_DRAFTS) {
        out.push('\n');
        out.push_str(&table.render());
    }
    crate::console::print(&out)
}
