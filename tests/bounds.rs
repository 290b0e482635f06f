//! Bounds on what speclens keeps and writes, not only on the bytes it reads: hostile servers
//! (counters that fall at every scrape, huge error texts, redirects to other hosts, odd
//! encodings) and odd inputs (devices and FIFOs as datasets, figures that cannot be compared),
//! each scaled to run in seconds.

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::bench::Bench;
use crate::common::{
    raw_server, read_json, read_records, run_speclens, run_speclens_within, speclens_peak_rss_kb, Speclens,
};

/// Write one HTTP/1.1 response and close.
fn respond(mut stream: TcpStream, status: &str, headers: &str, body: &[u8]) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n",
        body.len()
    );
    let _ = stream.write_all(body);
    finish(stream);
}

/// Close after the client has read the answer: the request body the server never read is
/// drained first (closing with unread bytes sends a reset, which would cut the answer short).
fn finish(mut stream: TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = std::io::copy(&mut stream, &mut std::io::sink());
}

const MODELS: &str = r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"test"}]}"#;

/// Answer `/v1/models` with the one model "m", and everything else with `other`.
fn models_or(other: impl Fn(&str, TcpStream) + Send + Sync + 'static) -> String {
    raw_server(move |head, stream| {
        if head.starts_with("GET /v1/models") {
            respond(
                stream,
                "200 OK",
                "content-type: application/json\r\n",
                MODELS.as_bytes(),
            );
        } else {
            other(head, stream)
        }
    })
}

/// A short bench of `url` into `out`: its exit code and console.
fn bench(url: &str, out: &std::path::Path, extra: &[&str]) -> (i32, String, String) {
    let run = Bench::at(url).prompts(3).quiet().into(out).args(extra).run();
    (run.code, run.stdout, run.stderr)
}

/// Item 1: 20,000 series × 3 counter families that fall at every scrape, scraped ten times a
/// second for 4 s: each reset is counted, the first few are kept in full, and neither memory
/// nor `result.json` grows with them (before, one line a series a scrape: ~2 M lines).
#[test]
fn counter_resets_at_every_scrape_are_counted_not_kept_one_by_one() {
    const SERIES: usize = 20_000;
    let scrapes = Arc::new(AtomicU64::new(0));
    let seen = scrapes.clone();
    let metrics = raw_server(move |_, stream| {
        let value = 1_000_000_000 - seen.fetch_add(1, Ordering::SeqCst) * 10;
        let mut body = String::with_capacity(SERIES * 3 * 80);
        for family in ["num_drafts", "num_draft_tokens", "num_accepted_tokens"] {
            body.push_str(&format!("# TYPE vllm:spec_decode_{family} counter\n"));
            for i in 0..SERIES {
                body.push_str(&format!(
                    "vllm:spec_decode_{family}_total{{engine=\"{i}\",model_name=\"m\"}} {value}\n"
                ));
            }
        }
        respond(
            stream,
            "200 OK",
            "content-type: text/plain; version=0.0.4\r\n",
            body.as_bytes(),
        );
    });
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let metrics_url = format!("{metrics}/metrics");
    let (peak_kb, code) = speclens_peak_rss_kb(
        &[
            "bench",
            "--url",
            &sim.url(),
            "--metrics-url",
            &metrics_url,
            "--duration",
            "4",
            "--request-rate",
            "20",
            "--scrape-interval",
            "0.1",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0);
    let served = scrapes.load(Ordering::SeqCst);
    assert!(served >= 3, "the counters were scraped {served} times");
    let file = out.join("result.json");
    let bytes = std::fs::metadata(&file).unwrap().len();
    assert!(bytes < 1 << 20, "result.json holds {bytes} bytes");
    let result = read_json(&file);
    let resets: Vec<&str> = result["spec_decode"]["resets"]
        .as_array()
        .expect("the resets are listed")
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(resets.len() <= 12, "{} lines", resets.len());
    assert!(resets[0].contains("went down from"), "{}", resets[0]);
    let last = resets.last().unwrap();
    let in_all: u64 = last
        .split(" (")
        .nth(1)
        .and_then(|t| t.strip_suffix(" in all)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the last line counts them all: {last}"));
    assert!(last.contains("more counter resets not listed"), "{last}");
    // Every live interval saw every series of the three families fall, and each fall is
    // counted: 3 × SERIES for each point of the live timeline (how many a loaded machine fits
    // in 4 s varies; the timeline says how many there were).
    let points = result["spec_decode"]["timeline"].as_array().expect("the live timeline");
    let intervals = points.iter().filter(|p| p["error"].is_null()).count() as u64;
    assert!(intervals >= 1, "{result}");
    assert_eq!(
        in_all,
        3 * SERIES as u64 * intervals,
        "{in_all} resets counted over {intervals} live intervals ({served} scrapes)"
    );
    // The window is not a valid delta, and says why.
    let window = &result["spec_decode"]["scrape"][0]["result"];
    assert_eq!(window["status"], "na", "{window}");
    assert!(peak_kb < 200 * 1024, "peak RSS {peak_kb} kB");
    eprintln!("peak RSS {peak_kb} kB, result.json {bytes} bytes, {in_all} resets over {served} scrapes");
}

/// Item 3: five HTTP 500 answers of 4 MB error text each: every record, export and the console
/// keep about 1 KiB of it and say how much was left out.
#[test]
fn a_huge_server_error_is_kept_to_a_kibibyte() {
    let url = models_or(|_, stream| {
        let message = "overloaded ".repeat(400_000);
        let body = format!(r#"{{"error":{{"message":"{message}","type":"server_error","code":500}}}}"#);
        respond(
            stream,
            "500 Internal Server Error",
            "content-type: application/json\r\n",
            body.as_bytes(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (code, stdout, stderr) = bench(&url, &out, &["--num-prompts", "5", "--model", "m", "--no-scrape"]);
    assert_ne!(code, 0, "no request succeeded");
    assert!(
        stdout.len() + stderr.len() < 64 << 10,
        "{} bytes printed",
        stdout.len() + stderr.len()
    );
    let records = read_records(&out);
    assert_eq!(records.len(), 5);
    for r in &records {
        let error = r.error.as_deref().unwrap();
        assert!(error.starts_with("HTTP 500: overloaded overloaded"), "{}", &error[..80]);
        assert!(error.len() < 1200, "{} bytes kept", error.len());
        assert!(
            error.ends_with("more bytes not kept)"),
            "{}",
            &error[error.len() - 60..]
        );
    }
    let written: u64 = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(written < 256 << 10, "the results folder holds {written} bytes");
}

/// Item 5: a server that redirects to another origin (here `localhost` on another port) gets no
/// request from speclens there: not the model list with the `--header` values, not the prompts,
/// on either transport (plain http, and reqwest's, which credentials in the URL select).
#[test]
fn redirects_to_another_host_are_refused_and_send_it_nothing() {
    let heard: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = heard.clone();
    let elsewhere = raw_server(move |head, stream| {
        log.lock().unwrap().push(head.to_string());
        respond(
            stream,
            "200 OK",
            "content-type: application/json\r\n",
            MODELS.as_bytes(),
        );
    });
    let port = elsewhere.rsplit(':').next().unwrap().to_string();
    let target = format!("http://localhost:{port}");
    // Every request redirected.
    let moved = format!("307 Temporary Redirect\r\nlocation: {target}/v1/models");
    let all = raw_server(move |_, stream| respond(stream, &moved, "", b""));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let secret = ["--header", "X-Api-Key: sk-never-elsewhere"];
    let (code, _, stderr) = bench(&all, &out, &secret);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("the server redirected to {target}, another origin")),
        "{stderr}"
    );
    // Only the completions redirected, on reqwest's path (credentials in the URL).
    let moved = format!("307 Temporary Redirect\r\nlocation: {target}/v1/completions");
    let completions = models_or(move |_, stream| respond(stream, &moved, "", b""));
    let with_credentials = completions.replace("http://", "http://user:pw@");
    let (code, _, stderr) = bench(
        &with_credentials,
        &out,
        &[&secret[..], &["--model", "m", "--no-scrape"]].concat(),
    );
    assert_ne!(code, 0, "{stderr}");
    let records = read_records(&out);
    assert!(
        records
            .iter()
            .all(|r| r.error.as_deref().is_some_and(|e| e.contains("another origin"))),
        "{:?}",
        records.iter().map(|r| r.error.clone()).collect::<Vec<_>>()
    );
    // Our own transport does not follow redirects at all: the 307 is the error.
    let (code, _, _) = bench(
        &completions,
        &out,
        &[&secret[..], &["--model", "m", "--no-scrape"]].concat(),
    );
    assert_ne!(code, 0);
    assert!(read_records(&out)
        .iter()
        .all(|r| r.error.as_deref().is_some_and(|e| e.starts_with("HTTP 307"))));
    assert_eq!(
        *heard.lock().unwrap(),
        Vec::<String>::new(),
        "the other host was sent something"
    );
}

/// Item 7: a dataset must be a regular file: `/dev/zero` (endless) and a FIFO (a read that
/// never returns) are refused at once, by name.
#[test]
fn devices_and_fifos_are_not_datasets() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("prompts.jsonl");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for path in [std::path::Path::new("/dev/zero"), fifo.as_path()] {
        let out = dir.path().join("run");
        let (code, _, stderr) = bench(
            &sim.url(),
            &out,
            &["--dataset", "jsonl", "--dataset-path", path.to_str().unwrap()],
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("not a regular file"), "{stderr}");
        assert!(!out.exists());
    }
}

/// Item 6: a sweep re-run into a folder an earlier sweep left against a changed server (another
/// URL, k = 3 then k = 5) does not pool the old point with the new ones: it is left out of the
/// table, and sweep.json and the console name it and how its server differed; `--join-stale`
/// pools it, marked. Every point file says when its sweep started.
#[test]
fn points_of_an_earlier_sweep_against_another_server_are_not_pooled_silently() {
    let first = Speclens::instant_spec_sim("0.7", &[]);
    let changed = Speclens::instant_sim_of_k("5", "0.3", &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let sweep = |url: &str, levels: &str, extra: &[&str]| {
        let arm = format!("spec={url}");
        let mut args = vec![
            "sweep",
            "--arm",
            &arm,
            "--concurrency",
            levels,
            "--min-requests",
            "2",
            "--output-tokens",
            "8",
            "--out",
            out,
        ];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = run_speclens_within(&args, Duration::from_secs(120));
        assert_eq!(code, 0, "{stdout}{stderr}");
        (stdout, read_json(&dir.path().join("sweep.json")))
    };
    sweep(&first.url(), "1,2", &[]);
    let old = read_json(&dir.path().join("spec-c2.json"));
    let started = old["sweep_started"]
        .as_str()
        .expect("the point says when its sweep started")
        .to_string();
    let (stdout, table) = sweep(&changed.url(), "1", &[]);
    let earlier = &table["earlier_points"];
    assert_eq!(earlier.as_array().map(Vec::len), Some(1), "{earlier}");
    assert_eq!(earlier[0]["point"], "spec-c2");
    assert_eq!(earlier[0]["joined"], false);
    assert_eq!(earlier[0]["sweep_started"], started.as_str());
    let differences = earlier[0]["differences"].to_string();
    assert!(
        differences.contains(&format!("URL {}", first.url())) && differences.contains("k 3, now 5"),
        "{differences}"
    );
    let levels: Vec<&serde_json::Value> = crate::common::head_table(&table)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["level"])
        .collect();
    assert_eq!(levels.len(), 1, "only the new point is in the table: {levels:?}");
    assert!(
        stdout.contains("Left out, measured against another server or workload (--join-stale pools them): spec-c2"),
        "{stdout}"
    );
    let (stdout, table) = sweep(&changed.url(), "1", &["--join-stale"]);
    assert_eq!(table["earlier_points"][0]["joined"], true);
    assert_eq!(crate::common::head_table(&table)["rows"].as_array().unwrap().len(), 2);
    assert!(
        stdout.contains("Joined from earlier: spec-c2 (from the sweep of"),
        "{stdout}"
    );
}

/// Item 6: a run killed (SIGKILL) before it saved its result leaves only its records, in
/// `.records.jsonl.tmp`. While it runs, nothing lists it as killed (it holds its folder's lock);
/// once killed, `read`, `report` and `serve` each show it as a partial run recovered from those
/// records, with the request counts the records hold.
#[test]
fn a_killed_run_is_shown_as_a_partial_run_recovered_from_its_records() {
    let sim = Speclens::sim(&["--step-ms", "10", "--num-spec-tokens", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("killed");
    let mut child = Command::new(crate::common::speclens_bin())
        .args([
            "bench",
            "--url",
            &sim.url(),
            "--num-prompts",
            "400",
            "--concurrency",
            "4",
            "--output-tokens",
            "16",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let tmp = out.join(".records.jsonl.tmp");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&tmp).map_or(0, |t| t.lines().count()) < 8 {
        assert!(std::time::Instant::now() < deadline, "no records written");
        std::thread::sleep(Duration::from_millis(50));
    }
    let results = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = run_speclens(&["read", results]);
    assert_eq!(code, 2, "a running run is not a killed one: {stdout}{stderr}");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.join("result.json").exists());
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&tmp)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let completed = records.iter().filter(|r| r["success"] == true).count() as u64;
    let failed = records.len() as u64 - completed;

    let (code, stdout, stderr) = run_speclens(&["read", results]);
    assert_eq!(code, 0, "{stderr}");
    let row = stdout
        .lines()
        .find(|l| l.contains("killed/.records.jsonl.tmp"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let cells: Vec<&str> = row.split(['│', '┆']).map(str::trim).collect();
    assert_eq!(
        (cells[2], cells[3]),
        (completed.to_string().as_str(), failed.to_string().as_str()),
        "{row}"
    );
    assert!(
        stderr.contains(&format!("recovered from the {} records", records.len())),
        "{stderr}"
    );

    let report = dir.path().join("report.html");
    let web = crate::common::workspace().join("web/dist");
    let (code, _, stderr) = run_speclens(&[
        "report",
        results,
        "--web-dir",
        web.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(std::fs::read_to_string(&report).unwrap().contains("recovered from the"));

    let server = Speclens::start(&[
        "serve",
        "--port",
        "0",
        "--web-dir",
        web.to_str().unwrap(),
        "--results-dir",
        results,
    ]);
    let base = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let get = |path: &str| -> serde_json::Value {
        let url = format!("{}{path}", base.trim_end_matches('/'));
        runtime.block_on(async { reqwest::get(url).await.unwrap().json().await.unwrap() })
    };
    let list = get("/api/runs");
    assert!(list.to_string().contains("\"killed\""), "{list}");
    let run = get("/api/runs/killed");
    assert_eq!(run["partial"], true);
    assert_eq!(
        (run["completed"].as_u64(), run["failed"].as_u64()),
        (Some(completed), Some(failed))
    );
    assert!(run["recovered"]
        .as_str()
        .unwrap_or_default()
        .contains("whose result was not saved"));
}

/// Item 7: a dataset is read a line or an item at a time and sampled as it is read: 1 M
/// ShareGPT entries (about 150 MB) for `--num-prompts 2` cost a small share of the file's size
/// (before: the file, then every entry, then every entry tokenized); a 20 MiB line is refused
/// by number; `--max-dataset-mib` bounds the file.
#[test]
fn a_huge_dataset_is_sampled_as_it_is_read_and_a_huge_line_refused() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let sharegpt = dir.path().join("sharegpt.json");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&sharegpt).unwrap());
        file.write_all(b"[").unwrap();
        for i in 0..1_000_000 {
            let sep = if i == 0 { "" } else { ",\n" };
            write!(
                file,
                r#"{sep}{{"id":"{i}","conversations":[{{"from":"human","value":"Question {i}: say why the sky is blue at noon."}},{{"from":"gpt","value":"Because of Rayleigh scattering, entry {i}."}}]}}"#
            )
            .unwrap();
        }
        file.write_all(b"]").unwrap();
    }
    let file_kb = std::fs::metadata(&sharegpt).unwrap().len() / 1024;
    let out = dir.path().join("run");
    let path = sharegpt.to_str().unwrap();
    let args = [
        "bench",
        "--url",
        &sim.url(),
        "--quiet",
        "--no-scrape",
        "--out",
        out.to_str().unwrap(),
        "--num-prompts",
        "2",
        "--dataset",
        "sharegpt",
        "--dataset-path",
        path,
    ];
    let (peak_kb, code) = speclens_peak_rss_kb(&args, Duration::from_secs(120));
    assert_eq!(code, 0);
    let records = read_records(&out);
    assert_eq!(records.len(), 2);
    assert!(peak_kb < file_kb / 2, "peak RSS {peak_kb} kB for a {file_kb} kB file");

    let jsonl = dir.path().join("prompts.jsonl");
    let huge = format!("{{\"prompt\": \"hi\"}}\n{{\"prompt\": \"{}\"}}\n", "x".repeat(20 << 20));
    std::fs::write(&jsonl, huge).unwrap();
    let jsonl = jsonl.to_str().unwrap();
    let (peak_kb, _) = speclens_peak_rss_kb(
        &[
            "bench",
            "--url",
            &sim.url(),
            "--quiet",
            "--dataset",
            "jsonl",
            "--dataset-path",
            jsonl,
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(peak_kb < 120 * 1024, "a 20 MiB line: peak RSS {peak_kb} kB");
    let (code, _, stderr) = bench(&sim.url(), &out, &["--dataset", "jsonl", "--dataset-path", jsonl]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("line 2 is over 16 MiB, the most a dataset line may hold"),
        "{stderr}"
    );
    let (code, _, stderr) = bench(
        &sim.url(),
        &out,
        &["--dataset", "jsonl", "--dataset-path", jsonl, "--max-dataset-mib", "8"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("20.0 MiB, over the 8 MiB a dataset may hold (--max-dataset-mib)"),
        "{stderr}"
    );
}

/// Item 7: `check` of per-position rates that cannot be judged (a rate above 1, as a broken or
/// hand-edited file may hold) fails and says why, where it said "within noise".
#[test]
fn a_figure_that_cannot_be_compared_fails_the_check_with_the_reason() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let (code, _, stderr) = bench(&sim.url(), &base, &["--num-prompts", "8"]);
    assert_eq!(code, 0, "{stderr}");
    let new = dir.path().join("new");
    std::fs::create_dir_all(&new).unwrap();
    let mut result = read_json(&base.join("result.json"));
    result["spec_decode_per_position_acceptance_rates"] = serde_json::json!([1.4, 0.5, 0.3]);
    std::fs::write(new.join("result.json"), serde_json::to_vec(&result).unwrap()).unwrap();
    let (code, stdout, stderr) = run_speclens(&[
        "check",
        "--baseline",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--figure",
        "per_position",
    ]);
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stdout.contains("CANNOT COMPARE"), "{stdout}");
    assert!(
        stderr.contains("cannot be compared: per_position[1] (a rate outside [0, 1]: "),
        "{stderr}"
    );
}

/// Item 9: one event with a lone surrogate escape costs that character, not the response; a
/// compressed answer is named by its encoding; a stream still open at `--timeout` is a timeout
/// on reqwest's path as on ours.
#[test]
fn odd_answers_are_classified_by_what_went_wrong() {
    let stream_with_lone_surrogate = models_or(|_, stream| {
        let events = concat!(
            "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"a\\ud800b\"}]}\n\n",
            "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" c\",\"finish_reason\":\"length\"}]}\n\n",
            "data: [DONE]\n\n"
        );
        respond(
            stream,
            "200 OK",
            "content-type: text/event-stream\r\n",
            events.as_bytes(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (code, _, stderr) = bench(
        &stream_with_lone_surrogate,
        &out,
        &["--model", "m", "--no-scrape", "--endpoint", "completions"],
    );
    assert_eq!(code, 0, "{stderr}");
    for r in read_records(&out) {
        assert!(r.success && r.error.is_none(), "{:?}", r.error);
        assert!(r.output_tokens > 0);
    }
    let compressed = models_or(|_, stream| {
        respond(
            stream,
            "200 OK",
            "content-type: text/event-stream\r\ncontent-encoding: gzip\r\n",
            b"\x1f\x8b\x08\x00junk",
        )
    });
    let (code, _, _) = bench(&compressed, &out, &["--model", "m", "--no-scrape"]);
    assert_ne!(code, 0);
    for r in read_records(&out) {
        let error = r.error.unwrap_or_default();
        assert!(
            error.contains("the answer is compressed (Content-Encoding: gzip)"),
            "{error}"
        );
    }
    // One event, then nothing until the client gives up.
    let hangs = models_or(|_, mut stream| {
        let event =
            "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n";
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
            event.len()
        );
        std::thread::sleep(Duration::from_secs(5));
    });
    for url in [hangs.clone(), hangs.replace("http://", "http://user:pw@")] {
        let (code, _, _) = bench(&url, &out, &["--model", "m", "--no-scrape", "--timeout", "1"]);
        assert_ne!(code, 0);
        for r in read_records(&out) {
            assert_eq!(
                r.error_kind,
                Some(speclens_shared::run::record::ErrorKind::Timeout),
                "{url}: {:?}",
                r.error
            );
        }
    }
}

/// Run `bench` against `url` to its end and return its peak resident memory in kB.
fn bench_peak_kb(url: &str, out: &std::path::Path, extra: &[&str]) -> u64 {
    Bench::at(url)
        .set("--model", "m")
        .switch("--no-scrape")
        .quiet()
        .into(out)
        .args(extra)
        .within(Duration::from_secs(120))
        .peak_rss_kb()
}

/// Item 2: 4 MiB of payload as 1-byte HTTP chunks (4 M chunks, ~370 MB kept at the cost of one
/// allocation a chunk) is kept in one buffer, charged what it allocates, and abandoned at a
/// budget smaller than its payload; 24 MiB of 3 M tiny SSE events is read one event at a time
/// (no list of them). Both on both transports.
#[test]
fn many_tiny_chunks_and_events_are_charged_what_they_cost() {
    let one_byte_chunks = models_or(|_, mut stream| {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
        let block = "1\r\nx\r\n".repeat(1 << 16);
        for _ in 0..64 {
            if stream.write_all(block.as_bytes()).is_err() {
                return;
            }
        }
        let _ = stream.write_all(b"0\r\n\r\n");
        finish(stream);
    });
    let tiny_events = models_or(|_, mut stream| {
        let events = "data:1\n\n".repeat(3 << 20) + "data: [DONE]\n\n";
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            events.len()
        );
        let _ = stream.write_all(events.as_bytes());
        finish(stream);
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    for reqwest_path in [false, true] {
        let via = |url: &str| {
            if reqwest_path {
                url.replace("http://", "http://user:pw@")
            } else {
                url.to_string()
            }
        };
        let peak_kb = bench_peak_kb(
            &via(&one_byte_chunks),
            &out,
            &["--num-prompts", "1", "--max-buffered-mib", "3"],
        );
        let error = read_records(&out)[0].error.clone().unwrap_or_default();
        assert!(error.contains("passed 3 MiB (--max-buffered-mib)"), "{error}");
        assert!(peak_kb < 150 * 1024, "1-byte chunks: peak RSS {peak_kb} kB");
        // Within a budget that holds it, the same body is read whole, in little memory.
        let peak_kb = bench_peak_kb(&via(&one_byte_chunks), &out, &["--num-prompts", "1"]);
        let error = read_records(&out)[0].error.clone().unwrap_or_default();
        assert!(error.contains("not an SSE stream"), "{error}");
        assert!(peak_kb < 150 * 1024, "1-byte chunks read whole: peak RSS {peak_kb} kB");
        let peak_kb = bench_peak_kb(&via(&tiny_events), &out, &["--num-prompts", "1"]);
        let error = read_records(&out)[0].error.clone().unwrap_or_default();
        assert!(error.contains("the stream carried no generated text"), "{error}");
        assert!(peak_kb < 150 * 1024, "tiny events: peak RSS {peak_kb} kB");
    }
}

/// Item 6: one writer a results folder (a second command given the same `--out` is refused,
/// naming the first; the first's records stay whole), and categories whose names clean to one
/// file name, or are 300 characters long, each keep a file of their own.
#[test]
fn a_results_folder_has_one_writer_and_each_category_its_own_file() {
    // Each answer takes 2 s: the first bench holds its folder for a while.
    let slow = models_or(|_, stream| {
        std::thread::sleep(Duration::from_secs(2));
        respond(
            stream,
            "500 Internal Server Error",
            "content-type: application/json\r\n",
            br#"{"error":{"message":"slow"}}"#,
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut first = Command::new(crate::common::speclens_bin())
        .args([
            "bench",
            "--url",
            &slow,
            "--model",
            "m",
            "--no-scrape",
            "--num-prompts",
            "2",
            "--concurrency",
            "1",
        ])
        .args(["--quiet", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !out.join(".speclens.lock").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the first bench never took its folder"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, _, stderr) = bench(&slow, &out, &["--model", "m", "--no-scrape"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} is being written by another speclens (pid {})",
            out.display(),
            first.id()
        )),
        "{stderr}"
    );
    let _ = first.wait();
    assert_eq!(read_records(&out).len(), 2, "the first run's records are whole");

    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let long = "c".repeat(300);
    let data = dir.path().join("prompts.jsonl");
    let mut lines = String::new();
    for category in ["a/b", "a_b", "a?b", long.as_str()] {
        for i in 0..2 {
            lines.push_str(&format!(
                "{{\"prompt\": \"Summarize memo {i} of {category}\", \"category\": \"{category}\"}}\n"
            ));
        }
    }
    std::fs::write(&data, lines).unwrap();
    let accept = dir.path().join("accept");
    let (code, stdout, stderr) = run_speclens_within(
        &[
            "accept",
            "--url",
            &sim.url(),
            "--dataset",
            "jsonl",
            "--dataset-path",
            data.to_str().unwrap(),
            "--requests-per-category",
            "2",
            "--request-rate",
            "200",
            "--output-tokens",
            "32",
            "--out",
            accept.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let mut kept: Vec<String> = std::fs::read_dir(&accept)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("accept-"))
        .collect();
    kept.sort();
    let cut = format!("accept-{}.json", "c".repeat(64));
    assert_eq!(
        kept,
        [
            "accept-a_b-2.json",
            "accept-a_b-3.json",
            "accept-a_b.json",
            cut.as_str()
        ]
    );
    // Each file keeps its category's own name.
    let mut names: Vec<String> = kept
        .iter()
        .map(|f| read_json(&accept.join(f))["category"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["a/b", "a?b", "a_b", long.as_str()]);
}

/// Item 8: the dashboard's run list: a FIFO named `result.json` and a result file reached
/// through a symlink out of the results folder are not listed (and the FIFO does not hang the
/// answer), and the list answers the same while the file is unchanged.
#[tokio::test]
async fn the_run_list_skips_fifos_and_links_out_of_the_results_folder() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let outside = dir.path().join("outside");
    let (code, _, stderr) = bench(&sim.url(), &results.join("real-run"), &[]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = bench(&sim.url(), &outside.join("secret-run"), &[]);
    assert_eq!(code, 0, "{stderr}");
    std::os::unix::fs::symlink(outside.join("secret-run"), results.join("linked-run")).unwrap();
    std::fs::create_dir_all(results.join("fifo-run")).unwrap();
    assert!(Command::new("mkfifo")
        .arg(results.join("fifo-run/result.json"))
        .status()
        .unwrap()
        .success());
    let web = crate::common::built_web_dir();
    let server = Speclens::start(&[
        "serve",
        "--port",
        "0",
        "--web-dir",
        web.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
    ]);
    let base = server.url().trim_end_matches('/').to_string();
    let list = || async {
        let (status, text) = crate::common::get_text(&format!("{base}/api/runs")).await;
        assert_eq!(status, 200, "{text}");
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };
    let first = list().await;
    let ids: Vec<&str> = first["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["real-run"], "{first}");
    assert_eq!(list().await, first);
    // The FIFO asked for by id: refused, not a hang.
    let (status, answer) = crate::common::get_text(&format!("{base}/api/runs/fifo-run")).await;
    assert_eq!(status, 404, "{answer}");
    assert!(answer.contains("no such run"), "{answer}");
    // `read` and `report` hold to the same rule (#63 item 13), and the FIFO hangs neither.
    let folder = results.to_str().unwrap();
    let (code, stdout, stderr) = crate::common::run_speclens_within(&["read", folder], Duration::from_secs(60));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("real-run") && !stdout.contains("linked-run"),
        "{stdout}"
    );
    let page = dir.path().join("report.html");
    let args = [
        "report",
        folder,
        "--web-dir",
        web.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ];
    let (code, _, stderr) = crate::common::run_speclens_within(&args, Duration::from_secs(60));
    assert_eq!(code, 0, "{stderr}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("real-run") && !html.contains("linked-run") && !html.contains("secret-run"));
}

/// Item 9: 20 streaming clients that send a long request (500,000 tokens) and never read: the
/// sim's engine runs them to the end all the same, but each request holds a bounded queue of
/// events (tokens merged past it), not one event per step (~200,000 each, far past what the
/// sockets' buffers take); connections are capped as the dashboard's are.
#[test]
fn clients_that_never_read_cost_the_sim_a_bounded_queue_each() {
    const CLIENTS: usize = 20;
    let sim = Speclens::instant_spec_sim("0.7", &["--max-model-len", "600000", "--kv-cache-tokens", "20000000"]);
    let host = sim
        .url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let body = r#"{"model":"speclens/sim-8b","prompt":"hi","max_tokens":500000,"stream":true,"ignore_eos":true}"#;
    let held: Vec<TcpStream> = (0..CLIENTS)
        .map(|_| {
            let mut stream = TcpStream::connect(&host).unwrap();
            write!(
                stream,
                "POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            stream
        })
        .collect();
    // Every request is generated (the counters say so) while no client reads.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let metrics = {
            use std::io::Read;
            let mut stream = TcpStream::connect(&host).unwrap();
            write!(
                stream,
                "GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut text = String::new();
            let _ = stream.read_to_string(&mut text);
            text
        };
        let finished: f64 = metrics
            .lines()
            .filter(|l| l.starts_with("vllm:request_success_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        if finished >= CLIENTS as f64 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{finished} of {CLIENTS} requests finished"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let peak_kb = sim.peak_rss_kb();
    eprintln!("sim peak RSS {peak_kb} kB with {CLIENTS} unread streams");
    assert!(
        peak_kb < 150 * 1024,
        "sim peak RSS {peak_kb} kB with {CLIENTS} unread streams"
    );
    drop(held);
}

/// A Prometheus answer of `series` counter series × 100 samples, in the API's matrix shape.
fn prometheus_matrix(series: usize, now_s: u64) -> String {
    let mut body = String::from(r#"{"status":"success","data":{"resultType":"matrix","result":["#);
    for i in 0..series {
        let family = ["drafts", "draft_tokens", "accepted_tokens"][i % 3];
        if i > 0 {
            body.push(',');
        }
        body.push_str(&format!(
            r#"{{"metric":{{"__name__":"vllm:spec_decode_num_{family}_total","instance":"h{i}:8000","engine":"0","model_name":"m"}},"values":["#
        ));
        for j in 0..100u64 {
            let t = now_s - 500 + j * 20;
            body.push_str(&format!("{}[{t},\"{}\"]", if j > 0 { "," } else { "" }, 1000 + j * 7));
        }
        body.push_str("]}");
    }
    body.push_str("]}}");
    body
}

/// Peak RSS (kB) of a 4-request bench whose Prometheus answers the window's query with
/// `window` and the live sampler's rate queries with an empty vector.
fn prometheus_bench_peak_kb(window: String) -> u64 {
    let window = Arc::new(window);
    let prometheus = raw_server(move |head, stream| {
        // The live sampler asks `rate(…)` (URL-encoded in the query string); the window asks
        // the counters' raw samples.
        let body = if head.contains("rate%28") || head.contains("rate(") {
            r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#.as_bytes()
        } else {
            window.as_bytes()
        };
        respond(stream, "200 OK", "content-type: application/json\r\n", body);
    });
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (peak_kb, code) = speclens_peak_rss_kb(
        &[
            "bench",
            "--url",
            &sim.url(),
            "--num-prompts",
            "4",
            "--prometheus-url",
            &prometheus,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0);
    let result = read_json(&out.join("result.json"));
    assert_eq!(
        result["spec_decode"]["prometheus"]["result"]["status"], "ok",
        "{}",
        result["spec_decode"]["prometheus"]
    );
    peak_kb
}

/// Item 2: a Prometheus whose window answer is 40 MiB of samples (20,000 counter series × 100
/// samples) costs about one answer: its bytes and its numbers, read into series, not a JSON
/// tree many times its size (1.75 GB peak before). Its bound is set from that one answer: the
/// peak over the same run with a three-series answer stays under 1.5 × (the answer's bytes +
/// 16 bytes a sample). The live sampler's queries go one after another, so how many answers
/// are held at once no longer depends on scheduling.
#[test]
fn a_huge_prometheus_answer_costs_its_samples_not_a_json_tree() {
    const SERIES: usize = 20_000;
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let answer = prometheus_matrix(SERIES, now_s);
    assert!(answer.len() > 40 << 20, "{} bytes", answer.len());
    let one_answer_kb = (answer.len() as u64 + SERIES as u64 * 100 * 16) / 1024;
    let baseline_kb = prometheus_bench_peak_kb(prometheus_matrix(3, now_s));
    let peak_kb = prometheus_bench_peak_kb(answer);
    eprintln!("peak RSS {peak_kb} kB, {baseline_kb} kB with a small answer; one answer {one_answer_kb} kB");
    assert!(
        peak_kb < baseline_kb + one_answer_kb * 3 / 2,
        "peak RSS {peak_kb} kB: {baseline_kb} kB with a small answer, one answer {one_answer_kb} kB"
    );
}

/// Round three, items 7 and 10: every file speclens reads goes through one bounded opener.
/// `/dev/zero` (endless) and a FIFO (whose open waits for a writer) given as a CA file, a
/// sweep to calibrate from, a sweep to write rules from or a baseline to check against are
/// refused at once as not regular files, never read or waited on (before: 2–3 GB read, or a
/// hang); a killed run's `.records.jsonl.tmp` of 3 GiB without a line end (a sparse file)
/// costs `read` one line's bounded buffer, not the file (before: 3.1 GB).
#[test]
fn every_file_read_is_bounded_and_never_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.to_str().unwrap().to_string();
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    for bad in ["/dev/zero", fifo.as_str()] {
        let commands: [Vec<&str>; 4] = [
            vec![
                "bench",
                "--url",
                "https://127.0.0.1:9",
                "--ca-cert",
                bad,
                "--num-prompts",
                "1",
            ],
            vec!["model", "--calibrate", bad, "--measured-E", "2", "--measured-k", "3"],
            vec!["rules", "--from-sweep", bad],
            vec!["check", "--baseline", bad, run.to_str().unwrap()],
        ];
        for args in commands {
            let (code, out, err) = run_speclens_within(&args, Duration::from_secs(30));
            assert!(
                code != 0 && err.contains("not a regular file"),
                "{args:?}: exit {code}\n{out}{err}"
            );
        }
    }
    let killed = dir.path().join("results/killed");
    std::fs::create_dir_all(&killed).unwrap();
    let records = std::fs::File::create(killed.join(".records.jsonl.tmp")).unwrap();
    records.set_len(3 << 30).unwrap();
    let results = dir.path().join("results");
    let (peak_kb, _) = speclens_peak_rss_kb(&["read", results.to_str().unwrap()], Duration::from_secs(60));
    assert!(peak_kb < 150 * 1024, "read of a 3 GiB line: peak RSS {peak_kb} kB");
    let (_, out, err) = run_speclens_within(&["read", results.to_str().unwrap()], Duration::from_secs(60));
    assert!(
        format!("{out}{err}").contains("line 1 is over 32 MiB, the most a records file line may hold"),
        "{out}{err}"
    );
}
