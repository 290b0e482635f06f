//! speclens against a real llama.cpp server: llama-server built from the llama.cpp source that
//! PyPI's llama-cpp-python 0.3.36 vendors, serving the tiny random Llama (as GGUF) with n-gram
//! speculation (`ngram-simple`, a 3-token match drafts the 3 tokens that followed it: k = 3).
//! `scripts/test.sh` starts it (`scripts/real-llamacpp.sh serve`) and names it in
//! `SPECLENS_REAL_LLAMACPP`; the test is `#[ignore]`d for a plain `cargo test`.
//!
//! What it holds to: the engine is detected from `/v1/models`; every request succeeds (the
//! server closes each connection after a streamed response); the window's counters equal a
//! hand delta of the server's `/metrics` and the per-request `timings` summed over the
//! records; the rate is accepted over drafted, the length 1 + accepted / drafts, and every
//! per-position rate at most 1.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::bench::{Bench, BenchRun};
use crate::common::{get_text, read_records};

fn server() -> String {
    std::env::var("SPECLENS_REAL_LLAMACPP").unwrap_or_else(|_| {
        panic!("SPECLENS_REAL_LLAMACPP is not set: this test needs the llama-server that scripts/test.sh starts (scripts/real-llamacpp.sh)")
    })
}

/// llama.cpp's spec-decode counters, read by hand from its `/metrics` (no labels).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Counters {
    drafts: u64,
    draft_tokens: u64,
    accepted: u64,
}

impl Counters {
    async fn scrape(url: &str) -> Counters {
        let (status, text) = get_text(&format!("{url}/metrics")).await;
        assert_eq!(status, 200, "{url}/metrics (is --metrics set?)");
        let mut c = Counters::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((name, value)) = line.split_once(' ') else {
                continue;
            };
            // Six significant digits: exact below a million, which these runs stay under.
            let value = value.trim().parse::<f64>().unwrap_or_else(|e| panic!("{line}: {e}")) as u64;
            match name {
                "llamacpp:spec_decode_num_drafts_total" => c.drafts = value,
                "llamacpp:spec_decode_num_draft_tokens_total" => c.draft_tokens = value,
                "llamacpp:spec_decode_num_accepted_tokens_total" => c.accepted = value,
                _ => {}
            }
        }
        c
    }

    fn minus(self, before: Counters) -> Counters {
        Counters {
            drafts: self.drafts - before.drafts,
            draft_tokens: self.draft_tokens - before.draft_tokens,
            accepted: self.accepted - before.accepted,
        }
    }
}

/// Prompts that repeat themselves: an n-gram proposer drafts from them at once.
fn repetitive_prompts(dir: &Path) -> std::path::PathBuf {
    let words = ["alpha", "beta", "gamma", "delta", "epsilon"];
    let lines: Vec<String> = (0..8)
        .map(|i| {
            let phrase = words[..3 + i % 3].join(" ");
            let prompt = format!("{} {i}", vec![phrase; 6].join(" "));
            serde_json::json!({"prompt": prompt, "max_tokens": 96}).to_string()
        })
        .collect();
    let path = dir.join("repetitive.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[tokio::test]
#[ignore = "needs the llama-server that scripts/test.sh starts"]
async fn real_llamacpp_window_and_per_request_timings_agree_with_its_counters() {
    let url = server();
    let dir = tempfile::tempdir().unwrap();
    let dataset = repetitive_prompts(dir.path());
    for stream in [true, false] {
        let what = format!("stream={stream}");
        let out = dir.path().join(format!("run-{stream}"));
        let mut args = vec![
            "--dataset",
            "jsonl",
            "--dataset-path",
            dataset.to_str().unwrap(),
            "--endpoint",
            "completions",
            "--num-prompts",
            "16",
            "--concurrency",
            "4",
            "--temperature",
            "0",
        ];
        if !stream {
            args.push("--no-stream");
        }
        let before = Counters::scrape(&url).await;
        let BenchRun { stdout, result, .. } = Bench::at(&url)
            .into(&out)
            .args(&args)
            .within(Duration::from_secs(180))
            .ok();
        let hand = Counters::scrape(&url).await.minus(before);

        assert_eq!(result["config"]["engine"], "llamacpp", "{what}");
        assert_eq!(result["completed"], 16, "{what}: {:?}", result["errors"]);
        assert_eq!(result["failed"], 0, "{what}");
        assert!(hand.drafts > 0, "the n-gram proposer drafted nothing: {what}");

        // The window = the hand delta.
        assert_eq!(result["spec_decode_num_drafts"], hand.drafts, "{what}");
        assert_eq!(result["spec_decode_draft_tokens"], hand.draft_tokens, "{what}");
        assert_eq!(result["spec_decode_accepted_tokens"], hand.accepted, "{what}");
        let rate = result["spec_decode_acceptance_rate"].as_f64().unwrap();
        assert!(
            (rate - hand.accepted as f64 / hand.draft_tokens as f64 * 100.0).abs() < 1e-9,
            "{what}"
        );
        let length = result["spec_decode_acceptance_length"].as_f64().unwrap();
        assert!(
            (length - (1.0 + hand.accepted as f64 / hand.drafts as f64)).abs() < 1e-9,
            "{what}"
        );
        let per_position = result["spec_decode_per_position_acceptance_rates"].as_array().unwrap();
        assert_eq!(per_position.len(), 3, "k = 3: {what}");
        assert!(
            per_position.iter().all(|r| (0.0..=1.0).contains(&r.as_f64().unwrap())),
            "{what}"
        );

        // The per-request path: each response's timings, summed, = the hand delta.
        let records = read_records(&out);
        let partial: Vec<_> = records.iter().filter_map(|r| r.spec_decode_partial.as_ref()).collect();
        assert!(!partial.is_empty(), "no response carried draft timings: {what}");
        let drafted: u64 = partial.iter().filter_map(|p| p.num_draft_tokens).sum();
        let accepted: u64 = partial.iter().filter_map(|p| p.num_accepted_draft_tokens).sum();
        assert_eq!((drafted, accepted), (hand.draft_tokens, hand.accepted), "{what}");
        let summary = &result["spec_decode"]["per_request"];
        assert_eq!(summary["total_draft_tokens"]["avg"], hand.draft_tokens as f64, "{what}");
        let notes: Vec<&str> = summary["notes"]
            .as_array()
            .map(|n| n.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(notes.iter().any(|n| n.starts_with("llama.cpp")), "{what}: {notes:?}");
        assert!(stdout.contains("Speculative Decoding"), "{what}");
    }
}

/// `probe` against the real llama-server: llama.cpp, its spec-decode counters, a per-request
/// rate at most (drafted and accepted tokens, no length), and what it cannot give.
#[test]
#[ignore = "needs the llama-server that scripts/test.sh starts"]
fn real_llamacpp_probe_names_its_counters_and_its_partial_per_request_stats() {
    use crate::engines::{joined, probe};
    let found = probe(&server());
    assert_eq!(found["engine"], "llamacpp", "{found}");
    assert_eq!(found["speculates"], true, "{found}");
    assert!(
        joined(&found, "spec_families").contains("llamacpp:spec_decode_num_draft_tokens_total"),
        "{found}"
    );
    // One short probe request may draft nothing on the tiny model: its timings are then no
    // record ("none"); with drafts they are a rate ("partial"). Either way the line says what
    // llama-server returns per request.
    let level = found["per_request"].as_str().unwrap_or_default();
    assert!(level == "partial" || level == "none", "{found}");
    assert!(
        joined(&found, "cannot").contains("llama-server returns drafted and accepted tokens per request"),
        "{found}"
    );
}
