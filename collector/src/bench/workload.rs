//! Workloads: the prompts a run sends (synthetic, Spec-Bench `question.jsonl`, plain JSONL),
//! and their request bodies, serialised before the run so nothing is built on the timing path.

use std::path::{Path, PathBuf};

use axum::body::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;
use serde_json::json;

use super::client::EndpointKind;
use super::tokens::TokenCounter;
use crate::error::CollectorError;

/// A dataset: generated, or a file of one of the known layouts.
#[derive(Debug, Clone, PartialEq)]
pub enum Dataset {
    Synthetic,
    SpecBench(PathBuf),
    Jsonl(PathBuf),
}

impl Dataset {
    /// The dataset's kind as `result.json` records it (`synthetic`, `specbench`, `jsonl`).
    pub fn name(&self) -> &'static str {
        match self {
            Dataset::Synthetic => "synthetic",
            Dataset::SpecBench(_) => "specbench",
            Dataset::Jsonl(_) => "jsonl",
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Dataset::Synthetic => None,
            Dataset::SpecBench(p) | Dataset::Jsonl(p) => Some(p),
        }
    }
}

/// What to send: the dataset, the lengths and the sampling settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub dataset: Dataset,
    /// Only prompts of these categories (all when empty).
    pub categories: Vec<String>,
    /// Synthetic prompt length in tokens (mean).
    pub input_tokens: u32,
    pub input_tokens_stddev: f64,
    /// Output length in tokens (mean); the max_tokens of every request.
    pub output_tokens: u32,
    pub output_tokens_stddev: f64,
    /// Set ignore_eos on dataset prompts too (synthetic prompts always set it).
    pub ignore_eos: bool,
    pub temperature: f64,
    pub seed: u64,
}

/// One prompt to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub category: Option<String>,
    pub max_tokens: u32,
    pub ignore_eos: bool,
    /// Input length when known before sending (the server's `usage` replaces it).
    pub input_tokens: u64,
}

/// Words of synthetic prompts: common English words that BPE tokenizers keep as one token.
const WORDS: [&str; 24] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not", "he",
    "this", "are", "or", "his", "from", "at", "which",
];

/// A normal draw, rounded and at least 1.
fn draw_length(rng: &mut SmallRng, mean: u32, stddev: f64) -> u32 {
    if stddev <= 0.0 {
        return mean.max(1);
    }
    // Box–Muller.
    let (u1, u2): (f64, f64) = (rng.random::<f64>().max(f64::MIN_POSITIVE), rng.random());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (f64::from(mean) + stddev * z).round().clamp(1.0, f64::from(u32::MAX)) as u32
}

/// A synthetic prompt of `target` tokens under `tokens` (each word below is one token; the
/// leading number, which makes every prompt start differently so no prefix cache serves it
/// whole, may take more, so the length is corrected by counting).
fn synthetic_text(i: usize, target: u64, tokens: &TokenCounter) -> (String, u64) {
    let build = |words: u64| {
        let mut text = format!("{i}");
        for w in 1..words {
            text.push(' ');
            text.push_str(WORDS[(w as usize * 7 + i * 13) % WORDS.len()]);
        }
        text
    };
    let mut words = target;
    let mut text = build(words);
    let mut count = tokens.count(&text);
    for _ in 0..4 {
        if count == target || (count > target && words == 1) {
            break;
        }
        words = (words as i64 + target as i64 - count as i64).max(1) as u64;
        text = build(words);
        count = tokens.count(&text);
    }
    (text, count)
}

fn synthetic(args: &Workload, count: usize, tokens: &TokenCounter) -> Vec<Prompt> {
    let mut rng = SmallRng::seed_from_u64(args.seed);
    (0..count)
        .map(|i| {
            let len = draw_length(&mut rng, args.input_tokens, args.input_tokens_stddev);
            let (text, input_tokens) = synthetic_text(i, u64::from(len), tokens);
            Prompt {
                text,
                category: None,
                max_tokens: draw_length(&mut rng, args.output_tokens, args.output_tokens_stddev),
                ignore_eos: true,
                input_tokens,
            }
        })
        .collect()
}

#[derive(Deserialize)]
struct SpecBenchLine {
    category: Option<String>,
    turns: Vec<String>,
}

#[derive(Deserialize)]
struct JsonlLine {
    prompt: String,
    category: Option<String>,
    max_tokens: Option<u32>,
}

fn from_file(args: &Workload, path: &Path, tokens: &TokenCounter) -> Result<Vec<Prompt>, CollectorError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CollectorError::InvalidArgument(format!("cannot read dataset {}: {e}", path.display())))?;
    let mut prompts = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |e: serde_json::Error| {
            CollectorError::InvalidArgument(format!("{}:{}: not a dataset line: {e}", path.display(), i + 1))
        };
        let (prompt, category, max_tokens) = match args.dataset {
            Dataset::SpecBench(_) => {
                let l: SpecBenchLine = serde_json::from_str(line).map_err(bad)?;
                let first = l.turns.into_iter().next().ok_or_else(|| {
                    CollectorError::InvalidArgument(format!("{}:{}: no turns", path.display(), i + 1))
                })?;
                (first, l.category, None)
            }
            _ => {
                let l: JsonlLine = serde_json::from_str(line).map_err(bad)?;
                (l.prompt, l.category, l.max_tokens)
            }
        };
        if !args.categories.is_empty() && !category.as_ref().is_some_and(|c| args.categories.contains(c)) {
            continue;
        }
        prompts.push(Prompt {
            input_tokens: tokens.count(&prompt),
            text: prompt,
            category,
            max_tokens: max_tokens.unwrap_or(args.output_tokens).max(1),
            ignore_eos: args.ignore_eos,
        });
    }
    if prompts.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} holds no prompts{}",
            path.display(),
            if args.categories.is_empty() {
                String::new()
            } else {
                format!(" of categories {:?}", args.categories)
            }
        )));
    }
    Ok(prompts)
}

/// The prompts of a run: `count` of them (file datasets are cycled, shuffled by the seed).
pub fn load(args: &Workload, count: usize, tokens: &TokenCounter) -> Result<Vec<Prompt>, CollectorError> {
    match args.dataset.path() {
        None => Ok(synthetic(args, count, tokens)),
        Some(path) => {
            let mut pool = from_file(args, path, tokens)?;
            let mut rng = SmallRng::seed_from_u64(args.seed);
            for i in (1..pool.len()).rev() {
                pool.swap(i, rng.random_range(0..=i));
            }
            Ok((0..count).map(|i| pool[i % pool.len()].clone()).collect())
        }
    }
}

/// What every request body shares.
pub struct BodyOptions<'a> {
    pub endpoint: EndpointKind,
    pub model: &'a str,
    pub stream: bool,
    pub temperature: f64,
    pub sglang_spec_details: bool,
}

/// The JSON body of one request. Streaming requests always ask for the usage chunk: vLLM sends
/// its per-request spec-decode stats on it.
pub fn body(prompt: &Prompt, o: &BodyOptions<'_>) -> Bytes {
    let mut body = json!({
        "model": o.model,
        "max_tokens": prompt.max_tokens,
        "temperature": o.temperature,
        "stream": o.stream,
    });
    match o.endpoint {
        EndpointKind::Chat => body["messages"] = json!([{"role": "user", "content": prompt.text}]),
        EndpointKind::Completions => body["prompt"] = json!(prompt.text),
    }
    if o.stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if prompt.ignore_eos {
        body["ignore_eos"] = json!(true);
    }
    if o.sglang_spec_details {
        body["return_spec_tokens_details"] = json!(true);
    }
    Bytes::from(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Workload {
        let mut argv = vec!["speclens", "bench"];
        argv.extend_from_slice(extra);
        crate::cli::bench_plan_of(&argv).unwrap().workload
    }

    #[test]
    fn synthetic_prompts_have_the_asked_lengths_and_differ() {
        let t = TokenCounter::new().unwrap();
        let a = args(&["--input-tokens", "50", "--output-tokens", "20"]);
        let p = load(&a, 3, &t).unwrap();
        assert!(p
            .iter()
            .all(|p| t.count(&p.text) == 50 && p.input_tokens == 50 && p.max_tokens == 20 && p.ignore_eos));
        let short = load(&args(&["--input-tokens", "3"]), 2000, &t).unwrap();
        assert!(
            short.iter().all(|p| p.input_tokens == t.count(&p.text)),
            "counts are exact"
        );
        assert_ne!(p[0].text, p[1].text);
        let spread = args(&["--input-tokens", "50", "--input-tokens-stddev", "10"]);
        let lens: Vec<u64> = load(&spread, 50, &t).unwrap().iter().map(|p| p.input_tokens).collect();
        assert!(lens.iter().any(|l| *l != 50) && lens.iter().all(|l| *l >= 1));
        assert_eq!(
            load(&spread, 5, &t).unwrap(),
            load(&spread, 5, &t).unwrap(),
            "the seed makes it reproducible"
        );
    }

    #[test]
    fn spec_bench_file_with_categories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("question.jsonl");
        std::fs::write(
            &path,
            "{\"question_id\": 1, \"category\": \"writing\", \"turns\": [\"Write a poem\", \"again\"]}\n\
             {\"question_id\": 2, \"category\": \"summarization\", \"turns\": [\"Summarize this\"]}\n",
        )
        .unwrap();
        let a = args(&[
            "--dataset",
            "spec-bench",
            "--dataset-path",
            path.to_str().unwrap(),
            "--category",
            "summarization",
        ]);
        let t = TokenCounter::new().unwrap();
        let p = load(&a, 3, &t).unwrap();
        assert!(p
            .iter()
            .all(|p| p.text == "Summarize this" && p.category.as_deref() == Some("summarization")));
        let none = args(&[
            "--dataset",
            "spec-bench",
            "--dataset-path",
            path.to_str().unwrap(),
            "--category",
            "math",
        ]);
        assert!(load(&none, 1, &t).unwrap_err().to_string().contains("no prompts"));
        std::fs::write(&path, "not json\n").unwrap();
        assert!(load(&a, 1, &t)
            .unwrap_err()
            .to_string()
            .contains(":1: not a dataset line"));
    }

    #[test]
    fn bodies_ask_for_usage_when_streaming() {
        let p = Prompt {
            text: "hi".into(),
            category: None,
            max_tokens: 5,
            ignore_eos: true,
            input_tokens: 1,
        };
        let o = BodyOptions {
            endpoint: EndpointKind::Chat,
            model: "m",
            stream: true,
            temperature: 0.0,
            sglang_spec_details: false,
        };
        let v: serde_json::Value = serde_json::from_slice(&body(&p, &o)).unwrap();
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["messages"][0]["content"], "hi");
        assert_eq!(v["ignore_eos"], true);
    }
}
