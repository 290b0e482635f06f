//! Command-line interface: raw arguments parsed by clap, turned into the plans the commands run.
//! No other module sees clap's argument types. `load` holds the flags of the commands that send
//! requests (bench, sweep, accept) and their shared groups, `sweep_args` the sweep's own, `sim`
//! the simulated server's.

mod load;
mod sim;
mod sweep_args;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use speclens_shared::model::context::{ContextReport, LinearStepCosts, StepCosts, KV_RATIO_8B_BF16};
use speclens_shared::model::speedup::{Costs, Measured, ModelReport, Proposer};

use load::ridge_of;
pub use load::{
    AcceptArgs, BenchArgs, DashboardArgs, PrometheusArgs, ScrapeFlags, TargetArgs, WorkloadArgs, DASHBOARD_PORT,
};
pub use sim::{FaultArgs, SimArgs};
pub use sweep_args::{ArmArg, SweepArgs};

use crate::commands::report;
use crate::error::CollectorError;
use crate::serve::ServeSettings;

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
    /// What a server is and what speclens can measure there: engine, models, spec-decode
    /// metrics, per-request stats, what is missing and the option that turns it on, and the
    /// next commands.
    Probe(Box<ProbeArgs>),
    /// The speedup model's table (no server needed): E(α, k), S(1), S(∞), break-even batch.
    Model(Box<ModelArgs>),
    /// The same concurrency (or request-rate) sweep against speculative arms and a plain server:
    /// where speculation stops paying, and which k to run at each load.
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
    /// Compare a run or sweep with a stored baseline, each figure within its noise; exit 3 when
    /// one got worse (for CI).
    Check(CheckArgs),
    /// Prometheus recording and alerting rules for spec-decode figures, speclens's own formulas
    /// for every engine (and a load alert at a sweep's measured break-even).
    Rules(Box<RulesArgs>),
    /// A Grafana dashboard over the series `speclens rules` records, for one engine or all.
    Grafana(GrafanaArgs),
}

/// Which engines' rules or panels: one, or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineChoice {
    All,
    Vllm,
    Sglang,
    Trtllm,
    Llamacpp,
}

impl EngineChoice {
    /// The engine, `None` for all of them.
    pub fn engine(self) -> Option<speclens_shared::engine::Engine> {
        use speclens_shared::engine::Engine;
        match self {
            EngineChoice::All => None,
            EngineChoice::Vllm => Some(Engine::Vllm),
            EngineChoice::Sglang => Some(Engine::Sglang),
            EngineChoice::Trtllm => Some(Engine::Trtllm),
            EngineChoice::Llamacpp => Some(Engine::LlamaCpp),
        }
    }
}

/// Flags of `speclens rules`.
#[derive(Debug, Clone, Args)]
pub struct RulesArgs {
    /// The engine whose counters the rules read (all four by default).
    #[arg(long, value_enum, default_value_t = EngineChoice::All)]
    pub engine: EngineChoice,
    /// Label matchers every query carries, in PromQL (`job=~"vllm.*"`), braces optional.
    #[arg(long, default_value = "")]
    pub selector: String,
    /// The rate window of every recorded figure (a Prometheus duration: 30s, 5m, 1h).
    #[arg(long, default_value = "5m")]
    pub window: String,
    /// The rule groups' evaluation interval (Prometheus's global one by default).
    #[arg(long)]
    pub interval: Option<String>,
    /// Alert when the acceptance length stays under this many tokens a step.
    #[arg(long, default_value_t = 1.5)]
    pub min_acceptance_length: f64,
    /// The trailing range the acceptance length is compared with.
    #[arg(long, default_value = "1d")]
    pub baseline: String,
    /// Alert when the acceptance length falls this many percent under its baseline.
    #[arg(long, default_value_t = 20.0)]
    pub baseline_drop_pct: f64,
    /// How long a condition holds before its alert fires.
    #[arg(long = "for", default_value = "10m")]
    pub hold: String,
    /// A sweep (sweep.json, or its folder): alert when running requests stay above the
    /// break-even it measured (plain ahead from there).
    #[arg(long, value_name = "SWEEP")]
    pub from_sweep: Option<std::path::PathBuf>,
    /// Write the rule file here (atomically; checked with promtool when it is installed)
    /// instead of printing it.
    #[arg(long, short)]
    pub out: Option<std::path::PathBuf>,
}

impl RulesArgs {
    /// The rule settings these flags ask for.
    pub fn settings(&self) -> Result<speclens_shared::watch::rules::RuleSettings, CollectorError> {
        use speclens_shared::engine::Engine;
        use speclens_shared::watch::{promql::Scope, rules::RuleSettings};
        let engines = self.engine.engine().map_or_else(|| Engine::ALL.to_vec(), |e| vec![e]);
        let matchers = self
            .selector
            .trim()
            .trim_start_matches('{')
            .trim_end_matches('}')
            .trim()
            .to_string();
        let mut settings = RuleSettings::new(
            engines,
            Scope {
                matchers,
                window: self.window.clone(),
            },
        );
        settings.interval = self.interval.clone();
        settings.min_acceptance_length = self.min_acceptance_length;
        settings.baseline = self.baseline.clone();
        settings.baseline_drop_pct = self.baseline_drop_pct;
        settings.hold = self.hold.clone();
        if let Some(sweep) = &self.from_sweep {
            settings.cutoff = Some(crate::commands::watch::cutoff_of_sweep(sweep)?);
        }
        settings
            .check()
            .map_err(|e| CollectorError::InvalidArgument(e.to_string()))?;
        Ok(settings)
    }
}

/// Flags of `speclens grafana`.
#[derive(Debug, Clone, Args)]
pub struct GrafanaArgs {
    /// The engine the dashboard is for (all four by default).
    #[arg(long, value_enum, default_value_t = EngineChoice::All)]
    pub engine: EngineChoice,
    /// The rate window of the recorded series it reads (as given to `speclens rules`).
    #[arg(long, default_value = "5m")]
    pub window: String,
    /// Write the dashboard JSON here (atomically) instead of printing it.
    #[arg(long, short)]
    pub out: Option<std::path::PathBuf>,
}

/// Flags of `speclens check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// The stored run or sweep (a folder holding result.json or sweep.json, or the file).
    #[arg(long, value_name = "OLD")]
    pub baseline: std::path::PathBuf,
    /// The new run or sweep, of the same kind.
    #[arg(value_name = "NEW")]
    pub new: std::path::PathBuf,
    /// The figures that fail the check when worse (repeatable or comma-separated):
    /// acceptance_length, per_position, speedup (a sweep's ratio at a level), crossing.
    #[arg(
        long = "figure",
        value_delimiter = ',',
        default_value = "acceptance_length,per_position,speedup,crossing"
    )]
    pub figures: Vec<String>,
    /// How many standard errors of the difference a figure may fall before it counts as worse.
    #[arg(long, default_value_t = 3.0)]
    pub sigmas: f64,
    /// Compare the acceptance of a run marked content-invalid (random tokens, trace filler,
    /// ignore_eos) with a valid run's anyway; refused (exit 2) without it.
    #[arg(long)]
    pub mixed_content: bool,
}

impl CheckArgs {
    /// The check these flags ask for.
    pub fn plan(&self) -> Result<crate::commands::check::Plan, CollectorError> {
        let figures = self
            .figures
            .iter()
            .map(|f| {
                speclens_shared::check::regress::FigureKind::parse(f).ok_or_else(|| {
                    CollectorError::InvalidArgument(format!(
                        "--figure {f}: not one of acceptance_length, per_position, speedup, crossing"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(crate::commands::check::Plan {
            baseline: self.baseline.clone(),
            new: self.new.clone(),
            figures,
            sigmas: self.sigmas,
            mixed_content: self.mixed_content,
        })
    }
}

/// Flags of `speclens serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to bind. Anything but a loopback address requires an access token.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to bind (0 picks a free one).
    #[arg(long, default_value_t = DASHBOARD_PORT)]
    pub port: u16,
    /// Access token required by every page and API request. Generated when binding a
    /// non-loopback address without one.
    #[arg(long, env = "SPECLENS_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Folder holding the built dashboard (index.html, .js, .wasm).
    #[arg(long, env = "SPECLENS_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// Folder of past runs the page can open.
    #[arg(long, default_value = "speclens-results")]
    pub results_dir: PathBuf,
}

/// Flags of `speclens demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Dashboard port (0 picks a free one).
    #[arg(long, default_value_t = DASHBOARD_PORT)]
    pub port: u16,
    /// Folder holding the built dashboard (default: the one built into this binary).
    #[arg(long, env = "SPECLENS_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// Results folder (default: speclens-results/<time>-demo/).
    #[arg(long)]
    pub out: Option<PathBuf>,
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
    /// Seconds between scrapes with --watch.
    #[arg(long, default_value_t = 5.0)]
    pub interval: f64,
}

/// Flags of `speclens probe`.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// The server's base URL.
    pub url: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print the findings as JSON (for scripts).
    #[arg(long)]
    pub json: bool,
}

impl ProbeArgs {
    /// The probe these flags ask for.
    pub fn plan(&self) -> Result<crate::commands::probe::Plan, CollectorError> {
        Ok(crate::commands::probe::Plan {
            target: self.target.target(vec![self.url.clone()])?,
            json: self.json,
        })
    }
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
    /// The draft proposer, for its cost fraction c.
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
    /// What a step at k = 0 on the speculative server costs beyond a plain server's step, as a
    /// fraction (0.15: 15 % more; vLLM #51575 measured 0.07–0.22): charged against the best k
    /// at --batch, which then says whether to keep k, run k = 0 or route to a plain server.
    #[arg(long, value_name = "FRACTION", requires = "rates")]
    pub zero_k_tax: Option<f64>,
    /// Calibrate the model on your own engine: fit the roofline's ridge and a sequence's token
    /// rate to the plain arm of this sweep (its sweep.json, or the folder holding it), then
    /// predict B* from --measured-E (a cheap low-load bench or accept), before the speculative
    /// sweep is run.
    #[arg(long, value_name = "SWEEP", requires = "measured_e")]
    pub calibrate: Option<PathBuf>,
    /// Context lengths L (tokens each sequence holds): print the acceptance length each batch
    /// needs at each L, and with --measured-E the break-even batch B*(L) and, at --batch, the
    /// context L* above which speculation loses.
    #[arg(long, value_delimiter = ',', value_name = "TOKENS")]
    pub context: Option<Vec<f64>>,
    /// Step costs for --context: `roofline` (the ridge, the draft cost and the KV read:
    /// --kv-ratio, --draft-kv-share), `llama8b-h100` (SpecDecode-Bench's linear fit for
    /// Llama-3.1-8B with EAGLE on an H100 under vLLM), or a JSON file of a linear fit
    /// (docs/MODEL.md).
    #[arg(long, default_value = "roofline", value_name = "FORM")]
    pub step_costs: String,
    /// KV bytes per context token ÷ weight bytes, for the roofline (default: an 8B model with
    /// grouped-query attention at bf16).
    #[arg(long)]
    pub kv_ratio: Option<f64>,
    /// The share of the target's KV a draft pass reads (its own cache), for the roofline.
    #[arg(long, default_value_t = 0.0)]
    pub draft_kv_share: f64,
    /// Step costs from `vllm bench forward --output-json` (its cases with the drafter), fitted
    /// with --forward-plain; predicts the break-even by context without any serving sweep.
    #[arg(long, value_name = "FILE", requires_all = ["forward_plain", "context"])]
    pub forward: Option<PathBuf>,
    /// The same benchmark's cases run with `--exclude-drafter` (the target's passes alone).
    #[arg(long, value_name = "FILE", requires = "forward")]
    pub forward_plain: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
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

impl ModelArgs {
    /// The model's report these flags ask for (checked).
    pub fn report(&self) -> Result<ModelReport, CollectorError> {
        let args = self;
        let invalid = |m: String| CollectorError::InvalidArgument(m);
        if args.alpha.is_empty() || args.alpha.iter().any(|a| !(0.0..=1.0).contains(a)) {
            return Err(invalid("--alpha takes values in [0, 1]".into()));
        }
        if args.kappa.is_empty() || args.kappa.iter().any(|k| !(1..=32).contains(k)) {
            return Err(invalid("--kappa takes whole numbers from 1 to 32".into()));
        }
        let (draft_cost, proposer) = match (args.draft_cost, args.proposer) {
            (Some(c), _) if c.is_finite() && c >= 0.0 => (c, "custom".to_string()),
            (Some(c), _) => return Err(invalid(format!("--draft-cost must be ≥ 0, got {c}"))),
            (None, ProposerArg::Ngram) => (Proposer::Ngram.draft_cost(), Proposer::Ngram.key().to_string()),
            (None, ProposerArg::Drafter1b) => (Proposer::Drafter1b.draft_cost(), Proposer::Drafter1b.key().to_string()),
        };
        let (ridge_tokens, gpu) = ridge_of(&args.gpu, args.ridge)?;
        let measured = match args.measured_e {
            None => None,
            Some(e) => {
                let k = args.measured_k.or(args.kappa.last().copied()).unwrap_or(1);
                if !(e.is_finite() && e >= 1.0 && e <= f64::from(k) + 1.0) {
                    return Err(invalid(format!(
                        "--measured-E must be in [1, k + 1] = [1, {}], got {e}",
                        k + 1
                    )));
                }
                if let Some(d) = args.draft_tokens {
                    if !(d.is_finite() && d > 0.0 && d <= f64::from(k)) {
                        return Err(invalid(format!("--draft-tokens must be in (0, k] = (0, {k}], got {d}")));
                    }
                }
                Some(Measured {
                    e,
                    k,
                    draft_tokens: args.draft_tokens,
                })
            }
        };
        if args.draft_tokens.is_some() && args.measured_e.is_none() {
            return Err(invalid("--draft-tokens goes with --measured-E".into()));
        }
        if let Some(rates) = &args.rates {
            if rates.is_empty() || rates.iter().any(|r| !(0.0..=1.0).contains(r)) {
                return Err(invalid("--rates takes fractions in [0, 1]".into()));
            }
        }
        if !(args.batch.is_finite() && args.batch >= 1.0) {
            return Err(invalid("--batch must be ≥ 1".into()));
        }
        let costs = Costs {
            draft_cost,
            ridge_tokens,
        };
        let report = ModelReport::new(
            &args.alpha,
            &args.kappa,
            costs,
            &proposer,
            &gpu,
            measured,
            args.rates.as_deref().map(|r| (r, args.batch)),
        );
        Ok(match args.zero_k_tax {
            Some(t) if !(t.is_finite() && t >= 0.0) => {
                return Err(invalid(format!("--zero-k-tax must be a fraction ≥ 0, got {t}")))
            }
            Some(t) => report.with_zero_k_tax(t),
            None => report,
        })
    }
}

impl ModelArgs {
    /// The context report `--context` asks for, on the same k, draft cost and ridge as `report`.
    pub fn context_report(&self, report: &ModelReport) -> Result<Option<ContextReport>, CollectorError> {
        let Some(contexts) = &self.context else {
            return Ok(None);
        };
        let invalid = |m: String| CollectorError::InvalidArgument(m);
        if contexts.is_empty() || contexts.iter().any(|l| !(l.is_finite() && *l >= 0.0)) {
            return Err(invalid("--context takes token counts ≥ 0".into()));
        }
        let kv_ratio = self.kv_ratio.unwrap_or(KV_RATIO_8B_BF16);
        if !(kv_ratio.is_finite() && kv_ratio >= 0.0 && (0.0..=1.0).contains(&self.draft_kv_share)) {
            return Err(invalid("--kv-ratio must be ≥ 0 and --draft-kv-share in [0, 1]".into()));
        }
        let (step_costs, source) = match (&self.forward, &self.forward_plain) {
            (Some(with), Some(without)) => forward_costs(with, without)?,
            _ => self.named_step_costs(report, kv_ratio)?,
        };
        let k = report
            .measured
            .as_ref()
            .map_or(*self.kappa.last().unwrap_or(&1), |m| m.k);
        let draft_tokens = report.measured.as_ref().map_or(f64::from(k), |m| m.draft_tokens);
        Ok(Some(ContextReport::new(
            step_costs,
            &source,
            k,
            draft_tokens,
            contexts,
            report.measured.as_ref().map(|m| m.measured_e),
            self.batch,
        )))
    }

    /// `--step-costs`: the roofline on the report's ridge and draft cost with the KV read, a
    /// published fit, or a fit in a JSON file; with words saying which.
    fn named_step_costs(&self, report: &ModelReport, kv_ratio: f64) -> Result<(StepCosts, String), CollectorError> {
        let invalid = |m: String| CollectorError::InvalidArgument(m);
        Ok(match self.step_costs.as_str() {
            "roofline" => (
                StepCosts::Roofline {
                    costs: Costs {
                        draft_cost: report.draft_cost,
                        ridge_tokens: report.ridge_tokens,
                    },
                    kv_ratio,
                    draft_kv_share: self.draft_kv_share,
                },
                format!(
                    "the roofline, ridge {} ({}), c = {}, KV ratio {kv_ratio:.3e}, drafter KV share {}",
                    report.ridge_tokens, report.gpu, report.draft_cost, self.draft_kv_share
                ),
            ),
            "llama8b-h100" => (
                StepCosts::Linear(LinearStepCosts::LLAMA8B_H100),
                "SpecDecode-Bench's linear fit for Llama-3.1-8B with EAGLE on one H100 under vLLM".to_string(),
            ),
            file => {
                let text = crate::results_folder::history::read_bounded(std::path::Path::new(file))
                    .map_err(|e| invalid(format!("--step-costs: cannot read {file}: {e}")))?;
                let fit: LinearStepCosts = serde_json::from_str(&text)
                    .map_err(|e| invalid(format!("--step-costs: {file} is not a linear step-cost fit: {e}")))?;
                (StepCosts::Linear(fit), format!("the linear fit in {file}"))
            }
        })
    }
}

/// `--forward FILE --forward-plain FILE`: the linear step costs `vllm bench forward`'s cases give.
fn forward_costs(with: &std::path::Path, without: &std::path::Path) -> Result<(StepCosts, String), CollectorError> {
    let read = |path: &std::path::Path| {
        let text = crate::results_folder::history::read_bounded(path)
            .map_err(|e| CollectorError::InvalidArgument(format!("--forward: cannot read {}: {e}", path.display())))?;
        speclens_shared::model::forward::read_cases(&text)
            .map_err(|e| CollectorError::InvalidArgument(format!("--forward: {}: {e}", path.display())))
    };
    let fit = speclens_shared::model::forward::fit(&read(with)?, &read(without)?)
        .map_err(|e| CollectorError::InvalidArgument(format!("--forward: {e}")))?;
    Ok((
        StepCosts::Linear(fit),
        format!(
            "a linear fit of vllm bench forward's cases in {} and {} (the passes alone: no sampling or CPU step overhead)",
            with.display(),
            without.display()
        ),
    ))
}

impl ServeArgs {
    /// The dashboard server these flags ask for.
    pub fn settings(&self) -> Result<ServeSettings, CollectorError> {
        ServeSettings::new(
            SocketAddr::new(self.host, self.port),
            self.token.clone(),
            self.web_dir.clone(),
            self.results_dir.clone(),
        )
    }
}

/// The bench plan of a full argv (`["speclens", "bench", …]`), for tests.
pub fn bench_plan_of(argv: &[&str]) -> Result<crate::bench::Plan, CollectorError> {
    match Cli::try_parse_from(argv)
        .map_err(|e| CollectorError::InvalidArgument(e.to_string()))?
        .command
    {
        Command::Bench(args) => args.plan(),
        _ => Err(CollectorError::InvalidArgument("not a bench command line".into())),
    }
}
