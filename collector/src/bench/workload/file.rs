//! Prompt files by format: Spec-Bench's `question.jsonl`, SPEED-Bench, plain JSONL (vLLM's
//! `custom`), and a trace's prompts; each dispatched to its reader.

use std::path::Path;

use serde::Deserialize;

use super::hf::from_hf;
use super::prompt::{invalid_workload, Dataset, Prompt, Workload};
use super::sharegpt::from_sharegpt;
use crate::bench::datafile::{self, Sample};
use crate::bench::tokens::TokenCounter;
use crate::error::CollectorError;

#[derive(Deserialize)]
pub(super) struct SpecBenchLine {
    pub(super) category: Option<String>,
    pub(super) turns: Vec<String>,
}

#[derive(Deserialize)]
pub(super) struct SpeedBenchLine {
    pub(super) category: Option<String>,
    pub(super) messages: Vec<SpeedBenchMessage>,
}

#[derive(Deserialize)]
pub(super) struct SpeedBenchMessage {
    pub(super) content: String,
}

#[derive(Deserialize)]
pub(super) struct JsonlLine {
    pub(super) prompt: String,
    pub(super) category: Option<String>,
    /// vLLM's custom dataset names it `output_tokens`.
    #[serde(alias = "output_tokens")]
    pub(super) max_tokens: Option<u32>,
}

/// A dataset file's prompts, at most `cap` of them: a seeded sample, in a seeded order, of the
/// file read one line or item at a time (never whole).
pub(super) fn from_file(
    args: &Workload,
    path: &Path,
    cap: usize,
    tokens: &TokenCounter,
) -> Result<Vec<Prompt>, CollectorError> {
    if matches!(args.dataset, Dataset::Mooncake(..)) {
        return from_trace(args, path, cap, tokens);
    }
    if let Dataset::Hf(_, columns) = &args.dataset {
        return from_hf(args, path, columns, cap, tokens);
    }
    if matches!(args.dataset, Dataset::ShareGpt(_)) {
        if !args.categories.is_empty() {
            return Err(CollectorError::InvalidArgument(
                "ShareGPT prompts have no categories: --category takes a spec-bench, speed-bench or jsonl dataset"
                    .into(),
            ));
        }
        return from_sharegpt(args, path, cap, tokens);
    }
    let mut sample = Sample::new(cap, args.seed);
    datafile::for_each_line(path, args.max_dataset_bytes, |i, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let bad = |e: serde_json::Error| {
            CollectorError::InvalidArgument(format!("{}:{i}: not a dataset line: {e}", path.display()))
        };
        let mut later_turns = Vec::new();
        let (prompt, category, max_tokens) = match args.dataset {
            Dataset::SpecBench(_) => {
                let l: SpecBenchLine = serde_json::from_str(line).map_err(bad)?;
                let mut turns = l.turns.into_iter();
                let first = turns
                    .next()
                    .ok_or_else(|| CollectorError::InvalidArgument(format!("{}:{i}: no turns", path.display())))?;
                later_turns = if args.multi_turn { turns.collect() } else { Vec::new() };
                (first, l.category, None)
            }
            Dataset::SpeedBench(_) => {
                let l: SpeedBenchLine = serde_json::from_str(line).map_err(bad)?;
                let first =
                    l.messages.into_iter().next().ok_or_else(|| {
                        CollectorError::InvalidArgument(format!("{}:{i}: no messages", path.display()))
                    })?;
                (first.content, l.category, None)
            }
            _ => {
                let l: JsonlLine = serde_json::from_str(line).map_err(bad)?;
                (l.prompt, l.category, l.max_tokens)
            }
        };
        if !args.categories.is_empty() && !category.as_ref().is_some_and(|c| args.categories.contains(c)) {
            return Ok(());
        }
        sample.offer(|| {
            Some(Prompt {
                input_tokens: tokens.count(&prompt),
                text: prompt,
                category,
                max_tokens: max_tokens.unwrap_or(args.output_tokens).max(1),
                ignore_eos: args.ignore_eos,
                later_turns,
            })
        });
        Ok(())
    })?;
    let prompts = sample.into_vec();
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

/// A trace's first `count` requests in their timestamps' order (a replay takes each once).
pub(super) fn from_trace(
    args: &Workload,
    path: &Path,
    count: usize,
    tokens: &TokenCounter,
) -> Result<Vec<Prompt>, CollectorError> {
    if !args.categories.is_empty() {
        return invalid_workload(
            "a Mooncake trace has no categories: --category takes a spec-bench, speed-bench or jsonl dataset",
        );
    }
    let trace = crate::bench::trace::read(path, args.max_dataset_bytes)?;
    if trace.len() < count {
        return invalid_workload(&format!(
            "{} holds {} requests; the run asks for {count} (--num-prompts with --warmup)",
            path.display(),
            trace.len()
        ));
    }
    let fill = match args.dataset.trace_fill() {
        Some(fill) => Some(crate::bench::trace::Fill::read(fill, args.max_dataset_bytes, *tokens)?),
        None => None,
    };
    Ok(
        crate::bench::trace::prompts(&trace[..count], args.seed, args.output_tokens, fill.as_ref())
            .into_iter()
            .map(|p| Prompt {
                text: p.text,
                category: None,
                max_tokens: p.max_tokens,
                // The answer has the trace's length (as GuideLLM replays it).
                ignore_eos: true,
                input_tokens: p.input_tokens,
                later_turns: Vec::new(),
            })
            .collect(),
    )
}
