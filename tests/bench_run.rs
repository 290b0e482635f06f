//! `speclens bench` end to end: the real binary against `speclens sim` on 127.0.0.1, checking
//! that both spec-decode paths agree, the console and files keep the layouts of docs/FORMATS.md, failures
//! are classified without losing a record, timing is precise, secrets stay out, and Ctrl-C
//! leaves a valid partial run.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use speclens_shared::run::record::RequestRecord;
use speclens_shared::scrape::{console_block, SpecDecodeResult};

use crate::common::bench::{Bench, BenchRun};
use crate::common::{raw_server, read_records, run_speclens, Speclens};

fn sim(args: &[&str]) -> (Speclens, String) {
    let mut all = vec!["sim", "--port", "0"];
    all.extend_from_slice(args);
    let server = Speclens::start(&all);
    let url = server.url();
    (server, url)
}

/// Run `speclens bench` into a fresh folder; returns (stdout, folder guard, result.json).
fn bench(url: &str, extra: &[&str]) -> BenchRun {
    Bench::at(url).tokens(16, 32).args(extra).ok()
}

/// vLLM's counters: drafts, accepted tokens, draft tokens.
const ALL: [usize; 3] = [0, 1, 2];

/// The figures both paths count are equal, by index into (steps, accepted, drafted): an
/// engine's window lacks what it does not count (TensorRT-LLM's drafts, SGLang's draft tokens,
/// and SGLang's accepted tokens come from generated tokens, which stop at max_tokens).
fn assert_paths_agree(result: &Value, figures: &[usize]) {
    let per_request = &result["spec_decode"]["per_request"];
    assert!(per_request.is_object(), "per-request stats were collected: {result}");
    let pairs = [
        ("total_spec_decode_steps", "spec_decode_num_drafts"),
        ("total_accepted_draft_tokens", "spec_decode_accepted_tokens"),
        ("total_draft_tokens", "spec_decode_draft_tokens"),
    ];
    for i in figures {
        let (total, window) = pairs[*i];
        let w = result[window]
            .as_f64()
            .unwrap_or_else(|| panic!("{window} missing: {result}"));
        assert_eq!(per_request[total]["avg"].as_f64().unwrap(), w, "{total} vs {window}");
    }
}

#[test]
fn both_paths_agree_exactly_for_every_payload_shape() {
    // SGLang's per-request details come by detection, without --sglang-spec-details.
    for (payload, figures) in [("vllm", &ALL[..]), ("trtllm-pr19311", &[1, 2]), ("sglang", &[0])] {
        let (_sim, url) = sim(&[
            "--time-scale",
            "0",
            "--num-spec-tokens",
            "3",
            "--alpha",
            "0.7",
            "--engines",
            "2",
            "--payload",
            payload,
        ]);
        let BenchRun { result, .. } = bench(&url, &["--num-prompts", "40", "--concurrency", "8"]);
        assert_eq!(result["completed"], 40, "{payload}");
        assert_paths_agree(&result, figures);
        let engine = &result["spec_decode"]["scrape"][0]["result"]["status"];
        assert_eq!(engine, "ok", "{payload}");
    }
}

#[test]
fn console_and_files_keep_the_spec_formats() {
    let (_sim, url) = sim(&[
        "--time-scale",
        "0",
        "--num-spec-tokens",
        "4",
        "--acceptance-rates",
        "0.9,0.7,0.5,0.3",
    ]);
    let run = bench(&url, &["--num-prompts", "30", "--concurrency", "4", "--warmup", "5"]);
    let (stdout, result) = (&run.stdout, &run.result);
    let label = url.trim_start_matches("http://");
    let file = run
        .out
        .join(format!("performances/spec_decode_{}.json", label.replace(':', "_")));
    let text = std::fs::read_to_string(&file).unwrap();
    // Keys in AISBench's order (docs/FORMATS.md).
    let order = [
        "\"status\"",
        "\"url\"",
        "\"error\"",
        "\"data\"",
        "\"num_drafts\"",
        "\"draft_tokens\"",
        "\"accepted_tokens\"",
        "\"acceptance_rate\"",
        "\"acceptance_length\"",
        "\"per_position_acceptance_rates\"",
        "\"raw\"",
        "\"before\"",
        "\"after\"",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} in {text}")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    let parsed: SpecDecodeResult = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed.url, format!("{url}/metrics"));
    assert_eq!(parsed.status, speclens_shared::scrape::ResultStatus::Ok);
    // vLLM's layout first (the server's counters), then AIPerf's table and histogram line (the
    // per-request stats); with one endpoint AISBench's block would repeat vLLM's section, so
    // each source's acceptance is printed once.
    let vllm = stdout
        .find("============ Serving Benchmark Result ============")
        .unwrap();
    let vllm_spec = stdout
        .find("---------------Speculative Decoding---------------")
        .unwrap();
    let aiperf = stdout.find("Token-Weighted Acceptance Length (ratio)").unwrap();
    let histogram = stdout.find("  Accepted drafts per step (% of steps):  0: ").unwrap();
    assert!(vllm < vllm_spec && vllm_spec < aiperf && aiperf < histogram, "{stdout}");
    assert!(!stdout.contains(&console_block(label, &parsed)), "{stdout}");
    assert_eq!(stdout.matches("Acceptance length:").count(), 1, "{stdout}");
    assert!(
        stdout.contains("Successful requests:                     30        \n"),
        "{stdout}"
    );
    // Warm-up requests are recorded but outside the window.
    let recs = run.records();
    assert_eq!(recs.len(), 35);
    assert_eq!(recs.iter().filter(|r| r.warmup).count(), 5);
    assert_eq!(result["num_prompts"], 30);
    assert_eq!(result["schema_version"], 1);
    assert_paths_agree(result, &ALL);
    // AIPerf-named exports.
    let profile: Value =
        serde_json::from_str(&std::fs::read_to_string(run.out.join("profile_export_speclens.json")).unwrap()).unwrap();
    assert_eq!(profile["spec_decode_acceptance_length"]["unit"], "ratio");
    assert!(profile["pooled_spec_decode_acceptance_histogram"].is_object());
    let csv = std::fs::read_to_string(run.out.join("profile_export_speclens.csv")).unwrap();
    // AIPerf's rows, sorted by tag: the time-weighted active_decode_throughput first (its
    // sum and the percentiles AIPerf does not compute left empty), then decode_duration (a
    // streamed run), e2e_output_token_throughput and input_sequence_length.
    assert!(
        csv.starts_with(
            "Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\nActive Decode Throughput (tokens/sec),"
        ),
        "{csv}"
    );
    let active = csv.lines().nth(1).unwrap().split(',').collect::<Vec<_>>();
    assert_eq!(active.len(), 15, "{csv}");
    assert!(active[4..9].iter().all(|c| c.is_empty()) && active[10].is_empty() && !active[9].is_empty());
    let decode = csv.find("\nDecode Duration (ms),").expect("decode row");
    let e2e = csv
        .find("\nE2E Output Token Throughput (tokens/sec/user),")
        .expect("e2e row");
    let isl = csv.find("\nInput Sequence Length (tokens),").expect("isl row");
    assert!(decode < e2e && e2e < isl, "{csv}");
    assert!(
        csv.contains("\nTime to First Token (ms),") && csv.contains("\nInter Chunk Latency (ms),"),
        "{csv}"
    );
    assert!(
        csv.contains("\nAcceptance Length (ratio),") && csv.contains("\n\nMetric,Value\n"),
        "{csv}"
    );
}

#[test]
fn metrics_failures_give_the_right_na_reasons_and_the_run_completes() {
    let cases = [
        (
            vec!["--metrics-down"],
            "[before] Metrics endpoint returned HTTP 503; [after] Metrics endpoint returned HTTP 503",
        ),
        (
            vec!["--metrics-down-after", "1"],
            "[after] Metrics endpoint returned HTTP 503",
        ),
        (
            vec!["--metrics-down-until", "1"],
            "[before] Metrics endpoint returned HTTP 503",
        ),
    ];
    for (fault, reason) in cases {
        let mut args = vec!["--time-scale", "0", "--num-spec-tokens", "2"];
        args.extend(fault);
        let (_sim, url) = sim(&args);
        let BenchRun { stdout, result, .. } = bench(&url, &["--num-prompts", "10", "--concurrency", "2"]);
        let scrape = &result["spec_decode"]["scrape"][0]["result"];
        assert_eq!(scrape["status"], "na");
        assert_eq!(scrape["error"], reason);
        assert!(stdout.contains(&format!("not measured: {reason}\n")), "{stdout}");
        assert_eq!(result["completed"], 10);
        assert!(result["mean_ttft_ms"].as_f64().unwrap() > 0.0);
        assert!(
            result.get("spec_decode_acceptance_rate").is_none(),
            "no scrape-path figure without a window"
        );
    }
    // An unreachable metrics endpoint: the fetch failure, in the words of docs/METRICS.md §1.4.
    let (_sim, url) = sim(&["--time-scale", "0"]);
    let BenchRun { result, .. } = bench(
        &url,
        &["--num-prompts", "3", "--metrics-url", "http://127.0.0.1:9/metrics"],
    );
    let error = result["spec_decode"]["scrape"][0]["result"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("[before] Failed to fetch metrics from http://127.0.0.1:9/metrics: "),
        "{error}"
    );
}

#[test]
fn faults_are_counted_by_kind_and_no_record_is_lost() {
    let (_sim, url) = sim(&[
        "--time-scale",
        "0",
        "--num-spec-tokens",
        "2",
        "--fail-rate",
        "0.15",
        "--reset-rate",
        "0.1",
        "--truncate-rate",
        "0.1",
        "--hang-rate",
        "0.05",
        "--stall-rate",
        "0.1",
        "--stall-ms",
        "50",
    ]);
    let run = bench(
        &url,
        &["--num-prompts", "120", "--concurrency", "16", "--timeout", "1.5"],
    );
    let (stdout, result) = (&run.stdout, &run.result);
    let recs = run.records();
    let ids: BTreeSet<u64> = recs.iter().map(|r| r.request_id).collect();
    assert_eq!(recs.len(), 120, "one record per sent request");
    assert_eq!(ids, (0..120).collect(), "each exactly once");
    let errors = &result["errors"];
    for kind in ["http_status", "stream_cut", "timeout"] {
        assert!(
            errors[kind]["count"].as_u64().unwrap_or(0) > 0,
            "{kind} counted: {errors}"
        );
    }
    assert!(errors["http_status"]["first"]
        .as_str()
        .unwrap()
        .starts_with("HTTP 500: simulated engine failure"));
    let failed: u64 = errors
        .as_object()
        .unwrap()
        .values()
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(result["failed"].as_u64().unwrap(), failed);
    assert_eq!(result["completed"].as_u64().unwrap() + failed, 120);
    assert!(stdout.contains("Failed requests by kind:\n"), "{stdout}");
    // Every record ends where its exchange ended, a timed-out one after its 1.5 s; AIPerf's
    // figures from when each was due count the failed ones there.
    for r in &recs {
        let end = r.end_ms.expect("an end on every record");
        assert!(end >= r.start_ms, "{r:?}");
        if r.error_kind == Some(speclens_shared::run::record::ErrorKind::Timeout) {
            assert!(end - r.start_ms >= 1400.0, "{r:?}");
        }
    }
    let profile: Value =
        serde_json::from_str(&std::fs::read_to_string(run.out.join("profile_export_speclens.json")).unwrap()).unwrap();
    assert_eq!(profile["effective_latency"]["count"], 120);
    assert!(
        profile["effective_latency"]["max"].as_f64().unwrap() >= 1400.0,
        "{}",
        profile["effective_latency"]
    );
    // Once a request failed, AIPerf's error-adjusted latency: its top percentile is a failure.
    assert!(
        profile["adj_request_latency"]["p99"].is_null(),
        "{}",
        profile["adj_request_latency"]
    );
    assert_eq!(profile["adj_request_latency"]["count"], 120);
}

/// Every request sent has exactly one record, and every one either completed or failed.
fn assert_nothing_lost(run: &BenchRun, sent: u64) {
    let (recs, result) = (run.records(), &run.result);
    let ids: BTreeSet<u64> = recs.iter().map(|r| r.request_id).collect();
    assert_eq!(ids, (0..sent).collect(), "one record per sent request");
    assert_eq!(recs.len() as u64, sent);
    assert_eq!(
        result["completed"].as_u64().unwrap() + result["failed"].as_u64().unwrap(),
        sent
    );
}

#[test]
fn the_fault_suite_ends_each_run_with_figures_or_reasons() {
    // Oversized bodies: abandoned at the cap as bad responses, memory bounded.
    let (_sim, url) = sim(&[
        "--time-scale",
        "0",
        "--num-spec-tokens",
        "2",
        "--oversized-rate",
        "0.25",
        "--oversized-kib",
        "3072",
    ]);
    let run = bench(&url, &["--num-prompts", "24", "--max-response-mib", "2"]);
    let result = &run.result;
    assert_nothing_lost(&run, 24);
    let bad = &result["errors"]["bad_response"];
    assert!(bad["count"].as_u64().unwrap() > 0, "{result}");
    assert!(bad["first"].as_str().unwrap().contains("passed 2 MiB"), "{bad}");
    assert!(result["completed"].as_u64().unwrap() > 0);

    // A restart mid-run: the live scrapes see it, the window is N/A with the reset named, and
    // the per-request path keeps its figures.
    let (_sim, url) = sim(&[
        "--time-scale",
        "0",
        "--num-spec-tokens",
        "2",
        "--reset-counters-after",
        "6",
    ]);
    let run = bench(
        &url,
        &[
            "--num-prompts",
            "12",
            "--request-rate",
            "8",
            "--arrival",
            "constant",
            "--scrape-interval",
            "0.05",
        ],
    );
    let (stdout, result) = (&run.stdout, &run.result);
    assert_nothing_lost(&run, 12);
    let scrape = &result["spec_decode"]["scrape"][0]["result"];
    assert_eq!(scrape["status"], "na");
    assert!(
        scrape["error"]
            .as_str()
            .unwrap()
            .starts_with("Counter reset detected during the window by the live scrapes"),
        "{scrape}"
    );
    assert!(
        result.get("spec_decode_acceptance_rate").is_none(),
        "no short delta reported"
    );
    assert!(
        result["spec_decode"]["per_request"]["total_draft_tokens"]["avg"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(stdout.contains("Counter reset detected"), "{stdout}");

    // Garbage metrics text: the parse error is the reason; requests are unaffected.
    let (_sim, url) = sim(&["--time-scale", "0", "--num-spec-tokens", "2", "--malformed-metrics"]);
    let run = bench(&url, &["--num-prompts", "10"]);
    let result = &run.result;
    assert_nothing_lost(&run, 10);
    assert_eq!(result["completed"], 10);
    let error = result["spec_decode"]["scrape"][0]["result"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("[before] Invalid metrics text: invalid metrics text at line"),
        "{error}"
    );
}

#[test]
fn measured_ttft_and_itl_match_a_fixed_delay_server() {
    // Base arm, 30 ms per step, one request at a time: the server's truth is TTFT = one step
    // (the prefill) and ITL = one step per token. A sleep never ends early, so the lower bounds
    // are exact; a busy machine wakes the server late by a millisecond or two, well inside the
    // 10 % above. Steps this long make that margin hold on two busy cores.
    let (_sim, url) = sim(&["--step-ms", "30", "--time-scale", "1"]);
    let BenchRun { result, .. } = bench(&url, &["--num-prompts", "9", "--concurrency", "1"]);
    // Medians: one request slowed by the machine (CI runs other processes) moves a mean of 9.
    let ttft = result["median_ttft_ms"].as_f64().unwrap();
    let itl = result["median_itl_ms"].as_f64().unwrap();
    assert!(
        (30.0..33.0).contains(&ttft),
        "median TTFT {ttft} ms against a 30 ms server"
    );
    assert!(
        (29.5..33.0).contains(&itl),
        "median ITL {itl} ms against a 30 ms server"
    );
}

#[test]
fn the_api_key_never_reaches_a_file_or_the_console() {
    let key = "sk-speclens-secret-0123456789";
    let (_sim, url) = sim(&["--time-scale", "0", "--api-key", key, "--num-spec-tokens", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = Command::new(crate::common::speclens_bin())
        .args([
            "bench",
            "--url",
            &url,
            "--num-prompts",
            "5",
            "--output-tokens",
            "8",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("OPENAI_API_KEY", key)
        .env("SPECLENS_LOG", "debug")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let console = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        console.contains("Successful requests:                     5 "),
        "{console}"
    );
    assert!(!console.contains(key));
    for entry in walk(&out) {
        let text = std::fs::read_to_string(&entry).unwrap();
        assert!(!text.contains(key), "{} holds the key", entry.display());
    }
    let result: Value = serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["config"]["api_key_set"], true);
}

/// A URL with credentials goes through the general client (reqwest) rather than the stamping
/// transport: the run measures the same, and the password appears nowhere.
#[test]
fn a_url_with_credentials_takes_the_general_client_and_hides_them() {
    let (_sim, url) = sim(&["--time-scale", "0", "--num-spec-tokens", "2"]);
    let password = "pw-speclens-0123456789";
    let with_credentials = url.replacen("http://", &format!("http://bench:{password}@"), 1);
    let run = bench(&with_credentials, &["--num-prompts", "20", "--concurrency", "4"]);
    let (stdout, result) = (&run.stdout, &run.result);
    assert_eq!(result["completed"], 20, "{stdout}");
    assert_eq!(result["failed"], 0);
    assert_paths_agree(result, &ALL);
    let recs = run.records();
    assert!(recs.iter().all(|r| r.ttft_ms.is_some() && !r.itl_ms.is_empty()));
    assert!(!stdout.contains(password));
    for entry in walk(&run.out) {
        let text = std::fs::read_to_string(&entry).unwrap();
        assert!(!text.contains(password), "{} holds the password", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_signal_saves_a_valid_partial_run_and_exits_as_the_shell_reports_it() {
    let (_sim, url) = sim(&["--step-ms", "20", "--num-spec-tokens", "2"]);
    // Ctrl-C and what `timeout`, `docker stop` and a cancelled CI job send; then Ctrl-C twice
    // while requests of about 40 s are in flight with a 60 s drain: the second abandons them.
    for (signals, output_tokens, drain, code) in [
        (&["-INT"][..], "200", "0.3", 130),
        (&["-TERM"], "200", "0.3", 143),
        (&["-INT", "-INT"], "5000", "60", 130),
    ] {
        let signal = signals.join(" ");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let mut child = Command::new(crate::common::speclens_bin())
            .args([
                "bench",
                "--url",
                &url,
                "--num-prompts",
                "500",
                "--concurrency",
                "4",
                "--output-tokens",
                output_tokens,
                "--drain-timeout",
                drain,
                "--out",
                out.to_str().unwrap(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        for signal in signals {
            let status = Command::new("kill")
                .args([*signal, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
            std::thread::sleep(Duration::from_millis(300));
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let exit = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "bench did not stop after {signal}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(exit.code(), Some(code), "{signal}");
        let result: Value = serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
        assert_eq!(result["partial"], true);
        let recs = read_records(&out);
        assert!(!recs.is_empty() && recs.len() < 500, "{} records", recs.len());
        let ids: BTreeSet<u64> = recs.iter().map(|r| r.request_id).collect();
        assert_eq!(ids.len(), recs.len(), "no record twice");
        assert_eq!(ids, (0..recs.len() as u64).collect(), "every sent request is recorded");
        assert_eq!(
            result["completed"].as_u64().unwrap() + result["failed"].as_u64().unwrap(),
            recs.len() as u64
        );
    }
}

#[test]
fn several_servers_share_the_load_and_each_gets_its_block() {
    let (_a, url_a) = sim(&["--time-scale", "0", "--num-spec-tokens", "2", "--alpha", "0.8"]);
    let (_b, url_b) = sim(&[
        "--time-scale",
        "0",
        "--num-spec-tokens",
        "2",
        "--alpha",
        "0.5",
        "--engines",
        "2",
    ]);
    let run = bench(&url_a, &["--url", &url_b, "--num-prompts", "20", "--concurrency", "4"]);
    let (stdout, result) = (&run.stdout, &run.result);
    let recs = run.records();
    for url in [&url_a, &url_b] {
        assert_eq!(
            recs.iter().filter(|r| r.url.starts_with(url.as_str())).count(),
            10,
            "round-robin over {url}"
        );
        // With several endpoints, AISBench's block of each, byte for byte, after AIPerf's table.
        let label = url.trim_start_matches("http://");
        let file = run
            .out
            .join(format!("performances/spec_decode_{}.json", label.replace(':', "_")));
        let parsed: SpecDecodeResult = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let block = stdout
            .find(&console_block(label, &parsed))
            .unwrap_or_else(|| panic!("{label}: {stdout}"));
        assert!(
            stdout.find("Token-Weighted Acceptance Length (ratio)").unwrap() < block,
            "{stdout}"
        );
    }
    assert_eq!(result["spec_decode"]["scrape"].as_array().unwrap().len(), 2);
    assert_paths_agree(result, &ALL);
}

#[test]
fn a_duration_run_with_a_request_rate_stops_on_time() {
    let (_sim, url) = sim(&["--time-scale", "0"]);
    let run = bench(&url, &["--duration", "1.5", "--request-rate", "20", "--no-scrape"]);
    let result = &run.result;
    let sent = run.records().len() as f64;
    // A Poisson process at 20 req/s over 1.5 s: 30 expected; ±15 is beyond 2.7 σ.
    assert!((15.0..=45.0).contains(&sent), "{sent} requests");
    // First send to last completion against an instant server: the arrivals span the 1.5 s
    // (no arrival in the last 0.5 s of a 20 req/s Poisson process has odds of e^-10).
    let duration = result["duration"].as_f64().unwrap();
    assert!((1.0..=1.6).contains(&duration), "duration {duration} s");
    assert_eq!(result["config"]["request_rate"], 20.0);
}

#[test]
fn a_duration_run_without_a_rate_stops_on_time_too() {
    let (_sim, url) = sim(&["--time-scale", "0"]);
    let run = bench(&url, &["--duration", "1", "--concurrency", "4", "--no-scrape"]);
    let result = &run.result;
    // Requests go out back to back until the second is over, and an instant server answers
    // each at once: the run lasts the second, give or take one answer.
    let duration = result["duration"].as_f64().unwrap();
    assert!((0.95..=1.2).contains(&duration), "duration {duration} s");
    let sent = run.records().len() as u64;
    assert!(sent > 4, "{sent} requests");
    assert_eq!(
        result["completed"].as_u64().unwrap() + result["failed"].as_u64().unwrap(),
        sent
    );
}

/// A `/metrics` that never ends: a chunked 200 whose body goes on until the client hangs up.
fn endless_metrics() -> String {
    let base = raw_server(|_, mut stream| {
        use std::io::Write;
        let line = "vllm:num_requests_running{model_name=\"m\"} 1\n".repeat(1500);
        let chunk = format!("{:x}\r\n{line}\r\n", line.len());
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n");
        while stream.write_all(chunk.as_bytes()).is_ok() {}
    });
    format!("{base}/metrics")
}

#[test]
fn an_endless_metrics_body_is_cut_at_its_limit_and_the_run_goes_on() {
    let metrics = endless_metrics();
    let (_sim, url) = sim(&["--time-scale", "0"]);
    let BenchRun { result, .. } = bench(&url, &["--num-prompts", "10", "--metrics-url", &metrics]);
    assert_eq!(result["completed"], 10);
    let error = result["spec_decode"]["scrape"][0]["result"]["error"].as_str().unwrap();
    let cut = format!("Failed to fetch metrics from {metrics}: the answer passed 32 MiB and was not read further");
    assert_eq!(error, format!("[before] {cut}; [after] {cut}"));
    // `scrape` says the same and fails (a CI job can tell).
    let (code, out, err) = crate::common::run_speclens(&["scrape", &metrics]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("the answer passed 32 MiB"), "{err}");
}

/// A server that refuses every request with HTTP 401 and echoes the `Authorization` header it
/// got in its error, followed by terminal escape sequences (set the title, clear the screen).
fn echoing_server() -> String {
    raw_server(|head, mut stream| {
        use std::io::Write;
        let auth = head
            .lines()
            .find_map(|l| l.strip_prefix("authorization: ").or(l.strip_prefix("Authorization: ")))
            .unwrap_or("none");
        let body =
            serde_json::json!({"error": {"message": format!("key {auth} is not valid\u{1b}]0;pwned\u{7}\u{1b}[2J")}})
                .to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    })
}

#[test]
fn an_echoed_key_and_escape_sequences_reach_no_output() {
    let key = "sk-echo-5f3a9c2e71";
    let url = echoing_server();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (code, stdout, stderr) = crate::common::run_speclens(&[
        "bench",
        "--url",
        &url,
        "--model",
        "m",
        "--api-key",
        key,
        "--num-prompts",
        "3",
        "--no-scrape",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, 0, "no request succeeded");
    assert!(
        stdout.contains("key [redacted] is not valid") || stderr.contains("key [redacted] is not valid"),
        "{stdout}{stderr}"
    );
    for text in [&stdout, &stderr] {
        assert!(!text.contains(key), "{text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    }
    let records = read_records(&out);
    assert_eq!(records.len(), 3);
    assert!(
        records[0].error.as_deref().unwrap().contains("\\u{1b}]0;pwned"),
        "{:?}",
        records[0].error
    );
    let mut folders = vec![out.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).to_string();
            assert!(!text.contains(key), "{} holds the key", path.display());
        }
    }
    // A report of the run holds neither.
    let report = dir.path().join("report.html");
    let web = crate::common::workspace().join("web/dist");
    let (code, out_text, err_text) = crate::common::run_speclens(&[
        "report",
        out.to_str().unwrap(),
        "--web-dir",
        web.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out_text}{err_text}");
    assert!(!std::fs::read_to_string(&report).unwrap().contains(key));
}

/// A server whose every answer is a 200 of 24 MiB.
fn oversized_server() -> String {
    raw_server(|_, mut stream| {
        use std::io::Write;
        let mib = vec![b'x'; 1 << 20];
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            24usize << 20
        );
        for _ in 0..24 {
            if stream.write_all(&mib).is_err() {
                return;
            }
        }
    })
}

#[test]
fn forty_oversized_responses_in_flight_share_one_budget() {
    let url = oversized_server();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (peak_kb, _) = crate::common::speclens_peak_rss_kb(
        &[
            "bench",
            "--url",
            &url,
            "--model",
            "m",
            "--no-stream",
            "--no-scrape",
            "--num-prompts",
            "40",
            "--concurrency",
            "40",
            "--max-buffered-mib",
            "128",
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    // 40 × 24 MiB is 960 MiB; the budget holds what is buffered to 128 MiB.
    assert!(peak_kb > 0 && peak_kb < 400 * 1024, "peak RSS {peak_kb} kB");
    let recs = read_records(&out);
    assert_eq!(recs.len(), 40);
    let over = recs
        .iter()
        .filter(|r| {
            r.error
                .as_deref()
                .is_some_and(|e| e.contains("passed 128 MiB (--max-buffered-mib)"))
        })
        .count();
    assert!(over > 0, "some responses were over the budget");
    eprintln!("peak RSS {peak_kb} kB; {over} of 40 responses over the budget");
}

/// A server that answers every request with a login page (HTTP 200, `text/html`).
fn html_server() -> String {
    raw_server(|_, mut stream| {
        use std::io::Write;
        let body =
            "<!DOCTYPE html>\n<html>\n  <head><title>Sign in</title></head>\n  <body>Please sign in</body>\n</html>\n";
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    })
}

/// A server that answers every request with bytes that are not HTTP.
fn garbage_server() -> String {
    raw_server(|_, mut stream| {
        use std::io::Write;
        let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02garbage\r\n\r\n");
    })
}

#[test]
fn an_html_page_and_a_non_http_answer_are_bad_responses_not_cuts_or_connects() {
    for (server, kind, says) in [
        (
            html_server(),
            "bad_response",
            "a stream was asked for but the answer is not an SSE stream (text/html; charset=utf-8): <!DOCTYPE html> <html> <head><title>Sign in</title>",
        ),
        (
            garbage_server(),
            "bad_response",
            "the server's answer is not an HTTP response: ",
        ),
    ] {
        // Our own transport (plain http) and reqwest's (credentials in the URL).
        let with_credentials = server.replace("http://", "http://user:pass@");
        for url in [server.clone(), with_credentials] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("run");
            let (code, stdout, stderr) = crate::common::run_speclens(&[
                "bench",
                "--url",
                &url,
                "--model",
                "m",
                "--num-prompts",
                "2",
                "--no-scrape",
                "--out",
                out.to_str().unwrap(),
            ]);
            assert_ne!(code, 0, "nothing succeeded: {stdout}{stderr}");
            let result: Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
            let errors = result["errors"].as_object().unwrap();
            assert_eq!(errors.keys().collect::<Vec<_>>(), [kind], "{url}: {result}");
            let first = errors[kind]["first"].as_str().unwrap();
            assert!(first.starts_with(says), "{url}: {first}");
        }
    }
}

#[test]
fn a_signal_during_a_sweep_keeps_the_finished_points_and_leaves_the_stopped_one_out() {
    let (_spec, spec_url) = sim(&["--step-ms", "20", "--num-spec-tokens", "2"]);
    let (_base, base_url) = sim(&["--step-ms", "20"]);
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sweep");
        let mut child = Command::new(crate::common::speclens_bin())
            .args(["sweep", "--spec-url", &spec_url, "--base-url", &base_url])
            .args([
                "--concurrency",
                "1,2",
                "--requests-per-slot",
                "1",
                "--min-requests",
                "2",
            ])
            .args(["--repeats", "1", "--output-tokens", "150", "--drain-timeout", "0.3"])
            .args(["--out", out.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signal once the first point's file is written and the second point is measuring (its
        // records file is open).
        let point_files = |out: &Path| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(out)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json") && n != "sweep.json")
                .collect();
            names.sort();
            names
        };
        let measuring = |out: &Path| {
            std::fs::read_dir(out)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| e.path().join(".records.jsonl.tmp").is_file())
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while point_files(&out).is_empty() || !measuring(&out) {
            assert!(std::time::Instant::now() < deadline, "the second point did not start");
            assert!(child.try_wait().unwrap().is_none(), "the sweep ended early");
            std::thread::sleep(Duration::from_millis(20));
        }
        let finished = point_files(&out);
        std::thread::sleep(Duration::from_millis(200));
        let kill = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{signal}: {stderr}");
        assert!(
            stderr.contains("the sweep's finished points and their table are saved"),
            "{stderr}"
        );
        assert_eq!(
            point_files(&out),
            finished,
            "{signal}: no other point was run or written"
        );
        // sweep.json holds the finished point only; the stopped one is not in the table.
        let table: Value = serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
        let head = crate::common::head_table(&table);
        let rows = head["rows"].as_array().unwrap();
        let measured: usize = rows
            .iter()
            .map(|r| {
                usize::from(!r["spec_output_tokens_per_s"].is_null())
                    + usize::from(!r["base_output_tokens_per_s"].is_null())
            })
            .sum();
        assert_eq!(measured, 1, "{signal}: {table}");
        assert!(head["crossing"].is_null(), "no crossing from one point: {table}");
        // The stopped point's own folder is saved and marked partial.
        let partial: Vec<Value> = std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .map(|e| e.path().join("result.json"))
            .filter(|p| p.is_file())
            .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
            .filter(|r: &Value| r["partial"] == true)
            .collect();
        assert_eq!(partial.len(), 1, "{signal}: the stopped point is saved as partial");
    }
}

#[test]
fn a_full_disk_names_each_file_and_what_was_saved_and_the_figures_still_print() {
    let (_sim, url) = sim(&["--time-scale", "0", "--num-spec-tokens", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    let copy = dir.path().join("copy");
    std::fs::create_dir(&disk).unwrap();
    // A 48 KiB tmpfs of its own (a user and mount namespace: no root needed); what the run left
    // on it is copied out before the namespace goes.
    let script = format!(
        "mount -t tmpfs -o size=48k tmpfs '{disk}' || exit 99; \"$0\" \"$@\"; rc=$?; cp -r '{disk}' '{copy}'; exit $rc",
        disk = disk.display(),
        copy = copy.display()
    );
    let out = disk.join("run");
    let output = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .arg(crate::common::speclens_bin())
        .args(["bench", "--url", &url, "--num-prompts", "300", "--concurrency", "8"])
        .args(["--output-tokens", "16", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        !stderr.starts_with("unshare:") && output.status.code() != Some(99),
        "this test needs user namespaces (unshare -rm) to mount a small tmpfs: {stderr}"
    );
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    // The records file filled the disk: named with its path, the run went on.
    let records_tmp = format!(
        "cannot write {}: No space left on device",
        out.join(".records.jsonl.tmp").display()
    );
    assert!(stderr.contains(&records_tmp), "{stderr}");
    assert!(stderr.contains("the run goes on"), "{stderr}");
    // The figures of all 300 requests still reach the console.
    let successful = stdout.lines().find(|l| l.starts_with("Successful requests:"));
    assert_eq!(
        successful.map(|l| l.split_whitespace().last()),
        Some(Some("300")),
        "{stdout}"
    );
    // The error says what could not be written and what was saved, and the copy agrees.
    assert!(
        stderr.contains("not every file of the run could be written"),
        "{stderr}"
    );
    let saved = stderr.split("Saved in ").nth(1).unwrap_or_else(|| panic!("{stderr}"));
    let (kept, total) = saved
        .split("records.jsonl (the first ")
        .nth(1)
        .and_then(|rest| rest.split(" records)").next())
        .and_then(|n| n.split_once(" of "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(total, "300");
    let records = std::fs::read_to_string(copy.join("run/records.jsonl")).unwrap();
    assert!(
        records.is_empty() || records.ends_with('\n'),
        "a cut last line is dropped"
    );
    let complete = records.matches('\n').count();
    assert_eq!(kept.parse::<usize>().unwrap(), complete);
    assert!(complete < 300);
    for line in records.lines().take(complete) {
        serde_json::from_str::<RequestRecord>(line).unwrap();
    }
    // No temporary is left taking the space.
    let left: Vec<_> = std::fs::read_dir(copy.join("run"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // No result.json was written: `read` shows the run from the records it kept, as partial
    // (#63 item 14: nothing showed it).
    let (code, stdout, stderr) = run_speclens(&["read", copy.join("run").to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("records.jsonl")
            && stderr.contains(&format!(
                "recovered from the {complete} records of a run whose result was not saved"
            )),
        "{stdout}{stderr}"
    );
}

#[test]
fn a_server_without_speculation_is_named_with_the_flags_that_turn_it_on() {
    let (_sim, url) = sim(&["--time-scale", "0"]);
    let BenchRun { stdout, result, .. } = bench(&url, &["--num-prompts", "4"]);
    assert_eq!(result["completed"], 4);
    // vLLM's summary keeps its section and says why it is empty; one line names the flags.
    assert!(
        stdout.contains(
            "---------------Speculative Decoding---------------\nnot measured: the server shows no speculation\n"
        ),
        "{stdout}"
    );
    assert_eq!(
        stdout
            .matches(speclens_shared::run::record::NO_SPECULATION_HINT)
            .count(),
        1,
        "{stdout}"
    );
    // A speculative server never gets the hint.
    let (_spec, url) = sim(&["--time-scale", "0", "--num-spec-tokens", "2"]);
    let BenchRun { stdout, .. } = bench(&url, &["--num-prompts", "4"]);
    assert!(!stdout.contains("shows no speculati"), "{stdout}");
    assert!(stdout.contains("Acceptance length:"), "{stdout}");
}
