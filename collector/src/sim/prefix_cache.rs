//! The sim's automatic prefix caching, as vLLM V1 does it by default: a prompt's full blocks of
//! [`KV_BLOCK_TOKENS`] tokens are hashed in a chain (each block's hash covers every token before
//! it), a new sequence's leading blocks already in the cache are not prefilled again, and the
//! cache keeps the blocks most recently used up to the KV pool's size. What it saves shows in
//! `vllm:prefix_cache_queries_total` and `vllm:prefix_cache_hits_total` (tokens).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Tokens per KV-cache block (vLLM's default block size): the unit the cache holds and the
/// engine allocates.
pub const KV_BLOCK_TOKENS: u64 = 16;

/// The chained hashes of `prompt`'s full blocks, a token being a whitespace-separated word (as
/// the sim counts prompt tokens).
pub fn block_hashes(prompt: &str) -> Vec<u64> {
    let words: Vec<&str> = prompt.split_whitespace().collect();
    let mut parent = 0u64;
    words
        .chunks_exact(KV_BLOCK_TOKENS as usize)
        .map(|block| {
            let mut h = DefaultHasher::new();
            parent.hash(&mut h);
            block.hash(&mut h);
            parent = h.finish();
            parent
        })
        .collect()
}

/// Block hashes held, each with when it was last used; bounded by the KV pool's blocks.
#[derive(Debug)]
pub struct PrefixCache {
    capacity_blocks: u64,
    last_used: HashMap<u64, u64>,
    clock: u64,
}

impl PrefixCache {
    pub fn new(capacity_blocks: u64) -> PrefixCache {
        PrefixCache {
            capacity_blocks: capacity_blocks.max(1),
            last_used: HashMap::new(),
            clock: 0,
        }
    }

    /// The prompt tokens of a sequence found in the cache (its leading blocks held, at most
    /// all tokens but the last, which vLLM always computes), then its blocks marked used.
    pub fn hit_tokens(&mut self, blocks: &[u64], prompt_tokens: u64) -> u64 {
        let held = blocks.iter().take_while(|b| self.last_used.contains_key(b)).count() as u64;
        for &b in blocks {
            self.clock += 1;
            self.last_used.insert(b, self.clock);
        }
        // Past twice the pool, forget every block not used among the last `capacity` uses.
        if self.last_used.len() as u64 > 2 * self.capacity_blocks {
            let oldest_kept = self.clock.saturating_sub(self.capacity_blocks);
            self.last_used.retain(|_, used| *used > oldest_kept);
        }
        (held * KV_BLOCK_TOKENS).min(prompt_tokens.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize, tag: &str) -> String {
        (0..n).map(|i| format!("{tag}{i} ")).collect()
    }

    #[test]
    fn a_shared_prefix_is_found_and_a_different_one_is_not() {
        let shared = words(64, "p");
        let a = format!("{shared}{}", words(20, "a"));
        let b = format!("{shared}{}", words(20, "b"));
        assert_eq!(block_hashes(&a).len(), 5); // 84 words: 5 full blocks
        let mut cache = PrefixCache::new(1_000);
        assert_eq!(cache.hit_tokens(&block_hashes(&a), 84), 0);
        // b shares the first 64 words: 4 blocks; its fifth block differs.
        assert_eq!(cache.hit_tokens(&block_hashes(&b), 84), 64);
        // The same prompt again: every block held, the last token still computed.
        assert_eq!(cache.hit_tokens(&block_hashes(&a), 80), 79);
        // A block equal in words but after a different prefix is another block (chained).
        let moved = format!("{}{}", words(16, "x"), &shared);
        assert_eq!(cache.hit_tokens(&block_hashes(&moved), 80), 0);
    }

    #[test]
    fn the_cache_forgets_what_was_not_used_recently() {
        let mut cache = PrefixCache::new(4);
        let first = block_hashes(&words(64, "f"));
        cache.hit_tokens(&first, 64);
        for i in 0..3 {
            cache.hit_tokens(&block_hashes(&words(64, &format!("o{i}-"))), 64);
        }
        assert!(cache.last_used.len() <= 8, "{}", cache.last_used.len());
        assert_eq!(cache.hit_tokens(&first, 64), 0);
    }
}
