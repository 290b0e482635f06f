//! Synthetic prompts as vLLM's `random` dataset draws them: lengths within a range around a
//! mean, a shared prefix, words from the token counter's one-token list.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::prompt::{Prompt, Workload};
use crate::bench::tokens::WORDS;

/// A normal draw, rounded and at least 1.
pub(super) fn draw_length(rng: &mut SmallRng, mean: u32, stddev: f64) -> u32 {
    if stddev <= 0.0 {
        return mean.max(1);
    }
    // Box–Muller.
    let (u1, u2): (f64, f64) = (rng.random::<f64>().max(f64::MIN_POSITIVE), rng.random());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (f64::from(mean) + stddev * z).round().clamp(1.0, f64::from(u32::MAX)) as u32
}

/// vLLM's `random` length draw: uniform over the integers of [⌊mean·(1 − r)⌋, ⌈mean·(1 + r)⌉],
/// at least `low_floor`.
pub(super) fn draw_in_range(rng: &mut SmallRng, mean: u32, ratio: f64, low_floor: u32) -> u32 {
    let low = ((f64::from(mean) * (1.0 - ratio)).floor() as u32).max(low_floor);
    let high = ((f64::from(mean) * (1.0 + ratio)).ceil() as u32).max(low);
    rng.random_range(low..=high)
}

/// The prefix every synthetic prompt shares: `target` tokens of the same words (each of
/// [`WORDS`] is one cl100k_base token alone and after a space, so the count is the word count).
pub(super) fn shared_prefix(target: u64) -> (String, u64) {
    if target == 0 {
        return (String::new(), 0);
    }
    let mut text = String::new();
    for w in 0..target {
        if w > 0 {
            text.push(' ');
        }
        text.push_str(WORDS[(w as usize * 5) % WORDS.len()]);
    }
    text.push(' ');
    (text, target)
}

/// A synthetic prompt of `target` tokens: the prompt's number (which makes every prompt start
/// differently so no prefix cache serves it whole) and then words of one token each. Counted,
/// not tokenized: cl100k_base splits a number into groups of up to three digits, each one
/// token, and each ` word` is one more; a number longer than `target` makes the prompt longer.
/// The unit tests hold the count against the tokenizer.
pub(super) fn synthetic_text(i: usize, target: u64) -> (String, u64) {
    let mut text = i.to_string();
    let number_tokens = text.len().div_ceil(3) as u64;
    let words = target.saturating_sub(number_tokens);
    text.reserve(words as usize * 6);
    for w in 1..=words {
        text.push(' ');
        text.push_str(WORDS[(w as usize * 7 + i * 13) % WORDS.len()]);
    }
    (text, number_tokens + words)
}

/// Synthetic prompts in order, each drawn from one seeded generator: the same sequence however
/// it is consumed (all before the run, or as the run goes).
pub(super) struct Synthetic<'a> {
    pub(super) args: &'a Workload,
    pub(super) rng: SmallRng,
    pub(super) next: usize,
    /// The shared prefix and its tokens.
    pub(super) prefix: (String, u64),
}

impl<'a> Synthetic<'a> {
    pub(super) fn new(args: &'a Workload) -> Synthetic<'a> {
        Synthetic {
            args,
            rng: SmallRng::seed_from_u64(args.seed),
            next: 0,
            prefix: shared_prefix(u64::from(args.prefix_tokens)),
        }
    }
}

impl Iterator for Synthetic<'_> {
    type Item = Prompt;

    fn next(&mut self) -> Option<Prompt> {
        let i = self.next;
        self.next += 1;
        let a = self.args;
        let (len, max_tokens) = if a.range_ratio > 0.0 {
            (
                draw_in_range(&mut self.rng, a.input_tokens, a.range_ratio, 0),
                draw_in_range(&mut self.rng, a.output_tokens, a.range_ratio, 1),
            )
        } else {
            (
                draw_length(&mut self.rng, a.input_tokens, a.input_tokens_stddev),
                draw_length(&mut self.rng, a.output_tokens, a.output_tokens_stddev),
            )
        };
        let (own, own_tokens) = if len == 0 {
            (String::new(), 0)
        } else {
            synthetic_text(i, u64::from(len))
        };
        let (prefix, prefix_tokens) = &self.prefix;
        let (text, input_tokens) = if prefix.is_empty() {
            (own, own_tokens)
        } else {
            // The space between prefix and number is a token of its own (cl100k_base never
            // joins a space to the digits after it).
            (format!("{prefix}{own}"), prefix_tokens + 1 + own_tokens)
        };
        Some(Prompt {
            text,
            category: None,
            max_tokens,
            ignore_eos: true,
            input_tokens,
            later_turns: Vec::new(),
        })
    }
}
