//! ShareGPT JSON as vLLM's `sharegpt` dataset reads it: the first two turns, pairs that fit.

use std::path::Path;

use serde::Deserialize;

use super::prompt::{Prompt, Workload};
use crate::bench::datafile::{self, Sample};
use crate::bench::tokens::TokenCounter;
use crate::error::CollectorError;

#[derive(Deserialize)]
pub(super) struct ShareGptEntry {
    #[serde(default, deserialize_with = "first_two_turns")]
    pub(super) conversations: Vec<ShareGptTurn>,
}

/// The first two turns of a conversation, the later ones skipped unread (vLLM uses only these).
pub(super) fn first_two_turns<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ShareGptTurn>, D::Error> {
    struct FirstTwo;
    impl<'de> serde::de::Visitor<'de> for FirstTwo {
        type Value = Vec<ShareGptTurn>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of {\"from\", \"value\"} turns")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut turns = Vec::with_capacity(2);
            while turns.len() < 2 {
                match seq.next_element::<ShareGptTurn>()? {
                    Some(turn) => turns.push(turn),
                    None => return Ok(turns),
                }
            }
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(turns)
        }
    }
    d.deserialize_seq(FirstTwo)
}

#[derive(Deserialize)]
pub(super) struct ShareGptTurn {
    pub(super) value: String,
}

/// vLLM's limits on a ShareGPT pair (`is_valid_sequence` in `vllm/benchmarks/datasets.py`): at
/// least 4 tokens each way, a prompt of at most 1,024 and a pair of at most 2,048.
pub(super) fn sharegpt_pair_fits(prompt_tokens: u64, output_tokens: u64) -> bool {
    prompt_tokens >= 4 && output_tokens >= 4 && prompt_tokens <= 1024 && prompt_tokens + output_tokens <= 2048
}

/// A ShareGPT file's prompts, as vLLM takes them: the first turn is the prompt and the second's
/// length the output length; entries of fewer than two turns, and pairs outside vLLM's limits,
/// are left out (and counted in the error when nothing is left). At most `cap` are kept, a
/// seeded sample of the file read entry by entry.
pub(super) fn from_sharegpt(
    args: &Workload,
    path: &Path,
    cap: usize,
    tokens: &TokenCounter,
) -> Result<Vec<Prompt>, CollectorError> {
    let (mut entries, mut short, mut outside) = (0u64, 0u64, 0u64);
    let mut sample = Sample::new(cap, args.seed);
    let shape = "a ShareGPT file (a JSON array of {\"conversations\": [{\"from\": …, \"value\": …}, …]})";
    datafile::for_each_array_item(path, args.max_dataset_bytes, shape, |entry: ShareGptEntry| {
        entries += 1;
        let mut turns = entry.conversations.into_iter();
        let (Some(first), Some(second)) = (turns.next(), turns.next()) else {
            short += 1;
            return Ok(());
        };
        sample.offer(|| {
            let (input_tokens, output_tokens) = (tokens.count(&first.value), tokens.count(&second.value));
            if !sharegpt_pair_fits(input_tokens, output_tokens) {
                outside += 1;
                return None;
            }
            Some(Prompt {
                text: first.value,
                category: None,
                max_tokens: u32::try_from(output_tokens).unwrap_or(u32::MAX),
                ignore_eos: args.ignore_eos,
                input_tokens,
                later_turns: Vec::new(),
            })
        });
        Ok(())
    })?;
    let prompts = sample.into_vec();
    if prompts.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} holds no usable ShareGPT pair: {entries} entries, {short} with fewer than two turns, {outside} outside \
             vLLM's limits (4 to 1,024 prompt tokens, at least 4 output tokens, at most 2,048 together)",
            path.display(),
        )));
    }
    Ok(prompts)
}
