//! `speclens sweep`: the same sweep of concurrencies (closed loop) or request rates (open loop)
//! against one or more speculative arms and a plain server, `--repeats` `speclens bench` runs
//! per arm and point (the median's result is `spec-c<N>.json` / `<arm>-c<N>.json` /
//! `base-r<rate>.json`, readable as `vllm bench serve` results), then each arm's ratio table
//! (steady-state throughputs by concurrency, median E2E latencies by rate) with the repeats'
//! spread, the measured crossings with their intervals, latency and engine load beside them,
//! the model's prediction from the measured acceptance length, and the recommendation.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use speclens_shared::engine::Engine;
use speclens_shared::model::speedup::Costs;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::sweep::arms::{self, NamedPoint, BASE_ARM};
use speclens_shared::sweep::contexts::{distinct_lengths, ContextAxis, ContextInput, ContextSweep};
use speclens_shared::sweep::{repeats_settled, AdaptiveArm, Axis, EngineLines, Level, SweepFile};

use super::sweep_points::{category_tpot, Measured};
use crate::bench;
use crate::error::{CollectorError, Signal};
use crate::live::LiveHub;
use crate::session::Session;

/// File name of one point.
pub fn point_file(arm: &str, level: Level) -> String {
    format!("{}.json", arms::point_id(arm, level))
}

/// A sweep: the same run at each level (a closed loop's concurrency, or an open loop's request
/// rate), against each arm.
#[derive(Clone)]
pub struct Plan {
    /// The arms by name (`base` is the plain one) and their servers' base URLs.
    pub arms: Vec<(String, String)>,
    /// The arms whose servers run a draft-length schedule (`--adaptive`), each with the
    /// schedule it was asked to run when given.
    pub adaptive: Vec<AdaptiveArm>,
    /// The speculative servers' own vLLM `--speculative-config`, kept in the recommended line.
    pub speculative_config: Option<serde_json::Value>,
    /// The levels, all of one axis.
    pub levels: Vec<Level>,
    /// Requests per concurrency slot at each concurrency point, and at least `min_requests`.
    pub requests_per_slot: u64,
    /// Seconds of arrivals at each rate point (rate × this many requests, at least
    /// `min_requests`).
    pub seconds_per_rate: f64,
    pub min_requests: u64,
    /// Runs per point at least; the median counts, the others give its spread.
    pub repeats: u32,
    /// Runs per point at most: after `repeats`, more while the runs disagree by more than
    /// `repeat_spread` (the median of five survives two disturbed runs, of three only one).
    pub max_repeats: u32,
    /// The repeats' largest tolerated spread, (max − min) / median.
    pub repeat_spread: f64,
    /// Every point's run: target settings, workload, scrape and percentiles (its servers,
    /// load, label and folder are set per point).
    pub point: bench::Plan,
    /// The model's costs for the prediction.
    pub costs: Costs,
    /// Whether the draft cost was given (`--draft-cost`); at its default, 0, a note says what
    /// it assumes unless the servers' proposer is known to cost nothing.
    pub draft_cost_given: bool,
    /// Results folder (None: `speclens-results/<time>-sweep/`).
    pub out: Option<PathBuf>,
    /// Print the points and run nothing.
    pub dry_run: bool,
    /// Serve the live dashboard on this port while the sweep runs.
    pub dashboard_port: Option<u16>,
    /// Go on when an arm's server does not match its role (a plain arm that speculates, a
    /// speculative one that does not); the warning is kept in `sweep.json`.
    pub allow_mixed_arms: bool,
    /// Print the detail tables on the console (else they go to `sweep-detail.txt`).
    pub verbose: bool,
    /// Print every engine's config lines (else the reported engine's).
    pub all_engine_lines: bool,
    /// Pool points an earlier sweep left in the folder even where their server or workload
    /// differs from this sweep's (they are left out otherwise).
    pub join_stale: bool,
    /// A trace's send offsets at its own speed (seconds from the first request after the
    /// warm-up): each rate level replays it sped up to that mean rate.
    pub trace_offsets_s: Option<std::sync::Arc<[f64]>>,
    /// The lengths to sweep (`--input-tokens` or `--prefix-tokens` with several): one
    /// concurrency sweep each, the shortest in the sweep's folder, each longer one in
    /// `context-<L>/`. Empty or one: the workload's own length only.
    pub contexts: Vec<u32>,
    /// What `contexts` lengthens: each prompt's input, or the prefix every prompt shares.
    pub context_axis: ContextAxis,
    /// The KV term the model's B*(L) charges, and the drafter's share of it.
    pub kv_ratio: f64,
    pub draft_kv_share: f64,
    /// The concurrencies the deployment runs at: the recommendation's cuts stay two batch
    /// sizes from them.
    pub operating_concurrency: Vec<u64>,
}

/// One point of a sweep.
struct Point<'a> {
    arm: &'a str,
    url: &'a str,
    level: Level,
    requests: u64,
}

impl Plan {
    pub fn check(&self) -> Result<(), CollectorError> {
        let invalid = |m: &str| Err(CollectorError::InvalidArgument(m.into()));
        let axis = self.levels.first().map(|l| l.axis());
        let valid = |l: &Level| match l {
            Level::Concurrency(c) => *c >= 1,
            Level::Rate(r) => r.is_finite() && *r > 0.0,
        };
        if axis.is_none() || !self.levels.iter().all(|l| valid(l) && Some(l.axis()) == axis) {
            return invalid("--concurrency takes levels ≥ 1, --request-rate finite rates > 0 (one of the two)");
        }
        if axis == Some(Axis::RequestRate) && !(self.seconds_per_rate.is_finite() && self.seconds_per_rate > 0.0) {
            return invalid("--seconds-per-rate must be a finite number of seconds > 0");
        }
        if self.requests_per_slot == 0 && self.min_requests == 0 {
            return invalid("--requests-per-slot or --min-requests must be at least 1");
        }
        if let Some(name) = self
            .adaptive
            .iter()
            .map(|a| &a.name)
            .find(|a| *a == BASE_ARM || !self.arms.iter().any(|(arm, _)| arm == *a))
        {
            return Err(CollectorError::InvalidArgument(format!(
                "--adaptive {name}: name a speculative arm of this sweep (--arm {name}=URL)"
            )));
        }
        if self.repeats == 0 {
            return invalid("--repeats must be at least 1");
        }
        if self.max_repeats < self.repeats {
            return invalid("--max-repeats must be at least --repeats");
        }
        if !(self.repeat_spread.is_finite() && self.repeat_spread >= 0.0) {
            return invalid("--repeat-spread must be a finite percentage ≥ 0");
        }
        let c = &self.costs;
        if !(c.draft_cost.is_finite() && c.draft_cost >= 0.0 && c.ridge_tokens.is_finite() && c.ridge_tokens > 0.0) {
            return invalid("--draft-cost must be a finite number ≥ 0 and --ridge one > 0");
        }
        let flag = self.context_axis.flag();
        if self.context_axis == ContextAxis::InputTokens && self.contexts.contains(&0) {
            return invalid("--input-tokens takes lengths ≥ 1");
        }
        let several = self.input_lengths().len() > 1;
        if several && axis == Some(Axis::RequestRate) {
            return invalid(&format!(
                "{flag} with several lengths sweeps concurrency levels (--concurrency), not rates"
            ));
        }
        if several {
            if self.context_axis == ContextAxis::PrefixTokens
                && !matches!(self.point.workload.dataset, bench::workload::Dataset::Synthetic)
            {
                return invalid(&format!("{flag} with several lengths sweeps synthetic prompts (--dataset synthetic): a dataset's prompts have their own lengths"));
            }
            // Every length's prompts exist before anything is sent.
            for &length in &self.input_lengths() {
                self.clone_for_context(length)?;
            }
        }
        if !(self.kv_ratio.is_finite() && self.kv_ratio >= 0.0 && (0.0..=1.0).contains(&self.draft_kv_share)) {
            return invalid("--kv-ratio must be ≥ 0 and --draft-kv-share in [0, 1]");
        }
        // Every point's run: the same settings, checked once before anything is sent.
        self.point.check_settings()
    }

    /// A note when the model prices a draft at the default c = 0 (a prompt-lookup proposer's)
    /// and the servers' `--speculative-config` does not name a proposer that costs nothing: an
    /// EAGLE, MTP or draft-model user would otherwise read a B* that leaves the drafter out.
    fn draft_cost_note(&self) -> Option<&'static str> {
        // vLLM's method, or its older form `"model": "[ngram]"`.
        let config = self.speculative_config.as_ref();
        let method = config
            .and_then(|c| c["method"].as_str().or(c["model"].as_str()))
            .map(str::to_ascii_lowercase);
        if self.draft_cost_given || matches!(method.as_deref(), Some("ngram" | "[ngram]" | "ngram_gpu" | "suffix")) {
            return None;
        }
        Some("Note: the model prices a draft at --draft-cost 0, a prompt-lookup (n-gram) proposer's; an EAGLE, MTP or draft-model proposer costs a share of a target step: give it as --draft-cost (a draft pass's time ÷ a target step's; `speclens model --forward` reads both from `vllm bench forward`). The measured crossing does not depend on it; the model's B*, its schedule and the calibrated prediction do.\n")
    }

    /// This plan at one input length, with no context list of its own: synthetic prompts of
    /// that length, or SPEED-Bench's throughput split of it.
    fn clone_for_context(&self, length: u32) -> Result<Plan, CollectorError> {
        let mut plan = self.clone();
        match self.context_axis {
            ContextAxis::InputTokens => {
                plan.point.workload.input_tokens = length;
                plan.point.workload.dataset = self.point.workload.dataset.at_input_length(length)?;
            }
            ContextAxis::PrefixTokens => plan.point.workload.prefix_tokens = length,
        }
        plan.contexts = Vec::new();
        Ok(plan)
    }

    /// The console's heading of one length's sweep.
    fn length_heading(&self, length: u32) -> String {
        match self.context_axis {
            ContextAxis::InputTokens => match &self.point.workload.dataset {
                bench::workload::Dataset::SpeedBench(_) => format!(
                    "\nInput tokens {length} (SPEED-Bench {}):\n",
                    bench::workload::speed_bench_split_name(length).unwrap_or("split")
                ),
                _ => format!("\nInput tokens {length}:\n"),
            },
            ContextAxis::PrefixTokens => format!("\nShared prefix {length} tokens:\n"),
        }
    }

    /// The input lengths a context sweep measures, shortest first, each once (`256,256` is
    /// one length: no context sweep).
    fn input_lengths(&self) -> Vec<u32> {
        distinct_lengths(&self.contexts)
    }

    /// The folder name and path of the input length `input_tokens`: the sweep's own folder
    /// for the shortest, `context-<L>/` for each longer one.
    fn length_folder(out: &Path, shortest: bool, input_tokens: u32) -> (String, PathBuf) {
        if shortest {
            (String::new(), out.to_path_buf())
        } else {
            let name = context_folder(input_tokens);
            (name.clone(), out.join(name))
        }
    }

    fn points(&self) -> Vec<Point<'_>> {
        self.arms
            .iter()
            .flat_map(|(arm, url)| {
                self.levels.iter().map(move |level| Point {
                    arm,
                    url,
                    level: *level,
                    requests: match (level, &self.trace_offsets_s) {
                        // A trace is replayed whole at every rate.
                        (Level::Rate(_), Some(trace)) => trace.len() as u64,
                        (Level::Concurrency(c), _) => (c * self.requests_per_slot).max(self.min_requests),
                        (Level::Rate(r), None) => ((r * self.seconds_per_rate).ceil() as u64).max(self.min_requests),
                    },
                })
            })
            .collect()
    }

    /// The bench run of one point's `repeat` (1-based). The metrics URLs given belong to the
    /// one speculative arm.
    fn point_plan(&self, point: &Point<'_>, repeat: u32, out: &std::path::Path) -> bench::Plan {
        let mut plan = self.point.clone();
        plan.target.urls = vec![point.url.to_string()];
        plan.load = match point.level {
            Level::Concurrency(c) => bench::plan::Load {
                concurrency: Some(c),
                prompts: point.requests,
                ..bench::plan::Load::closed_loop(None, 0)
            },
            // A trace at this mean rate: its offsets sped up by rate ÷ its own rate.
            Level::Rate(r) if self.trace_offsets_s.is_some() => bench::plan::Load {
                fixed_offsets_s: self.trace_offsets_s.as_ref().map(|t| trace_at_rate(t, r)),
                prompts: point.requests,
                ..bench::plan::Load::closed_loop(self.point.load.concurrency, 0)
            },
            // Open loop: every arm gets the same arrival times (the same seed).
            Level::Rate(r) => bench::plan::Load {
                request_rate: Some(r),
                arrival: self.point.load.arrival,
                burstiness: self.point.load.burstiness,
                prompts: point.requests,
                ..bench::plan::Load::closed_loop(self.point.load.concurrency, 0)
            },
        };
        plan.load.warmup = self.point.load.warmup;
        plan.load.drain = self.point.load.drain;
        if point.arm == BASE_ARM {
            plan.scrape.metrics_urls.clear();
        }
        let id = arms::point_id(point.arm, point.level);
        plan.output.label = id.clone();
        plan.output.dir = Some(if self.max_repeats == 1 {
            out.join(id)
        } else {
            out.join(format!("{id}-r{repeat}"))
        });
        plan.output.print = false;
        plan.dashboard_port = None;
        plan
    }
}

/// A trace's offsets replayed at mean rate `rate`: its own rate is (requests − 1) ÷ its span,
/// so each offset is divided by rate ÷ that (a one-request trace is one send at 0).
fn trace_at_rate(offsets_s: &[f64], rate: f64) -> std::sync::Arc<[f64]> {
    let span = offsets_s.last().copied().unwrap_or(0.0);
    if offsets_s.len() < 2 || span <= 0.0 {
        return offsets_s.into();
    }
    let own_rate = (offsets_s.len() - 1) as f64 / span;
    offsets_s.iter().map(|o| o * own_rate / rate).collect()
}

/// A decode time per output token assumed by the plan's time estimate: an 8B model's TPOT on
/// one H100 at moderate load. The server's own TPOT scales the estimate.
const ASSUMED_TPOT_MS: f64 = 10.0;

/// The plan's first line: points, runs with repeats (the settling rule's least and most), and
/// requests.
fn plan_heading(plan: &Plan, points: &[Point<'_>], out: &std::path::Path) -> String {
    let (least, most) = (u64::from(plan.repeats), u64::from(plan.max_repeats.max(plan.repeats)));
    let requests: u64 = points.iter().map(|p| p.requests).sum();
    let runs = |n: u64| n * points.len() as u64;
    let each = if least == most {
        format!("each run {least} time{}", if least == 1 { "" } else { "s" })
    } else {
        format!(
            "each run {least}–{most} times (more while its runs differ by over {:.0} %)",
            plan.repeat_spread * 100.0
        )
    };
    let span = |a: u64, b: u64| if a == b { a.to_string() } else { format!("{a}–{b}") };
    format!(
        "Sweep plan: {} points ({} arms × {} levels), {each}: {} runs, {} requests, into {}:\n",
        points.len(),
        plan.arms.len(),
        plan.levels.len(),
        span(runs(least), runs(most)),
        span(requests * least, requests * most),
        out.display()
    )
}

/// The plan's wall-time estimate, and how it was made: each closed-loop point as waves of
/// `concurrency` requests, each wave `output_tokens` decode steps of [`ASSUMED_TPOT_MS`]; each
/// rate point its arrivals' span plus one request's time.
fn plan_estimate(plan: &Plan, points: &[Point<'_>]) -> String {
    let output_tokens = f64::from(plan.point.workload.output_tokens.max(1));
    let request_s = output_tokens * ASSUMED_TPOT_MS / 1000.0;
    let run_s: f64 = points
        .iter()
        .map(|p| match p.level {
            Level::Concurrency(c) => p.requests.div_ceil(c.max(1)) as f64 * request_s,
            Level::Rate(r) if r > 0.0 => p.requests as f64 / r + request_s,
            Level::Rate(_) => request_s,
        })
        .sum();
    let minutes = |runs: u32| run_s * f64::from(runs) / 60.0;
    let (least, most) = (minutes(plan.repeats), minutes(plan.max_repeats.max(plan.repeats)));
    let span = if (most - least).abs() < 0.05 {
        format!("{least:.1} min")
    } else {
        format!("{least:.1}–{most:.1} min")
    };
    format!(
        "Estimated time: {span} (at {ASSUMED_TPOT_MS:.0} ms per output token, {output_tokens:.0} tokens a request, \
         closed-loop points in waves of their concurrency; it scales with the server's TPOT)\n"
    )
}

/// `speclens sweep`.
pub async fn run(plan: Plan) -> Result<(), CollectorError> {
    run_with(plan, None).await.map(|_| ())
}

/// A sweep feeding `hub` (a dashboard another command serves) when given; returns its table
/// (`None` after `--dry-run`).
pub async fn run_with(plan: Plan, hub: Option<LiveHub>) -> Result<Option<SweepFile>, CollectorError> {
    plan.check()?;
    if let Some(note) = plan.draft_cost_note() {
        crate::console::status(note);
    }
    if plan.input_lengths().len() > 1 {
        return run_contexts(plan, hub).await;
    }
    run_one(plan, hub, true).await
}

/// The folder of one input length's sweep inside a context sweep's folder.
pub fn context_folder(input_tokens: u32) -> String {
    format!("context-{input_tokens}")
}

/// A sweep over input lengths: one concurrency sweep per length (the shortest in `out`, the
/// others in `out/context-<L>/`), all on one dashboard, then B* per context, L* per
/// concurrency and what moved, written into the shortest's `sweep.json`. The folder is locked
/// for the whole run; a signal or an error between or during lengths still writes the summary
/// of the lengths finished, naming those not measured.
async fn run_contexts(plan: Plan, hub: Option<LiveHub>) -> Result<Option<SweepFile>, CollectorError> {
    let out = plan
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("speclens-results").join(sweep_stamp()));
    let contexts = plan.input_lengths();
    let per_context = plan.points().len();
    crate::console::status(&format!(
        "Context sweep: {} lengths of {} ({}) × {per_context} points = {} points\n",
        contexts.len(),
        plan.context_axis.tokens_name(),
        contexts.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        contexts.len() * per_context
    ));
    if plan.dry_run {
        print_context_plans(&plan, &contexts, &out)?;
        return Ok(None);
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out.display())))?;
    let _lock = crate::results_folder::write::lock_dir(&out)?;
    let mut session = Session::new(hub, plan.dashboard_port);
    session.serve(plan.dashboard_port, out.clone()).await?;
    // A signal between two lengths (no sweep listening) stops before the next one.
    let caught: Arc<OnceLock<Signal>> = Arc::default();
    let watcher = tokio::spawn({
        let caught = caught.clone();
        async move {
            let _ = caught.set(crate::net::stop_signal().await);
        }
    });
    let mut measured = Vec::new();
    let mut failure = None;
    for (i, &input_tokens) in contexts.iter().enumerate() {
        if caught.get().is_some() {
            break;
        }
        let (folder, path) = Plan::length_folder(&out, i == 0, input_tokens);
        let mut one = plan.clone_for_context(input_tokens)?;
        one.out = Some(path);
        one.dashboard_port = None;
        crate::console::status(&plan.length_heading(input_tokens));
        // The shortest length's folder is this sweep's own, locked above.
        match run_one(one, Some(session.hub.clone()), i > 0).await {
            Ok(Some(table)) => measured.push((input_tokens, folder, table)),
            Ok(None) => {}
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    watcher.abort();
    let stopped = caught.get().copied();
    finish_contexts(&plan, &contexts, &measured, &out, failure, stopped, session).await
}

/// Each length's plan, for `--dry-run`.
fn print_context_plans(plan: &Plan, contexts: &[u32], out: &Path) -> Result<(), CollectorError> {
    for (i, &input_tokens) in contexts.iter().enumerate() {
        let mut one = plan.clone_for_context(input_tokens)?;
        let (_, folder) = Plan::length_folder(out, i == 0, input_tokens);
        one.out = Some(folder.clone());
        crate::console::status(&plan.length_heading(input_tokens));
        print_plan(&one, &one.points(), &folder);
    }
    crate::console::status("--dry-run: nothing was sent.\n");
    Ok(())
}

/// After the lengths: the summary of those finished into `sweep.json` (naming those not
/// measured), then the sweep's end — the error or signal that stopped it, or its result.
async fn finish_contexts(
    plan: &Plan,
    contexts: &[u32],
    measured: &[(u32, String, SweepFile)],
    out: &Path,
    failure: Option<CollectorError>,
    stopped: Option<Signal>,
    session: Session,
) -> Result<Option<SweepFile>, CollectorError> {
    let not_measured: Vec<u32> = contexts
        .iter()
        .copied()
        .filter(|l| !measured.iter().any(|(m, _, _)| m == l))
        .collect();
    let inputs: Vec<ContextInput<'_>> = measured
        .iter()
        .map(|(input_tokens, folder, sweep)| ContextInput {
            input_tokens: *input_tokens,
            other_prompt_tokens: match plan.context_axis {
                ContextAxis::InputTokens => plan.point.workload.prefix_tokens,
                ContextAxis::PrefixTokens => plan.point.workload.input_tokens,
            },
            output_tokens: plan.point.workload.output_tokens,
            folder: folder.clone(),
            arms: &sweep.arms,
        })
        .collect();
    let table = measured.first().map(|(_, _, first)| {
        let mut summary = ContextSweep::new(&inputs, plan.context_axis, plan.kv_ratio, plan.draft_kv_share);
        summary.not_measured = not_measured.clone();
        SweepFile {
            contexts: Some(summary),
            ..first.clone()
        }
    });
    if let Some(table) = &table {
        crate::results_folder::write::write_atomic(
            &out.join("sweep.json"),
            &crate::results_folder::write::to_json_bytes(table)?,
        )?;
        if let Some(contexts) = &table.contexts {
            crate::console::status(&format!("{}Results: {}\n", contexts.render(), out.display()));
        }
    }
    let summary_note = if table.is_some() {
        format!(
            "the summary of the lengths finished is in {}",
            out.join("sweep.json").display()
        )
    } else {
        "no length finished, so there is no summary".to_string()
    };
    match (failure, stopped) {
        (Some(CollectorError::Interrupted { message, signal }), _) => Err(CollectorError::Interrupted {
            message: format!("{message}; {summary_note} (partial: not measured {not_measured:?})"),
            signal,
        }),
        (Some(e), _) => {
            crate::console::status(&format!("The context sweep stopped: {summary_note}.\n"));
            Err(e)
        }
        (None, Some(signal)) => Err(CollectorError::Interrupted {
            message: format!(
                "stopped by {} between input lengths; {summary_note} (partial: not measured {not_measured:?})",
                signal.name()
            ),
            signal,
        }),
        (None, None) => {
            session.close("the sweep").await?;
            Ok(table)
        }
    }
}

/// One concurrency (or rate) sweep at the workload's own input length; `lock`: take the
/// folder's lock (a context sweep holds its own folder's already).
async fn run_one(plan: Plan, hub: Option<LiveHub>, lock: bool) -> Result<Option<SweepFile>, CollectorError> {
    let out = plan
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("speclens-results").join(sweep_stamp()));
    let points = plan.points();
    print_plan(&plan, &points, &out);
    if plan.dry_run {
        crate::console::status("--dry-run: nothing was sent.\n");
        return Ok(None);
    }
    let warnings = super::arm_check::check_arms(&plan.arms, &plan.point.target, plan.allow_mixed_arms).await?;
    std::fs::create_dir_all(&out)
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out.display())))?;
    let _lock = if lock {
        Some(crate::results_folder::write::lock_dir(&out)?)
    } else {
        None
    };
    let mut session = Session::new(hub, plan.dashboard_port);
    session.serve(plan.dashboard_port, out.clone()).await?;
    let hub = &session.hub;
    let axis = plan.levels.first().map_or(Axis::Concurrency, |l| l.axis());
    let started = crate::results_folder::write::now_rfc3339();
    let mut results: Vec<Measured> = Vec::new();
    let mut stopped = None;
    // A signal between two points (no run listening) stops the sweep before the next one.
    let caught: Arc<OnceLock<Signal>> = Arc::default();
    let watcher = tokio::spawn({
        let caught = caught.clone();
        async move {
            let _ = caught.set(crate::net::stop_signal().await);
        }
    });
    // The folder's earlier sweep.json, read once: its adaptive arms, its spreads and its order.
    let before = super::sweep_points::earlier_sweep(&out);
    let run: Vec<&str> = plan.arms.iter().map(|(name, _)| name.as_str()).collect();
    let adaptive = SweepFile::adaptive_arms(before.as_ref(), &plan.adaptive, &run);
    for p in &points {
        match measure_point(&plan, p, axis, &out, &started, hub, &caught).await? {
            Ok(measured) => {
                results.push(measured);
                // The dashboard follows the sweep: the table of the points so far (made only
                // when a page can watch).
                if hub.attached() {
                    hub.sweep(false, &table_of(&plan, &results, &adaptive)).await;
                }
            }
            Err(signal) => {
                stopped = Some(signal);
                break;
            }
        }
    }
    watcher.abort();
    // Points this folder holds from earlier sweeps (`--arm spec=…`, then `--base-url …`) join
    // the table when they were measured against the same servers and workload.
    let (earlier, earlier_points) =
        super::sweep_points::earlier_points(&out, before.as_ref(), &results, plan.join_stale)?;
    let mut all: Vec<&Measured> = results.iter().chain(&earlier).collect();
    // Arms the folder's earlier sweep named keep their places (so their colours) in its order;
    // new arms follow.
    let order: Vec<&str> = before
        .iter()
        .flat_map(|t| &t.arms.arms)
        .map(|a| a.name.as_str())
        .collect();
    all.sort_by_key(|m| order.iter().position(|n| *n == m.arm).unwrap_or(order.len()));
    let mut table = table_of(&plan, all, &adaptive);
    // What the table itself warns of (a lossy or forced acceptance) is said on the console
    // here; the arms' check said its own when it ran.
    let own_warnings: String = table.warnings.iter().map(|w| format!("Warning: {w}\n")).collect();
    table.warnings.splice(0..0, warnings);
    table.earlier_points = earlier_points;
    crate::results_folder::write::write_atomic(
        &out.join("sweep.json"),
        &crate::results_folder::write::to_json_bytes(&table)?,
    )?;
    hub.sweep(true, &table).await;
    print_outcome(&plan, &table, &results, &own_warnings, &out);
    if let Some(signal) = stopped {
        return Err(CollectorError::Interrupted {
            message: format!(
                "stopped by {}: the sweep's finished points and their table are saved in {}",
                signal.name(),
                out.display()
            ),
            signal,
        });
    }
    session.close("the sweep").await?;
    Ok(Some(table))
}

/// The sweep's outcome on the console: the answer first (the servers' engine named by the
/// points' results), then the table's warnings, the measured tables and the recommendation
/// with that engine's lines (every table and engine with `--verbose` / `--engine-lines all`)
/// and the workload's notes. The whole detail is written to `sweep-detail.txt` beside
/// `sweep.json`, and the console names it.
fn print_outcome(plan: &Plan, table: &SweepFile, results: &[Measured], own_warnings: &str, out: &Path) {
    let engine = results.iter().find_map(|m| {
        m.result
            .config
            .as_ref()?
            .engine
            .as_deref()
            .and_then(Engine::from_owned_by)
    });
    let answer = table.answer(engine);
    let answer = if answer.is_empty() {
        answer
    } else {
        format!("\n{answer}  Results: {}\n", out.display())
    };
    let notes = workload_notes(results);
    let detail_file = out.join("sweep-detail.txt");
    let detail = format!("{}{notes}", table.render());
    let written = crate::results_folder::write::write_atomic(&detail_file, detail.as_bytes());
    let engines = if plan.all_engine_lines {
        EngineLines::All
    } else {
        EngineLines::Only(engine.unwrap_or(Engine::Vllm))
    };
    let pointer = match (&written, plan.verbose) {
        (_, true) => String::new(),
        (Ok(()), false) => format!(
            "Detail (each arm's model and calibration, knee, latency against plain, step cost, engine load, every engine's lines): {} (--verbose prints it here)\n",
            detail_file.display()
        ),
        (Err(e), false) => format!("Detail not written ({e}): --verbose prints it here\n"),
    };
    crate::console::status(&format!(
        "{answer}\n{own_warnings}{}{notes}{pointer}Results: {}\n",
        table.render_with(plan.verbose, engines),
        out.display()
    ));
}

/// The sweep's plan on the console: heading, one line per point, the time estimate.
fn print_plan(plan: &Plan, points: &[Point<'_>], out: &Path) {
    let mut text = plan_heading(plan, points, out);
    for p in points {
        let level = match p.level {
            Level::Concurrency(c) => format!("concurrency {c:>4}"),
            Level::Rate(r) => format!("rate {r:>6} req/s"),
        };
        text.push_str(&format!(
            "  {:<4} {level}: {:>5} requests → {}  ({})\n",
            p.arm,
            p.requests,
            crate::net::redact_url(p.url),
            point_file(p.arm, p.level)
        ));
    }
    text.push_str(&plan_estimate(plan, points));
    crate::console::status(&text);
}

/// The points' workload warnings, once each (every point ran the same workload).
fn workload_notes(results: &[Measured]) -> String {
    let mut notes: Vec<&String> = Vec::new();
    for m in results {
        for w in m.result.notices.iter().flat_map(|n| &n.workload) {
            if !notes.contains(&w) {
                notes.push(w);
            }
        }
    }
    notes.iter().map(|w| format!("Note: {w}\n")).collect()
}

/// Run one point's repeats (at least `repeats`, more up to `max_repeats` while they disagree),
/// keep the median's folder as the point's, and write its `<arm>-<level>.json` (marked with
/// when the sweep `started`). A signal (now
/// or during a run) is returned in place of the point: the sweep ends with those it finished.
async fn measure_point(
    plan: &Plan,
    p: &Point<'_>,
    axis: Axis,
    out: &std::path::Path,
    started: &str,
    hub: &LiveHub,
    caught: &OnceLock<Signal>,
) -> Result<Result<Measured, Signal>, CollectorError> {
    let mut repeats: Vec<(PathBuf, RunResult)> = Vec::new();
    for repeat in 1..=plan.max_repeats {
        if repeat > plan.repeats && settled(axis, &repeats, plan.repeat_spread) {
            break;
        }
        if let Some(signal) = caught.get() {
            return Ok(Err(*signal));
        }
        let run = bench::run_with(plan.point_plan(p, repeat, out), Some(hub.clone())).await?;
        if let Some(signal) = run.interrupted {
            return Ok(Err(signal));
        }
        repeats.push((run.dir, run.result));
    }
    let runs = repeats.len();
    let (dir, mut result, spread) = median_run(axis, repeats);
    result.sweep_started = Some(started.to_string());
    // The median's folder is the point's (`spec-c16/`, as with one repeat); the others keep
    // their `-r<N>` names.
    let point_dir = out.join(arms::point_id(p.arm, p.level));
    if dir != point_dir {
        if point_dir.exists() {
            std::fs::remove_dir_all(&point_dir)
                .map_err(|e| CollectorError::Output(format!("cannot replace {}: {e}", point_dir.display())))?;
        }
        std::fs::rename(&dir, &point_dir)
            .map_err(|e| CollectorError::Output(format!("cannot rename {}: {e}", dir.display())))?;
    }
    let file = out.join(point_file(p.arm, p.level));
    crate::results_folder::write::write_atomic(&file, &crate::results_folder::write::to_json_bytes(&result)?)?;
    let e = result.measured().map_or(String::new(), |m| {
        format!(", acceptance length {:.2} (k = {})", m.e, m.k)
    });
    let spread_text = spread.map_or(String::new(), |(lo, hi)| {
        format!(" (median of {runs}: {lo:.1}–{hi:.1})")
    });
    let figure = axis
        .figure_of(&result)
        .map_or_else(|| "—".to_string(), |v| format!("{v:.1}"));
    let (level, unit) = match p.level {
        Level::Concurrency(c) => (format!("c = {c:>4}"), "output tok/s"),
        Level::Rate(r) => (format!("rate = {r:>6}"), "ms median E2E"),
    };
    crate::console::status(&format!(
        "  {:<4} {level}: {figure:>10} {unit}{spread_text}, {} failed{e}\n",
        p.arm,
        result.failed.unwrap_or(0),
    ));
    Ok(Ok(Measured {
        arm: p.arm.to_string(),
        level: p.level,
        result,
        spread,
        category_tpot_ms: category_tpot(&point_dir)?,
    }))
}

/// Whether a point's runs so far agree on the axis's figure (see [`repeats_settled`]).
fn settled(axis: Axis, repeats: &[(PathBuf, RunResult)], spread: f64) -> bool {
    let values: Option<Vec<f64>> = repeats.iter().map(|(_, r)| axis.figure_of(r)).collect();
    values.is_none_or(|v| repeats_settled(&v, spread))
}

/// The repeat of the median figure (a run that happened, never an average) with its folder,
/// and the repeats' (min, max) of it when there were several.
fn median_run(axis: Axis, mut repeats: Vec<(PathBuf, RunResult)>) -> (PathBuf, RunResult, Option<(f64, f64)>) {
    let of = |r: &RunResult| axis.figure_of(r).unwrap_or(0.0);
    repeats.sort_by(|a, b| of(&a.1).total_cmp(&of(&b.1)));
    let spread = (repeats.len() > 1).then(|| (of(&repeats[0].1), of(&repeats[repeats.len() - 1].1)));
    let middle = (repeats.len() - 1) / 2;
    let (dir, result) = repeats.swap_remove(middle);
    (dir, result, spread)
}

/// The sweep's table from `points` (this sweep's and any earlier ones joined), with the plan's
/// costs, speculative config and adaptive arms.
fn table_of<'a>(plan: &Plan, points: impl IntoIterator<Item = &'a Measured>, adaptive: &[AdaptiveArm]) -> SweepFile {
    let named: Vec<NamedPoint<'_>> = points
        .into_iter()
        .map(|m| NamedPoint {
            arm: &m.arm,
            level: m.level,
            result: &m.result,
            spread: m.spread,
            category_tpot_ms: m.category_tpot_ms.as_ref(),
        })
        .collect();
    SweepFile::of_arms(
        &named,
        plan.costs,
        plan.speculative_config.as_ref(),
        adaptive,
        &plan.operating_concurrency,
    )
}

fn sweep_stamp() -> String {
    crate::results_folder::write::default_out_dir("sweep")
        .file_name()
        .map_or_else(|| "sweep".into(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use speclens_shared::model::speedup::Measured;

    #[test]
    fn point_names() {
        let parse = |n: &str| arms::parse_point_name(n);
        assert_eq!(parse("spec-c16.json"), Some(("spec".into(), Level::Concurrency(16))));
        assert_eq!(parse("base-c256.json"), Some(("base".into(), Level::Concurrency(256))));
        assert_eq!(parse("base-r2.5.json"), Some(("base".into(), Level::Rate(2.5))));
        // Arm names may hold dashes: the level is the last part.
        assert_eq!(
            parse("eagle3-k3-c8.json"),
            Some(("eagle3-k3".into(), Level::Concurrency(8)))
        );
        assert_eq!(parse("result.json"), None);
        assert_eq!(parse("spec-cX.json"), None);
        assert_eq!(parse("spec-r0.json"), None);
        assert_eq!(parse("spec-rinf.json"), None);
        assert_eq!(parse("a b-c4.json"), None);
        assert_eq!(point_file("base", Level::Concurrency(4)), "base-c4.json");
        assert_eq!(point_file("spec", Level::Rate(8.0)), "spec-r8.json");
    }

    #[test]
    fn measured_acceptance_from_either_path() {
        let read = |v: serde_json::Value| serde_json::from_value::<RunResult>(v).unwrap().measured();
        let m = read(serde_json::json!({"spec_decode_acceptance_length": 2.5, "spec_decode_per_position_acceptance_rates": [0.8, 0.5, 0.2],
            "spec_decode_num_drafts": 300, "spec_decode_draft_tokens": 778}))
        .unwrap();
        assert_eq!((m.e, m.k), (2.5, 3));
        assert_eq!(m.draft_tokens, Some(778.0 / 300.0));
        let per_request = serde_json::json!({"spec_decode": {"per_request": {
            "spec_decode_token_weighted_acceptance_length": {"unit": "ratio", "avg": 2.1},
            "spec_decode_zero_step_requests": {"unit": "requests", "avg": 0.0},
            "total_accepted_draft_tokens": {"unit": "tokens", "avg": 9.0},
            "total_draft_tokens": {"unit": "tokens", "avg": 30.0},
            "total_spec_decode_steps": {"unit": "count", "avg": 8.0},
            "pooled_spec_decode_acceptance_histogram": {"0": 3, "1": 4, "4": 1}}}});
        assert_eq!(
            read(per_request),
            Some(Measured {
                e: 2.1,
                k: 4,
                draft_tokens: Some(3.75)
            })
        );
        assert_eq!(read(serde_json::json!({})), None);
    }
}
