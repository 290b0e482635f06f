//! Trace replay: a made Mooncake-format trace sent against a sim through a recording proxy
//! (the requests' arrival times and bodies as the server side sees them): each request arrives
//! at its recorded offset (sped up) within a stated tolerance, with the trace's output length as
//! its max_tokens, its input length in tokens, and the prompt prefix its shared hash ids name;
//! filled from a prompts file (`--trace-fill`) it sends the file's text, prefixes still shared,
//! and a filler replay is marked content-invalid for acceptance (console, `result.json`, and
//! `check`, which refuses to compare it with a valid run unless told).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::Value;

use crate::common::{fixture, read_json, read_records, run_speclens, run_speclens_within, Speclens};

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

/// The made trace's path and its lines.
fn made_trace() -> (std::path::PathBuf, Vec<Value>) {
    let path = fixture("made_mooncake_trace.jsonl");
    let lines = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (path, lines)
}

#[tokio::test]
async fn a_mooncake_trace_arrives_at_its_recorded_offsets_with_its_lengths_and_shared_prefixes() {
    let (trace_path, trace) = made_trace();
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
    assert_eq!(
        result["content_invalid_for_acceptance"],
        serde_json::json!(["trace_filler", "ignore_eos"]),
        "filler blocks, answers held to the trace's lengths"
    );
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

/// The flags of a quick replay of the made trace at `trace`: its 7 requests, 50 times faster.
pub fn replay_args(trace: &str) -> [&str; 8] {
    [
        "--dataset",
        "mooncake",
        "--dataset-path",
        trace,
        "--num-prompts",
        "7",
        "--trace-speedup",
        "50",
    ]
}

/// `bench` with `args` against `url`, into `out`: its exit code and console.
async fn bench(url: &str, args: &[&str], out: &std::path::Path) -> (i32, String, String) {
    let mut all: Vec<String> = ["bench", "--url", url, "--endpoint", "completions", "--out"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    all.push(out.to_str().unwrap().into());
    all.extend(args.iter().map(|s| s.to_string()));
    tokio::task::spawn_blocking(move || {
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        run_speclens_within(&all, Duration::from_secs(60))
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_trace_filled_from_a_prompts_file_sends_its_text_and_a_filler_replay_is_marked() {
    let (trace_path, trace) = made_trace();
    // 40 prompts of 60 words no other text has (`f3w17`: prompt 3, word 17), so where each sent
    // word came from, and what followed it in the file, can be told.
    let dir = tempfile::tempdir().unwrap();
    let fill = dir.path().join("prompts.jsonl");
    let file_words: Vec<String> = (0..40)
        .flat_map(|p| (0..60).map(move |w| format!("f{p}w{w}")))
        .collect();
    let lines: String = file_words
        .chunks(60)
        .map(|words| format!("{}\n", serde_json::json!({"prompt": words.join(" ")})))
        .collect();
    std::fs::write(&fill, lines).unwrap();
    let next: std::collections::HashMap<&str, &str> = file_words
        .iter()
        .zip(file_words.iter().cycle().skip(1))
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let tokens = speclens::bench::tokens::TokenCounter::new();
    let widest = file_words.iter().map(|w| tokens.count(&format!(" {w}"))).max().unwrap();

    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let (url, seen) = start_proxy(sim.url()).await;
    let trace_arg = trace_path.to_str().unwrap();
    let filled = dir.path().join("filled");
    let fill_args = ["--trace-fill", fill.to_str().unwrap(), "--quiet"];
    let (code, stdout, stderr) = bench(&url, &[&replay_args(trace_arg)[..], &fill_args].concat(), &filled).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let seen: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, body)| body["prompt"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(seen.len(), 7);
    for (i, prompt) in seen.iter().enumerate() {
        let words: Vec<&str> = prompt.split(' ').collect();
        // Every word is the file's, and almost every one follows its predecessor as in the
        // file: a seam only where a block or the line's own tokens begin.
        assert!(words.iter().all(|w| next.contains_key(w)), "request {i}: {prompt}");
        let seams = words.windows(2).filter(|p| next[p[0]] != p[1]).count();
        let blocks = trace[i]["hash_ids"].as_array().unwrap().len();
        assert!(seams <= blocks, "request {i}: {seams} seams for {blocks} blocks");
        // Its length: the trace's, less at most a word's tokens a block and at the end.
        let want = trace[i]["input_length"].as_u64().unwrap();
        let got = tokens.count(prompt);
        assert!(
            got <= want && got + (blocks as u64 + 1) * widest >= want,
            "request {i}: {got} tokens for an input length of {want}"
        );
    }
    // Shared hash ids are shared text, of the blocks' tokens (less a word each at most).
    let shared_tokens = |a: usize, b: usize| -> u64 {
        let common: Vec<&str> = seen[a]
            .split(' ')
            .zip(seen[b].split(' '))
            .take_while(|(x, y)| x == y)
            .map(|(x, _)| x)
            .collect();
        if common.is_empty() {
            0
        } else {
            tokens.count(&common.join(" "))
        }
    };
    for (a, b, blocks) in [(0, 1, 2), (0, 3, 2), (0, 6, 2), (1, 3, 3), (2, 4, 1)] {
        let shared = shared_tokens(a, b);
        let full = blocks * 512;
        assert!(
            shared <= full && shared + blocks * widest >= full,
            "lines {a} and {b} share {shared} tokens, their {blocks} blocks {full}"
        );
    }
    assert_eq!(shared_tokens(0, 2), 0, "block 0 is not block 5");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(filled.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["config"]["trace_fill"], fill.to_str().unwrap());
    assert_eq!(
        result["content_invalid_for_acceptance"],
        serde_json::json!(["ignore_eos"]),
        "the file's text, answers still held to the trace's lengths"
    );

    // The same trace with filler words: marked on the console and in result.json.
    let filler = dir.path().join("filler");
    let (code, stdout, stderr) = bench(&sim.url(), &replay_args(trace_arg), &filler).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("Content-invalid for acceptance (trace filler words (no --trace-fill), ignore_eos answers): this run's acceptance stands for no real text"),
        "{stdout}"
    );
    // A run of the file's prompts, answers ending where the model ends them, is valid; check
    // refuses to compare the filler's acceptance with it unless told.
    let valid = dir.path().join("valid");
    let (code, stdout, stderr) = bench(
        &sim.url(),
        &[
            "--dataset",
            "jsonl",
            "--dataset-path",
            fill.to_str().unwrap(),
            "--num-prompts",
            "20",
            "--quiet",
        ],
        &valid,
    )
    .await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        read_json(&valid.join("result.json"))["content_invalid_for_acceptance"],
        serde_json::json!([])
    );
    let check = |extra: &[&str]| {
        let mut args = vec!["check", "--baseline", valid.to_str().unwrap(), filler.to_str().unwrap()];
        args.extend(extra);
        run_speclens(&args)
    };
    let (code, stdout, stderr) = check(&[]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("the new run is content-invalid for acceptance (trace filler words (no --trace-fill), ignore_eos answers) and the other is not"),
        "{stderr}"
    );
    let (code, stdout, stderr) = check(&["--mixed-content"]);
    assert!(code == 0 || code == 3, "{code}: {stdout}{stderr}");
    assert!(
        stdout.contains("Compared with --mixed-content although the new run is content-invalid"),
        "{stdout}"
    );
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
