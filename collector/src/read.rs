//! `speclens read DIR`: tabulate every result file in a folder — ours and `vllm bench serve`'s
//! alike — with acceptance as the files report it (never recomputed from token counts), and
//! the sweep crossing when both arms are there.

use std::path::{Path, PathBuf};

use comfy_table::{presets, CellAlignment, Table};
use serde_json::Value;
use speclens_shared::model::Costs;

use crate::cli::ReadArgs;
use crate::error::CollectorError;
use crate::sweep::{parse_point_name, table_from_dir};

/// Result files in `dir`: `*.json` holding `vllm bench serve` keys, and `*/result.json`.
pub fn result_files(dir: &Path) -> Result<Vec<(String, Value)>, CollectorError> {
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
    let mut out = Vec::new();
    for path in paths {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if value.get("completed").is_some() && value.get("output_throughput").is_some() {
            let name = path.strip_prefix(dir).unwrap_or(&path).display().to_string();
            out.push((name, value));
        }
    }
    Ok(out)
}

fn num(v: &Value, key: &str, decimals: usize) -> String {
    v.get(key)
        .and_then(Value::as_f64)
        .map_or_else(|| "—".into(), |x| format!("{x:.decimals$}"))
}

/// The table of result files.
pub fn render(files: &[(String, Value)]) -> String {
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
            num(v, "completed", 0),
            num(v, "failed", 0),
            num(v, "request_throughput", 2),
            num(v, "output_throughput", 1),
            num(v, "mean_ttft_ms", 2),
            num(v, "mean_itl_ms", 2),
            num(v, "spec_decode_acceptance_rate", 2),
            num(v, "spec_decode_acceptance_length", 2),
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
pub fn run(args: ReadArgs) -> Result<(), CollectorError> {
    let files = result_files(&args.dir)?;
    if files.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} holds no result files (JSON with `completed` and `output_throughput`)",
            args.dir.display()
        )));
    }
    print!("{}", render(&files));
    let has = |prefix: &str| {
        files
            .iter()
            .any(|(n, _)| parse_point_name(n).is_some() && n.starts_with(prefix))
    };
    if has("spec-c") && has("base-c") {
        let table = table_from_dir(&args.dir, Costs::H100_FREE_DRAFTS)?;
        println!();
        print!("{}", table.render());
    }
    Ok(())
}
