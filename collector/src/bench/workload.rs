//! Workloads: the prompts a run sends (synthetic with vLLM's `random` ranges and shared prefix,
//! Spec-Bench `question.jsonl`, ShareGPT JSON, vLLM's `sonnet` lines, plain JSONL as vLLM's
//! `custom` dataset), and their request bodies, serialised before the run so nothing is built on
//! the timing path.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;

use super::client::EndpointKind;
use super::datafile::{self, Sample};
use super::tokens::{TokenCounter, WORDS};
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

/// A normal draw, rounded and at least 1.
fn draw_length(rng: &mut SmallRng, mean: u32, stddev: f64) -> u32 {
    if stddev <= 0.0 {
        return mean.max(1);
    }
    // Box–Muller.
    let (u1, u2): (f64, f64) = (rng.random::<f64>().max(f64::MIN_POSITIVE), rng.random());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (f64::from(mean) + stddev * z).round().clamp(1.0, f64::from(u32::MAX)) as u32
}

/// vLLM's `random` length draw: uniform over the integers of [⌊mean·(1 − r)⌋, ⌈mean·(1 + r)⌉],
/// at least `low_floor`.
fn draw_in_range(rng: &mut SmallRng, mean: u32, ratio: f64, low_floor: u32) -> u32 {
    let low = ((f64::from(mean) * (1.0 - ratio)).floor() as u32).max(low_floor);
    let high = ((f64::from(mean) * (1.0 + ratio)).ceil() as u32).max(low);
    rng.random_range(low..=high)
}

/// The prefix every synthetic prompt shares: `target` tokens of the same words (each of
/// [`WORDS`] is one cl100k_base token alone and after a space, so the count is the word count).
fn shared_prefix(target: u64) -> (String, u64) {
    if target == 0 {
        return (String::new(), 0);
    }
    let mut text = String::new();
    for w in 0..target {
        if w > 0 {
            text.push(' ');
        }
        text.push_str(WORDS[(w as usize * 5) % WORDS.len()]);
    }
    text.push(' ');
    (text, target)
}

/// A synthetic prompt of `target` tokens: the prompt's number (which makes every prompt start
/// differently so no prefix cache serves it whole) and then words of one token each. Counted,
/// not tokenized: cl100k_base splits a number into groups of up to three digits, each one
/// token, and each ` word` is one more; a number longer than `target` makes the prompt longer.
/// The unit tests hold the count against the tokenizer.
fn synthetic_text(i: usize, target: u64) -> (String, u64) {
    let mut text = i.to_string();
    let number_tokens = text.len().div_ceil(3) as u64;
    let words = target.saturating_sub(number_tokens);
    text.reserve(words as usize * 6);
    for w in 1..=words {
        text.push(' ');
        text.push_str(WORDS[(w as usize * 7 + i * 13) % WORDS.len()]);
    }
    (text, number_tokens + words)
}

/// Synthetic prompts in order, each drawn from one seeded generator: the same sequence however
/// it is consumed (all before the run, or as the run goes).
struct Synthetic<'a> {
    args: &'a Workload,
    rng: SmallRng,
    next: usize,
    /// The shared prefix and its tokens.
    prefix: (String, u64),
}

impl<'a> Synthetic<'a> {
    fn new(args: &'a Workload) -> Synthetic<'a> {
        Synthetic {
            args,
            rng: SmallRng::seed_from_u64(args.seed),
            next: 0,
            prefix: shared_prefix(u64::from(args.prefix_tokens)),
        }
    }
}

impl Iterator for Synthetic<'_> {
    type Item = Prompt;

    fn next(&mut self) -> Option<Prompt> {
        let i = self.next;
        self.next += 1;
        let a = self.args;
        let (len, max_tokens) = if a.range_ratio > 0.0 {
            (
                draw_in_range(&mut self.rng, a.input_tokens, a.range_ratio, 0),
                draw_in_range(&mut self.rng, a.output_tokens, a.range_ratio, 1),
            )
        } else {
            (
                draw_length(&mut self.rng, a.input_tokens, a.input_tokens_stddev),
                draw_length(&mut self.rng, a.output_tokens, a.output_tokens_stddev),
            )
        };
        let (own, own_tokens) = if len == 0 {
            (String::new(), 0)
        } else {
            synthetic_text(i, u64::from(len))
        };
        let (prefix, prefix_tokens) = &self.prefix;
        let (text, input_tokens) = if prefix.is_empty() {
            (own, own_tokens)
        } else {
            // The space between prefix and number is a token of its own (cl100k_base never
            // joins a space to the digits after it).
            (format!("{prefix}{own}"), prefix_tokens + 1 + own_tokens)
        };
        Some(Prompt {
            text,
            category: None,
            max_tokens,
            ignore_eos: true,
            input_tokens,
            later_turns: Vec::new(),
        })
    }
}

#[derive(Deserialize)]
struct SpecBenchLine {
    category: Option<String>,
    turns: Vec<String>,
}

#[derive(Deserialize)]
struct SpeedBenchLine {
    category: Option<String>,
    messages: Vec<SpeedBenchMessage>,
}

#[derive(Deserialize)]
struct SpeedBenchMessage {
    content: String,
}

#[derive(Deserialize)]
struct JsonlLine {
    prompt: String,
    category: Option<String>,
    /// vLLM's custom dataset names it `output_tokens`.
    #[serde(alias = "output_tokens")]
    max_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct ShareGptEntry {
    #[serde(default, deserialize_with = "first_two_turns")]
    conversations: Vec<ShareGptTurn>,
}

/// The first two turns of a conversation, the later ones skipped unread (vLLM uses only these).
fn first_two_turns<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ShareGptTurn>, D::Error> {
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
struct ShareGptTurn {
    value: String,
}

/// vLLM's limits on a ShareGPT pair (`is_valid_sequence` in `vllm/benchmarks/datasets.py`): at
/// least 4 tokens each way, a prompt of at most 1,024 and a pair of at most 2,048.
fn sharegpt_pair_fits(prompt_tokens: u64, output_tokens: u64) -> bool {
    prompt_tokens >= 4 && output_tokens >= 4 && prompt_tokens <= 1024 && prompt_tokens + output_tokens <= 2048
}

/// A ShareGPT file's prompts, as vLLM takes them: the first turn is the prompt and the second's
/// length the output length; entries of fewer than two turns, and pairs outside vLLM's limits,
/// are left out (and counted in the error when nothing is left). At most `cap` are kept, a
/// seeded sample of the file read entry by entry.
fn from_sharegpt(
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

/// vLLM's sonnet prompt's opening line.
const SONNET_BASE: &str = "Pick as many lines as you can from these poem lines:\n";

/// Prompts from a poem's lines as vLLM's `SonnetDataset` builds them: the base line, the file's
/// first lines as a prefix of about `prefix_tokens`, then lines drawn at random (with
/// replacement, seeded) up to about `input_tokens`, a draw kept only when it fits
/// `input_tokens`. vLLM counts the base line inside the model's chat template; speclens counts
/// the base line alone. `count` prompts, or an error when no draw fits.
fn from_sonnet(
    args: &Workload,
    path: &Path,
    count: usize,
    tokens: &TokenCounter,
) -> Result<Vec<Prompt>, CollectorError> {
    let mut owned = Vec::new();
    datafile::for_each_line(path, args.max_dataset_bytes, |_, line| {
        if !line.trim().is_empty() {
            owned.push(line.to_string());
        }
        Ok(())
    })?;
    let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
    if lines.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} holds no poem lines for --dataset sonnet",
            path.display()
        )));
    }
    let line_tokens: u64 = lines.iter().map(|l| tokens.count(l)).sum();
    let avg_tokens = line_tokens as f64 / lines.len() as f64;
    let base_tokens = tokens.count(SONNET_BASE) as f64;
    let (input, prefix) = (f64::from(args.input_tokens), f64::from(args.prefix_tokens));
    if input <= base_tokens {
        return Err(CollectorError::InvalidArgument(format!(
            "--input-tokens {} must be more than the sonnet prompt's opening line ({base_tokens} tokens)",
            args.input_tokens
        )));
    }
    if args.prefix_tokens >= args.input_tokens {
        return invalid_workload("--prefix-tokens must be less than --input-tokens for --dataset sonnet");
    }
    let input_lines = ((input - base_tokens) / avg_tokens).round() as usize;
    let prefix_lines = (((prefix - base_tokens) / avg_tokens).round().max(0.0) as usize).min(lines.len());
    let fixed = format!("{SONNET_BASE}{}", lines[..prefix_lines].concat());
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut prompts = Vec::with_capacity(count);
    // vLLM draws until enough fit; a file whose draws never fit gets an error, not a hang.
    let attempts = count.saturating_mul(100).max(1000);
    for _ in 0..attempts {
        if prompts.len() == count {
            break;
        }
        let mut text = fixed.clone();
        for _ in 0..input_lines.saturating_sub(prefix_lines) {
            text.push_str(lines[rng.random_range(0..lines.len())]);
        }
        let input_tokens = tokens.count(&text);
        if input_tokens <= u64::from(args.input_tokens) {
            prompts.push(Prompt {
                text,
                category: None,
                max_tokens: args.output_tokens.max(1),
                ignore_eos: args.ignore_eos,
                input_tokens,
                later_turns: Vec::new(),
            });
        }
    }
    if prompts.len() < count {
        return Err(CollectorError::InvalidArgument(format!(
            "{}: {} of {attempts} sonnet prompts of {input_lines} lines fit --input-tokens {} (lines average {avg_tokens:.1} tokens); raise --input-tokens",
            path.display(),
            prompts.len(),
            args.input_tokens
        )));
    }
    Ok(prompts)
}

fn invalid_workload<T>(message: &str) -> Result<T, CollectorError> {
    Err(CollectorError::InvalidArgument(message.into()))
}

/// One row of a Hugging Face file: where it is (`row 3`, `line 3`) and its columns.
type HfRow = (String, serde_json::Map<String, serde_json::Value>);

/// Calls `each` with every row of a Hugging Face file (parquet, a JSON array of rows or JSON
/// lines) as a JSON object, one row at a time.
fn for_each_hf_row(
    path: &Path,
    max_bytes: u64,
    mut each: impl FnMut(HfRow) -> Result<(), CollectorError>,
) -> Result<(), CollectorError> {
    let bad = |what: String| CollectorError::InvalidArgument(format!("{}: {what}", path.display()));
    let object = |at: String, v: serde_json::Value| match v {
        serde_json::Value::Object(m) => Ok((at, m)),
        other => Err(bad(format!("{at}: not a row object but {other}"))),
    };
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet")) {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let file = datafile::open(path, max_bytes)?.into_inner();
        let reader = SerializedFileReader::new(file).map_err(|e| bad(format!("not a parquet file: {e}")))?;
        let rows = reader
            .get_row_iter(None)
            .map_err(|e| bad(format!("cannot read its rows: {e}")))?;
        for (i, row) in rows.enumerate() {
            let row = row.map_err(|e| bad(format!("row {}: {e}", i + 1)))?;
            each(object(format!("row {}", i + 1), row.to_json_value())?)?;
        }
        return Ok(());
    }
    if datafile::holds_a_json_array(path, max_bytes)? {
        let mut i = 0;
        return datafile::for_each_array_item(path, max_bytes, "a JSON array of rows", |v: serde_json::Value| {
            i += 1;
            each(object(format!("row {i}"), v)?)
        });
    }
    datafile::for_each_line(path, max_bytes, |i, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let v = serde_json::from_str(line).map_err(|e| bad(format!("line {i}: not a JSON row: {e}")))?;
        each(object(format!("line {i}"), v)?)
    })
}

/// The prompt and category columns of a Hugging Face file, named or found in its first row.
fn hf_columns(
    columns: &Columns,
    first: &serde_json::Map<String, serde_json::Value>,
) -> Result<(String, Option<String>), String> {
    let prompt = match &columns.prompt {
        Some(c) => c.clone(),
        None => PROMPT_COLUMNS
            .iter()
            .find(|c| first.contains_key(**c))
            .map(|c| (*c).to_string())
            .ok_or_else(|| {
                let have: Vec<&str> = first.keys().map(String::as_str).collect();
                format!("no prompt column among {PROMPT_COLUMNS:?}; its columns are {have:?}: name one with --prompt-column")
            })?,
    };
    let category = columns
        .category
        .clone()
        .or_else(|| first.contains_key("category").then(|| "category".to_string()));
    Ok((prompt, category))
}

/// A Hugging Face file's prompts through its column mapping: every row is checked, at most
/// `cap` kept (a seeded sample).
fn from_hf(
    args: &Workload,
    path: &Path,
    columns: &Columns,
    cap: usize,
    tokens: &TokenCounter,
) -> Result<Vec<Prompt>, CollectorError> {
    let bad = |what: String| CollectorError::InvalidArgument(format!("{}: {what}", path.display()));
    let mut found: Option<(String, Option<String>)> = None;
    let mut sample = Sample::new(cap, args.seed);
    for_each_hf_row(path, args.max_dataset_bytes, |(at, row)| {
        if found.is_none() {
            found = Some(hf_columns(columns, &row).map_err(bad)?);
        }
        let Some((prompt_column, category_column)) = &found else {
            return Ok(());
        };
        let cell = |column: &str| row.get(column).filter(|v| !v.is_null());
        let mut later_turns = Vec::new();
        let text = match cell(prompt_column) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(items)) => {
                let texts: Option<Vec<&str>> = items.iter().map(serde_json::Value::as_str).collect();
                match texts.as_deref() {
                    Some([first, later @ ..]) => {
                        if args.multi_turn {
                            later_turns = later.iter().map(|t| (*t).to_string()).collect();
                        }
                        (*first).to_string()
                    }
                    _ => return Err(bad(format!("{at}: column {prompt_column:?} is not a list of texts"))),
                }
            }
            Some(other) => return Err(bad(format!("{at}: column {prompt_column:?} is not text: {other}"))),
            None => return Err(bad(format!("{at}: no column {prompt_column:?}"))),
        };
        let max_tokens = match columns.output_len.as_deref().map(|c| (c, cell(c))) {
            None => args.output_tokens,
            Some((c, Some(v))) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad(format!("{at}: column {c:?} is not a whole number of tokens: {v}")))?,
            Some((c, None)) => return Err(bad(format!("{at}: no column {c:?}"))),
        };
        let category = match category_column.as_deref().map(cell) {
            Some(Some(serde_json::Value::String(s))) => Some(s.clone()),
            Some(Some(v)) => Some(v.to_string()),
            _ => None,
        };
        if !args.categories.is_empty() && !category.as_ref().is_some_and(|c| args.categories.contains(c)) {
            return Ok(());
        }
        sample.offer(|| {
            Some(Prompt {
                input_tokens: tokens.count(&text),
                text,
                category,
                max_tokens: max_tokens.max(1),
                ignore_eos: args.ignore_eos,
                later_turns,
            })
        });
        Ok(())
    })?;
    if found.is_none() {
        return Err(bad("holds no rows".into()));
    }
    let prompts = sample.into_vec();
    if prompts.is_empty() {
        return Err(bad(format!("holds no prompts of categories {:?}", args.categories)));
    }
    Ok(prompts)
}

/// A dataset file's prompts, at most `cap` of them: a seeded sample, in a seeded order, of the
/// file read one line or item at a time (never whole).
fn from_file(args: &Workload, path: &Path, cap: usize, tokens: &TokenCounter) -> Result<Vec<Prompt>, CollectorError> {
    if matches!(args.dataset, Dataset::Mooncake(_)) {
        return from_trace(args, path, cap);
    }
    if let Dataset::Hf(_, columns) = &args.dataset {
        return from_hf(args, path, columns, cap, tokens);
    }
    if matches!(args.dataset, Dataset::ShareGpt(_)) {
        if !args.categories.is_empty() {
            return Err(CollectorError::InvalidArgument(
                "ShareGPT prompts have no categories: --category takes a spec-bench, speed-bench or jsonl dataset"
                    .into(),
            ));
        }
        return from_sharegpt(args, path, cap, tokens);
    }
    let mut sample = Sample::new(cap, args.seed);
    datafile::for_each_line(path, args.max_dataset_bytes, |i, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let bad = |e: serde_json::Error| {
            CollectorError::InvalidArgument(format!("{}:{i}: not a dataset line: {e}", path.display()))
        };
        let mut later_turns = Vec::new();
        let (prompt, category, max_tokens) = match args.dataset {
            Dataset::SpecBench(_) => {
                let l: SpecBenchLine = serde_json::from_str(line).map_err(bad)?;
                let mut turns = l.turns.into_iter();
                let first = turns
                    .next()
                    .ok_or_else(|| CollectorError::InvalidArgument(format!("{}:{i}: no turns", path.display())))?;
                later_turns = if args.multi_turn { turns.collect() } else { Vec::new() };
                (first, l.category, None)
            }
            Dataset::SpeedBench(_) => {
                let l: SpeedBenchLine = serde_json::from_str(line).map_err(bad)?;
                let first =
                    l.messages.into_iter().next().ok_or_else(|| {
                        CollectorError::InvalidArgument(format!("{}:{i}: no messages", path.display()))
                    })?;
                (first.content, l.category, None)
            }
            _ => {
                let l: JsonlLine = serde_json::from_str(line).map_err(bad)?;
                (l.prompt, l.category, l.max_tokens)
            }
        };
        if !args.categories.is_empty() && !category.as_ref().is_some_and(|c| args.categories.contains(c)) {
            return Ok(());
        }
        sample.offer(|| {
            Some(Prompt {
                input_tokens: tokens.count(&prompt),
                text: prompt,
                category,
                max_tokens: max_tokens.unwrap_or(args.output_tokens).max(1),
                ignore_eos: args.ignore_eos,
                later_turns,
            })
        });
        Ok(())
    })?;
    let prompts = sample.into_vec();
    if prompts.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} holds no prompts{}",
            path.display(),
            if args.categories.is_empty() {
                String::new()
            } else {
                format!(" of categories {:?}", args.categories)
            }
        )));
    }
    Ok(prompts)
}

/// A trace's first `count` requests in their timestamps' order (a replay takes each once).
fn from_trace(args: &Workload, path: &Path, count: usize) -> Result<Vec<Prompt>, CollectorError> {
    if !args.categories.is_empty() {
        return invalid_workload(
            "a Mooncake trace has no categories: --category takes a spec-bench, speed-bench or jsonl dataset",
        );
    }
    let trace = super::trace::read(path, args.max_dataset_bytes)?;
    if trace.len() < count {
        return invalid_workload(&format!(
            "{} holds {} requests; the run asks for {count} (--num-prompts with --warmup)",
            path.display(),
            trace.len()
        ));
    }
    Ok(super::trace::prompts(&trace[..count], args.seed, args.output_tokens)
        .into_iter()
        .map(|p| Prompt {
            text: p.text,
            category: None,
            max_tokens: p.max_tokens,
            // The answer has the trace's length (as GuideLLM replays it).
            ignore_eos: true,
            input_tokens: p.input_tokens,
            later_turns: Vec::new(),
        })
        .collect())
}

/// The prompts of a run: `count` of them (a dataset file's are a seeded sample of at most
/// `count`, cycled when the file holds fewer).
pub fn load(args: &Workload, count: usize, tokens: &TokenCounter) -> Result<Vec<Prompt>, CollectorError> {
    if !args.categories.is_empty() && matches!(args.dataset, Dataset::Synthetic | Dataset::Sonnet(_)) {
        return invalid_workload("--category takes a spec-bench, speed-bench or jsonl dataset");
    }
    if let Dataset::Sonnet(path) = &args.dataset {
        // Every sonnet prompt is drawn on its own, as vLLM does: no pool to cycle.
        return from_sonnet(args, path, count, tokens);
    }
    match args.dataset.path() {
        None => Ok(Synthetic::new(args).take(count).collect()),
        Some(path) => {
            let pool = from_file(args, path, count, tokens)?;
            Ok((0..count).map(|i| pool[i % pool.len()].clone()).collect())
        }
    }
}

/// Requests built before the run at most: a longer synthetic run is generated as it goes, by a
/// thread that keeps this many ready ahead of the sender, so memory does not grow with the run.
pub const BUILT_AHEAD: usize = 8192;

/// One request ready to send.
#[derive(Debug, Clone)]
pub struct Ready {
    pub category: Option<String>,
    /// Input length when known before sending (the server's `usage` replaces it).
    pub input_tokens: u64,
    /// The `max_tokens` the body asks for.
    pub max_tokens: Option<u64>,
    pub body: Bytes,
    /// The rest of a multi-turn conversation, whose first turn `body` is.
    pub conversation: Option<Arc<Conversation>>,
}

impl Ready {
    fn of(prompt: &Prompt, opts: &BodyOptions<'_>) -> Ready {
        let first = body_value(prompt, opts);
        let conversation = (!prompt.later_turns.is_empty()).then(|| {
            let mut user_turns = vec![prompt.text.clone()];
            user_turns.extend(prompt.later_turns.iter().cloned());
            Arc::new(Conversation {
                user_turns,
                first: first.clone(),
            })
        });
        Ready {
            category: prompt.category.clone(),
            input_tokens: prompt.input_tokens,
            max_tokens: Some(u64::from(prompt.max_tokens)),
            body: Bytes::from(first.to_string()),
            conversation,
        }
    }
}

/// A multi-turn conversation: the user's turns, each sent (as a chat) with every earlier turn
/// and the server's answers to them.
#[derive(Debug)]
pub struct Conversation {
    pub user_turns: Vec<String>,
    /// The first turn's request, whose settings every turn keeps.
    first: serde_json::Value,
}

impl Conversation {
    /// The request of `turn` (0-based, ≥ 1) after `answers` to the turns before it.
    pub fn body(&self, turn: usize, answers: &[String]) -> Bytes {
        let mut messages = Vec::with_capacity(2 * turn + 1);
        for (i, user) in self.user_turns.iter().take(turn + 1).enumerate() {
            messages.push(json!({"role": "user", "content": user}));
            if let Some(answer) = answers.get(i).filter(|_| i < turn) {
                messages.push(json!({"role": "assistant", "content": answer}));
            }
        }
        let mut body = self.first.clone();
        body["messages"] = serde_json::Value::Array(messages);
        Bytes::from(body.to_string())
    }

    /// The text of `turn`'s messages counted, before the server's usage replaces it.
    pub fn input_tokens(&self, turn: usize, answers: &[String], tokens: &TokenCounter) -> u64 {
        let users: u64 = self.user_turns.iter().take(turn + 1).map(|t| tokens.count(t)).sum();
        users + answers.iter().take(turn).map(|a| tokens.count(a)).sum::<u64>()
    }
}

/// What the bodies share, owned (for the generating thread).
#[derive(Debug, Clone)]
pub struct BodySettings {
    pub endpoint: EndpointKind,
    pub model: String,
    pub stream: bool,
    pub temperature: f64,
    pub sglang_spec_details: bool,
}

impl BodySettings {
    fn options(&self) -> BodyOptions<'_> {
        BodyOptions {
            endpoint: self.endpoint,
            model: &self.model,
            stream: self.stream,
            temperature: self.temperature,
            sglang_spec_details: self.sglang_spec_details,
        }
    }
}

/// A phase's requests in sending order: request `j` of the phase is `get(j)`.
#[derive(Clone)]
pub enum Feed {
    /// Built before the run: request `j` is `pool[(offset + j % len) % pool.len()]` (a
    /// duration-bound window cycles its `len` prompts; a dataset file cycles its pool).
    Built {
        pool: Arc<[Ready]>,
        offset: usize,
        len: usize,
    },
    /// Generated as the run goes, in order, by a thread that stays [`BUILT_AHEAD`] ahead.
    Generated(Arc<tokio::sync::Mutex<mpsc::Receiver<Ready>>>),
}

impl Feed {
    /// Request `j` of the phase; `None` when the generator is gone.
    pub async fn get(&self, j: u64) -> Option<Ready> {
        match self {
            Feed::Built { pool, offset, len } => {
                let j = (j % (*len).max(1) as u64) as usize;
                pool.get((offset + j) % pool.len().max(1)).cloned()
            }
            Feed::Generated(rx) => rx.lock().await.recv().await,
        }
    }
}

/// The warm-up's and the window's requests: `warmup` then `window` prompts, the window's
/// cycled without end when `cycle` (a duration-bound run). Everything is built now when it is
/// a dataset file or at most [`BUILT_AHEAD`] synthetic prompts; otherwise a thread generates
/// them, and this returns once it has [`BUILT_AHEAD`] ready.
pub async fn feeds(
    args: &Workload,
    warmup: usize,
    window: usize,
    cycle: bool,
    settings: BodySettings,
    tokens: TokenCounter,
) -> Result<(Feed, Feed), CollectorError> {
    let built = |pool: Vec<Ready>| {
        let pool: Arc<[Ready]> = pool.into();
        (
            Feed::Built {
                pool: pool.clone(),
                offset: 0,
                len: warmup,
            },
            Feed::Built {
                pool,
                offset: warmup,
                len: window,
            },
        )
    };
    let opts = settings.options();
    if let Some(path) = args.dataset.path() {
        let count = (warmup + window).max(1);
        let pool = match &args.dataset {
            Dataset::Sonnet(_) => load(args, count, &tokens)?,
            _ => from_file(args, path, count, &tokens)?,
        };
        return Ok(built(pool.iter().map(|p| Ready::of(p, &opts)).collect()));
    }
    if warmup + window <= BUILT_AHEAD {
        return Ok(built(
            Synthetic::new(args)
                .take(warmup + window)
                .map(|p| Ready::of(&p, &opts))
                .collect(),
        ));
    }
    let (tx, rx) = mpsc::channel(BUILT_AHEAD);
    let (primed_tx, primed) = tokio::sync::oneshot::channel();
    let args = args.clone();
    std::thread::Builder::new()
        .name("speclens-prompts".into())
        .spawn(move || generate(&args, warmup, window, cycle, &settings, &tx, primed_tx))
        .map_err(|e| CollectorError::InvalidArgument(format!("cannot start the prompt generator: {e}")))?;
    // The first BUILT_AHEAD are ready before the first send (or the generator stopped).
    let _ = primed.await;
    let feed = Feed::Generated(Arc::new(tokio::sync::Mutex::new(rx)));
    Ok((feed.clone(), feed))
}

/// The generating thread: the warm-up's prompts, then the window's (again and again when
/// `cycle`), until the run stops taking them.
fn generate(
    args: &Workload,
    warmup: usize,
    window: usize,
    cycle: bool,
    settings: &BodySettings,
    tx: &mpsc::Sender<Ready>,
    primed: tokio::sync::oneshot::Sender<()>,
) {
    let opts = settings.options();
    let mut primed = Some(primed);
    let mut sent = 0usize;
    let mut send = |prompt: Prompt| {
        if tx.blocking_send(Ready::of(&prompt, &opts)).is_err() {
            return false;
        }
        sent += 1;
        if sent == BUILT_AHEAD {
            primed.take().map(|p| p.send(()));
        }
        true
    };
    let mut prompts = Synthetic::new(args);
    for _ in 0..warmup + window {
        if !prompts.next().is_some_and(&mut send) {
            return;
        }
    }
    if !cycle {
        return;
    }
    loop {
        let again = Synthetic::new(args).skip(warmup).take(window);
        for prompt in again {
            if !send(prompt) {
                return;
            }
        }
    }
}

/// What every request body shares.
pub struct BodyOptions<'a> {
    pub endpoint: EndpointKind,
    pub model: &'a str,
    pub stream: bool,
    pub temperature: f64,
    pub sglang_spec_details: bool,
}

/// The JSON body of one request. Streaming requests always ask for the usage chunk: vLLM sends
/// its per-request spec-decode stats on it.
pub fn body(prompt: &Prompt, o: &BodyOptions<'_>) -> Bytes {
    Bytes::from(body_value(prompt, o).to_string())
}

fn body_value(prompt: &Prompt, o: &BodyOptions<'_>) -> serde_json::Value {
    let mut body = json!({
        "model": o.model,
        "max_tokens": prompt.max_tokens,
        "temperature": o.temperature,
        "stream": o.stream,
    });
    match o.endpoint {
        EndpointKind::Chat => body["messages"] = json!([{"role": "user", "content": prompt.text}]),
        EndpointKind::Completions => body["prompt"] = json!(prompt.text),
    }
    if o.stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if prompt.ignore_eos {
        body["ignore_eos"] = json!(true);
    }
    if o.sglang_spec_details {
        body["return_spec_tokens_details"] = json!(true);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Workload {
        let mut argv = vec!["speclens", "bench"];
        argv.extend_from_slice(extra);
        crate::cli::bench_plan_of(&argv).unwrap().workload
    }

    #[test]
    fn synthetic_prompts_have_the_asked_lengths_and_differ() {
        let t = TokenCounter::new();
        let a = args(&["--input-tokens", "50", "--output-tokens", "20"]);
        let p = load(&a, 3, &t).unwrap();
        assert!(p
            .iter()
            .all(|p| t.count(&p.text) == 50 && p.input_tokens == 50 && p.max_tokens == 20 && p.ignore_eos));
        let short = load(&args(&["--input-tokens", "3"]), 2000, &t).unwrap();
        assert!(
            short.iter().all(|p| p.input_tokens == t.count(&p.text)),
            "counts are exact"
        );
        assert_ne!(p[0].text, p[1].text);
        let spread = args(&["--input-tokens", "50", "--input-tokens-stddev", "10"]);
        let lens: Vec<u64> = load(&spread, 50, &t).unwrap().iter().map(|p| p.input_tokens).collect();
        assert!(lens.iter().any(|l| *l != 50) && lens.iter().all(|l| *l >= 1));
        assert_eq!(
            load(&spread, 5, &t).unwrap(),
            load(&spread, 5, &t).unwrap(),
            "the seed makes it reproducible"
        );
    }

    #[tokio::test]
    async fn a_long_run_generated_as_it_goes_sends_what_a_short_one_builds_first() {
        let t = TokenCounter::new();
        let a = args(&[
            "--input-tokens",
            "3",
            "--output-tokens",
            "4",
            "--output-tokens-stddev",
            "2",
        ]);
        let settings = BodySettings {
            endpoint: EndpointKind::Completions,
            model: "m".into(),
            stream: true,
            temperature: 0.0,
            sglang_spec_details: false,
        };
        let (warm, window) = (2, BUILT_AHEAD + 10);
        let want: Vec<Bytes> = load(&a, warm + window, &t)
            .unwrap()
            .iter()
            .map(|p| body(p, &settings.options()))
            .collect();
        for cycle in [false, true] {
            let (warm_feed, window_feed) = feeds(&a, warm, window, cycle, settings.clone(), t).await.unwrap();
            assert!(
                matches!(window_feed, Feed::Generated(_)),
                "past BUILT_AHEAD it is generated"
            );
            let mut got = Vec::new();
            for j in 0..warm {
                got.push(warm_feed.get(j as u64).await.unwrap().body);
            }
            for j in 0..window {
                got.push(window_feed.get(j as u64).await.unwrap().body);
            }
            assert!(got == want, "cycle={cycle}: the same requests in the same order");
            if cycle {
                // A duration-bound window starts its prompts over.
                let again = window_feed.get(window as u64).await.unwrap().body;
                assert_eq!(again, want[warm]);
            }
        }
        // A short run is built before it starts.
        let (_, short) = feeds(&a, 0, 10, false, settings, t).await.unwrap();
        assert!(matches!(short, Feed::Built { .. }));
        assert_eq!(short.get(3).await.unwrap().body, want[3]);
    }

    #[test]
    fn synthetic_counts_match_the_tokenizer_at_every_number_length() {
        // The count is arithmetic (digit groups + one token a word); the tokenizer is the truth.
        let t = TokenCounter::new();
        let (prefix, prefix_tokens) = shared_prefix(7);
        assert_eq!(t.count(&prefix), prefix_tokens + 1, "the trailing space is a token");
        for i in [0, 7, 42, 999, 1000, 54_321, 999_999, 1_000_000, 123_456_789] {
            for target in [1, 2, 3, 4, 5, 17, 128] {
                let (text, count) = synthetic_text(i, target);
                assert_eq!(count, t.count(&text), "prompt {i}, {target} tokens: {text}");
                assert!(count == target || text == i.to_string(), "{text}");
                let joined = format!("{prefix}{text}");
                assert_eq!(prefix_tokens + 1 + count, t.count(&joined), "{joined}");
            }
        }
    }

    #[test]
    fn random_ranges_and_a_shared_prefix_as_vllm_draws_them() {
        let t = TokenCounter::new();
        let a = args(&[
            "--input-tokens",
            "20",
            "--output-tokens",
            "10",
            "--range-ratio",
            "0.5",
            "--prefix-tokens",
            "16",
        ]);
        let prompts = load(&a, 300, &t).unwrap();
        let (prefix, prefix_tokens) = shared_prefix(16);
        assert_eq!(prefix_tokens, 16);
        // Own lengths uniform over [10, 30], outputs over [5, 15], each end reached.
        let own: Vec<u64> = prompts.iter().map(|p| t.count(&p.text[prefix.len()..])).collect();
        let outs: Vec<u32> = prompts.iter().map(|p| p.max_tokens).collect();
        assert_eq!((own.iter().min(), own.iter().max()), (Some(&10), Some(&30)), "{own:?}");
        assert_eq!(
            (outs.iter().min(), outs.iter().max()),
            (Some(&5), Some(&15)),
            "{outs:?}"
        );
        for p in &prompts {
            assert!(p.text.starts_with(&prefix), "{}", p.text);
            assert_eq!(p.input_tokens, t.count(&p.text));
        }
        // The same seed, the same prompts; a ratio outside vLLM's [0, 1), or beside a stddev,
        // is refused before anything is sent.
        assert_eq!(load(&a, 300, &t).unwrap(), prompts);
        for bad in [
            &["--range-ratio", "1"][..],
            &["--range-ratio", "0.2", "--input-tokens-stddev", "3"],
        ] {
            let argv: Vec<&str> = ["speclens", "bench"].iter().chain(bad).copied().collect();
            let e = crate::cli::bench_plan_of(&argv).err().expect("refused").to_string();
            assert!(e.contains("--range-ratio"), "{e}");
        }
    }

    #[test]
    fn sonnet_prompts_open_with_the_prefix_lines_and_fit_the_input_length() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/made_sonnet.txt");
        let t = TokenCounter::new();
        let a = args(&[
            "--dataset",
            "sonnet",
            "--dataset-path",
            fixture,
            "--input-tokens",
            "120",
            "--output-tokens",
            "30",
            "--prefix-tokens",
            "40",
        ]);
        let prompts = load(&a, 20, &t).unwrap();
        assert_eq!(prompts.len(), 20);
        // The opening line and the poem's first lines (about 40 tokens of them) in every prompt.
        let poem = std::fs::read_to_string(fixture).unwrap();
        let lines: Vec<&str> = poem.split_inclusive('\n').collect();
        let opening = format!("{SONNET_BASE}{}{}", lines[0], lines[1]);
        for p in &prompts {
            assert!(p.text.starts_with(&opening), "{}", p.text);
            assert!(
                p.input_tokens <= 120 && p.input_tokens == t.count(&p.text),
                "{}",
                p.input_tokens
            );
            assert_eq!(p.max_tokens, 30);
        }
        let distinct: std::collections::BTreeSet<&str> = prompts.iter().map(|p| p.text.as_str()).collect();
        assert!(distinct.len() > 10, "lines drawn at random: {}", distinct.len());
        // Too short for the opening line, and a file of no lines: errors that say so.
        let short = args(&["--dataset", "sonnet", "--dataset-path", fixture, "--input-tokens", "5"]);
        let e = load(&short, 1, &t).unwrap_err().to_string();
        assert!(e.contains("opening line"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, "\n\n").unwrap();
        let none = args(&["--dataset", "sonnet", "--dataset-path", empty.to_str().unwrap()]);
        let e = load(&none, 1, &t).unwrap_err().to_string();
        assert!(e.contains("empty.txt") && e.contains("no poem lines"), "{e}");
    }

    /// A streamed chat's body options.
    fn streamed_chat() -> BodyOptions<'static> {
        BodyOptions {
            endpoint: EndpointKind::Chat,
            model: "m",
            stream: true,
            temperature: 0.0,
            sglang_spec_details: false,
        }
    }

    #[test]
    fn a_conversation_s_turn_carries_every_earlier_turn_and_answer() {
        let t = TokenCounter::new();
        let prompt = Prompt {
            text: "one".into(),
            category: None,
            max_tokens: 7,
            ignore_eos: false,
            input_tokens: 1,
            later_turns: vec!["two".into(), "three".into()],
        };
        let o = streamed_chat();
        let ready = Ready::of(&prompt, &o);
        let c = ready.conversation.expect("a conversation");
        let answers = ["A".to_string(), "B b".to_string()];
        let third: serde_json::Value = serde_json::from_slice(&c.body(2, &answers)).unwrap();
        let roles: Vec<(&str, &str)> = third["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        assert_eq!(
            roles,
            [
                ("user", "one"),
                ("assistant", "A"),
                ("user", "two"),
                ("assistant", "B b"),
                ("user", "three")
            ]
        );
        // The first turn's settings stay.
        assert_eq!(
            (third["max_tokens"].as_u64(), third["stream"].as_bool()),
            (Some(7), Some(true))
        );
        assert_eq!(
            c.input_tokens(2, &answers, &t),
            t.count("one") + t.count("A") + t.count("two") + t.count("B b") + t.count("three")
        );
        // A single-turn prompt is no conversation.
        let single = Prompt {
            later_turns: Vec::new(),
            ..prompt
        };
        assert!(Ready::of(&single, &o).conversation.is_none());
    }

    /// A parquet file as `datasets`' `to_parquet` writes one (snappy), made here.
    fn write_parquet(path: &Path, questions: &[&str], lengths: &[i64], topics: &[&str]) {
        use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        let schema = parquet::schema::parser::parse_message_type(
            "message train { REQUIRED BYTE_ARRAY question (UTF8); REQUIRED INT64 answer_tokens; REQUIRED BYTE_ARRAY topic (UTF8); }",
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).unwrap();
        let mut group = writer.next_row_group().unwrap();
        let text = |v: &[&str]| v.iter().map(|s| ByteArray::from(*s)).collect::<Vec<_>>();
        let mut column = group.next_column().unwrap().unwrap();
        column
            .typed::<ByteArrayType>()
            .write_batch(&text(questions), None, None)
            .unwrap();
        column.close().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<Int64Type>().write_batch(lengths, None, None).unwrap();
        column.close().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column
            .typed::<ByteArrayType>()
            .write_batch(&text(topics), None, None)
            .unwrap();
        column.close().unwrap();
        group.close().unwrap();
        writer.close().unwrap();
    }

    #[test]
    fn a_hugging_face_parquet_file_loads_through_its_column_mapping() {
        let t = TokenCounter::new();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("train.parquet");
        let questions = [
            "What is speculative decoding?",
            "Name a draft model.",
            "Why does batch size matter?",
        ];
        write_parquet(&path, &questions, &[40, 12, 64], &["qa", "qa", "reasoning"]);
        let p = path.to_str().unwrap();
        let a = args(&[
            "--dataset",
            "hf",
            "--dataset-path",
            p,
            "--output-len-column",
            "answer_tokens",
            "--category-column",
            "topic",
        ]);
        // `question` is found without --prompt-column.
        let pool = from_file(&a, &path, 100, &t).unwrap();
        // The pool is in a seeded order, not the file's.
        let mut got: Vec<(&str, u32, Option<&str>)> = pool
            .iter()
            .map(|p| (p.text.as_str(), p.max_tokens, p.category.as_deref()))
            .collect();
        got.sort();
        let mut want = [
            (questions[0], 40, Some("qa")),
            (questions[1], 12, Some("qa")),
            (questions[2], 64, Some("reasoning")),
        ];
        want.sort();
        assert_eq!(got, want);
        assert_eq!(pool[0].input_tokens, t.count(questions[0]));
        // A column the file lacks is named with the row; a file that is not parquet says so.
        let missing = args(&["--dataset", "hf", "--dataset-path", p, "--prompt-column", "instruction"]);
        let e = from_file(&missing, &path, 100, &t).unwrap_err().to_string();
        assert!(e.contains("train.parquet: row 1: no column \"instruction\""), "{e}");
        let fake = dir.path().join("fake.parquet");
        std::fs::write(&fake, "prompt,answer\n").unwrap();
        let e = from_file(&missing, &fake, 100, &t).unwrap_err().to_string();
        assert!(e.contains("fake.parquet: not a parquet file"), "{e}");
    }

    #[test]
    fn hugging_face_json_lines_map_their_columns_and_take_a_list_s_first_turn() {
        let t = TokenCounter::new();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mt_bench.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"question_id": 81, "category": "writing", "turns": ["Compose a travel blog post.", "Rewrite it in limericks."]}"#,
                "\n\n",
                r#"{"question_id": 101, "category": "reasoning", "turns": ["Who is in second place?", "And now?"]}"#,
                "\n",
            ),
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let a = args(&["--dataset", "hf", "--dataset-path", p, "--category", "reasoning"]);
        let pool = from_file(&a, &path, 100, &t).unwrap();
        assert_eq!(pool.len(), 1);
        assert_eq!(
            (pool[0].text.as_str(), pool[0].category.as_deref()),
            ("Who is in second place?", Some("reasoning"))
        );
        // A malformed line is named by its number; a JSON array of rows reads too.
        std::fs::write(&path, "{\"prompt\": \"a\"}\n{\"prompt\": \n").unwrap();
        let e = from_file(&args(&["--dataset", "hf", "--dataset-path", p]), &path, 100, &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("mt_bench.jsonl: line 2: not a JSON row"), "{e}");
        let array = dir.path().join("rows.json");
        std::fs::write(&array, r#"[{"text": "one", "n": 5}, {"text": "two", "n": 7}]"#).unwrap();
        let a = args(&[
            "--dataset",
            "hf",
            "--dataset-path",
            array.to_str().unwrap(),
            "--output-len-column",
            "n",
        ]);
        let pool = from_file(&a, &array, 100, &t).unwrap();
        assert_eq!(pool.iter().map(|p| p.max_tokens).collect::<Vec<_>>(), [5, 7]);
        // Column flags name a hf file's columns only.
        let e = crate::cli::bench_plan_of(&["speclens", "bench", "--prompt-column", "q"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--dataset hf"), "{e}");
    }

    #[test]
    fn sharegpt_takes_the_first_turn_and_the_answer_s_length_as_vllm_does() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/made_sharegpt.json");
        let t = TokenCounter::new();
        let a = args(&["--dataset", "sharegpt", "--dataset-path", fixture]);
        let pool = from_file(&a, Path::new(fixture), 100, &t).unwrap();
        // sg-3 has one turn and sg-4's answer ("Yes.") is under 4 tokens: 3 of 5 entries remain.
        let mut texts: Vec<&str> = pool.iter().map(|p| p.text.as_str()).collect();
        texts.sort();
        assert_eq!(
            texts,
            [
                "Explain in a few sentences why speculative decoding speeds up generation at small batch sizes.",
                "List three prime numbers greater than ten and say why each is prime.",
                "Write a haiku about a GPU running out of memory.",
            ]
        );
        let haiku = pool.iter().find(|p| p.text.starts_with("Write a haiku")).unwrap();
        assert_eq!(
            u64::from(haiku.max_tokens),
            t.count("Tensors overflow, the allocator sighs at last, batch size halves again."),
            "the second turn's length is the output length; later turns are not used"
        );
        assert!(pool
            .iter()
            .all(|p| p.input_tokens == t.count(&p.text) && !p.ignore_eos && p.category.is_none()));
        // The same seed, the same order; a run cycles the pool.
        assert_eq!(load(&a, 6, &t).unwrap()[3], load(&a, 6, &t).unwrap()[0]);
    }

    #[test]
    fn a_bad_sharegpt_file_says_where_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sg.json");
        let a = args(&["--dataset", "sharegpt", "--dataset-path", path.to_str().unwrap()]);
        let t = TokenCounter::new();
        std::fs::write(&path, "[\n {\"conversations\": [{\"from\": \"human\"}]}\n]").unwrap();
        let err = load(&a, 1, &t).unwrap_err().to_string();
        assert!(err.contains("not a ShareGPT file") && err.contains("line 2"), "{err}");
        std::fs::write(
            &path,
            "[{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}]",
        )
        .unwrap();
        let err = load(&a, 1, &t).unwrap_err().to_string();
        assert!(
            err.contains("no usable ShareGPT pair: 1 entries, 1 with fewer than two turns"),
            "{err}"
        );
        let with_category = args(&[
            "--dataset",
            "sharegpt",
            "--dataset-path",
            path.to_str().unwrap(),
            "--category",
            "x",
        ]);
        assert!(load(&with_category, 1, &t)
            .unwrap_err()
            .to_string()
            .contains("no categories"));
    }

    #[test]
    fn spec_bench_file_with_categories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("question.jsonl");
        std::fs::write(
            &path,
            "{\"question_id\": 1, \"category\": \"writing\", \"turns\": [\"Write a poem\", \"again\"]}\n\
             {\"question_id\": 2, \"category\": \"summarization\", \"turns\": [\"Summarize this\"]}\n",
        )
        .unwrap();
        let a = args(&[
            "--dataset",
            "spec-bench",
            "--dataset-path",
            path.to_str().unwrap(),
            "--category",
            "summarization",
        ]);
        let t = TokenCounter::new();
        let p = load(&a, 3, &t).unwrap();
        assert!(p
            .iter()
            .all(|p| p.text == "Summarize this" && p.category.as_deref() == Some("summarization")));
        let none = args(&[
            "--dataset",
            "spec-bench",
            "--dataset-path",
            path.to_str().unwrap(),
            "--category",
            "math",
        ]);
        assert!(load(&none, 1, &t).unwrap_err().to_string().contains("no prompts"));
        std::fs::write(&path, "not json\n").unwrap();
        assert!(load(&a, 1, &t)
            .unwrap_err()
            .to_string()
            .contains(":1: not a dataset line"));
    }

    #[test]
    fn bodies_ask_for_usage_when_streaming() {
        let p = Prompt {
            text: "hi".into(),
            category: None,
            max_tokens: 5,
            ignore_eos: true,
            input_tokens: 1,
            later_turns: Vec::new(),
        };
        let o = streamed_chat();
        let v: serde_json::Value = serde_json::from_slice(&body(&p, &o)).unwrap();
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["messages"][0]["content"], "hi");
        assert_eq!(v["ignore_eos"], true);
    }
}
