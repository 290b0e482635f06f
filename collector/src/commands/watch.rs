//! `speclens rules` and `speclens grafana`: the Prometheus rule file and the Grafana dashboard
//! from shared's formulas, written atomically to a file (or to stdout); the rule file checked
//! with `promtool check rules` where Debian's Prometheus package put it on the PATH, and the
//! load alert's break-even read from a sweep.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use speclens_shared::engine::Engine;
use speclens_shared::sweep::{Axis, SweepFile};
use speclens_shared::watch::grafana;
use speclens_shared::watch::rules::{check_duration, rule_file, LoadCutoff, RuleSettings};

use crate::error::CollectorError;
use crate::results_folder::write::write_atomic;

/// Who wrote a file, for its header.
fn written_by() -> String {
    format!("speclens {}", env!("CARGO_PKG_VERSION"))
}

/// The measured break-even of a sweep (its `sweep.json`, or the folder holding it): the
/// recommendation's cut-off, on the concurrency axis.
pub fn cutoff_of_sweep(path: &Path) -> Result<LoadCutoff, CollectorError> {
    let fail = |why: String| CollectorError::InvalidArgument(format!("--from-sweep {}: {why}", path.display()));
    let file = if path.is_dir() {
        path.join("sweep.json")
    } else {
        path.to_path_buf()
    };
    let text = crate::files::read_text(&file, crate::files::Kind::Result)
        .map_err(|why| fail(format!("{}: {why}", file.display())))?;
    let sweep: SweepFile =
        serde_json::from_str(&text).map_err(|e| fail(format!("{} is not a sweep.json: {e}", file.display())))?;
    let rec = sweep
        .recommendation
        .ok_or_else(|| fail("the sweep has no speculative arm against plain, so no break-even".into()))?;
    if rec.axis != Axis::Concurrency {
        return Err(fail(
            "the sweep's levels are request rates; the load alert compares running requests with a concurrency".into(),
        ));
    }
    let cut = rec.cut_off.ok_or_else(|| {
        fail(
            "speculation was ahead at every level measured: no break-even to alert on (sweep higher concurrencies)"
                .into(),
        )
    })?;
    let label = file
        .parent()
        .and_then(|p| p.file_name())
        .map_or_else(|| file.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok(LoadCutoff {
        concurrency: cut.level,
        source: format!("speclens sweep {label:?} (arm {})", cut.arm),
    })
}

/// Write `text` to `out` atomically, or to stdout.
fn emit(text: &str, out: Option<&PathBuf>) -> Result<(), CollectorError> {
    match out {
        Some(path) => write_atomic(path, text.as_bytes()),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|_| CollectorError::ClosedPipe)
        }
    }
}

/// `promtool check rules FILE` when promtool is on the PATH: `Ok(None)` without it, the
/// tool's complaint as an error when it refuses the file.
pub fn promtool_check(path: &Path) -> Result<Option<String>, CollectorError> {
    let output = match Command::new("promtool").arg("check").arg("rules").arg(path).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CollectorError::Output(format!("cannot run promtool: {e}"))),
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        Ok(Some(said.trim().to_string()))
    } else {
        Err(CollectorError::Output(format!(
            "promtool check rules refused {}: {}",
            path.display(),
            said.trim()
        )))
    }
}

/// `speclens rules`.
pub fn rules(settings: &RuleSettings, out: Option<&PathBuf>) -> Result<(), CollectorError> {
    let text = rule_file(settings, &written_by()).map_err(|e| CollectorError::InvalidArgument(e.to_string()))?;
    let Some(path) = out else {
        return emit(&text, None);
    };
    // Checked beside its place, then moved there: a file promtool refuses never replaces one a
    // Prometheus loads.
    let name = path
        .file_name()
        .map_or_else(|| "rules.yml".into(), |n| n.to_string_lossy().into_owned());
    let checked = path.with_file_name(format!(".{name}.check"));
    write_atomic(&checked, text.as_bytes())?;
    let said = match promtool_check(&checked) {
        Ok(said) => said,
        Err(e) => {
            let _ = std::fs::remove_file(&checked);
            return Err(e);
        }
    };
    std::fs::rename(&checked, path)
        .map_err(|e| CollectorError::Output(format!("cannot write {}: {e}", path.display())))?;
    match said {
        Some(said) => eprintln!("wrote {}; promtool check rules: {said}", path.display()),
        None => eprintln!(
            "wrote {} (promtool not found: Debian's prometheus package has it, to check the file)",
            path.display()
        ),
    }
    Ok(())
}

/// `speclens grafana`.
pub fn dashboard(window: &str, engine: Option<Engine>, out: Option<&PathBuf>) -> Result<(), CollectorError> {
    check_duration("--window", window).map_err(|e| CollectorError::InvalidArgument(e.to_string()))?;
    let json = grafana::dashboard(window, engine, &written_by());
    let mut text = serde_json::to_string_pretty(&json).map_err(|e| CollectorError::Output(e.to_string()))?;
    text.push('\n');
    emit(&text, out)?;
    if let Some(path) = out {
        eprintln!(
            "wrote {}: import it in Grafana (Dashboards → New → Import) or provision it; it reads the series `speclens rules --window {window}` records",
            path.display()
        );
    }
    Ok(())
}
