//! Tokens per streamed chunk, from the usage so far that vLLM and SGLang put in every chunk
//! when asked (`stream_options.continuous_usage_stats`): the per-token ITL and the tokens per
//! chunk are computed from them (docs/METRICS.md §2.11).

/// Tokens per content chunk from the usage so far each chunk carries (vLLM's and SGLang's
/// `continuous_usage_stats`): a chunk's count is its usage less the last content chunk's, so
/// the tokens of chunks without content between them (a reasoning parser's `reasoning_content`,
/// tool calls) join the content chunk whose gap they arrived in, and those before the first
/// content chunk join it (its count is no gap's).
#[derive(Default)]
pub(super) struct ChunkCounts {
    /// The usage so far at the last content chunk.
    at_content: u64,
    /// The highest usage so far seen in any chunk.
    high: u64,
    counts: Vec<u32>,
    /// A content chunk came without a usage, or a usage went down: no counts.
    broken: bool,
}

impl ChunkCounts {
    /// A content chunk with the usage it carried.
    pub(super) fn content(&mut self, completion_tokens: Option<u64>) {
        match completion_tokens {
            Some(t) if t >= self.high && !self.broken => {
                self.counts.push(u32::try_from(t - self.at_content).unwrap_or(u32::MAX));
                (self.at_content, self.high) = (t, t);
            }
            _ => self.broken = true,
        }
    }

    /// An event of another choice than the first: usage so far per choice cannot count the
    /// chunks of one stream.
    pub(super) fn several_choices(&mut self) {
        self.broken = true;
    }

    /// An event without content (role, reasoning, tool call, finish, usage): its usage, if any,
    /// must not go down.
    pub(super) fn other(&mut self, completion_tokens: Option<u64>) {
        if let Some(t) = completion_tokens {
            self.broken |= t < self.high;
            self.high = self.high.max(t);
        }
    }

    /// The counts, when every content chunk had one and they add up to the response's usage
    /// (a finish chunk may carry the last tokens' count without text: it joins the last
    /// chunk's); empty otherwise.
    pub(super) fn finish(mut self, completion_tokens: Option<u64>) -> Vec<u32> {
        let counted: u64 = self.counts.iter().map(|c| u64::from(*c)).sum();
        match completion_tokens {
            Some(total) if !self.broken && !self.counts.is_empty() && total >= counted => {
                if let Some(last) = self.counts.last_mut() {
                    *last = last.saturating_add(u32::try_from(total - counted).unwrap_or(u32::MAX));
                }
                self.counts
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_usage_differences_and_vanish_when_one_is_missing() {
        // The role chunk (0), chunks of 1, 4 and 3 tokens, the usage chunk (8).
        let mut c = ChunkCounts::default();
        c.other(Some(0));
        for so_far in [1, 5, 8] {
            c.content(Some(so_far));
        }
        c.other(Some(8));
        assert_eq!(c.finish(Some(8)), [1, 4, 3]);
        // Tokens the finish chunk counted without text join the last chunk.
        // A reasoning model's chunks without content: the 3 reasoning tokens before the first
        // content chunk join it, the 2 between two content chunks join the second.
        let mut c = ChunkCounts::default();
        c.other(Some(0));
        c.other(Some(3));
        c.content(Some(4));
        c.other(Some(6));
        c.content(Some(7));
        assert_eq!(c.finish(Some(7)), [4, 3]);
        let mut c = ChunkCounts::default();
        c.content(Some(1));
        c.content(Some(3));
        c.other(Some(4));
        assert_eq!(c.finish(Some(4)), [1, 3]);
        // A chunk without usage, a usage that goes down, a total below the counts: none.
        let mut missing = ChunkCounts::default();
        missing.content(Some(1));
        missing.content(None);
        assert!(missing.finish(Some(2)).is_empty());
        let mut down = ChunkCounts::default();
        down.content(Some(3));
        down.other(Some(2));
        assert!(down.finish(Some(3)).is_empty());
        let mut short = ChunkCounts::default();
        short.content(Some(3));
        assert!(short.finish(Some(2)).is_empty() && ChunkCounts::default().finish(None).is_empty());
        // A count past u32 saturates rather than wrapping.
        let mut huge = ChunkCounts::default();
        huge.content(Some(u64::from(u32::MAX) + 5));
        assert_eq!(huge.finish(Some(u64::from(u32::MAX) + 5)), [u32::MAX]);
    }
}
