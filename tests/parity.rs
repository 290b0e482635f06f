//! Parity with `vllm bench serve` and AIPerf beyond spec decode, end to end: goodput under
//! objectives some requests miss (console, `result.json`, AIPerf's export, the sweep's goodput
//! comparison), and AIPerf's per-record `profile_export.jsonl`.

use std::time::Duration;

use serde_json::Value;

use crate::common::bench::{Bench, BenchRun};
use crate::common::{read_records, run_speclens, sweep_within, Speclens};

/// A real-time sim that runs 4 sequences at once: 12 requests sent together are served in three
/// waves, so the first wave's time to first token is about one 5 ms step and the later waves'
/// a whole request later (32 tokens at about 1.8 per step with k = 2, α = 0.6: some 90 ms).
fn four_at_a_time() -> Speclens {
    Speclens::start(&[
        "sim",
        "--port",
        "0",
        "--num-spec-tokens",
        "2",
        "--alpha",
        "0.6",
        "--max-num-seqs",
        "4",
        "--step-ms",
        "5",
    ])
}

#[test]
fn goodput_counts_the_requests_within_every_objective() {
    let sim = four_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let BenchRun { stdout, result, .. } = Bench::at(&sim.url())
        .into(&run)
        .args(&[
            "--num-prompts",
            "12",
            "--input-tokens",
            "8",
            "--output-tokens",
            "32",
            "--goodput",
            "ttft:40",
            "e2el:5000",
        ])
        .ok();
    // The same rule by hand, over the records: every objective at most its value. Twelve
    // requests at once against four sequences at a time: the first wave of four starts at once
    // (TTFT one 5 ms step), the later waves wait for a whole answer (32 tokens at about two a
    // step: some 80 ms), so exactly four meet TTFT 40 ms.
    let records = read_records(&run);
    assert_eq!(records.len(), 12);
    let good = records
        .iter()
        .filter(|r| r.success && r.ttft_ms.unwrap() <= 40.0 && r.e2el_ms.unwrap() <= 5000.0)
        .count() as u64;
    assert_eq!(good, 4, "the first wave of four meets TTFT 40 ms, no later one");
    assert_eq!(result["good_requests"], good);
    let duration = result["duration"].as_f64().unwrap();
    let goodput = result["request_goodput"].as_f64().unwrap();
    assert!((goodput - good as f64 / duration).abs() < 1e-9, "{goodput}");
    assert!(goodput < result["request_throughput"].as_f64().unwrap());
    assert_eq!(
        result["config"]["goodput"],
        serde_json::json!({"ttft": 40.0, "e2el": 5000.0})
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Request goodput (req/s):"))
        .unwrap_or_else(|| panic!("vLLM's goodput line:\n{stdout}"));
    assert_eq!(line, format!("{:<40} {:<10.2}", "Request goodput (req/s):", goodput));
    let after = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Request throughput"))
        .nth(1);
    assert_eq!(
        after,
        Some(line),
        "right under the request throughput, as vLLM prints it"
    );

    let export: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("profile_export_speclens.json")).unwrap()).unwrap();
    assert_eq!(
        export["good_request_count"],
        serde_json::json!({"unit": "requests", "avg": good as f64})
    );
    assert_eq!(export["goodput"]["unit"], "requests/sec");
    assert!((export["goodput"]["avg"].as_f64().unwrap() - goodput).abs() < 1e-9);

    // Without objectives vLLM writes null, and AIPerf has no goodput metrics.
    let plain = dir.path().join("plain");
    let BenchRun { stdout, result, .. } = Bench::at(&sim.url()).into(&plain).args(&["--num-prompts", "4"]).ok();
    assert_eq!(result["request_goodput"], Value::Null);
    assert!(result.get("good_requests").is_none());
    assert!(!stdout.contains("Request goodput"));
}

#[test]
fn a_malformed_objective_is_a_usage_error_naming_it() {
    for (arg, says) in [
        ("ttft=40", "KEY:VALUE"),
        ("itl:5", "one of ttft, tpot, e2el"),
        ("tpot:-1", "≥ 0"),
    ] {
        let (code, _, err) = run_speclens(&["bench", "--url", "http://127.0.0.1:9", "--goodput", arg]);
        assert_eq!(code, 2, "{arg}: {err}");
        assert!(err.contains(says) && err.contains(arg), "{arg}: {err}");
    }
    // Without a stream there is no first token to time: only an E2E objective means anything.
    let (code, _, err) = run_speclens(&[
        "bench",
        "--url",
        "http://127.0.0.1:9",
        "--no-stream",
        "--goodput",
        "tpot:50",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("need a stream"), "{err}");
    let (code, _, err) = run_speclens(&[
        "accept",
        "--url",
        "http://127.0.0.1:9",
        "--dataset-path",
        "q.jsonl",
        "--goodput",
        "e2el:500",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("accept measures acceptance by category"), "{err}");
}

#[test]
fn aiperf_s_per_record_export_has_one_line_per_measured_request() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    Bench::at(&sim.url())
        .into(&run)
        .args(&["--num-prompts", "6", "--warmup", "2", "--output-tokens", "12"])
        .ok();
    let records = read_records(&run);
    let lines: Vec<Value> = std::fs::read_to_string(run.join("profile_export.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6, "warm-up requests are not AIPerf's profiling records");
    let measured: Vec<_> = records.iter().filter(|r| !r.warmup).collect();
    for (line, r) in lines.iter().zip(&measured) {
        let meta = &line["metadata"];
        assert_eq!(meta["session_num"], r.request_id);
        assert_eq!(meta["benchmark_phase"], "profiling");
        let (start, end) = (
            meta["request_start_ns"].as_u64().unwrap(),
            meta["request_end_ns"].as_u64().unwrap(),
        );
        // From the send (before a connection was taken) to the last bytes: the request's
        // latency (from its first byte on the socket) and whatever came before that.
        let span_ms = (end - start) as f64 / 1e6;
        assert!(
            (span_ms - (r.ended_ms() - r.start_ms)).abs() < 1e-3,
            "{span_ms} vs {r:?}"
        );
        assert!(span_ms + 1e-3 >= r.e2el_ms.unwrap(), "{span_ms} vs {:?}", r.e2el_ms);
        // Due before the send by the record's own gap (integers: a float has 256 ns steps here).
        let due_ns = i128::from(start) - ((r.start_ms - r.credit_ms.unwrap()) * 1e6).round() as i128;
        assert!(
            (i128::from(meta["credit_issued_ns"].as_u64().unwrap()) - due_ns).abs() <= 2,
            "{meta}"
        );
        let m = &line["metrics"];
        assert_eq!(
            m["output_sequence_length"],
            serde_json::json!({"value": r.output_tokens, "unit": "tokens"})
        );
        assert_eq!(m["time_to_first_token"]["value"].as_f64(), r.ttft_ms);
        let itl = (r.e2el_ms.unwrap() - r.ttft_ms.unwrap()) / (r.output_tokens - 1) as f64;
        assert!((m["inter_token_latency"]["value"].as_f64().unwrap() - itl).abs() < 1e-9);
        assert_eq!(m["inter_chunk_latency"]["value"], serde_json::json!(r.itl_ms));
    }
}

#[test]
fn a_sweep_compares_goodput_beside_throughput() {
    // Both arms four sequences at a time on a 3-position ridge: one at a time the speculative
    // arm answers faster, eight at a time its verify steps (three positions a sequence) cost
    // three times the plain arm's for 1.96 tokens, so its goodput falls below plain's between 1 and 8.
    let timing = ["--max-num-seqs", "4", "--step-ms", "5", "--ridge", "3"];
    let spec = Speclens::start(
        &[
            &["sim", "--port", "0", "--num-spec-tokens", "2", "--alpha", "0.6"][..],
            &timing[..],
        ]
        .concat(),
    );
    let base = Speclens::start(&[&["sim", "--port", "0"][..], &timing[..]].concat());
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = sweep_within(
        &spec.url(),
        &base.url(),
        "1,8",
        out.path(),
        &[
            "--requests-per-slot",
            "2",
            "--repeats",
            "1",
            "--input-tokens",
            "8",
            "--output-tokens",
            "16",
            "--goodput",
            "ttft:60",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let table: Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("sweep.json")).unwrap()).unwrap();
    let head = crate::common::head_table(&table);
    assert_eq!(head["goodput_slo"], "ttft:60");
    // Each level's goodput ratio from the points' own files, by hand.
    let mut ratios = Vec::new();
    for row in head["rows"].as_array().unwrap() {
        let c = row["level"].as_f64().unwrap();
        let goodput = |arm: &str| {
            let point = crate::common::read_json(&out.path().join(format!("{arm}-c{c}.json")));
            assert_eq!(row[format!("{arm}_goodput")], point["request_goodput"], "{arm} at {c}");
            point["request_goodput"].as_f64().unwrap()
        };
        let (spec, base) = (goodput("spec"), goodput("base"));
        assert!(base > 0.0, "the plain arm meets TTFT 60 ms at concurrency {c}");
        ratios.push((c, spec / base));
    }
    assert_eq!(ratios.len(), 2);
    assert!(
        stdout.contains("Goodput (completed requests/s within ttft:60):"),
        "{stdout}"
    );
    // The crossing between the two levels, interpolated where spec ÷ plain goodput falls to 1.
    let ((c1, r1), (c8, r8)) = (ratios[0], ratios[1]);
    assert!(
        r1 > 1.0,
        "one at a time, the speculative arm answers more within TTFT 60 ms: {r1}"
    );
    assert!(r8 < 1.0, "eight at a time, plain answers more within TTFT 60 ms: {r8}");
    let crossing = c1 + (c8 - c1) * (r1 - 1.0) / (r1 - r8);
    assert_eq!(head["goodput_crossing"].as_f64(), Some(crossing));
    let line = format!("Goodput crossing (ttft:60): B* = {crossing:.1}");
    assert!(stdout.contains(&line), "{line}\n{stdout}");
}

/// SPEED-Bench from files on disk, in its public release's layout (a made fixture): bench takes
/// the qualitative split from the folder or a throughput split by its file; accept measures the
/// qualitative split's categories; a sweep runs on it and drops the random-token warning; a
/// malformed line or a folder without the split is an error naming it.
#[test]
fn speed_bench_splits_load_from_disk_for_bench_accept_and_sweep() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let base = Speclens::instant_plain_sim();
    let folder = crate::common::workspace().join("tests/fixtures/made_speed_bench");
    let dir = tempfile::tempdir().unwrap();
    let bench = |path: &std::path::Path, name: &str| {
        Bench::at(&sim.url())
            .into(&dir.path().join(name))
            .args(&[
                "--dataset",
                "speed-bench",
                "--dataset-path",
                path.to_str().unwrap(),
                "--num-prompts",
                "12",
            ])
            .ok()
    };
    let BenchRun {
        stdout: out, result, ..
    } = bench(&folder, "qualitative");
    assert_eq!(result["config"]["dataset"], "speed_bench");
    assert_eq!(result["completed"], 12);
    assert!(!out.contains("random-token prompts"), "{out}");
    // The split's prompts as the fixture holds them: (category, tokens) of each line.
    let tokens = speclens::bench::tokens::TokenCounter::new();
    let split = |file: &str| -> Vec<(Option<String>, u64)> {
        let mut lines: Vec<(Option<String>, u64)> = std::fs::read_to_string(folder.join(file))
            .unwrap()
            .lines()
            .map(|l| {
                let line: Value = serde_json::from_str(l).unwrap();
                let content = line["messages"][0]["content"].as_str().unwrap();
                (line["category"].as_str().map(str::to_string), tokens.count(content))
            })
            .collect();
        lines.sort();
        lines
    };
    let sent = |run: &str| -> Vec<(Option<String>, u64)> {
        let mut sent: Vec<(Option<String>, u64)> = read_records(&dir.path().join(run))
            .into_iter()
            // speclens's own count of the prompt it sent (the record's input length is the
            // server's, which the sim counts its own way).
            .map(|r| (r.category, r.usage.expect("usage").client_prompt_tokens))
            .collect();
        sent.sort();
        sent
    };
    // Twelve requests, the twelve lines of the split, each once with its category.
    assert_eq!(sent("qualitative"), split("qualitative.jsonl"));
    let BenchRun { result, .. } = bench(&folder.join("throughput_1k.jsonl"), "throughput");
    // The throughput split's three prompts, each sent four times.
    let mut each_four_times: Vec<(Option<String>, u64)> = split("throughput_1k.jsonl")
        .into_iter()
        .flat_map(|line| std::iter::repeat_n(line, 4))
        .collect();
    each_four_times.sort();
    assert_eq!(sent("throughput"), each_four_times, "{result}");

    // accept: one row per category of the qualitative split.
    let (code, out, err) = run_speclens(&[
        "accept",
        "--url",
        &sim.url(),
        "--dataset",
        "speed-bench",
        "--dataset-path",
        folder.to_str().unwrap(),
        "--requests-per-category",
        "3",
        "--out",
        dir.path().join("accept").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    for category in ["summarization", "coding", "math", "translation"] {
        assert!(out.contains(category), "{category}: {out}");
    }

    // sweep: on the split, without the random-token warning.
    let (code, out, err) = sweep_within(
        &sim.url(),
        &base.url(),
        "1,4",
        &dir.path().join("sweep"),
        &[
            "--dataset",
            "speed-bench",
            "--dataset-path",
            folder.to_str().unwrap(),
            "--requests-per-slot",
            "2",
            "--repeats",
            "1",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("random-token prompts"), "{out}");
    // Synthetic prompts name SPEED-Bench as the reference instead.
    let BenchRun { stdout: out, .. } = Bench::at(&sim.url())
        .into(&dir.path().join("synthetic"))
        .args(&["--num-prompts", "2"])
        .ok();
    assert!(
        out.contains("Measure on SPEED-Bench, the reference workload (--dataset speed-bench)"),
        "{out}"
    );

    // A folder without the split, and a malformed line, each named.
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = run_speclens(&[
        "bench",
        "--url",
        &sim.url(),
        "--dataset",
        "speed-bench",
        "--dataset-path",
        empty.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not a SPEED-Bench split"), "{err}");
    let broken = empty.path().join("qualitative.jsonl");
    std::fs::write(&broken, "{\"category\": \"math\", \"messages\": [{\"role\": \"user\", \"content\": \"Solve 2x = 4\"}]}\n{\"category\": \"math\", \"messages\": \"oops\"}\n").unwrap();
    let (code, _, err) = run_speclens(&[
        "bench",
        "--url",
        &sim.url(),
        "--dataset",
        "speed-bench",
        "--dataset-path",
        empty.path().to_str().unwrap(),
        "--num-prompts",
        "2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("qualitative.jsonl:2: not a dataset line"), "{err}");
}

#[test]
fn sharegpt_and_vllm_s_custom_jsonl_load_as_vllm_bench_serve_reads_them() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let fixture = crate::common::workspace().join("tests/fixtures/made_sharegpt.json");
    let run = dir.path().join("sharegpt");
    let BenchRun { result, .. } = Bench::at(&sim.url())
        .into(&run)
        .args(&[
            "--dataset",
            "sharegpt",
            "--dataset-path",
            fixture.to_str().unwrap(),
            "--num-prompts",
            "6",
        ])
        .ok();
    assert_eq!(result["config"]["dataset"], "sharegpt");
    assert_eq!(result["completed"], 6);
    // Three usable pairs (of five entries), each sent twice.
    let records = read_records(&run);
    let prompts: std::collections::BTreeSet<u64> = records.iter().map(|r| r.input_tokens).collect();
    assert_eq!(prompts.len(), 3, "{prompts:?}");

    let custom = dir.path().join("custom.jsonl");
    // vLLM's custom layout: `output_tokens` is the request's max_tokens.
    std::fs::write(
        &custom,
        "{\"prompt\": \"Summarize the memo\", \"output_tokens\": 7}\n{\"prompt\": \"Translate the note\", \"output_tokens\": 7}\n",
    )
    .unwrap();
    let run = dir.path().join("custom");
    let BenchRun { result, .. } = Bench::at(&sim.url())
        .into(&run)
        .args(&[
            "--dataset",
            "custom",
            "--dataset-path",
            custom.to_str().unwrap(),
            "--num-prompts",
            "4",
        ])
        .ok();
    assert_eq!(
        (result["config"]["dataset"].as_str(), result["completed"].as_u64()),
        (Some("jsonl"), Some(4))
    );
    assert!(
        read_records(&run).iter().all(|r| r.output_tokens <= 7),
        "max_tokens from output_tokens"
    );

    // A file that is not ShareGPT: a usage error naming the file and the line.
    let (code, _, err) = run_speclens(&[
        "bench",
        "--url",
        &sim.url(),
        "--dataset",
        "sharegpt",
        "--dataset-path",
        custom.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not a ShareGPT file") && err.contains("custom.jsonl") && err.contains("line 1"),
        "{err}"
    );
}

#[test]
fn a_rate_sweep_compares_latency_and_finds_where_speculation_stops_paying() {
    // A ridge of 8 token positions: the speculative sim's four positions per sequence (k = 3)
    // pass it from two sequences on, so it saturates near 62 req/s of 16 tokens, the plain sim
    // near 100. At 4 req/s speculation shortens every request; at 80 req/s its queue grows.
    let sim = |spec: bool| {
        let mut args = vec!["sim", "--port", "0", "--step-ms", "5", "--ridge", "8"];
        if spec {
            args.extend(["--num-spec-tokens", "3", "--alpha", "0.7"]);
        }
        Speclens::start(&args)
    };
    let (spec, base) = (sim(true), sim(false));
    let out = tempfile::tempdir().unwrap();
    let out_s = out.path().to_str().unwrap();
    let (code, stdout, stderr) = crate::common::run_speclens_within(
        &[
            "sweep",
            "--spec-url",
            &spec.url(),
            "--base-url",
            &base.url(),
            "--request-rate",
            "4,80",
            "--seconds-per-rate",
            "1.5",
            "--repeats",
            "1",
            "--input-tokens",
            "1",
            "--output-tokens",
            "16",
            "--out",
            out_s,
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let table: Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("sweep.json")).unwrap()).unwrap();
    assert_eq!(table["axis"], "request_rate");
    let head = crate::common::head_table(&table);
    let rows = head["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let mut speedups = Vec::new();
    for (row, rate) in rows.iter().zip(["4", "80"]) {
        assert_eq!(row["level"].as_f64().unwrap().to_string(), rate);
        let mut e2el = Vec::new();
        for arm in ["spec", "base"] {
            let point: Value =
                serde_json::from_str(&std::fs::read_to_string(out.path().join(format!("{arm}-r{rate}.json"))).unwrap())
                    .unwrap();
            // An open loop at the rate, every request sent at once the schedule says.
            assert_eq!(
                point["request_rate"].as_f64().unwrap().to_string(),
                rate,
                "{arm} at {rate}"
            );
            assert!(point["max_concurrency"].is_null(), "{point}");
            assert_eq!(
                row[format!("{arm}_median_e2el_ms")],
                point["median_e2el_ms"],
                "{arm} at {rate}"
            );
            e2el.push(point["median_e2el_ms"].as_f64().unwrap());
        }
        let speedup = e2el[1] / e2el[0]; // base ÷ spec
        speedups.push(speedup);
        if rate == "4" {
            assert!(
                speedup > 1.5,
                "at 4 req/s speculation should shorten requests: {e2el:?}\n{stdout}"
            );
        } else {
            assert!(
                speedup < 1.0,
                "at 80 req/s the speculative sim is saturated: {e2el:?}\n{stdout}"
            );
        }
    }
    // λ* where the speedup, linear between the two rates, is 1.0: from the points' own medians.
    let crossing = head["crossing"].as_f64().expect("a crossing between 4 and 80 req/s");
    let want = 4.0 + 76.0 * (speedups[0] - 1.0) / (speedups[0] - speedups[1]);
    assert!((crossing - want).abs() < 1e-9 * want, "{crossing} vs {want}");
    assert!(
        stdout.contains(&format!("Measured crossing: λ* = {want:.1} requests/s")),
        "{stdout}"
    );
    assert!(
        stdout.contains("Rate (req/s)   spec E2EL p50 ms   base E2EL p50 ms   speedup   verdict"),
        "{stdout}"
    );
    assert!(stdout.contains("Measured crossing: λ* = "), "{stdout}");
    assert!(stdout.contains(" requests/s (interpolated)"), "{stdout}");
}

#[test]
fn every_aiperf_named_metric_has_aiperf_s_unit_and_statistics() {
    // The run of AIPerf's README against the sim (streamed chat, concurrency 4, 20 requests),
    // by speclens; AIPerf 0.13's own export of the same command is the fixture.
    let aiperf: Value = serde_json::from_str(&crate::common::json_fixture_text(
        "captured_aiperf_0.13_profile_export.json",
    ))
    .unwrap();
    let sim = Speclens::start(&[
        "sim",
        "--port",
        "0",
        "--num-spec-tokens",
        "3",
        "--alpha",
        "0.7",
        "--time-scale",
        "0.1",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let _ = Bench::at(&sim.url())
        .into(&run)
        .args(&["--endpoint", "chat", "--concurrency", "4", "--num-prompts", "20"])
        .ok();
    let ours: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("profile_export_speclens.json")).unwrap()).unwrap();
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    // speclens's own additions, named so they cannot pass for AIPerf's (SPEC.md's zero-step
    // count; the version that wrote the file).
    let own = ["spec_decode_zero_step_requests", "speclens_version"];
    // AIPerf writes these only when requests carry a `max_tokens` (its `--osl`); speclens's
    // always do, the captured AIPerf run's did not.
    let asked_max_tokens = ["osl_mismatch_diff_pct", "osl_mismatch_count"];
    // AIPerf 0.14's (the captured run is 0.13's): a scalar in its unit, as its tests write it
    // (ai-dynamo/aiperf, tests of e2e_normalized_interactivity: `avg` and unit only).
    let aiperf_0_14 = ["e2e_normalized_interactivity_p75", "e2e_normalized_interactivity_p90"];
    let mut compared = 0;
    for (tag, metric) in ours.as_object().unwrap() {
        if aiperf_0_14.contains(&tag.as_str()) {
            assert_eq!(keys(metric), ["avg", "unit"], "{tag}: {metric}");
            assert_eq!(metric["unit"], "tokens/sec/user", "{tag}");
            continue;
        }
        if own.contains(&tag.as_str()) || asked_max_tokens.contains(&tag.as_str()) {
            continue;
        }
        let theirs = aiperf
            .get(tag)
            .unwrap_or_else(|| panic!("{tag}: not a key AIPerf writes for this run"));
        if metric.get("unit").is_some() {
            assert_eq!(metric["unit"], theirs["unit"], "{tag}'s unit");
            assert_eq!(keys(metric), keys(theirs), "{tag}'s statistics");
            compared += 1;
        } else {
            assert_eq!(
                std::mem::discriminant(metric),
                std::mem::discriminant(theirs),
                "{tag}: {metric} against AIPerf's {theirs}"
            );
            compared += 1;
        }
    }
    // Every key AIPerf wrote is ours too, but its version (speclens writes its own) and its GPU
    // telemetry (speclens reads no GPU counters; AIPerf leaves the key out when it reads none).
    for tag in aiperf.as_object().unwrap().keys() {
        if ["aiperf_version", "telemetry_data"].contains(&tag.as_str()) {
            continue;
        }
        assert!(ours.get(tag).is_some(), "{tag}: AIPerf writes it, speclens does not");
    }
    let theirs_with_units = aiperf
        .as_object()
        .unwrap()
        .values()
        .filter(|v| v.get("unit").is_some())
        .count();
    assert_eq!(theirs_with_units, 74, "the captured export's metrics");
    assert!(compared >= 76, "{compared} metrics and run keys compared");
    assert_eq!(ours["osl_mismatch_diff_pct"]["unit"], "%");
    assert_eq!(ours["osl_mismatch_count"]["unit"], "requests");
    // AIPerf's run keys, with speclens's values: its schema version, a 12-digit id, the run's
    // info with the command that ran it, and whether it completed. `aiperf_version` is AIPerf's
    // own: speclens writes `speclens_version` instead.
    assert_eq!(ours["schema_version"], aiperf["schema_version"]);
    let id = ours["benchmark_id"].as_str().unwrap();
    assert!(id.len() == 12 && id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    assert_eq!(ours["run_info"]["benchmark_id"], ours["benchmark_id"]);
    assert_eq!(ours["run_info"]["trial"], aiperf["run_info"]["trial"]);
    assert!(ours["run_info"]["cli_command"]
        .as_str()
        .unwrap()
        .starts_with("speclens bench "));
    assert_eq!(ours["is_complete"], true);
    assert!(ours.get("aiperf_version").is_none());
    // Per request (profile_export.jsonl): the new record metrics with AIPerf's units, and the
    // decode duration is the request latency less the TTFT.
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(run.join("profile_export.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let m = &line["metrics"];
    let v = |tag: &str| m[tag]["value"].as_f64().unwrap_or_else(|| panic!("{tag} in {m}"));
    assert!((v("decode_duration") - (v("request_latency") - v("time_to_first_token"))).abs() < 1e-9);
    assert!(
        (v("e2e_output_token_throughput") - v("output_sequence_length") / (v("request_latency") / 1e3)).abs() < 1e-6
    );
    assert!(
        (v("prefill_throughput_per_user") - v("input_sequence_length") / (v("time_to_first_token") / 1e3)).abs() < 1e-6
    );
    assert_eq!(m["e2e_output_token_throughput"]["unit"], "tokens/sec/user");
}

#[test]
fn multi_turn_questions_send_turn_two_with_turn_one_s_answer() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("question.jsonl");
    std::fs::write(
        &questions,
        concat!(
            r#"{"question_id": 81, "category": "writing", "turns": ["Write a short poem about rain.", "Now make it rhyme."]}"#,
            "\n",
            r#"{"question_id": 111, "category": "math", "turns": ["What is seven times eight?", "And divided by four?", "Show the steps."]}"#,
            "\n",
        ),
    )
    .unwrap();
    let run = dir.path().join("run");
    let q = questions.to_str().unwrap();
    let args = [
        "--dataset",
        "spec-bench",
        "--dataset-path",
        q,
        "--multi-turn",
        "--num-prompts",
        "2",
    ];
    let BenchRun { stdout, result, .. } = Bench::at(&sim.url())
        .into(&run)
        .args(&[&args[..], &["--output-tokens", "12"]].concat())
        .ok();
    assert_eq!(result["completed"], 5, "2 + 3 turns: {stdout}");
    let records = read_records(&run);
    let turns = |id: u64| -> Vec<&speclens_shared::run::record::RequestRecord> {
        let mut t: Vec<_> = records.iter().filter(|r| r.request_id == id).collect();
        t.sort_by_key(|r| r.turn);
        t
    };
    // The sim counts a chat's words: a later turn's prompt is the earlier prompt, its answer and
    // the new question.
    let words = |s: &str| s.split_whitespace().count() as u64;
    // The file's order is shuffled by the seed: the conversation is known by its length.
    for id in [0, 1] {
        let t = turns(id);
        let later = match t.len() {
            2 => vec!["Now make it rhyme."],
            _ => vec!["And divided by four?", "Show the steps."],
        };
        assert_eq!(
            t.iter().map(|r| r.turn).collect::<Vec<_>>(),
            (0..t.len() as u32).map(Some).collect::<Vec<_>>()
        );
        for (i, next) in later.iter().enumerate() {
            let (before, after) = (t[i], t[i + 1]);
            assert_eq!(
                after.input_tokens,
                before.input_tokens + before.output_tokens + words(next),
                "question {id}, turn {}",
                i + 1
            );
            assert!(
                after.start_ms >= before.start_ms + before.e2el_ms.unwrap(),
                "sent after the answer"
            );
        }
    }
    // AIPerf's per-record layout names the turn.
    let lines = std::fs::read_to_string(run.join("profile_export.jsonl")).unwrap();
    assert!(lines.contains(r#""turn_index":2"#), "{lines}");
    assert!(lines.contains(r#""x_request_id":"speclens-0-1""#), "{lines}");
    // Conversations need a chat and a dataset of turns.
    let (code, _, stderr) = run_speclens(&[
        "bench",
        "--url",
        &sim.url(),
        "--multi-turn",
        "--endpoint",
        "completions",
        "--dataset",
        "spec-bench",
        "--dataset-path",
        q,
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--multi-turn sends conversations: it needs --endpoint chat"),
        "{stderr}"
    );
    let (code, _, stderr) = run_speclens(&["bench", "--url", &sim.url(), "--multi-turn"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--dataset spec-bench or hf"), "{stderr}");
}
