//! The flags of the commands that send requests — `bench`, `sweep`, `accept` — with the groups
//! they share (target, workload, scrape, dashboard), and the plans they turn into.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use speclens_shared::check::gates::Gate;
use speclens_shared::run::goodput::Slo;

use crate::bench::answer::EndpointKind;
use crate::bench::plan::{seconds, Arrival, Load, Output, Scrape, Stop, Target};
use crate::bench::prometheus::{self, Prometheus};
use crate::bench::workload::{Columns, Dataset, Workload};
use crate::commands::accept;
use crate::{bench, error::CollectorError};
use speclens_shared::engine::Engine;

/// Which OpenAI endpoint to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EndpointArg {
    /// `/v1/chat/completions`
    Chat,
    /// `/v1/completions`
    Completions,
}

/// The serving engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// From the server's /v1/models `owned_by`.
    Auto,
    Vllm,
    Sglang,
    Trtllm,
    Llamacpp,
}

/// A request field sent by the engine's default, always or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SwitchArg {
    Auto,
    On,
    Off,
}

/// Inter-arrival times when a request rate is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Exponential gaps (a Poisson process); gamma when --burstiness is not 1.
    Poisson,
    /// Equal gaps.
    Constant,
}

/// Where the prompts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatasetArg {
    /// Generated prompts with the given input/output token counts (ignore_eos set).
    Synthetic,
    /// Spec-Bench `question.jsonl` (`question_id`, `category`, `turns`).
    SpecBench,
    /// SPEED-Bench as its public release lays it out on disk: --dataset-path DIR reads
    /// DIR/qualitative.jsonl (categories), or name a split's file (DIR/throughput_8k.jsonl);
    /// each line's `messages[0].content` is the prompt, `category` its category.
    SpeedBench,
    /// ShareGPT JSON, as vLLM's and AIPerf's `sharegpt`: the first turn is the prompt, the
    /// second's length the output length.
    Sharegpt,
    /// A poem's lines, as vLLM's `sonnet`: the opening line, the file's first lines as a shared
    /// prefix of --prefix-tokens, then lines drawn at random up to --input-tokens.
    Sonnet,
    /// One JSON object per line: `prompt`, optional `category` and `max_tokens` (vLLM's `custom`).
    #[value(alias = "custom")]
    Jsonl,
    /// A Hugging Face dataset file on disk: parquet, JSON lines or a JSON array of rows, its
    /// columns named with --prompt-column, --output-len-column and --category-column.
    Hf,
    /// A Mooncake-format trace (AIPerf's `mooncake_trace`): each line's `timestamp` (ms),
    /// `input_length`, `output_length` and `hash_ids` (shared 512-token blocks), each request
    /// sent at its recorded offset from the first (--trace-speedup scales the clock).
    Mooncake,
}

/// Which columns of a `--dataset hf` file hold what.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Workload")]
pub struct ColumnArgs {
    /// The prompt's column (a list's first item: MT-Bench's `turns`) [default: the first of
    /// prompt, question, instruction, input, text, turns, content]
    #[arg(long, hide_short_help = true)]
    pub prompt_column: Option<String>,
    /// A column of output lengths in tokens, sent as max_tokens [default: --output-tokens]
    #[arg(long, hide_short_help = true)]
    pub output_len_column: Option<String>,
    /// The category's column [default: category, when the file has one]
    #[arg(long, hide_short_help = true)]
    pub category_column: Option<String>,
}

impl ColumnArgs {
    fn columns(&self) -> Columns {
        Columns {
            prompt: self.prompt_column.clone(),
            output_len: self.output_len_column.clone(),
            category: self.category_column.clone(),
        }
    }

    fn given(&self) -> bool {
        self.prompt_column.is_some() || self.output_len_column.is_some() || self.category_column.is_some()
    }
}

impl DatasetArg {
    /// The dataset with its file, which every kind but synthetic needs.
    fn with_path(self, path: Option<PathBuf>, columns: &ColumnArgs) -> Result<Dataset, CollectorError> {
        if columns.given() && self != DatasetArg::Hf {
            return invalid(
                "--prompt-column, --output-len-column and --category-column name the columns of --dataset hf",
            );
        }
        let path = || {
            path.clone().map_or_else(
                || invalid("--dataset spec-bench, speed-bench, sharegpt, sonnet, jsonl, hf and mooncake need --dataset-path"),
                Ok,
            )
        };
        Ok(match self {
            DatasetArg::Synthetic => Dataset::Synthetic,
            DatasetArg::SpecBench => Dataset::SpecBench(path()?),
            DatasetArg::SpeedBench => Dataset::SpeedBench(speed_bench_split(&path()?)?),
            DatasetArg::Sharegpt => Dataset::ShareGpt(path()?),
            DatasetArg::Sonnet => Dataset::Sonnet(path()?),
            DatasetArg::Jsonl => Dataset::Jsonl(path()?),
            DatasetArg::Hf => Dataset::Hf(path()?, columns.columns()),
            DatasetArg::Mooncake => Dataset::Mooncake(path()?, None),
        })
    }
}

/// The SPEED-Bench split `path` names: a folder's `qualitative.jsonl`, or a split's file.
fn speed_bench_split(path: &Path) -> Result<PathBuf, CollectorError> {
    let file = if path.is_dir() {
        path.join("qualitative.jsonl")
    } else {
        path.to_path_buf()
    };
    if file.is_file() {
        Ok(file)
    } else {
        invalid(format!(
            "{} is not a SPEED-Bench split: give the folder its public release is prepared into (it reads qualitative.jsonl) or one split's file, e.g. throughput_8k.jsonl",
            path.display()
        ))
    }
}

/// The prompts of `bench` and `sweep`: synthetic (random tokens) by default, or a file.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Workload")]
pub struct DatasetFlags {
    /// Where the prompts come from (acceptance depends on the text: random tokens stand for no
    /// real traffic; SPEED-Bench is the reference workload).
    #[arg(long, value_enum, default_value_t = DatasetArg::Synthetic)]
    pub dataset: DatasetArg,
    /// File for --dataset spec-bench, sharegpt, sonnet, jsonl or hf; folder (or split file) for
    /// speed-bench.
    #[arg(long)]
    pub dataset_path: Option<PathBuf>,
    #[command(flatten)]
    pub columns: ColumnArgs,
    /// Only prompts of these categories (repeatable).
    #[arg(long = "category")]
    pub categories: Vec<String>,
    /// With --dataset mooncake: fill the trace's hash blocks with text from this prompts file
    /// (JSON lines with a `prompt`, as --dataset jsonl), each block from a place chosen by its
    /// hash id, so shared prefixes stay shared. Without it, blocks are filler words: right for
    /// prefix caching, meaningless for acceptance (the result is marked content-invalid).
    #[arg(long, value_name = "PROMPTS", hide_short_help = true)]
    pub trace_fill: Option<PathBuf>,
}

impl DatasetFlags {
    /// The dataset these flags name.
    pub fn dataset(&self) -> Result<Dataset, CollectorError> {
        let dataset = self.dataset.with_path(self.dataset_path.clone(), &self.columns)?;
        match (dataset, &self.trace_fill) {
            (Dataset::Mooncake(trace, _), fill) => Ok(Dataset::Mooncake(trace, fill.clone())),
            (_, Some(_)) => invalid("--trace-fill fills a trace's hash blocks: it needs --dataset mooncake"),
            (dataset, None) => Ok(dataset),
        }
    }
}

/// Reading the spec-decode counters through a Prometheus server (fleets of replicas).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Prometheus (a fleet's counters)")]
pub struct PrometheusArgs {
    /// Prometheus HTTP API base URL (Thanos, Mimir and VictoriaMetrics answer the same API),
    /// e.g. http://prometheus:9090. Adds the fleet path beside the direct /metrics scrapes.
    #[arg(long, value_name = "URL")]
    pub prometheus_url: Option<String>,
    /// Series selector narrowing the counters, e.g. '{job="vllm",model_name="Qwen/Qwen3-8B"}'.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub prometheus_selector: String,
    /// Bearer token for the Prometheus API; never written anywhere.
    #[arg(
        long,
        env = "SPECLENS_PROMETHEUS_TOKEN",
        hide_env_values = true,
        hide_short_help = true
    )]
    pub prometheus_token: Option<String>,
    /// Basic-auth user for the Prometheus API.
    #[arg(long, env = "SPECLENS_PROMETHEUS_USER", hide_short_help = true)]
    pub prometheus_user: Option<String>,
    /// Basic-auth password for the Prometheus API; never written anywhere.
    #[arg(
        long,
        env = "SPECLENS_PROMETHEUS_PASSWORD",
        hide_env_values = true,
        hide_short_help = true
    )]
    pub prometheus_password: Option<String>,
    /// PEM file of a CA to trust for an https:// Prometheus (besides the system's roots).
    #[arg(long, hide_short_help = true)]
    pub prometheus_ca_cert: Option<std::path::PathBuf>,
    /// Seconds per Prometheus API request.
    #[arg(long, default_value_t = 10.0, hide_short_help = true)]
    pub prometheus_timeout: f64,
    /// Seconds to wait after the run for Prometheus to store a sample past the window's end
    /// (about one scrape interval).
    #[arg(long, default_value_t = 60.0, hide_short_help = true)]
    pub prometheus_wait: f64,
    /// Range of rate() for the live timeline, in seconds (at least two scrape intervals).
    #[arg(long, default_value_t = 60.0, hide_short_help = true)]
    pub prometheus_rate_window: f64,
}

/// How to reach the servers under test: flags shared by `bench`, `sweep` and `accept`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Target")]
pub struct TargetArgs {
    /// Which OpenAI endpoint to load.
    #[arg(long, value_enum, default_value_t = EndpointArg::Chat)]
    pub endpoint: EndpointArg,
    /// Model to request (default: the first one the server lists in /v1/models). Several
    /// (comma-separated or repeated: a base model and its LoRA adapters) are sent in turn, each
    /// request to the next (AIPerf's --model-names with round_robin), and each one's acceptance
    /// is reported apart.
    #[arg(long, value_delimiter = ',')]
    pub model: Vec<String>,
    /// Bearer token for the servers; never written to any file, log or report.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// `vllm bench serve`'s --host, refused with the flag to use instead (a server is named by
    /// its whole URL here).
    #[arg(long, hide = true)]
    pub host: Option<String>,
    /// Extra request header, "Name: value" (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", hide_short_help = true)]
    pub headers: Vec<String>,
    /// Seconds before a request is abandoned as timed out.
    #[arg(long, default_value_t = 600.0, hide_short_help = true)]
    pub timeout: f64,
    /// PEM file of a CA to trust for https:// servers (besides Mozilla's public roots), or of a
    /// self-signed server's own certificate, trusted when the server presents exactly it.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub ca_cert: Option<PathBuf>,
    /// Accept any certificate from https:// servers (a self-signed test server; never in
    /// production).
    #[arg(long, hide_short_help = true)]
    pub insecure: bool,
    /// Ask for whole responses instead of SSE streams (no TTFT/ITL then; lighter on the client).
    #[arg(long, hide_short_help = true)]
    pub no_stream: bool,
    /// A response larger than this many MiB is abandoned as a bad response.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=65_536), hide_short_help = true)]
    pub max_response_mib: u64,
    /// The responses in flight together may buffer this many MiB; the one that would pass it is
    /// abandoned as a bad response.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_048_576), hide_short_help = true)]
    pub max_buffered_mib: u64,
    /// Ask for SGLang's per-request stats (`return_spec_tokens_details`) whatever the engine
    /// (sent by default to a server that is SGLang; never to TensorRT-LLM).
    #[arg(long, help_heading = "Engine-specific", hide_short_help = true)]
    pub sglang_spec_details: bool,
    /// Ask for the usage so far in every streamed chunk (vLLM's and SGLang's
    /// `stream_options.continuous_usage_stats`), which counts each chunk's tokens for the
    /// per-token ITL and the tokens per chunk: auto sends it to vLLM and SGLang only.
    #[arg(long, value_enum, default_value_t = SwitchArg::Auto, help_heading = "Engine-specific", hide_short_help = true)]
    pub continuous_usage_stats: SwitchArg,
    /// The serving engine (default: from the server's /v1/models `owned_by`); decides which
    /// engine-specific request fields are sent.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto, help_heading = "Engine-specific")]
    pub engine: EngineArg,
}

/// The requests' shape beyond their lengths: flags shared by `bench`, `sweep` and `accept`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadArgs {
    /// Seed of the prompt draw, the lengths and the arrival times.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Requests sent and finished before the measured window (excluded from every figure).
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Sampling temperature of every request.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Set ignore_eos on dataset prompts too (synthetic prompts always set it).
    #[arg(long, hide_short_help = true)]
    pub ignore_eos: bool,
    /// The largest dataset file read, in MiB (it is read line by line, never whole, and each
    /// line or JSON item may hold at most 16 MiB); a parquet file's rows are held to it as
    /// decoded too.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..), hide_short_help = true)]
    pub max_dataset_mib: u64,
    /// Standard deviation of the synthetic prompt length, in tokens.
    #[arg(long, default_value_t = 0.0, hide_short_help = true)]
    pub input_tokens_stddev: f64,
    /// Standard deviation of the output length, in tokens.
    #[arg(long, default_value_t = 0.0, hide_short_help = true)]
    pub output_tokens_stddev: f64,
    /// Synthetic lengths uniform in [⌊L·(1 − R)⌋, ⌈L·(1 + R)⌉] for the input and output means L,
    /// as vLLM's random dataset draws them (R in [0, 1)).
    #[arg(
        long,
        visible_alias = "random-range-ratio",
        default_value_t = 0.0,
        hide_short_help = true
    )]
    pub range_ratio: f64,
    /// Tokens of a prefix every prompt shares, before its own --input-tokens (vLLM's
    /// --random-prefix-len; with --dataset sonnet, its --sonnet-prefix-len). In a sweep, several
    /// (`--prefix-tokens 0,2048,8192`) sweep a context the server's prefix cache holds: the
    /// context grows, its prefill is paid once.
    #[arg(
        long,
        visible_alias = "random-prefix-len",
        value_name = "TOKENS",
        value_delimiter = ',',
        default_value = "0",
        hide_short_help = true
    )]
    pub prefix_tokens: Vec<u32>,
    /// Percentiles to report for TTFT, TPOT, ITL and E2EL.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "99",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub percentiles: Vec<f64>,
    /// Service-level objectives in ms for goodput, as `vllm bench serve`: "ttft:500 tpot:50
    /// e2el:2000" (AIPerf's time_to_first_token, inter_token_latency and request_latency too).
    #[arg(long, num_args = 1.., value_name = "KEY:MS", help_heading = "Output")]
    pub goodput: Vec<String>,
    /// After Ctrl-C or SIGTERM, seconds to wait for requests in flight before abandoning them
    /// (a second signal abandons them at once).
    #[arg(long, default_value_t = 10.0, help_heading = "Load", hide_short_help = true)]
    pub drain_timeout: f64,
}

/// Where the spec-decode counters are read: flags shared by `bench`, `sweep` and `accept`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Metrics scrape")]
pub struct ScrapeFlags {
    /// Metrics endpoint to scrape (repeatable; default: /metrics of each server measured; in a
    /// sweep, of the speculative arm).
    #[arg(long = "metrics-url", value_name = "URL")]
    pub metrics_urls: Vec<String>,
    /// Do not scrape /metrics at all.
    #[arg(long)]
    pub no_scrape: bool,
    /// Seconds between live scrapes during the run.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub scrape_interval: f64,
    #[command(flatten)]
    pub prometheus: PrometheusArgs,
}

/// The live dashboard during a run: flags shared by `bench`, `sweep` and `accept`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Dashboard")]
pub struct DashboardArgs {
    /// Serve the live dashboard during the run (and after it, until Ctrl-C).
    #[arg(long)]
    pub dashboard: bool,
    /// Port of the live dashboard (0 picks a free one); `--port`, as on serve, sim and demo;
    /// only with --dashboard [default: 8321]
    #[arg(long, visible_alias = "port", value_name = "PORT")]
    pub dashboard_port: Option<u16>,
}

/// Flags of `speclens bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Base URL of a server (repeatable: requests are spread across them).
    #[arg(long = "url", default_value = "http://127.0.0.1:8000", help_heading = "Target")]
    pub urls: Vec<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Most requests in flight at once (default: no limit).
    #[arg(long, help_heading = "Load")]
    pub concurrency: Option<u64>,
    /// Requests per second (default: all at once, limited by --concurrency).
    #[arg(long, help_heading = "Load")]
    pub request_rate: Option<f64>,
    /// How arrivals are spaced at --request-rate: exponential gaps (gamma with --burstiness) or
    /// equal ones.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Poisson, help_heading = "Load", hide_short_help = true)]
    pub arrival: ArrivalArg,
    /// Gamma shape of the inter-arrival times: 1 is Poisson, below 1 burstier, above smoother.
    #[arg(long, default_value_t = 1.0, help_heading = "Load", hide_short_help = true)]
    pub burstiness: f64,
    /// Requests in the measured window.
    #[arg(long, default_value_t = 200, help_heading = "Load")]
    pub num_prompts: u64,
    /// Send for this many seconds instead of a fixed number of prompts.
    #[arg(long, help_heading = "Load")]
    pub duration: Option<f64>,
    /// With --dataset mooncake: replay the trace this many times faster (2: each request at
    /// half its recorded offset).
    #[arg(long, default_value_t = 1.0, help_heading = "Load")]
    pub trace_speedup: f64,
    #[command(flatten)]
    pub data: DatasetFlags,
    /// Send every turn of a multi-turn question (MT-Bench / Spec-Bench `turns`, or a hf list
    /// column) as a chat, each with the earlier turns and the server's answers to them; one
    /// record per turn (needs --endpoint chat).
    #[arg(long, help_heading = "Workload", hide_short_help = true)]
    pub multi_turn: bool,
    /// Synthetic prompt length in tokens (mean).
    #[arg(long, default_value_t = 256, help_heading = "Workload")]
    pub input_tokens: u32,
    /// Output length in tokens (mean); the max_tokens of every request.
    #[arg(long, default_value_t = 128, help_heading = "Workload")]
    pub output_tokens: u32,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub scrape: ScrapeFlags,
    /// Results folder (default: speclens-results/<time>-<label>/).
    #[arg(long, help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Label for the run (folder name, reports).
    #[arg(long, default_value = "bench", help_heading = "Output")]
    pub label: String,
    /// Write the files but print no report.
    #[arg(long, hide = true)]
    pub quiet: bool,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
    /// Exit 1 when more than this fraction of the requests failed (1 never; a run where none
    /// succeeded always fails).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.5, help_heading = "CI gates")]
    pub max_error_rate: f64,
    /// Exit 3 when this holds of the saved result, e.g. "acceptance_length<2.5" or
    /// "p99_ttft_ms>500" (a `result.json` key, `spec_decode_` optional; repeatable; a figure
    /// the run lacks fails too).
    #[arg(long = "fail-if", value_name = "FIGURE<N", help_heading = "CI gates")]
    pub fail_if: Vec<String>,
}

/// Flags of `speclens accept`.
#[derive(Debug, Clone, Args)]
pub struct AcceptArgs {
    /// The speculative server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8000", help_heading = "Target")]
    pub url: String,
    /// Categories to measure (default: every category in the dataset).
    #[arg(long, num_args = 1.., help_heading = "Workload")]
    pub categories: Vec<String>,
    /// The prompts file's format (acceptance is measured per category of its prompts).
    #[arg(long, value_enum, default_value_t = DatasetArg::SpecBench, help_heading = "Workload")]
    pub dataset: DatasetArg,
    /// Spec-Bench `question.jsonl`, a JSONL of prompts with categories, or a Hugging Face file.
    #[arg(long, help_heading = "Workload")]
    pub dataset_path: PathBuf,
    #[command(flatten)]
    pub columns: ColumnArgs,
    /// Requests per category (each category's prompts are shuffled by --seed, then cycled to N).
    #[arg(long, default_value_t = 20, help_heading = "Workload")]
    pub requests_per_category: u64,
    /// Open-loop arrival rate, well below saturation so batch size does not confound E.
    #[arg(long, default_value_t = 4.0, help_heading = "Load")]
    pub request_rate: f64,
    /// Output length in tokens (the max_tokens of every request; a JSONL line may set its own).
    #[arg(long, default_value_t = 128, help_heading = "Workload")]
    pub output_tokens: u32,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub scrape: ScrapeFlags,
    /// Folder for `accept-<category>.json` (default: speclens-results/<time>-accept/).
    #[arg(long, help_heading = "Output")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
    /// Rows by served model instead of by category: with --model naming a base model and its
    /// adapters (sent in turn), each one's acceptance over every category's prompts.
    #[arg(long, help_heading = "Workload")]
    pub by_model: bool,
}

// From flags to plans: the only place that turns clap's types into the commands' own.

pub(super) fn invalid<T>(message: impl Into<String>) -> Result<T, CollectorError> {
    Err(CollectorError::InvalidArgument(message.into()))
}

/// A server's URL must be http:// or https:// with a host: "127.0.0.1:8000" alone would be read
/// as a scheme named 127.0.0.1.
pub(super) fn check_url(url: &str) -> Result<(), CollectorError> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => Ok(()),
        _ => invalid(format!(
            "{:?} is not an http:// or https:// URL: did you mean http://{}?",
            crate::net::redact_url(url),
            url.split("://").last().unwrap_or(url)
        )),
    }
}

impl TargetArgs {
    /// The target `urls` with these settings; headers are parsed here, once.
    pub fn target(&self, urls: Vec<String>) -> Result<Target, CollectorError> {
        if let Some(host) = &self.host {
            return invalid(format!(
                "--host {host}: speclens names a server by its whole URL, http://{host}:PORT (bench: --url; sweep: --spec-url, --base-url or --arm), where vllm bench serve takes --host and --port; --port here is the live dashboard's (--dashboard-port)"
            ));
        }
        let mut target = Target::new(urls);
        target.endpoint = match self.endpoint {
            EndpointArg::Chat => EndpointKind::Chat,
            EndpointArg::Completions => EndpointKind::Completions,
        };
        target.models = self.model.clone();
        target.stream = !self.no_stream;
        target.max_response_bytes = (self.max_response_mib as usize).saturating_mul(1 << 20);
        target.max_buffered_bytes = (self.max_buffered_mib as usize).saturating_mul(1 << 20);
        target.sglang_spec_details = self.sglang_spec_details;
        target.continuous_usage = match self.continuous_usage_stats {
            SwitchArg::Auto => None,
            SwitchArg::On => Some(true),
            SwitchArg::Off => Some(false),
        };
        target.engine = match self.engine {
            EngineArg::Auto => None,
            EngineArg::Vllm => Some(Engine::Vllm),
            EngineArg::Sglang => Some(Engine::Sglang),
            EngineArg::Trtllm => Some(Engine::Trtllm),
            EngineArg::Llamacpp => Some(Engine::LlamaCpp),
        };
        target.timeout = match seconds(self.timeout, 0.001) {
            Some(t) => t,
            None => return invalid("--timeout must be finite seconds in [0.001, 1e7]"),
        };
        if let Some(key) = &self.api_key {
            target.set_api_key(key)?;
        }
        for header in &self.headers {
            target.add_header(header)?;
        }
        for url in &target.urls {
            check_url(url)?;
        }
        if let Some(path) = &self.ca_cert {
            let pem = crate::files::read(path, crate::files::Kind::Certificate)
                .map_err(|why| CollectorError::InvalidArgument(format!("--ca-cert {}: {why}", path.display())))?;
            target.ca_cert_pem = Some(pem);
        }
        target.insecure = self.insecure;
        Ok(target)
    }
}

impl PrometheusArgs {
    /// The Prometheus API to read, when `--prometheus-url` is given.
    pub fn prometheus(&self) -> Result<Option<Prometheus>, CollectorError> {
        let Some(url) = &self.prometheus_url else {
            return Ok(None);
        };
        let settings = prometheus::Settings {
            url: url.clone(),
            selector: self.prometheus_selector.clone(),
            token: self.prometheus_token.clone(),
            user: self.prometheus_user.clone(),
            password: self.prometheus_password.clone(),
            ca_cert: self.prometheus_ca_cert.clone(),
            timeout_s: self.prometheus_timeout,
            wait_s: self.prometheus_wait,
            rate_window_s: self.prometheus_rate_window,
        };
        Prometheus::new(&settings).map(Some)
    }
}

impl ScrapeFlags {
    pub fn scrape(&self) -> Result<Scrape, CollectorError> {
        let Some(interval) = seconds(self.scrape_interval, 0.05) else {
            return invalid("--scrape-interval must be finite seconds in [0.05, 1e7]");
        };
        Ok(Scrape {
            metrics_urls: self.metrics_urls.clone(),
            enabled: !self.no_scrape,
            interval,
            prometheus: self.prometheus.prometheus()?,
        })
    }
}

impl WorkloadArgs {
    /// The workload of `dataset` with these settings.
    pub fn workload(
        &self,
        dataset: Dataset,
        categories: Vec<String>,
        input_tokens: u32,
        output_tokens: u32,
    ) -> Workload {
        Workload {
            dataset,
            categories,
            input_tokens,
            input_tokens_stddev: self.input_tokens_stddev,
            output_tokens,
            output_tokens_stddev: self.output_tokens_stddev,
            range_ratio: self.range_ratio,
            prefix_tokens: self.prefix_tokens.iter().copied().min().unwrap_or(0),
            ignore_eos: self.ignore_eos,
            temperature: self.temperature,
            seed: self.seed,
            multi_turn: false,
            max_dataset_bytes: self.max_dataset_mib.saturating_mul(1 << 20),
        }
    }

    /// One `--prefix-tokens` length: several are a sweep's context axis.
    pub(super) fn one_prefix(&self) -> Result<(), CollectorError> {
        if speclens_shared::sweep::contexts::distinct_lengths(&self.prefix_tokens).len() > 1 {
            return invalid("several --prefix-tokens lengths are a context axis: give them to `speclens sweep`");
        }
        Ok(())
    }

    /// The `--goodput` objectives, when given.
    pub(super) fn goodput(&self) -> Result<Option<Slo>, CollectorError> {
        if self.goodput.is_empty() {
            return Ok(None);
        }
        Slo::parse(&self.goodput)
            .map(Some)
            .map_err(|e| CollectorError::InvalidArgument(e.to_string()))
    }

    fn drain(&self) -> Result<Duration, CollectorError> {
        seconds(self.drain_timeout, 0.0)
            .map_or_else(|| invalid("--drain-timeout must be finite seconds in [0, 1e7]"), Ok)
    }

    /// A closed loop of `prompts` requests within `concurrency`, with this warm-up and drain.
    pub fn closed_loop(&self, concurrency: Option<u64>, prompts: u64) -> Result<Load, CollectorError> {
        Ok(Load {
            warmup: self.warmup,
            drain: self.drain()?,
            ..Load::closed_loop(concurrency, prompts)
        })
    }
}

/// The dashboard's port unless one is given: `serve`'s, `demo`'s and a run's `--dashboard`.
pub const DASHBOARD_PORT: u16 = 8321;

impl DashboardArgs {
    /// The live dashboard's port, when there is one; a port given without --dashboard is
    /// refused (a vLLM user's `--port 8000` meant the server's, and nothing would use it).
    pub(super) fn port(&self) -> Result<Option<u16>, CollectorError> {
        match (self.dashboard, self.dashboard_port) {
            (true, port) => Ok(Some(port.unwrap_or(DASHBOARD_PORT))),
            (false, None) => Ok(None),
            (false, Some(port)) => invalid(format!(
                "--port {port} is the live dashboard's port (--dashboard-port) and there is no --dashboard: add --dashboard, or, for the server's port, name the server by its URL (bench: --url http://HOST:{port}; sweep: --spec-url, --base-url or --arm)"
            )),
        }
    }
}

impl BenchArgs {
    /// The run these flags ask for.
    pub fn plan(&self) -> Result<bench::Plan, CollectorError> {
        let stop = match self.duration {
            None => Stop::Count,
            Some(d) => match seconds(d, 0.0).filter(|d| !d.is_zero()) {
                Some(d) => Stop::Until(d),
                None => return invalid("--duration must be a number of seconds in (0, 1e7]"),
            },
        };
        let prompts = match stop {
            Stop::Count => self.num_prompts,
            Stop::Until(_) => self.num_prompts.max(1),
        };
        self.workload.one_prefix()?;
        let plan = bench::Plan {
            target: self.target.target(self.urls.clone())?,
            workload: Workload {
                multi_turn: self.multi_turn,
                ..self.workload.workload(
                    self.data.dataset()?,
                    self.data.categories.clone(),
                    self.input_tokens,
                    self.output_tokens,
                )
            },
            load: Load {
                request_rate: self.request_rate,
                arrival: match self.arrival {
                    ArrivalArg::Poisson => Arrival::Poisson,
                    ArrivalArg::Constant => Arrival::Constant,
                },
                burstiness: self.burstiness,
                stop,
                fixed_offsets_s: self.trace_schedule(prompts)?,
                ..self.workload.closed_loop(self.concurrency, prompts)?
            },
            scrape: self.scrape.scrape()?,
            output: Output {
                dir: self.out.clone(),
                label: self.label.clone(),
                percentiles: self.workload.percentiles.clone(),
                goodput: self.workload.goodput()?,
                print: !self.quiet,
            },
            checks: self.checks()?,
            dashboard_port: self.dashboard.port()?,
        };
        plan.check()?;
        Ok(plan)
    }
}

impl BenchArgs {
    /// A trace's fixed schedule for the window's `prompts` requests (after the warm-up's).
    fn trace_schedule(&self, prompts: u64) -> Result<Option<std::sync::Arc<[f64]>>, CollectorError> {
        let Dataset::Mooncake(path, _) = self.data.dataset()? else {
            if self.trace_speedup != 1.0 {
                return invalid("--trace-speedup scales a trace's clock: it needs --dataset mooncake");
            }
            return Ok(None);
        };
        if !(self.trace_speedup.is_finite() && self.trace_speedup > 0.0) {
            return invalid(format!("--trace-speedup must be > 0, got {}", self.trace_speedup));
        }
        let trace = crate::bench::trace::read(&path, self.workload.max_dataset_mib.saturating_mul(1 << 20))?;
        let offsets = crate::bench::trace::offsets_s(
            &trace,
            self.workload.warmup as usize,
            prompts as usize,
            self.trace_speedup,
        );
        crate::bench::trace::check_replay(&offsets, self.trace_speedup)?;
        Ok(Some(offsets.into()))
    }

    /// The exit-code checks: `--max-error-rate` and the `--fail-if` gates, parsed now so a
    /// malformed gate stops the command before any request.
    fn checks(&self) -> Result<bench::Checks, CollectorError> {
        if !(0.0..=1.0).contains(&self.max_error_rate) {
            return invalid(format!(
                "--max-error-rate must be a fraction in [0, 1], got {}",
                self.max_error_rate
            ));
        }
        let gates = self
            .fail_if
            .iter()
            .map(|g| Gate::parse(g).map_err(|e| CollectorError::InvalidArgument(e.to_string())))
            .collect::<Result<_, _>>()?;
        Ok(bench::Checks {
            max_error_rate: self.max_error_rate,
            gates,
        })
    }
}

impl AcceptArgs {
    /// The accept matrix these flags ask for.
    pub fn plan(&self) -> Result<accept::Plan, CollectorError> {
        if !(self.request_rate.is_finite() && self.request_rate > 0.0) {
            return invalid("--request-rate must be > 0");
        }
        if !self.workload.goodput.is_empty() {
            return invalid("--goodput is counted by bench and sweep; accept measures acceptance by category");
        }
        if matches!(
            self.dataset,
            DatasetArg::Synthetic | DatasetArg::Sharegpt | DatasetArg::Sonnet | DatasetArg::Mooncake
        ) {
            return invalid("accept measures a dataset's categories: --dataset spec-bench, speed-bench or jsonl");
        }
        let dataset = self.dataset.with_path(Some(self.dataset_path.clone()), &self.columns)?;
        self.workload.one_prefix()?;
        let run = bench::Plan {
            target: self.target.target(vec![self.url.clone()])?,
            workload: self.workload.workload(dataset, Vec::new(), 256, self.output_tokens),
            load: Load {
                request_rate: Some(self.request_rate),
                ..self.workload.closed_loop(None, 1)?
            },
            scrape: self.scrape.scrape()?,
            output: Output {
                dir: None,
                label: "bench".into(),
                percentiles: self.workload.percentiles.clone(),
                goodput: self.workload.goodput()?,
                print: false,
            },
            checks: bench::Checks::default(),
            dashboard_port: None,
        };
        let plan = accept::Plan {
            categories: self.categories.clone(),
            requests_per_category: self.requests_per_category,
            run,
            out: self.out.clone(),
            dashboard_port: self.dashboard.port()?,
            by_model: self.by_model,
        };
        plan.check()?;
        Ok(plan)
    }
}

/// The roofline ridge T* (token positions) and the GPU's name from `--gpu` and `--ridge` (which
/// overrides it), as `model` and `sweep` take them.
pub(super) fn ridge_of(gpu: &str, ridge: Option<f64>) -> Result<(f64, String), CollectorError> {
    let invalid = |m: String| CollectorError::InvalidArgument(m);
    match ridge {
        Some(t) if t.is_finite() && t > 0.0 => Ok((t, "custom ridge".to_string())),
        Some(t) => Err(invalid(format!("--ridge must be > 0, got {t}"))),
        None => speclens_shared::model::speedup::gpu_preset(gpu)
            .map(|g| (g.ridge_tokens, g.name.to_string()))
            .ok_or_else(|| invalid(format!("unknown --gpu {gpu:?}: use h100, h200, a100 or --ridge"))),
    }
}
