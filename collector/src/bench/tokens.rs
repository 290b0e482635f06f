//! Token counts without a download: OpenAI's cl100k_base vocabulary, shipped inside the
//! `tiktoken-rs` crate. Used to size synthetic prompts and to count text when a server sends
//! no `usage`; the server's own counts win whenever it reports them.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use crate::error::CollectorError;

/// The tokenizer, built once per process (parsing the vocabulary takes ~0.1 s of CPU, which a
/// sweep of many short runs would otherwise pay each time).
static BPE: OnceLock<CoreBPE> = OnceLock::new();

/// A loaded tokenizer.
#[derive(Clone, Copy)]
pub struct TokenCounter {
    bpe: &'static CoreBPE,
}

impl TokenCounter {
    pub fn new() -> Result<TokenCounter, CollectorError> {
        if let Some(bpe) = BPE.get() {
            return Ok(TokenCounter { bpe });
        }
        let built = tiktoken_rs::cl100k_base()
            .map_err(|e| CollectorError::InvalidArgument(format!("cannot load the cl100k_base tokenizer: {e}")))?;
        Ok(TokenCounter {
            bpe: BPE.get_or_init(|| built),
        })
    }

    /// Tokens in `text` (special-token strings counted as ordinary text).
    pub fn count(&self, text: &str) -> u64 {
        self.bpe.encode_ordinary(text).len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_tokens() {
        let t = TokenCounter::new().unwrap();
        assert_eq!(t.count(""), 0);
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.count(" the of and to"), 4);
    }
}
