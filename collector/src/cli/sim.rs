//! The flags of `speclens sim` and the simulated server's settings they turn into.

use std::net::{IpAddr, SocketAddr};

use clap::{Args, ValueEnum};

use crate::error::CollectorError;
use crate::sim::{
    AcceptanceProfile, EngineConfig, Faults, PayloadShape, PerRequestMetrics, SimSettings, StepModel, DEFAULT_ALPHA,
    DEFAULT_CATEGORY_FACTORS, KV_BLOCK_TOKENS,
};

/// Where per-request spec-decode stats go, by engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PayloadArg {
    /// vLLM: `metrics.speculative_decoding` at the response root / on the final usage chunk.
    Vllm,
    /// TensorRT-LLM as released: `avg_decoded_tokens_per_iter` per choice, JSON `/metrics`,
    /// Prometheus text at `/prometheus/metrics`.
    Trtllm,
    /// TensorRT-LLM with the still-open PR #19311: `choices[i].speculative_decoding` as well.
    #[value(name = "trtllm-pr19311")]
    TrtllmPr19311,
    /// SGLang: `sglext.spec_tokens_details` when the request sets `return_spec_tokens_details`;
    /// SGLang's gauges and counters on `/metrics`.
    Sglang,
    /// SGLang with the still-open PR #34814 (follows an unmerged PR): one
    /// `sglext.speculative_decoding_stats` entry per choice, at the --per-request-metrics level.
    #[value(name = "sglang-pr34814")]
    SglangPr34814,
    /// llama.cpp's server: `timings.draft_n` / `draft_n_accepted`, `llamacpp:` counters.
    Llamacpp,
    /// A llama.cpp-compatible server with mlx-vlm's `timings.draft_rounds` (mlx-vlm PR #1788).
    #[value(name = "llamacpp-draft-rounds")]
    LlamacppDraftRounds,
}

/// vLLM's `--per-request-spec-decode-metrics` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PerRequestArg {
    None,
    Summary,
    Detailed,
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
    /// KV-cache capacity per engine in tokens (blocks of 16; about an 8B model's on an 80 GB
    /// GPU): requests wait when it is full, and the newest running sequence is preempted
    /// (recomputed later) when decoding outgrows it.
    #[arg(long, default_value_t = 524_288)]
    pub kv_cache_tokens: u64,
    /// Draft tokens proposed per step (0: a plain server, the "base" arm).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=16))]
    pub num_spec_tokens: u32,
    /// vLLM's `num_speculative_tokens_per_batch_size`: a JSON list of inclusive batch-size
    /// ranges `[[from, to, k], …]` (the first from 1, none overlapping, k at most
    /// --num-spec-tokens; 0 turns speculation off). Each step drafts the k of the number of
    /// sequences it schedules, and a step that drafts nothing is no draft in any count.
    #[arg(long, value_name = "JSON", requires = "num_spec_tokens")]
    pub num_spec_tokens_per_batch_size: Option<String>,
    /// A fault: accept --num-spec-tokens-per-batch-size and run the fixed --num-spec-tokens at
    /// every batch, as an engine that drops the line does (vLLM with data parallelism above 1).
    #[arg(long, requires = "num_spec_tokens_per_batch_size", hide_short_help = true)]
    pub ignore_schedule: bool,
    /// What a step the schedule runs at k = 0 costs beyond a plain server's step, as a
    /// fraction (0.15: 15 % more): a speculative server is not a plain one where it drafts
    /// nothing (vLLM #51575: graphs, the drafter's KV).
    #[arg(
        long,
        value_name = "FRACTION",
        default_value_t = 0.0,
        requires = "num_spec_tokens_per_batch_size"
    )]
    pub zero_k_tax: f64,
    /// A fault: at each cut's first batch size (where the schedule turns speculation off just
    /// above a range that drafts) k alternates every SECONDS between off and the range below's
    /// k, as a schedule thrashing at the load it runs shows at scrape granularity (vLLM #49548).
    #[arg(
        long,
        value_name = "SECONDS",
        requires = "num_spec_tokens_per_batch_size",
        hide_short_help = true
    )]
    pub thrash_at_cut: Option<f64>,
    /// A fault: a sequence that runs a step at k = 0 accepts at a quarter of its rates for the
    /// rest of its life once speculation resumes, as a one-engine drafter whose forward the
    /// schedule skipped goes stale (TensorRT-LLM #16888).
    #[arg(long, requires = "num_spec_tokens_per_batch_size", hide_short_help = true)]
    pub stale_drafter: bool,
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
    /// Per-request acceptance spread S in [0, 1]: each request's conditional rates are
    /// multiplied by a factor uniform in [1 − S, 1 + S] (capped at 1), drawn from its prompt, so
    /// some requests accept much less than others.
    #[arg(long, default_value_t = 0.0)]
    pub acceptance_spread: f64,
    /// Acceptance multiplier for a prompt category, NAME=FACTOR (repeatable); categories are
    /// recognised from the prompt text. Defaults: summarization 1.15, coding 1.05, qa 1.0,
    /// math 0.95, writing 0.85, translation 0.8.
    #[arg(long = "category-factor", value_name = "NAME=FACTOR")]
    pub category_factors: Vec<String>,
    /// Serve a LoRA adapter beside the model, NAME=FACTOR (repeatable): listed in /v1/models
    /// as vLLM lists one (parent: the model), its requests' acceptance multiplied by FACTOR.
    #[arg(long = "lora", value_name = "NAME=FACTOR")]
    pub adapters: Vec<String>,
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
    /// What a step's KV read costs: KV bytes per context token ÷ weight bytes (0: free; an 8B
    /// model with grouped-query attention at bf16 is 8.16e-6, 128 KiB a token ÷ 16.06 GB). A
    /// plain and a verify step read the same KV.
    #[arg(long, default_value_t = 0.0)]
    pub kv_ratio: f64,
    /// The share of the target's KV a draft pass reads (a drafter's own cache; 0 for n-gram).
    #[arg(long, default_value_t = 0.0)]
    pub draft_kv_share: f64,
    /// Acceptance halves every this many tokens a sequence holds (prompt and output): acceptance
    /// that decays with context, as reported for long prompts (default: no decay).
    #[arg(long, value_name = "TOKENS")]
    pub acceptance_half_life: Option<f64>,
    /// Automatic prefix caching, as vLLM V1 does by default: a prompt's leading KV blocks
    /// already cached are not prefilled again. Off unless given, so a sweep's points, which send
    /// the same seeded prompts, each pay the same prefill.
    #[arg(long)]
    pub enable_prefix_caching: bool,
    /// Multiplies every step time; 0 runs without any delay (tests).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Mean output length when a request does not set ignore_eos (EOS drawn geometrically).
    #[arg(long, default_value_t = 256)]
    pub mean_output_tokens: u32,
    /// Per-request spec-decode stats in responses.
    #[arg(long, alias = "per-request-spec-decode-metrics", value_enum, default_value_t = PerRequestArg::Summary)]
    pub per_request_metrics: PerRequestArg,
    /// vLLM 0.33's per-request timings: each response's `metrics` carries the engine's
    /// `time_to_first_token_ms`, `queue_time_ms` and `generation_time_ms`.
    #[arg(long)]
    pub enable_per_request_metrics: bool,
    /// Which engine the server imitates: its per-request stats, its metrics endpoints, its
    /// `owned_by`.
    #[arg(long, value_enum, default_value_t = PayloadArg::Vllm)]
    pub payload: PayloadArg,
    /// Start the spec-decode counters at this many drafts, as on a server that has been up
    /// for long (large and, in llama.cpp's shape, rounded values).
    #[arg(long, default_value_t = 0)]
    pub counter_start: u64,
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
    /// Milliseconds a stalled request waits before its first token (--stall-rate).
    #[arg(long, default_value_t = 2000)]
    pub stall_ms: u64,
    /// Never answer this fraction of requests (the client must time out).
    #[arg(long, default_value_t = 0.0)]
    pub hang_rate: f64,
    /// Answer this fraction of requests with an oversized body (--oversized-kib of padding).
    #[arg(long, default_value_t = 0.0)]
    pub oversized_rate: f64,
    /// KiB of padding in an oversized answer (--oversized-rate).
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
    /// Lower the acceptance of every request that arrives once this many have finished (a
    /// drafter gone stale, traffic that changed mid-run), by --acceptance-drop-factor.
    #[arg(long, requires = "acceptance_drop_factor")]
    pub acceptance_drop_after: Option<u64>,
    /// What each conditional acceptance rate is multiplied by after --acceptance-drop-after.
    #[arg(long, requires = "acceptance_drop_after")]
    pub acceptance_drop_factor: Option<f64>,
    /// Write `/metrics` as in multiprocess mode (no `_created` gauges).
    #[arg(long)]
    pub multiproc_exposition: bool,
    /// Add malformed lines to `/metrics`.
    #[arg(long)]
    pub malformed_metrics: bool,
    /// TensorRT-LLM shape: no `/prometheus/metrics`, as trtllm-serve without
    /// `return_perf_metrics`.
    #[arg(long)]
    pub no_perf_metrics: bool,
    /// TensorRT-LLM shape: no spec-decode iteration counters or gauges there, as without
    /// `enable_iter_perf_stats`.
    #[arg(long)]
    pub no_iter_perf_stats: bool,
    /// TensorRT-LLM shape: no per-position pair (`trtllm_spec_decode_drafted_tokens_total`,
    /// `…_accepted_tokens_total`), as a build before March 2026.
    #[arg(long)]
    pub no_per_position_pair: bool,
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
    /// `--num-spec-tokens-per-batch-size`, checked by vLLM's rules (empty when not given, or
    /// given and ignored).
    fn schedule(&self) -> Result<Vec<(u64, u64, u32)>, CollectorError> {
        let invalid = |m: String| CollectorError::InvalidArgument(format!("--num-spec-tokens-per-batch-size {m}"));
        let Some(text) = &self.num_spec_tokens_per_batch_size else {
            return Ok(Vec::new());
        };
        let schedule: Vec<(u64, u64, u32)> =
            serde_json::from_str(text).map_err(|e| invalid(format!("takes [[from, to, k], …] in JSON: {e}")))?;
        speclens_shared::sweep::schedules::check_vllm_schedule(&schedule, self.num_spec_tokens)
            .map_err(|e| invalid(format!("does not hold: {e}")))?;
        Ok(if self.ignore_schedule { Vec::new() } else { schedule })
    }

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
        let profile = args.profile()?;
        let category_factors = args.category_factors()?;
        let adapters = args.adapters()?;
        let numbers = [
            ("step-ms", args.step_ms),
            ("draft-cost", args.draft_cost),
            ("draft-overhead-us", args.draft_overhead_us),
            ("kv-ratio", args.kv_ratio),
            ("draft-kv-share", args.draft_kv_share),
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
            ("acceptance-spread", args.acceptance_spread),
            ("fail-rate", f.fail_rate),
            ("reset-rate", f.reset_rate),
            ("truncate-rate", f.truncate_rate),
            ("stall-rate", f.stall_rate),
            ("hang-rate", f.hang_rate),
            ("oversized-rate", f.oversized_rate),
            ("acceptance-drop-factor", f.acceptance_drop_factor.unwrap_or(0.0)),
        ] {
            check_fraction(name, v)?;
        }
        if args.max_num_seqs == 0 || args.mean_output_tokens == 0 || args.max_model_len < 2 {
            return Err(invalid(
                "--max-num-seqs, --mean-output-tokens and --max-model-len must be positive".into(),
            ));
        }
        let schedule = args.schedule()?;
        if args.kv_cache_tokens < u64::from(args.max_model_len) + u64::from(k) + KV_BLOCK_TOKENS {
            return Err(invalid(format!(
                "--kv-cache-tokens must hold at least one sequence of --max-model-len ({}) and its {k} lookahead slots",
                args.max_model_len
            )));
        }
        let engine = args.engine_config(schedule)?;
        Ok(SimSettings {
            addr: SocketAddr::new(args.host, args.port),
            model: args.model,
            api_key: args.api_key,
            engines: args.engines,
            engine,
            profile,
            temperature_sensitivity: args.temperature_sensitivity,
            acceptance_spread: args.acceptance_spread,
            category_factors,
            adapters,
            max_model_len: args.max_model_len,
            mean_output_tokens: args.mean_output_tokens,
            per_request: match args.per_request_metrics {
                PerRequestArg::None => PerRequestMetrics::None,
                PerRequestArg::Summary => PerRequestMetrics::Summary,
                PerRequestArg::Detailed => PerRequestMetrics::Detailed,
            },
            per_request_timings: args.enable_per_request_metrics,
            payload: match args.payload {
                PayloadArg::Vllm => PayloadShape::Vllm,
                PayloadArg::Trtllm => PayloadShape::Trtllm,
                PayloadArg::TrtllmPr19311 => PayloadShape::TrtllmPr19311,
                PayloadArg::Sglang => PayloadShape::Sglang,
                PayloadArg::SglangPr34814 => PayloadShape::SglangPr34814,
                PayloadArg::Llamacpp => PayloadShape::LlamaCpp,
                PayloadArg::LlamacppDraftRounds => PayloadShape::LlamaCppRounds,
            },
            counter_start: args.counter_start,
            faults: Faults::from(&args.faults),
        })
    }

    /// The engine's configuration: its k and schedule, its batch and cache, its step costs and
    /// its acceptance's decay with context.
    fn engine_config(&self, schedule: Vec<(u64, u64, u32)>) -> Result<EngineConfig, CollectorError> {
        let args = self;
        let k = args.num_spec_tokens;
        let invalid = |m: String| CollectorError::InvalidArgument(m);
        Ok(EngineConfig {
            k,
            schedule,
            max_num_seqs: args.max_num_seqs,
            kv_cache_blocks: args.kv_cache_tokens.div_ceil(KV_BLOCK_TOKENS),
            step: StepModel {
                base_step_s: args.step_ms / 1e3,
                ridge_tokens: args.ridge,
                draft_cost: args.draft_cost,
                draft_overhead_s: args.draft_overhead_us / 1e6,
                kv_ratio: args.kv_ratio,
                draft_kv_share: args.draft_kv_share,
            },
            time_scale: args.time_scale,
            zero_k_tax: match args.zero_k_tax {
                t if t.is_finite() && t >= 0.0 => t,
                t => return Err(invalid(format!("--zero-k-tax must be a fraction ≥ 0, got {t}"))),
            },
            thrash_at_cut_s: match args.thrash_at_cut {
                Some(s) if !(s.is_finite() && s > 0.0) => {
                    return Err(invalid(format!(
                        "--thrash-at-cut must be a number of seconds > 0, got {s}"
                    )))
                }
                s => s,
            },
            stale_drafter: args.stale_drafter,
            acceptance_half_life_tokens: match args.acceptance_half_life {
                Some(h) if !(h.is_finite() && h > 0.0) => {
                    return Err(invalid(format!(
                        "--acceptance-half-life must be a number of tokens > 0, got {h}"
                    )))
                }
                h => h,
            },
            prefix_caching: args.enable_prefix_caching,
            seed: args.seed,
        })
    }

    /// The acceptance profile of the flags given: `--alpha`, `--acceptance-rates`,
    /// `--acceptance-length` or the default α (none without `--num-spec-tokens`).
    fn profile(&self) -> Result<Option<AcceptanceProfile>, CollectorError> {
        let k = self.num_spec_tokens;
        let invalid = |m: String| CollectorError::InvalidArgument(m);
        Ok(
            match (k, &self.alpha, &self.acceptance_rates, &self.acceptance_length) {
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
                    let alpha = speclens_shared::model::speedup::implied_alpha(*e, k);
                    Some(AcceptanceProfile::geometric(alpha, k).map_err(invalid)?)
                }
                (_, None, None, None) => Some(AcceptanceProfile::geometric(DEFAULT_ALPHA, k).map_err(invalid)?),
            },
        )
    }

    /// The category factors: the defaults, with each `--category-factor NAME=FACTOR` over them.
    fn category_factors(&self) -> Result<Vec<(String, f64)>, CollectorError> {
        let mut category_factors: Vec<(String, f64)> = DEFAULT_CATEGORY_FACTORS
            .iter()
            .map(|(n, f)| (n.to_string(), *f))
            .collect();
        for spec in &self.category_factors {
            let (name, factor) = name_factor("--category-factor", spec)?;
            let name = name.to_lowercase();
            match category_factors.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => entry.1 = factor,
                None => category_factors.push((name, factor)),
            }
        }
        Ok(category_factors)
    }

    /// The `--lora NAME=FACTOR` adapters, each name once and none the model's.
    fn adapters(&self) -> Result<Vec<(String, f64)>, CollectorError> {
        let mut adapters: Vec<(String, f64)> = Vec::new();
        for spec in &self.adapters {
            let (name, factor) = name_factor("--lora", spec)?;
            if name.is_empty() || name == self.model || adapters.iter().any(|(n, _)| *n == name) {
                return Err(CollectorError::InvalidArgument(format!(
                    "--lora {spec:?}: each adapter needs a name of its own, not the model's or another adapter's"
                )));
            }
            adapters.push((name, factor));
        }
        Ok(adapters)
    }
}

/// A `NAME=FACTOR` flag's name (trimmed) and factor (finite, ≥ 0).
fn name_factor(flag: &str, spec: &str) -> Result<(String, f64), CollectorError> {
    spec.split_once('=')
        .and_then(|(n, f)| f.trim().parse::<f64>().ok().map(|f| (n.trim().to_string(), f)))
        .filter(|(_, f)| f.is_finite() && *f >= 0.0)
        .ok_or_else(|| {
            CollectorError::InvalidArgument(format!("{flag} takes NAME=FACTOR with FACTOR ≥ 0, got {spec:?}"))
        })
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
            acceptance_drop: f.acceptance_drop_after.zip(f.acceptance_drop_factor),
            multiproc_exposition: f.multiproc_exposition,
            malformed_metrics: f.malformed_metrics,
            no_perf_metrics: f.no_perf_metrics,
            no_iter_perf_stats: f.no_iter_perf_stats,
            no_per_position_pair: f.no_per_position_pair,
        }
    }
}
