//! A finished run's output: the console report (vLLM's summary, AIPerf's "Spec Decode" table,
//! AISBench's blocks, in that order), rendered as text for any writer, and its files, each
//! written atomically: `result.json`, `performances/spec_decode_<label>.json`,
//! `profile_export_speclens.{json,csv}`, `records.jsonl`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use comfy_table::{presets, CellAlignment, Table};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use speclens_shared::file_label::result_file_label;
use speclens_shared::results::accept::CategoryAcceptance;
use speclens_shared::results::aiperf::{profile_export, record_line, RunInfo};
use speclens_shared::results::content_mark::{content_invalid, content_invalid_sentence, ContentInvalid};
use speclens_shared::results::run_result::{
    EndpointResult, ErrorCount, Errors, RunConfig, RunResult, SpecDecodeSection,
};
use speclens_shared::results::warnings::workload_warnings;
use speclens_shared::run::aggregate::{SpecSummary, CONSOLE_COLUMNS};
use speclens_shared::run::notices::Notices;
use speclens_shared::run::record::{vllm_summary, RunMetrics, SpecSection, NO_SPECULATION_HINT};
use speclens_shared::scrape::{console_block, SpecDecodeData, SpecDecodeResult};
use speclens_shared::view::run::Distributions;

use super::paths::SpecPaths;
use super::plan::Stop;
use super::stages::{LoadOutcome, Prepared};
use crate::error::CollectorError;
use crate::results_folder::write::{now_rfc3339, to_json_bytes, write_atomic};

/// A progress bar on stderr (drawn only when stderr is a terminal).
pub fn progress_bar(total: u64, stop: Stop) -> ProgressBar {
    let bar = match stop {
        Stop::Until(_) => ProgressBar::new_spinner(),
        Stop::Count => ProgressBar::new(total),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    let template = match stop {
        Stop::Until(_) => "{spinner} {elapsed_precise} {pos} requests done",
        Stop::Count => "{bar:40} {pos}/{len} requests  {elapsed_precise} elapsed, {eta} left",
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
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
    for note in summary.two_lengths_note().iter().chain(&summary.notes) {
        out.push_str(&format!("  Note: {note}\n"));
    }
    out
}

/// What the console and the files are made of, computed once.
struct Figures<'a> {
    metrics: RunMetrics,
    /// The run's headline acceptance (direct scrapes, else Prometheus).
    headline: Option<SpecDecodeData>,
    summary: Option<SpecSummary>,
    /// Each scraped endpoint's window, by label.
    results: Vec<(String, SpecDecodeResult)>,
    outcome: &'a LoadOutcome,
    paths: &'a SpecPaths,
    /// How the workload biases the acceptance measured.
    workload: Vec<String>,
    /// Why the run's acceptance stands for no real text (empty: valid).
    content_invalid: Vec<ContentInvalid>,
    /// Each served name's acceptance when the run sent to several (from the records), or why
    /// the records could not be read for it.
    by_model: Result<Vec<CategoryAcceptance>, String>,
}

impl<'a> Figures<'a> {
    fn new(run: &Prepared, outcome: &'a LoadOutcome, paths: &'a SpecPaths) -> Figures<'a> {
        let load = &run.plan.load;
        let (headline, summary) = (paths.headline(), paths.spec.summary());
        let speculates = headline.is_some() || summary.is_some();
        let config = run_config(run);
        Figures {
            metrics: outcome.tally.metrics(
                outcome.duration_s,
                load.concurrency,
                load.request_rate.filter(|r| r.is_finite()),
                outcome.max_in_flight,
                &run.plan.output.percentiles,
            ),
            headline,
            summary,
            results: paths
                .windows
                .iter()
                .map(|w| (w.endpoint.label.clone(), w.result()))
                .collect(),
            workload: workload_warnings(&config, speculates),
            content_invalid: content_invalid(&config.dataset, config.ignore_eos, config.trace_fill.as_deref()),
            by_model: Ok(Vec::new()),
            outcome,
            paths,
        }
    }
}

/// The console report, in order: vLLM's summary, failures, AIPerf's table, AISBench's blocks
/// (with several endpoints), the notices: each source's acceptance once.
fn console(f: &Figures<'_>) -> String {
    let no_speculation = f.paths.shows_no_speculation();
    let section = match &f.headline {
        Some(d) => SpecSection::Measured(d),
        None if no_speculation => SpecSection::NotMeasured("the server shows no speculation"),
        None => SpecSection::NotMeasured(
            f.results
                .iter()
                .find_map(|(_, r)| r.error.as_deref())
                .unwrap_or("no /metrics window (--no-scrape)"),
        ),
    };
    let mut console = vllm_summary(&f.metrics, section);
    if no_speculation {
        console.push_str(&format!("{NO_SPECULATION_HINT}\n"));
    }
    if let Some(split) = speclens_shared::run::record::TtftSplit::of_split(&f.metrics.server) {
        console.push_str(&format!("{}\n", split.sentence()));
    }
    console.push_str(&f.metrics.chunks.console());
    if let Some(tail) = &f.metrics.tail {
        console.push_str(&format!("{}\n", tail.sentence()));
    }
    let failures = &f.outcome.tally.failures;
    if !failures.is_empty() {
        console.push_str("Failed requests by kind:\n");
        for (kind, (count, first)) in failures {
            console.push_str(&format!("  {:<14}{count:>8}   first: {first}\n", kind.as_str()));
        }
    }
    if let Some(s) = &f.summary {
        console.push('\n');
        console.push_str(&spec_table(s));
    }
    if !f.paths.rejected.is_empty() {
        let parts: Vec<String> = f.paths.rejected.iter().map(|(k, v)| format!("{k} {v}")).collect();
        console.push_str(&format!(
            "Per-request spec-decode payloads rejected: {}\n",
            parts.join(", ")
        ));
    }
    // AISBench's block per endpoint. With one endpoint it holds the counters vLLM's section
    // printed above, so only what that section leaves out is printed: the window's notes.
    if let [(_, result)] = f.results.as_slice() {
        for note in result.data.iter().flat_map(|d| &d.notes) {
            console.push_str(&format!("Note (server counters): {note}\n"));
        }
    } else {
        for (label, result) in &f.results {
            console.push_str(&console_block(label, result));
            console.push('\n');
        }
    }
    if let Some(fleet) = &f.paths.fleet {
        console.push_str(&console_block(super::prometheus::LABEL, &fleet.result));
        if let Some(w) = &fleet.window {
            console.push_str(&super::prometheus::breakdown_table(w));
            for reset in &w.resets {
                console.push_str(&format!("  {reset}\n"));
            }
        }
        console.push('\n');
    }
    match &f.by_model {
        Ok(rows) if rows.is_empty() => {}
        Ok(rows) => console.push_str(&format!(
            "Acceptance by served model (per-request path, requests sent to each in turn):\n{}",
            crate::accept_table::render(rows, "model")
        )),
        Err(why) => console.push_str(&format!("Note: acceptance by served model not read: {why}\n")),
    }
    for message in f.paths.notices.messages.iter().chain(&f.workload) {
        console.push_str(&format!("Note: {message}\n"));
    }
    if let Some(mark) = content_invalid_sentence(&f.content_invalid) {
        console.push_str(&format!("{mark}\n"));
    }
    if f.outcome.partial {
        console.push_str("\nThis run was stopped before its end: every file is marked partial.\n");
    }
    console
}

/// Print the console report and write every file of the run; returns `result.json`'s content
/// and, when some file could not be written (a full disk), a message naming each one and what
/// was saved (those files do not stop the others or the console report).
pub fn save_and_print(
    run: &Prepared,
    outcome: &LoadOutcome,
    paths: &SpecPaths,
    records_tmp: &Path,
) -> Result<(RunResult, Option<String>), CollectorError> {
    let mut figures = Figures::new(run, outcome, paths);
    if run.models.len() > 1 {
        figures.by_model =
            crate::results_folder::history::acceptance_by(records_tmp, &run.plan.output.label, |r| r.model.as_deref());
    }
    // The files first: whatever happens to stdout, the run is saved.
    let (result, not_saved) = persist(run, &figures, records_tmp)?;
    if run.plan.output.print || not_saved.is_some() {
        crate::console::status(&format!("{}Results: {}\n", console(&figures), run.out_dir.display()));
    }
    Ok((result, not_saved))
}

/// Twelve hex digits naming the run (AIPerf's `benchmark_id`), from the process's randomly
/// seeded hasher and the clock.
fn benchmark_id() -> String {
    use std::hash::BuildHasher;
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let random = std::collections::hash_map::RandomState::new().hash_one(now_ns);
    format!("{:012x}", random & 0xffff_ffff_ffff)
}

/// Flags whose value is a secret: an API key, a header (an `Authorization` one), the
/// Prometheus API's token and password, the dashboard's access token.
const SECRET_FLAGS: [&str; 5] = [
    "--api-key",
    "--header",
    "--prometheus-token",
    "--prometheus-password",
    "--token",
];

/// The command line as a shell would take it back (AIPerf's `run_info.cli_command`), with every
/// secret flag's value and a URL's credentials replaced by `[redacted]`.
fn cli_command(args: impl Iterator<Item = String>) -> String {
    let quote = |a: &str| {
        if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c)) {
            a.to_string()
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    let mut out = Vec::new();
    let mut secret_next = false;
    for (i, arg) in args.enumerate() {
        let shown = if secret_next {
            secret_next = false;
            "[redacted]".to_string()
        } else if let Some((flag, _)) = arg.split_once('=').filter(|(f, _)| SECRET_FLAGS.contains(f)) {
            format!("{flag}=[redacted]")
        } else if SECRET_FLAGS.contains(&arg.as_str()) {
            secret_next = true;
            arg
        } else if arg.contains("://") {
            crate::net::redact_url(&arg)
        } else if i == 0 {
            "speclens".to_string()
        } else {
            arg
        };
        out.push(quote(&shown));
    }
    out.join(" ")
}

/// Write every file of the run: AISBench's per-endpoint files, AIPerf's export, `result.json`,
/// and `records.jsonl` moved into place last. Each file is tried whatever happened to the
/// others; the second value says which could not be written and what was saved.
fn persist(run: &Prepared, f: &Figures<'_>, records_tmp: &Path) -> Result<(RunResult, Option<String>), CollectorError> {
    let dir = &run.out_dir;
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for (label, result) in &f.results {
        let path = dir
            .join("performances")
            .join(format!("spec_decode_{}.json", result_file_label(label)));
        files.push((path, to_json_bytes(result)?));
    }
    if let Some(fleet) = &f.paths.fleet {
        let path = dir
            .join("performances")
            .join(format!("spec_decode_{}.json", super::prometheus::LABEL));
        files.push((path, to_json_bytes(&fleet.result)?));
    }
    let config = run_config(run);
    let info = RunInfo {
        stream: run.plan.target.stream,
        was_cancelled: f.outcome.interrupted.is_some(),
        start_time: aiperf_time(f.outcome.window_start_unix_s),
        end_time: aiperf_time(f.outcome.window_start_unix_s + f.metrics.duration_s),
        speclens_version: env!("CARGO_PKG_VERSION").into(),
        input_config: serde_json::to_value(&config).unwrap_or(Value::Null),
        benchmark_id: benchmark_id(),
        cli_command: cli_command(std::env::args()),
        is_complete: f.outcome.interrupted.is_none() && !f.outcome.partial && f.outcome.records_cut.is_none(),
    };
    let (mut saved, mut failed) = (Vec::new(), Vec::new());
    let result = run_result(run, f);
    files.push((dir.join("result.json"), to_json_bytes(&result)?));
    let name = |path: &Path| path.strip_prefix(dir).unwrap_or(path).display().to_string();
    let write = |files: Vec<(PathBuf, Vec<u8>)>, saved: &mut Vec<String>, failed: &mut Vec<String>| {
        for (path, bytes) in files {
            match write_atomic(&path, &bytes) {
                Ok(()) => saved.push(name(&path)),
                Err(e) => failed.push(e.to_string()),
            }
        }
    };
    write(files, &mut saved, &mut failed);
    // AIPerf's per-record file, from the records just written (one line each, streamed).
    let per_record = dir.join("profile_export.jsonl");
    match aiperf_records(
        records_tmp,
        &per_record,
        f.outcome.started_unix_ns,
        run.plan.target.stream,
    ) {
        Ok(()) => saved.push(name(&per_record)),
        Err(e) => failed.push(e.to_string()),
    }
    let records = dir.join(crate::results_folder::history::RECORDS);
    let moved = std::fs::rename(records_tmp, &records);
    // AIPerf's aggregate export last: its time-weighted figures read the records back.
    let exports = aiperf_exports(f, &info, dir, if moved.is_ok() { &records } else { records_tmp })?;
    write(exports, &mut saved, &mut failed);
    match moved {
        Err(e) => failed.push(format!("cannot move {} into place: {e}", records_tmp.display())),
        Ok(()) => match &f.outcome.records_cut {
            None => saved.push(name(&records)),
            Some(cut) => {
                failed.push(cut.why.clone());
                saved.push(format!(
                    "{} (the first {} of {} records)",
                    name(&records),
                    cut.complete,
                    cut.total
                ));
            }
        },
    }
    if failed.is_empty() {
        return Ok((result, None));
    }
    let saved = if saved.is_empty() {
        "nothing".to_string()
    } else {
        saved.join(", ")
    };
    Ok((
        result,
        Some(format!(
            "not every file of the run could be written: {}. Saved in {}: {saved}. The figures printed above are the whole run's.",
            failed.join("; "),
            dir.display()
        )),
    ))
}

/// `profile_export_speclens.json` and `.csv`. The time-weighted figures are read back from
/// the records (none from a cut file); when they cannot be, the files are written without them
/// and a note says why: the run and its other figures stand.
fn aiperf_exports(
    f: &Figures<'_>,
    info: &RunInfo,
    dir: &Path,
    records: &Path,
) -> Result<Vec<(PathBuf, Vec<u8>)>, CollectorError> {
    let read = || super::sweep_line::sweep_of_records(records, info.stream, f.outcome.window_ms);
    let sweep = match &f.outcome.records_cut {
        Some(_) => Vec::new(),
        // Off the runtime's workers: the dashboard keeps serving meanwhile.
        None => match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(read),
            _ => read(),
        }
        .unwrap_or_else(|why| {
            eprintln!(
                "speclens: note: AIPerf's time-weighted figures were left out of profile_export_speclens.json: {why}"
            );
            Vec::new()
        }),
    };
    let (json, csv) = profile_export(&f.outcome.tally, &f.metrics, &sweep, f.summary.as_ref(), info);
    Ok(vec![
        (dir.join("profile_export_speclens.json"), to_json_bytes(&json)?),
        (dir.join("profile_export_speclens.csv"), csv.into_bytes()),
    ])
}

/// AIPerf's time stamp form (`2025-10-17T20:22:08.939332`), in UTC.
fn aiperf_time(unix_s: f64) -> String {
    let at = time::OffsetDateTime::UNIX_EPOCH + Duration::from_secs_f64(unix_s.max(0.0));
    at.format(time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]"
    ))
    .unwrap_or_default()
}

/// `profile_export.jsonl` from the run's records file, written atomically.
fn aiperf_records(records: &Path, path: &Path, run_start_unix_ns: u64, stream: bool) -> Result<(), CollectorError> {
    use std::io::Write;
    let fail = |e: String| CollectorError::Output(format!("cannot write {}: {e}", path.display()));
    let tmp = path.with_file_name(".profile_export.jsonl.tmp");
    let written = (|| -> Result<(), String> {
        let mut out =
            std::io::BufWriter::new(crate::results_folder::write::create_fresh(&tmp).map_err(|e| e.to_string())?);
        let mut failure = None;
        crate::results_folder::history::for_each_record(records, |r| {
            if failure.is_some() {
                return;
            }
            if let Some(line) = record_line(r, run_start_unix_ns, stream) {
                let done = serde_json::to_writer(&mut out, &line)
                    .map_err(std::io::Error::from)
                    .and_then(|()| out.write_all(b"\n"));
                if let Err(e) = done {
                    failure = Some(e.to_string());
                }
            }
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        let file = out.into_inner().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, path).map_err(|e| e.to_string())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(fail)
}

/// `result.json`'s content.
fn run_result(run: &Prepared, f: &Figures<'_>) -> RunResult {
    let (outcome, paths) = (f.outcome, f.paths);
    let date = now_rfc3339();
    let mut result = RunResult::new(env!("CARGO_PKG_VERSION"), &date, &run.plan.output.label);
    result.partial = outcome.partial;
    result.backend = Some(run.plan.target.endpoint.backend().into());
    result.model_id = Some(run.model.clone());
    result.num_prompts = Some(outcome.tally.requests);
    result.burstiness = Some(run.plan.load.burstiness);
    result.set_metrics(&f.metrics);
    if let Some(s) = &outcome.steady {
        result.steady_output_throughput = Some(s.output_tokens_per_s);
        result.steady_window_s = Some((s.end_ms - s.start_ms) / 1e3);
    }
    if let Some(d) = &f.headline {
        result.set_spec_window(d);
    }
    if let Some(d) = &paths.notices.draft_length {
        result.spec_decode_mean_draft_tokens = Some(d.mean_draft_tokens);
        result.spec_decode_num_spec_tokens = Some(d.k);
    }
    result.errors = Some(Errors::ByKind(
        outcome
            .tally
            .failures
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
    result.config = Some(run_config(run));
    result.content_invalid_for_acceptance = Some(f.content_invalid.clone());
    result.acceptance_by_model = f.by_model.clone().unwrap_or_default();
    result.notices = Some(Notices {
        workload: f.workload.clone(),
        ..paths.notices.clone()
    });
    result.engine_load = paths.engine_load.clone();
    result.distributions = Some(Distributions::of(&outcome.tally));
    result.spec_decode = Some(SpecDecodeSection {
        scrape: f
            .results
            .iter()
            .map(|(label, r)| EndpointResult {
                endpoint: label.clone(),
                result: r.clone(),
            })
            .collect(),
        per_request: f.summary.clone(),
        per_request_rejected: paths.rejected.clone(),
        prometheus: paths.fleet.clone(),
        timeline: paths.timeline.points.clone(),
        resets: paths.timeline.reset_lines(),
    });
    result
}

/// The run's settings as written to `result.json`: header names only (values may be secret),
/// never the API key.
fn run_config(run: &Prepared) -> RunConfig {
    let plan = &run.plan;
    let (target, load, workload) = (&plan.target, &plan.load, &plan.workload);
    RunConfig {
        urls: target.urls.iter().map(|u| crate::net::redact_url(u)).collect(),
        endpoint: target.endpoint.name().into(),
        model: run.model.clone(),
        models: if run.models.len() > 1 {
            run.models.clone()
        } else {
            Vec::new()
        },
        stream: target.stream,
        concurrency: load.concurrency,
        request_rate: load.request_rate.filter(|r| r.is_finite()),
        arrival: load.arrival.name().into(),
        burstiness: load.burstiness,
        num_prompts: load.prompts,
        duration_s: match load.stop {
            Stop::Count => None,
            Stop::Until(d) => Some(d.as_secs_f64()),
        },
        warmup: load.warmup,
        seed: workload.seed,
        dataset: workload.dataset.name().into(),
        dataset_path: workload.dataset.path().map(|p| p.display().to_string()),
        categories: workload.categories.clone(),
        input_tokens: workload.input_tokens,
        input_tokens_stddev: workload.input_tokens_stddev,
        output_tokens: workload.output_tokens,
        output_tokens_stddev: workload.output_tokens_stddev,
        range_ratio: workload.range_ratio,
        prefix_tokens: workload.prefix_tokens,
        temperature: workload.temperature,
        ignore_eos: matches!(workload.dataset.name(), "synthetic" | "mooncake") || workload.ignore_eos,
        trace_fill: workload.dataset.trace_fill().map(|p| p.display().to_string()),
        metrics_endpoints: run.endpoints.iter().map(|e| crate::net::redact_url(&e.url)).collect(),
        scrape_interval_s: plan.scrape.interval.as_secs_f64(),
        timeout_s: target.timeout.as_secs_f64(),
        percentiles: plan.output.percentiles.clone(),
        header_names: target.header_names.clone(),
        api_key_set: target.api_key_set,
        goodput: plan.output.goodput.map(|s| s.by_name()).unwrap_or_default(),
        engine: run.engine.map(|e| e.name().to_string()),
        server_version: run.server_version.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_keeps_no_secret() {
        let args = [
            "/usr/bin/speclens",
            "bench",
            "--api-key",
            "sk-123",
            "--header=Authorization: Bearer x",
            "--url",
            "http://user:pw@host:8000",
            "--prometheus-password",
            "hunter2",
            "--label",
            "a b",
        ];
        let line = cli_command(args.iter().map(|s| s.to_string()));
        assert!(
            !line.contains("sk-123") && !line.contains("Bearer") && !line.contains("pw@") && !line.contains("hunter2"),
            "{line}"
        );
        assert!(
            line.starts_with("speclens bench --api-key '[redacted]' '--header=[redacted]'"),
            "{line}"
        );
        assert!(line.ends_with("--label 'a b'"), "{line}");
        assert_eq!(benchmark_id().len(), 12);
    }
}
