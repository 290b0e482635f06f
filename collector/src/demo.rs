//! `speclens demo`: the whole product on one machine without a GPU. Starts a speculative and a
//! plain `speclens sim` in-process (timed, a quarter of real time), measures acceptance per
//! category, sweeps concurrency to find where speculation stops paying, prints the reports and
//! leaves the dashboard serving the what-if page seeded with what was measured.

use std::path::PathBuf;

use clap::Parser;

use crate::cli::{AcceptArgs, Cli, Command, ReportArgs, SimArgs, SweepArgs};
use crate::error::CollectorError;
use crate::sim::{self, SimSettings};

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

fn parse<T>(argv: &[&str], pick: impl FnOnce(Command) -> Option<T>) -> Result<T, CollectorError> {
    let mut full = vec!["speclens"];
    full.extend_from_slice(argv);
    let cli = Cli::try_parse_from(full).map_err(|e| CollectorError::InvalidArgument(e.to_string()))?;
    pick(cli.command).ok_or_else(|| CollectorError::InvalidArgument("demo: wrong subcommand".into()))
}

/// `speclens demo`.
pub async fn run(port: u16, web_dir: Option<PathBuf>, out: Option<PathBuf>) -> Result<(), CollectorError> {
    // Fail early, before any measuring, if the dashboard cannot be served.
    let web_dir = crate::serve::resolve_web_dir(web_dir)?;
    let assets = web_dir.clone();
    let out = out.unwrap_or_else(|| crate::bench::report::default_out_dir("demo"));
    std::fs::create_dir_all(&out)
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out.display())))?;

    let timing = [
        "--time-scale",
        "0.25",
        "--step-ms",
        "12",
        "--ridge",
        "295",
        "--port",
        "0",
    ];
    let spec_flags = [
        &[
            "sim",
            "--num-spec-tokens",
            "3",
            "--acceptance-rates",
            "0.82,0.62,0.45",
            "--model",
            "speclens/sim-8b",
        ][..],
        &timing[..],
    ]
    .concat();
    let base_flags = [&["sim", "--model", "speclens/sim-8b"][..], &timing[..]].concat();
    let spec_args: SimArgs = parse(&spec_flags, |c| if let Command::Sim(a) = c { Some(*a) } else { None })?;
    let base_args: SimArgs = parse(&base_flags, |c| if let Command::Sim(a) = c { Some(*a) } else { None })?;
    let spec = sim::start(SimSettings::from_args(spec_args)?).await?;
    let base = sim::start(SimSettings::from_args(base_args)?).await?;
    let spec_url = format!("http://{}", spec.addr);
    let base_url = format!("http://{}", base.addr);
    println!("speclens demo: a speculative sim (k = 3, per-position acceptance 0.82, 0.62, 0.45) at {spec_url}");
    println!("               and a plain sim at {base_url}, both timed at a quarter of real time.\n");

    // The dashboard serves from the start: the live page follows each run of the demo.
    let hub = crate::live::LiveHub::new(64);
    let serve = crate::serve::ServeSettings {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        token: None,
        web_dir,
        fragment: Some("live".into()),
        results_dir: out.clone(),
    };
    let dashboard = crate::serve::start(&serve, hub.clone()).await?;
    println!(
        "speclens dashboard: {}  (live while the demo measures)\n",
        dashboard.url
    );

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
    crate::bench::report::write_atomic(&dataset, lines.as_bytes())?;
    let accept_dir = out.join("accept");
    let accept_args: AcceptArgs = parse(
        &[
            "accept",
            "--url",
            &spec_url,
            "--dataset-path",
            &dataset.to_string_lossy(),
            "--requests-per-category",
            "12",
            "--request-rate",
            "40",
            "--output-tokens",
            "64",
            "--out",
            &accept_dir.to_string_lossy(),
        ],
        |c| if let Command::Accept(a) = c { Some(*a) } else { None },
    )?;
    let rows = crate::accept::run_with(accept_args, Some(hub.clone())).await?;
    println!();

    let sweep_dir = out.join("sweep");
    let sweep_args: SweepArgs = parse(
        &[
            "sweep",
            "--spec-url",
            &spec_url,
            "--base-url",
            &base_url,
            "--concurrency",
            "1,16,64,128,192,256,320",
            "--requests-per-slot",
            "2",
            "--input-tokens",
            "32",
            "--output-tokens",
            "48",
            "--no-stream",
            "--out",
            &sweep_dir.to_string_lossy(),
        ],
        |c| if let Command::Sweep(a) = c { Some(*a) } else { None },
    )?;
    crate::sweep::run_with(sweep_args, Some(hub.clone())).await?;

    // A static report of everything measured, to open anywhere from one file.
    let report_args: ReportArgs = parse(
        &[
            "report",
            &out.to_string_lossy(),
            "-o",
            &out.join("report.html").to_string_lossy(),
            "--title",
            "speclens demo",
        ],
        |c| if let Command::Report(a) = c { Some(a) } else { None },
    )?;
    match crate::report::write(&report_args, &assets) {
        Ok(line) => println!(
            "
{line}"
        ),
        Err(e) => eprintln!("speclens: the static report was not written: {e}"),
    }

    // Seed the what-if page with what was measured: pooled E and per-position rates.
    let steps: u64 = rows.iter().map(|r| r.num_spec_steps).sum();
    let accepted: u64 = rows.iter().map(|r| r.accepted_tokens).sum();
    let mut fragment = String::from("whatif?");
    if steps > 0 {
        let e = 1.0 + accepted as f64 / steps as f64;
        let mut rates = [0.0; 3];
        for r in &rows {
            for (pos, rate) in &r.per_position_acceptance_rates {
                if let Some(slot) = rates.get_mut(*pos as usize) {
                    *slot += rate * r.num_spec_steps as f64 / steps as f64;
                }
            }
        }
        let rates: Vec<String> = rates.iter().map(|r| format!("{r:.3}")).collect();
        fragment.push_str(&format!("e={e:.3}&k=3&rates={}&batch=64", rates.join(",")));
    } else {
        fragment.push_str("k=3");
    }
    let base_url = dashboard.url.split('#').next().unwrap_or(&dashboard.url).to_string();
    println!("\nThe what-if page, seeded with the measured acceptance:");
    println!("speclens what-if: {base_url}#{fragment}");
    println!("(past runs: {base_url}#runs) — press Ctrl-C to stop.");
    let _ = tokio::signal::ctrl_c().await;
    let served = dashboard.stop().await;
    let _ = spec.stop().await;
    let _ = base.stop().await;
    served
}
