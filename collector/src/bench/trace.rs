//! Trace replay: a Mooncake-format trace (one JSON object per line: `timestamp` in ms,
//! `input_length`, `output_length`, `hash_ids`, as AIPerf's `mooncake_trace` and GuideLLM's
//! `mooncake` read it) as prompts whose 512-token blocks are the same text wherever the trace
//! repeats a hash id (so a server's prefix cache sees the trace's sharing), and the fixed
//! schedule that sends each request at its recorded offset from the first (AIPerf's
//! `--fixed-schedule` with its auto offset), sped up by `--trace-speedup`.

use std::collections::HashMap;
use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;

use super::datafile;
use super::tokens::{TokenCounter, WORDS};
use crate::error::CollectorError;

/// Tokens one hash id stands for (Mooncake's KV block, AIPerf's and GuideLLM's default).
pub const BLOCK_TOKENS: u64 = 512;

/// One line of the trace as written.
#[derive(Deserialize)]
struct Line {
    timestamp: Option<f64>,
    input_length: Option<u64>,
    output_length: Option<u32>,
    #[serde(default)]
    hash_ids: Option<Vec<u64>>,
    text_input: Option<String>,
}

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// The line it came from (1-based), for messages.
    pub line: usize,
    /// When it was sent, in milliseconds on the trace's clock.
    pub timestamp_ms: f64,
    /// Its prompt's tokens (`input_length`), or its literal prompt (`text_input`).
    pub input: TraceInput,
    /// Its answer's tokens, the request's max_tokens (`None`: the run's --output-tokens).
    pub output_length: Option<u32>,
}

/// What a trace line gives as its prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceInput {
    /// `input_length` tokens, its leading blocks named by `hash_ids`.
    Blocks { input_length: u64, hash_ids: Vec<u64> },
    /// `text_input`, sent as written.
    Text(String),
}

/// Bytes a prompt built from a trace takes per token (a space and a short word).
const BYTES_PER_TOKEN: u64 = 6;

/// The longest replay a trace may ask for, after `--trace-speedup`: a day.
pub const MAX_REPLAY_S: f64 = 86_400.0;

/// The replay's `offsets` (seconds, from [`offsets_s`]) within [`MAX_REPLAY_S`], or why not.
pub fn check_replay(offsets: &[f64], speedup: f64) -> Result<(), CollectorError> {
    // 1e-308 as written, not as 308 decimals.
    let shown = if (1e-3..1e6).contains(&speedup) {
        speedup.to_string()
    } else {
        format!("{speedup:e}")
    };
    match offsets.last() {
        Some(&last) if last > MAX_REPLAY_S => Err(CollectorError::InvalidArgument(format!(
            "the trace's requests span {:.1} h at --trace-speedup {shown}: more than {} h of replay (raise --trace-speedup, or cut the trace)",
            last / 3600.0,
            MAX_REPLAY_S / 3600.0
        ))),
        _ => Ok(()),
    }
}

fn bad(path: &Path, line: usize, why: impl std::fmt::Display) -> CollectorError {
    CollectorError::InvalidArgument(format!("{}:{line}: {why}", path.display()))
}

/// The trace's requests in the order of their timestamps (lines with the same timestamp keep
/// the file's order). Every line needs a timestamp and exactly one of `input_length` and
/// `text_input`; `hash_ids` go with `input_length`, and may not ask for more tokens than it.
pub fn read(path: &Path, max_bytes: u64) -> Result<Vec<TraceRequest>, CollectorError> {
    let mut out = Vec::new();
    let mut implied_bytes: u64 = 0;
    datafile::for_each_line(path, max_bytes, |i, text| {
        if text.trim().is_empty() {
            return Ok(());
        }
        let l: Line =
            serde_json::from_str(text).map_err(|e| bad(path, i, format!("not a Mooncake trace line: {e}")))?;
        let timestamp_ms = match l.timestamp {
            None => {
                return Err(bad(
                    path,
                    i,
                    "no timestamp (milliseconds, ≥ 0): a replay sends each request at its own",
                ))
            }
            Some(t) if !(t.is_finite() && t >= 0.0) => {
                return Err(bad(path, i, format!("timestamp {t} is no time: milliseconds ≥ 0")))
            }
            Some(t) => t,
        };
        let input = match (l.input_length, l.text_input, l.hash_ids) {
            (Some(_), Some(_), _) => return Err(bad(path, i, "both input_length and text_input: give one")),
            (None, Some(_), Some(_)) => return Err(bad(path, i, "hash_ids go with input_length, not text_input")),
            (None, Some(text), None) => TraceInput::Text(text),
            (Some(0), None, _) => return Err(bad(path, i, "input_length 0")),
            (Some(n), None, ids) => {
                let ids = ids.unwrap_or_default();
                let m = ids.len() as u64;
                if m > 0 && n <= (m - 1) * BLOCK_TOKENS {
                    return Err(bad(
                        path,
                        i,
                        format!(
                            "{m} hash_ids need more than {} tokens, input_length is {n}",
                            (m - 1) * BLOCK_TOKENS
                        ),
                    ));
                }
                // The prompts this trace asks for are built from it: their size is checked
                // against the dataset's limit before any is.
                implied_bytes = implied_bytes.saturating_add(n.saturating_mul(BYTES_PER_TOKEN));
                if implied_bytes > max_bytes {
                    return Err(bad(
                        path,
                        i,
                        format!(
                            "the prompts up to here ask for about {} MiB of text (input_length × {BYTES_PER_TOKEN} bytes a token), past the limit of {} MiB (--max-dataset-mib)",
                            implied_bytes >> 20,
                            max_bytes >> 20
                        ),
                    ));
                }
                TraceInput::Blocks {
                    input_length: n,
                    hash_ids: ids,
                }
            }
            (None, None, _) => return Err(bad(path, i, "neither input_length nor text_input")),
        };
        out.push(TraceRequest {
            line: i,
            timestamp_ms,
            input,
            output_length: l.output_length.filter(|n| *n > 0),
        });
        Ok(())
    })?;
    if out.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{}: the trace holds no request",
            path.display()
        )));
    }
    out.sort_by(|a, b| a.timestamp_ms.total_cmp(&b.timestamp_ms));
    Ok(out)
}

/// Words of one token each (` the`, ` of` …), drawn from `rng`.
fn words(rng: &mut SmallRng, n: u64, text: &mut String) {
    for _ in 0..n {
        text.push(' ');
        text.push_str(WORDS[rng.random_range(0..WORDS.len())]);
    }
}

/// One request's prompt built from a trace line.
#[derive(Debug, Clone, PartialEq)]
pub struct TracePrompt {
    pub text: String,
    /// Its `output_length` (else the run's --output-tokens).
    pub max_tokens: u32,
    /// Its `input_length` (0 for a `text_input`, counted when sent).
    pub input_tokens: u64,
}

/// Text a trace's hash blocks are filled from (`--trace-fill`): a prompts file's words, one
/// space apart, walked from a place each hash id picks.
pub struct Fill {
    /// The file's prompts' words, joined by single spaces.
    text: String,
    /// Where each word starts in `text`.
    starts: Vec<u32>,
    tokens: TokenCounter,
}

/// One line of a fill file (as `--dataset jsonl` reads it).
#[derive(Deserialize)]
struct FillLine {
    prompt: String,
}

impl Fill {
    /// The prompts of a JSON-lines file (`{"prompt": …}` a line), within `max_bytes`.
    pub fn read(path: &Path, max_bytes: u64, tokens: TokenCounter) -> Result<Fill, CollectorError> {
        let mut fill = Fill {
            text: String::new(),
            starts: Vec::new(),
            tokens,
        };
        datafile::for_each_line(path, max_bytes, |i, line| {
            if line.trim().is_empty() {
                return Ok(());
            }
            let l: FillLine = serde_json::from_str(line)
                .map_err(|e| bad(path, i, format!("not a prompts line ({{\"prompt\": …}}): {e}")))?;
            for word in l.prompt.split_whitespace() {
                if !fill.text.is_empty() {
                    fill.text.push(' ');
                }
                // The file is within --max-dataset-mib, far below 4 GiB.
                fill.starts
                    .push(u32::try_from(fill.text.len()).map_err(|_| bad(path, i, "past 4 GiB of text"))?);
                fill.text.push_str(word);
            }
            Ok(())
        })?;
        if fill.starts.is_empty() {
            return Err(CollectorError::InvalidArgument(format!(
                "{}: the fill file holds no text (--trace-fill takes JSON lines with a \"prompt\")",
                path.display()
            )));
        }
        Ok(fill)
    }

    fn word(&self, i: usize) -> &str {
        let start = self.starts[i] as usize;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.text.len(), |next| *next as usize - 1);
        &self.text[start..end]
    }

    /// Up to `tokens` tokens of the file's words from the word `pick` chooses onwards (wrapping
    /// at the end), each counted with its leading space as a BPE tokenizer splits it; the walk
    /// stops at the first word that would pass `tokens` (so a block may end a few tokens short),
    /// and skips a word longer than any block. The same `pick` gives the same walk, so a shorter
    /// one is a prefix of a longer one. Returns the tokens taken.
    fn take(&self, pick: u64, tokens: u64, out: &mut String) -> u64 {
        let n = self.starts.len();
        let mut at = (pick % n as u64) as usize;
        let (mut got, mut skipped) = (0u64, 0usize);
        let mut spaced = String::new();
        while got < tokens && skipped < n {
            let word = self.word(at);
            spaced.clear();
            spaced.push(' ');
            spaced.push_str(word);
            let t = self.tokens.count(&spaced);
            if t > BLOCK_TOKENS {
                skipped += 1;
            } else if got + t > tokens {
                break;
            } else {
                out.push_str(&spaced);
                got += t;
                skipped = 0;
            }
            at = (at + 1) % n;
        }
        got
    }
}

/// The prompts of a trace's requests: a hash id's block is the same `BLOCK_TOKENS` tokens of
/// text wherever it appears (filler words drawn from the seed and the id, or the fill file's
/// words from a place the seed and the id pick; the last block of a line is its first
/// `input_length − (m − 1)·512` tokens), tokens past the blocks are the line's own; a text is
/// sent as it is. Each prompt's max_tokens is its `output_length` (else `output_tokens`).
pub fn prompts(trace: &[TraceRequest], seed: u64, output_tokens: u32, fill: Option<&Fill>) -> Vec<TracePrompt> {
    // Each hash id's whole block, and its tokens, once.
    let mut blocks: HashMap<u64, (String, u64)> = HashMap::new();
    trace
        .iter()
        .enumerate()
        .map(|(index, r)| {
            let (text, input_tokens) = match &r.input {
                TraceInput::Text(t) => (t.clone(), 0),
                TraceInput::Blocks { input_length, hash_ids } => {
                    let line = BlockLine {
                        seed,
                        index,
                        input_length: *input_length,
                        hash_ids,
                    };
                    match fill {
                        Some(fill) => line.filled(fill, &mut blocks),
                        None => line.filler(&mut blocks),
                    }
                }
            };
            TracePrompt {
                text,
                max_tokens: r.output_length.unwrap_or(output_tokens),
                input_tokens,
            }
        })
        .collect()
}

/// Where a hash id's block starts (the filler's seed, or a place in a fill).
fn block_pick(seed: u64, id: u64) -> u64 {
    seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// One trace line whose prompt is built from its hash blocks and its own tokens.
struct BlockLine<'a> {
    seed: u64,
    /// Its place in the trace: picks its own tokens.
    index: usize,
    input_length: u64,
    hash_ids: &'a [u64],
}

impl BlockLine<'_> {
    /// Where the line's own tokens (past its blocks) come from.
    fn own_pick(&self) -> u64 {
        self.seed ^ (self.index as u64).wrapping_mul(0xd1b5_4a32_d192_ed03) ^ 1
    }

    /// Filler words: a block is [`BLOCK_TOKENS`] one-token words drawn from the seed and its id
    /// (a partial last block its first words); the prompt and its tokens.
    fn filler(&self, blocks: &mut HashMap<u64, (String, u64)>) -> (String, u64) {
        let mut text = String::new();
        let mut left = self.input_length;
        for id in self.hash_ids {
            let size = left.min(BLOCK_TOKENS);
            let (block, full) = blocks.entry(*id).or_insert_with(|| {
                let mut rng = SmallRng::seed_from_u64(block_pick(self.seed, *id));
                let mut block = String::with_capacity(BLOCK_TOKENS as usize * 5);
                words(&mut rng, BLOCK_TOKENS, &mut block);
                (block, BLOCK_TOKENS)
            });
            if size < *full {
                // A partial last block: its first `size` words.
                let cut = block
                    .match_indices(' ')
                    .nth(size as usize)
                    .map_or(block.len(), |(at, _)| at);
                text.push_str(&block[..cut]);
            } else {
                text.push_str(block);
            }
            left -= size;
        }
        words(&mut SmallRng::seed_from_u64(self.own_pick()), left, &mut text);
        (text.trim_start().to_string(), self.input_length)
    }

    /// The fill's words: a block walks the fill from where its id picks (a partial last block
    /// the start of the same walk); the prompt and the tokens taken (a block may end a few
    /// tokens short of its size, see [`Fill::take`]).
    fn filled(&self, fill: &Fill, blocks: &mut HashMap<u64, (String, u64)>) -> (String, u64) {
        let (mut text, mut taken, mut left) = (String::new(), 0u64, self.input_length);
        for id in self.hash_ids {
            let size = left.min(BLOCK_TOKENS);
            if size == BLOCK_TOKENS {
                let (block, tokens) = blocks.entry(*id).or_insert_with(|| {
                    let mut block = String::new();
                    let tokens = fill.take(block_pick(self.seed, *id), BLOCK_TOKENS, &mut block);
                    (block, tokens)
                });
                text.push_str(block);
                taken += *tokens;
            } else {
                taken += fill.take(block_pick(self.seed, *id), size, &mut text);
            }
            left -= size;
        }
        taken += fill.take(self.own_pick(), left, &mut text);
        (text.trim_start().to_string(), taken)
    }
}

/// The fixed schedule of requests `skip..skip + count`: each one's offset in seconds from the
/// first of them (the trace's clock, auto offset), divided by `speedup`.
pub fn offsets_s(trace: &[TraceRequest], skip: usize, count: usize, speedup: f64) -> Vec<f64> {
    let window = &trace[skip.min(trace.len())..(skip + count).min(trace.len())];
    let zero = window.first().map_or(0.0, |r| r.timestamp_ms);
    window
        .iter()
        .map(|r| (r.timestamp_ms - zero) / 1000.0 / speedup)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(text: &str) -> Result<Vec<TraceRequest>, CollectorError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        std::fs::write(&path, text).unwrap();
        read(&path, 1 << 20)
    }

    #[test]
    fn shared_hash_ids_give_shared_prefixes_of_the_asked_lengths() {
        let t = trace(
            "{\"timestamp\": 1000, \"input_length\": 700, \"output_length\": 20, \"hash_ids\": [1, 2]}\n\
             {\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 30, \"hash_ids\": [1, 3]}\n\
             {\"timestamp\": 2500.5, \"text_input\": \"hello there\"}\n",
        )
        .unwrap();
        // Sorted by timestamp.
        assert_eq!(t.iter().map(|r| r.line).collect::<Vec<_>>(), [2, 1, 3]);
        let p = prompts(&t, 7, 64, None);
        let counter = crate::bench::tokens::TokenCounter::new();
        assert_eq!(counter.count(&p[0].text), 1100);
        assert_eq!(counter.count(&p[1].text), 700);
        assert_eq!((p[0].max_tokens, p[1].max_tokens, p[2].max_tokens), (30, 20, 64));
        // Block 1 is the first 512 tokens of both; block 2 (700 − 512 = 188 tokens) and block 3 differ.
        let first_block = |s: &str| s.split(' ').take(512).collect::<Vec<_>>().join(" ");
        assert_eq!(first_block(&p[0].text), first_block(&p[1].text));
        // Past it, block 3 (line 2's) and block 2 (line 1's, 188 tokens) differ.
        let second = |s: &str| s.split(' ').skip(512).take(188).collect::<Vec<_>>().join(" ");
        assert_ne!(second(&p[0].text), second(&p[1].text));
        assert_eq!(p[2].text, "hello there");
        assert_eq!(offsets_s(&t, 0, 3, 2.0), vec![0.0, 0.5, 1.25025]);
        assert_eq!(offsets_s(&t, 1, 2, 1.0), vec![0.0, 1.5005]);
    }

    /// #63 item 12: a replay longer than a day after `--trace-speedup` is refused, saying how
    /// long (a second line 31 years on; a speedup so small the offsets overflow to infinity).
    #[test]
    fn a_replay_longer_than_a_day_is_refused() {
        assert!(check_replay(&[0.0, 86_400.0], 1.0).is_ok());
        assert!(check_replay(&[], 1.0).is_ok());
        let years = check_replay(&[0.0, 978_307_200.0], 1.0).unwrap_err().to_string();
        assert!(
            years.contains("span 271752.0 h at --trace-speedup 1: more than 24 h of replay"),
            "{years}"
        );
        let tiny = check_replay(&[0.0, f64::INFINITY], 1e-308).unwrap_err().to_string();
        assert!(
            tiny.contains("span inf h at --trace-speedup 1e-308: more than 24 h"),
            "{tiny}"
        );
    }

    #[test]
    fn malformed_lines_are_named() {
        for (line, says) in [
            ("{\"input_length\": 10}", "no timestamp"),
            ("{\"timestamp\": -5, \"input_length\": 10}", "timestamp -5 is no time"),
            (
                "{\"timestamp\": 1, \"input_length\": 1000000000}",
                "past the limit of 1 MiB",
            ),
            (
                "{\"timestamp\": 1, \"input_length\": 10, \"text_input\": \"x\"}",
                "both",
            ),
            (
                "{\"timestamp\": 1, \"input_length\": 512, \"hash_ids\": [1, 2]}",
                "2 hash_ids need more than 512",
            ),
            ("{\"timestamp\": 1}", "neither"),
            ("not json", "not a Mooncake trace line"),
        ] {
            let e = trace(&format!("{{\"timestamp\": 0, \"input_length\": 4}}\n{line}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(":2: ") && e.contains(says), "{line}: {e}");
        }
    }
}
