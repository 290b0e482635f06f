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

fn run(cli: Cli) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match cli.command {
        Command::Serve(args) => runtime.block_on(speclens::serve::run(args.settings()?))?,
        Command::Sim(args) => runtime.block_on(speclens::sim::run(args.settings()?))?,
        Command::Bench(args) => {
            runtime.block_on(speclens::bench::run(args.plan()?))?;
        }
        Command::Demo(a) => runtime.block_on(speclens::demo::run(a.port, a.web_dir, a.out))?,
        Command::Accept(args) => {
            runtime.block_on(speclens::accept::run(args.plan()?))?;
        }
        Command::Sweep(args) => runtime.block_on(speclens::sweep::run(args.plan()?))?,
        Command::Read(args) => speclens::read::run(&args.dir)?,
        Command::Check(args) => speclens::check_cmd::run(&args.plan()?)?,
        Command::Report(args) => speclens::report::run(args.plan(), args.web_dir)?,
        Command::Model(args) => speclens::model_cmd::run(&args.report()?, args.json)?,
        Command::Scrape(args) => runtime.block_on(speclens::scrape_cmd::run(&args.url, args.watch, args.interval))?,
        Command::Probe(args) => runtime.block_on(speclens::probe_cmd::run(args.plan()?))?,
    }
    Ok(())
}
