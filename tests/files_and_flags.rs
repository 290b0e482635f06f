//! The interfaces other tools and people rely on: every result file bench, sweep and accept
//! write reads back into the shared types and writes out byte for byte; sweep and accept take
//! the shared target/workload/scrape flags (and `--header`, `--no-scrape` take effect on a
//! sweep); every command's `--help` matches its snapshot; the README's commands and flags parse;
//! exit codes are ripgrep's and a closed pipe ends `read` quietly.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::Parser;
use serde::de::DeserializeOwned;
use serde::Serialize;
use speclens_shared::results::accept::CategoryAcceptance;
use speclens_shared::results::run_list::RunList;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::sweep::SweepFile;

use crate::common::bench::Bench;
use crate::common::{get_text, json_fixture_text, run_speclens, run_speclens_within, workspace, Snapshots, Speclens};

const LIMIT: Duration = Duration::from_secs(120);

/// `path` read as `T` and written back the way speclens writes files: the same bytes.
fn round_trips<T: DeserializeOwned + Serialize>(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let typed: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut again = serde_json::to_string_pretty(&typed).unwrap();
    again.push('\n');
    assert!(again == text, "{} does not round-trip:\n{again}", path.display());
}

fn json_files(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json") && p.file_name().unwrap().to_string_lossy().starts_with(prefix)
        })
        .collect();
    files.sort();
    files
}

/// A `sweep.json` of the earlier layout, which held the first arm's table twice (at the top
/// level and in `arms[0].table`), still reads: as its arms, the top-level copy dropped, and
/// written back with each table once.
#[test]
fn a_sweep_file_that_held_the_first_arm_twice_still_reads_as_its_arms() {
    let text = json_fixture_text("speclens_sweep_first_arm_twice.json");
    let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(raw["rows"].is_array(), "the fixture is of the earlier layout");
    let old: SweepFile = serde_json::from_str(&text).unwrap();
    assert_eq!(old.arms.arms.len(), raw["arms"].as_array().unwrap().len());
    assert!(
        old.plain.is_none(),
        "the top-level copy is not read as plain's own table"
    );
    assert_eq!(serde_json::to_value(old.head()).unwrap(), raw["arms"][0]["table"]);
    let again = serde_json::to_value(&old).unwrap();
    assert!(again.get("rows").is_none(), "{again}");
    assert_eq!(again["arms"], raw["arms"]);
}

#[tokio::test]
async fn every_result_file_reads_into_the_shared_types_and_back_byte_for_byte() {
    let spec = Speclens::instant_spec_sim("0.7", &[]);
    let base = Speclens::instant_plain_sim();
    let results = tempfile::tempdir().unwrap();
    let run = results.path().join("run");
    let (code, out, err) = run_speclens_within(
        &[
            "bench",
            "--url",
            &spec.url(),
            "--num-prompts",
            "12",
            "--output-tokens",
            "16",
            "--percentiles",
            "50,99.9",
            "--quiet",
            "--out",
            run.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{out}{err}");
    round_trips::<RunResult>(&run.join("result.json"));
    let result: RunResult = serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
    assert!(result.extra.contains_key("p99.9_ttft_ms") && result.latency("itl").is_some());

    let sweep = results.path().join("sweep");
    let (code, out, err) = crate::common::sweep_within(
        &spec.url(),
        &base.url(),
        "1,2",
        &sweep,
        &["--min-requests", "4", "--output-tokens", "16"],
        LIMIT,
    );
    assert_eq!(code, 0, "{out}{err}");
    round_trips::<SweepFile>(&sweep.join("sweep.json"));
    // Each table once: the arm's own, no copy of it at the top level.
    let written = crate::common::read_json(&sweep.join("sweep.json"));
    assert!(
        written.get("rows").is_none()
            && written["arms"][0]["table"]["rows"]
                .as_array()
                .is_some_and(|r| r.len() == 2),
        "{written}"
    );
    let points = json_files(&sweep, "");
    assert_eq!(points.len(), 5, "{points:?}");
    for point in points.iter().filter(|p| !p.ends_with("sweep.json")) {
        round_trips::<RunResult>(point);
    }

    let data = results.path().join("prompts.jsonl");
    std::fs::write(
        &data,
        "{\"prompt\": \"Summarize the memo\", \"category\": \"summarization\"}\n\
         {\"prompt\": \"Translate the note\", \"category\": \"translation\"}\n",
    )
    .unwrap();
    let accept = results.path().join("accept");
    let (code, out, err) = run_speclens_within(
        &[
            "accept",
            "--url",
            &spec.url(),
            "--dataset",
            "jsonl",
            "--dataset-path",
            data.to_str().unwrap(),
            "--requests-per-category",
            "3",
            "--request-rate",
            "200",
            "--output-tokens",
            "16",
            "--out",
            accept.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{out}{err}");
    let files = json_files(&accept, "accept-");
    assert_eq!(files.len(), 2, "{files:?}");
    files.iter().for_each(|f| round_trips::<CategoryAcceptance>(f));

    // The run list the dashboard reads is the same shared type, ids relative to the folder.
    let server = Speclens::serve_results(&workspace().join("web/dist"), results.path());
    let url = server.url();
    let base = url.split('#').next().unwrap().trim_end_matches('/');
    let (status, body) = get_text(&format!("{base}/api/runs")).await;
    assert_eq!(status, 200, "{body}");
    let list: RunList = serde_json::from_str(&body).unwrap();
    let ids: Vec<&str> = list.runs.iter().map(|r| r.id.as_str()).collect();
    for id in ["run", "sweep/spec-c1", "sweep/base-c2", "accept/all-categories"] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    assert_eq!(
        (list.sweeps.as_slice(), list.accepts.as_slice()),
        (&["sweep".to_string()][..], &["accept".to_string()][..])
    );
}

#[test]
fn a_sweep_sends_the_given_headers_and_skips_the_scrape_when_told() {
    let key = "sweep-secret-key-123";
    let sim = Speclens::start(&[
        "sim",
        "--port",
        "0",
        "--time-scale",
        "0",
        "--num-spec-tokens",
        "2",
        "--api-key",
        key,
    ]);
    let out = tempfile::tempdir().unwrap();
    let url = sim.url();
    let sweep = |extra: &[&str], dir: &str| {
        let dir = out.path().join(dir);
        let arm = format!("spec={url}");
        let mut args = vec![
            "sweep",
            "--arm",
            &arm,
            "--concurrency",
            "1",
            "--requests-per-slot",
            "1",
            "--min-requests",
            "2",
            "--output-tokens",
            "8",
            "--out",
        ];
        let dir_text = dir.to_str().unwrap().to_string();
        args.push(&dir_text);
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = run_speclens_within(&args, LIMIT);
        (code, format!("{stdout}{stderr}"), dir)
    };
    // Without the key the server refuses even the model list: the sweep fails and says why.
    let (code, text, _) = sweep(&[], "refused");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("HTTP 401"), "{text}");

    let header = format!("Authorization: Bearer {key}");
    let (code, text, dir) = sweep(&["--header", &header, "--no-scrape"], "sent");
    assert_eq!(code, 0, "{text}");
    let point: RunResult = serde_json::from_str(&std::fs::read_to_string(dir.join("spec-c1.json")).unwrap()).unwrap();
    assert_eq!(point.completed, Some(2), "the header reached the server");
    let config = point.config.as_ref().unwrap();
    assert_eq!(config.header_names, ["Authorization"]);
    assert!(config.metrics_endpoints.is_empty(), "{config:?}");
    assert!(
        point.spec_decode.as_ref().unwrap().scrape.is_empty(),
        "no /metrics scrape"
    );
    assert!(point.spec_decode_acceptance_rate.is_none(), "no scrape-path figures");
    assert!(point.per_request().is_some(), "the per-request path still measured");
    for file in ["spec-c1.json", "spec-c1/result.json", "spec-c1/records.jsonl"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(!text.contains(key), "{file} holds the key");
    }
}

/// `speclens <cmd> --help` at a fixed width.
fn help(cmd: &str) -> String {
    let mut args: Vec<&str> = cmd.split_whitespace().collect();
    args.push("--help");
    let out = Command::new(crate::common::speclens_bin())
        .args(&args)
        .env_clear()
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd} --help");
    String::from_utf8(out.stdout).unwrap()
}

const COMMANDS: [&str; 15] = [
    "", "serve", "sim", "bench", "scrape", "probe", "model", "sweep", "read", "report", "accept", "demo", "check",
    "rules", "grafana",
];

#[test]
fn every_command_s_help_matches_its_snapshot() {
    let dir = workspace().join("tests/snapshots/help");
    let mut snapshots = Snapshots::new();
    // The CLI reference is every command's help, in the order of `speclens --help`.
    let mut reference = String::from(
        "# CLI reference\n\nEvery command's `--help`, as the binary prints it. Made from \
         `tests/snapshots/help/` by the snapshot test, which keeps the two in step.\n",
    );
    for cmd in COMMANDS {
        let name = if cmd.is_empty() { "speclens" } else { cmd };
        let text = help(cmd);
        let title = if cmd.is_empty() {
            "speclens".to_string()
        } else {
            format!("speclens {cmd}")
        };
        reference.push_str(&format!("\n## {title}\n\n```text\n{}\n```\n", text.trim_end()));
        snapshots.check(&dir.join(format!("{name}.txt")), &text);
    }
    snapshots.check(&workspace().join("docs/CLI.md"), &reference);
    snapshots.finish("--help");
}

/// Every flag of every command says what it is for (a flag without help text is a flag a user
/// must guess at).
#[test]
fn every_flag_has_help_text() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" || arg.is_positional() && arg.get_help().is_some() {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} --{}", arg.get_long().unwrap_or(id)));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&speclens::cli::Cli::command(), "speclens", &mut missing);
    assert_eq!(missing, Vec::<String>::new(), "flags without help text");
}

/// The commands with many flags group them under headings, and `-h` is the short form: one
/// line a flag, the common ones, on one screen.
#[test]
fn the_load_commands_help_is_grouped_and_short_help_fits_a_screen() {
    let short = |cmd: &str| {
        let out = std::process::Command::new(crate::common::speclens_bin())
            .args([cmd, "-h"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd} -h");
        String::from_utf8(out.stdout).unwrap()
    };
    for (cmd, headings) in [
        (
            "bench",
            &[
                "Target:",
                "Load:",
                "Workload:",
                "Metrics scrape:",
                "Prometheus (a fleet's counters):",
                "Output:",
                "Dashboard:",
                "CI gates:",
                "Engine-specific:",
            ][..],
        ),
        (
            "sweep",
            &[
                "Arms:",
                "Load:",
                "Workload:",
                "Target:",
                "Metrics scrape:",
                "Model:",
                "Output:",
                "Dashboard:",
                "Engine-specific:",
            ][..],
        ),
        (
            "accept",
            &[
                "Target:",
                "Workload:",
                "Load:",
                "Metrics scrape:",
                "Output:",
                "Dashboard:",
            ][..],
        ),
    ] {
        let long = help(cmd);
        for heading in headings {
            assert!(
                long.lines().any(|l| l == *heading),
                "{cmd} --help has no {heading:?} heading"
            );
        }
        let text = short(cmd);
        let lines = text.lines().count();
        assert!(lines <= 60, "{cmd} -h is {lines} lines:\n{text}");
        assert!(text.contains("--help"), "{cmd} -h says where the rest is");
    }
    // The dashboard's port has one name on every command: --port works on bench too.
    let out = std::process::Command::new(crate::common::speclens_bin())
        .args([
            "bench",
            "--port",
            "0",
            "--num-prompts",
            "0",
            "--url",
            "http://127.0.0.1:1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("unexpected argument") && err.contains("and there is no --dashboard: add --dashboard"),
        "{err}"
    );
}

#[test]
fn sweep_and_accept_take_the_shared_target_workload_and_scrape_flags() {
    let shared = [
        "--endpoint",
        "--model",
        "--api-key",
        "--header",
        "--timeout",
        "--no-stream",
        "--max-response-mib",
        "--sglang-spec-details",
        "--seed",
        "--warmup",
        "--temperature",
        "--ignore-eos",
        "--percentiles",
        "--drain-timeout",
        "--metrics-url",
        "--no-scrape",
        "--scrape-interval",
        "--prometheus-url",
        "--dashboard",
    ];
    for cmd in ["bench", "sweep", "accept"] {
        let text = help(cmd);
        let missing: Vec<&str> = shared
            .iter()
            .copied()
            .filter(|flag| !text.contains(&format!("{flag} ")) && !text.contains(&format!("{flag}\n")))
            .collect();
        assert!(missing.is_empty(), "`speclens {cmd}` lacks {missing:?}");
    }
}

/// A shell command line as words: quotes grouped, comments, `&` and line continuations dropped.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, '#') if !started => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out.retain(|w| w != "&" && w != "\\");
    out
}

/// The README and the guide: every `speclens` command in their code blocks parses, and every
/// flag a command's bullet in the guide names exists on that command.
#[test]
fn the_readme_s_commands_and_flags_parse() {
    let readme = ["README.md", "docs/GUIDE.md"]
        .map(|f| std::fs::read_to_string(workspace().join(f)).unwrap())
        .join("\n");
    // Commands in code blocks, continuation lines joined.
    let mut commands = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for line in readme.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        pending.push_str(line.trim_end_matches('\\'));
        pending.push(' ');
        if line.ends_with('\\') {
            continue;
        }
        let command = std::mem::take(&mut pending);
        let argv = words(&command);
        // `speclens …`, or `cargo run … -p speclens -- …`.
        let args = match argv.first().map(String::as_str) {
            Some("speclens") => Some(&argv[1..]),
            Some("cargo") => argv.iter().position(|w| w == "--").map(|i| &argv[i + 1..]),
            _ => None,
        };
        if let Some(args) = args {
            let mut full = vec!["speclens".to_string()];
            full.extend(args.iter().cloned());
            commands.push(full);
        }
    }
    assert!(commands.len() >= 5, "{commands:?}");
    for argv in &commands {
        if let Err(e) = speclens::cli::Cli::try_parse_from(argv) {
            panic!("README command {argv:?} does not parse: {e}");
        }
    }
    // Flags named in each command's bullet exist on that command.
    for bullet in readme.split("\n- `speclens ").skip(1) {
        let cmd: String = bullet.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        if !COMMANDS.contains(&cmd.as_str()) || cmd.is_empty() {
            continue;
        }
        let text = help(&cmd);
        let bullet = bullet.split("\n- ").next().unwrap_or(bullet);
        // Flags are the code spans that start with one (`--url`, `--gpu h100|h200`).
        for flag in bullet
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|span| span.starts_with("--"))
            .filter_map(|span| span.split([' ', '=']).next())
        {
            assert!(
                names_flag(&text, flag),
                "the README names {flag} for `speclens {cmd}`, which has no such flag"
            );
        }
    }
}

/// Whether a help text names `flag` whole (`--out` is not found in `--output-tokens`).
fn names_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        help[at + flag.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'))
    })
}

#[test]
fn usage_errors_exit_2_and_a_closed_pipe_ends_read_quietly() {
    assert!(names_flag("  --output-tokens <N>\n  --out <DIR>", "--out"));
    assert!(!names_flag("  --output-tokens <N>", "--out"));

    let (code, _, err) = run_speclens(&["bench", "--concurrency", "0", "--url", "http://127.0.0.1:9"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--concurrency must be at least 1"), "{err}");
    let (code, _, err) = run_speclens(&["bench", "--no-such-flag"]);
    assert_eq!(code, 2, "{err}");
    // A context sweep needs synthetic prompts and concurrency levels; nothing is sent.
    let sweep = [
        "sweep",
        "--spec-url",
        "http://127.0.0.1:9",
        "--base-url",
        "http://127.0.0.1:9",
    ];
    for (extra, message) in [
        (
            &["--input-tokens", "256,4096", "--request-rate", "1,2"][..],
            "sweeps concurrency levels",
        ),
        (
            &[
                "--input-tokens",
                "256,4096",
                "--dataset",
                "sharegpt",
                "--dataset-path",
                "x.json",
            ],
            "sweep synthetic prompts or SPEED-Bench's throughput splits",
        ),
        (&["--input-tokens", "0,4096"], "--input-tokens takes lengths ≥ 1"),
    ] {
        let (code, _, err) = run_speclens(&[&sweep[..], extra].concat());
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(message), "{extra:?}: {err}");
    }

    // Enough result files that the table outgrows the pipe's buffer.
    let dir = tempfile::tempdir().unwrap();
    let text = json_fixture_text("vllm_bench_results/spec-c16.json");
    for i in 0..800 {
        std::fs::write(dir.path().join(format!("run-{i:04}.json")), &text).unwrap();
    }
    let mut child = Command::new(crate::common::speclens_bin())
        .args(["read", dir.path().to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone: `read` must end without a panic or an error message.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(first.starts_with('┌'), "{first}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn a_result_file_that_does_not_read_is_named_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let text = json_fixture_text("vllm_bench_results/spec-c16.json");
    std::fs::write(dir.path().join("good.json"), &text).unwrap();
    std::fs::write(
        dir.path().join("odd.json"),
        text.replace("\"completed\": ", "\"completed\": \"many\", \"x\": "),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.json"), "{\"not\": \"a result\"}").unwrap();
    let (code, out, err) = run_speclens(&["read", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("good.json") && !out.contains("odd.json"), "{out}");
    assert!(
        err.contains("skipped") && err.contains("odd.json") && err.contains("invalid type"),
        "{err}"
    );
    assert!(
        !err.contains("notes.json"),
        "a file that is no result file is not one to name: {err}"
    );
}

#[test]
fn arms_swept_one_at_a_time_into_one_folder_make_one_table() {
    let spec = Speclens::instant_spec_sim("0.7", &[]);
    let base = Speclens::instant_plain_sim();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    for (flag, value) in [("--arm", format!("spec={}", spec.url())), ("--base-url", base.url())] {
        // An earlier sweep.json that does not read is named, and the points still join.
        let earlier = out.path().join("sweep.json");
        if flag == "--base-url" {
            std::fs::write(&earlier, "{ cut short").unwrap();
        }
        let (code, stdout, stderr) = run_speclens_within(
            &[
                "sweep",
                flag,
                &value,
                "--concurrency",
                "1,2",
                "--min-requests",
                "2",
                "--output-tokens",
                "8",
                "--out",
                dir,
            ],
            LIMIT,
        );
        assert_eq!(code, 0, "{stdout}{stderr}");
        if flag == "--base-url" {
            assert!(
                stdout.contains("Joined from earlier: spec-c1 (from the sweep of 20"),
                "{stdout}"
            );
            let named = format!("the earlier {} is not used (", earlier.display());
            assert!(
                stderr.contains(&named) && stderr.contains("the points' own result files still join"),
                "{stderr}"
            );
        }
    }
    let table: SweepFile =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("sweep.json")).unwrap()).unwrap();
    assert_eq!(table.head().rows.len(), 2);
    assert!(table.head().rows.iter().all(|r| r.ratio().is_some()), "{table:?}");
    assert!(table.head().prediction.is_some(), "the spec arm's E feeds the model");
    let joined: Vec<(&str, bool)> = table
        .earlier_points
        .iter()
        .map(|p| (p.point.as_str(), p.joined))
        .collect();
    assert_eq!(joined, [("spec-c1", true), ("spec-c2", true)]);
}

#[test]
fn exit_codes_tell_a_ci_job_what_happened() {
    // Nothing listens: the model list says so and how to fix it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}");
    let (code, _, err) = run_speclens(&["bench", "--url", &dead, "--num-prompts", "2", "--quiet"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Connection refused") && err.contains("is the server running"),
        "{err}"
    );
    // Every request fails (the model named, so the run starts): exit 1, files saved.
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("run");
    let (code, _, err) = run_speclens(&[
        "bench",
        "--url",
        &dead,
        "--model",
        "m",
        "--num-prompts",
        "3",
        "--quiet",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no request succeeded"), "{err}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["failed"], 3);
    let reason = result["spec_decode"]["scrape"][0]["result"]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains("Connection refused"),
        "the cause, not only the URL: {reason}"
    );
    // `scrape` of an unreachable server.
    let (code, _, err) = run_speclens(&["scrape", &dead]);
    assert_eq!(code, 1, "{err}");

    // A server failing 70 % of requests: above the default --max-error-rate; allowed with 1.
    let sim = Speclens::instant_spec_sim("0.7", &["--fail-rate", "0.7", "--seed", "3"]);
    let sim_url = sim.url();
    let flaky = |extra: &[&str], dir: &str| {
        let dir = out.path().join(dir);
        let mut args = vec![
            "bench",
            "--url",
            &sim_url,
            "--num-prompts",
            "20",
            "--output-tokens",
            "8",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        args.extend(["--out", dir.to_str().unwrap()]);
        run_speclens(&args)
    };
    let (code, _, err) = flaky(&[], "a");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--max-error-rate"), "{err}");
    let (code, _, err) = flaky(&["--max-error-rate", "1"], "b");
    assert_eq!(code, 0, "{err}");

    // Gates: checked on the saved result; one that holds exits 3, one that does not passes.
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let gate = |gate: &str, dir: &str| {
        run_speclens(&[
            "bench",
            "--url",
            &sim.url(),
            "--num-prompts",
            "8",
            "--output-tokens",
            "16",
            "--quiet",
            "--fail-if",
            gate,
            "--out",
            out.path().join(dir).to_str().unwrap(),
        ])
    };
    let (code, _, err) = gate("acceptance_length<10", "g1");
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("acceptance_length<10 (measured"), "{err}");
    assert!(
        out.path().join("g1/result.json").exists(),
        "saved before the gate is checked"
    );
    let (code, _, err) = gate("acceptance_length<1", "g2");
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = gate("goodput_tokens_per_s>1", "g3");
    assert_eq!(code, 3, "a figure the run lacks fails the gate: {err}");
    let (code, _, err) = run_speclens(&["bench", "--url", &sim.url(), "--fail-if", "acceptance_length"]);
    assert_eq!(code, 2, "a malformed gate is a usage error: {err}");
}

/// Errors that say what to do: a wrong input is a usage error (2) naming the fix, and a run
/// that never sent a request leaves no results folder.
#[test]
fn wrong_targets_get_usage_errors_that_name_the_fix() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("run");
    let mut snapshots = Snapshots::new();
    let mut bench = |name: &str, url: &str, extra: &[&str]| {
        let (code, err) = bench_error(url, &run, extra);
        snapshots.check(&error_snapshot(name), &error_text(code, &err, out.path()));
        (code, err)
    };
    // A URL without a scheme.
    let bare = sim.url().trim_start_matches("http://").to_string();
    let (code, err) = bench("url-without-scheme", &bare, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("is not an http:// or https:// URL: did you mean http://127.0.0.1:"),
        "{err}"
    );
    // A model the server does not serve: named before any request, with the ones it serves.
    let (code, err) = bench("unserved-model", &sim.url(), &["--model", "Qwen/Qwen3-8B"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--model \"Qwen/Qwen3-8B\" is not served by http://127.0.0.1:")
            && err.contains("it serves \"speclens/sim-8b\""),
        "{err}"
    );
    // https:// to a port that speaks plain HTTP.
    let tls = sim.url().replace("http://", "https://");
    let (code, err) = bench("https-to-plain-http", &tls, &[]);
    assert_eq!(code, 1, "the server's side: {err}");
    assert!(
        err.contains("TLS failed: the server speaks plain HTTP there, use http://"),
        "{err}"
    );
    assert!(!run.exists(), "no results folder for a run that never sent a request");
    // The same checks hold for a sweep's arms.
    let (code, _, err) = run_speclens(&["sweep", "--spec-url", &bare, "--base-url", &sim.url(), "--dry-run"]);
    snapshots.check(
        &error_snapshot("sweep-url-without-scheme"),
        &error_text(code, &err, out.path()),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not an http:// or https:// URL"), "{err}");
    // A dead base URL is found before the first point: the spec arm's points are not run
    // (its folder, which the first point creates, is not there).
    let dead = format!("http://127.0.0.1:{}", crate::common::browser::free_port());
    let folder = out.path().join("sweep");
    let (code, stdout, err) = run_speclens(&[
        "sweep",
        "--spec-url",
        &sim.url(),
        "--base-url",
        &dead,
        "--concurrency",
        "1,2",
        "--out",
        folder.to_str().unwrap(),
    ]);
    snapshots.check(
        &error_snapshot("sweep-dead-base-url"),
        &error_text(code, &err, out.path()),
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("before the points it would serve, so none of them was started")
            && err.contains("arm base: http://127.0.0.1:"),
        "{err}"
    );
    assert!(!folder.exists() && !stdout.contains("spec c ="), "{stdout}");
    // `vllm bench serve`'s --host and --port name the server; here they are refused with the
    // flags that do (--port alone is the dashboard's, and without --dashboard nothing uses it).
    for (name, flags, says) in [
        (
            "bench-host",
            ["--host", "127.0.0.1"],
            "speclens names a server by its whole URL",
        ),
        (
            "bench-port-without-dashboard",
            ["--port", "8000"],
            "there is no --dashboard",
        ),
    ] {
        let (code, _, err) = run_speclens(&[&["bench"][..], &flags].concat());
        snapshots.check(&error_snapshot(name), &error_text(code, &err, out.path()));
        assert!(code == 2 && err.contains(says) && err.contains("--url"), "{err}");
    }
    snapshots.finish("error messages");
}

/// A server whose certificate is signed by a CA the system does not trust (made here with
/// openssl, served by `openssl s_server`): the error names both ways past it, and each of them
/// gets past TLS (to the answer, which is not an OpenAI server's).
#[test]
fn an_untrusted_certificate_is_named_with_the_flags_that_trust_it() {
    let dir = tempfile::tempdir().unwrap();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=speclens-test-ca",
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"][..],
            &ec,
            &["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1"],
        ]
        .concat(),
    );
    std::fs::write(
        dir.path().join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    let (_server, url) = tls_server(dir.path(), "leaf.pem", "leaf.key");
    let run = dir.path().join("run");
    let (code, err) = bench_error(&url, &run, &[]);
    let mut snapshots = Snapshots::new();
    snapshots.check(
        &error_snapshot("untrusted-certificate"),
        &error_text(code, &err, dir.path()),
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("TLS failed: the server's certificate is not trusted; trust its CA with --ca-cert FILE, or skip the check with --insecure"),
        "{err}"
    );
    assert!(!run.exists(), "no results folder for a run that never sent a request");
    // Either flag gets past TLS: the error is then about the answer, not the certificate.
    let ca = dir.path().join("ca.pem");
    for extra in [&["--ca-cert", ca.to_str().unwrap()][..], &["--insecure"]] {
        let (code, err) = bench_error(&url, &run, extra);
        assert_ne!(code, 0, "{extra:?}: {err}");
        assert!(!err.contains("TLS failed"), "{extra:?} gets past TLS: {err}");
        assert!(
            err.contains("/v1/models"),
            "{extra:?}: the model list was read and refused: {err}"
        );
    }
    // A self-signed certificate that is its own CA (openssl's `req -x509` marks it CA:TRUE,
    // which WebPKI refuses as a server's): untrusted without a flag, trusted by --ca-cert with
    // itself, as curl trusts it.
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout",
                "self.key",
                "-out",
                "self.pem",
                "-days",
                "2",
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ],
        ]
        .concat(),
    );
    let (_self_signed, url) = tls_server(dir.path(), "self.pem", "self.key");
    let (code, err) = bench_error(&url, &run, &[]);
    assert!(
        code == 1 && err.contains("TLS failed: the server's certificate is not trusted"),
        "{err}"
    );
    let own = dir.path().join("self.pem");
    let (code, err) = bench_error(&url, &run, &["--ca-cert", own.to_str().unwrap()]);
    snapshots.check(
        &error_snapshot("self-signed-certificate-trusted"),
        &error_text(code, &err, dir.path()),
    );
    assert!(
        !err.contains("TLS failed") && err.contains("/v1/models"),
        "--ca-cert with the server's own certificate gets past TLS: {err}"
    );
    snapshots.finish("error messages");
}

/// `openssl s_server` on a free loopback port with `cert` and `key` (files in `dir`), answering
/// every request with its status page: the process (killed when dropped) and its https:// URL.
fn tls_server(dir: &Path, cert: &str, key: &str) -> (impl Drop, String) {
    let mut server = Command::new("openssl")
        .args(["s_server", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key, "-www"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl s_server starts");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = server.stdout.take().unwrap();
    let server = Kill(server);
    // "ACCEPT 127.0.0.1:PORT" once it listens.
    let port = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("ACCEPT 127.0.0.1:").map(str::to_string))
        .expect("s_server prints the port it listens on");
    (server, format!("https://127.0.0.1:{port}"))
}

/// Run a short `bench` against `url` that is expected to fail: its exit code and stderr.
fn bench_error(url: &str, run: &Path, extra: &[&str]) -> (i32, String) {
    let run = Bench::at(url).prompts(2).quiet().into(run).args(extra).run();
    (run.code, run.stderr)
}

/// Where an error message's snapshot lives.
fn error_snapshot(name: &str) -> std::path::PathBuf {
    workspace().join("tests/snapshots/errors").join(format!("{name}.txt"))
}

/// An error as its snapshot holds it: the exit code, then stderr with loopback ports as `PORT`
/// and the test's temporary folder as `TMP` (the parts that differ from run to run).
fn error_text(code: i32, err: &str, tmp: &Path) -> String {
    let mut text = format!("exit {code}\n");
    let mut rest = err.replace(tmp.to_str().unwrap(), "TMP");
    while let Some(at) = rest.find("127.0.0.1:") {
        let (head, tail) = rest.split_at(at + "127.0.0.1:".len());
        text.push_str(head);
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            text.push_str("PORT");
        }
        rest = tail[digits..].to_string();
    }
    text.push_str(&rest);
    text
}

/// The README's "Against your own server" commands run as written, in a folder holding their
/// prompts file, against a speculative sim on the README's port 8000 and a plain one on 8001
/// (their URLs substituted), each exiting 0 and leaving what the next one reads.
#[test]
fn the_readme_s_own_server_commands_run_as_written() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let section = readme
        .split("## Against your own server")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has an \"Against your own server\" section");
    // Each command's block, and the start of each output line shown after it (up to its first
    // colon or number: the label, which the real output must print too).
    let commands: Vec<(&str, Vec<String>)> = section
        .split("```sh\n")
        .skip(1)
        .map(|block| {
            let command = block.split("```").next().unwrap_or_default().trim();
            let shown = block
                .split("```text\n")
                .nth(1)
                .and_then(|t| t.split("```").next())
                .unwrap_or_default();
            let labels = shown
                .lines()
                .map(|l| {
                    let end = l.find(|c: char| c == ':' || c.is_ascii_digit()).unwrap_or(l.len());
                    l[..end].trim().to_string()
                })
                .filter(|l| !l.is_empty())
                .collect();
            (command, labels)
        })
        .collect();
    assert_eq!(commands.len(), 4, "{commands:?}");
    let spec = Speclens::instant_spec_sim("0.7", &[]);
    let base = Speclens::instant_plain_sim();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prompts.jsonl"),
        "{\"prompt\": \"Summarize the memo in two lines\", \"category\": \"summarization\"}\n\
         {\"prompt\": \"Write code that sorts a list\", \"category\": \"coding\"}\n",
    )
    .unwrap();
    for (command, labels) in &commands {
        let line = command
            .replace("http://127.0.0.1:8000", &spec.url())
            .replace("http://127.0.0.1:8001", &base.url());
        let argv = words(&line);
        assert_eq!(argv[0], "speclens", "{command}");
        let out = Command::new(crate::common::speclens_bin())
            .args(&argv[1..])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{command}\n{printed}");
        assert!(!labels.is_empty(), "{command}: the README shows its output");
        for label in labels {
            assert!(
                printed.contains(label.as_str()),
                "{command}: no {label:?} in\n{printed}"
            );
        }
    }
    for made in [
        "results/bench/result.json",
        "results/accept",
        "results/sweep/sweep.json",
        "report.html",
    ] {
        assert!(dir.path().join(made).exists(), "{made}");
    }
}

/// The README is the short path: a newcomer reads it in two minutes (under 12 KB); the rest is
/// in the docs it lists, each of which exists.
#[test]
fn the_readme_is_short_and_its_docs_exist() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    assert!(readme.len() < 12 * 1024, "README.md is {} bytes", readme.len());
    for link in readme.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
        assert!(
            workspace().join(link).exists(),
            "the README links {link}, which is not there"
        );
    }
}

/// A quiet bench of four prompts against `url` into `out`.
fn bench_four(url: &str, out: &Path) -> (i32, String, String) {
    run_speclens(&[
        "bench",
        "--url",
        url,
        "--num-prompts",
        "4",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// Symlinks planted in `--out` are never written through: the temporary files are made afresh
/// beside them (the victims keep their bytes), and a planted lock refuses the run.
#[test]
fn symlinks_planted_in_the_results_folder_are_not_written_through() {
    let sim = Speclens::start(&["sim", "--port", "0", "--num-spec-tokens", "3"]);
    let dir = tempfile::tempdir().unwrap();
    let (run, victims) = (dir.path().join("run"), dir.path().join("victims"));
    std::fs::create_dir_all(&run).unwrap();
    std::fs::create_dir_all(&victims).unwrap();
    let plant = |name: &str| {
        let victim = victims.join(name.trim_start_matches('.'));
        std::fs::write(&victim, "keep me\n").unwrap();
        std::os::unix::fs::symlink(&victim, run.join(name)).unwrap();
        victim
    };
    let planted: Vec<_> = [".result.json.tmp", ".records.jsonl.tmp", ".profile_export.jsonl.tmp"]
        .iter()
        .map(|n| plant(n))
        .collect();
    let bench = |out: &Path| bench_four(&sim.url(), out);
    let (code, _, err) = bench(&run);
    assert_eq!(code, 0, "{err}");
    for victim in &planted {
        assert_eq!(
            std::fs::read_to_string(victim).unwrap(),
            "keep me\n",
            "{}",
            victim.display()
        );
    }
    assert!(run.join("result.json").is_file());
    // A lock planted as a link to another file: refused, the target untouched.
    let locked = dir.path().join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    let target = victims.join("lock-target");
    std::fs::write(&target, "keep me\n").unwrap();
    std::os::unix::fs::symlink(&target, locked.join(".speclens.lock")).unwrap();
    let (code, _, err) = bench(&locked);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot lock"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
}

/// A FIFO planted as a killed run's lock never hangs `read` or `report`: it is no lock, and the
/// run is shown from its records, from its results folder or read by itself.
#[test]
fn a_fifo_planted_as_the_lock_hangs_no_command() {
    let sim = Speclens::start(&["sim", "--port", "0", "--num-spec-tokens", "3"]);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("killed");
    let (code, _, err) = bench_four(&sim.url(), &run);
    assert_eq!(code, 0, "{err}");
    // As a run killed before it saved: its records in progress, no result.json.
    std::fs::rename(run.join("records.jsonl"), run.join(".records.jsonl.tmp")).unwrap();
    std::fs::remove_file(run.join("result.json")).unwrap();
    let lock = run.join(".speclens.lock");
    let _ = std::fs::remove_file(&lock);
    assert!(Command::new("mkfifo").arg(&lock).status().unwrap().success());
    let results = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = run_speclens_within(&["read", results], Duration::from_secs(60));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("killed/.records.jsonl.tmp"), "{stdout}");
    // The killed run's folder read by itself shows it too (#63 item 14).
    let (code, stdout, stderr) = run_speclens_within(&["read", run.to_str().unwrap()], Duration::from_secs(60));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(".records.jsonl.tmp"), "{stdout}");
    let (page, web) = (dir.path().join("report.html"), workspace().join("web/dist"));
    let (code, _, stderr) = run_speclens_within(
        &[
            "report",
            results,
            "--web-dir",
            web.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(page.is_file());
}
