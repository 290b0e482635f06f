//! `speclens sim` as clients see it: the real binary on 127.0.0.1 port 0 speaking vLLM's API,
//! metrics that agree exactly with the per-request stats, acceptance that follows the
//! configured profile, the roofline timing, and every injected fault.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use speclens_shared::engine::Engine;
use speclens_shared::request::per_request::{adapt_response, PayloadOutcome, PayloadScan, SpecRecord};
use speclens_shared::scrape::prom;
use speclens_shared::scrape::{counters_from_text, parse_metrics, window_delta, CounterSet, ScrapeFailure};

use crate::common::{get_text, post_json, post_sse, Speclens};

fn sim(extra: &[&str]) -> (Speclens, String) {
    let mut args = vec!["sim", "--port", "0", "--time-scale", "0"];
    args.extend_from_slice(extra);
    let server = Speclens::start(&args);
    let url = server.url();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (server, url)
}

async fn scrape(url: &str) -> CounterSet {
    let (status, text) = get_text(&format!("{url}/metrics")).await;
    assert_eq!(status, 200);
    counters_from_text(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// A sample's value from an exposition, summed over label sets.
fn total(text: &str, name: &str) -> f64 {
    prom::samples(text)
        .map(Result::unwrap)
        .filter(|s| s.name == name)
        .map(|s| s.value)
        .sum()
}

fn chat(max_tokens: u32, stream: bool) -> Value {
    json!({"model": "speclens/sim-8b", "messages": [{"role": "user", "content": "Tell me about speculative decoding"}],
           "max_tokens": max_tokens, "ignore_eos": true, "temperature": 0, "stream": stream,
           "stream_options": {"include_usage": true}})
}

fn record_of_stream(chunks: &[Value]) -> PayloadOutcome {
    let mut scan = PayloadScan::new();
    for c in chunks {
        scan.push(c);
    }
    scan.finish()
}

#[tokio::test]
async fn chat_and_completions_answer_as_an_openai_client_expects() {
    let (_server, url) = sim(&["--num-spec-tokens", "3", "--alpha", "0.7"]);

    let (status, body) = post_json(&format!("{url}/v1/chat/completions"), &chat(40, false)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(content.split_whitespace().count(), 40);
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert_eq!(body["usage"]["completion_tokens"], 40);
    assert_eq!(body["usage"]["prompt_tokens"], 5);
    let PayloadOutcome::Record(r) = adapt_response(&body) else {
        panic!("{body}")
    };
    assert_eq!(
        (r.engine, r.num_spec_tokens, r.completion_tokens),
        (Engine::Vllm, Some(3), Some(40))
    );

    // Streaming chat: role chunk, content chunks, finish chunk, usage chunk, [DONE].
    let reply = post_sse(&format!("{url}/v1/chat/completions"), &chat(40, true)).await;
    assert!(!reply.broken);
    assert_eq!(reply.data.last().unwrap(), "[DONE]");
    let chunks = reply.chunks();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk"));
    let words: usize = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .map(|t| t.split_whitespace().count())
        .sum();
    assert_eq!(words, 40);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 40);
    let PayloadOutcome::Record(r) = record_of_stream(&chunks) else {
        panic!("no record")
    };
    assert!(r.num_spec_steps >= 1 && r.num_spec_steps <= 39);
    // Token groups: a speculative server emits j + 1 tokens per step, so fewer chunks than tokens.
    let content_chunks = chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .count();
    assert_eq!(content_chunks as u64, 1 + r.num_spec_steps);

    // Text completions, streaming without usage: no usage chunk, so no vLLM stats.
    let body = json!({"prompt": "Once upon a time", "max_tokens": 12, "ignore_eos": true, "stream": true});
    let reply = post_sse(&format!("{url}/v1/completions"), &body).await;
    let chunks = reply.chunks();
    assert!(chunks.iter().all(|c| c["object"] == "text_completion"));
    let text: String = chunks.iter().filter_map(|c| c["choices"][0]["text"].as_str()).collect();
    assert_eq!(text.split_whitespace().count(), 12);
    assert_eq!(record_of_stream(&chunks), PayloadOutcome::NoStats);
    let (status, body) = post_json(
        &format!("{url}/v1/completions"),
        &json!({"prompt": ["a b", "c"], "max_tokens": 3, "ignore_eos": true}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["usage"]["prompt_tokens"], 3);

    // Models, health, errors.
    let (status, models) = get_text(&format!("{url}/v1/models")).await;
    assert_eq!(status, 200);
    let models: Value = serde_json::from_str(&models).unwrap();
    assert_eq!(models["data"][0]["id"], "speclens/sim-8b");
    assert_eq!(get_text(&format!("{url}/health")).await.0, 200);
    let (status, body) = get_text(&format!("{url}/v2/nothing")).await;
    assert_eq!((status, body.as_str()), (404, r#"{"detail":"Not Found"}"#));
    let bad = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let bad: Value = bad.json().await.unwrap();
    assert_eq!(bad["error"]["type"], "BadRequestError");
    assert_eq!(bad["error"]["code"], 400);
    let (status, body) = post_json(
        &format!("{url}/v1/chat/completions"),
        &json!({"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"].as_str().unwrap().contains("gpt-x"));
    let (status, _) = post_json(
        &format!("{url}/v1/chat/completions"),
        &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100000}),
    )
    .await;
    assert_eq!(status, 400);
}

/// Run `n` chat requests (half streamed) at once; return their records and completion tokens.
async fn run_requests(url: &str, n: usize, max_tokens: u32, temperature: f64, prompt: &str) -> Vec<SpecRecord> {
    let mut tasks = Vec::new();
    for i in 0..n {
        let url = format!("{url}/v1/chat/completions");
        let body = json!({"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                          "ignore_eos": true, "temperature": temperature, "stream": i % 2 == 0,
                          "stream_options": {"include_usage": true}});
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                record_of_stream(&post_sse(&url, &body).await.chunks())
            } else {
                let (status, body) = post_json(&url, &body).await;
                assert_eq!(status, 200);
                adapt_response(&body)
            }
        }));
    }
    let mut records = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            PayloadOutcome::Record(r) => records.push(r),
            other => panic!("{other:?}"),
        }
    }
    records
}

async fn counters_equal_the_sum_of_records(engines: &str) {
    let (_server, url) = sim(&[
        "--num-spec-tokens",
        "4",
        "--acceptance-rates",
        "0.9,0.7,0.5,0.3",
        "--engines",
        engines,
        "--per-request-metrics",
        "detailed",
    ]);
    let before_text = get_text(&format!("{url}/metrics")).await.1;
    let before = counters_from_text(&before_text).unwrap();
    let records = run_requests(&url, 60, 50, 0.0, "Explain the roofline model").await;
    let after_text = get_text(&format!("{url}/metrics")).await.1;
    let after = counters_from_text(&after_text).unwrap();
    assert_eq!(
        after.series.len(),
        engines.parse::<usize>().unwrap(),
        "one label set per engine"
    );
    let delta = window_delta(&before, &after).unwrap();
    let steps: u64 = records.iter().map(|r| r.num_spec_steps).sum();
    let accepted: u64 = records.iter().map(|r| r.num_accepted_draft_tokens).sum();
    let drafted: u64 = records.iter().map(|r| r.num_draft_tokens).sum();
    assert_eq!(delta.num_drafts, steps);
    assert_eq!(delta.num_accepted_tokens, accepted);
    assert_eq!(delta.num_draft_tokens, drafted);
    let mut per_pos: BTreeMap<u32, u64> = (0..4).map(|p| (p, 0)).collect();
    for r in &records {
        for (j, count) in &r.acceptance_histogram {
            for p in 0..*j {
                *per_pos.get_mut(&p).unwrap() += count;
            }
        }
        assert_eq!(r.per_step_accepted.as_ref().unwrap().len() as u64, r.num_spec_steps);
    }
    assert_eq!(delta.accepted_per_pos, per_pos);
    let generated =
        total(&after_text, "vllm:generation_tokens_total") - total(&before_text, "vllm:generation_tokens_total");
    assert_eq!(
        generated,
        records.iter().map(|r| r.completion_tokens.unwrap()).sum::<u64>() as f64
    );
    assert_eq!(total(&after_text, "vllm:request_success_total"), 60.0);
}

#[tokio::test]
async fn counter_deltas_equal_the_sum_of_per_request_stats_one_engine() {
    counters_equal_the_sum_of_records("1").await;
}

#[tokio::test]
async fn counter_deltas_equal_the_sum_of_per_request_stats_three_engines() {
    counters_equal_the_sum_of_records("3").await;
}

/// Per-position acceptance measured by the counters over a run.
async fn measured_rates(url: &str, requests: usize, temperature: f64, prompt: &str) -> Vec<f64> {
    let before = scrape(url).await;
    run_requests(url, requests, 96, temperature, prompt).await;
    let delta = window_delta(&before, &scrape(url).await).unwrap();
    delta
        .accepted_per_pos
        .values()
        .map(|v| *v as f64 / delta.num_drafts as f64)
        .collect()
}

#[tokio::test]
async fn acceptance_converges_to_the_configured_profile() {
    // Tolerance: ±0.03 absolute per position over ≈ 5,000 drafts (a binomial σ below 0.007).
    let (_server, url) = sim(&["--num-spec-tokens", "3", "--acceptance-rates", "0.8,0.55,0.3"]);
    let rates = measured_rates(&url, 160, 0.0, "Explain the roofline model").await;
    for (got, want) in rates.iter().zip([0.8, 0.55, 0.3]) {
        assert!(
            (got - want).abs() < 0.03,
            "measured {rates:?}, configured [0.8, 0.55, 0.3]"
        );
    }
    // Temperature lowers acceptance; categories move it (summaries up, translation down).
    let hot = measured_rates(&url, 80, 1.0, "Explain the roofline model").await;
    assert!(
        hot[0] < rates[0] - 0.05,
        "T = 1 lowers acceptance: {hot:?} vs {rates:?}"
    );
    let summary = measured_rates(&url, 80, 0.0, "Summarize this article").await;
    let translation = measured_rates(&url, 80, 0.0, "Translate this article").await;
    assert!(
        summary[0] > translation[0] + 0.1,
        "summaries {summary:?} vs translations {translation:?}"
    );
}

#[tokio::test]
async fn the_base_arm_has_no_spec_decode_lines_and_no_stats() {
    let (_server, url) = sim(&[]);
    let (status, body) = post_json(&format!("{url}/v1/chat/completions"), &chat(10, false)).await;
    assert_eq!(status, 200);
    assert_eq!(adapt_response(&body), PayloadOutcome::NoStats);
    let text = get_text(&format!("{url}/metrics")).await.1;
    assert!(!text.contains("spec_decode"));
    assert_eq!(total(&text, "vllm:generation_tokens_total"), 10.0);
    assert_eq!(counters_from_text(&text).unwrap_err(), ScrapeFailure::NoSpecMetrics);
}

/// The spec/base output-throughput ratio at `concurrency`: one wave of requests against each
/// server in turn, five times, and the median pair's ratio. Alternating the arms, and taking the
/// median, keeps a stall of the machine during one arm's waves (other processes on the cores)
/// from deciding the comparison; the clients are built before any clock starts.
async fn throughput_ratio(spec: &str, base: &str, concurrency: usize, tokens: u32) -> f64 {
    let clients: Vec<reqwest::Client> = (0..concurrency).map(|_| reqwest::Client::new()).collect();
    let mut ratios = Vec::new();
    for _ in 0..5 {
        let spec_tokens_per_s = one_wave_tokens_per_s(spec, &clients, tokens).await;
        let base_tokens_per_s = one_wave_tokens_per_s(base, &clients, tokens).await;
        ratios.push(spec_tokens_per_s / base_tokens_per_s);
    }
    ratios.sort_by(f64::total_cmp);
    eprintln!("concurrency {concurrency}: spec/base per pair {ratios:.2?}");
    ratios[ratios.len() / 2]
}

/// Output tokens per second of one request per client, all sent at once.
async fn one_wave_tokens_per_s(url: &str, clients: &[reqwest::Client], tokens: u32) -> f64 {
    let body = json!({"prompt": "x", "max_tokens": tokens, "ignore_eos": true, "temperature": 0});
    let start = Instant::now();
    let mut tasks = Vec::new();
    for client in clients {
        let request = client.post(format!("{url}/v1/completions")).json(&body).send();
        tasks.push(tokio::spawn(async move {
            let response = request.await.expect("POST");
            assert_eq!(response.status(), 200);
            let answer: Value = response.json().await.expect("JSON");
            answer["usage"]["completion_tokens"].as_u64().unwrap()
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

#[tokio::test]
async fn with_timing_on_speculation_wins_at_low_concurrency_and_loses_at_high() {
    // Model: E = 2.53 at α = 0.7, k = 3. Batch 1: spec 2.5× ahead; batch 64 on a 64-token
    // ridge: spec steps hold 256 positions (4× slower) for 2.53 tokens each, so ≈ 0.63×.
    // Real-time steps (scale 1): sleeps dominate the client's and server's own CPU time, and a
    // wave of 64 (not 256) keeps the client's own work small beside a busy second core.
    let common = ["--step-ms", "12", "--ridge", "64"];
    let spec_args = ["sim", "--port", "0", "--num-spec-tokens", "3", "--alpha", "0.7"];
    let spec_server = Speclens::start(&[&spec_args[..], &common[..]].concat());
    let base_server = Speclens::start(&[&["sim", "--port", "0"][..], &common[..]].concat());
    let (spec, base) = (spec_server.url(), base_server.url());
    let low = throughput_ratio(&spec, &base, 1, 48).await;
    let high = throughput_ratio(&spec, &base, 64, 48).await;
    assert!(low > 1.5, "concurrency 1: spec/base = {low:.2}");
    assert!(high < 0.85, "concurrency 64: spec/base = {high:.2}");
}

#[tokio::test]
async fn payload_shapes_and_levels() {
    let spec = ["--num-spec-tokens", "3", "--alpha", "0.6"];
    // TensorRT-LLM (PR #19311): on the terminal chunk's choice; absent when nothing was drafted.
    let (_trt, url) = sim(&[&spec[..], &["--payload", "trtllm-pr19311"]].concat());
    let chunks = post_sse(&format!("{url}/v1/chat/completions"), &chat(20, true))
        .await
        .chunks();
    let carrier = chunks
        .iter()
        .position(|c| c["choices"][0].get("speculative_decoding").is_some())
        .expect("stats");
    assert_eq!(chunks[carrier]["choices"][0]["finish_reason"], "length");
    let PayloadOutcome::Record(r) = record_of_stream(&chunks) else {
        panic!()
    };
    assert_eq!(r.engine, Engine::Trtllm);
    let (_, body) = post_json(&format!("{url}/v1/chat/completions"), &chat(1, false)).await;
    assert!(
        body["choices"][0].get("speculative_decoding").is_none(),
        "zero-step request: PR #19311 sends nothing"
    );
    let PayloadOutcome::Partial(p) = adapt_response(&body) else {
        panic!("released TensorRT-LLM's per-choice length stays: {body}")
    };
    assert_eq!(p.mean_acceptance_length, Some(1.0));

    // SGLang: only when the request asks.
    let (_sgl, url) = sim(&[&spec[..], &["--payload", "sglang"]].concat());
    let (_, body) = post_json(&format!("{url}/v1/chat/completions"), &chat(20, false)).await;
    assert_eq!(adapt_response(&body), PayloadOutcome::NoStats);
    let mut ask = chat(20, false);
    ask["return_spec_tokens_details"] = json!(true);
    let (_, body) = post_json(&format!("{url}/v1/chat/completions"), &ask).await;
    let PayloadOutcome::Record(r) = adapt_response(&body) else {
        panic!("{body}")
    };
    assert_eq!(r.engine, Engine::Sglang);

    // vLLM levels: none, summary (no per-step arrays), detailed; zero-step and n > 1.
    let (_none, url) = sim(&[&spec[..], &["--per-request-metrics", "none"]].concat());
    let (_, body) = post_json(&format!("{url}/v1/chat/completions"), &chat(20, false)).await;
    assert_eq!(
        body.get("metrics"),
        Some(&Value::Null),
        "vLLM 0.32 sends \"metrics\": null without per-request stats"
    );
    assert_eq!(adapt_response(&body), PayloadOutcome::NoStats);
    let (_detailed, url) = sim(&[&spec[..], &["--per-request-spec-decode-metrics", "detailed"]].concat());
    let (_, body) = post_json(&format!("{url}/v1/chat/completions"), &chat(20, false)).await;
    let PayloadOutcome::Record(r) = adapt_response(&body) else {
        panic!()
    };
    assert_eq!(r.per_step_accepted.unwrap().len() as u64, r.num_spec_steps);
    let (_, body) = post_json(&format!("{url}/v1/chat/completions"), &chat(1, false)).await;
    assert_eq!(
        body["metrics"]["speculative_decoding"]["num_spec_steps"], 0,
        "zero-step request: vLLM still reports"
    );
    let mut two = chat(8, false);
    two["n"] = json!(2);
    let (_, body) = post_json(&format!("{url}/v1/chat/completions"), &two).await;
    assert_eq!(body["choices"].as_array().unwrap().len(), 2);
    assert_eq!(body["metrics"]["speculative_decoding"], Value::Null, "null when n > 1");
}

#[tokio::test]
async fn eos_ends_requests_early_unless_ignored() {
    let (_server, url) = sim(&["--mean-output-tokens", "8"]);
    let body = json!({"prompt": "x", "max_tokens": 200, "temperature": 0});
    let mut reasons = BTreeMap::new();
    for _ in 0..20 {
        let (_, reply) = post_json(&format!("{url}/v1/completions"), &body).await;
        *reasons
            .entry(reply["choices"][0]["finish_reason"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    assert!(reasons.get("stop").copied().unwrap_or(0) >= 18, "{reasons:?}");
    // With ignore_eos every answer runs to max_tokens, as vLLM's do.
    let body = json!({"prompt": "x", "max_tokens": 40, "temperature": 0, "ignore_eos": true});
    for _ in 0..20 {
        let (_, reply) = post_json(&format!("{url}/v1/completions"), &body).await;
        assert_eq!(reply["choices"][0]["finish_reason"], "length", "{reply}");
        assert_eq!(reply["usage"]["completion_tokens"], 40, "{reply}");
    }
}

#[tokio::test]
async fn an_api_key_guards_v1_and_a_non_loopback_bind_needs_one() {
    let (_server, url) = sim(&["--api-key", "sk-test-0123456789"]);
    let client = reqwest::Client::new();
    let denied = client
        .post(format!("{url}/v1/chat/completions"))
        .json(&chat(3, false))
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 401);
    let allowed = client
        .post(format!("{url}/v1/chat/completions"))
        .bearer_auth("sk-test-0123456789")
        .json(&chat(3, false))
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200);
    assert_eq!(
        get_text(&format!("{url}/metrics")).await.0,
        200,
        "/metrics stays open, as in vLLM"
    );
    let (code, _, err) = crate::common::run_speclens(&["sim", "--host", "0.0.0.0", "--port", "0"]);
    assert_eq!(code, 2, "a usage error");
    assert!(err.contains("--api-key"), "{err}");
}

mod faults {
    use super::*;

    #[tokio::test]
    async fn fail_rate_answers_500_with_a_json_error() {
        let (_server, url) = sim(&["--fail-rate", "1"]);
        let (status, body) = post_json(&format!("{url}/v1/chat/completions"), &chat(5, false)).await;
        assert_eq!(status, 500);
        assert_eq!(body["error"]["code"], 500);
    }

    #[tokio::test]
    async fn reset_rate_breaks_the_connection_mid_stream() {
        let (_server, url) = sim(&["--reset-rate", "1"]);
        let reply = post_sse(&format!("{url}/v1/chat/completions"), &chat(20, true)).await;
        assert!(reply.broken, "the body ended in an error");
        assert!(!reply.data.iter().any(|d| d == "[DONE]"));
        // A non-streamed response breaks too: before its headers arrive or inside its body.
        match reqwest::Client::new()
            .post(format!("{url}/v1/chat/completions"))
            .json(&chat(5, false))
            .send()
            .await
        {
            Err(e) => assert!(e.is_request(), "{e}"),
            Ok(response) => assert!(response.json::<Value>().await.is_err(), "the body breaks off"),
        }
    }

    #[tokio::test]
    async fn truncate_rate_ends_the_stream_without_finish_or_done() {
        let (_server, url) = sim(&["--truncate-rate", "1"]);
        let reply = post_sse(&format!("{url}/v1/chat/completions"), &chat(20, true)).await;
        assert!(!reply.broken);
        assert!(!reply.data.iter().any(|d| d == "[DONE]"));
        assert!(reply
            .chunks()
            .iter()
            .all(|c| c["choices"][0]["finish_reason"].is_null()));
    }

    #[tokio::test]
    async fn stall_rate_delays_the_first_token() {
        let (_server, url) = sim(&["--stall-rate", "1", "--stall-ms", "300"]);
        let start = Instant::now();
        let (status, _) = post_json(&format!("{url}/v1/chat/completions"), &chat(5, false)).await;
        assert_eq!(status, 200);
        assert!(start.elapsed() >= Duration::from_millis(300));
    }

    #[tokio::test]
    async fn hang_rate_never_answers() {
        let (_server, url) = sim(&["--hang-rate", "1"]);
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(300))
            .build()
            .unwrap();
        let err = client
            .post(format!("{url}/v1/chat/completions"))
            .json(&chat(5, false))
            .send()
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "{err}");
    }

    #[tokio::test]
    async fn metrics_down_always_or_after_n_requests() {
        let (_down, url) = sim(&["--num-spec-tokens", "2", "--metrics-down"]);
        assert_eq!(get_text(&format!("{url}/metrics")).await.0, 503);
        let (_later, url) = sim(&["--num-spec-tokens", "2", "--metrics-down-after", "3"]);
        assert_eq!(get_text(&format!("{url}/metrics")).await.0, 200);
        for _ in 0..3 {
            post_json(&format!("{url}/v1/chat/completions"), &chat(4, false)).await;
        }
        assert_eq!(get_text(&format!("{url}/metrics")).await.0, 503);
        let (_until, url) = sim(&["--num-spec-tokens", "2", "--metrics-down-until", "2"]);
        assert_eq!(get_text(&format!("{url}/metrics")).await.0, 503);
        for _ in 0..2 {
            post_json(&format!("{url}/v1/chat/completions"), &chat(4, false)).await;
        }
        assert_eq!(get_text(&format!("{url}/metrics")).await.0, 200);
    }

    #[tokio::test]
    async fn reset_counters_after_n_requests_is_a_detected_restart() {
        let (_server, url) = sim(&["--num-spec-tokens", "2", "--reset-counters-after", "4"]);
        for _ in 0..3 {
            post_json(&format!("{url}/v1/chat/completions"), &chat(30, false)).await;
        }
        let before = scrape(&url).await;
        post_json(&format!("{url}/v1/chat/completions"), &chat(30, false)).await;
        post_json(&format!("{url}/v1/chat/completions"), &chat(3, false)).await;
        let after = scrape(&url).await;
        let reason = window_delta(&before, &after).unwrap_err().to_string();
        assert!(
            reason.starts_with("Counter reset detected: vllm:spec_decode_num_drafts_total"),
            "{reason}"
        );
    }

    #[tokio::test]
    async fn multiproc_exposition_has_no_created_gauges() {
        let (_server, url) = sim(&["--num-spec-tokens", "2", "--multiproc-exposition"]);
        post_json(&format!("{url}/v1/chat/completions"), &chat(8, false)).await;
        let text = get_text(&format!("{url}/metrics")).await.1;
        assert!(!text.contains("_created"));
        assert!(counters_from_text(&text).unwrap().total.num_drafts > 0);
    }

    #[tokio::test]
    async fn malformed_metrics_are_a_clear_parse_error() {
        let (_server, url) = sim(&["--num-spec-tokens", "2", "--malformed-metrics"]);
        let text = get_text(&format!("{url}/metrics")).await.1;
        let err = parse_metrics(&text).unwrap_err().to_string();
        assert!(err.starts_with("invalid metrics text at line"), "{err}");
    }
}
