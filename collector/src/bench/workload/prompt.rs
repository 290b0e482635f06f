//! What a workload is: the dataset it reads, its columns, the workload settings and the prompts
//! it gives (text, token count, category, expected output).

use std::path::{Path, PathBuf};

use crate::error::CollectorError;

/// A dataset: generated, or a file of one of the known layouts.
#[derive(Debug, Clone, PartialEq)]
pub enum Dataset {
    Synthetic,
    SpecBench(PathBuf),
    /// One split of SPEED-Bench (`qualitative.jsonl`, `throughput_8k.jsonl`…): each line's
    /// `messages[0].content` and `category`, as `vllm bench serve --dataset-name speed_bench`
    /// reads them.
    SpeedBench(PathBuf),
    /// ShareGPT's JSON (`[{"conversations": [{"from": "human", "value": …}, …]}, …]`), as
    /// `vllm bench serve --dataset-name sharegpt` and AIPerf read it.
    ShareGpt(PathBuf),
    /// Lines of a poem, as `vllm bench serve --dataset-name sonnet` builds prompts from them.
    Sonnet(PathBuf),
    Jsonl(PathBuf),
    /// A Hugging Face dataset file on disk (parquet, JSON lines or a JSON array of rows) and
    /// which of its columns hold what.
    Hf(PathBuf, Columns),
    /// A Mooncake-format trace, replayed in its timestamps' order (`bench::trace`).
    Mooncake(PathBuf),
}

/// The columns of a [`Dataset::Hf`] file: the prompt's (its first item when it holds a list,
/// as MT-Bench's `turns`), and optionally the output length's and the category's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Columns {
    /// None: the first of [`PROMPT_COLUMNS`] the file has.
    pub prompt: Option<String>,
    pub output_len: Option<String>,
    /// None: `category` when the file has it.
    pub category: Option<String>,
}

/// The prompt columns tried, in order, when none is named (the names Hugging Face datasets of
/// prompts use most).
pub const PROMPT_COLUMNS: [&str; 7] = ["prompt", "question", "instruction", "input", "text", "turns", "content"];

impl Dataset {
    /// The dataset's kind as `result.json` records it (`synthetic`, `specbench`, `jsonl`).
    pub fn name(&self) -> &'static str {
        match self {
            Dataset::Synthetic => "synthetic",
            Dataset::SpecBench(_) => "specbench",
            Dataset::SpeedBench(_) => "speed_bench",
            Dataset::ShareGpt(_) => "sharegpt",
            Dataset::Sonnet(_) => "sonnet",
            Dataset::Jsonl(_) => "jsonl",
            Dataset::Hf(..) => "hf",
            Dataset::Mooncake(_) => "mooncake",
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Dataset::Synthetic => None,
            Dataset::SpecBench(p)
            | Dataset::SpeedBench(p)
            | Dataset::ShareGpt(p)
            | Dataset::Sonnet(p)
            | Dataset::Jsonl(p)
            | Dataset::Mooncake(p)
            | Dataset::Hf(p, _) => Some(p),
        }
    }
}

/// What to send: the dataset, the lengths and the sampling settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub dataset: Dataset,
    /// Only prompts of these categories (all when empty).
    pub categories: Vec<String>,
    /// Synthetic prompt length in tokens (mean).
    pub input_tokens: u32,
    pub input_tokens_stddev: f64,
    /// Output length in tokens (mean); the max_tokens of every request.
    pub output_tokens: u32,
    pub output_tokens_stddev: f64,
    /// vLLM's `--random-range-ratio`: synthetic lengths uniform in [⌊L·(1 − r)⌋, ⌈L·(1 + r)⌉]
    /// instead of normal (0: fixed, or the stddevs).
    pub range_ratio: f64,
    /// Tokens of a prefix every prompt shares (vLLM's `--random-prefix-len`, and the sonnet
    /// dataset's `--sonnet-prefix-len`).
    pub prefix_tokens: u32,
    /// Set ignore_eos on dataset prompts too (synthetic prompts always set it).
    pub ignore_eos: bool,
    pub temperature: f64,
    pub seed: u64,
    /// Send a question's later turns too, each with the conversation so far (MT-Bench's
    /// `turns`: turn 2 carries turn 1's answer).
    pub multi_turn: bool,
    /// The largest dataset file read (`--max-dataset-mib`).
    pub max_dataset_bytes: u64,
}

/// One prompt to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub category: Option<String>,
    pub max_tokens: u32,
    pub ignore_eos: bool,
    /// Input length when known before sending (the server's `usage` replaces it).
    pub input_tokens: u64,
    /// The user's later turns of a conversation (`--multi-turn`), each sent after the answer to
    /// the one before.
    pub later_turns: Vec<String>,
}

pub(super) fn invalid_workload<T>(message: &str) -> Result<T, CollectorError> {
    Err(CollectorError::InvalidArgument(message.into()))
}
