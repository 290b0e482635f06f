//! Command-line interface: raw arguments parsed by clap, turned into the plans the commands run
//! (`bench::Plan`, `sweep::Plan`, `accept::Plan`). No other module sees clap's argument types.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use speclens_shared::model::Costs;
use speclens_shared::sweep::Arm;

use crate::bench::client::EndpointKind;
use crate::bench::plan::{seconds, Arrival, Load, Output, Scrape, Stop, Target};
use crate::bench::prometheus::{self, Prometheus};
use crate::bench::workload::{Dataset, DatasetKind, Workload};
use crate::error::CollectorError;
use crate::sim::{
    AcceptanceProfile, EngineConfig, Faults, PayloadShape, PerRequestMetrics, SimSettings, StepModel, DEFAULT_ALPHA,
    DEFAULT_CATEGORY_FACTORS,
};
use crate::{accept, bench, report, sweep};

/// Measure speculative decoding: acceptance, where it stops paying, and what the model predicts.
#[derive(Debug, Parser)]
#[command(name = "speclens", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the dashboard (the in-page what-if model) on 127.0.0.1.
    Serve(ServeArgs),
    /// Run a simulated vLLM-compatible server with speculative decoding (no GPU needed).
    Sim(Box<SimArgs>),
    /// Benchmark OpenAI-compatible servers and collect speculative-decoding acceptance.
    Bench(Box<BenchArgs>),
    /// Print a server's spec-decode counters and derived rates (once, or --watch).
    Scrape(ScrapeArgs),
    /// The speedup model's table (no server needed): E(α, k), S(1), S(∞), break-even batch.
    Model(ModelArgs),
    /// The same concurrency sweep against a speculative and a plain server: where speculation
    /// stops paying.
    Sweep(Box<SweepArgs>),
    /// Tabulate the result files in a folder (ours and `vllm bench serve`'s).
    Read(ReadArgs),
    /// Write a static report: one self-contained HTML file (or a folder) with the dashboard's
    /// views of runs, sweeps and accept matrices and a live what-if model.
    Report(ReportArgs),
    /// Mean acceptance length (and rate, per-position rates) per workload category.
    Accept(Box<AcceptArgs>),
    /// The whole product on simulated engines: acceptance, sweep, model, dashboard.
    Demo(DemoArgs),
}

/// Flags of `speclens serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to bind. Anything but a loopback address requires an access token.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to bind (0 picks a free one).
    #[arg(long, default_value_t = 8321)]
    pub port: u16,
    /// Access token required by every page and API request. Generated when binding a
    /// non-loopback address without one.
    #[arg(long, env = "SPECLENS_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Folder holding the built dashboard (index.html, .js, .wasm).
    #[arg(long, env = "SPECLENS_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// Page state to open (URL fragment, set by the demo).
    #[arg(skip)]
    pub fragment: Option<String>,
    /// Folder of past runs the page can open.
    #[arg(long, default_value = "speclens-results")]
    pub results_dir: PathBuf,
}

/// Flags of `speclens demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Dashboard port (0 picks a free one).
    #[arg(long, default_value_t = 8321)]
    pub port: u16,
    #[arg(long, env = "SPECLENS_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// Results folder (default: speclens-results/<time>-demo/).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Flags of `speclens sim`.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Address to bind. Anything but a loopback address requires --api-key.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to bind (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Model name served (`/v1/models`, the `model_name` label).
    #[arg(long, default_value = "speclens/sim-8b")]
    pub model: String,
    /// Require `Authorization: Bearer <key>` on /v1 endpoints, as vLLM's --api-key.
    #[arg(long, env = "SPECLENS_SIM_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Data-parallel engines (one `engine` label set each); requests are spread across them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub engines: u32,
    /// Sequences running at once per engine; more wait.
    #[arg(long, default_value_t = 256)]
    pub max_num_seqs: usize,
    /// Longest prompt + output, in tokens.
    #[arg(long, default_value_t = 8192)]
    pub max_model_len: u32,
    /// Draft tokens proposed per step (0: a plain server, the "base" arm).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=16))]
    pub num_spec_tokens: u32,
    /// Geometric acceptance: each draft accepted with probability α given the earlier ones.
    #[arg(long, conflicts_with_all = ["acceptance_rates", "acceptance_length"])]
    pub alpha: Option<f64>,
    /// Unconditional per-position acceptance rates, position 1 first (as vLLM reports them).
    #[arg(long, value_delimiter = ',', conflicts_with = "acceptance_length")]
    pub acceptance_rates: Option<Vec<f64>>,
    /// Target mean acceptance length E (bonus included); geometric α implied.
    #[arg(long)]
    pub acceptance_length: Option<f64>,
    /// How much sampling temperature lowers acceptance: each conditional rate is multiplied by
    /// max(0, 1 − s·T).
    #[arg(long, default_value_t = 0.15)]
    pub temperature_sensitivity: f64,
    /// Acceptance multiplier for a prompt category, NAME=FACTOR (repeatable); categories are
    /// recognised from the prompt text. Defaults: summarization 1.15, coding 1.05, qa 1.0,
    /// math 0.95, writing 0.85, translation 0.8.
    #[arg(long = "category-factor", value_name = "NAME=FACTOR")]
    pub category_factors: Vec<String>,
    /// Time of one decode step at small batch, in milliseconds (bandwidth-bound).
    #[arg(long, default_value_t = 12.0)]
    pub step_ms: f64,
    /// Roofline ridge T* in token positions (H100 SXM bf16: 295).
    #[arg(long, default_value_t = 295.0)]
    pub ridge: f64,
    /// Draft cost c: a draft step's cost as a fraction of a target step (n-gram 0, 1B drafter 0.165).
    #[arg(long, default_value_t = 0.0)]
    pub draft_cost: f64,
    /// Extra time per draft token per sequence per step, in microseconds (costs the speedup
    /// model does not charge).
    #[arg(long, default_value_t = 0.0)]
    pub draft_overhead_us: f64,
    /// Multiplies every step time; 0 runs without any delay (tests).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Mean output length when a request does not set ignore_eos (EOS drawn geometrically).
    #[arg(long, default_value_t = 256)]
    pub mean_output_tokens: u32,
    /// Per-request spec-decode stats in responses.
    #[arg(long, alias = "per-request-spec-decode-metrics", value_enum, default_value_t = PerRequestMetrics::Summary)]
    pub per_request_metrics: PerRequestMetrics,
    /// Which engine's payload shape the per-request stats take.
    #[arg(long, value_enum, default_value_t = PayloadShape::Vllm)]
    pub payload: PayloadShape,
    /// Seed for acceptance draws, output lengths and faults.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub faults: FaultArgs,
}

/// Fault injection for tests of everything downstream.
#[derive(Debug, Clone, Default, Args)]
pub struct FaultArgs {
    /// Answer this fraction of completion requests with HTTP 500.
    #[arg(long, default_value_t = 0.0)]
    pub fail_rate: f64,
    /// Reset the connection mid-stream on this fraction of requests.
    #[arg(long, default_value_t = 0.0)]
    pub reset_rate: f64,
    /// End the SSE stream early (no finish chunk, no `[DONE]`) on this fraction of requests.
    #[arg(long, default_value_t = 0.0)]
    pub truncate_rate: f64,
    /// Delay the first token of this fraction of requests by --stall-ms.
    #[arg(long, default_value_t = 0.0)]
    pub stall_rate: f64,
    #[arg(long, default_value_t = 2000)]
    pub stall_ms: u64,
    /// Never answer this fraction of requests (the client must time out).
    #[arg(long, default_value_t = 0.0)]
    pub hang_rate: f64,
    /// Answer this fraction of requests with an oversized body (--oversized-kib of padding).
    #[arg(long, default_value_t = 0.0)]
    pub oversized_rate: f64,
    #[arg(long, default_value_t = 128 * 1024)]
    pub oversized_kib: u64,
    /// `/metrics` answers HTTP 503 from the start.
    #[arg(long)]
    pub metrics_down: bool,
    /// `/metrics` answers HTTP 503 once this many requests have finished.
    #[arg(long)]
    pub metrics_down_after: Option<u64>,
    /// `/metrics` answers HTTP 503 until this many requests have finished.
    #[arg(long)]
    pub metrics_down_until: Option<u64>,
    /// Simulate a restart (all counters back to zero) before the first request that arrives
    /// after this many have finished.
    #[arg(long)]
    pub reset_counters_after: Option<u64>,
    /// Write `/metrics` as in multiprocess mode (no `_created` gauges).
    #[arg(long)]
    pub multiproc_exposition: bool,
    /// Add malformed lines to `/metrics`.
    #[arg(long)]
    pub malformed_metrics: bool,
}

/// Reading the spec-decode counters through a Prometheus server (fleets of replicas).
#[derive(Debug, Clone, Default, Args)]
pub struct PrometheusArgs {
    /// Prometheus HTTP API base URL (Thanos, Mimir and VictoriaMetrics answer the same API),
    /// e.g. http://prometheus:9090. Adds the fleet path beside the direct /metrics scrapes.
    #[arg(long)]
    pub prometheus_url: Option<String>,
    /// Series selector narrowing the counters, e.g. '{job="vllm",model_name="Qwen/Qwen3-8B"}'.
    #[arg(long, default_value = "")]
    pub prometheus_selector: String,
    /// Bearer token for the Prometheus API; never written anywhere.
    #[arg(long, env = "SPECLENS_PROMETHEUS_TOKEN", hide_env_values = true)]
    pub prometheus_token: Option<String>,
    /// Basic-auth user for the Prometheus API.
    #[arg(long, env = "SPECLENS_PROMETHEUS_USER")]
    pub prometheus_user: Option<String>,
    /// Basic-auth password for the Prometheus API; never written anywhere.
    #[arg(long, env = "SPECLENS_PROMETHEUS_PASSWORD", hide_env_values = true)]
    pub prometheus_password: Option<String>,
    /// PEM file of a CA to trust for an https:// Prometheus (besides the system's roots).
    #[arg(long)]
    pub prometheus_ca_cert: Option<std::path::PathBuf>,
    /// Seconds per Prometheus API request.
    #[arg(long, default_value_t = 10.0)]
    pub prometheus_timeout: f64,
    /// Seconds to wait after the run for Prometheus to store a sample past the window's end
    /// (about one scrape interval).
    #[arg(long, default_value_t = 60.0)]
    pub prometheus_wait: f64,
    /// Range of rate() for the live timeline, in seconds (at least two scrape intervals).
    #[arg(long, default_value_t = 60.0)]
    pub prometheus_rate_window: f64,
}

/// How to reach the servers under test: flags shared by `bench`, `sweep` and `accept`.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Which OpenAI endpoint to load.
    #[arg(long, value_enum, default_value_t = EndpointKind::Chat)]
    pub endpoint: EndpointKind,
    /// Model to request (default: the first one the server lists in /v1/models).
    #[arg(long)]
    pub model: Option<String>,
    /// Bearer token for the servers; never written to any file, log or report.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra request header, "Name: value" (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Seconds before a request is abandoned as timed out.
    #[arg(long, default_value_t = 600.0)]
    pub timeout: f64,
    /// Ask for whole responses instead of SSE streams (no TTFT/ITL then; lighter on the client).
    #[arg(long)]
    pub no_stream: bool,
    /// A response larger than this many MiB is abandoned as a bad response.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub max_response_mib: u64,
    /// Ask SGLang servers for per-request stats (`return_spec_tokens_details`).
    #[arg(long)]
    pub sglang_spec_details: bool,
}

/// The requests' shape beyond their lengths: flags shared by `bench`, `sweep` and `accept`.
#[derive(Debug, Clone, Args)]
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
    #[arg(long)]
    pub ignore_eos: bool,
    /// Standard deviation of the synthetic prompt length, in tokens.
    #[arg(long, default_value_t = 0.0)]
    pub input_tokens_stddev: f64,
    /// Standard deviation of the output length, in tokens.
    #[arg(long, default_value_t = 0.0)]
    pub output_tokens_stddev: f64,
    /// Percentiles to report for TTFT, TPOT, ITL and E2EL.
    #[arg(long, value_delimiter = ',', default_value = "99")]
    pub percentiles: Vec<f64>,
    /// After Ctrl-C, seconds to wait for requests in flight before abandoning them.
    #[arg(long, default_value_t = 10.0)]
    pub drain_timeout: f64,
}

/// Where the spec-decode counters are read: flags shared by `bench`, `sweep` and `accept`.
#[derive(Debug, Clone, Args)]
pub struct ScrapeFlags {
    /// Metrics endpoint to scrape (repeatable; default: /metrics of each server measured; in a
    /// sweep, of the speculative arm).
    #[arg(long = "metrics-url")]
    pub metrics_urls: Vec<String>,
    /// Do not scrape /metrics at all.
    #[arg(long)]
    pub no_scrape: bool,
    /// Seconds between live scrapes during the run.
    #[arg(long, default_value_t = 1.0)]
    pub scrape_interval: f64,
    #[command(flatten)]
    pub prometheus: PrometheusArgs,
}

/// The live dashboard during a run: flags shared by `bench`, `sweep` and `accept`.
#[derive(Debug, Clone, Args)]
pub struct DashboardArgs {
    /// Serve the live dashboard during the run (and after it, until Ctrl-C).
    #[arg(long)]
    pub dashboard: bool,
    /// Port of the live dashboard (0 picks a free one).
    #[arg(long, default_value_t = 8321)]
    pub dashboard_port: u16,
}

/// Flags of `speclens bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Base URL of a server (repeatable: requests are spread across them).
    #[arg(long = "url", default_value = "http://127.0.0.1:8000")]
    pub urls: Vec<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Most requests in flight at once (default: no limit).
    #[arg(long)]
    pub concurrency: Option<u64>,
    /// Requests per second (default: all at once, limited by --concurrency).
    #[arg(long)]
    pub request_rate: Option<f64>,
    #[arg(long, value_enum, default_value_t = Arrival::Poisson)]
    pub arrival: Arrival,
    /// Gamma shape of the inter-arrival times: 1 is Poisson, below 1 burstier, above smoother.
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    /// Requests in the measured window.
    #[arg(long, default_value_t = 200)]
    pub num_prompts: u64,
    /// Send for this many seconds instead of a fixed number of prompts.
    #[arg(long)]
    pub duration: Option<f64>,
    #[arg(long, value_enum, default_value_t = DatasetKind::Synthetic)]
    pub dataset: DatasetKind,
    /// File for --dataset spec-bench or jsonl.
    #[arg(long)]
    pub dataset_path: Option<PathBuf>,
    /// Only prompts of these categories (repeatable).
    #[arg(long = "category")]
    pub categories: Vec<String>,
    /// Synthetic prompt length in tokens (mean).
    #[arg(long, default_value_t = 256)]
    pub input_tokens: u32,
    /// Output length in tokens (mean); the max_tokens of every request.
    #[arg(long, default_value_t = 128)]
    pub output_tokens: u32,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub scrape: ScrapeFlags,
    /// Results folder (default: speclens-results/<time>-<label>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Label for the run (folder name, reports).
    #[arg(long, default_value = "bench")]
    pub label: String,
    /// Write the files but print no report.
    #[arg(long, hide = true)]
    pub quiet: bool,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

/// Which arm of a sweep to run alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArmArg {
    Spec,
    Base,
}

impl From<&ArmArg> for speclens_shared::sweep::Arm {
    fn from(arm: &ArmArg) -> Self {
        match arm {
            ArmArg::Spec => speclens_shared::sweep::Arm::Spec,
            ArmArg::Base => speclens_shared::sweep::Arm::Base,
        }
    }
}

/// Flags of `speclens sweep`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// The speculative server's base URL.
    #[arg(long)]
    pub spec_url: Option<String>,
    /// The plain (non-speculative) server's base URL.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Run one arm only, against --url.
    #[arg(long, value_enum, requires = "url")]
    pub arm: Option<ArmArg>,
    /// The server's base URL, with --arm.
    #[arg(long)]
    pub url: Option<String>,
    /// Concurrency levels to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,128,256")]
    pub concurrency: Vec<u64>,
    /// Requests per concurrency slot at each point (steady state needs several waves).
    #[arg(long, default_value_t = 4)]
    pub requests_per_slot: u64,
    /// At least this many requests per point.
    #[arg(long, default_value_t = 16)]
    pub min_requests: u64,
    /// Synthetic prompt length in tokens (mean).
    #[arg(long, default_value_t = 128)]
    pub input_tokens: u32,
    /// Output length in tokens (mean); the max_tokens of every request.
    #[arg(long, default_value_t = 128)]
    pub output_tokens: u32,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub scrape: ScrapeFlags,
    /// Draft cost c for the model's prediction.
    #[arg(long, default_value_t = 0.0)]
    pub draft_cost: f64,
    /// Ridge T* for the model's prediction (token positions; H100 SXM bf16: 295).
    #[arg(long, default_value_t = 295.0)]
    pub ridge: f64,
    /// Folder for `spec-c<N>.json` / `base-c<N>.json` (default: speclens-results/<time>-sweep/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the plan and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

/// Flags of `speclens read`.
#[derive(Debug, Clone, Args)]
pub struct ReadArgs {
    /// Folder of result files (`*.json`, and `result.json` one level down).
    pub dir: std::path::PathBuf,
}

/// Flags of `speclens report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Run folders, result JSON files (speclens's or `vllm bench serve`'s), sweep or accept
    /// folders, or a results folder holding many of them.
    #[arg(required = true)]
    pub inputs: Vec<std::path::PathBuf>,
    /// The report file (opens from file://, an attachment or any static host).
    #[arg(short = 'o', long, default_value = "speclens-report.html")]
    pub output: std::path::PathBuf,
    /// Write a folder instead (index.html with the data, and assets/) for a static web host.
    #[arg(long, conflicts_with = "output")]
    pub dir: Option<std::path::PathBuf>,
    /// The page title.
    #[arg(long, default_value = "speclens report")]
    pub title: String,
    /// Folder holding the built dashboard (default: the one built into this binary).
    #[arg(long, env = "SPECLENS_WEB_DIR")]
    pub web_dir: Option<std::path::PathBuf>,
}

/// Flags of `speclens scrape`.
#[derive(Debug, Clone, Args)]
pub struct ScrapeArgs {
    /// A server's base URL or its full /metrics URL.
    pub url: String,
    /// Scrape again every --interval seconds and print the rates between scrapes.
    #[arg(long)]
    pub watch: bool,
    #[arg(long, default_value_t = 5.0)]
    pub interval: f64,
}

/// Draft proposers with a known cost fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProposerArg {
    /// Prompt-lookup n-gram, c = 0.
    Ngram,
    /// A 1B draft model for an 8B target, c = 0.165.
    #[value(name = "1b-draft")]
    Drafter1b,
}

/// Flags of `speclens model`.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Per-token acceptance values (table rows).
    #[arg(long, value_delimiter = ',', default_value = "0.4,0.6,0.8")]
    pub alpha: Vec<f64>,
    /// Draft lengths k (table columns).
    #[arg(long, alias = "k", value_delimiter = ',', default_value = "1,2,3,4,5")]
    pub kappa: Vec<u32>,
    #[arg(long, value_enum, default_value_t = ProposerArg::Ngram)]
    pub proposer: ProposerArg,
    /// Draft cost fraction c (overrides --proposer).
    #[arg(long)]
    pub draft_cost: Option<f64>,
    /// GPU preset for the roofline ridge: h100, h200, a100.
    #[arg(long, default_value = "h100")]
    pub gpu: String,
    /// Ridge T* in token positions (overrides --gpu).
    #[arg(long)]
    pub ridge: Option<f64>,
    /// A measured mean acceptance length E (bonus included).
    #[arg(long = "measured-E", alias = "measured-e")]
    pub measured_e: Option<f64>,
    /// k of the measured E (default: the last --kappa).
    #[arg(long)]
    pub measured_k: Option<u32>,
    /// Measured draft tokens per draft (draft tokens ÷ drafts) with --measured-E: n-gram and
    /// suffix proposers draft fewer than k tokens when their match is short, and the costs
    /// charge what was drafted (default: full k-token drafts).
    #[arg(long)]
    pub draft_tokens: Option<f64>,
    /// Measured unconditional per-position acceptance rates (position 1 first): best k.
    #[arg(long, value_delimiter = ',')]
    pub rates: Option<Vec<f64>>,
    /// Batch size at which the best k is chosen.
    #[arg(long, default_value_t = 64.0)]
    pub batch: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `speclens accept`.
#[derive(Debug, Clone, Args)]
pub struct AcceptArgs {
    /// The speculative server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    pub url: String,
    /// Categories to measure (default: every category in the dataset).
    #[arg(long, num_args = 1..)]
    pub categories: Vec<String>,
    #[arg(long, value_enum, default_value_t = DatasetKind::SpecBench)]
    pub dataset: DatasetKind,
    /// Spec-Bench `question.jsonl`, or a JSONL of prompts with categories.
    #[arg(long)]
    pub dataset_path: PathBuf,
    /// Requests per category (each category's prompts are shuffled by --seed, then cycled to N).
    #[arg(long, default_value_t = 20)]
    pub requests_per_category: u64,
    /// Open-loop arrival rate, well below saturation so batch size does not confound E.
    #[arg(long, default_value_t = 4.0)]
    pub request_rate: f64,
    /// Output length in tokens (the max_tokens of every request; a JSONL line may set its own).
    #[arg(long, default_value_t = 128)]
    pub output_tokens: u32,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub scrape: ScrapeFlags,
    /// Folder for `accept-<category>.json` (default: speclens-results/<time>-accept/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

// From flags to plans: the only place that turns clap's types into the commands' own.

fn invalid<T>(message: impl Into<String>) -> Result<T, CollectorError> {
    Err(CollectorError::InvalidArgument(message.into()))
}

impl TargetArgs {
    /// The target `urls` with these settings; headers are parsed here, once.
    pub fn target(&self, urls: Vec<String>) -> Result<Target, CollectorError> {
        let mut target = Target::new(urls);
        target.endpoint = self.endpoint;
        target.model = self.model.clone();
        target.stream = !self.no_stream;
        target.max_response_bytes = (self.max_response_mib as usize).saturating_mul(1 << 20);
        target.sglang_spec_details = self.sglang_spec_details;
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
            ignore_eos: self.ignore_eos,
            temperature: self.temperature,
            seed: self.seed,
        }
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

impl DashboardArgs {
    fn port(&self) -> Option<u16> {
        self.dashboard.then_some(self.dashboard_port)
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
        let plan = bench::Plan {
            target: self.target.target(self.urls.clone())?,
            workload: self.workload.workload(
                Dataset::new(self.dataset, self.dataset_path.clone())?,
                self.categories.clone(),
                self.input_tokens,
                self.output_tokens,
            ),
            load: Load {
                request_rate: self.request_rate,
                arrival: self.arrival,
                burstiness: self.burstiness,
                stop,
                ..self.workload.closed_loop(self.concurrency, prompts)?
            },
            scrape: self.scrape.scrape()?,
            output: Output {
                dir: self.out.clone(),
                label: self.label.clone(),
                percentiles: self.workload.percentiles.clone(),
                print: !self.quiet,
            },
            dashboard_port: self.dashboard.port(),
        };
        plan.check()?;
        Ok(plan)
    }
}

impl SweepArgs {
    /// The sweep these flags ask for.
    pub fn plan(&self) -> Result<sweep::Plan, CollectorError> {
        let arms: Vec<(Arm, String)> = match (&self.arm, &self.url, &self.spec_url, &self.base_url) {
            (Some(arm), Some(url), None, None) => vec![(arm.into(), url.clone())],
            (None, None, Some(spec), Some(base)) => vec![(Arm::Spec, spec.clone()), (Arm::Base, base.clone())],
            _ => return invalid("give --spec-url and --base-url, or --arm spec|base with --url"),
        };
        let point = bench::Plan {
            target: self.target.target(Vec::new())?,
            workload: self
                .workload
                .workload(Dataset::Synthetic, Vec::new(), self.input_tokens, self.output_tokens),
            load: self.workload.closed_loop(None, 1)?,
            scrape: self.scrape.scrape()?,
            output: Output {
                dir: None,
                label: String::new(),
                percentiles: self.workload.percentiles.clone(),
                print: false,
            },
            dashboard_port: None,
        };
        let plan = sweep::Plan {
            arms,
            levels: self.concurrency.clone(),
            requests_per_slot: self.requests_per_slot,
            min_requests: self.min_requests,
            point,
            costs: Costs {
                draft_cost: self.draft_cost,
                ridge_tokens: self.ridge,
            },
            out: self.out.clone(),
            dry_run: self.dry_run,
            dashboard_port: self.dashboard.port(),
        };
        plan.check()?;
        Ok(plan)
    }
}

impl AcceptArgs {
    /// The accept matrix these flags ask for.
    pub fn plan(&self) -> Result<accept::Plan, CollectorError> {
        if !(self.request_rate.is_finite() && self.request_rate > 0.0) {
            return invalid("--request-rate must be > 0");
        }
        let dataset = Dataset::new(self.dataset, Some(self.dataset_path.clone()))?;
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
                print: false,
            },
            dashboard_port: None,
        };
        Ok(accept::Plan {
            categories: self.categories.clone(),
            requests_per_category: self.requests_per_category,
            run,
            out: self.out.clone(),
            dashboard_port: self.dashboard.port(),
        })
    }
}

/// The bench plan of a full argv (`["speclens", "bench", …]`), for tests.
pub fn bench_plan_of(argv: &[&str]) -> Result<bench::Plan, CollectorError> {
    match Cli::try_parse_from(argv)
        .map_err(|e| CollectorError::InvalidArgument(e.to_string()))?
        .command
    {
        Command::Bench(args) => args.plan(),
        _ => invalid("not a bench command line"),
    }
}

fn check_fraction(name: &str, v: f64) -> Result<(), CollectorError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(CollectorError::InvalidArgument(format!(
            "--{name} must be a fraction in [0, 1], got {v}"
        )))
    }
}

impl SimArgs {
    /// The simulated server these flags ask for.
    pub fn settings(self) -> Result<SimSettings, CollectorError> {
        let args = self;
        let invalid = |m: String| CollectorError::InvalidArgument(m);
        if !args.host.is_loopback() && args.api_key.is_none() {
            return Err(invalid(format!(
                "binding {} exposes the server beyond this machine: give --api-key (clients then send it as a bearer token)",
                args.host
            )));
        }
        let k = args.num_spec_tokens;
        let profile = match (k, &args.alpha, &args.acceptance_rates, &args.acceptance_length) {
            (0, None, None, None) => None,
            (0, ..) => return Err(invalid("an acceptance profile needs --num-spec-tokens ≥ 1".into())),
            (_, Some(alpha), _, _) => Some(AcceptanceProfile::geometric(*alpha, k).map_err(invalid)?),
            (_, _, Some(rates), _) => {
                if rates.len() < k as usize {
                    return Err(invalid(format!(
                        "--acceptance-rates gives {} positions but --num-spec-tokens is {k}",
                        rates.len()
                    )));
                }
                Some(AcceptanceProfile::from_rates(&rates[..k as usize]).map_err(invalid)?)
            }
            (_, _, _, Some(e)) => {
                if !(1.0..=f64::from(k) + 1.0).contains(e) {
                    return Err(invalid(format!(
                        "--acceptance-length must be in [1, k + 1] = [1, {}], got {e}",
                        k + 1
                    )));
                }
                let alpha = speclens_shared::model::implied_alpha(*e, k);
                Some(AcceptanceProfile::geometric(alpha, k).map_err(invalid)?)
            }
            (_, None, None, None) => Some(AcceptanceProfile::geometric(DEFAULT_ALPHA, k).map_err(invalid)?),
        };
        let mut category_factors: Vec<(String, f64)> = DEFAULT_CATEGORY_FACTORS
            .iter()
            .map(|(n, f)| (n.to_string(), *f))
            .collect();
        for spec in &args.category_factors {
            let (name, factor) = spec
                .split_once('=')
                .and_then(|(n, f)| f.trim().parse::<f64>().ok().map(|f| (n.trim().to_lowercase(), f)))
                .filter(|(_, f)| f.is_finite() && *f >= 0.0)
                .ok_or_else(|| {
                    invalid(format!(
                        "--category-factor takes NAME=FACTOR with FACTOR ≥ 0, got {spec:?}"
                    ))
                })?;
            match category_factors.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => entry.1 = factor,
                None => category_factors.push((name, factor)),
            }
        }
        let numbers = [
            ("step-ms", args.step_ms),
            ("draft-cost", args.draft_cost),
            ("draft-overhead-us", args.draft_overhead_us),
            ("time-scale", args.time_scale),
            ("temperature-sensitivity", args.temperature_sensitivity),
        ];
        for (name, v) in numbers {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(format!("--{name} must be a number ≥ 0, got {v}")));
            }
        }
        if !(args.ridge.is_finite() && args.ridge > 0.0) {
            return Err(invalid(format!(
                "--ridge must be > 0 token positions, got {}",
                args.ridge
            )));
        }
        let f = &args.faults;
        for (name, v) in [
            ("fail-rate", f.fail_rate),
            ("reset-rate", f.reset_rate),
            ("truncate-rate", f.truncate_rate),
            ("stall-rate", f.stall_rate),
            ("hang-rate", f.hang_rate),
            ("oversized-rate", f.oversized_rate),
        ] {
            check_fraction(name, v)?;
        }
        if args.max_num_seqs == 0 || args.mean_output_tokens == 0 || args.max_model_len < 2 {
            return Err(invalid(
                "--max-num-seqs, --mean-output-tokens and --max-model-len must be positive".into(),
            ));
        }
        Ok(SimSettings {
            addr: SocketAddr::new(args.host, args.port),
            model: args.model,
            api_key: args.api_key,
            engines: args.engines,
            engine: EngineConfig {
                k,
                max_num_seqs: args.max_num_seqs,
                step: StepModel {
                    base_step_s: args.step_ms / 1e3,
                    ridge_tokens: args.ridge,
                    draft_cost: args.draft_cost,
                    draft_overhead_s: args.draft_overhead_us / 1e6,
                },
                time_scale: args.time_scale,
                seed: args.seed,
            },
            profile,
            temperature_sensitivity: args.temperature_sensitivity,
            category_factors,
            max_model_len: args.max_model_len,
            mean_output_tokens: args.mean_output_tokens,
            per_request: args.per_request_metrics,
            payload: args.payload,
            faults: Faults::from(&args.faults),
        })
    }
}

impl From<&FaultArgs> for Faults {
    fn from(f: &FaultArgs) -> Faults {
        Faults {
            fail_rate: f.fail_rate,
            reset_rate: f.reset_rate,
            truncate_rate: f.truncate_rate,
            stall_rate: f.stall_rate,
            stall_ms: f.stall_ms,
            hang_rate: f.hang_rate,
            oversized_rate: f.oversized_rate,
            oversized_kib: f.oversized_kib,
            metrics_down: f.metrics_down,
            metrics_down_after: f.metrics_down_after,
            metrics_down_until: f.metrics_down_until,
            reset_counters_after: f.reset_counters_after,
            multiproc_exposition: f.multiproc_exposition,
            malformed_metrics: f.malformed_metrics,
        }
    }
}

impl ReportArgs {
    /// The report these flags ask for.
    pub fn plan(&self) -> report::Plan {
        report::Plan {
            inputs: self.inputs.clone(),
            destination: match &self.dir {
                Some(dir) => report::Destination::Folder(dir.clone()),
                None => report::Destination::File(self.output.clone()),
            },
            title: self.title.clone(),
        }
    }
}
