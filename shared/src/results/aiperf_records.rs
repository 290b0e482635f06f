//! AIPerf's per-record export of a run (docs/FORMATS.md §3): one `profile_export.jsonl` line
//! per measured request in AIPerf's layout (its record metadata, its per-request metrics as
//! `{value, unit}`, the error of a failed one), so AIPerf's own tooling reads speclens runs.

use serde_json::{json, Map, Value};

use crate::request::http_trace::HTTP_NAMES;
use crate::run::record::{RequestRecord, UsageRecord};

/// One line of `profile_export.jsonl` for a measured request (AIPerf writes no warm-up
/// records; `None` for one): AIPerf's `metadata` (every field its record model requires), its
/// per-request `metrics` as `{value, unit}`, and `error` for a failed request.
/// `run_start_unix_ns` is the wall-clock time of the run's start, from which `start_ms` counts.
pub fn record_line(r: &RequestRecord, run_start_unix_ns: u64, stream: bool) -> Option<Value> {
    if r.warmup {
        return None;
    }
    let metadata = record_metadata(r, run_start_unix_ns);
    let mut metrics = Map::new();
    let mut put = |tag: &str, value: Value, unit: &str| {
        metrics.insert(tag.into(), json!({"value": value, "unit": unit}));
    };
    let mut line = Map::new();
    if !r.success {
        put("error_isl", r.input_tokens.into(), "tokens");
        line.insert("metadata".into(), Value::Object(metadata));
        line.insert("metrics".into(), Value::Object(metrics));
        let kind = r.error_kind.map_or("error", |k| k.as_str());
        line.insert(
            "error".into(),
            json!({"type": kind, "message": r.error.clone().unwrap_or_default()}),
        );
        return Some(Value::Object(line));
    }
    put("input_sequence_length", r.input_tokens.into(), "tokens");
    put("output_sequence_length", r.output_tokens.into(), "tokens");
    if r.output_tokens > 0 {
        put("output_token_count", r.output_tokens.into(), "tokens");
    }
    if let Some(latency) = r.aiperf_latency_ms() {
        put("request_latency", latency.into(), "ms");
    }
    if let Some(v) = crate::run::record::aiperf_e2e_output_tokens_per_s(r) {
        put("e2e_output_token_throughput", v.into(), "tokens/sec/user");
    }
    if let Some(u) = &r.usage {
        usage_values(u, &mut put);
    }
    if let (true, Some(ttft)) = (stream, r.ttft_ms) {
        streamed_values(r, ttft, &mut put);
    }
    transport_values(r, &mut put);
    line.insert("metadata".into(), Value::Object(metadata));
    line.insert("metrics".into(), Value::Object(metrics));
    Some(Value::Object(line))
}

/// AIPerf's `metadata` of a record: its ids, its phase and its times in wall-clock
/// nanoseconds from the run's start.
fn record_metadata(r: &RequestRecord, run_start_unix_ns: u64) -> Map<String, Value> {
    // Offsets in whole nanoseconds added to the integer start: no f64 rounding of 1.7e18.
    let ns = |ms: f64| {
        if ms.is_finite() && ms > 0.0 {
            (ms * 1e6).round() as u64
        } else {
            0
        }
    };
    let start_ns = run_start_unix_ns.saturating_add(ns(r.start_ms));
    // When the exchange ended: its last bytes, or its failure.
    let end_ns = run_start_unix_ns.saturating_add(ns(r.ended_ms())).max(start_ns);
    let mut metadata = Map::new();
    metadata.insert("session_num".into(), r.request_id.into());
    let x_request_id = match r.turn {
        Some(turn) => format!("speclens-{}-{turn}", r.request_id),
        None => format!("speclens-{}", r.request_id),
    };
    metadata.insert("x_request_id".into(), x_request_id.into());
    metadata.insert("turn_index".into(), r.turn.unwrap_or(0).into());
    if let Some(credit) = r.credit_ms {
        metadata.insert(
            "credit_issued_ns".into(),
            run_start_unix_ns.saturating_add(ns(credit)).into(),
        );
    }
    metadata.insert("request_start_ns".into(), start_ns.into());
    metadata.insert("request_end_ns".into(), end_ns.into());
    metadata.insert("worker_id".into(), "speclens".into());
    metadata.insert("record_processor_id".into(), "speclens".into());
    metadata.insert("benchmark_phase".into(), "profiling".into());
    metadata.insert(
        "was_cancelled".into(),
        (r.error_kind == Some(crate::run::record::ErrorKind::Cancelled)).into(),
    );
    metadata
}

/// The server's usage counts of a record and how far each is from the client's own count.
fn usage_values(u: &UsageRecord, put: &mut impl FnMut(&str, Value, &str)) {
    let counts = [
        ("usage_prompt_tokens", u.prompt_tokens, u.client_prompt_tokens),
        (
            "usage_completion_tokens",
            u.completion_tokens,
            u.client_completion_tokens,
        ),
    ];
    for (tag, count, client) in counts {
        if let Some(count) = count {
            put(tag, count.into(), "tokens");
            if let Some(pct) = crate::run::record::usage_diff_pct(count, client) {
                put(&format!("{tag}_diff_pct"), pct.into(), "%");
            }
        }
    }
    if let Some(total) = u.total_tokens {
        put("usage_total_tokens", total.into(), "tokens");
    }
}

/// A record's length against its `max_tokens` and its HTTP timings.
fn transport_values(r: &RequestRecord, put: &mut impl FnMut(&str, Value, &str)) {
    if let Some(pct) = crate::run::record::osl_mismatch_pct(r) {
        put("osl_mismatch_diff_pct", pct.into(), "%");
    }
    let Some(trace) = &r.http else { return };
    for ((tag, _, unit), value) in HTTP_NAMES.iter().zip(trace.values()) {
        // Counts stay whole numbers, as AIPerf writes them.
        let value = match (value, *unit) {
            (Some(v), "count" | "ratio") => Value::from(v as u64),
            (Some(v), _) => Value::from(v),
            (None, _) => continue,
        };
        put(tag, value, unit);
    }
}

/// The per-record metrics AIPerf computes only for a streamed response.
fn streamed_values(r: &RequestRecord, ttft: f64, put: &mut impl FnMut(&str, Value, &str)) {
    {
        put("time_to_first_token", ttft.into(), "ms");
        put("time_to_first_output_token", ttft.into(), "ms");
        if let Some(v) = crate::run::record::aiperf_decode_ms(r) {
            put("decode_duration", v.into(), "ms");
        }
        if let Some(v) = crate::run::record::aiperf_prefill_tokens_per_s(r) {
            put("prefill_throughput_per_user", v.into(), "tokens/sec/user");
        }
        if let Some(gap) = r.itl_ms.first() {
            put("time_to_second_token", (*gap).into(), "ms");
            put("inter_chunk_latency", r.itl_ms.clone().into(), "ms");
        }
        if let Some(itl_ms) = r.aiperf_itl_ms() {
            put("inter_token_latency", itl_ms.into(), "ms");
            if itl_ms > 0.0 {
                put(
                    "output_token_throughput_per_user",
                    (1e3 / itl_ms).into(),
                    "tokens/sec/user",
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::record::ErrorKind;

    /// A record sent 10 ms into the run.
    fn at_10_ms(ttft: f64, e2el: f64, itl: Vec<f64>, tokens: u64) -> RequestRecord {
        RequestRecord {
            start_ms: 10.0,
            ..crate::run::record::tests::record(ttft, e2el, itl, tokens)
        }
    }

    #[test]
    fn record_lines_have_aiperf_s_layout() {
        let start = 1_764_583_200_123_456_789u64;
        let line = record_line(&at_10_ms(100.0, 200.0, vec![40.0, 60.0], 5), start, true).unwrap();
        assert_eq!(
            line["metadata"]["request_start_ns"],
            start + 10_000_000,
            "to the nanosecond"
        );
        assert_eq!(line["metadata"]["request_end_ns"], start + 210_000_000);
        // Every field AIPerf's record metadata requires.
        for key in [
            "session_num",
            "x_request_id",
            "turn_index",
            "request_start_ns",
            "request_end_ns",
            "worker_id",
            "record_processor_id",
            "benchmark_phase",
            "was_cancelled",
        ] {
            assert!(line["metadata"].get(key).is_some(), "{key}");
        }
        assert_eq!(line["metadata"]["benchmark_phase"], "profiling");
        assert_eq!(
            line["metrics"]["inter_token_latency"],
            json!({"value": 25.0, "unit": "ms"})
        );
        assert_eq!(line["metrics"]["inter_chunk_latency"]["value"], json!([40.0, 60.0]));
        assert!(line.get("error").is_none());
        let mut failed = at_10_ms(0.0, 0.0, vec![], 0);
        (failed.success, failed.error_kind, failed.error, failed.e2el_ms) =
            (false, Some(ErrorKind::Cancelled), Some("stopped".into()), None);
        let line = record_line(&failed, 0, true).unwrap();
        assert_eq!(line["metadata"]["was_cancelled"], true);
        assert_eq!(line["metadata"]["request_end_ns"], line["metadata"]["request_start_ns"]);
        assert_eq!(line["metrics"]["error_isl"]["value"], 10);
        assert_eq!(line["error"]["type"], "cancelled");
        let mut warm = at_10_ms(1.0, 2.0, vec![], 2);
        warm.warmup = true;
        assert_eq!(record_line(&warm, 0, true), None);
    }
}
