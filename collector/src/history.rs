//! The run history on disk: which folders under a results folder hold runs, sweeps and accept
//! matrices, and the JSON bodies the dashboard reads for each (served by `speclens serve`,
//! embedded by `speclens report`).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// A run id is a relative folder path of plain names: no `..`, no root, no odd characters.
pub fn run_folder(results_dir: &Path, id: &str) -> Option<PathBuf> {
    let ok = !id.is_empty()
        && id.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
    ok.then(|| results_dir.join(id))
}

/// Folders holding `marker` (a file name, or a prefix ending in `*`), up to `depth` levels down
/// (demo runs nest sweeps), as `(id, path)` sorted by id.
pub fn find_folders(dir: &Path, depth: u32, marker: &str) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    find_into(dir, "", depth, marker, &mut found);
    found.sort();
    found
}

fn find_into(dir: &Path, prefix: &str, depth: u32, marker: &str, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if !path.is_dir() || run_folder(Path::new(""), &name).is_none() {
            continue;
        }
        let id = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if holds(&path, marker) {
            out.push((id.clone(), path.clone()));
        }
        if depth > 1 {
            find_into(&path, &id, depth - 1, marker, out);
        }
    }
}

/// Whether `dir` holds the file `marker`, or a JSON file starting with `marker` minus its `*`.
pub fn holds(dir: &Path, marker: &str) -> bool {
    match marker.strip_suffix('*') {
        None => dir.join(marker).is_file(),
        Some(prefix) => !files_starting(dir, prefix).is_empty(),
    }
}

/// `dir`'s JSON files whose name starts with `prefix`, sorted.
fn files_starting(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                && p.extension().is_some_and(|x| x == "json")
                && p.is_file()
        })
        .collect();
    files.sort();
    files
}

/// One line of the run list, from a run's `result.json` (ours or `vllm bench serve`'s).
pub fn run_summary(id: &str, result: &Value) -> Value {
    json!({
        "id": id, "label": result["label"], "date": result["date"], "model_id": result["model_id"],
        "partial": result["partial"], "completed": result["completed"],
        "output_throughput": result["output_throughput"],
        "spec_decode_acceptance_length": result["spec_decode_acceptance_length"],
    })
}

/// The run list (`/api/runs`): runs newest first, then sweep and accept folder ids.
pub fn list_body(source: &str, runs: Vec<Value>, sweeps: Vec<String>, accepts: Vec<String>) -> Value {
    let mut runs = runs;
    runs.sort_by(|a, b| b["date"].as_str().cmp(&a["date"].as_str()));
    json!({"results_dir": source, "runs": runs, "sweeps": sweeps, "accepts": accepts})
}

/// Everything under `results_dir`, as `/api/runs` answers.
pub fn list_results(results_dir: &Path) -> Value {
    let runs = find_folders(results_dir, 3, "result.json")
        .into_iter()
        .filter_map(|(id, path)| Some(run_summary(&id, &read_json(&path.join("result.json"))?)))
        .collect();
    let ids = |marker| {
        find_folders(results_dir, 3, marker)
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    };
    list_body(
        &results_dir.display().to_string(),
        runs,
        ids("sweep.json"),
        ids("accept-*"),
    )
}

/// A JSON file, or `None` when it cannot be read or parsed.
pub fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// An accept folder's per-category rows (`/api/accept/<id>`); `None` when it has none.
pub fn accept_body(folder: &Path) -> Option<Value> {
    let files = files_starting(folder, "accept-");
    if files.is_empty() {
        return None;
    }
    let rows: Vec<Value> = files.iter().filter_map(|p| read_json(p)).collect();
    Some(json!({"categories": rows}))
}
