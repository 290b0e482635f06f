//! AIPerf's time-weighted figures of a run (`effective_*`, `active_*`, `tokens_in_flight`),
//! read from its records file in bounded memory: one pass finds the time the events span and
//! how many there are; when they fit [`SLICE_EVENTS`] one more pass folds them all, else a pass
//! counts them by time and each slice of time is folded from a pass of its own, in order, so
//! no more than a slice's events are ever held.

use std::path::Path;

use speclens_shared::sweepline::{record_events, Event, SweepFigure, SweepLine, SweepSettings};

use crate::history::for_each_record;

/// Events held at once, at most (32 bytes each): 16 MiB.
const SLICE_EVENTS: usize = 1 << 19;

/// Equal spans of time the events are counted in when they do not fit one slice.
const BUCKETS: usize = 4096;

/// Which bucket of `[lo, hi]` an event falls in.
fn bucket(at_ms: f64, lo: f64, hi: f64) -> usize {
    if hi <= lo {
        return 0;
    }
    (((at_ms - lo) / (hi - lo) * BUCKETS as f64) as usize).min(BUCKETS - 1)
}

/// The figures over `window_ms` (ms on the records' clock) of the records in `path`.
pub fn sweep_of_records(path: &Path, stream: bool, window_ms: (f64, f64)) -> Result<Vec<SweepFigure>, String> {
    // Pass one: whether any response came in chunks, the span of the events and their number.
    let (mut chunked, mut lo, mut hi, mut total) = (false, f64::INFINITY, f64::NEG_INFINITY, 0u64);
    let counting = SweepSettings { stream, chunked: true };
    for_each_record(path, |r| {
        chunked |= !r.warmup && r.success && !r.itl_ms.is_empty();
        let mut seq = 0;
        record_events(r, counting, &mut seq, &mut |e| {
            lo = lo.min(e.at_ms);
            hi = hi.max(e.at_ms);
        });
        total += seq;
    })?;
    let settings = SweepSettings { stream, chunked };
    let slices = if total as usize <= SLICE_EVENTS {
        vec![(0, BUCKETS)]
    } else {
        slices_by_time(path, settings, lo, hi)?
    };
    let mut line = SweepLine::new(window_ms.0, window_ms.1);
    for (from, to) in slices {
        let mut events: Vec<Event> = Vec::new();
        let mut seq = 0;
        for_each_record(path, |r| {
            record_events(r, settings, &mut seq, &mut |e| {
                if (from..to).contains(&bucket(e.at_ms, lo, hi)) {
                    events.push(e);
                }
            });
        })?;
        line.fold(&mut events);
    }
    Ok(line.finish())
}

/// Runs of consecutive buckets holding at most [`SLICE_EVENTS`] events each (a bucket holding
/// more is a slice of its own).
fn slices_by_time(path: &Path, settings: SweepSettings, lo: f64, hi: f64) -> Result<Vec<(usize, usize)>, String> {
    let mut counts = vec![0usize; BUCKETS];
    let mut seq = 0;
    for_each_record(path, |r| {
        record_events(r, settings, &mut seq, &mut |e| counts[bucket(e.at_ms, lo, hi)] += 1);
    })?;
    let mut slices = Vec::new();
    let (mut from, mut held) = (0, 0);
    for (i, n) in counts.iter().enumerate() {
        if held > 0 && held + n > SLICE_EVENTS {
            slices.push((from, i));
            (from, held) = (i, 0);
        }
        held += n;
    }
    slices.push((from, BUCKETS));
    Ok(slices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use speclens_shared::run::RequestRecord;
    use speclens_shared::sweepline::sweep_of;

    /// Records whose events span many slices give the figures of one fold in memory.
    #[test]
    fn slices_of_a_records_file_fold_as_one() {
        let records: Vec<RequestRecord> = (0..3000)
            .map(|i| RequestRecord {
                start_ms: i as f64 * 2.0,
                success: true,
                ttft_ms: Some(5.0 + (i % 7) as f64),
                e2el_ms: Some(5.0 + (i % 7) as f64 + 200.0),
                itl_ms: vec![1.0; 200],
                input_tokens: 30 + i % 11,
                output_tokens: 201,
                ..RequestRecord::default()
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let text: String = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(&path, text).unwrap();
        let window = (0.0, 6300.0);
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let settings = SweepSettings {
            stream: true,
            chunked: true,
        };
        let mut seq = 0;
        for r in &records {
            record_events(r, settings, &mut seq, &mut |e| {
                lo = lo.min(e.at_ms);
                hi = hi.max(e.at_ms);
            });
        }
        assert!(seq as usize > SLICE_EVENTS, "{seq} events: more than one slice");
        assert!(slices_by_time(&path, settings, lo, hi).unwrap().len() > 1);
        let sliced = sweep_of_records(&path, true, window).unwrap();
        let whole = sweep_of(&records, true, window);
        for (a, b) in sliced.iter().zip(&whole) {
            let near = |x: f64, y: f64| (x - y).abs() <= 1e-9 * y.abs().max(1.0);
            assert!(
                near(a.avg, b.avg) && near(a.max, b.max) && near(a.p50, b.p50) && near(a.p99, b.p99),
                "{a:?} against {b:?}"
            );
        }
    }
}
