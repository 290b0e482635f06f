//! The flags of `speclens sweep` (its arms, levels, repeats and the model's costs) and the
//! plan they become; the flags it shares with bench and accept are in `load.rs`.

use std::path::PathBuf;

use clap::Args;
use speclens_shared::model::speedup::Costs;
use speclens_shared::sweep::arms::BASE_ARM;
use speclens_shared::sweep::contexts::{distinct_lengths, ContextAxis};
use speclens_shared::sweep::schedules::parse_vllm_schedule;
use speclens_shared::sweep::{AdaptiveArm, Level};

use super::load::{check_url, invalid, ridge_of, DashboardArgs, DatasetFlags, ScrapeFlags, TargetArgs, WorkloadArgs};
use crate::bench::plan::{Load, Output};
use crate::bench::workload::Dataset;
use crate::commands::sweep;
use crate::{bench, error::CollectorError};

/// One named speculative arm of a sweep: `NAME=URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmArg {
    pub name: String,
    pub url: String,
}

impl std::str::FromStr for ArmArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, url) = text.split_once('=').ok_or_else(|| {
            format!(
                "'{text}' is not NAME=URL (e.g. --arm eagle3-k3=http://127.0.0.1:8001); the plain arm is --base-url"
            )
        })?;
        if !speclens_shared::sweep::arms::valid_arm_name(name) {
            return Err(format!(
                "arm name '{name}' must be 1–64 letters, digits, '.', '_' or '-', and not 'base' (the plain arm is --base-url)"
            ));
        }
        if url.is_empty() {
            return Err(format!("arm '{name}' has no URL"));
        }
        Ok(ArmArg {
            name: name.to_string(),
            url: url.to_string(),
        })
    }
}

/// Flags of `speclens sweep`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// The speculative server's base URL (the arm named "spec").
    #[arg(long, help_heading = "Arms")]
    pub spec_url: Option<String>,
    /// The plain (non-speculative) server's base URL: the arm every other is compared with.
    #[arg(long, help_heading = "Arms")]
    pub base_url: Option<String>,
    /// A named speculative arm, NAME=URL (repeatable: e.g. --arm eagle3-k3=URL --arm
    /// ngram-k4=URL). Give only some arms to run those alone: points of the others already in
    /// --out join the table.
    #[arg(long = "arm", value_name = "NAME=URL", help_heading = "Arms")]
    pub arms: Vec<ArmArg>,
    /// The speculative servers' own vLLM --speculative-config JSON: the recommended line keeps
    /// its keys and sets num_speculative_tokens (and the per-batch-size schedule).
    #[arg(long, value_name = "JSON", help_heading = "Arms")]
    pub speculative_config: Option<String>,
    /// An arm whose server runs a draft-length schedule (vLLM's
    /// num_speculative_tokens_per_batch_size, SGLang's --speculative-adaptive, TensorRT-LLM's
    /// draft_len_schedule), repeatable: judged against the best fixed-k arm or plain at each
    /// level, never picked for a k; its acceptance length counts only steps that drafted.
    /// NAME=SCHEDULE gives the schedule it runs (vLLM's [[from, to, k], …]), so each level is
    /// checked for whether the server applied it; without one, the schedule an earlier sweep of
    /// this folder checked it against, else none (it is never guessed).
    #[arg(long, value_name = "NAME[=SCHEDULE]", help_heading = "Arms", hide_short_help = true)]
    pub adaptive: Vec<String>,
    /// Concurrency levels to measure (a closed loop at each).
    #[arg(
        long,
        value_name = "LEVELS",
        value_delimiter = ',',
        default_value = "1,4,16,64,128,256",
        help_heading = "Load"
    )]
    pub concurrency: Vec<u64>,
    /// The concurrency (or several) your deployment runs at: no cut of the recommended
    /// schedule splits the batch sizes N − 1 to N + 1, which a batch at a steady load moves
    /// across (vLLM counts a joining prefill in the batch it keys k on).
    #[arg(
        long,
        value_name = "N",
        value_delimiter = ',',
        help_heading = "Load",
        hide_short_help = true,
        conflicts_with = "request_rate",
        value_parser = clap::value_parser!(u64).range(1..=65_536)
    )]
    pub operating_concurrency: Vec<u64>,
    /// Request rates to measure instead, in requests/s (an open loop at each, Poisson arrivals
    /// unless --burstiness says otherwise); the arms compare by median E2E latency.
    #[arg(
        long,
        value_name = "RATES",
        value_delimiter = ',',
        conflicts_with = "concurrency",
        help_heading = "Load"
    )]
    pub request_rate: Vec<f64>,
    /// Seconds of arrivals at each rate: rate × this many requests, at least --min-requests.
    #[arg(long, default_value_t = 20.0, help_heading = "Load", hide_short_help = true)]
    pub seconds_per_rate: f64,
    /// Gamma shape of a rate sweep's arrival gaps: 1 is Poisson, below 1 burstier.
    #[arg(long, default_value_t = 1.0, help_heading = "Load", hide_short_help = true)]
    pub burstiness: f64,
    /// Most requests in flight at once during a rate sweep (none by default).
    #[arg(long, requires = "request_rate", help_heading = "Load", hide_short_help = true)]
    pub max_concurrency: Option<u64>,
    /// Requests per concurrency slot at each point (steady state needs several waves).
    #[arg(long, value_name = "N", default_value_t = 4, help_heading = "Load")]
    pub requests_per_slot: u64,
    /// At least this many requests per point.
    #[arg(long, default_value_t = 16, help_heading = "Load", hide_short_help = true)]
    pub min_requests: u64,
    /// Runs per point at least: the median's throughput counts, the others give its spread and
    /// the crossing's interval.
    #[arg(long, value_name = "N", default_value_t = 3, help_heading = "Load")]
    pub repeats: u32,
    /// Runs per point at most: after --repeats, one more at a time while the runs' range is
    /// wider than --repeat-spread of their median, so that one or two disturbed runs cannot
    /// move it [default: --repeats + 2; with --repeats 1, one]
    #[arg(long, help_heading = "Load", hide_short_help = true)]
    pub max_repeats: Option<u32>,
    /// The widest range of a point's runs, in percent of their median, that ends its repeats.
    #[arg(long, default_value_t = 3.0, help_heading = "Load", hide_short_help = true)]
    pub repeat_spread: f64,
    #[command(flatten)]
    pub data: DatasetFlags,
    /// Synthetic prompt length in tokens (mean); several (`--input-tokens 256,4096,16384`)
    /// sweep the context too: every level at every length, B* per context and L* per
    /// concurrency. With --dataset speed-bench and its folder, each length reads SPEED-Bench's
    /// throughput split of it (1024, 2048, 8192, 16384, 32768: throughput_1k … throughput_32k).
    #[arg(
        long,
        value_name = "TOKENS",
        value_delimiter = ',',
        default_value = "256",
        help_heading = "Workload"
    )]
    pub input_tokens: Vec<u32>,
    /// Output length in tokens (mean); the max_tokens of every request.
    #[arg(long, default_value_t = 128, help_heading = "Workload")]
    pub output_tokens: u32,
    /// KV bytes per context token ÷ weight bytes, which the model's B*(L) charges in a
    /// context sweep (default: an 8B model with grouped-query attention at bf16).
    #[arg(long, help_heading = "Model", hide_short_help = true)]
    pub kv_ratio: Option<f64>,
    /// The share of the target's KV a draft pass reads (its own cache), for the model's B*(L).
    #[arg(long, default_value_t = 0.0, help_heading = "Model", hide_short_help = true)]
    pub draft_kv_share: f64,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub scrape: ScrapeFlags,
    /// Draft cost c for the model's prediction: a draft pass's time as a share of a target
    /// step's (0 for n-gram; an EAGLE, MTP or draft-model proposer costs more) [default: 0]
    #[arg(long, help_heading = "Model")]
    pub draft_cost: Option<f64>,
    /// GPU preset for the model's roofline ridge: h100, h200, a100 (as `speclens model`).
    #[arg(long, default_value = "h100", help_heading = "Model")]
    pub gpu: String,
    /// Ridge T* for the model's prediction in token positions (overrides --gpu; H100 SXM bf16:
    /// 295).
    #[arg(long, help_heading = "Model")]
    pub ridge: Option<f64>,
    /// Folder for `spec-c<N>.json` / `base-c<N>.json` (default: speclens-results/<time>-sweep/).
    #[arg(long, help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Print the plan and run nothing.
    #[arg(long, help_heading = "Output")]
    pub dry_run: bool,
    /// Go on when an arm's server does not match its role: a plain arm (--base-url) whose
    /// /metrics shows speculation, or a speculative arm whose /metrics shows none. Without it
    /// such a sweep stops before sending anything (exit 2); with it the warning is kept in
    /// sweep.json.
    #[arg(long, help_heading = "Arms", hide_short_help = true)]
    pub allow_mixed_arms: bool,
    /// Print the sweep's detail on the console (each arm's model line, calibration, knee,
    /// latency against plain, step cost, engine load); without it the detail goes to
    /// sweep-detail.txt in --out and the console names the file.
    #[arg(long, short = 'v', help_heading = "Output")]
    pub verbose: bool,
    /// Whose config lines the console prints: the engine the servers reported (vLLM's when none
    /// did), or every engine's (sweep.json and sweep-detail.txt always hold them all).
    #[arg(
        long,
        value_enum,
        default_value = "detected",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub engine_lines: EngineLinesArg,
    /// Pool the points an earlier sweep left in --out even where their server (URL, model,
    /// engine, k) or workload differs from this sweep's; without it they are left out of the
    /// table, and sweep.json and the console name them and why.
    #[arg(long, help_heading = "Output", hide_short_help = true)]
    pub join_stale: bool,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

impl SweepArgs {
    /// The sweep these flags ask for.
    pub fn plan(&self) -> Result<sweep::Plan, CollectorError> {
        let mut arms: Vec<(String, String)> = Vec::new();
        if let Some(url) = &self.spec_url {
            arms.push(("spec".into(), url.clone()));
        }
        for arm in &self.arms {
            if arms.iter().any(|(name, _)| *name == arm.name) {
                return invalid(format!("arm '{}' is named twice", arm.name));
            }
            arms.push((arm.name.clone(), arm.url.clone()));
        }
        let speculative = arms.len();
        if let Some(url) = &self.base_url {
            arms.push((BASE_ARM.into(), url.clone()));
        }
        if arms.is_empty() {
            return invalid("give the arms: --spec-url (or --arm NAME=URL, repeatable) and --base-url");
        }
        for (_, url) in &arms {
            check_url(url)?;
        }
        if speculative > 1 && !self.scrape.metrics_urls.is_empty() {
            return invalid(
                "--metrics-url names one server's metrics: with several speculative arms each arm's own URL is scraped",
            );
        }
        let speculative_config = match &self.speculative_config {
            None => None,
            Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(v @ serde_json::Value::Object(_)) => Some(v),
                Ok(_) => return invalid("--speculative-config must be a JSON object, as vLLM's"),
                Err(e) => return invalid(format!("--speculative-config is not JSON: {e}")),
            },
        };
        let (context_axis, contexts) = self.context_axis()?;
        let point = bench::Plan {
            target: self.target.target(Vec::new())?,
            workload: self.workload.workload(
                self.data.dataset()?,
                self.data.categories.clone(),
                self.input_tokens.iter().copied().min().unwrap_or(256),
                self.output_tokens,
            ),
            load: Load {
                burstiness: self.burstiness,
                ..self.workload.closed_loop(self.max_concurrency, 1)?
            },
            scrape: self.scrape.scrape()?,
            output: Output {
                dir: None,
                label: String::new(),
                percentiles: self.workload.percentiles.clone(),
                goodput: self.workload.goodput()?,
                print: false,
            },
            checks: bench::Checks::default(),
            dashboard_port: None,
        };
        let plan = sweep::Plan {
            arms,
            adaptive: self.adaptive_arms()?,
            speculative_config,
            levels: if self.request_rate.is_empty() {
                self.concurrency.iter().copied().map(Level::Concurrency).collect()
            } else {
                self.request_rate.iter().copied().map(Level::Rate).collect()
            },
            requests_per_slot: self.requests_per_slot,
            seconds_per_rate: self.seconds_per_rate,
            min_requests: self.min_requests,
            repeats: self.repeats,
            max_repeats: self
                .max_repeats
                .unwrap_or(if self.repeats == 1 { 1 } else { self.repeats + 2 }),
            repeat_spread: self.repeat_spread / 100.0,
            point,
            costs: Costs {
                draft_cost: self.draft_cost.unwrap_or(0.0),
                ridge_tokens: ridge_of(&self.gpu, self.ridge)?.0,
            },
            draft_cost_given: self.draft_cost.is_some(),
            out: self.out.clone(),
            dry_run: self.dry_run,
            dashboard_port: self.dashboard.port()?,
            allow_mixed_arms: self.allow_mixed_arms,
            verbose: self.verbose,
            all_engine_lines: self.engine_lines == EngineLinesArg::All,
            join_stale: self.join_stale,
            trace_offsets_s: self.trace_offsets()?,
            contexts,
            context_axis,
            kv_ratio: self
                .kv_ratio
                .unwrap_or(speclens_shared::model::context::KV_RATIO_8B_BF16),
            draft_kv_share: self.draft_kv_share,
            operating_concurrency: self.operating_concurrency.clone(),
        };
        plan.check()?;
        Ok(plan)
    }
}

impl SweepArgs {
    /// `--adaptive NAME[=SCHEDULE]`: each arm and, when given, the vLLM schedule it runs
    /// (checked by vLLM's rules, its largest k as num_speculative_tokens).
    fn adaptive_arms(&self) -> Result<Vec<AdaptiveArm>, CollectorError> {
        self.adaptive
            .iter()
            .map(|text| {
                let Some((name, schedule)) = text.split_once('=') else {
                    return Ok(AdaptiveArm::named(text));
                };
                let schedule = parse_vllm_schedule(schedule)
                    .map_err(|e| CollectorError::InvalidArgument(format!("--adaptive {name}=SCHEDULE: {e}")))?;
                Ok(AdaptiveArm {
                    name: name.to_string(),
                    schedule: Some(schedule),
                })
            })
            .collect()
    }

    /// The context axis and its lengths: several `--prefix-tokens` sweep a shared, cached
    /// prefix; otherwise the `--input-tokens` given (one length: no context sweep). Both with
    /// several lengths is refused.
    fn context_axis(&self) -> Result<(ContextAxis, Vec<u32>), CollectorError> {
        let prefixes = &self.workload.prefix_tokens;
        let several = |lengths: &[u32]| distinct_lengths(lengths).len() > 1;
        match (several(prefixes), several(&self.input_tokens)) {
            (true, true) => invalid(
                "--input-tokens and --prefix-tokens cannot both take several lengths: sweep one context axis at a time",
            ),
            (true, false) => Ok((ContextAxis::PrefixTokens, prefixes.clone())),
            (false, _) => Ok((ContextAxis::InputTokens, self.input_tokens.clone())),
        }
    }

    /// A trace's offsets at its own speed, after the warm-up's requests; refused before anything
    /// is sent when a point would ask for more requests than the trace holds.
    fn trace_offsets(&self) -> Result<Option<std::sync::Arc<[f64]>>, CollectorError> {
        let Dataset::Mooncake(path, _) = self.data.dataset()? else {
            return Ok(None);
        };
        let trace = bench::trace::read(&path, self.workload.max_dataset_mib.saturating_mul(1 << 20))?;
        let warmup = self.workload.warmup;
        let most = self
            .concurrency
            .iter()
            .filter(|_| self.request_rate.is_empty())
            .map(|c| (c * self.requests_per_slot).max(self.min_requests))
            .max()
            .unwrap_or(1);
        if warmup + most > trace.len() as u64 {
            return invalid(format!(
                "{} holds {} requests; the sweep asks for {} at a point (with --warmup {warmup})",
                path.display(),
                trace.len(),
                warmup + most
            ));
        }
        let skip = warmup as usize;
        let offsets = bench::trace::offsets_s(&trace, skip, trace.len() - skip, 1.0);
        // The busiest point replays the first `most` of them.
        bench::trace::check_replay(&offsets[..(most as usize).min(offsets.len())], 1.0)?;
        Ok(Some(offsets.into()))
    }
}

/// `--engine-lines`: the detected engine's config lines, or all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineLinesArg {
    Detected,
    All,
}
