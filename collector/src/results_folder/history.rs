//! The run history on disk: which folders under a results folder hold runs, sweeps and accept
//! matrices, and the JSON bodies the dashboard reads for each (served by `speclens serve`,
//! embedded by `speclens report`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use speclens_shared::results::result_text::run_result_of_text;
use speclens_shared::results::run_result::RunResult;

use speclens_shared::results::accept::AcceptMatrix;

use speclens_shared::results::run_list::{RunList, RunListEntry};
use speclens_shared::run::record::RequestRecord;

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

/// `path` with every symlink resolved, when it exists and lies inside `results_dir` (a link
/// that leads out of the results folder is as good as absent).
pub fn inside(results_dir: &Path, path: &Path) -> Option<PathBuf> {
    let root = results_dir.canonicalize().ok()?;
    path.canonicalize().ok().filter(|p| p.starts_with(&root))
}

/// Folders holding `marker` (a file name, or a prefix ending in `*`), up to `depth` levels down
/// (demo runs nest sweeps), as `(id, path)` sorted by id.
pub fn find_folders(dir: &Path, depth: u32, marker: &str) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    find_into(dir, "", depth, marker, &mut found);
    // A folder reached through a link out of `dir` is as good as absent.
    found.retain(|(_, path)| inside(dir, path).is_some());
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

/// The records a run writes as it goes, renamed `records.jsonl` when it saves its result: a
/// folder that holds them and no `result.json` is a run that was stopped before it finished
/// (killed), or one still running.
pub const RECORDS_IN_PROGRESS: &str = ".records.jsonl.tmp";

/// The file a run folder's result is read from: its `result.json`, or, for a run killed before
/// it saved one, its [`RECORDS_IN_PROGRESS`], or for one that could not write it, its
/// [`RECORDS`] (read as a partial result by [`read_result`]); `None` for a folder with none of
/// them, or whose run is still writing (it holds the folder's lock).
pub fn run_file(folder: &Path) -> Option<PathBuf> {
    let result = folder.join("result.json");
    if result.exists() {
        return Some(result);
    }
    // A killed run's records, or the records of one whose result could not be written (a full
    // disk): read as a partial result either way.
    [RECORDS_IN_PROGRESS, RECORDS]
        .into_iter()
        .map(|name| folder.join(name))
        .find(|records| records.is_file())
        .filter(|_| !still_written(folder))
}

/// A run's records once it finished writing them.
pub const RECORDS: &str = "records.jsonl";

/// Whether `path` is a run's records ([`RECORDS_IN_PROGRESS`] or [`RECORDS`]): read as a
/// partial result by [`read_result`] when the folder has no `result.json`.
pub fn is_records(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == RECORDS_IN_PROGRESS || n == RECORDS)
}

/// The lock file a command holds in the results folder it writes.
pub const LOCK_FILE: &str = ".speclens.lock";

/// Whether a command holds `folder`'s lock now (a killed one's lock is gone with it). Opened
/// without blocking and never through a link: a FIFO or link planted under the lock's name is
/// no lock, and never hangs the answer.
fn still_written(folder: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(folder.join(LOCK_FILE))
    else {
        return false;
    };
    file.metadata().is_ok_and(|m| m.is_file())
        && matches!(file.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

/// The run folders under `dir` (up to `depth` levels down) by id, with the file each one's
/// result is read from ([`run_file`]): finished runs and runs killed before they finished.
pub fn run_folders(dir: &Path, depth: u32) -> Vec<(String, PathBuf)> {
    let mut found = find_folders(dir, depth, "result.json");
    found.extend(find_folders(dir, depth, RECORDS_IN_PROGRESS));
    found.extend(find_folders(dir, depth, RECORDS));
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0);
    found
        .into_iter()
        .filter_map(|(id, folder)| run_file(&folder).map(|file| (id, file)))
        .filter(|(_, file)| inside(dir, file).is_some())
        .collect()
}

/// A partial result from the records a killed run left at `path`, named by its folder: the
/// records read one at a time, a line that does not read (the one the kill cut) counted.
fn recovered(path: &Path) -> Result<RunResult, String> {
    use crate::files::{for_each_line, Kind, MAX_RECORD_LINE_BYTES};
    let mut recovery = speclens_shared::results::run_result::Recovery::default();
    let mut cut = 0;
    let named = |why: String| format!("{}: {why}", path.display());
    for_each_line(path, Kind::Records, MAX_RECORD_LINE_BYTES, named, |_, line| {
        match serde_json::from_str::<RequestRecord>(line) {
            Ok(record) => recovery.push(&record),
            Err(_) if line.trim().is_empty() => {}
            Err(_) => cut += 1,
        }
        Ok(())
    })?;
    let label = path
        .parent()
        .and_then(Path::file_name)
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    Ok(recovery.finish(&label, cut))
}

/// Everything under `results_dir`, as `/api/runs` answers. Ids are folder paths relative to
/// `results_dir`, as in a report of that folder.
pub fn list_results(results_dir: &Path) -> RunList {
    list_with(results_dir, entry_of)
}

/// [`list_results`] with `entry` reading each run's `result.json`. Folders and files reached
/// through a symlink out of `results_dir` are left out, as `/api/runs/<id>` refuses them.
fn list_with(results_dir: &Path, mut entry: impl FnMut(&str, &Path) -> Option<RunListEntry>) -> RunList {
    let within = |(id, path): (String, PathBuf), marker: &str| {
        let target = if marker.ends_with('*') {
            path.clone()
        } else {
            path.join(marker)
        };
        inside(results_dir, &target).map(|_| (id, path))
    };
    let runs = run_folders(results_dir, 3)
        .into_iter()
        .filter_map(|(id, file)| inside(results_dir, &file).map(|_| (id, file)))
        .filter_map(|(id, file)| entry(&id, &file))
        .collect();
    let ids = |marker| {
        find_folders(results_dir, 3, marker)
            .into_iter()
            .filter_map(|found| within(found, marker))
            .map(|(id, _)| id)
            .collect()
    };
    RunList::new(
        &results_dir.display().to_string(),
        runs,
        ids("sweep.json"),
        ids("accept-*"),
    )
}

/// A run's list entry from its `result.json`, or `None` (logged) when it does not read.
fn entry_of(id: &str, path: &Path) -> Option<RunListEntry> {
    match read_result(path) {
        Ok(result) => Some(RunListEntry::new(id, &result?)),
        Err(why) => {
            tracing::warn!("run list: skipped {why}");
            None
        }
    }
}

/// The run list as `speclens serve` keeps it: each `result.json` is parsed once and again only
/// when its size or modification time changes, so `/api/runs` costs a walk of the folders, not
/// a parse of every run (one at a time: parallel calls wait for one refresh).
#[derive(Default)]
pub struct RunIndex {
    cache: std::sync::Mutex<HashMap<PathBuf, Indexed>>,
}

/// A result file's modification time and size when it was read, and its entry then.
type Indexed = (Option<SystemTime>, u64, Option<RunListEntry>);

impl RunIndex {
    pub fn list(&self, results_dir: &Path) -> RunList {
        let mut cache = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut seen = HashSet::new();
        let list = list_with(results_dir, |id, path| {
            let meta = std::fs::metadata(path).ok()?;
            let stamp = (meta.modified().ok(), meta.len());
            seen.insert(path.to_path_buf());
            match cache.get(path) {
                Some((modified, len, entry)) if (*modified, *len) == stamp => entry.clone(),
                _ => {
                    let entry = entry_of(id, path);
                    cache.insert(path.to_path_buf(), (stamp.0, stamp.1, entry.clone()));
                    entry
                }
            }
        });
        // Runs deleted since are forgotten.
        cache.retain(|path, _| seen.contains(path));
        list
    }
}

/// A result file's text (`result.json`, `sweep.json`, `accept-*.json`), read the one bounded
/// way ([`crate::files`]): a regular file of at most [`crate::files::MAX_RESULT_FILE_BYTES`];
/// the error says which rule it broke.
pub fn read_bounded(path: &Path) -> Result<String, String> {
    crate::files::read_text(path, crate::files::Kind::Result)
}

/// A JSON file as `T`; the error names the file and why it did not read.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    read_bounded(path)
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
        .map_err(|why| format!("{}: {why}", path.display()))
}

/// The per-request acceptance of a `records.jsonl`'s window by group (`group` names a
/// record's: its category, or the served model it asked for), one row per group with stats,
/// each marked as measured in `run`.
pub fn acceptance_by(
    path: &Path,
    run: &str,
    group: impl Fn(&RequestRecord) -> Option<&str>,
) -> Result<Vec<speclens_shared::results::accept::CategoryAcceptance>, String> {
    let mut fold = speclens_shared::results::accept::GroupFold::default();
    for_each_record(path, |r| {
        if let (true, false, Some(name), Some(spec)) = (r.success, r.warmup, group(r), &r.spec_decode_acceptance) {
            fold.push(name, spec);
        }
    })?;
    Ok(fold.rows(run))
}

/// Each record of a `records.jsonl` in turn, read as a stream (a run's records are never all in
/// memory, and a line is at most [`crate::files::MAX_RECORD_LINE_BYTES`]); `f` sees every one.
/// The error names the file, and the line that did not read.
pub fn for_each_record(path: &Path, mut f: impl FnMut(&RequestRecord)) -> Result<(), String> {
    use crate::files::{for_each_line, Kind, MAX_RECORD_LINE_BYTES};
    let named = |why: String| format!("{}: {why}", path.display());
    for_each_line(path, Kind::Records, MAX_RECORD_LINE_BYTES, named, |number, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let record: RequestRecord =
            serde_json::from_str(line).map_err(|e| format!("{}:{number}: {e}", path.display()))?;
        f(&record);
        Ok(())
    })
}

/// A result file (ours or `vllm bench serve`'s): a JSON object with its request counts. `None`
/// when the file is not one; an error, naming the file and why, when it looks like one but does
/// not read.
pub fn read_result(path: &Path) -> Result<Option<RunResult>, String> {
    if is_records(path) {
        return recovered(path).map(Some);
    }
    // Typed, with lists no reader uses skipped unread: memory a small multiple of the file.
    let Ok(text) = read_bounded(path) else {
        return Ok(None);
    };
    let Some(mut result) = run_result_of_text(&text).map_err(|e| format!("{}: {e}", path.display()))? else {
        return Ok(None);
    };
    drop(text);
    result.check_version().map_err(|e| format!("{}: {e}", path.display()))?;
    // `vllm bench serve` 0.33's per-request server timings, as speclens's own distributions.
    result.read_vllm_server_times();
    Ok(Some(result))
}

/// An accept folder's per-category rows (`/api/accept/<id>`), and why each `accept-*.json` that
/// did not read was left out; `None` when the folder has no such file.
pub fn accept_files(folder: &Path) -> Option<(AcceptMatrix, Vec<String>)> {
    let files = files_starting(folder, "accept-");
    if files.is_empty() {
        return None;
    }
    let mut matrix = AcceptMatrix::default();
    let mut skipped = Vec::new();
    for path in files {
        match read_json(&path) {
            Ok(row) => matrix.categories.push(row),
            Err(why) => skipped.push(why),
        }
    }
    Some((matrix, skipped))
}

/// [`accept_files`] for the dashboard: what did not read is logged.
pub fn accept_body(folder: &Path) -> Option<AcceptMatrix> {
    let (matrix, skipped) = accept_files(folder)?;
    for why in skipped {
        tracing::warn!("accept matrix: skipped {why}");
    }
    Some(matrix)
}
