//! AIPerf's time-weighted ("sweep-line") figures of a run (docs/METRICS.md §7.3): how many
//! requests were in flight, in prefill and in decode, the tokens per second each phase
//! produced and the tokens held, each a step function of time drawn from the records'
//! timestamps and summarised over the window by time (mean, percentiles, extremes). Events are
//! folded in time order in batches, so a caller can feed a long run slice by slice in bounded
//! memory; the time-weighted distributions are kept exactly up to [`EXACT_SEGMENTS`] values,
//! then in an HDR histogram, as [`crate::sample::Sample`] keeps its values.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::run::record::RequestRecord;

/// Distinct values a time-weighted distribution keeps exactly before a histogram takes over.
pub const EXACT_SEGMENTS: usize = 1 << 15;

/// Histogram units per value unit (millionths of a request, a token or a token per
/// millisecond), so a rate of a few tokens per second keeps its 3 significant digits.
const SCALE: f64 = 1e6;

/// The step curves, by index in [`SweepLine`]'s values.
const CONCURRENCY: u8 = 0;
const DECODE_CONCURRENCY: u8 = 1;
const PREFILL_CONCURRENCY: u8 = 2;
/// Tokens per millisecond, decode (each chunk's share spread over the gap before it).
const DECODE_RATE: u8 = 3;
const PREFILL_RATE: u8 = 4;
/// Prefill plus decode spread evenly from the first token to the end.
const TOTAL_RATE: u8 = 5;
const TOKENS_IN_FLIGHT: u8 = 6;
const CURVES: usize = 7;

/// One change of one curve at one time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    /// Milliseconds after the run's start (the records' clock).
    pub at_ms: f64,
    curve: u8,
    delta: f64,
    /// +1 when a request's part in the curve begins, −1 when it ends, 0 otherwise: a curve
    /// with no part open once every event of a time is folded is exactly 0 (no residue of
    /// summed rates).
    opens: i8,
    /// Order of generation: ties at one time keep it (after ends, as AIPerf sorts).
    seq: u64,
}

/// Bytes of one event written out ([`Event::to_bytes`]).
pub const EVENT_BYTES: usize = 26;

impl Event {
    /// The event as bytes, for a caller that keeps events out of memory.
    pub fn to_bytes(&self) -> [u8; EVENT_BYTES] {
        let mut out = [0u8; EVENT_BYTES];
        out[..8].copy_from_slice(&self.at_ms.to_le_bytes());
        out[8..16].copy_from_slice(&self.delta.to_le_bytes());
        out[16..24].copy_from_slice(&self.seq.to_le_bytes());
        out[24] = self.curve;
        out[25] = self.opens as u8;
        out
    }

    /// An event back from [`Event::to_bytes`]; none for bytes no event wrote.
    pub fn from_bytes(b: &[u8; EVENT_BYTES]) -> Option<Event> {
        let f64_at = |i: usize| f64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let event = Event {
            at_ms: f64_at(0),
            delta: f64_at(8),
            seq: u64::from_le_bytes(b[16..24].try_into().unwrap_or_default()),
            curve: b[24],
            opens: b[25] as i8,
        };
        (usize::from(event.curve) < CURVES && (-1..=1).contains(&event.opens)).then_some(event)
    }

    /// The fold's order as one number: the time (its bits made to sort as the float does),
    /// ends before starts at one time, then the order of generation.
    fn order(&self) -> u128 {
        let bits = self.at_ms.to_bits();
        let time = if bits >> 63 == 1 { !bits } else { bits | 1 << 63 };
        let start = u128::from(self.delta > 0.0);
        (u128::from(time) << 64) | (start << 63) | u128::from(self.seq & (u64::MAX >> 1))
    }
}

/// What the run's settings decide about the curves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepSettings {
    /// Responses were streamed: only then is there a first token splitting prefill from decode.
    pub stream: bool,
    /// Some record of the window has gaps between chunks: decode rates and tokens in flight
    /// follow the chunks; else (AIPerf's fallback) they are spread evenly.
    pub chunked: bool,
}

/// Whether a record's response came in chunks with gaps between them (one such record in the
/// window makes [`SweepSettings::chunked`]).
pub fn has_chunk_gaps(r: &RequestRecord) -> bool {
    !r.warmup && r.success && !r.itl_ms.is_empty()
}

/// The events of one record, each numbered from `seq` (advanced past them). A warm-up record
/// has none; a failed one only enters the concurrency curve.
pub fn record_events(r: &RequestRecord, settings: SweepSettings, seq: &mut u64, out: &mut impl FnMut(Event)) {
    if r.warmup {
        return;
    }
    let mut emit = |at_ms: f64, curve: u8, delta: f64, opens: i8| {
        out(Event {
            at_ms,
            curve,
            delta,
            opens,
            seq: *seq,
        });
        *seq += 1;
    };
    let start = r.start_ms;
    let end = r.ended_ms();
    emit(start, CONCURRENCY, 1.0, 1);
    emit(end, CONCURRENCY, -1.0, -1);
    if !r.success {
        return;
    }
    let input = r.input_tokens as f64;
    let output = r.output_tokens as f64;
    let Some(first) = r.first_token_ms().filter(|_| settings.stream) else {
        return;
    };
    emit(first, DECODE_CONCURRENCY, 1.0, 1);
    emit(end, DECODE_CONCURRENCY, -1.0, -1);
    emit(start, PREFILL_CONCURRENCY, 1.0, 1);
    emit(first, PREFILL_CONCURRENCY, -1.0, -1);
    let prefill = first > start;
    if prefill {
        let rate = input / (first - start);
        for curve in [PREFILL_RATE, TOTAL_RATE] {
            emit(start, curve, rate, 1);
            emit(first, curve, -rate, -1);
        }
    }
    let decode = output >= 1.0;
    if decode && end > first {
        let rate = (output - 1.0) / (end - first);
        emit(first, TOTAL_RATE, rate, 1);
        emit(end, TOTAL_RATE, -rate, -1);
        if !settings.chunked {
            emit(first, DECODE_RATE, rate, 1);
            emit(end, DECODE_RATE, -rate, -1);
        }
    }
    // Tokens held: the prompt from the send, the output as it arrives, all freed at the end.
    let chunked = settings.chunked && decode && r.itl_ms.iter().any(|d| *d >= 0.0);
    if prefill {
        emit(start, TOKENS_IN_FLIGHT, input, 1);
    }
    // The output held by the end: all of it, but what a negative gap's chunk did not bring.
    let mut output_held = None;
    if chunked {
        emit(first, TOKENS_IN_FLIGHT, 1.0, if prefill { 0 } else { 1 });
        output_held = Some(chunk_events(r, first, end, output, &mut emit));
    } else if !settings.chunked && decode && end > first {
        emit(first, TOKENS_IN_FLIGHT, output, if prefill { 0 } else { 1 });
        output_held = Some(output);
    }
    let held = match (prefill, output_held) {
        (true, Some(out)) => input + out,
        (true, None) => input,
        (false, Some(out)) => out,
        (false, None) => return,
    };
    emit(end, TOKENS_IN_FLIGHT, -held, -1);
}

/// A streamed record's decode rate chunk by chunk (the tokens after the first shared evenly
/// between the chunks that took time, each over its gap) and its output arriving in the
/// tokens held; returns the output held by the end.
fn chunk_events(r: &RequestRecord, first: f64, end: f64, output: f64, emit: &mut impl FnMut(f64, u8, f64, i8)) -> f64 {
    let timed = r.itl_ms.iter().filter(|d| **d > 0.0).count();
    let per_chunk = if timed == 0 { 0.0 } else { (output - 1.0) / timed as f64 };
    let per_arrival = (output - 1.0) / r.itl_ms.len() as f64;
    // Just before the end: a chunk at the end itself would be freed before it is held.
    let last_held = end - (end.abs() * f64::EPSILON).max(f64::MIN_POSITIVE);
    let (mut offset, mut before) = (0.0, first);
    for gap in &r.itl_ms {
        offset += gap;
        let at = first + offset;
        if *gap > 0.0 {
            let rate = per_chunk / gap;
            emit(before, DECODE_RATE, rate, 1);
            emit(at, DECODE_RATE, -rate, -1);
        }
        // A negative gap (a clock that went back) brings nothing; the others still do.
        if *gap >= 0.0 {
            emit(at.min(last_held), TOKENS_IN_FLIGHT, per_arrival, 0);
        }
        before = at;
    }
    let arrived = r.itl_ms.iter().filter(|d| **d >= 0.0).count();
    if arrived == r.itl_ms.len() {
        output
    } else {
        1.0 + per_arrival * arrived as f64
    }
}

/// A time-weighted distribution: moments folded as segments come, the values kept exactly up
/// to a bound.
#[derive(Debug, Clone, Default)]
struct TimeWeighted {
    /// The latest value and how long it has held, folded in once the value changes (most
    /// curves keep their value over many segments).
    run: Option<(f64, f64)>,
    weight_ms: f64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    exact: Vec<(f64, f64)>,
    histogram: Option<Histogram<u64>>,
}

impl TimeWeighted {
    fn push(&mut self, v: f64, w_ms: f64) {
        if w_ms <= 0.0 || !v.is_finite() {
            return;
        }
        match &mut self.run {
            Some((held, w)) if *held == v => *w += w_ms,
            run => {
                if let Some((held, w)) = run.replace((v, w_ms)) {
                    self.fold(held, w);
                }
            }
        }
    }

    /// Fold the value held and its time into the statistics.
    fn flush(&mut self) {
        if let Some((v, w)) = self.run.take() {
            self.fold(v, w);
        }
    }

    fn fold(&mut self, v: f64, w_ms: f64) {
        if self.weight_ms == 0.0 {
            (self.min, self.max) = (v, v);
        }
        // West's weighted update of the mean and the sum of squares.
        self.weight_ms += w_ms;
        let delta = v - self.mean;
        self.mean += delta * w_ms / self.weight_ms;
        self.m2 += w_ms * delta * (v - self.mean);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if let Some(h) = &mut self.histogram {
            record(h, v, w_ms);
            return;
        }
        match self.exact.last_mut() {
            Some(last) if last.0 == v => last.1 += w_ms,
            _ => self.exact.push((v, w_ms)),
        }
        if self.exact.len() > EXACT_SEGMENTS {
            self.compact();
        }
    }

    /// Merge equal values; when too many distinct ones remain, move to the histogram.
    fn compact(&mut self) {
        self.exact.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.exact.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        if self.exact.len() > EXACT_SEGMENTS / 2 {
            let mut h = Histogram::new(3).expect("3 significant digits is a valid histogram");
            for (v, w) in self.exact.drain(..) {
                record(&mut h, v, w);
            }
            self.exact = Vec::new();
            self.histogram = Some(h);
        }
    }

    /// AIPerf's time-weighted percentile: the lowest value whose share of the time at or below
    /// it reaches `q` (no interpolation).
    fn quantile(&self, q: f64) -> f64 {
        if let Some(h) = &self.histogram {
            return (h.value_at_quantile(q) as f64 / SCALE).clamp(self.min, self.max);
        }
        let mut sorted = self.exact.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = sorted.iter().map(|s| s.1).sum();
        let mut cumulative = 0.0;
        for (v, w) in &sorted {
            cumulative += w;
            if cumulative / total >= q {
                return *v;
            }
        }
        sorted.last().map_or(0.0, |s| s.0)
    }

    fn figure(mut self, name: &SweepName) -> SweepFigure {
        self.flush();
        let scale = name.scale;
        let (avg, std, min, max, [p50, p90, p95, p99]) = if self.weight_ms > 0.0 {
            let p = [0.50, 0.90, 0.95, 0.99].map(|q| self.quantile(q) * scale);
            let std = (self.m2 / self.weight_ms).max(0.0).sqrt();
            (self.mean * scale, std * scale, self.min * scale, self.max * scale, p)
        } else {
            (0.0, 0.0, 0.0, 0.0, [0.0; 4])
        };
        SweepFigure {
            tag: name.tag,
            header: name.header,
            unit: name.unit,
            avg,
            p50,
            p90,
            p95,
            p99,
            min,
            max,
            std,
        }
    }
}

/// Record `v` for `w_ms` of time: millionths of the value, weighted in microseconds.
fn record(h: &mut Histogram<u64>, v: f64, w_ms: f64) {
    let units = (v * SCALE).round().clamp(0.0, (u64::MAX >> 2) as f64) as u64;
    let weight = (w_ms * 1e3).round().max(1.0) as u64;
    let _ = h.record_n(units, weight);
}

/// One figure's name as AIPerf writes it, and the factor from the curve's unit to it.
pub struct SweepName {
    pub tag: &'static str,
    pub header: &'static str,
    pub unit: &'static str,
    scale: f64,
}

const fn name(tag: &'static str, header: &'static str, unit: &'static str, scale: f64) -> SweepName {
    SweepName {
        tag,
        header,
        unit,
        scale,
    }
}

/// Tokens per millisecond to tokens per second.
const PER_S: f64 = 1e3;

/// AIPerf's sweep-line figures in its export order: the nine over the whole window, then the
/// five over the time their phase was active.
pub const SWEEP_NAMES: [SweepName; 14] = [
    name("effective_concurrency", "Effective Concurrency", "requests", 1.0),
    name(
        "effective_decode_throughput",
        "Effective Decode Throughput",
        "tokens/sec",
        PER_S,
    ),
    name(
        "effective_prefill_throughput",
        "Effective Prefill Throughput",
        "tokens/sec",
        PER_S,
    ),
    name(
        "effective_decode_concurrency",
        "Effective Decode Concurrency",
        "requests",
        1.0,
    ),
    name(
        "effective_prefill_concurrency",
        "Effective Prefill Concurrency",
        "requests",
        1.0,
    ),
    name(
        "effective_total_throughput",
        "Effective Total Throughput",
        "tokens/sec",
        PER_S,
    ),
    name(
        "effective_decode_throughput_per_user",
        "Effective Decode Throughput Per User",
        "tokens/sec/user",
        PER_S,
    ),
    name(
        "effective_prefill_throughput_per_user",
        "Effective Prefill Throughput Per User",
        "tokens/sec/user",
        PER_S,
    ),
    name("tokens_in_flight", "Tokens In Flight", "tokens", 1.0),
    name(
        "active_decode_throughput",
        "Active Decode Throughput",
        "tokens/sec",
        PER_S,
    ),
    name(
        "active_prefill_throughput",
        "Active Prefill Throughput",
        "tokens/sec",
        PER_S,
    ),
    name(
        "active_decode_throughput_per_user",
        "Active Decode Throughput Per User",
        "tokens/sec/user",
        PER_S,
    ),
    name(
        "active_prefill_throughput_per_user",
        "Active Prefill Throughput Per User",
        "tokens/sec/user",
        PER_S,
    ),
    name(
        "active_total_throughput",
        "Active Total Throughput",
        "tokens/sec",
        PER_S,
    ),
];

/// One time-weighted figure: AIPerf's statistics of a sweep-line metric (no count, no sum,
/// only these four percentiles).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepFigure {
    #[serde(skip)]
    pub tag: &'static str,
    #[serde(skip)]
    pub header: &'static str,
    pub unit: &'static str,
    pub avg: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    pub std: f64,
}

/// The curves folded so far and their statistics over the window.
#[derive(Debug, Clone)]
pub struct SweepLine {
    window_ms: (f64, f64),
    values: [f64; CURVES],
    open: [i64; CURVES],
    last_ms: Option<f64>,
    stats: [TimeWeighted; 14],
}

impl SweepLine {
    /// The window (ms on the records' clock) the statistics cover: time before the first send
    /// and after the last answer counts, at zero, as AIPerf counts it.
    pub fn new(window_start_ms: f64, window_end_ms: f64) -> SweepLine {
        SweepLine {
            window_ms: (window_start_ms, window_end_ms),
            values: [0.0; CURVES],
            open: [0; CURVES],
            last_ms: None,
            stats: Default::default(),
        }
    }

    /// Fold a batch of events, none earlier than any folded before (a late one counts from the
    /// last time folded).
    pub fn fold(&mut self, events: &mut [Event]) {
        // Every key differs (the sequence number), so an unstable sort orders them the same.
        events.sort_unstable_by_key(Event::order);
        for e in events.iter() {
            let at = self.last_ms.map_or(e.at_ms, |last| e.at_ms.max(last));
            let from = self.last_ms.unwrap_or(self.window_ms.0);
            if at > from {
                self.settle();
                self.close(from, at);
            }
            self.last_ms = Some(at);
            let c = e.curve as usize;
            self.values[c] += e.delta;
            self.open[c] += i64::from(e.opens);
        }
    }

    /// Once every event of a time is folded: a curve with no part open is exactly 0 (an end
    /// folded before a start of the same time must not clear the others' values).
    fn settle(&mut self) {
        for (value, open) in self.values.iter_mut().zip(self.open) {
            if open <= 0 {
                *value = 0.0;
            }
        }
    }

    /// The segment `[from, to)` at the current values, clipped to the window.
    fn close(&mut self, from: f64, to: f64) {
        let (start, end) = self.window_ms;
        let w = to.min(end) - from.max(start);
        if w <= 0.0 {
            return;
        }
        let v = self.values;
        let per = |num: f64, den: f64| if den > 0.0 { num / den } else { 0.0 };
        let decode_per_user = per(v[DECODE_RATE as usize], v[DECODE_CONCURRENCY as usize]);
        let prefill_per_user = per(v[PREFILL_RATE as usize], v[PREFILL_CONCURRENCY as usize]);
        let whole = [
            v[CONCURRENCY as usize],
            v[DECODE_RATE as usize],
            v[PREFILL_RATE as usize],
            v[DECODE_CONCURRENCY as usize],
            v[PREFILL_CONCURRENCY as usize],
            v[TOTAL_RATE as usize],
            decode_per_user,
            prefill_per_user,
            v[TOKENS_IN_FLIGHT as usize],
        ];
        for (stat, value) in self.stats.iter_mut().zip(whole) {
            stat.push(value, w);
        }
        let decoding = v[DECODE_CONCURRENCY as usize] > 0.0;
        let prefilling = v[PREFILL_CONCURRENCY as usize] > 0.0;
        let active = [
            (decoding, v[DECODE_RATE as usize]),
            (prefilling, v[PREFILL_RATE as usize]),
            (decoding, decode_per_user),
            (prefilling, prefill_per_user),
            (v[CONCURRENCY as usize] > 0.0, v[TOTAL_RATE as usize]),
        ];
        for (stat, (on, value)) in self.stats[9..].iter_mut().zip(active) {
            if on {
                stat.push(value, w);
            }
        }
    }

    /// The fourteen figures, once every event is folded; none when there was no event (a
    /// window without a measured request), as AIPerf writes none.
    pub fn finish(mut self) -> Vec<SweepFigure> {
        let Some(from) = self.last_ms else {
            return Vec::new();
        };
        self.settle();
        self.close(from, self.window_ms.1);
        self.stats
            .into_iter()
            .zip(SWEEP_NAMES.iter())
            .map(|(s, n)| s.figure(n))
            .collect()
    }
}

/// The figures of records held in memory (a test's, a short run's).
pub fn sweep_of(records: &[RequestRecord], stream: bool, window_ms: (f64, f64)) -> Vec<SweepFigure> {
    let settings = SweepSettings {
        stream,
        chunked: records.iter().any(has_chunk_gaps),
    };
    let mut events = Vec::new();
    let mut seq = 0;
    for r in records {
        record_events(r, settings, &mut seq, &mut |e| events.push(e));
    }
    let mut line = SweepLine::new(window_ms.0, window_ms.1);
    line.fold(&mut events);
    line.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(start_ms: f64, ttft_ms: f64, itl_ms: &[f64], input: u64, output: u64) -> RequestRecord {
        RequestRecord {
            start_ms,
            success: true,
            ttft_ms: Some(ttft_ms),
            e2el_ms: Some(ttft_ms + itl_ms.iter().sum::<f64>()),
            itl_ms: itl_ms.to_vec(),
            input_tokens: input,
            output_tokens: output,
            ..RequestRecord::default()
        }
    }

    fn by_tag<'a>(figures: &'a [SweepFigure], tag: &str) -> &'a SweepFigure {
        figures.iter().find(|f| f.tag == tag).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// Two requests over a 100 ms window, worked by hand.
    /// A: sent at 10, first token at 20 (100 prompt tokens), chunks at 30 and 50, 5 tokens.
    /// B: sent at 30, first token at 40 (50 prompt tokens), one chunk at 60, 3 tokens.
    #[test]
    fn two_requests_worked_by_hand() {
        let records = [
            record(10.0, 10.0, &[10.0, 20.0], 100, 5),
            record(30.0, 10.0, &[20.0], 50, 3),
        ];
        let f = sweep_of(&records, true, (0.0, 100.0));
        // In flight: A on [10, 50), B on [30, 60): 1·20 + 2·20 + 1·10 = 70 request-ms.
        let conc = by_tag(&f, "effective_concurrency");
        assert!(close(conc.avg, 0.7), "{conc:?}");
        assert_eq!((conc.min, conc.max), (0.0, 2.0));
        // 0 for 50 ms, 1 for 30 ms, 2 for 20 ms: the median is 0, p90 and up 2.
        assert_eq!((conc.p50, conc.p90, conc.p99), (0.0, 2.0, 2.0));
        // Decode: A's 4 tokens after the first over its two chunks (2 each: 0.2/ms on
        // [20,30), 0.1/ms on [30,50)); B's 2 over one (0.1/ms on [40,60)). Integral 6 tokens
        // over 100 ms: 60 tokens/s on average.
        let decode = by_tag(&f, "effective_decode_throughput");
        assert!(close(decode.avg, 60.0), "{decode:?}");
        assert!(close(decode.max, 200.0), "{decode:?}");
        // Prefill: 100 tokens over [10,20), 50 over [30,40): 150 tokens in 100 ms.
        assert!(close(by_tag(&f, "effective_prefill_throughput").avg, 1500.0));
        // Total: prefill plus decode spread evenly (A 4 over [20,50), B 2 over [40,60)).
        assert!(close(by_tag(&f, "effective_total_throughput").avg, 1560.0));
        // Decode concurrency: A [20,50), B [40,60) = 50 request-ms; prefill: 20.
        let (d, p) = (
            by_tag(&f, "effective_decode_concurrency").avg,
            by_tag(&f, "effective_prefill_concurrency").avg,
        );
        assert!(close(d, 0.5) && close(p, 0.2) && close(d + p, conc.avg));
        // Per user while decoding: [20,30) 0.2 ÷ 1, [30,40) 0.1 ÷ 1, [40,50) (0.1 + 0.1) ÷ 2,
        // [50,60) 0.1 ÷ 1 tokens/ms: 125 tokens/s over the 40 ms, 100 at the median.
        let per_user = by_tag(&f, "active_decode_throughput_per_user");
        assert!(close(per_user.avg, 125.0), "{per_user:?}");
        assert_eq!((per_user.p50, per_user.max), (100.0, 200.0));
        // Active decode: the rate over the 40 ms something decoded: 6 tokens in 40 ms.
        assert!(close(by_tag(&f, "active_decode_throughput").avg, 150.0));
        // Active prefill: 150 tokens over the 20 ms something prefilled.
        let active_prefill = by_tag(&f, "active_prefill_throughput");
        assert!(close(active_prefill.avg, 7500.0) && close(active_prefill.min, 5000.0));
        // Tokens held: A 100 from 10, +1 at 20, +2 at 30, +2 just before 50 (its last chunk,
        // clamped before its end), all freed at 50; B 50 from 30, +1 at 40.
        let held = by_tag(&f, "tokens_in_flight");
        assert!(close(held.max, 105.0 + 51.0), "{held:?}");
    }

    /// A request whose parts open and close at one instant (first token at its send, its one
    /// chunk and its end with it) leaves the tokens another request holds as they were: an end
    /// folded before a start of the same time does not clear the curve.
    #[test]
    fn an_instant_request_does_not_clear_what_others_hold() {
        // A holds 10 from 0, 11 from 10, 12 from 30; B comes and goes at 20.
        let a = record(0.0, 10.0, &[20.0, 20.0], 10, 3);
        let b = record(20.0, 0.0, &[0.0], 5, 2);
        let f = sweep_of(&[a, b], true, (0.0, 60.0));
        let held = by_tag(&f, "tokens_in_flight");
        assert!(held.min >= 0.0, "{held:?}");
        assert!(
            (held.avg - (10.0 * 10.0 + 11.0 * 20.0 + 12.0 * 20.0) / 60.0).abs() < 1e-6,
            "{held:?}"
        );
    }

    #[test]
    fn folding_in_slices_equals_folding_at_once() {
        let records: Vec<RequestRecord> = (0..40)
            .map(|i| record(i as f64 * 3.0, 5.0 + (i % 3) as f64, &[2.0, 0.0, 4.0, 1.5], 20 + i, 6))
            .collect();
        let whole = sweep_of(&records, true, (0.0, 200.0));
        let settings = SweepSettings {
            stream: true,
            chunked: true,
        };
        let mut events = Vec::new();
        let mut seq = 0;
        for r in &records {
            record_events(r, settings, &mut seq, &mut |e| events.push(e));
        }
        let mut line = SweepLine::new(0.0, 200.0);
        for (from, to) in [(f64::MIN, 50.0), (50.0, 51.5), (51.5, f64::MAX)] {
            let mut slice: Vec<Event> = events
                .iter()
                .filter(|e| e.at_ms >= from && e.at_ms < to)
                .copied()
                .collect();
            line.fold(&mut slice);
        }
        let sliced = line.finish();
        for (a, b) in whole.iter().zip(&sliced) {
            assert!(
                close(a.avg, b.avg) && a.p50 == b.p50 && a.p99 == b.p99 && a.max == b.max,
                "{a:?} {b:?}"
            );
        }
    }

    #[test]
    fn a_failed_request_counts_in_flight_only_and_an_empty_run_is_zero() {
        // As the collector writes one: no latency, its end where it failed.
        let failed = RequestRecord {
            start_ms: 0.0,
            end_ms: Some(50.0),
            ..RequestRecord::default()
        };
        let f = sweep_of(&[failed], true, (0.0, 100.0));
        assert!(close(by_tag(&f, "effective_concurrency").avg, 0.5));
        assert_eq!(by_tag(&f, "effective_decode_throughput").max, 0.0);
        assert_eq!(by_tag(&f, "active_decode_throughput").avg, 0.0);
        // No measured request (none, or warm-up only): no figures, as AIPerf writes none.
        assert!(sweep_of(&[], true, (0.0, 0.0)).is_empty());
        let warm = RequestRecord {
            warmup: true,
            ..record(0.0, 1.0, &[1.0], 10, 2)
        };
        assert!(sweep_of(&[warm], true, (0.0, 10.0)).is_empty());
    }

    #[test]
    fn without_chunk_gaps_decode_is_spread_evenly_and_the_histogram_keeps_the_mean() {
        // Non-chunked: one request, 11 tokens, first at 10, end at 60: 10 tokens over 50 ms.
        let one = RequestRecord {
            start_ms: 0.0,
            success: true,
            ttft_ms: Some(10.0),
            e2el_ms: Some(60.0),
            input_tokens: 40,
            output_tokens: 11,
            ..RequestRecord::default()
        };
        let f = sweep_of(&[one], true, (0.0, 100.0));
        assert!(close(by_tag(&f, "effective_decode_throughput").max, 200.0));
        assert!(close(by_tag(&f, "tokens_in_flight").max, 51.0));
        // Many distinct values: past the exact bound the mean and extremes stay exact.
        let mut tw = TimeWeighted::default();
        for i in 0..(EXACT_SEGMENTS * 3) {
            tw.push(i as f64, 1.0);
        }
        tw.flush();
        assert!(tw.histogram.is_some());
        let n = (EXACT_SEGMENTS * 3) as f64;
        assert!(close(tw.mean, (n - 1.0) / 2.0));
        let median = tw.quantile(0.5);
        assert!((median - n / 2.0).abs() / (n / 2.0) < 2e-3, "{median}");
    }
}
