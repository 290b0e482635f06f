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
    /// A Mooncake-format trace, replayed in its timestamps' order (`bench::trace`), and the
    /// prompts file its hash blocks take their text from (`--trace-fill`; else filler words).
    Mooncake(PathBuf, Option<PathBuf>),
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

/// SPEED-Bench's throughput splits, each 1,536 prompts of about one input length (all three
/// entropy tiers): the length in tokens (1K = 1,024) and the split's name, as
/// `vllm bench serve --speed-bench-dataset-subset` and AIPerf's `speed_bench_throughput_*`
/// name them. A sweep over `--input-tokens` reads these as its context levels.
pub const SPEED_BENCH_THROUGHPUT_SPLITS: [(u32, &str); 5] = [
    (1024, "throughput_1k"),
    (2048, "throughput_2k"),
    (8192, "throughput_8k"),
    (16384, "throughput_16k"),
    (32768, "throughput_32k"),
];

/// The name of SPEED-Bench's throughput split of `input_tokens`, if it has one.
pub fn speed_bench_split_name(input_tokens: u32) -> Option<&'static str> {
    SPEED_BENCH_THROUGHPUT_SPLITS
        .iter()
        .find(|(l, _)| *l == input_tokens)
        .map(|(_, name)| *name)
}

impl Dataset {
    /// This dataset's prompts at an input length of `input_tokens`, for a sweep's context axis:
    /// synthetic prompts take any length; SPEED-Bench's folder gives the throughput split of
    /// that length (its file beside the split named); no other dataset has lengths to choose.
    pub fn at_input_length(&self, input_tokens: u32) -> Result<Dataset, CollectorError> {
        let refuse = |why: String| Err(CollectorError::InvalidArgument(why));
        match self {
            Dataset::Synthetic => Ok(Dataset::Synthetic),
            Dataset::SpeedBench(split) => {
                let Some(name) = speed_bench_split_name(input_tokens) else {
                    let lengths: Vec<String> = SPEED_BENCH_THROUGHPUT_SPLITS
                        .iter()
                        .map(|(l, name)| format!("{l} ({name})"))
                        .collect();
                    return refuse(format!(
                        "--input-tokens {input_tokens} is no SPEED-Bench throughput split: its lengths are {}",
                        lengths.join(", ")
                    ));
                };
                let file = split.with_file_name(format!("{name}.jsonl"));
                if file.is_file() {
                    Ok(Dataset::SpeedBench(file))
                } else {
                    refuse(format!(
                        "--input-tokens {input_tokens} reads SPEED-Bench's {name} split: {} is not there (its preparation script writes every split into one folder)",
                        file.display()
                    ))
                }
            }
            _ => refuse(
                "several --input-tokens sweep synthetic prompts or SPEED-Bench's throughput splits (--dataset speed-bench): this dataset's prompts have their own lengths"
                    .to_string(),
            ),
        }
    }

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
            Dataset::Mooncake(..) => "mooncake",
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
            | Dataset::Mooncake(p, _)
            | Dataset::Hf(p, _) => Some(p),
        }
    }

    /// The prompts file a trace's hash blocks are filled from, when one is.
    pub fn trace_fill(&self) -> Option<&Path> {
        match self {
            Dataset::Mooncake(_, fill) => fill.as_deref(),
            _ => None,
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
