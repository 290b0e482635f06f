//! The run's console report (vLLM's summary, AIPerf's "Spec Decode" table, AISBench's blocks,
//! in that order) and its files, each written atomically: `result.json`,
//! `performances/spec_decode_<label>.json`, `profile_export_speclens.{json,csv}`, `records.jsonl`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use comfy_table::{presets, CellAlignment, Table};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Map, Value};
use speclens_shared::aggregate::{MetricStats, SpecSummary, CONSOLE_COLUMNS};
use speclens_shared::protocol::Distributions;
use speclens_shared::results::{EndpointResult, ErrorCount, Errors, RunConfig, RunResult, SpecDecodeSection};
use speclens_shared::run::{vllm_summary, ErrorKind, RunMetrics};
use speclens_shared::scrape::{
    console_block, derive_stats, result_file_label, SpecCounters, SpecDecodeData, SpecDecodeResult,
};

use super::{BenchSettings, LoadOutcome, ScrapeWindow, SpecPaths};
use crate::cli::EndpointKind;
use crate::error::CollectorError;

/// `speclens-results/<UTC time>-<label>/`.
pub fn default_out_dir(label: &str) -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let stamp = now
        .format(time::macros::format_description!(
            "[year][month][day]-[hour][minute][second]"
        ))
        .unwrap_or_else(|_| "run".into());
    PathBuf::from("speclens-results").join(format!("{stamp}-{}", result_file_label(label)))
}

/// A progress bar on stderr (drawn only when stderr is a terminal).
pub fn progress_bar(total: u64, duration: Option<f64>) -> ProgressBar {
    let bar = match duration {
        Some(_) => ProgressBar::new_spinner(),
        None => ProgressBar::new(total),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    let template = match duration {
        Some(_) => "{spinner} {elapsed_precise} {pos} requests done",
        None => "{bar:40} {pos}/{len} requests  {elapsed_precise} elapsed, {eta} left",
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

/// Write a file atomically: a temporary sibling, flushed, then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CollectorError> {
    let fail = |e: std::io::Error| CollectorError::Output(format!("cannot write {}: {e}", path.display()));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(fail)?;
        f.write_all(bytes).map_err(fail)?;
        f.sync_all().map_err(fail)?;
    }
    std::fs::rename(&tmp, path).map_err(fail)
}

pub fn to_json_bytes(v: &impl serde::Serialize) -> Result<Vec<u8>, CollectorError> {
    let mut bytes = serde_json::to_vec_pretty(v).map_err(|e| CollectorError::Output(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The scrape path summed over every endpoint whose window is valid.
fn combined_scrape(windows: &[ScrapeWindow]) -> Option<SpecDecodeData> {
    let mut sum = SpecCounters::default();
    let mut any = false;
    for d in windows.iter().filter_map(ScrapeWindow::delta) {
        sum.add(&d);
        any = true;
    }
    if any {
        derive_stats(&sum).ok()
    } else {
        None
    }
}

/// Failures by kind: count and the first message.
fn failures(outcome: &LoadOutcome) -> BTreeMap<ErrorKind, (u64, String)> {
    let mut out: BTreeMap<ErrorKind, (u64, String)> = BTreeMap::new();
    for r in outcome.records.iter().filter(|r| !r.warmup) {
        if let (Some(kind), Some(message)) = (r.error_kind, &r.error) {
            out.entry(kind).or_insert_with(|| (0, message.clone())).0 += 1;
        }
    }
    out
}

/// AIPerf's "Spec Decode" console table and its histogram line.
pub fn spec_table(summary: &SpecSummary) -> String {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL);
    let mut headings = vec!["Metric"];
    headings.extend(CONSOLE_COLUMNS);
    table.set_header(headings);
    for (label, cells) in summary.console_rows() {
        let mut row = vec![label];
        row.extend(cells);
        table.add_row(row);
    }
    for i in 1..=CONSOLE_COLUMNS.len() {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = format!("{:^width$}\n{table}\n", "Spec Decode", width = 60);
    if let Some(line) = summary.histogram_line() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn request_stats(outcome: &LoadOutcome) -> Vec<(&'static str, &'static str, &'static str, Option<MetricStats>)> {
    let window = || outcome.records.iter().filter(|r| !r.warmup && r.success);
    let stats = |unit: &str, v: Vec<f64>| MetricStats::from_values(unit, v);
    vec![
        (
            "time_to_first_token",
            "Time to First Token",
            "ms",
            stats("ms", window().filter_map(|r| r.ttft_ms).collect()),
        ),
        (
            "inter_token_latency",
            "Inter Token Latency",
            "ms",
            stats("ms", window().flat_map(|r| r.itl_ms.iter().copied()).collect()),
        ),
        (
            "request_latency",
            "Request Latency",
            "ms",
            stats("ms", window().filter_map(|r| r.e2el_ms).collect()),
        ),
        (
            "input_sequence_length",
            "Input Sequence Length",
            "tokens",
            stats("tokens", window().map(|r| r.input_tokens as f64).collect()),
        ),
        (
            "output_sequence_length",
            "Output Sequence Length",
            "tokens",
            stats("tokens", window().map(|r| r.output_tokens as f64).collect()),
        ),
    ]
}

/// AIPerf-named export: request metrics, then the spec-decode figures when any request
/// carried stats.
fn profile_export(outcome: &LoadOutcome, metrics: &RunMetrics, spec: Option<&SpecSummary>) -> (Value, String) {
    let mut json = Map::new();
    let mut csv = String::from("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n");
    for (key, name, unit, stats) in request_stats(outcome) {
        let Some(s) = stats else { continue };
        let mut cells = vec![format!("{name} ({unit})")];
        cells.extend([s.avg, s.min, s.max, s.sum].iter().map(|v| format!("{v:.2}")));
        cells.extend(s.percentiles().iter().map(|v| format!("{v:.2}")));
        cells.push(format!("{:.2}", s.std));
        csv.push_str(&cells.join(","));
        csv.push('\n');
        json.insert(key.into(), serde_json::to_value(&s).unwrap_or(Value::Null));
    }
    let derived = [
        (
            "request_throughput",
            "Request Throughput (requests/sec)",
            "requests/sec",
            metrics.request_throughput,
        ),
        (
            "output_token_throughput",
            "Output Token Throughput (tokens/sec)",
            "tokens/sec",
            metrics.output_throughput,
        ),
        ("request_count", "Request Count", "requests", metrics.completed as f64),
        (
            "error_request_count",
            "Error Request Count",
            "requests",
            metrics.failed as f64,
        ),
    ];
    let mut derived_csv = String::from("\nMetric,Value\n");
    for (key, name, unit, v) in derived {
        json.insert(key.into(), json!({"unit": unit, "avg": v}));
        derived_csv.push_str(&format!("{name},{v:.2}\n"));
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
    (Value::Object(json), csv)
}

/// Print the console report and write every file of the run; returns `result.json`'s content.
pub fn save_and_print(
    settings: &BenchSettings,
    outcome: &LoadOutcome,
    paths: &SpecPaths,
    records_tmp: &Path,
) -> Result<RunResult, CollectorError> {
    let SpecPaths {
        windows,
        timeline,
        fleet,
        spec,
        rejected,
        notices,
    } = paths;
    let args = &settings.args;
    let metrics = RunMetrics::from_records(
        outcome.records.iter().filter(|r| !r.warmup),
        outcome.duration_s,
        args.concurrency,
        args.request_rate.filter(|r| r.is_finite()),
        outcome.max_in_flight,
        &args.percentiles,
    );
    // The run's headline acceptance: the direct scrapes, else the Prometheus path.
    let combined = combined_scrape(windows).or_else(|| fleet.as_ref().and_then(|f| f.result.data.clone()));
    let summary = spec.summary();
    let results: Vec<(String, SpecDecodeResult)> =
        windows.iter().map(|w| (w.endpoint.label.clone(), w.result())).collect();

    // Console, in order: vLLM's summary, failures, AIPerf's table, AISBench's blocks.
    let mut console = vllm_summary(&metrics, combined.as_ref());
    let failed = failures(outcome);
    if !failed.is_empty() {
        console.push_str("Failed requests by kind:\n");
        for (kind, (count, first)) in &failed {
            console.push_str(&format!("  {:<14}{count:>8}   first: {first}\n", kind.as_str()));
        }
    }
    if let Some(s) = &summary {
        console.push('\n');
        console.push_str(&spec_table(s));
    }
    if !rejected.is_empty() {
        let parts: Vec<String> = rejected.iter().map(|(k, v)| format!("{k} {v}")).collect();
        console.push_str(&format!(
            "Per-request spec-decode payloads rejected: {}\n",
            parts.join(", ")
        ));
    }
    for (label, result) in &results {
        console.push_str(&console_block(label, result));
        console.push('\n');
    }
    if let Some(f) = fleet {
        console.push_str(&console_block(super::prometheus::LABEL, &f.result));
        if let Some(w) = &f.window {
            console.push_str(&super::prometheus::breakdown_table(w));
            for reset in &w.resets {
                console.push_str(&format!("  {reset}\n"));
            }
        }
        console.push('\n');
    }
    for message in &notices.messages {
        console.push_str(&format!("Note: {message}\n"));
    }
    if outcome.partial {
        console.push_str("\nThis run was stopped before its end: every file is marked partial.\n");
    }
    if !args.quiet {
        print!("{console}");
    }

    // Files.
    let dir = &settings.out_dir;
    for (label, result) in &results {
        let path = dir
            .join("performances")
            .join(format!("spec_decode_{}.json", result_file_label(label)));
        write_atomic(&path, &to_json_bytes(result)?)?;
    }
    if let Some(f) = fleet {
        let path = dir
            .join("performances")
            .join(format!("spec_decode_{}.json", super::prometheus::LABEL));
        write_atomic(&path, &to_json_bytes(&f.result)?)?;
    }
    let (profile_json, profile_csv) = profile_export(outcome, &metrics, summary.as_ref());
    write_atomic(
        &dir.join("profile_export_speclens.json"),
        &to_json_bytes(&profile_json)?,
    )?;
    write_atomic(&dir.join("profile_export_speclens.csv"), profile_csv.as_bytes())?;

    let measured = || outcome.records.iter().filter(|r| !r.warmup && r.success);
    let ttft_ms: Vec<f64> = measured().filter_map(|r| r.ttft_ms).collect();
    let itl_ms: Vec<f64> = measured().flat_map(|r| r.itl_ms.iter().copied()).collect();
    let e2el_ms: Vec<f64> = measured().filter_map(|r| r.e2el_ms).collect();
    let date = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut result = RunResult::new(env!("CARGO_PKG_VERSION"), &date, &args.label);
    result.partial = outcome.partial;
    result.backend = Some(
        match args.endpoint {
            EndpointKind::Chat => "openai-chat",
            EndpointKind::Completions => "openai",
        }
        .into(),
    );
    result.model_id = Some(settings.model.clone());
    result.num_prompts = Some(outcome.records.iter().filter(|r| !r.warmup).count() as u64);
    result.burstiness = Some(args.burstiness);
    result.set_metrics(&metrics);
    if let Some(d) = &combined {
        result.set_spec_window(d);
    }
    if let Some(d) = &notices.draft_length {
        result.spec_decode_mean_draft_tokens = Some(d.mean_draft_tokens);
        result.spec_decode_num_spec_tokens = Some(d.k);
    }
    result.errors = Some(Errors::ByKind(
        failed
            .iter()
            .map(|(k, (count, first))| {
                (
                    k.as_str().to_string(),
                    ErrorCount {
                        count: *count,
                        first: first.clone(),
                    },
                )
            })
            .collect(),
    ));
    result.config = Some(run_config(settings));
    result.notices = Some(notices.clone());
    result.distributions = Some(Distributions::from_values(&ttft_ms, &itl_ms, &e2el_ms, spec));
    result.spec_decode = Some(SpecDecodeSection {
        scrape: results
            .iter()
            .map(|(label, r)| EndpointResult {
                endpoint: label.clone(),
                result: r.clone(),
            })
            .collect(),
        per_request: summary,
        per_request_rejected: rejected.clone(),
        prometheus: fleet.clone(),
        timeline: timeline.points.clone(),
        resets: timeline.resets.clone(),
    });
    write_atomic(&dir.join("result.json"), &to_json_bytes(&result)?)?;
    std::fs::rename(records_tmp, dir.join("records.jsonl"))
        .map_err(|e| CollectorError::Output(format!("cannot move {} into place: {e}", records_tmp.display())))?;
    if !args.quiet {
        println!("Results: {}", dir.display());
    }
    Ok(result)
}

/// The run's settings as written to `result.json`: header names only (values may be secret),
/// never the API key.
fn run_config(settings: &BenchSettings) -> RunConfig {
    let a = &settings.args;
    RunConfig {
        urls: a.urls.iter().map(|u| super::redact_url(u)).collect(),
        endpoint: format!("{:?}", a.endpoint).to_lowercase(),
        model: settings.model.clone(),
        stream: !a.no_stream,
        concurrency: a.concurrency,
        request_rate: a.request_rate.filter(|r| r.is_finite()),
        arrival: format!("{:?}", a.arrival).to_lowercase(),
        burstiness: a.burstiness,
        num_prompts: a.num_prompts,
        duration_s: a.duration,
        warmup: a.warmup,
        seed: a.seed,
        dataset: format!("{:?}", a.dataset).to_lowercase(),
        dataset_path: a.dataset_path.as_ref().map(|p| p.display().to_string()),
        categories: a.categories.clone(),
        input_tokens: a.input_tokens,
        input_tokens_stddev: a.input_tokens_stddev,
        output_tokens: a.output_tokens,
        output_tokens_stddev: a.output_tokens_stddev,
        temperature: a.temperature,
        metrics_endpoints: settings.endpoints.iter().map(|e| super::redact_url(&e.url)).collect(),
        scrape_interval_s: a.scrape_interval,
        timeout_s: a.timeout,
        percentiles: a.percentiles.clone(),
        header_names: a
            .headers
            .iter()
            .filter_map(|h| h.split_once(':').map(|(n, _)| n.trim().to_string()))
            .collect(),
        api_key_set: a.api_key.is_some(),
    }
}
