//! Helpers shared by the integration tests: fixture files, the real `speclens` binary started
//! on 127.0.0.1 port 0, and small HTTP utilities.

#![allow(dead_code)]

pub mod bench;
pub mod browser;
pub mod prometheus;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Path of a file in tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    workspace().join("tests/fixtures").join(name)
}

pub fn read_fixture(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// A JSON fixture without its leading `//` source lines.
pub fn json_fixture_text(name: &str) -> String {
    read_fixture(name)
        .lines()
        .filter(|l| !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The built dashboard (`web/dist`); a clear failure when it is not built.
pub fn built_web_dir() -> PathBuf {
    let dist = workspace().join("web/dist");
    assert!(
        dist.join("index.html").is_file(),
        "web/dist is not built: `bash scripts/test.sh` builds it with Trunk before the tests"
    );
    dist
}

/// A running `speclens` process; killed when dropped.
pub struct Speclens {
    child: Child,
    /// The awaited stdout line (the first one, unless a prefix was given).
    pub first_line: String,
    /// What the process printed before it.
    pub earlier: String,
}

/// The binary the tests run: this build's, or another named by `SPECLENS_BIN` (to show a check
/// failing on an older build: the same tests against the code before a fix).
pub fn speclens_bin() -> PathBuf {
    std::env::var_os("SPECLENS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_speclens")))
}

/// Start the real binary with its output piped.
fn spawn_speclens(args: &[&str]) -> Child {
    speclens_command(args).spawn().expect("start speclens")
}

fn speclens_command(args: &[&str]) -> Command {
    let mut command = Command::new(speclens_bin());
    command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

impl Speclens {
    /// An untimed speculative sim (k = 3, geometric acceptance `alpha`) on a free port.
    pub fn instant_spec_sim(alpha: &str, extra: &[&str]) -> Speclens {
        Speclens::instant_sim_of_k("3", alpha, extra)
    }

    /// An untimed plain sim (no speculation) on a free port.
    pub fn instant_plain_sim() -> Speclens {
        Speclens::sim(&["--time-scale", "0"])
    }

    /// A sim on a free port with `extra` flags.
    pub fn sim(extra: &[&str]) -> Speclens {
        Speclens::start(&[&["sim", "--port", "0"][..], extra].concat())
    }

    /// An untimed speculative sim drafting `k` tokens, geometric acceptance `alpha`.
    pub fn instant_sim_of_k(k: &str, alpha: &str, extra: &[&str]) -> Speclens {
        let mut args = vec![
            "sim",
            "--port",
            "0",
            "--time-scale",
            "0",
            "--num-spec-tokens",
            k,
            "--alpha",
            alpha,
        ];
        args.extend_from_slice(extra);
        Speclens::start(&args)
    }

    /// Start `speclens ARGS…` and wait (bounded) for its first stdout line.
    pub fn start(args: &[&str]) -> Speclens {
        Speclens::start_until(args, "", Duration::from_secs(30))
    }

    /// `speclens serve` on a free port: the dashboard built in `web_dir`, the runs in `results`.
    pub fn serve_results(web_dir: &Path, results: &Path) -> Speclens {
        Speclens::start(&[
            "serve",
            "--port",
            "0",
            "--web-dir",
            web_dir.to_str().expect("UTF-8 path"),
            "--results-dir",
            results.to_str().expect("UTF-8 path"),
        ])
    }

    /// [`Speclens::start`] in a shell that first lowers the open-file limit to `files`.
    pub fn start_with_file_limit(args: &[&str], files: u32) -> Speclens {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
            .arg(speclens_bin())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Speclens::start_command(command, args, "", Duration::from_secs(30))
    }

    /// Start `speclens ARGS…` and wait (bounded) for a stdout line starting with `prefix`; the
    /// lines before it are kept in `earlier`.
    pub fn start_until(args: &[&str], prefix: &str, limit: Duration) -> Speclens {
        Speclens::start_command(speclens_command(args), args, prefix, limit)
    }

    fn start_command(mut command: Command, args: &[&str], prefix: &str, limit: Duration) -> Speclens {
        let mut child = command.spawn().expect("start speclens");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        let prefix = prefix.to_string();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut earlier = String::new();
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send((earlier, String::new()));
                        return;
                    }
                    Ok(_) if line.starts_with(&prefix) => {
                        let _ = tx.send((earlier, line));
                        // Keep draining so the process never blocks on a full pipe.
                        let _ = std::io::copy(&mut reader, &mut std::io::sink());
                        return;
                    }
                    Ok(_) => earlier.push_str(&line),
                }
            }
        });
        let (earlier, line) = rx.recv_timeout(limit).unwrap_or_default();
        if line.is_empty() {
            let _ = child.kill();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("speclens {args:?} printed nothing; stderr: {err}");
        }
        Speclens {
            child,
            first_line: line.trim().to_string(),
            earlier,
        }
    }

    /// The URL from the first line (`speclens dashboard: URL`, `speclens sim: URL`).
    pub fn url(&self) -> String {
        self.first_line
            .split_once(": http")
            .map(|(_, rest)| format!("http{rest}"))
            .unwrap_or_else(|| panic!("unexpected first line {:?}", self.first_line))
    }

    /// The running process's peak resident memory so far, in kB (its `VmHWM`, which the kernel
    /// keeps: exact up to this moment). An unreadable value fails the test, never reads 0.
    pub fn peak_rss_kb(&self) -> u64 {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let peak_kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|kb| kb.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmHWM in {path}"));
        assert!(peak_kb > 0, "{path}: VmHWM 0");
        peak_kb
    }
}

impl Drop for Speclens {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `speclens accept` on a JSON-lines prompts file with the tests' quick defaults (100
/// requests/s, 16 output tokens), `per_category` requests a category, into `out`: (exit code,
/// stdout, stderr).
pub fn accept_jsonl(url: &str, prompts: &Path, per_category: u32, out: &Path) -> (i32, String, String) {
    let per_category = per_category.to_string();
    run_speclens(&[
        "accept",
        "--url",
        url,
        "--dataset",
        "jsonl",
        "--dataset-path",
        prompts.to_str().unwrap(),
        "--requests-per-category",
        &per_category,
        "--request-rate",
        "100",
        "--output-tokens",
        "16",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// Run `speclens ARGS…` to completion (bounded) and return (exit code, stdout, stderr).
pub fn run_speclens(args: &[&str]) -> (i32, String, String) {
    run_speclens_within(args, Duration::from_secs(60))
}

/// [`run_speclens`] with its own time limit.
pub fn run_speclens_within(args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = spawn_speclens(args);
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut out = String::new();
            let mut err = String::new();
            child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (status.code().unwrap_or(-1), out, err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("speclens {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The word after the first `name` in a console line (`field_after("drafts 12 · accepted 9",
/// "accepted ")` is `"9"`); a missing field fails the test, naming it.
pub fn field_after(line: &str, name: &str) -> String {
    line.split(name)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{name:?} in {line:?}"))
        .to_string()
}

/// A JSON file's value; a missing or malformed file fails the test, naming it.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first table of a `sweep.json`: the first speculative arm's against plain, or plain's
/// alone when the sweep had no speculative arm (as `SweepFile::head` reads it).
pub fn head_table(sweep: &serde_json::Value) -> &serde_json::Value {
    match sweep["arms"].as_array().and_then(|arms| arms.first()) {
        Some(arm) => &arm["table"],
        None => sweep,
    }
}

/// `speclens sweep --verbose` (every table on stdout) of the servers at `spec` and `base` at
/// concurrency `levels` into `out`, with `extra` flags, within `limit`: (exit code, stdout,
/// stderr).
pub fn sweep_within(
    spec: &str,
    base: &str,
    levels: &str,
    out: &Path,
    extra: &[&str],
    limit: Duration,
) -> (i32, String, String) {
    let out = out.to_str().expect("UTF-8 path");
    let mut all = vec![
        "sweep",
        "--verbose",
        "--spec-url",
        spec,
        "--base-url",
        base,
        "--concurrency",
        levels,
        "--out",
        out,
    ];
    all.extend_from_slice(extra);
    run_speclens_within(&all, limit)
}

/// Every record of a run folder's `records.jsonl`.
pub fn read_records(run: &Path) -> Vec<speclens_shared::run::record::RequestRecord> {
    std::fs::read_to_string(run.join("records.jsonl"))
        .expect("records.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Poll `probe` until it returns Some or `limit` passes.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The tests' HTTP client: a server that hangs fails the test in a minute rather than holding
/// the whole run.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("an HTTP client")
}

/// POST a JSON body; the status and the parsed JSON answer (Null when not JSON).
pub async fn post_json(url: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
    let response = http_client().post(url).json(body).send().await.expect("POST");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(serde_json::Value::Null))
}

/// What a streamed (SSE) response delivered.
#[derive(Debug, Default)]
pub struct SseReply {
    /// Every `data:` payload in order (`[DONE]` included).
    pub data: Vec<String>,
    /// The body broke off with an error (reset connection).
    pub broken: bool,
}

impl SseReply {
    /// The JSON chunks (everything but `[DONE]`).
    pub fn chunks(&self) -> Vec<serde_json::Value> {
        self.data
            .iter()
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).expect("chunk JSON"))
            .collect()
    }
}

/// POST a streaming request and collect its SSE `data:` lines.
pub async fn post_sse(url: &str, body: &serde_json::Value) -> SseReply {
    let mut response = http_client().post(url).json(body).send().await.expect("POST");
    assert_eq!(response.status(), 200, "streaming request failed");
    let mut raw = Vec::new();
    let mut reply = SseReply::default();
    loop {
        match response.chunk().await {
            Ok(Some(bytes)) => raw.extend_from_slice(&bytes),
            Ok(None) => break,
            Err(_) => {
                reply.broken = true;
                break;
            }
        }
    }
    let text = String::from_utf8(raw).expect("UTF-8 stream");
    for event in text.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let data = event
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("not an SSE data line: {event:?}"));
        reply.data.push(data.to_string());
    }
    reply
}

/// GET a URL's body as text with its status.
pub async fn get_text(url: &str) -> (u16, String) {
    let response = http_client()
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    (response.status().as_u16(), response.text().await.unwrap_or_default())
}

/// Text files checked against what the binary prints now. With `SPECLENS_UPDATE_SNAPSHOTS` set
/// a stale file is rewritten; either way [`Snapshots::finish`] fails naming every stale file, so
/// a rewrite is never a pass and the next run (without the variable) checks the new text.
pub struct Snapshots {
    update: bool,
    stale: Vec<String>,
}

impl Snapshots {
    pub fn new() -> Snapshots {
        Snapshots {
            update: std::env::var_os("SPECLENS_UPDATE_SNAPSHOTS").is_some(),
            stale: Vec::new(),
        }
    }

    /// Compare `path` with `text` (and rewrite it when updating).
    pub fn check(&mut self, path: &Path, text: &str) {
        if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
            self.stale.push(path.display().to_string());
            if self.update {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
        }
    }

    /// Fail when any file was stale; `what` names what changed ("--help", "error messages").
    pub fn finish(self, what: &str) {
        assert!(
            self.stale.is_empty(),
            "{what} changed{}: {:?}; review the change (and the README), then run the test with SPECLENS_UPDATE_SNAPSHOTS=1 once and again without it",
            if self.update { ", snapshots rewritten" } else { "" },
            self.stale
        );
    }
}

/// A raw HTTP server on 127.0.0.1: each connection's request head is read and handed, with the
/// stream, to `answer` on a thread of its own. Returns `http://host:port`.
pub fn raw_server(answer: impl Fn(&str, std::net::TcpStream) + Send + Sync + 'static) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                // The body too, before answering: a socket closed with unread bytes sends a
                // reset, which can reach the client before the answer does and lose it.
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.split_once(':')
                            .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                    })
                    .and_then(|(_, v)| v.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                let _ = std::io::copy(&mut (&mut stream).take(length), &mut std::io::sink());
                answer(&head, stream);
            });
        }
    });
    url
}

/// Wait for `child` to exit and collect its output, killing it (and its process group, when
/// it leads one: `process_group(0)`) and failing after `limit` (its stdout and stderr are read
/// as it runs, so a full pipe never stalls it).
pub fn wait_with_output_within(child: Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(output) => output.expect("wait for the command"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(format!("-{pid}")).status();
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("the command did not finish within {limit:?}");
        }
    }
}

/// Runs `argv[1:]` as its own child and prints that child's peak resident memory in kB and
/// exit code, as the kernel accounts them at its exit (`wait4`'s `ru_maxrss`: its last instant
/// included, where polling `VmHWM` misses what comes after the last poll). Through this small
/// process, not from the test binary: Linux counts the memory of the process an exec replaces
/// in the new program's peak, and a child spawned by the test binary would carry the test
/// binary's peak (hundreds of MB) into its own; this one's is about 10 MB.
const PEAK_RSS_OF_CHILD: &str = r#"
import os, sys
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"#;

/// Run `speclens ARGS…` to its end (output discarded, killed and failing after `limit`): its
/// peak resident memory in kB (see [`PEAK_RSS_OF_CHILD`]) and its exit code. glibc's arenas are
/// capped at two (`MALLOC_ARENA_MAX`), so the figure is the program's and not how many threads
/// happened to allocate at once.
pub fn speclens_peak_rss_kb(args: &[&str], limit: Duration) -> (u64, i32) {
    let child = Command::new("python3")
        .arg("-c")
        .arg(PEAK_RSS_OF_CHILD)
        .arg(speclens_bin())
        .args(args)
        .env("MALLOC_ARENA_MAX", "2")
        // Its own process group, so a timeout stops the run with the small process.
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start python3");
    let output = wait_with_output_within(child, limit);
    let text = String::from_utf8_lossy(&output.stdout);
    let mut fields = text.split_whitespace().map(|f| f.parse::<i64>());
    let (Some(Ok(peak_kb)), Some(Ok(code))) = (fields.next(), fields.next()) else {
        panic!(
            "no peak memory from the run: {text:?} {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    assert!(peak_kb > 0, "a peak of {peak_kb} kB");
    (peak_kb as u64, code as i32)
}

/// `speclens ARGS…` with its dashboard served from `web_dir` (the args ask for `--dashboard
/// --dashboard-port 0`): the process and the dashboard URL it printed. Its stdout is drained
/// after that line so it never blocks; kill it when done.
pub fn spawn_with_dashboard(args: &[&str], web_dir: &Path) -> (Child, String) {
    let mut child = Command::new(speclens_bin())
        .args(args)
        .env("SPECLENS_WEB_DIR", web_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start speclens");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let url = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("speclens {args:?} printed no dashboard URL"))
            .expect("a line of stdout");
        if let Some(url) = line.strip_prefix("speclens dashboard: ") {
            break url.to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

/// One verdict per level in a `sweep.json`: each arm's step cost (the step-cost chart's
/// measured E against the E the load needs) turns from paying to not between the two levels
/// whose ratio holds the table's measured B*.
pub fn assert_step_cost_flips_at_crossing(sweep: &serde_json::Value) {
    use serde_json::Value;
    let pays = |r: &Value| r["acceptance_length"].as_f64().unwrap() > r["step_cost"].as_f64().unwrap();
    for a in sweep["arms"].as_array().expect("arms") {
        let Some(crossing) = a["table"]["crossing"].as_f64() else {
            continue;
        };
        let rows = a["step_cost"].as_array().expect("step-cost rows");
        let flip = rows
            .windows(2)
            .find(|w| pays(&w[0]) && !pays(&w[1]))
            .unwrap_or_else(|| panic!("{}: no step-cost flip beside B* = {crossing}: {rows:?}", a["name"]));
        let (lo, hi) = (flip[0]["level"].as_f64().unwrap(), flip[1]["level"].as_f64().unwrap());
        assert!(
            (lo..=hi).contains(&crossing),
            "{}: B* {crossing} outside {lo}–{hi}",
            a["name"]
        );
    }
}
