//! The "content-invalid for acceptance" mark: a run whose prompts or answers stand for no real
//! text (random tokens, a trace's filler words, answers past the model's end) measured an
//! acceptance that says nothing of traffic. Its reasons, their words and its sentence.

use serde::{Deserialize, Serialize};

/// Why a run's acceptance measures no real text: each a reason of the "content-invalid for
/// acceptance" mark (`result.json`'s `content_invalid_for_acceptance`, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentInvalid {
    /// Random-token prompts (`--dataset synthetic`).
    RandomTokens,
    /// A trace replayed with filler words in its hash blocks (no `--trace-fill`).
    TraceFiller,
    /// Answers held past the model's own end: `ignore_eos` (synthetic prompts and a trace's
    /// output lengths set it too).
    IgnoreEos,
}

impl ContentInvalid {
    /// The reason in a few words, for the mark's sentence.
    pub fn phrase(self) -> &'static str {
        match self {
            ContentInvalid::RandomTokens => "random-token prompts",
            ContentInvalid::TraceFiller => "trace filler words (no --trace-fill)",
            ContentInvalid::IgnoreEos => "ignore_eos answers",
        }
    }
}

/// What the mark means, for its hover.
pub const CONTENT_INVALID_DEFINITION: &str = "Content-invalid for acceptance: the run's text stands for no real text (random-token prompts, a trace replayed with filler words, or answers held past the model's end with ignore_eos), so the acceptance it measured says how the drafter does on that text, not on traffic. Its latency and throughput still hold for the load. speclens check refuses to compare its acceptance with a valid run's unless told (--mixed-content)";

/// The reasons a run of `dataset` (its `--dataset` name) is content-invalid for acceptance;
/// empty for a valid run. A trace replay without a fill file used filler words (every one did
/// before `--trace-fill`), and held each answer to the trace's output length.
pub fn content_invalid(dataset: &str, ignore_eos: bool, trace_fill: Option<&str>) -> Vec<ContentInvalid> {
    let trace = dataset == "mooncake";
    [
        (dataset == "synthetic", ContentInvalid::RandomTokens),
        (trace && trace_fill.is_none(), ContentInvalid::TraceFiller),
        (ignore_eos || trace, ContentInvalid::IgnoreEos),
    ]
    .into_iter()
    .filter_map(|(applies, reason)| applies.then_some(reason))
    .collect()
}

/// The mark's sentence for the console and the pages, or `None` for a valid run.
pub fn content_invalid_sentence(reasons: &[ContentInvalid]) -> Option<String> {
    if reasons.is_empty() {
        return None;
    }
    let phrases: Vec<&str> = reasons.iter().map(|r| r.phrase()).collect();
    Some(format!(
        "Content-invalid for acceptance ({}): this run's acceptance stands for no real text; compare it only with runs of the same content",
        phrases.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_that_stands_for_no_text_is_marked_with_its_reasons() {
        assert_eq!(
            content_invalid("synthetic", true, None),
            [ContentInvalid::RandomTokens, ContentInvalid::IgnoreEos]
        );
        assert!(content_invalid("sharegpt", false, None).is_empty());
        assert_eq!(content_invalid("jsonl", true, None), [ContentInvalid::IgnoreEos]);
        // A trace holds its answers to their lengths; its blocks are filler unless filled.
        assert_eq!(
            content_invalid("mooncake", false, None),
            [ContentInvalid::TraceFiller, ContentInvalid::IgnoreEos]
        );
        assert_eq!(
            content_invalid("mooncake", false, Some("prompts.jsonl")),
            [ContentInvalid::IgnoreEos]
        );
        assert_eq!(
            content_invalid_sentence(&content_invalid("mooncake", false, None)).unwrap(),
            "Content-invalid for acceptance (trace filler words (no --trace-fill), ignore_eos answers): this run's acceptance stands for no real text; compare it only with runs of the same content"
        );
        assert_eq!(content_invalid_sentence(&[]), None);
        assert_eq!(
            serde_json::to_value(content_invalid("synthetic", true, None)).unwrap(),
            serde_json::json!(["random_tokens", "ignore_eos"])
        );
    }
}
