//! Trace replay: a made Mooncake-format trace sent against a sim through a recording proxy
//! (the requests' arrival times and bodies as the server side sees them): each request arrives
//! at its recorded offset (sped up) within a stated tolerance, with the trace's output length as
//! its max_tokens, its input length in tokens, and the prompt prefix its shared hash ids name.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::Value;

use crate::common::{fixture, read_records, run_speclens_within, Speclens};

/// What the proxy saw: each completion request's arrival and body.
type Seen = Arc<Mutex<Vec<(Instant, Value)>>>;

/// Forward every request to `upstream`, recording the completion requests.
async fn start_proxy(upstream: String) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let client = reqwest::Client::new();
    let state = (upstream, client, seen.clone());
    let app = axum::Router::new()
        .fallback(
            |State((upstream, client, seen)): State<(String, reqwest::Client, Seen)>, req: Request| async move {
                let at = Instant::now();
                let (parts, body) = req.into_parts();
                let bytes: Bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                if parts.uri.path().ends_with("/completions") {
                    seen.lock().unwrap().push((at, serde_json::from_slice(&bytes).unwrap()));
                }
                let answer = client
                    .request(parts.method, format!("{upstream}{}", parts.uri))
                    .header("content-type", "application/json")
                    .body(bytes)
                    .send()
                    .await
                    .unwrap();
                let mut out = Response::builder().status(answer.status().as_u16());
                if let Some(t) = answer.headers().get("content-type") {
                    out = out.header("content-type", t.as_bytes());
                }
                // The answer's chunks as they come (a stream stays a stream).
                let chunks = futures_util::stream::unfold(answer, |mut r| async move {
                    match r.chunk().await {
                        Ok(Some(b)) => Some((Ok::<Bytes, std::io::Error>(b), r)),
                        _ => None,
                    }
                });
                out.body(Body::from_stream(chunks)).unwrap()
            },
        )
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

#[tokio::test]
async fn a_mooncake_trace_arrives_at_its_recorded_offsets_with_its_lengths_and_shared_prefixes() {
    let trace_path = fixture("made_mooncake_trace.jsonl");
    let trace: Vec<Value> = std::fs::read_to_string(&trace_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let (url, seen) = start_proxy(sim.url()).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let args: Vec<String> = [
        "bench",
        "--url",
        &url,
        "--endpoint",
        "completions",
        "--dataset",
        "mooncake",
        "--dataset-path",
        trace_path.to_str().unwrap(),
        "--num-prompts",
        "7",
        "--trace-speedup",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_speclens_within(&args, Duration::from_secs(60))
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{stdout}{stderr}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 7, "one request per trace line");
    let first = seen[0].0;
    let tokens = speclens::bench::tokens::TokenCounter::new();
    // The records' own due times (their credits, stamped by the sender as AIPerf stamps its
    // own: when the timer fired and a slot was free) keep the trace's offsets, on the sender's
    // own clock with no hop between (a timer fires late by the scheduler's delay, never early:
    // measured here within 2 ms); each send comes after its due time.
    let mut records = read_records(&out);
    records.sort_by_key(|r| r.request_id);
    let credit_ms = |i: usize| records[i].credit_ms.expect("each record has its due time");
    for (i, line) in trace.iter().take(7).enumerate() {
        let want_ms = line["timestamp"].as_f64().unwrap() / 2.0;
        let got_ms = credit_ms(i) - credit_ms(0);
        assert!(
            (got_ms - want_ms).abs() < 50.0,
            "request {i} was due at {got_ms:.3} ms, the trace sends it at {want_ms:.3} ms"
        );
        assert!(records[i].start_ms >= credit_ms(i), "{:?}", records[i]);
    }
    // The trace's lines are in timestamp order; the proxy saw them in arrival order, each at
    // its offset (the margin is the sender's timer and the proxy's hop on a busy two-core
    // machine; the exact check is the due times above).
    for (i, (at, body)) in seen.iter().enumerate() {
        let line = &trace[i];
        let want_s = line["timestamp"].as_f64().unwrap() / 1000.0 / 2.0;
        let got_s = at.duration_since(first).as_secs_f64();
        assert!(
            (got_s - want_s).abs() < 0.25,
            "request {i} arrived at {got_s:.3} s, the trace sends it at {want_s:.3} s"
        );
        assert_eq!(body["max_tokens"], line["output_length"], "request {i}");
        assert_eq!(body["ignore_eos"], true, "request {i}");
        let prompt = body["prompt"].as_str().unwrap();
        assert_eq!(
            tokens.count(prompt),
            line["input_length"].as_u64().unwrap(),
            "request {i}: its input length in tokens"
        );
    }
    // Shared hash ids are shared text: lines 0, 1, 3 and 6 begin with blocks 0 and 1 (1024
    // tokens), lines 1 and 3 with 0, 1, 3 (1536); line 2's block 5 begins line 4 too.
    let words = |i: usize, n: usize| -> Vec<String> {
        seen[i].1["prompt"]
            .as_str()
            .unwrap()
            .split(' ')
            .take(n)
            .map(str::to_string)
            .collect()
    };
    for i in [1, 3, 6] {
        assert_eq!(words(0, 1024), words(i, 1024), "blocks 0 and 1 of line {i}");
    }
    assert_eq!(words(1, 1536), words(3, 1536), "blocks 0, 1 and 3");
    // Line 0's third block (id 2, 176 tokens) is not the start of line 1's (id 3).
    let third = |i: usize| words(i, 1200)[1024..].to_vec();
    assert_ne!(third(0), third(1), "block 2 is not block 3");
    assert_eq!(words(2, 512), words(4, 512), "block 5");
    assert_ne!(words(0, 512), words(2, 512), "block 0 is not block 5");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["completed"], 7, "{result}");
    // Asking for more requests than the trace holds is an error naming it, before any request.
    let (code, _, stderr) = run_speclens_within(
        &[
            "bench",
            "--url",
            &sim.url(),
            "--dataset",
            "mooncake",
            "--dataset-path",
            trace_path.to_str().unwrap(),
            "--num-prompts",
            "8",
            "--quiet",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("holds 7 requests"), "{stderr}");
}

#[test]
fn a_sweeps_rate_axis_replays_the_trace_at_each_mean_rate() {
    // The trace: 7 requests over 3.012 s, its own mean rate 6 ÷ 3.012 ≈ 2 per second. At 7 and
    // 14 per second each replay lasts about 6 ÷ rate seconds (0.86 and 0.43).
    let trace_path = fixture("made_mooncake_trace.jsonl");
    let spec = Speclens::instant_spec_sim("0.7", &[]);
    let base = Speclens::instant_plain_sim();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let (code, stdout, stderr) = run_speclens_within(
        &[
            "sweep",
            "--arm",
            &format!("k3={}", spec.url()),
            "--base-url",
            &base.url(),
            "--request-rate",
            "7,14",
            "--dataset",
            "mooncake",
            "--dataset-path",
            trace_path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    for arm in ["k3", "base"] {
        for rate in [7.0f64, 14.0] {
            let point = out.join(format!("{arm}-r{rate}")).join("result.json");
            let result: Value = serde_json::from_str(
                &std::fs::read_to_string(&point).unwrap_or_else(|e| panic!("{}: {e}", point.display())),
            )
            .unwrap();
            assert_eq!(result["completed"], 7, "{arm} at {rate}: the whole trace");
            let duration = result["duration"].as_f64().unwrap();
            let want = 6.0 / rate;
            assert!(
                duration > want - 0.02 && duration < want + 0.15,
                "{arm} at {rate}/s: {duration:.3} s, the trace at that rate spans {want:.3} s"
            );
        }
    }
}
