//! AIPerf's time-weighted figures of a run (`effective_*`, `active_*`, `tokens_in_flight`),
//! read from its records file in bounded memory and time that grows with the file, not faster:
//! one pass finds the time the events span and how many there are; when they fit
//! [`SLICE_EVENTS`] a second pass folds them all; else the second pass writes them into files
//! by spans of time, and each span is folded in order (a span still too large is split the
//! same way, down to spans of a single instant).

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use speclens_shared::run::time_weighted::{
    has_chunk_gaps, record_events, Event, SweepFigure, SweepLine, SweepSettings, EVENT_BYTES,
};

use crate::results_folder::history::for_each_record;

/// Events held at once, at most (a span of a single instant, which cannot be split, excepted).
const SLICE_EVENTS: usize = 1 << 19;

/// Spans of time one split writes, at most (one file each).
const SPANS: usize = 128;

/// What a split wrote for one span: its file, events and the times they span.
struct Span {
    path: PathBuf,
    events: usize,
    lo: f64,
    hi: f64,
}

/// The figures over `window_ms` (ms on the records' clock) of the records in `path`.
pub fn sweep_of_records(path: &Path, stream: bool, window_ms: (f64, f64)) -> Result<Vec<SweepFigure>, String> {
    sweep_within(path, stream, window_ms, SLICE_EVENTS)
}

/// [`sweep_of_records`] holding at most `budget` events at once.
fn sweep_within(path: &Path, stream: bool, window_ms: (f64, f64), budget: usize) -> Result<Vec<SweepFigure>, String> {
    // Pass one: whether any response came in chunks, the span of the events and their number.
    let (mut chunked, mut lo, mut hi, mut total) = (false, f64::INFINITY, f64::NEG_INFINITY, 0usize);
    let counting = SweepSettings { stream, chunked: true };
    for_each_record(path, |r| {
        chunked |= has_chunk_gaps(r);
        let mut seq = 0;
        record_events(r, counting, &mut seq, &mut |e| {
            lo = lo.min(e.at_ms);
            hi = hi.max(e.at_ms);
        });
        total += seq as usize;
    })?;
    let settings = SweepSettings { stream, chunked };
    let events_of = |emit: &mut dyn FnMut(Event)| {
        let mut seq = 0;
        for_each_record(path, |r| record_events(r, settings, &mut seq, &mut |e| emit(e)))
    };
    let mut line = SweepLine::new(window_ms.0, window_ms.1);
    if total <= budget {
        let mut events = Vec::with_capacity(total);
        events_of(&mut |e| events.push(e))?;
        line.fold(&mut events);
        return Ok(line.finish());
    }
    let spill = SpillDir::beside(path)?;
    room_for_spill(&spill.0, total, free_bytes(&spill.0))?;
    for span in split(&spill.0, lo, hi, events_of)? {
        fold_span(&span, &mut line, &spill.0, budget)?;
    }
    Ok(line.finish())
}

/// The most disk a fold's spill takes, as a multiple of its events' bytes: every event once,
/// and a span's events once more while that span is split again (its file is removed before
/// its parts are folded).
pub const SPILL_EVENT_COPIES: u64 = 2;

/// Whether the folder holding the spill has room for `events` spilled ([`SPILL_EVENT_COPIES`]
/// times [`EVENT_BYTES`] each; about 4 to 7 times the records file) with `free` bytes free;
/// the error says how much is needed and free, before anything is written.
fn room_for_spill(dir: &Path, events: usize, free: Option<u64>) -> Result<(), String> {
    let need = (events as u64).saturating_mul(EVENT_BYTES as u64 * SPILL_EVENT_COPIES);
    match free {
        Some(free) if free < need => Err(format!(
            "folding {events} events needs up to {:.1} MiB of disk beside the records ({} bytes an event, twice while a span is split) and {} has {:.1} MiB free",
            crate::files::in_mib(need),
            EVENT_BYTES,
            dir.display(),
            crate::files::in_mib(free)
        )),
        _ => Ok(()),
    }
}

/// The bytes free to this user in `dir`'s file system, when it says.
fn free_bytes(dir: &Path) -> Option<u64> {
    let stat = nix::sys::statvfs::statvfs(dir).ok()?;
    Some(stat.blocks_available().saturating_mul(stat.fragment_size()))
}

/// A folder for the spans' files beside the records (the same disk), removed with what it
/// holds when dropped, whatever happened.
struct SpillDir(PathBuf);

impl SpillDir {
    /// Made afresh, never through a link planted under its name; the folders a killed run
    /// left behind (their process gone) are removed first.
    fn beside(records: &Path) -> Result<SpillDir, String> {
        use std::os::unix::fs::DirBuilderExt;
        let parent = records.parent().unwrap_or(Path::new("."));
        for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix(".sweep-").and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            let gone = !Path::new(&format!("/proc/{pid}")).exists();
            if (gone || pid == std::process::id()) && entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = parent.join(format!(".sweep-{}", std::process::id()));
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
            let _ = std::fs::remove_file(&dir);
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        Ok(SpillDir(dir))
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fold one span's events in time order: at once when they fit, else split again.
fn fold_span(span: &Span, line: &mut SweepLine, dir: &Path, budget: usize) -> Result<(), String> {
    let remove = || std::fs::remove_file(&span.path).map_err(|e| format!("{}: {e}", span.path.display()));
    if span.events <= budget || span.hi <= span.lo {
        let mut events = Vec::with_capacity(span.events);
        read_events(&span.path, &mut |e| events.push(e))?;
        remove()?;
        line.fold(&mut events);
    } else {
        let parts = split(dir, span.lo, span.hi, |emit| read_events(&span.path, emit))?;
        // Its parts hold every event it held: the span's file goes before they are folded.
        remove()?;
        for inner in parts {
            fold_span(&inner, line, dir, budget)?;
        }
    }
    Ok(())
}

/// Write the events `source` gives into up to [`SPANS`] files by equal spans of `[lo, hi]`;
/// the spans that got any, in time order.
fn split(
    dir: &Path,
    lo: f64,
    hi: f64,
    source: impl FnOnce(&mut dyn FnMut(Event)) -> Result<(), String>,
) -> Result<Vec<Span>, String> {
    let base = dir.join(format!("{:016x}", lo.to_bits() ^ hi.to_bits().rotate_left(7)));
    let mut writers: Vec<Option<(BufWriter<std::fs::File>, Span)>> = (0..SPANS).map(|_| None).collect();
    let mut failure: Option<String> = None;
    source(&mut |e| {
        if failure.is_some() {
            return;
        }
        let i = if hi > lo {
            (((e.at_ms - lo) / (hi - lo) * SPANS as f64) as usize).min(SPANS - 1)
        } else {
            0
        };
        let written = (|| -> Result<(), String> {
            if writers[i].is_none() {
                let path = base.with_extension(format!("{i}"));
                let file = crate::results_folder::write::create_fresh(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let span = Span {
                    path,
                    events: 0,
                    lo: f64::INFINITY,
                    hi: f64::NEG_INFINITY,
                };
                writers[i] = Some((BufWriter::with_capacity(1 << 13, file), span));
            }
            let Some((out, span)) = writers[i].as_mut() else {
                return Ok(());
            };
            out.write_all(&e.to_bytes())
                .map_err(|err| format!("{}: {err}", span.path.display()))?;
            span.events += 1;
            (span.lo, span.hi) = (span.lo.min(e.at_ms), span.hi.max(e.at_ms));
            Ok(())
        })();
        if let Err(why) = written {
            failure = Some(why);
        }
    })?;
    if let Some(why) = failure {
        return Err(why);
    }
    let mut spans = Vec::new();
    for (mut out, span) in writers.into_iter().flatten() {
        out.flush().map_err(|e| format!("{}: {e}", span.path.display()))?;
        spans.push(span);
    }
    Ok(spans)
}

/// Each event of a file [`split`] wrote.
fn read_events(path: &Path, emit: &mut dyn FnMut(Event)) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut input = BufReader::with_capacity(1 << 16, file);
    let mut bytes = [0u8; EVENT_BYTES];
    loop {
        match input.read_exact(&mut bytes) {
            Ok(()) => emit(Event::from_bytes(&bytes).ok_or_else(|| format!("{}: not an event", path.display()))?),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use speclens_shared::run::record::RequestRecord;
    use speclens_shared::run::time_weighted::sweep_of;

    /// Records whose events span several spans (one of them split again) give the figures of
    /// one fold in memory, and leave no file behind.
    #[test]
    fn spans_of_a_records_file_fold_as_one() {
        // Most requests in the first tenth of the time: those spans are split again.
        let records: Vec<RequestRecord> = (0..300)
            .map(|i| {
                let start_ms = if i < 270 {
                    i as f64 * 0.02
                } else {
                    540.0 + i as f64 * 20.0
                };
                RequestRecord {
                    start_ms,
                    success: true,
                    ttft_ms: Some(5.0 + (i % 7) as f64),
                    e2el_ms: Some(5.0 + (i % 7) as f64 + 100.0),
                    itl_ms: vec![1.0; 100],
                    input_tokens: 30 + i % 11,
                    output_tokens: 101,
                    ..RequestRecord::default()
                }
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let text: String = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(&path, text).unwrap();
        let window = (0.0, 6700.0);
        // 300 records of about 300 events, 2,000 held at once: spans, and spans of spans.
        let sliced = sweep_within(&path, true, window, 2000).unwrap();
        let whole = sweep_of(&records, true, window);
        assert_eq!(sliced.len(), 14);
        for (a, b) in sliced.iter().zip(&whole) {
            let near = |x: f64, y: f64| (x - y).abs() <= 1e-9 * y.abs().max(1.0);
            assert!(
                near(a.avg, b.avg) && near(a.max, b.max) && near(a.p50, b.p50) && near(a.p99, b.p99),
                "{a:?} against {b:?}"
            );
        }
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, ["records.jsonl"]);
    }

    /// #63 item 11: the spill folders of runs whose process is gone are removed by the next
    /// fold; a live process's folder stays, and the fold's own goes with it.
    #[test]
    fn spill_folders_of_killed_runs_are_removed_and_a_live_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join(".sweep-4000000000");
        let live = dir.path().join(".sweep-1");
        for folder in [&gone, &live] {
            std::fs::create_dir(folder).unwrap();
            std::fs::write(folder.join("0.events"), [0u8; 26]).unwrap();
        }
        let spill = SpillDir::beside(&dir.path().join("records.jsonl")).unwrap();
        assert!(!gone.exists() && live.exists() && spill.0.is_dir());
        let own = spill.0.clone();
        drop(spill);
        assert!(!own.exists());
    }

    /// A disk without room for the spill is named before anything is written (#63 item 11).
    #[test]
    fn a_spill_the_disk_has_no_room_for_is_refused_before_it_is_written() {
        let dir = Path::new("/spill");
        assert_eq!(room_for_spill(dir, 1 << 20, Some(52 << 20)), Ok(()));
        assert_eq!(
            room_for_spill(dir, 1 << 20, None),
            Ok(()),
            "a file system that does not say"
        );
        let why = room_for_spill(dir, 1 << 20, Some(51 << 20)).unwrap_err();
        assert_eq!(
            why,
            "folding 1048576 events needs up to 52.0 MiB of disk beside the records (26 bytes an event, twice while a span is split) and /spill has 51.0 MiB free"
        );
        assert!(free_bytes(&std::env::temp_dir()).is_some());
    }

    #[test]
    fn events_come_back_from_their_bytes() {
        let records = [RequestRecord {
            start_ms: 1.5,
            success: true,
            ttft_ms: Some(2.0),
            e2el_ms: Some(9.0),
            itl_ms: vec![3.0, 4.0],
            input_tokens: 7,
            output_tokens: 3,
            ..RequestRecord::default()
        }];
        let settings = SweepSettings {
            stream: true,
            chunked: true,
        };
        let mut seq = 0;
        record_events(&records[0], settings, &mut seq, &mut |e| {
            assert_eq!(Event::from_bytes(&e.to_bytes()), Some(e));
        });
        assert!(seq > 10);
        assert_eq!(Event::from_bytes(&[0xff; EVENT_BYTES]), None);
    }
}
