//! Criterion benchmarks of the shared core's hot paths: parsing a large real-shaped vLLM
//! `/metrics` exposition (histograms included, ≈ 1 MB), adapting per-request spec-decode
//! payloads, aggregating a million per-request records, and folding AIPerf's time-weighted
//! figures of a run.
//!
//! Run: `cargo bench -p speclens-shared --bench core` (figures in docs/PERFORMANCE.md).

use std::fmt::Write;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::Value;
use speclens_shared::engine::Engine;
use speclens_shared::request::per_request::{adapt_response, SpecRecord};
use speclens_shared::run::aggregate::SpecAggregator;
use speclens_shared::run::record::RequestRecord;
use speclens_shared::run::time_weighted::sweep_of;
use speclens_shared::scrape::parse_metrics;

/// vLLM's latency histogram buckets (seconds), as its `/metrics` prints them.
const LATENCY_BUCKETS_S: [f64; 20] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0,
];

/// A vLLM `/metrics` text of `engines` data-parallel engines: gauges, counters with their
/// `_created` gauges, five latency histograms and the spec-decode counters (k = 5), the way
/// vLLM's Prometheus client prints them.
fn vllm_exposition(engines: usize) -> String {
    let mut out = String::new();
    let labels = |e: usize| format!("engine=\"{e}\",model_name=\"meta-llama/Llama-3.1-70B-Instruct\"");
    for (name, help) in [
        (
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
        ),
        (
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
        ),
        ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for e in 0..engines {
            let _ = writeln!(out, "{name}{{{}}} {}.0", labels(e), e % 7);
        }
    }
    for (name, help) in [
        (
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
        ),
        (
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
        ),
        (
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
        ),
        (
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
        ),
        (
            "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.",
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for e in 0..engines {
            let mut count = 0u64;
            for (i, le) in LATENCY_BUCKETS_S.iter().enumerate() {
                count += (i as u64 * 37 + e as u64) % 1000;
                let _ = writeln!(out, "{name}_bucket{{{},le=\"{le:?}\"}} {count}.0", labels(e));
            }
            let _ = writeln!(out, "{name}_bucket{{{},le=\"+Inf\"}} {count}.0", labels(e));
            let _ = writeln!(out, "{name}_count{{{}}} {count}.0", labels(e));
            let _ = writeln!(out, "{name}_sum{{{}}} {}", labels(e), count as f64 * 0.137);
        }
        let _ = writeln!(out, "# HELP {name}_created {help}\n# TYPE {name}_created gauge");
        for e in 0..engines {
            let _ = writeln!(out, "{name}_created{{{}}} 1.7591e+09", labels(e));
        }
    }
    for (name, help) in [
        ("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
        ("vllm:generation_tokens_total", "Number of generation tokens processed."),
        ("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts."),
        ("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens."),
        (
            "vllm:spec_decode_num_accepted_tokens_total",
            "Number of accepted tokens.",
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for e in 0..engines {
            let _ = writeln!(out, "{name}{{{}}} {}", labels(e), 6.491797e6 + e as f64);
        }
    }
    let name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
    let _ = writeln!(
        out,
        "# HELP {name} Accepted tokens per draft position.\n# TYPE {name} counter"
    );
    for e in 0..engines {
        for pos in 0..5 {
            let _ = writeln!(
                out,
                "{name}{{{},position=\"{pos}\"}} {}.0",
                labels(e),
                5_000_000 - pos * 900_000
            );
        }
    }
    out
}

fn parse(c: &mut Criterion) {
    // 64 engines of vLLM's families come to ≈ 1 MB.
    let text = vllm_exposition(64);
    let mut group = c.benchmark_group("prometheus");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function(format!("parse_metrics {} KB", text.len() / 1024), |b| {
        b.iter(|| parse_metrics(black_box(&text)).unwrap())
    });
    group.finish();
}

fn adapt(c: &mut Criterion) {
    let fixture = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/real_vllm_per_request_spec_decode_pr48915.json"
    ));
    // The fixture elides `choices` and `usage` ("[ ... ]", "{ ... }"): fill them as a real
    // chat completion carries them, keep its spec-decode object verbatim.
    let json: String = fixture
        .lines()
        .filter(|l| !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let json = json
        .replace(
            "[ ... ]",
            r#"[{"index":0,"message":{"role":"assistant","content":"Speculative decoding drafts tokens with a small model and verifies them in one pass."},"finish_reason":"length"}]"#,
        )
        .replace("{ ... }", r#"{"prompt_tokens":24,"completion_tokens":53,"total_tokens":77}"#);
    let body: Value = serde_json::from_str(&json).unwrap();
    let text = serde_json::to_string(&body).unwrap();
    let mut group = c.benchmark_group("per_request");
    group.throughput(Throughput::Elements(1));
    group.bench_function("adapt_response (vLLM, parsed)", |b| {
        b.iter(|| adapt_response(black_box(&body)))
    });
    group.bench_function("parse + adapt_response (vLLM)", |b| {
        b.iter(|| adapt_response(&serde_json::from_str::<Value>(black_box(&text)).unwrap()))
    });
    group.finish();
}

fn aggregate(c: &mut Criterion) {
    let records: Vec<SpecRecord> = (0..1_000_000u64)
        .map(|i| {
            let steps = 10 + i % 50;
            let accepted = steps * (i % 4);
            SpecRecord {
                engine: Engine::Vllm,
                mean_acceptance_length: 1.0 + accepted as f64 / steps as f64,
                draft_acceptance_rate: accepted as f64 / (steps * 3) as f64,
                acceptance_histogram: [(0, steps - steps / 2), (3, steps / 2)].into_iter().collect(),
                num_accepted_draft_tokens: accepted,
                num_draft_tokens: steps * 3,
                num_spec_steps: steps,
                num_spec_tokens: Some(3),
                completion_tokens: None,
                per_step_accepted: None,
                per_step_drafted: None,
                unmerged_pr: None,
            }
        })
        .collect();
    let mut group = c.benchmark_group("aggregate");
    group.sample_size(10);
    group.throughput(Throughput::Elements(records.len() as u64));
    group.bench_function("1M records: push + summary", |b| {
        b.iter_batched(
            SpecAggregator::new,
            |mut agg| {
                for r in &records {
                    agg.push(r);
                }
                agg.summary()
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// AIPerf's time-weighted figures of 10,000 streamed requests, 128 chunks each (about 3.7 M
/// events), at concurrency 64: what the end of such a run folds, in memory.
fn sweepline(c: &mut Criterion) {
    let records: Vec<RequestRecord> = (0..10_000u64)
        .map(|i| RequestRecord {
            start_ms: (i / 64) as f64 * 700.0 + (i % 64) as f64 * 0.3,
            success: true,
            ttft_ms: Some(40.0 + (i % 17) as f64),
            e2el_ms: Some(40.0 + (i % 17) as f64 + 127.0 * 5.0),
            itl_ms: (0..127)
                .map(|k| if k % 9 == 0 { 0.0 } else { 5.0 + (k % 3) as f64 })
                .collect(),
            input_tokens: 512,
            output_tokens: 256,
            ..RequestRecord::default()
        })
        .collect();
    let window = (0.0, records.last().map_or(0.0, |r| r.ended_ms()));
    let mut group = c.benchmark_group("sweepline");
    group.sample_size(10);
    group.throughput(Throughput::Elements(records.len() as u64));
    group.bench_function("10k streamed records × 128 chunks", |b| {
        b.iter(|| sweep_of(black_box(&records), true, window))
    });
    group.finish();
}

criterion_group!(benches, parse, adapt, aggregate, sweepline);
criterion_main!(benches);
