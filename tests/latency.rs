//! Latency that speculation does not distort, end to end: on timed sims of vLLM #48892's shape
//! (a long draft against a short one), the per-chunk ITL rises with k while the per-token ITL
//! falls, the tokens per chunk follow the acceptance, and AIPerf 0.14's E2E normalized
//! interactivity is in the AIPerf export with its unit, as computed from the records; without
//! the usage in every chunk the per-token figures say why they are missing.

use serde_json::Value;

use crate::common::bench::{Bench, BenchRun};
use crate::common::{read_json, Speclens};

/// A timed sim drafting `k` tokens accepted at 0.9 each: steps of 8 ms up to 16 tokens in the
/// batch, so at concurrency 4 a k = 7 step (32 tokens) costs about twice a k = 1 step (8) and
/// sends about 5.7 tokens where k = 1 sends 1.9 (vLLM #48892: MTP 8 against MTP 1).
fn sim_of_k(k: &str) -> Speclens {
    Speclens::sim(&[
        "--num-spec-tokens",
        k,
        "--alpha",
        "0.9",
        "--step-ms",
        "8",
        "--ridge",
        "16",
    ])
}

fn bench(sim: &Speclens, extra: &[&str]) -> BenchRun {
    Bench::at(&sim.url())
        .args(&["--num-prompts", "24", "--concurrency", "4", "--input-tokens", "16"])
        .args(&["--output-tokens", "64", "--ignore-eos", "--seed", "3"])
        .args(extra)
        .ok()
}

fn number(result: &Value, key: &str) -> f64 {
    result[key]
        .as_f64()
        .unwrap_or_else(|| panic!("result.json has no {key}"))
}

/// numpy's linear percentile of unsorted values.
fn linear_percentile(mut values: Vec<f64>, q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let idx = q / 100.0 * (values.len() - 1) as f64;
    let (lo, hi) = (idx.floor() as usize, idx.ceil() as usize);
    values[lo] + (idx - lo as f64) * (values[hi] - values[lo])
}

#[test]
fn per_token_itl_falls_with_k_where_per_chunk_itl_rises() {
    let (long, short) = (sim_of_k("7"), sim_of_k("1"));
    let (seven, one) = (bench(&long, &[]), bench(&short, &[]));
    let (r7, r1) = (&seven.result, &one.result);
    let itl = |r: &Value| number(r, "median_itl_ms");
    let per_token = |r: &Value| number(r, "median_itl_per_token_ms");
    let per_chunk = |r: &Value| number(r, "mean_tokens_per_chunk");
    let summary = format!(
        "ITL {} / {} ms, ITL per token {} / {} ms, tokens per chunk {} / {}",
        itl(r7),
        itl(r1),
        per_token(r7),
        per_token(r1),
        per_chunk(r7),
        per_chunk(r1)
    );
    eprintln!("{summary}");
    // The #48892 shape: each chunk takes longer at k = 7, each token comes sooner.
    assert!(itl(r7) > 1.5 * itl(r1), "{summary}");
    assert!(per_token(r7) < 0.85 * per_token(r1), "{summary}");
    // A chunk carries a step's tokens: about the acceptance length (5.7 and 1.9 at α 0.9).
    assert!(
        per_chunk(r7) > 4.5 && per_chunk(r1) > 1.6 && per_chunk(r1) < 2.2,
        "{summary}"
    );
    assert_eq!(r7["chunk_uncounted_requests"], 0, "every chunk carried its usage");
    // Each record's chunk counts add up to its output and fit its gaps.
    for r in seven.records().iter().filter(|r| r.success && !r.warmup) {
        assert_eq!(r.chunk_tokens.len(), r.itl_ms.len() + 1, "{r:?}");
        assert_eq!(
            r.chunk_tokens.iter().map(|c| u64::from(*c)).sum::<u64>(),
            r.output_tokens
        );
    }
    let console = seven.console();
    assert!(
        console.contains(&format!("{:<40} {:.2}", "Median ITL per token (ms):", per_token(r7))),
        "{console}"
    );

    // AIPerf 0.14's E2E normalized interactivity: 1 ÷ the quantile of latency ÷ output tokens,
    // from the records (AIPerf's request latency ends at the last content chunk).
    let ratios: Vec<f64> = seven
        .records()
        .iter()
        .filter(|r| r.success && !r.warmup)
        .map(|r| r.aiperf_latency_ms().unwrap() / 1e3 / r.output_tokens as f64)
        .collect();
    let export = read_json(&seven.out.join("profile_export_speclens.json"));
    for (tag, q) in [
        ("e2e_normalized_interactivity_p75", 75.0),
        ("e2e_normalized_interactivity_p90", 90.0),
    ] {
        let want = 1.0 / linear_percentile(ratios.clone(), q);
        assert_eq!(export[tag]["unit"], "tokens/sec/user", "{}", export[tag]);
        let got = export[tag]["avg"].as_f64().unwrap();
        assert!((got - want).abs() <= 1e-9 * want, "{tag}: {got} against {want}");
        assert_eq!(number(r7, tag), got, "result.json and the AIPerf export say the same");
    }
    assert!(
        console.contains("E2E norm. interactivity p90 (tok/s/user):"),
        "{console}"
    );
}

#[test]
fn without_the_usage_in_every_chunk_the_per_token_figures_say_why() {
    let sim = sim_of_k("3");
    let run = bench(&sim, &["--continuous-usage-stats", "off"]);
    assert!(run.result.get("median_itl_per_token_ms").is_none(), "{}", run.result);
    assert_eq!(run.result["chunk_uncounted_requests"], 24);
    assert!(run.records().iter().all(|r| r.chunk_tokens.is_empty()));
    let console = run.console();
    assert!(
        console.contains("ITL per token and tokens per chunk: not measured")
            && console.contains("E2E norm. interactivity p75 (tok/s/user):"),
        "{console}"
    );
}
