//! `speclens demo`: the whole product on one machine without a GPU. Starts a speculative and a
//! plain `speclens sim` in-process (each on its own thread; timed, half of real time), measures acceptance per
//! category, sweeps concurrency to find where speculation stops paying, prints the reports and
//! leaves the dashboard serving the what-if page seeded with what was measured.

use std::path::{Path, PathBuf};

use speclens_shared::model::speedup::Costs;
use speclens_shared::sweep::Level;
use speclens_shared::view::headline::Headline;

use crate::bench;
use crate::bench::plan::{Load, Output, Scrape, Target};
use crate::bench::workload::{Dataset, Workload};
use crate::error::CollectorError;
use crate::session::Session;
use crate::sim::{self, AcceptanceProfile, SimSettings};

/// Prompts of the demo's Spec-Bench-style dataset, by category.
const DEMO_PROMPTS: [(&str, &str); 12] = [
    (
        "summarization",
        "Summarize the following meeting notes in three bullet points.",
    ),
    (
        "summarization",
        "Summarize this article about speculative decoding for a newsletter.",
    ),
    (
        "translation",
        "Translate this paragraph about GPU memory bandwidth into German.",
    ),
    ("translation", "Translate the release notes below into French."),
    (
        "coding",
        "Write a Python function that parses Prometheus text exposition.",
    ),
    (
        "coding",
        "Write code that computes percentiles by linear interpolation.",
    ),
    ("qa", "Why does acceptance fall with draft position?"),
    ("qa", "What limits batch size on a single GPU?"),
    ("writing", "Write a short story about a scheduler that never sleeps."),
    ("writing", "Write an essay on measuring what you optimise."),
    ("math", "Solve for the batch size where two throughput curves meet."),
    ("math", "Calculate the expected tokens per step for alpha 0.7 and k 3."),
];

/// The model both sims serve.
const DEMO_MODEL: &str = "speclens/sim-8b";

/// The sims' clock: half of real time (6 ms steps).
const DEMO_TIME_SCALE: f64 = 0.5;

/// The sims' GPU: a quarter of an H100's roofline ridge, so the crossing (and every point's
/// tokens per second) is a quarter of an H100's. The demo's client and both sims share this
/// machine's CPU, and every streamed token is an event each of them handles: at an H100's rates
/// on a busy 2-core machine they would measure their own CPU, not the model.
const DEMO_COSTS: Costs = Costs {
    draft_cost: 0.0,
    ridge_tokens: 74.0,
};

/// A run of the demo with `prompts` requests of 32 → 48 tokens (or the dataset's prompts),
/// printing nothing (the demo prints its own summary).
fn demo_run(url: &str, workload: Workload, load: Load, out: PathBuf, label: &str) -> bench::Plan {
    let mut target = Target::new(vec![url.to_string()]);
    target.models = vec![DEMO_MODEL.into()];
    bench::Plan {
        target,
        workload,
        load,
        // Four live scrapes a second: the demo's points last a few seconds each, and the
        // engine's gauges (batch, KV cache) are read from the scrapes during a point.
        scrape: Scrape {
            interval: std::time::Duration::from_millis(250),
            ..Scrape::default()
        },
        output: Output {
            dir: Some(out),
            label: label.into(),
            percentiles: vec![99.0],
            goodput: None,
            print: false,
        },
        checks: bench::Checks::default(),
        dashboard_port: None,
    }
}

/// 12 requests per category at 40 requests/s, 64 output tokens, from the demo's questions.
fn accept_plan(spec_url: &str, dataset: &std::path::Path, out: PathBuf) -> crate::commands::accept::Plan {
    let workload = Workload {
        dataset: Dataset::SpecBench(dataset.to_path_buf()),
        categories: Vec::new(),
        input_tokens: 256,
        input_tokens_stddev: 0.0,
        range_ratio: 0.0,
        prefix_tokens: 0,
        output_tokens: 64,
        output_tokens_stddev: 0.0,
        ignore_eos: false,
        temperature: 0.0,
        seed: 0,
        multi_turn: false,
        max_dataset_bytes: crate::bench::datafile::DEFAULT_MAX_DATASET_BYTES,
    };
    let load = Load {
        request_rate: Some(40.0),
        ..Load::closed_loop(None, 1)
    };
    crate::commands::accept::Plan {
        categories: Vec::new(),
        requests_per_category: 12,
        run: demo_run(spec_url, workload, load, out.clone(), "bench"),
        out: Some(out),
        dashboard_port: None,
        by_model: false,
    }
}

/// Both arms at seven concurrencies, 12 apart around both crossings (B* ≈ 56 for k = 3, ≈ 70 for
/// k = 1: below the ridge at 74, where the plain curve is straight enough to interpolate; a
/// crossing between 64 and 80 read the bend as +5 %), 4 requests per slot (so each point has a
/// steady window; 4 requests at concurrency 1), 8 → 24 streamed tokens (so ITL exists; prefill
/// about free, as the model assumes), each point run three times.
fn sweep_plan(spec_url: &str, k1_url: &str, base_url: &str, out: PathBuf) -> crate::commands::sweep::Plan {
    let workload = Workload {
        dataset: Dataset::Synthetic,
        categories: Vec::new(),
        input_tokens: 8,
        input_tokens_stddev: 0.0,
        range_ratio: 0.0,
        prefix_tokens: 0,
        output_tokens: 24,
        output_tokens_stddev: 0.0,
        ignore_eos: false,
        temperature: 0.0,
        seed: 0,
        multi_turn: false,
        max_dataset_bytes: crate::bench::datafile::DEFAULT_MAX_DATASET_BYTES,
    };
    let point = demo_run("", workload, Load::closed_loop(None, 1), out.clone(), "");
    crate::commands::sweep::Plan {
        adaptive: Vec::new(),
        arms: vec![
            ("spec".into(), spec_url.into()),
            ("spec-k1".into(), k1_url.into()),
            ("base".into(), base_url.into()),
        ],
        speculative_config: None,
        levels: [1, 16, 32, 48, 60, 72, 84].map(Level::Concurrency).to_vec(),
        seconds_per_rate: 0.0,
        requests_per_slot: 4,
        min_requests: 4,
        // The demo's wall time is fixed: three runs a point, never more.
        repeats: 3,
        max_repeats: 3,
        repeat_spread: 0.0,
        point,
        costs: DEMO_COSTS,
        // The demo's sims draft at no cost, as the model's c = 0 says.
        draft_cost_given: true,
        out: Some(out),
        dry_run: false,
        dashboard_port: None,
        allow_mixed_arms: false,
        verbose: false,
        all_engine_lines: false,
        join_stale: false,
        trace_offsets_s: None,
        contexts: Vec::new(),
        context_axis: Default::default(),
        kv_ratio: speclens_shared::model::context::KV_RATIO_8B_BF16,
        draft_kv_share: 0.0,
        operating_concurrency: Vec::new(),
    }
}

/// The demo's questions, one category each, as an MT-Bench-style file in `out`.
fn write_dataset(out: &Path) -> Result<PathBuf, CollectorError> {
    let dataset = out.join("demo-questions.jsonl");
    let lines: String = DEMO_PROMPTS
        .iter()
        .enumerate()
        .map(|(i, (cat, text))| {
            format!(
                "{}\n",
                serde_json::json!({"question_id": i, "category": cat, "turns": [text]})
            )
        })
        .collect();
    crate::results_folder::write::write_atomic(&dataset, lines.as_bytes())?;
    Ok(dataset)
}

/// The demo's three sims — speculative k = 3, the same drafter cut to k = 1, and plain — on free
/// ports, said on the console.
async fn start_sims() -> Result<(sim::SimHandle, sim::SimHandle, sim::SimHandle), CollectorError> {
    // Both sims timed at half of real time on the demo's GPU, on free ports, each on a thread
    // and runtime of its own (as separate servers: the client's work never delays their steps).
    let sim = |settings: SimSettings| {
        let mut s = settings;
        s.engine.time_scale = DEMO_TIME_SCALE;
        s.engine.step.ridge_tokens = DEMO_COSTS.ridge_tokens;
        s
    };
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let profile = AcceptanceProfile::from_rates(&[0.82, 0.62, 0.45]).map_err(CollectorError::InvalidArgument)?;
    let spec = sim::start_on_own_thread(sim(SimSettings::new(loopback, DEMO_MODEL).with_profile(profile))).await?;
    // The same drafter cut to one token: a second arm that the sweep compares with k = 3.
    let short = AcceptanceProfile::from_rates(&[0.82]).map_err(CollectorError::InvalidArgument)?;
    let k1 = sim::start_on_own_thread(sim(SimSettings::new(loopback, DEMO_MODEL).with_profile(short))).await?;
    let base = sim::start_on_own_thread(sim(SimSettings::new(loopback, DEMO_MODEL))).await?;
    let (spec_url, k1_url, base_url) = (
        format!("http://{}", spec.addr),
        format!("http://{}", k1.addr),
        format!("http://{}", base.addr),
    );
    crate::statusln!(
        "speclens demo: a speculative sim (k = 3, per-position acceptance 0.82, 0.62, 0.45) at {spec_url},"
    );
    crate::statusln!("               the same drafter cut to k = 1 (acceptance 0.82) at {k1_url}");
    crate::statusln!(
        "               and a plain sim at {base_url}, both timed at half real time on a GPU whose ridge is T* = {} token positions.\n",
        DEMO_COSTS.ridge_tokens
    );
    Ok((spec, k1, base))
}

/// `speclens demo`.
pub async fn run(port: u16, web_dir: Option<PathBuf>, out: Option<PathBuf>) -> Result<(), CollectorError> {
    // Fail early, before any measuring, if the dashboard cannot be served.
    let web_dir = crate::serve::resolve_web_dir(web_dir)?;
    let assets = web_dir.clone();
    let out = out.unwrap_or_else(|| crate::results_folder::write::default_out_dir("demo"));
    std::fs::create_dir_all(&out)
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out.display())))?;

    let (spec, k1, base) = start_sims().await?;
    let (spec_url, k1_url, base_url) = (
        format!("http://{}", spec.addr),
        format!("http://{}", k1.addr),
        format!("http://{}", base.addr),
    );

    // The dashboard serves from the start: the live page follows each run of the demo.
    let mut session = Session::new(None, Some(port));
    let dashboard_url = session.serve_at(port, web_dir, out.clone()).await?;
    crate::statusln!("speclens dashboard: {dashboard_url}  (live while the demo measures)\n");
    let hub = session.hub.clone();

    let dataset = write_dataset(&out)?;
    let accept = accept_plan(&spec_url, &dataset, out.join("accept"));
    crate::commands::accept::run_with(accept, Some(hub.clone())).await?;
    crate::console::status("\n");
    let sweep = crate::commands::sweep::run_with(
        sweep_plan(&spec_url, &k1_url, &base_url, out.join("sweep")),
        Some(hub.clone()),
    )
    .await?;

    // A static report of everything measured, to open anywhere from one file.
    let report = crate::commands::report::Plan {
        inputs: vec![out.clone()],
        destination: crate::commands::report::Destination::File(out.join("report.html")),
        title: "speclens demo".into(),
    };
    match crate::commands::report::write(&report, &assets) {
        Ok(line) => crate::statusln!("\n{line}"),
        Err(e) => eprintln!("speclens: the static report was not written: {e}"),
    }

    // The what-if page seeded with the sweep's headline arm: every parameter the model needs,
    // and the B* the page shows for it printed beside the link.
    let headline = sweep.as_ref().and_then(Headline::of_sweep);
    let (fragment, headline_line) = match &headline {
        Some(h) => (h.whatif_link().0, h.sentence()),
        None => (
            format!("whatif?k=3&gpu=custom&ridge={}", DEMO_COSTS.ridge_tokens),
            "no speculative arm measured acceptance".to_string(),
        ),
    };
    hub.end_session().await;
    let base_url = dashboard_url.split('#').next().unwrap_or(&dashboard_url).to_string();
    crate::statusln!("\nThe overview of everything measured: {base_url}#overview");
    crate::statusln!("\nThe what-if page, seeded with the measured acceptance of {headline_line}:");
    crate::statusln!("speclens what-if: {base_url}#{fragment}");
    crate::statusln!("(past runs: {base_url}#runs) — press Ctrl-C to stop.");
    let _ = crate::net::stop_signal().await;
    let served = session.stop().await;
    let _ = spec.stop().await;
    let _ = k1.stop().await;
    let _ = base.stop().await;
    served
}
