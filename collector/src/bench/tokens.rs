//! Token counts without a download: OpenAI's cl100k_base vocabulary, shipped prebuilt inside the
//! `bpe-openai` crate (GitHub's `rust-gems`). Used to count dataset prompts, conversation turns
//! and generated text (AIPerf's client-side count beside a server's `usage`); the server's own
//! counts win wherever a figure takes one count.
//!
//! The vocabulary is deserialised on the first count, not before (~30 ms of CPU once per
//! process): a run whose prompts are synthetic and whose server reports nothing it needs
//! counting still pays it once, at its first finished request.

/// Words of synthetic prompts: common English words that BPE tokenizers keep as one token.
pub const WORDS: [&str; 24] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not", "he",
    "this", "are", "or", "his", "from", "at", "which",
];

/// A handle on the process's one tokenizer; copying it is free.
#[derive(Clone, Copy, Default)]
pub struct TokenCounter;

impl TokenCounter {
    pub fn new() -> TokenCounter {
        TokenCounter
    }

    /// Tokens in `text`, as tiktoken's `encode_ordinary` counts them (special-token strings
    /// counted as ordinary text).
    pub fn count(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        bpe_openai::cl100k_base().count(text) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_tokens() {
        let t = TokenCounter::new();
        assert_eq!(t.count(""), 0);
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.count(" the of and to"), 4);
    }

    /// The counts are tiktoken's own (tiktoken-rs, the reference implementation's Rust port),
    /// on the texts where pre-tokenizers differ: whitespace runs before a word and at the end,
    /// digit groups, contractions, punctuation runs, newlines and non-Latin scripts.
    #[test]
    fn counts_match_tiktoken_where_pre_tokenizers_differ() {
        let reference = tiktoken_rs::cl100k_base().unwrap();
        let t = TokenCounter::new();
        let texts = [
            "plain words of one token each ",
            "  two spaces before, three after   ",
            "tabs\tand\t\tnewlines\n\n\nand \r\n crlf",
            "numbers 1 12 123 1234 12345 1234567 0.5 -42",
            "contractions: I'm, you're, they've, we'll, he'd, it's, DON'T",
            "punctuation!!! ... ??? ((nested)) {\"json\": [1, 2]}",
            "código, naïve, Straße, 東京都, 서울, Москва, 🙂🚀",
            "trailing whitespace then end\n   ",
            "",
        ];
        for text in texts {
            assert_eq!(
                t.count(text),
                reference.encode_ordinary(text).len() as u64,
                "count of {text:?}"
            );
        }
        // The synthetic prompts' own words and numbers, at every length the workload uses.
        let synthetic: String = (0..2000).map(|i| format!("{i} of the ")).collect();
        assert_eq!(t.count(&synthetic), reference.encode_ordinary(&synthetic).len() as u64);
    }
}
