//! Writing in a results folder: its default name, the lock a writer holds, atomic writes and
//! the JSON every file is written as, and the time stamps files carry.

use std::path::{Path, PathBuf};

use speclens_shared::file_label::result_file_label;

use crate::error::CollectorError;
use crate::results_folder::history::LOCK_FILE;

/// `speclens-results/<UTC time>-<label>/`.
pub fn default_out_dir(label: &str) -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let stamp = now
        .format(time::macros::format_description!(
            "[year][month][day]-[hour][minute][second]"
        ))
        .unwrap_or_else(|_| "run".into());
    let label: String = result_file_label(label)
        .chars()
        .take(speclens_shared::file_label::MAX_FILE_LABEL_CHARS)
        .collect();
    PathBuf::from("speclens-results").join(format!("{stamp}-{label}"))
}

/// Create `path` afresh for writing, never through a link: whatever file or symlink sits there
/// is removed (the link itself, never its target), then the file is created exclusively, which
/// no symlink planted in between can redirect.
pub fn create_fresh(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_dir() => std::fs::remove_file(path)?,
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

/// Hold `dir` for the caller's writes until the returned file is dropped: an exclusive lock on
/// its [`LOCK_FILE`], so two commands given one `--out` cannot interleave their records and
/// temporary files. A second writer gets an error naming the folder and the first writer's pid.
pub fn lock_dir(dir: &Path) -> Result<std::fs::File, CollectorError> {
    use std::io::{Read, Seek, Write};
    let path = dir.join(LOCK_FILE);
    let fail = |e: std::io::Error| CollectorError::Output(format!("cannot lock {}: {e}", path.display()));
    // Never through a symlink planted in the folder (it fails), nor on what is not a file.
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(&path)
            .map_err(fail)?
    };
    // A hard link planted there would have its target truncated below: refused too.
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() || std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
        return Err(CollectorError::Output(format!(
            "cannot lock {}: it is not a regular file of its own (a link or a FIFO planted there)",
            path.display()
        )));
    }
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(CollectorError::Output(format!(
                "{} is being written by another speclens{}; give each run its own --out",
                dir.display(),
                if holder.is_empty() {
                    String::new()
                } else {
                    format!(" (pid {holder})")
                }
            )));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(fail(e)),
    }
    // The holder's pid, for the message a second writer gets.
    let _ = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| write!(file, "{}", std::process::id()));
    Ok(file)
}

/// Write a file atomically: a temporary sibling, flushed, then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CollectorError> {
    let fail = |e: std::io::Error| CollectorError::Output(format!("cannot write {}: {e}", path.display()));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let written = (|| {
        use std::io::Write;
        let mut f = create_fresh(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // A half-written temporary would only take the space a full disk lacks.
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(fail)
}

pub fn to_json_bytes(v: &impl serde::Serialize) -> Result<Vec<u8>, CollectorError> {
    let mut bytes = serde_json::to_vec_pretty(v).map_err(|e| CollectorError::Output(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The time now in RFC 3339 (UTC), as result files date themselves.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
