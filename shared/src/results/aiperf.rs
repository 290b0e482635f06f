//! AIPerf's exports of a run (docs/FORMATS.md §3): `profile_export_speclens.json` and `.csv`
//! with AIPerf's metric tags, units and statistics, and one `profile_export.jsonl` line per
//! request in AIPerf's per-record layout, so AIPerf's own tooling reads speclens runs. The
//! definitions follow AIPerf's code (docs/METRICS.md §7): `inter_token_latency` is per request,
//! (request latency − TTFT) ÷ (output tokens − 1); the gaps between chunks are
//! `inter_chunk_latency`; streaming figures are left out of a run that did not stream.

use serde_json::{json, Map, Value};

use crate::request::http_trace::HTTP_NAMES;
pub use crate::results::aiperf_records::record_line;
use crate::run::aggregate::{MetricStats, SpecSummary, EXPORT_PERCENTILES};
use crate::run::record::{RunMetrics, RunTally, UsageTally};
use crate::run::time_weighted::SweepFigure;
use crate::sample::Sample;

/// What the export says of the run beside its figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// Whether responses were streamed (AIPerf computes its streaming metrics only then).
    pub stream: bool,
    /// Whether a signal stopped the run before it finished (AIPerf's `was_cancelled`).
    pub was_cancelled: bool,
    /// The window's first send and last completion, as AIPerf writes them
    /// (`2025-10-17T20:22:08.939332`; speclens writes UTC).
    pub start_time: String,
    pub end_time: String,
    pub speclens_version: String,
    /// The run's settings (`result.json`'s `config`).
    pub input_config: Value,
    /// AIPerf's `benchmark_id`: 12 hex digits naming this run.
    pub benchmark_id: String,
    /// The command that ran it, secrets replaced (AIPerf's `run_info.cli_command`).
    pub cli_command: String,
    /// Whether every request of the window was sent and answered (AIPerf's `is_complete`):
    /// false for a run a signal stopped or whose records were cut.
    pub is_complete: bool,
}

/// The version of AIPerf's export schema whose keys the file follows (`schema_version`).
pub const SCHEMA_VERSION: &str = "1.4";

/// One per-request metric: its tag, AIPerf's header, unit, and whether AIPerf computes it only
/// for streamed responses.
struct RecordMetric<'a> {
    tag: &'static str,
    header: &'static str,
    unit: &'static str,
    streaming_only: bool,
    sample: &'a Sample,
}

/// One metric's row.
fn metric<'a>(
    tag: &'static str,
    header: &'static str,
    unit: &'static str,
    streaming_only: bool,
    sample: &'a Sample,
) -> RecordMetric<'a> {
    RecordMetric {
        tag,
        header,
        unit,
        streaming_only,
        sample,
    }
}

/// Every per-request metric: the streamed ones, then the others.
fn record_metrics(tally: &RunTally) -> Vec<RecordMetric<'_>> {
    let mut out = Vec::from(streamed_metrics(tally));
    out.extend(other_metrics(tally));
    out.extend(due_metrics(tally));
    for ((tag, header, unit), sample) in HTTP_NAMES.iter().zip(&tally.http) {
        out.push(metric(tag, header, unit, false, sample));
    }
    // Written once a request failed (an empty sample writes nothing).
    out.push(metric(
        "error_isl",
        "Error Input Sequence Length",
        "tokens",
        false,
        &tally.error_isl,
    ));
    out
}

/// The figures of when requests were due (AIPerf's coordinated-omission-aware latencies, of
/// failed requests too) and of the output length against the `max_tokens` asked for.
fn due_metrics(tally: &RunTally) -> [RecordMetric<'_>; 3] {
    [
        metric(
            "credit_to_start_latency",
            "Credit-to-Start Latency",
            "ms",
            false,
            &tally.credit_to_start_ms,
        ),
        metric(
            "effective_latency",
            "Effective Latency (CO-aware)",
            "ms",
            false,
            &tally.effective_latency_ms,
        ),
        metric(
            "osl_mismatch_diff_pct",
            "OSL Mismatch Diff %",
            "%",
            false,
            &tally.osl_mismatch_pct,
        ),
    ]
}

/// The per-request metrics AIPerf computes only for streamed responses (the first six).
fn streamed_metrics(tally: &RunTally) -> [RecordMetric<'_>; 6] {
    let m = metric;
    [
        m("time_to_first_token", "Time to First Token", "ms", true, &tally.ttft_ms),
        m(
            "time_to_second_token",
            "Time to Second Token",
            "ms",
            true,
            &tally.ttst_ms,
        ),
        // speclens's first token is the first chunk with generated text: AIPerf's first output token.
        m(
            "time_to_first_output_token",
            "Time to First Output Token",
            "ms",
            true,
            &tally.ttft_ms,
        ),
        m(
            "inter_token_latency",
            "Inter Token Latency",
            "ms",
            true,
            &tally.aiperf_itl_ms,
        ),
        m("inter_chunk_latency", "Inter Chunk Latency", "ms", true, &tally.itl_ms),
        m(
            "output_token_throughput_per_user",
            "Output Token Throughput Per User",
            "tokens/sec/user",
            true,
            &tally.tokens_per_s_per_user,
        ),
    ]
}

/// The other per-request metrics (two of them streamed only too).
fn other_metrics(tally: &RunTally) -> [RecordMetric<'_>; 12] {
    let m = metric;
    [
        m(
            "request_latency",
            "Request Latency",
            "ms",
            false,
            &tally.aiperf_latency_ms,
        ),
        m("decode_duration", "Decode Duration", "ms", true, &tally.decode_ms),
        m(
            "e2e_output_token_throughput",
            "E2E Output Token Throughput",
            "tokens/sec/user",
            false,
            &tally.e2e_output_tokens_per_s,
        ),
        m(
            "prefill_throughput_per_user",
            "Prefill Throughput Per User",
            "tokens/sec/user",
            true,
            &tally.prefill_tokens_per_s_per_user,
        ),
        m(
            "input_sequence_length",
            "Input Sequence Length",
            "tokens",
            false,
            &tally.input_lens,
        ),
        m(
            "output_sequence_length",
            "Output Sequence Length",
            "tokens",
            false,
            &tally.output_lens,
        ),
        m(
            "output_token_count",
            "Output Token Count",
            "tokens",
            false,
            &tally.output_counts,
        ),
        // The server's `usage` and its distance from speclens's own count (cl100k_base, where
        // AIPerf counts with the model's tokenizer).
        m(
            "usage_prompt_tokens",
            "Usage Prompt Tokens",
            "tokens",
            false,
            &tally.usage.prompt_tokens,
        ),
        m(
            "usage_completion_tokens",
            "Usage Completion Tokens",
            "tokens",
            false,
            &tally.usage.completion_tokens,
        ),
        m(
            "usage_total_tokens",
            "Usage Total Tokens",
            "tokens",
            false,
            &tally.usage.total_tokens,
        ),
        m(
            "usage_prompt_tokens_diff_pct",
            "Usage Prompt Diff",
            "%",
            false,
            &tally.usage.prompt_diff_pct,
        ),
        m(
            "usage_completion_tokens_diff_pct",
            "Usage Completion Diff %",
            "%",
            false,
            &tally.usage.completion_diff_pct,
        ),
    ]
}

/// AIPerf's CSV name of a metric: `Header (unit)`, the unit left out for plain counts.
fn csv_name(header: &str, unit: &str) -> String {
    if unit == "requests" || unit == "count" {
        header.to_string()
    } else {
        format!("{header} ({unit})")
    }
}

/// AIPerf's error-adjusted latencies (`adj_<tag>`, written once a request failed): the
/// successful requests' values with one +∞ per failure, percentiles by the nearest rank (numpy's
/// `nearest`, ties to even), so a percentile past the successes is ∞ (`null` in JSON, `inf` in
/// the CSV); the mean, sum and maximum are ∞, there is no deviation. Tag, JSON and CSV row.
fn adjusted_metrics(tally: &RunTally, stream: bool) -> Vec<(String, Value, String)> {
    if tally.failed == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for metric in record_metrics(tally) {
        let adjusted = [
            "request_latency",
            "time_to_first_token",
            "inter_token_latency",
            "decode_duration",
        ];
        if !adjusted.contains(&metric.tag) || (metric.streaming_only && !stream) || metric.sample.is_empty() {
            continue;
        }
        let successes = metric.sample.len() as usize;
        let n = successes + tally.failed as usize;
        let ranks: Vec<usize> = EXPORT_PERCENTILES
            .iter()
            .map(|q| round_half_even(f64::from(*q) / 100.0 * (n - 1) as f64))
            .collect();
        let values = metric.sample.at_ranks(&ranks);
        let percentiles: Vec<f64> = ranks
            .iter()
            .zip(values)
            .map(|(r, v)| if *r < successes { v } else { f64::INFINITY })
            .collect();
        let min = metric.sample.moments().map_or(f64::INFINITY, |m| m.min);
        let finite = |v: f64| if v.is_finite() { Value::from(v) } else { Value::Null };
        let mut json = Map::new();
        json.insert("unit".into(), metric.unit.into());
        json.insert("avg".into(), Value::Null);
        for (q, v) in EXPORT_PERCENTILES.iter().zip(&percentiles) {
            json.insert(format!("p{q}"), finite(*v));
        }
        json.insert("min".into(), finite(min));
        json.insert("max".into(), Value::Null);
        json.insert("count".into(), n.into());
        json.insert("sum".into(), Value::Null);
        let cell = |v: f64| format!("{v:.2}");
        let mut row = vec![
            csv_name(&format!("{} (error-adjusted)", metric.header), metric.unit),
            cell(f64::INFINITY),
            cell(min),
            cell(f64::INFINITY),
            cell(f64::INFINITY),
        ];
        row.extend(percentiles.iter().map(|v| cell(*v)));
        row.push(String::new());
        out.push((format!("adj_{}", metric.tag), Value::Object(json), row.join(",")));
    }
    out
}

/// Round to the nearest whole number, a half to the even one (numpy's `around`).
fn round_half_even(x: f64) -> usize {
    let floor = x.floor();
    let r = if x - floor == 0.5 {
        if floor % 2.0 == 0.0 {
            floor
        } else {
            floor + 1.0
        }
    } else {
        x.round()
    };
    r.max(0.0) as usize
}

/// A time-weighted figure's CSV row: AIPerf leaves the sum and the percentiles it does not
/// compute empty.
fn sweep_row(f: &SweepFigure) -> String {
    let cell = |v: f64| format!("{v:.2}");
    [
        csv_name(f.header, f.unit),
        cell(f.avg),
        cell(f.min),
        cell(f.max),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        cell(f.p50),
        String::new(),
        cell(f.p90),
        cell(f.p95),
        cell(f.p99),
        cell(f.std),
    ]
    .join(",")
}

/// The derived (single-value) metrics: tag, header, unit, value.
fn derived_metrics(tally: &RunTally, m: &RunMetrics) -> Vec<(&'static str, &'static str, &'static str, f64)> {
    let per_s = |v: f64| if m.duration_s > 0.0 { v / m.duration_s } else { 0.0 };
    let requests = m.completed + m.failed;
    // AIPerf's benchmark duration: the successful requests' span, from the first send to the
    // last one's request latency (the rates divide by the window, as AIPerf's by its phase);
    // with no successful request AIPerf leaves it out.
    let mut out: Vec<_> = tally
        .aiperf_span_ms
        .map(|(first, last)| ("benchmark_duration", "Benchmark Duration", "sec", (last - first) / 1e3))
        .into_iter()
        .collect();
    // AIPerf 0.14's E2E normalized interactivity: 1 ÷ the quantile of request latency ÷ output
    // length (docs/METRICS.md §2.11); left out when no request gives a value.
    let c = &m.chunks;
    for (tag, header, v) in [
        (
            "e2e_normalized_interactivity_p75",
            "E2E Normalized Interactivity P75",
            c.e2e_normalized_interactivity_p75,
        ),
        (
            "e2e_normalized_interactivity_p90",
            "E2E Normalized Interactivity P90",
            c.e2e_normalized_interactivity_p90,
        ),
    ] {
        if let Some(v) = v {
            out.push((tag, header, crate::run::chunks::INTERACTIVITY_UNIT, v));
        }
    }
    out.extend([
        (
            "input_token_throughput",
            "Input Token Throughput",
            "tokens/sec",
            per_s(m.total_input_tokens as f64),
        ),
        (
            "output_token_throughput",
            "Output Token Throughput",
            "tokens/sec",
            m.output_throughput,
        ),
        ("request_count", "Request Count", "requests", m.completed as f64),
        // Success + error, as AIPerf's (written once a request finished either way).
        (
            "completed_request_count",
            "Completed Requests (Success + Error)",
            "requests",
            requests as f64,
        ),
        (
            "request_error_rate",
            "Request Error Rate",
            "%",
            if requests > 0 {
                100.0 * m.failed as f64 / requests as f64
            } else {
                0.0
            },
        ),
        (
            "request_throughput",
            "Request Throughput",
            "requests/sec",
            m.request_throughput,
        ),
        (
            "total_isl",
            "Total Input Sequence Length",
            "tokens",
            m.total_input_tokens as f64,
        ),
        (
            "total_osl",
            "Total Output Sequence Length",
            "tokens",
            m.total_output_tokens as f64,
        ),
        (
            "total_output_tokens",
            "Total Output Tokens",
            "tokens",
            tally.output_counts.moments().map_or(0.0, |s| s.sum),
        ),
        (
            "total_token_throughput",
            "Total Token Throughput",
            "tokens/sec",
            m.total_token_throughput,
        ),
    ]);
    out.extend(conditional_metrics(tally, m));
    out.sort_by_key(|d| d.0);
    out
}

/// The derived metrics AIPerf writes only when they apply: errors, usage, OSL mismatches and
/// goodput.
fn conditional_metrics(tally: &RunTally, m: &RunMetrics) -> Vec<(&'static str, &'static str, &'static str, f64)> {
    let mut out = Vec::new();
    // AIPerf writes the error count only when a request failed.
    if m.failed > 0 {
        out.push((
            "error_request_count",
            "Error Request Count",
            "requests",
            m.failed as f64,
        ));
        out.push((
            "total_error_isl",
            "Total Error Input Sequence Length",
            "tokens",
            tally.error_isl.moments().map_or(0.0, |s| s.sum),
        ));
    }
    out.extend(usage_metrics(&tally.usage));
    // Once a request asked for a `max_tokens`, as AIPerf writes it.
    if !tally.osl_mismatch_pct.is_empty() {
        out.push((
            "osl_mismatch_count",
            "OSL Mismatch Count",
            "requests",
            tally.osl_mismatches as f64,
        ));
    }
    if let (Some(good), Some(goodput)) = (m.good_requests, m.request_goodput) {
        out.push(("good_request_count", "Good Request Count", "requests", good as f64));
        out.push(("goodput", "Goodput", "requests/sec", goodput));
    }
    out
}

/// AIPerf's usage totals and its discrepancy count, over the requests that reported usage.
fn usage_metrics(usage: &UsageTally) -> Vec<(&'static str, &'static str, &'static str, f64)> {
    let mut out = Vec::new();
    let sum = |s: &Sample| s.moments().map(|m| m.sum);
    for (tag, header, sample) in [
        (
            "total_usage_prompt_tokens",
            "Total Usage Prompt Tokens",
            &usage.prompt_tokens,
        ),
        (
            "total_usage_completion_tokens",
            "Total Usage Completion Tokens",
            &usage.completion_tokens,
        ),
        (
            "total_usage_total_tokens",
            "Total Usage Total Tokens",
            &usage.total_tokens,
        ),
    ] {
        if let Some(total) = sum(sample) {
            out.push((tag, header, "tokens", total));
        }
    }
    if usage.prompt_diff_pct.moments().is_some() {
        out.push((
            "usage_discrepancy_count",
            "Usage Discrepancy Count",
            "requests",
            usage.discrepancies as f64,
        ));
    }
    out
}

/// AIPerf's `error_summary`: one entry per kind of failure with its count and first message
/// (AIPerf groups by code, type and message; speclens keeps the first message of each kind).
fn error_summary(tally: &RunTally) -> Value {
    Value::Array(
        tally
            .failures
            .iter()
            .map(|(kind, (count, first))| {
                json!({"error_details": {"type": kind.as_str(), "message": first}, "count": count})
            })
            .collect(),
    )
}

/// `profile_export_speclens.json` and `.csv`: the request metrics, the time-weighted ones
/// (`sweep`, from the records), the derived ones, then the spec-decode figures when any request
/// carried stats.
pub fn profile_export(
    tally: &RunTally,
    metrics: &RunMetrics,
    sweep: &[SweepFigure],
    spec: Option<&SpecSummary>,
    info: &RunInfo,
) -> (Value, String) {
    let mut json = Map::new();
    // AIPerf's run keys first, as it writes them; `aiperf_version` is left out (no AIPerf wrote
    // this file), `speclens_version` says what did.
    json.insert("schema_version".into(), SCHEMA_VERSION.into());
    json.insert("benchmark_id".into(), info.benchmark_id.clone().into());
    let mut csv = String::from("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n");
    let mut rows: Vec<(&str, String)> = Vec::new();
    for metric in record_metrics(tally) {
        if metric.streaming_only && !info.stream {
            continue;
        }
        let Some(s) = MetricStats::from_sample(metric.unit, metric.sample) else {
            continue;
        };
        let mut cells = vec![csv_name(metric.header, metric.unit)];
        cells.extend([s.avg, s.min, s.max, s.sum].iter().map(|v| format!("{v:.2}")));
        cells.extend(s.percentiles().iter().map(|v| format!("{v:.2}")));
        cells.push(format!("{:.2}", s.std));
        rows.push((metric.tag, cells.join(",")));
        json.insert(metric.tag.into(), serde_json::to_value(&s).unwrap_or(Value::Null));
    }
    for f in sweep {
        rows.push((f.tag, sweep_row(f)));
        json.insert(f.tag.into(), serde_json::to_value(f).unwrap_or(Value::Null));
    }
    let adjusted = adjusted_metrics(tally, info.stream);
    for (tag, value, row) in &adjusted {
        rows.push((tag, row.clone()));
        json.insert(tag.clone(), value.clone());
    }
    // AIPerf sorts its CSV rows by tag.
    rows.sort_by_key(|r| r.0);
    for (_, row) in rows {
        csv.push_str(&row);
        csv.push('\n');
    }
    let mut derived_csv = String::from("\nMetric,Value\n");
    for (tag, header, unit, v) in derived_metrics(tally, metrics) {
        json.insert(tag.into(), json!({"unit": unit, "avg": v}));
        derived_csv.push_str(&format!("{},{v:.2}\n", csv_name(header, unit)));
    }
    if let Some(spec) = spec {
        if let Ok(Value::Object(m)) = serde_json::to_value(spec) {
            json.extend(m);
        }
        let spec_csv = spec.to_csv();
        let (rows, spec_derived) = spec_csv.split_once("\n\nMetric,Value\n").unwrap_or((&spec_csv, ""));
        for line in rows.lines().skip(1) {
            csv.push_str(line);
            csv.push('\n');
        }
        derived_csv.push_str(spec_derived);
    }
    csv.push_str(&derived_csv);
    json.insert(
        "run_info".into(),
        json!({"benchmark_id": info.benchmark_id, "trial": 0, "cli_command": info.cli_command}),
    );
    json.insert("was_cancelled".into(), info.was_cancelled.into());
    json.insert("is_complete".into(), info.is_complete.into());
    json.insert("error_summary".into(), error_summary(tally));
    json.insert("start_time".into(), info.start_time.clone().into());
    json.insert("end_time".into(), info.end_time.clone().into());
    json.insert("input_config".into(), info.input_config.clone());
    json.insert("speclens_version".into(), info.speclens_version.clone().into());
    (Value::Object(json), csv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::goodput::Slo;
    use crate::run::record::{ErrorKind, RequestRecord};

    fn record(id: u64, ttft: f64, e2el: f64, itl: Vec<f64>, tokens: u64) -> RequestRecord {
        RequestRecord {
            request_id: id,
            start_ms: 10.0,
            ..crate::run::record::tests::record(ttft, e2el, itl, tokens)
        }
    }

    fn info(stream: bool) -> RunInfo {
        RunInfo {
            stream,
            was_cancelled: false,
            start_time: "2026-12-01T10:00:00.000000".into(),
            end_time: "2026-12-01T10:00:02.000000".into(),
            speclens_version: "0".into(),
            input_config: json!({}),
            benchmark_id: "0123456789ab".into(),
            cli_command: "speclens bench".into(),
            is_complete: true,
        }
    }

    /// AIPerf's worked definitions: TTST is the second chunk's gap, ITL (request latency −
    /// TTFT) ÷ (OSL − 1), per-user throughput its inverse in tokens/s, ICL the chunk gaps.
    #[test]
    fn aiperf_definitions_on_a_worked_example() {
        // 5 tokens in 3 chunks (a speculative server sends several per chunk): TTFT 100, chunks
        // at +40 and +60, E2E 200. ITL = (200 − 100) ÷ 4 = 25 ms: 40 tokens/s for this user.
        let mut tally = RunTally::default().with_goodput(Some(Slo::parse(&["ttft:150 tpot:30"]).unwrap()));
        tally.push(&record(0, 100.0, 200.0, vec![40.0, 60.0], 5));
        // One token: no ITL, no TTST, per AIPerf (and TPOT 0 for vLLM's goodput: good).
        tally.push(&record(1, 120.0, 120.0, vec![], 1));
        // Misses the TTFT objective.
        tally.push(&record(2, 300.0, 400.0, vec![100.0], 2));
        let mut failed = record(3, 0.0, 0.0, vec![], 0);
        (failed.success, failed.error_kind, failed.error) =
            (false, Some(ErrorKind::HttpStatus), Some("HTTP 500: boom".into()));
        tally.push(&failed);
        let m = tally.metrics(2.0, Some(4), None, 4, &[99.0]);
        let (json, csv) = profile_export(&tally, &m, &[], None, &info(true));
        assert_eq!(json["time_to_second_token"]["avg"], 70.0, "(40 + 100) ÷ 2");
        // AIPerf 0.14's E2E normalized interactivity: latency per token 0.04, 0.12 and 0.2 s;
        // numpy's linear p75 is 0.16 and p90 0.184, inverted.
        for (tag, want) in [
            ("e2e_normalized_interactivity_p75", 1.0 / 0.16),
            ("e2e_normalized_interactivity_p90", 1.0 / 0.184),
        ] {
            assert_eq!(json[tag]["unit"], "tokens/sec/user", "{tag}");
            assert!(
                (json[tag]["avg"].as_f64().unwrap() - want).abs() < 1e-9,
                "{tag}: {}",
                json[tag]
            );
        }
        assert!(
            csv.contains("E2E Normalized Interactivity P90 (tokens/sec/user),5.43"),
            "{csv}"
        );
        assert_eq!(json["inter_token_latency"]["count"], 2);
        assert_eq!(json["inter_token_latency"]["min"], 25.0);
        assert_eq!(json["inter_token_latency"]["max"], 100.0);
        assert_eq!(json["output_token_throughput_per_user"]["max"], 40.0);
        assert_eq!(json["output_token_throughput_per_user"]["unit"], "tokens/sec/user");
        assert_eq!(json["inter_chunk_latency"]["count"], 3);
        assert_eq!(json["output_token_count"]["count"], 3);
        assert_eq!(json["total_osl"]["avg"], 8.0);
        // AIPerf's benchmark duration is the successful requests' span (all sent at 10 ms, the
        // last content 400 ms later); the rates divide by the window (2 s).
        assert_eq!(json["benchmark_duration"], json!({"unit": "sec", "avg": 0.4}));
        // With no successful request there is no span, and AIPerf writes none.
        let mut only_failed = RunTally::default();
        only_failed.push(&failed);
        let none = only_failed.metrics(2.0, Some(1), None, 1, &[99.0]);
        let (json_failed, _) = profile_export(&only_failed, &none, &[], None, &info(true));
        assert!(json_failed.get("benchmark_duration").is_none(), "{json_failed}");
        assert_eq!(json_failed["request_error_rate"]["avg"], 100.0);
        assert_eq!(json["request_error_rate"], json!({"unit": "%", "avg": 25.0}));
        assert_eq!(json["good_request_count"]["avg"], 2.0);
        assert_eq!(json["goodput"], json!({"unit": "requests/sec", "avg": 1.0}));
        assert_eq!(json["error_summary"][0]["error_details"]["type"], "http_status");
        assert_eq!(json["error_summary"][0]["count"], 1);
        assert_eq!(json["was_cancelled"], false);
        // Decode duration E2E − TTFT: 100, 0, 100; E2E output tokens/s 5 ÷ 0.2 s = 25, 1 ÷ 0.12,
        // 2 ÷ 0.4 = 5; prefill tokens/s per user: each record's 100 input tokens ÷ its TTFT.
        assert_eq!(json["decode_duration"]["max"], 100.0);
        assert_eq!(json["decode_duration"]["min"], 0.0);
        assert_eq!(json["e2e_output_token_throughput"]["max"], 25.0);
        assert_eq!(json["e2e_output_token_throughput"]["min"], 5.0);
        let input = record(0, 100.0, 200.0, vec![], 5).input_tokens as f64;
        assert_eq!(json["prefill_throughput_per_user"]["max"], input / 0.1);
        assert_eq!(
            json["completed_request_count"],
            json!({"unit": "requests", "avg": 4.0}),
            "success + error"
        );
        assert_eq!(json["schema_version"], "1.4");
        assert_eq!(json["is_complete"], true);
        assert_eq!(json["run_info"]["benchmark_id"], "0123456789ab");
        assert!(csv.contains("\nInter Token Latency (ms),"), "{csv}");
        assert!(csv.contains("\nRequest Count,3.00\n"), "{csv}");
        assert!(csv.contains("\nGoodput (requests/sec),1.00\n"), "{csv}");
        // Rows by tag, as AIPerf sorts them: the error-adjusted `adj_*` ones (a request
        // failed) first, then the others.
        let rows: Vec<&str> = csv.lines().skip(1).take_while(|l| !l.is_empty()).collect();
        let adjusted = rows.iter().take_while(|l| l.contains("(error-adjusted)")).count();
        assert_eq!(adjusted, 4, "{csv}");
        for part in [&rows[..adjusted], &rows[adjusted..]] {
            let tags: Vec<&str> = part.iter().map(|l| l.split(" (").next().unwrap()).collect();
            let mut sorted = tags.clone();
            sorted.sort_by_key(|h| h.to_lowercase());
            assert_eq!(tags, sorted, "rows by tag, as AIPerf sorts them");
        }

        // Without a stream AIPerf has no streaming metrics.
        let (whole, _) = profile_export(&tally, &m, &[], None, &info(false));
        for tag in [
            "time_to_first_token",
            "inter_token_latency",
            "inter_chunk_latency",
            "time_to_second_token",
        ] {
            assert!(whole.get(tag).is_none(), "{tag}");
        }
        assert!(whole.get("request_latency").is_some());
    }

    /// AIPerf's usage figures: the server's counts, their distance from the client's
    /// (|usage − client| ÷ client × 100) and the requests more than 10 % away, the prompt's
    /// diff decided first.
    #[test]
    fn usage_and_its_discrepancy_on_a_worked_example() {
        let with_usage = |id, prompt: Option<u64>, completion, client_prompt, client_completion| RequestRecord {
            usage: Some(crate::run::record::UsageRecord {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: prompt.zip(completion).map(|(p, c)| p + c),
                client_prompt_tokens: client_prompt,
                client_completion_tokens: client_completion,
            }),
            ..record(id, 10.0, 20.0, vec![], 50)
        };
        let mut tally = RunTally::default();
        // Exact; +10 % (not above the threshold); +15 % prompt; +20 % completion only.
        tally.push(&with_usage(0, Some(100), Some(50), 100, 50));
        tally.push(&with_usage(1, Some(110), Some(55), 100, 50));
        tally.push(&with_usage(2, Some(115), Some(50), 100, 50));
        tally.push(&with_usage(3, Some(100), Some(60), 100, 50));
        // No usage at all: in none of the usage figures.
        tally.push(&record(4, 10.0, 20.0, vec![], 50));
        // The client counted no prompt: no prompt diff, so AIPerf counts no discrepancy even
        // though the completion is 100 % away.
        tally.push(&with_usage(5, Some(7), Some(100), 0, 50));
        let m = tally.metrics(1.0, Some(1), None, 6, &[99.0]);
        let (json, csv) = profile_export(&tally, &m, &[], None, &info(true));
        assert_eq!(json["usage_prompt_tokens"]["count"], 5);
        assert_eq!(json["usage_prompt_tokens"]["unit"], "tokens");
        assert_eq!(
            json["total_usage_prompt_tokens"],
            json!({"unit": "tokens", "avg": 432.0})
        );
        assert_eq!(json["total_usage_completion_tokens"]["avg"], 315.0);
        assert_eq!(json["total_usage_total_tokens"]["avg"], 747.0);
        let prompt_diff = &json["usage_prompt_tokens_diff_pct"];
        assert_eq!(
            (prompt_diff["count"].as_u64(), prompt_diff["unit"].as_str()),
            (Some(4), Some("%"))
        );
        assert!((prompt_diff["max"].as_f64().unwrap() - 15.0).abs() < 1e-9);
        let completion_diff = &json["usage_completion_tokens_diff_pct"];
        assert!((completion_diff["max"].as_f64().unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(json["usage_discrepancy_count"], json!({"unit": "requests", "avg": 2.0}));
        assert!(csv.contains("\nUsage Prompt Diff (%),"), "{csv}");
        assert!(csv.contains("\nUsage Discrepancy Count,2.00\n"), "{csv}");
        let line = record_line(&with_usage(2, Some(115), Some(50), 100, 50), 0, true).unwrap();
        assert_eq!(
            line["metrics"]["usage_prompt_tokens"],
            json!({"value": 115, "unit": "tokens"})
        );
        assert!(
            (line["metrics"]["usage_prompt_tokens_diff_pct"]["value"]
                .as_f64()
                .unwrap()
                - 15.0)
                .abs()
                < 1e-9
        );
        assert_eq!(line["metrics"]["usage_total_tokens"]["value"], 165);
        // A run whose server reported no usage has none of these figures.
        let mut bare = RunTally::default();
        bare.push(&record(0, 10.0, 20.0, vec![], 50));
        let (json, _) = profile_export(
            &bare,
            &bare.metrics(1.0, Some(1), None, 1, &[99.0]),
            &[],
            None,
            &info(true),
        );
        for tag in [
            "usage_prompt_tokens",
            "total_usage_prompt_tokens",
            "usage_discrepancy_count",
        ] {
            assert!(json.get(tag).is_none(), "{tag}");
        }
    }

    /// AIPerf's error-adjusted latency: five successes (10 … 50 ms) and one failure, by the
    /// nearest rank of six values with the failure at +∞ (numpy: p50 → rank 2.5 → 2 → 30;
    /// p90 → 4.5 → 4 → 50; p95 → 4.75 → 5 → ∞).
    #[test]
    fn error_adjusted_latency_counts_a_failure_as_never_answered() {
        let mut tally = RunTally::default();
        for (i, e2el) in [10.0, 20.0, 30.0, 40.0, 50.0].into_iter().enumerate() {
            // One token in one chunk: the request's latency ends at it.
            tally.push(&record(i as u64, e2el, e2el, vec![], 1));
        }
        let export = |tally: &RunTally| {
            let m = tally.metrics(1.0, None, None, 1, &[99.0]);
            profile_export(tally, &m, &[], None, &info(true))
        };
        let (json, csv) = export(&tally);
        assert!(
            json.get("adj_request_latency").is_none(),
            "no failure, no adjusted figure"
        );
        assert!(!csv.contains("error-adjusted"));
        tally.push(&RequestRecord {
            success: false,
            error_kind: Some(ErrorKind::Timeout),
            error: Some("late".into()),
            ..RequestRecord::default()
        });
        let (json, csv) = export(&tally);
        let adj = &json["adj_request_latency"];
        assert_eq!(
            [&adj["p1"], &adj["p25"], &adj["p50"], &adj["p75"], &adj["p90"]].map(|v| v.as_f64().unwrap()),
            [10.0, 20.0, 30.0, 50.0, 50.0]
        );
        assert!(adj["p95"].is_null() && adj["p99"].is_null() && adj["avg"].is_null() && adj["max"].is_null());
        assert_eq!(
            (adj["min"].as_f64(), adj["count"].as_u64(), adj["unit"].as_str()),
            (Some(10.0), Some(6), Some("ms"))
        );
        assert!(adj.get("std").is_none());
        assert!(json["adj_time_to_first_token"].is_object());
        assert!(
            csv.contains("\nRequest Latency (error-adjusted) (ms),inf,10.00,inf,inf,10.00,10.00,10.00,20.00,30.00,50.00,50.00,inf,inf,\n"),
            "{csv}"
        );
    }
}
