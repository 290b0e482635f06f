//! vLLM's `sonnet` dataset: a fixed prefix of poem lines and a random pick of more.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::prompt::{invalid_workload, Prompt, Workload};
use crate::bench::datafile::{self};
use crate::bench::tokens::TokenCounter;
use crate::error::CollectorError;

/// vLLM's sonnet prompt's opening line.
pub(super) const SONNET_BASE: &str = "Pick as many lines as you can from these poem lines:\n";

/// Prompts from a poem's lines as vLLM's `SonnetDataset` builds them: the base line, the file's
/// first lines as a prefix of about `prefix_tokens`, then lines drawn at random (with
/// replacement, seeded) up to about `input_tokens`, a draw kept only when it fits
/// `input_tokens`. vLLM counts the base line inside the model's chat template; speclens counts
/// the base line alone. `count` prompts, or an error when no draw fits.
pub(super) fn from_sonnet(
    args: &Workload,
    path: &Path,
    count: usize,
    tokens: &TokenCounter,
) -> Result<Vec<Prompt>, CollectorError> {
    let mut owned = Vec::new();
    datafile::for_each_line(path, args.max_dataset_bytes, |_, line| {
        if !line.trim().is_empty() {
            owned.push(line.to_string());
        }
        Ok(())
    })?;
    let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
    if lines.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} holds no poem lines for --dataset sonnet",
            path.display()
        )));
    }
    let line_tokens: u64 = lines.iter().map(|l| tokens.count(l)).sum();
    let avg_tokens = line_tokens as f64 / lines.len() as f64;
    let base_tokens = tokens.count(SONNET_BASE) as f64;
    let (input, prefix) = (f64::from(args.input_tokens), f64::from(args.prefix_tokens));
    if input <= base_tokens {
        return Err(CollectorError::InvalidArgument(format!(
            "--input-tokens {} must be more than the sonnet prompt's opening line ({base_tokens} tokens)",
            args.input_tokens
        )));
    }
    if args.prefix_tokens >= args.input_tokens {
        return invalid_workload("--prefix-tokens must be less than --input-tokens for --dataset sonnet");
    }
    let input_lines = ((input - base_tokens) / avg_tokens).round() as usize;
    let prefix_lines = (((prefix - base_tokens) / avg_tokens).round().max(0.0) as usize).min(lines.len());
    let fixed = format!("{SONNET_BASE}{}", lines[..prefix_lines].concat());
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut prompts = Vec::with_capacity(count);
    // vLLM draws until enough fit; a file whose draws never fit gets an error, not a hang.
    let attempts = count.saturating_mul(100).max(1000);
    for _ in 0..attempts {
        if prompts.len() == count {
            break;
        }
        let mut text = fixed.clone();
        for _ in 0..input_lines.saturating_sub(prefix_lines) {
            text.push_str(lines[rng.random_range(0..lines.len())]);
        }
        let input_tokens = tokens.count(&text);
        if input_tokens <= u64::from(args.input_tokens) {
            prompts.push(Prompt {
                text,
                category: None,
                max_tokens: args.output_tokens.max(1),
                ignore_eos: args.ignore_eos,
                input_tokens,
                later_turns: Vec::new(),
            });
        }
    }
    if prompts.len() < count {
        return Err(CollectorError::InvalidArgument(format!(
            "{}: {} of {attempts} sonnet prompts of {input_lines} lines fit --input-tokens {} (lines average {avg_tokens:.1} tokens); raise --input-tokens",
            path.display(),
            prompts.len(),
            args.input_tokens
        )));
    }
    Ok(prompts)
}
