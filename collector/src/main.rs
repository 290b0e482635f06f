//! `speclens` binary entry point: parse the command line, set up logging, run, map errors to
//! an exit code (0 success, 1 the run failed, 2 usage errors, 3 a `--fail-if` gate held,
//! 130 / 143 a signal stopped the run).

use std::process::ExitCode;

use clap::Parser;
use speclens::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SPECLENS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let code = err
                .downcast_ref::<speclens::CollectorError>()
                .map_or(1, |e| e.exit_code());
            if code != 0 {
                let text = format!("{err:#}");
                eprintln!("speclens: error: {}", speclens::console::printable(&text));
            }
            ExitCode::from(code)
        }
    }
}

/// The runtime: one worker per core, but one fewer for the commands that generate load. Their
/// records are folded on the thread that blocks on the command (the fold reads every response's
/// events), so the workers that move the bytes leave that core to it; on two cores this cut the
/// client's CPU per request by a fifth and raised its req/s (docs/PERFORMANCE.md).
fn runtime(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    let generates_load = matches!(
        command,
        Command::Bench(_) | Command::Accept(_) | Command::Sweep(_) | Command::Demo(_)
    );
    if generates_load && std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        builder.worker_threads(cores.saturating_sub(1).max(1));
    }
    builder.enable_all().build()
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let runtime = runtime(&cli.command)?;
    match cli.command {
        Command::Serve(args) => runtime.block_on(speclens::serve::run(args.settings()?))?,
        Command::Sim(args) => runtime.block_on(speclens::sim::run(args.settings()?))?,
        Command::Bench(args) => {
            runtime.block_on(speclens::bench::run(args.plan()?))?;
        }
        Command::Demo(a) => runtime.block_on(speclens::commands::demo::run(a.port, a.web_dir, a.out))?,
        Command::Accept(args) => {
            runtime.block_on(speclens::commands::accept::run(args.plan()?))?;
        }
        Command::Sweep(args) => runtime.block_on(speclens::commands::sweep::run(args.plan()?))?,
        Command::Read(args) => speclens::commands::read::run(&args.dir)?,
        Command::Check(args) => speclens::commands::check::run(&args.plan()?)?,
        Command::Report(args) => speclens::commands::report::run(args.plan(), args.web_dir)?,
        Command::Model(args) => {
            let report = args.report()?;
            match (&args.calibrate, &report.measured) {
                (Some(sweep), Some(m)) => speclens::commands::model::calibrate(
                    sweep,
                    m.measured_e,
                    m.draft_tokens,
                    report.draft_cost,
                    args.json,
                )?,
                _ => speclens::commands::model::run(&report, args.json)?,
            }
            if let Some(context) = args.context_report(&report)? {
                speclens::commands::model::run_context(&context, args.json)?;
            }
        }
        Command::Scrape(args) => {
            runtime.block_on(speclens::commands::scrape::run(&args.url, args.watch, args.interval))?
        }
        Command::Probe(args) => runtime.block_on(speclens::commands::probe::run(args.plan()?))?,
        Command::Rules(args) => speclens::commands::watch::rules(&args.settings()?, args.out.as_ref())?,
        Command::Grafana(args) => {
            speclens::commands::watch::dashboard(&args.window, args.engine.engine(), args.out.as_ref())?
        }
    }
    Ok(())
}
