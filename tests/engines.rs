//! Engines as the target names itself: the engine read from `/v1/models` (`owned_by`) decides
//! which engine-specific request fields are sent (SGLang's per-request stats by default to
//! SGLang, never to TensorRT-LLM, whose request models refuse unknown fields), `--engine`
//! overrides it, and `result.json` records it. Against the sim in each engine's shape.

use std::time::Duration;

use serde_json::json;

use crate::common::bench::Bench;
use crate::common::{post_json, run_speclens_within, Speclens};

const LIMIT: Duration = Duration::from_secs(60);

/// `bench` of 6 short requests; its stderr and `result.json`.
fn bench(url: &str, extra: &[&str]) -> (String, serde_json::Value) {
    let run = Bench::at(url)
        .prompts(6)
        .output_tokens(16)
        .quiet()
        .args(extra)
        .within(LIMIT)
        .ok();
    (run.stderr, run.result)
}

#[test]
fn an_sglang_server_gets_its_per_request_field_without_a_flag() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "sglang"]);
    let (_, result) = bench(&sim.url(), &[]);
    assert_eq!(result["config"]["engine"], "sglang");
    assert_eq!(result["completed"], 6);
    assert_eq!(
        result["spec_decode"]["per_request"]["spec_decode_steps"]["count"], 6,
        "every request carried SGLang's stats: {}",
        result["spec_decode"]["per_request"]
    );
    // Named otherwise, the server is not asked: no per-request stats.
    let (_, named) = bench(&sim.url(), &["--engine", "vllm"]);
    assert_eq!(named["config"]["engine"], "vllm");
    assert!(
        named["spec_decode"]["per_request"].is_null(),
        "{}",
        named["spec_decode"]
    );
}

#[tokio::test]
async fn a_tensorrt_llm_server_never_gets_sglang_s_field() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "trtllm"]);
    // As trtllm-serve: an unknown request field is refused.
    let (status, body) = post_json(
        &format!("{}/v1/chat/completions", sim.url()),
        &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "return_spec_tokens_details": true}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("return_spec_tokens_details"), "{body}");

    let (stderr, result) = bench(&sim.url(), &["--sglang-spec-details"]);
    assert_eq!(result["config"]["engine"], "trtllm");
    assert_eq!(
        (result["completed"].as_u64(), result["failed"].as_u64()),
        (Some(6), Some(0))
    );
    assert!(
        stderr.contains("--sglang-spec-details is not sent to a TensorRT-LLM server"),
        "{stderr}"
    );
}

/// The run's records (warm-up left out) of a `bench` into `dir`.
fn bench_records(
    url: &str,
    extra: &[&str],
) -> (
    String,
    serde_json::Value,
    Vec<speclens_shared::run::record::RequestRecord>,
) {
    let run = Bench::at(url)
        .prompts(8)
        .output_tokens(24)
        .quiet()
        .args(extra)
        .within(LIMIT)
        .ok();
    let records = run.records();
    (run.stderr, run.result, records)
}

/// vLLM 0.33's `--enable-per-request-metrics`: each response's `metrics` carries the engine's
/// queue time and TTFT; records keep them, `result.json` splits TTFT into the server's queue,
/// the server's TTFT and what lies outside the server (network, client).
#[test]
fn vllm_0_33_server_timings_split_ttft_in_records_and_the_result() {
    // Two sequences at a time, 8 requests 4 at a time, 5 ms steps: half of them queue.
    let sim = Speclens::start(&[
        "sim",
        "--port",
        "0",
        "--num-spec-tokens",
        "3",
        "--alpha",
        "0.7",
        "--step-ms",
        "5",
        "--max-num-seqs",
        "2",
        "--enable-per-request-metrics",
    ]);
    for extra in [&[][..], &["--no-stream"][..]] {
        let mut args = vec!["--concurrency", "4"];
        args.extend_from_slice(extra);
        let (_, result, records) = bench_records(&sim.url(), &args);
        let timings: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r.ttft_ms.unwrap(),
                    r.server_timings.expect("the server's timings, in every record"),
                )
            })
            .collect();
        for (client_ttft, server) in &timings {
            // vLLM 0.33's TTFT counts from scheduling, after the queue: the client waited for
            // both.
            let (queue, ttft) = (server.queue_time_ms.unwrap(), server.time_to_first_token_ms.unwrap());
            assert!(ttft > 0.0 && queue >= 0.0, "{extra:?}: {server:?}");
            assert!(
                *client_ttft >= queue + ttft,
                "{extra:?}: the client's TTFT {client_ttft} below the server's queue {queue} and TTFT {ttft}"
            );
            assert!(server.generation_time_ms.unwrap() > 0.0, "{server:?}");
        }
        let queued = timings.iter().filter(|(_, s)| s.queue_time_ms.unwrap() >= 4.0).count();
        assert!(queued >= 2, "{extra:?}: requests waited for a slot: {timings:?}");
        assert_eq!(result["server_timed_requests"], 8, "{extra:?}");
        let mean = |f: &dyn Fn(&(f64, speclens_shared::request::per_request::ServerTimings)) -> f64| {
            timings.iter().map(f).sum::<f64>() / timings.len() as f64
        };
        let close = |key: &str, want: f64| {
            let got = result[key].as_f64().unwrap_or_else(|| panic!("{key} in result.json"));
            assert!(
                (got - want).abs() < 1e-6 * want.abs().max(1.0),
                "{key}: {got} vs {want}"
            );
        };
        close("mean_server_queue_time_ms", mean(&|(_, s)| s.queue_time_ms.unwrap()));
        close(
            "mean_server_time_to_first_token_ms",
            mean(&|(_, s)| s.time_to_first_token_ms.unwrap()),
        );
        close(
            "mean_ttft_outside_server_ms",
            mean(&|(c, s)| c - s.queue_time_ms.unwrap() - s.time_to_first_token_ms.unwrap()),
        );
        assert!(result["p99_server_queue_time_ms"].is_number(), "{result}");
        // The split's three means add up to the mean client TTFT of the requests timed.
        let run: speclens_shared::results::run_result::RunResult = serde_json::from_value(result.clone()).unwrap();
        let split = run.ttft_split().expect("a TTFT split");
        let total = split.queue_ms + split.in_server_ms + split.outside_server_ms;
        let want = mean(&|(c, _)| *c);
        assert!((total - want).abs() < 1e-6 * want, "{total} vs {want}");
        assert!(
            split.sentence().starts_with(&format!(
                "TTFT split (mean of the 8 requests the server timed): {want:.2} ms = "
            )),
            "{}",
            split.sentence()
        );
        // TTFT's own figures are untouched by the server's families.
        assert!(result.get("p99_server_ttft_ms").is_none());
    }
}

#[test]
fn a_tensorrt_llm_before_the_per_position_pair_takes_its_length_from_its_gauges() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "trtllm", "--no-per-position-pair"]);
    // 8 answers of 200 tokens: some 630 steps, so the mean acceptance length is within 0.05
    // (one standard deviation) of the sim's 2.53. TensorRT-LLM's gauges hold the iterations
    // since the previous scrape: no live scrape during the run (a slow machine took one), so
    // the after-scrape's gauge covers exactly the window.
    let (_, result, records) = bench_records(&sim.url(), &["--output-tokens", "200", "--scrape-interval", "3600"]);
    let window = &result["spec_decode"]["scrape"][0]["result"];
    assert_eq!(window["status"], "ok", "{window}");
    assert!(
        window["url"].as_str().unwrap().ends_with("/prometheus/metrics"),
        "{window}"
    );
    let data = &window["data"];
    assert!(data["num_drafts"].is_null(), "TensorRT-LLM counts no drafts: {data}");
    let (drafted, accepted) = (
        data["draft_tokens"].as_u64().unwrap(),
        data["accepted_tokens"].as_u64().unwrap(),
    );
    assert!(drafted > 0 && accepted <= drafted, "{data}");
    assert_eq!(
        result["spec_decode_acceptance_rate"].as_f64(),
        Some(accepted as f64 / drafted as f64 * 100.0)
    );
    let length = result["spec_decode_acceptance_length"]
        .as_f64()
        .expect("a length from the gauges");
    // α = 0.7 at each of k = 3 positions: E = 1 + 0.7 + 0.49 + 0.343 = 2.533.
    assert!(
        (length - 2.533).abs() < 0.2,
        "acceptance length {length}, the sim's is 2.533"
    );
    // The gauge covers the drafts since the before-scrape; the sim served this run only,
    // always drafting k = 3, so it is 1 + k × the window's accepted ÷ drafted.
    let from_counters = 1.0 + 3.0 * accepted as f64 / drafted as f64;
    assert!(
        (length - from_counters).abs() < 1e-9,
        "{length} against {from_counters}"
    );
    // Per request: the released length-only figure, from every response.
    let partial: Vec<f64> = records
        .iter()
        .filter_map(|r| r.spec_decode_partial.as_ref()?.mean_acceptance_length)
        .collect();
    assert_eq!(partial.len(), 8, "every response carried avg_decoded_tokens_per_iter");
    assert!(records.iter().all(|r| r.spec_decode_acceptance.is_none()));
    assert_eq!(
        result["spec_decode"]["per_request"]["spec_decode_reported_acceptance_length"]["count"],
        8
    );
}

#[test]
fn a_tensorrt_llm_without_its_metrics_options_is_named_in_the_reason() {
    for (flags, option) in [
        (&["--no-perf-metrics"][..], "return_perf_metrics"),
        (
            &["--no-iter-perf-stats", "--no-per-position-pair"][..],
            "enable_iter_perf_stats",
        ),
    ] {
        let mut args = vec!["--payload", "trtllm"];
        args.extend_from_slice(flags);
        let sim = Speclens::instant_spec_sim("0.7", &args);
        let (_, result, _) = bench_records(&sim.url(), &[]);
        let reason = result["spec_decode"]["scrape"][0]["result"]["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(reason.contains(option), "{flags:?}: {reason}");
        assert_eq!(result["completed"], 8, "a failed scrape never fails the run");
    }
}

/// TensorRT-LLM's per-position pair is added as each request finishes, so over a window that
/// holds whole requests its figures are exactly what the requests' own stats add up to — with
/// the iteration counters off too (`enable_iter_perf_stats` is not needed for the pair).
#[test]
fn tensorrt_llm_s_per_position_pair_gives_the_window_its_requests_add_up_to() {
    for extra in [&[][..], &["--no-iter-perf-stats"][..]] {
        let mut args = vec!["--payload", "trtllm-pr19311"];
        args.extend_from_slice(extra);
        let sim = Speclens::instant_spec_sim("0.7", &args);
        let (_, result, records) = bench_records(&sim.url(), &["--no-stream", "--output-tokens", "64"]);
        let window = &result["spec_decode"]["scrape"][0]["result"];
        assert_eq!(window["status"], "ok", "{extra:?}: {window}");
        let data = &window["data"];
        let specs: Vec<_> = records
            .iter()
            .filter_map(|r| r.spec_decode_acceptance.as_ref())
            .collect();
        assert_eq!(specs.len(), 8, "every request's own stats");
        let steps: u64 = specs.iter().map(|s| s.num_spec_steps).sum();
        let drafted: u64 = specs.iter().map(|s| s.num_draft_tokens).sum();
        let accepted: u64 = specs.iter().map(|s| s.num_accepted_draft_tokens).sum();
        assert!(steps > 50, "{steps} steps");
        assert_eq!(data["num_drafts"].as_u64(), Some(steps), "{extra:?}: {data}");
        assert_eq!(data["draft_tokens"].as_u64(), Some(drafted), "{data}");
        assert_eq!(data["accepted_tokens"].as_u64(), Some(accepted), "{data}");
        let length = data["acceptance_length"].as_f64().unwrap();
        assert_eq!(length, 1.0 + accepted as f64 / steps as f64, "{data}");
        // Position i is accepted by every step that accepted more than i drafts.
        for pos in 0..3u32 {
            let at_pos: u64 = specs
                .iter()
                .flat_map(|s| s.acceptance_histogram.iter())
                .filter(|(j, _)| **j > pos)
                .map(|(_, n)| n)
                .sum();
            let rate = data["per_position_acceptance_rates"][pos.to_string()].as_f64();
            assert_eq!(rate, Some(at_pos as f64 / steps as f64), "position {pos}: {data}");
        }
        assert_eq!(data["spec_config"]["num_spec_tokens"], 3, "{data}");
        assert_eq!(data["spec_config"]["method"], "Simulated", "{data}");
    }
}

#[test]
fn the_pending_tensorrt_llm_shape_gives_full_records() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "trtllm-pr19311"]);
    let (_, _, records) = bench_records(&sim.url(), &["--no-stream"]);
    assert!(
        records.iter().all(|r| r.spec_decode_acceptance.is_some()),
        "PR #19311's per-choice object"
    );
}

/// SGLang PR #34814 (open), `--speculative-decoding-stats summary|detailed`: every record has
/// the verifier's exact counts (k drafted per step, not "configured"), the per-step lists with
/// `detailed` only, streamed (each choice's entry on its finishing chunk) or not; the records'
/// steps are the window's verify calls, and the run names the unmerged PR it read.
#[tokio::test]
async fn the_pending_sglang_shape_gives_exact_records_whose_steps_are_the_window_s() {
    use speclens_shared::request::per_request::SGLANG_PR34814;
    for level in ["summary", "detailed"] {
        let sim = Speclens::instant_spec_sim("0.7", &["--payload", "sglang-pr34814", "--per-request-metrics", level]);
        for extra in [&[][..], &["--no-stream"][..]] {
            let what = format!("{level} {extra:?}");
            let (_, result, records) = bench_records(&sim.url(), extra);
            let mut steps = 0;
            for r in &records {
                let rec = r
                    .spec_decode_acceptance
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: {r:?}"));
                assert_eq!(rec.unmerged_pr.as_deref(), Some(SGLANG_PR34814), "{what}");
                assert_eq!(
                    rec.num_draft_tokens,
                    3 * rec.num_spec_steps,
                    "{what}: exact, k = 3 a step"
                );
                assert!(rec.num_accepted_draft_tokens <= rec.num_draft_tokens, "{what}");
                let hist: u64 = rec.acceptance_histogram.values().sum();
                match level {
                    "detailed" => {
                        let per_step = rec.per_step_accepted.as_ref().expect("detailed: per-step lists");
                        assert_eq!(per_step.len() as u64, rec.num_spec_steps, "{what}");
                        assert_eq!(per_step.iter().sum::<u64>(), rec.num_accepted_draft_tokens, "{what}");
                        assert_eq!(hist, rec.num_spec_steps, "{what}: the histogram from the lengths");
                    }
                    _ => assert!(rec.per_step_accepted.is_none() && hist == 0, "{what}: {rec:?}"),
                }
                steps += rec.num_spec_steps;
            }
            let window = &result["spec_decode"]["scrape"][0]["result"]["data"];
            assert_eq!(window["num_drafts"].as_u64(), Some(steps), "{what}: {window}");
            let notes = result["spec_decode"]["per_request"]["notes"].to_string();
            assert!(notes.contains(SGLANG_PR34814), "{what}: {notes}");
        }
        // n = 2 in one answer: one entry per choice, by index.
        let (status, body) = post_json(
            &format!("{}/v1/chat/completions", sim.url()),
            &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 12, "n": 2, "ignore_eos": true}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let entries = body["sglext"]["speculative_decoding_stats"].as_array().unwrap();
        let indices: Vec<u64> = entries.iter().filter_map(|e| e["index"].as_u64()).collect();
        assert_eq!(indices, [0, 1], "{body}");
        assert!(entries.iter().all(|e| e["mode"] == level), "{body}");
    }
}

/// mlx-vlm's `timings.draft_rounds` beside llama.cpp's `draft_n` / `draft_n_accepted`: a length
/// per request, (predicted_n − 1) ÷ draft_rounds, whose pooled value is the window's length
/// (to the steps the token limit cut short), never one from predicted_n − draft_n_accepted.
#[test]
fn the_llama_cpp_family_s_draft_rounds_give_a_length_per_request() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "llamacpp-draft-rounds"]);
    let (_, result, records) = bench_records(&sim.url(), &["--output-tokens", "200"]);
    let (mut tokens, mut rounds) = (0.0, 0.0);
    for r in &records {
        let partial = r.spec_decode_partial.as_ref().unwrap_or_else(|| panic!("{r:?}"));
        let length = partial.mean_acceptance_length.expect("a length from draft_rounds");
        assert!((1.0..=4.0).contains(&length), "{length}");
        assert!(partial.num_draft_tokens.is_some() && partial.num_accepted_draft_tokens.is_some());
        tokens += (r.output_tokens - 1) as f64;
        rounds += (r.output_tokens - 1) as f64 / length;
    }
    let window = result["spec_decode"]["scrape"][0]["result"]["data"]["acceptance_length"]
        .as_f64()
        .unwrap_or_else(|| panic!("{result}"));
    let pooled = tokens / rounds;
    assert!(
        (pooled - window).abs() < 0.05,
        "the requests' {pooled} vs the window's {window}"
    );
    let notes = result["spec_decode"]["per_request"]["notes"].to_string();
    assert!(notes.contains("(predicted_n − 1) ÷ draft_rounds"), "{notes}");
}

#[test]
fn sglang_s_counters_give_the_length_its_requests_add_up_to() {
    // SGLang 0.5.23 labels its generation and request counters `is_streaming` and creates a
    // label set on its first increment: the first run's "before" has none (zero), the second
    // run's adds the non-streamed set beside the streamed one; each window sums them.
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "sglang"]);
    for extra in [&[][..], &["--no-stream"][..]] {
        let (_, result, records) = bench_records(&sim.url(), extra);
        let window = &result["spec_decode"]["scrape"][0]["result"]["data"];
        let steps: u64 = records
            .iter()
            .map(|r| {
                r.spec_decode_acceptance
                    .as_ref()
                    .expect("SGLang's details, sent by detection")
                    .num_spec_steps
            })
            .sum();
        let output: u64 = records.iter().map(|r| r.output_tokens).sum();
        let want = (output - records.len() as u64) as f64 / steps as f64;
        let got = result["spec_decode_acceptance_length"].as_f64().unwrap();
        assert!(
            (got - want).abs() < 1e-9,
            "{extra:?}: window {got} vs the requests' {want}: {window}"
        );
        assert_eq!(
            window["num_drafts"].as_u64(),
            Some(steps),
            "verify calls = the requests' steps"
        );
        assert!(window["draft_tokens"].is_null(), "{window}");
        let notes = result["spec_decode"]["per_request"]["notes"].to_string();
        assert!(notes.contains("configured"), "{notes}");
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (_, text) = runtime.block_on(crate::common::get_text(&format!("{}/metrics", sim.url())));
    for streaming in ["true", "false"] {
        assert!(
            text.contains(&format!(
                "sglang:num_requests_total{{engine_type=\"unified\",is_streaming=\"{streaming}\""
            )),
            "{text}"
        );
    }
}

#[tokio::test]
async fn sglang_n_above_one_is_a_list_and_no_steps_no_field() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "sglang"]);
    let url = format!("{}/v1/chat/completions", sim.url());
    let (status, body) = post_json(
        &url,
        &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 12, "n": 2, "ignore_eos": true,
                "return_spec_tokens_details": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["sglext"]["spec_tokens_details"].as_array().map(Vec::len),
        Some(2),
        "{body}"
    );
    // One token: prefill only, no verify step, no field; a run counts it as zero-step.
    let (_, one) = post_json(
        &url,
        &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, "return_spec_tokens_details": true}),
    )
    .await;
    assert!(one.get("sglext").is_none(), "{one}");
    let (_, result, _) = bench_records(&sim.url(), &["--output-tokens", "1", "--ignore-eos"]);
    assert_eq!(
        result["spec_decode"]["per_request"]["spec_decode_zero_step_requests"]["avg"], 8.0,
        "{}",
        result["spec_decode"]["per_request"]
    );
}

#[test]
fn llama_cpp_rounded_counters_are_flagged_and_its_timings_give_a_rate() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "llamacpp", "--counter-start", "2000000"]);
    let (_, result, records) = bench_records(&sim.url(), &[]);
    let data = &result["spec_decode"]["scrape"][0]["result"]["data"];
    assert!(data["notes"].to_string().contains("6 significant digits"), "{data}");
    let rates = data["per_position_acceptance_rates"].as_object().unwrap();
    assert!(rates.values().all(|r| r.as_f64().unwrap() <= 1.0), "{data}");
    let partial: Vec<_> = records.iter().filter_map(|r| r.spec_decode_partial.as_ref()).collect();
    assert_eq!(partial.len(), 8, "every response carried timings.draft_n");
    let (accepted, drafted) = partial.iter().fold((0, 0), |(a, d), p| {
        (
            a + p.num_accepted_draft_tokens.unwrap(),
            d + p.num_draft_tokens.unwrap(),
        )
    });
    let overall = &result["spec_decode"]["per_request"]["spec_decode_overall_draft_acceptance_rate"]["avg"];
    assert_eq!(overall.as_f64(), Some(accepted as f64 / drafted as f64 * 100.0));
}

/// `speclens probe --json` of a server; the findings.
pub fn probe(url: &str) -> serde_json::Value {
    let (code, stdout, stderr) = run_speclens_within(&["probe", url, "--json"], LIMIT);
    assert_eq!(code, 0, "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The strings of a findings list, joined, for `contains` checks.
pub fn joined(findings: &serde_json::Value, key: &str) -> String {
    findings[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} in {findings}"))
        .iter()
        .filter_map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `probe` names each engine shape the sim speaks: the engine, whether it speculates, which
/// spec-decode families its metrics export, the per-request level, what cannot be measured and
/// the option that turns it on, and the next commands with the URL filled in.
#[test]
fn probe_names_what_each_engine_gives_and_what_turns_the_rest_on() {
    // (payload flags, engine, per-request level, a family it exports, what it cannot measure)
    let cases: [(&[&str], &str, &str, &str, &str); 5] = [
        (
            &["--payload", "vllm"],
            "vllm",
            "summary",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total",
            "",
        ),
        (
            &["--payload", "vllm", "--per-request-metrics", "none"],
            "vllm",
            "none",
            "vllm:spec_decode_num_drafts_total",
            "--per-request-spec-decode-metrics summary",
        ),
        (
            &["--payload", "trtllm"],
            "trtllm",
            "partial",
            "trtllm_spec_decode_acceptance_length",
            "per_request_spec_decode_stats",
        ),
        (
            &["--payload", "trtllm-pr19311"],
            "trtllm",
            "summary",
            "trtllm_spec_decode_num_draft_tokens_total",
            "",
        ),
        (
            &["--payload", "sglang"],
            "sglang",
            "summary",
            "sglang:spec_verify_calls_total",
            "",
        ),
    ];
    for (flags, engine, level, family, cannot) in cases {
        let sim = Speclens::instant_spec_sim("0.7", flags);
        let found = probe(&sim.url());
        let what = format!("{flags:?}: {found}");
        assert_eq!(found["reachable"], true, "{what}");
        assert_eq!(found["engine"], engine, "{what}");
        assert_eq!(found["speculates"], true, "{what}");
        assert_eq!(found["per_request"], level, "{what}");
        assert!(joined(&found, "spec_families").contains(family), "{what}");
        if cannot.is_empty() {
            assert_eq!(found["cannot"], json!([]), "{what}");
        } else {
            assert!(joined(&found, "cannot").contains(cannot), "{what}");
        }
        assert!(
            joined(&found, "measures").contains("acceptance rate and length from the"),
            "{what}"
        );
        assert!(
            joined(&found, "next").contains(&format!("speclens bench --url {} ", sim.url().trim_end_matches('/'))),
            "{what}"
        );
    }
    // TensorRT-LLM's Prometheus text is found where trtllm-serve mounts it.
    let trt = Speclens::instant_spec_sim("0.7", &["--payload", "trtllm"]);
    let found = probe(&trt.url());
    assert!(
        found["metrics_url"].as_str().unwrap().ends_with("/prometheus/metrics"),
        "{found}"
    );
    assert!(
        found["metrics_note"].as_str().unwrap().contains("answers JSON"),
        "{found}"
    );

    // llama.cpp: counters, and a rate per request (no length).
    let llama = Speclens::instant_spec_sim("0.7", &["--payload", "llamacpp"]);
    let found = probe(&llama.url());
    assert_eq!(found["engine"], "llamacpp", "{found}");
    assert_eq!(found["speculates"], true, "{found}");
    assert!(
        joined(&found, "spec_families").contains("llamacpp:spec_decode_num_drafts_total"),
        "{found}"
    );

    // A plain server: no speculation, the flags that turn it on, and its place as a plain arm.
    let plain = Speclens::instant_plain_sim();
    let found = probe(&plain.url());
    assert_eq!(found["speculates"], false, "{found}");
    let cannot = joined(&found, "cannot");
    assert!(
        cannot.contains("--speculative-config") && cannot.contains("--speculative-algorithm"),
        "{found}"
    );
    assert!(
        joined(&found, "next").contains("--base-url http://127.0.0.1:"),
        "{found}"
    );

    // Metrics down: the per-request stats still show speculation; the scrape path is named
    // as missing, with why.
    let down = Speclens::instant_spec_sim("0.7", &["--metrics-down"]);
    let found = probe(&down.url());
    assert_eq!(found["speculates"], true, "{found}");
    assert!(found["metrics_error"].as_str().is_some(), "{found}");
    assert!(joined(&found, "cannot").contains("the scrape path"), "{found}");

    // The text form says the same, for people.
    let (code, text, _) = crate::common::run_speclens(&["probe", &plain.url()]);
    assert_eq!(code, 0);
    assert!(text.contains("speculates    no (") && text.contains("Next:"), "{text}");
    // An unreachable server: exit 1 and why.
    let (code, text, err) = crate::common::run_speclens(&["probe", "http://127.0.0.1:9"]);
    assert_eq!(code, 1, "{text}{err}");
    assert!(text.contains("reachable     no"), "{text}");
}
