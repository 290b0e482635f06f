//! Latency that speculation does not distort (docs/METRICS.md §2.11): a speculative step sends
//! several tokens in one chunk, so the per-chunk ITL rises with k while each token comes sooner
//! (vLLM #48892: MTP 8 against MTP 1, median TPOT −26 %, median ITL +612 %). Beside it: the
//! per-token ITL (each chunk's gap spread over its tokens), the tokens per chunk, and AIPerf
//! 0.14's E2E normalized interactivity (1 ÷ a quantile of request latency ÷ output length).

use serde::{Deserialize, Serialize};

use crate::run::latency_stats::LatencyStats;
use crate::sample::Sample;

/// What the figures need of one successful request (`RequestRecord::chunked`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ChunkedRequest<'a> {
    /// `None`: not streamed.
    pub ttft_ms: Option<f64>,
    /// AIPerf's request latency, which ends at the last content chunk.
    pub latency_ms: Option<f64>,
    pub itl_ms: &'a [f64],
    pub chunk_tokens: &'a [u32],
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The quantiles AIPerf 0.14 reports its E2E normalized interactivity at.
pub const INTERACTIVITY_PERCENTILES: [f64; 2] = [75.0, 90.0];

/// AIPerf's unit of the E2E normalized interactivity.
pub const INTERACTIVITY_UNIT: &str = "tokens/sec/user";

/// A request whose chunk counts claim more tokens than this is not counted per token (a
/// hostile count would cost a push per token).
const MAX_COUNTED_TOKENS: u64 = 1 << 20;

/// The three figures' samples, folded one successful request at a time.
#[derive(Debug, Clone, Default)]
pub struct ChunkTally {
    /// Each chunk's gap ÷ its tokens, once per token.
    pub itl_per_token_ms: Sample,
    /// Tokens in each content chunk after the first (the chunks the ITL gaps end at).
    pub tokens_per_chunk: Sample,
    /// Request latency (s) ÷ output tokens, the quantity AIPerf inverts.
    pub e2e_s_per_token: Sample,
    /// Streamed requests that carried no (or inconsistent) per-chunk counts.
    pub uncounted: u64,
}

/// The figures of a window, in `result.json` (docs/FORMATS.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkFigures {
    /// Per-token inter-token latency (ms): each chunk's gap ÷ its tokens, weighted by tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_per_token: Option<LatencyStats>,
    /// Tokens per content chunk after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_chunk: Option<LatencyStats>,
    /// AIPerf 0.14's `e2e_normalized_interactivity_p75` and `_p90` (tokens/s/user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_normalized_interactivity_p75: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_normalized_interactivity_p90: Option<f64>,
    /// Streamed requests without per-chunk counts (the per-token figures leave them out).
    #[serde(default)]
    pub uncounted_requests: u64,
}

impl ChunkTally {
    /// Fold in one successful, non-warm-up request.
    pub fn push(&mut self, r: &ChunkedRequest<'_>) {
        if let Some(v) = e2e_s_per_token(r) {
            self.e2e_s_per_token.push(v);
        }
        if r.ttft_ms.is_none() {
            return; // not streamed
        }
        match counted_chunks(r) {
            Some(counts) => {
                // A chunk with text but no new token (a detokenizer releasing held-back text)
                // hands its gap on to the next chunk that carries tokens.
                let mut waited_ms = 0.0;
                for (gap, tokens) in r.itl_ms.iter().zip(&counts[1..]) {
                    self.tokens_per_chunk.push(f64::from(*tokens));
                    waited_ms += gap;
                    if *tokens > 0 {
                        let per_token = waited_ms / f64::from(*tokens);
                        (0..*tokens).for_each(|_| self.itl_per_token_ms.push(per_token));
                        waited_ms = 0.0;
                    }
                }
            }
            None => self.uncounted += 1,
        }
    }

    /// The window's figures (`percentiles` as the latency families'), AIPerf's quantiles
    /// inverted: the slow tail's interactivity, never the percentile of each request's rate.
    pub fn figures(&self, percentiles: &[f64]) -> ChunkFigures {
        let quantiles = self.e2e_s_per_token.percentiles(&INTERACTIVITY_PERCENTILES);
        let inverted = |i: usize| {
            quantiles
                .get(i)
                .filter(|q| **q > 0.0)
                .map(|q| 1.0 / q)
                .filter(|v| v.is_finite())
        };
        let has_values = !self.e2e_s_per_token.is_empty();
        ChunkFigures {
            itl_per_token: LatencyStats::from_sample(&self.itl_per_token_ms, percentiles),
            tokens_per_chunk: LatencyStats::from_sample(&self.tokens_per_chunk, percentiles),
            e2e_normalized_interactivity_p75: inverted(0).filter(|_| has_values),
            e2e_normalized_interactivity_p90: inverted(1).filter(|_| has_values),
            uncounted_requests: self.uncounted,
        }
    }
}

/// The key families of the per-token ITL (ms) and the tokens per chunk in `result.json`, in
/// `vllm bench serve`'s shape (`mean_…`, `median_…`, `std_…`, `p99_…`).
const FAMILIES: [(&str, &str); 2] = [("itl_per_token", "_ms"), ("tokens_per_chunk", "")];

/// The interactivity's keys in `result.json` (AIPerf's tags).
pub const INTERACTIVITY_KEYS: [&str; 2] = ["e2e_normalized_interactivity_p75", "e2e_normalized_interactivity_p90"];

/// The key of the count of streamed requests without per-chunk counts.
const UNCOUNTED_KEY: &str = "chunk_uncounted_requests";

type Extra = std::collections::BTreeMap<String, serde_json::Value>;

/// Said when a streamed run has no per-chunk counts.
pub const UNCOUNTED_SENTENCE: &str = "ITL per token and tokens per chunk: not measured, the server's chunks carried no usage so far (vLLM and SGLang send it with --continuous-usage-stats, on by default for them)";

impl ChunkFigures {
    /// No figure and no uncounted request (a live run's, or a file's from before them).
    pub fn is_empty(&self) -> bool {
        *self == ChunkFigures::default()
    }

    /// The console's section after `vllm bench serve`'s summary: the per-token ITL and the
    /// tokens per chunk (or why they are missing) and the E2E normalized interactivity.
    pub fn console(&self) -> String {
        use crate::run::console_rows::{header, row_f};
        let mut out = String::new();
        let interactivity = [
            ("p75", self.e2e_normalized_interactivity_p75),
            ("p90", self.e2e_normalized_interactivity_p90),
        ];
        if self.itl_per_token.is_none() && interactivity.iter().all(|(_, v)| v.is_none()) {
            return out;
        }
        header(&mut out, "Latency per Token (speculation-aware)", '-');
        match (&self.itl_per_token, &self.tokens_per_chunk) {
            (Some(itl), Some(chunk)) => {
                row_f(&mut out, "Mean ITL per token (ms):", itl.mean);
                row_f(&mut out, "Median ITL per token (ms):", itl.median);
                for (p, v) in &itl.percentiles {
                    row_f(&mut out, &format!("P{p} ITL per token (ms):"), *v);
                }
                row_f(&mut out, "Mean tokens per chunk:", chunk.mean);
                row_f(&mut out, "Median tokens per chunk:", chunk.median);
            }
            _ if self.uncounted_requests > 0 => out.push_str(&format!("{UNCOUNTED_SENTENCE}.\n")),
            _ => {}
        }
        for (q, v) in interactivity {
            if let Some(v) = v {
                row_f(&mut out, &format!("E2E norm. interactivity {q} (tok/s/user):"), v);
            }
        }
        out
    }

    /// The run page's line beneath its latency table: tokens per chunk (or why not counted)
    /// and the interactivity; `None` when the run has neither.
    pub fn page_line(&self) -> Option<String> {
        let mut parts = Vec::new();
        match &self.tokens_per_chunk {
            Some(c) => parts.push(format!("Tokens per chunk: mean {:.2}, median {:.2}", c.mean, c.median)),
            None if self.uncounted_requests > 0 => parts.push(UNCOUNTED_SENTENCE.to_string()),
            None => {}
        }
        if let (Some(p75), Some(p90)) = (
            self.e2e_normalized_interactivity_p75,
            self.e2e_normalized_interactivity_p90,
        ) {
            parts.push(format!(
                "E2E normalized interactivity: p75 {p75:.2}, p90 {p90:.2} {INTERACTIVITY_UNIT}"
            ));
        }
        (!parts.is_empty()).then(|| parts.join(" · "))
    }

    /// Write the figures into a result's keys (nothing for a figure that is absent).
    pub fn write_into(&self, extra: &mut Extra) {
        for ((family, unit), stats) in FAMILIES.iter().zip([&self.itl_per_token, &self.tokens_per_chunk]) {
            if let Some(s) = stats {
                s.write_keys(&format!("{family}{unit}"), extra);
            }
        }
        for (key, v) in INTERACTIVITY_KEYS.iter().zip([
            self.e2e_normalized_interactivity_p75,
            self.e2e_normalized_interactivity_p90,
        ]) {
            if let Some(v) = v {
                extra.insert((*key).into(), v.into());
            }
        }
        if self.itl_per_token.is_some() || self.tokens_per_chunk.is_some() || self.uncounted_requests > 0 {
            extra.insert(UNCOUNTED_KEY.into(), self.uncounted_requests.into());
        }
    }

    /// The figures a result's keys hold (a file written before them holds none).
    pub fn read_from(extra: &Extra) -> ChunkFigures {
        let number = |key: &str| extra.get(key).and_then(serde_json::Value::as_f64);
        let stats = |(family, unit): (&str, &str)| LatencyStats::read_keys(&format!("{family}{unit}"), extra);
        ChunkFigures {
            itl_per_token: stats(FAMILIES[0]),
            tokens_per_chunk: stats(FAMILIES[1]),
            e2e_normalized_interactivity_p75: number(INTERACTIVITY_KEYS[0]),
            e2e_normalized_interactivity_p90: number(INTERACTIVITY_KEYS[1]),
            uncounted_requests: extra
                .get(UNCOUNTED_KEY)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0),
        }
    }
}

/// A request's latency (s) per output token, as AIPerf 0.14 takes it: AIPerf's request latency
/// ÷ output length, of a request with a positive latency, output, input and (streamed) TTFT.
pub fn e2e_s_per_token(r: &ChunkedRequest<'_>) -> Option<f64> {
    let latency_ms = r.latency_ms.filter(|l| *l > 0.0)?;
    if r.output_tokens == 0 || r.input_tokens == 0 || r.ttft_ms.is_some_and(|t| t <= 0.0) {
        return None;
    }
    Some(latency_ms / 1e3 / r.output_tokens as f64).filter(|v| v.is_finite() && *v > 0.0)
}

/// The record's tokens per content chunk when they fit its gaps (one more count than gaps) and
/// its output, and stay under [`MAX_COUNTED_TOKENS`].
fn counted_chunks<'a>(r: &ChunkedRequest<'a>) -> Option<&'a [u32]> {
    let counts = r.chunk_tokens;
    let total: u64 = counts.iter().map(|c| u64::from(*c)).sum();
    (counts.len() == r.itl_ms.len() + 1 && total <= MAX_COUNTED_TOKENS && total == r.output_tokens).then_some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A streamed request's figures (its gaps and counts leaked: a test's few bytes).
    fn record(ttft_ms: f64, itl_ms: Vec<f64>, chunk_tokens: Vec<u32>, output_tokens: u64) -> ChunkedRequest<'static> {
        let itl_ms: &'static [f64] = itl_ms.leak();
        ChunkedRequest {
            ttft_ms: Some(ttft_ms),
            latency_ms: Some(ttft_ms + itl_ms.iter().sum::<f64>()),
            itl_ms,
            chunk_tokens: chunk_tokens.leak(),
            input_tokens: 16,
            output_tokens,
        }
    }

    #[test]
    fn a_chunks_gap_is_spread_over_its_tokens() {
        let mut t = ChunkTally::default();
        // A first chunk of 1 token, then 40 ms for 4 tokens and 10 ms for 1.
        t.push(&record(20.0, vec![40.0, 10.0], vec![1, 4, 1], 6));
        let f = t.figures(&[99.0]);
        // The result's keys hold the same.
        let mut extra = Extra::new();
        f.write_into(&mut extra);
        assert_eq!(ChunkFigures::read_from(&extra), f);
        assert!(extra.contains_key("p99_itl_per_token_ms") && extra.contains_key("p99_tokens_per_chunk"));
        assert!(f
            .page_line()
            .unwrap()
            .starts_with("Tokens per chunk: mean 2.50, median 2.50 · E2E normalized interactivity: p75 "));
        let console = f.console();
        assert!(
            console.contains(&format!("{:<40} 10.00", "Median ITL per token (ms):"))
                && console.contains(&format!("{:<40} 2.50", "Mean tokens per chunk:"))
                && console.contains("E2E norm. interactivity p90 (tok/s/user):"),
            "{console}"
        );
        let per_token = f.itl_per_token.unwrap();
        // Five tokens: four at 10 ms and one at 10 ms.
        assert_eq!((per_token.mean, per_token.median), (10.0, 10.0));
        let chunks = f.tokens_per_chunk.unwrap();
        assert_eq!((chunks.mean, chunks.median), (2.5, 2.5));
        assert_eq!(f.uncounted_requests, 0);
        // A chunk of no token hands its gap on: 10 + 10 ms for the next chunk's 2 tokens.
        let mut held = ChunkTally::default();
        held.push(&record(20.0, vec![10.0, 10.0], vec![1, 0, 2], 3));
        let held = held.figures(&[]).itl_per_token.unwrap();
        assert_eq!((held.mean, held.median), (10.0, 10.0));
        // Counts that do not fit the gaps or the output are not used.
        for bad in [
            record(20.0, vec![40.0], vec![1, 4, 1], 6),
            record(20.0, vec![40.0, 10.0], vec![1, 4, 1], 7),
            record(20.0, vec![40.0, 10.0], vec![], 6),
            record(20.0, vec![40.0, 10.0], vec![1, u32::MAX, 1], u64::from(u32::MAX) + 2),
        ] {
            let mut t = ChunkTally::default();
            t.push(&bad);
            let f = t.figures(&[]);
            assert_eq!((f.itl_per_token, f.uncounted_requests), (None, 1), "{bad:?}");
        }
    }

    #[test]
    fn interactivity_is_one_over_the_quantile_of_latency_per_token() {
        // AIPerf 0.14's own example: latencies 1, 2, 3, 4, 10 s over 100 tokens each; numpy's
        // linear p90 of the ratios is 0.076 and p75 0.04.
        let mut t = ChunkTally::default();
        for latency_s in [1.0, 2.0, 3.0, 4.0, 10.0] {
            let ms = latency_s * 1e3;
            t.push(&record(500.0, vec![ms - 500.0], vec![], 100));
        }
        let f = t.figures(&[]);
        assert!(
            (f.e2e_normalized_interactivity_p90.unwrap() - 1.0 / 0.076).abs() < 1e-9,
            "{f:?}"
        );
        assert!(
            (f.e2e_normalized_interactivity_p75.unwrap() - 1.0 / 0.04).abs() < 1e-9,
            "{f:?}"
        );
        // The slow tail: below the p90 of each request's own rate (100 tokens/s at 1 s).
        assert!(f.e2e_normalized_interactivity_p90.unwrap() < 100.0);
        // No output, no input or a zero TTFT leaves a request out; none left, no figure.
        let mut none = ChunkTally::default();
        none.push(&record(500.0, vec![500.0], vec![], 0));
        none.push(&ChunkedRequest {
            input_tokens: 0,
            ..record(500.0, vec![500.0], vec![], 10)
        });
        none.push(&record(0.0, vec![500.0], vec![], 10));
        let f = none.figures(&[]);
        assert_eq!(
            (f.e2e_normalized_interactivity_p75, f.e2e_normalized_interactivity_p90),
            (None, None)
        );
    }
}
