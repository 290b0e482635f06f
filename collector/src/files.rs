//! One bounded way to open a file speclens reads: a regular file (never a FIFO, a device or a
//! folder), opened without blocking, within the size limit of its kind, and read no further
//! than that limit even if it grows while it is read. docs/SECURITY.md lists the limits.

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::Path;

/// What a file is read as, and so the most it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A PEM file of certificates (`--ca-cert`, `--prometheus-ca-cert`): a bundle of every
    /// public root is about 250 KiB.
    Certificate,
    /// A file speclens wrote as JSON (`result.json`, `sweep.json`, `accept-*.json`) or one in
    /// its shape (vLLM's and AIPerf's results).
    Result,
    /// A `records.jsonl` (finished or in progress): read one line at a time, each line at most
    /// [`MAX_RECORD_LINE_BYTES`].
    Records,
    /// A dataset or trace, up to the given bytes (`--max-dataset-mib`).
    Dataset(u64),
}

/// The largest certificate file read.
pub const MAX_CERTIFICATE_BYTES: u64 = 4 << 20;

/// The largest result file read: a run's is a few hundred KiB; one far larger is not a file
/// speclens wrote.
pub const MAX_RESULT_FILE_BYTES: u64 = 256 << 20;

/// The largest records file read: a day at 1,000 requests a second of short records.
pub const MAX_RECORDS_BYTES: u64 = 64 << 30;

/// The longest line of a records file: a record of a million output tokens, its inter-token
/// latencies included, is about 10 MiB.
pub const MAX_RECORD_LINE_BYTES: u64 = 32 << 20;

impl Kind {
    /// The most a file of this kind may hold, in bytes.
    pub fn limit_bytes(self) -> u64 {
        match self {
            Kind::Certificate => MAX_CERTIFICATE_BYTES,
            Kind::Result => MAX_RESULT_FILE_BYTES,
            Kind::Records => MAX_RECORDS_BYTES,
            Kind::Dataset(bytes) => bytes,
        }
    }

    /// What the kind is called in an error, and the flag that raises its limit where one does.
    fn what(self) -> (&'static str, &'static str) {
        match self {
            Kind::Certificate => ("a certificate file", ""),
            Kind::Result => ("a result file", ""),
            Kind::Records => ("a records file", ""),
            Kind::Dataset(_) => ("a dataset", " (--max-dataset-mib)"),
        }
    }

    /// "over the N MiB a … may hold (--flag)".
    fn over(self) -> String {
        let (name, flag) = self.what();
        format!("over the {} {name} may hold{flag}", whole_mib(self.limit_bytes()))
    }
}

/// A limit in MiB for a message: whole when it is, else one decimal.
fn whole_mib(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        mib(bytes)
    }
}

/// `bytes` in MiB for a message, one decimal.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", in_mib(bytes))
}

/// `bytes` in MiB (2^20 bytes), for messages that say how large something is.
pub fn in_mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// The file at `path` opened for reading, with its size: opened without blocking (a FIFO's open
/// would wait for a writer), then refused unless it is a regular file within `kind`'s limit.
/// The error says which rule the file broke, without its path (the caller names it).
pub fn open(path: &Path, kind: Kind) -> Result<(File, u64), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let check = |meta: std::fs::Metadata| {
        if !meta.is_file() {
            return Err("not a regular file (a device, a FIFO or a folder is never read)".to_string());
        }
        if meta.len() > kind.limit_bytes() {
            return Err(format!("{}, {}", mib(meta.len()), kind.over()));
        }
        Ok(meta.len())
    };
    // By its path first, so a device is never opened (an open can have effects of its own),
    // then by the opened file, which is what is read (no blocking open, no controlling tty).
    check(std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("cannot read: {e}"))?;
    let len = check(file.metadata().map_err(|e| format!("cannot read: {e}"))?)?;
    Ok((file, len))
}

/// The whole file at `path` as bytes ([`open`]'s rules), never more than its kind's limit.
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>, String> {
    let (file, len) = open(path, kind)?;
    let limit = kind.limit_bytes();
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!("grew while it was read, {}", kind.over()));
    }
    Ok(bytes)
}

/// The whole file at `path` as text ([`read`]); text that is not UTF-8 is an error.
pub fn read_text(path: &Path, kind: Kind) -> Result<String, String> {
    String::from_utf8(read(path, kind)?).map_err(|_| "not UTF-8 text".to_string())
}

/// Calls `each` with every line of the file at `path` (its number from 1, its text with the
/// line end), read one at a time under `kind`'s limit; a line over `max_line_bytes` or not
/// UTF-8 stops the reading with an error naming its number, made by `error` (the caller's
/// type, so `each` may stop it with an error of its own).
pub fn for_each_line<E>(
    path: &Path,
    kind: Kind,
    max_line_bytes: u64,
    error: impl Fn(String) -> E,
    mut each: impl FnMut(usize, &str) -> Result<(), E>,
) -> Result<(), E> {
    let (file, _) = open(path, kind).map_err(&error)?;
    // One byte past the limit: reading it means the file grew past its limit meanwhile.
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file.take(kind.limit_bytes() + 1));
    let mut buf = Vec::new();
    for number in 1.. {
        buf.clear();
        let read = (&mut reader)
            .take(max_line_bytes + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| error(format!("cannot read line {number}: {e}")))?;
        if read == 0 {
            break;
        }
        if buf.len() as u64 > max_line_bytes {
            let (name, _) = kind.what();
            return Err(error(format!(
                "line {number} is over {}, the most {name} line may hold",
                whole_mib(max_line_bytes)
            )));
        }
        if reader.get_ref().limit() == 0 {
            return Err(error(format!("grew while it was read, {}", kind.over())));
        }
        let line = std::str::from_utf8(&buf).map_err(|e| error(format!("line {number}: not UTF-8 ({e})")))?;
        each(number, line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_their_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.json");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_text(&small, Kind::Result).unwrap(), "{}");
        // A device, a folder and a FIFO: refused at once, never read or waited on.
        for path in [Path::new("/dev/zero"), dir.path()] {
            let e = read(path, Kind::Certificate).unwrap_err();
            assert!(e.contains("not a regular file"), "{e}");
        }
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        assert!(read(&fifo, Kind::Result).unwrap_err().contains("not a regular file"));
        // Over the kind's limit: named with its size, and the flag where one raises it.
        let big = dir.path().join("big.jsonl");
        std::fs::write(&big, vec![b'x'; 2 << 20]).unwrap();
        let e = read(&big, Kind::Dataset(1 << 20)).unwrap_err();
        assert!(
            e.contains("2.0 MiB, over the 1 MiB a dataset may hold (--max-dataset-mib)"),
            "{e}"
        );
        // Lines one at a time, a line too long named by its number.
        std::fs::write(&big, "a\r\nbb\n".to_string() + &"c".repeat(100) + "\n").unwrap();
        let mut seen = Vec::new();
        let e = for_each_line(
            &big,
            Kind::Records,
            10,
            |e| e,
            |n, l| {
                seen.push((n, l.to_string()));
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(seen, [(1, "a\r\n".to_string()), (2, "bb\n".to_string())]);
        assert!(
            e.contains("line 3 is over 0.0 MiB, the most a records file line may hold"),
            "{e}"
        );
    }
}
