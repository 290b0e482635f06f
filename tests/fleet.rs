//! Fleets through a real Prometheus server (Debian's `prometheus`, started here on 127.0.0.1):
//! three `speclens sim` replicas (one with two engines) scraped every 200 ms, a bench spread
//! across them, and the Prometheus path's figures equal to the direct scrapes'; a replica that
//! restarts mid-run gives correct totals through Prometheus and a reset report on the direct
//! path.

use std::time::Duration;

use serde_json::Value;

use crate::common::bench::Bench;
use crate::common::browser::free_port;
use crate::common::prometheus::{host_port, Prometheus, ScrapeJob};
use crate::common::{run_speclens, Speclens};

async fn start_prometheus(targets: &[String]) -> Prometheus {
    start_prometheus_job("vllm", targets).await
}

async fn start_prometheus_job(job: &str, targets: &[String]) -> Prometheus {
    Prometheus::start(&[ScrapeJob::new(job, targets)], None).await
}

fn bench(urls: &[String], prometheus: &str, extra: &[&str]) -> (String, Value) {
    bench_selecting(urls, prometheus, r#"{job="vllm"}"#, extra)
}

fn bench_selecting(urls: &[String], prometheus: &str, selector: &str, extra: &[&str]) -> (String, Value) {
    let run = Bench::at_all(urls)
        .output_tokens(32)
        .set("--scrape-interval", "0.2")
        .set("--prometheus-url", prometheus)
        .set("--prometheus-selector", selector)
        .set("--prometheus-wait", 20)
        .set("--prometheus-rate-window", 1)
        .args(extra)
        .ok();
    (run.stdout, run.result)
}

fn counts(v: &Value) -> (u64, u64, u64) {
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    (n("num_drafts"), n("draft_tokens"), n("accepted_tokens"))
}

#[tokio::test]
async fn the_prometheus_path_equals_the_direct_scrapes_across_three_replicas() {
    let replicas = [
        Speclens::instant_spec_sim("0.7", &[]),
        Speclens::instant_spec_sim("0.5", &[]),
        Speclens::instant_spec_sim("0.6", &["--engines", "2"]),
    ];
    let urls: Vec<String> = replicas.iter().map(Speclens::url).collect();
    let prometheus = start_prometheus(&urls).await;
    let (stdout, result) = bench(
        &urls,
        &prometheus.url,
        &["--num-prompts", "90", "--concurrency", "6", "--request-rate", "60"],
    );

    let fleet = &result["spec_decode"]["prometheus"];
    assert_eq!(fleet["result"]["status"], "ok", "{fleet}");
    let through_prometheus = counts(&fleet["result"]["data"]);
    let direct = (
        result["spec_decode_num_drafts"].as_u64().unwrap(),
        result["spec_decode_draft_tokens"].as_u64().unwrap(),
        result["spec_decode_accepted_tokens"].as_u64().unwrap(),
    );
    assert!(direct.0 > 0);
    assert_eq!(through_prometheus, direct, "fleet total = sum of the direct scrapes");
    assert_eq!(
        fleet["result"]["data"]["per_position_acceptance_rates"],
        Value::Object(
            result["spec_decode_per_position_acceptance_rates"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, r)| (i.to_string(), r.clone()))
                .collect()
        )
    );
    // Per replica: the instance breakdown equals that replica's own /metrics window.
    for scrape in result["spec_decode"]["scrape"].as_array().unwrap() {
        let instance = scrape["endpoint"].as_str().unwrap();
        let own = counts(&scrape["result"]["data"]);
        let by_instance = &fleet["fleet"]["by_instance"][instance];
        assert_eq!(
            (
                by_instance["num_drafts"].as_u64().unwrap(),
                by_instance["num_draft_tokens"].as_u64().unwrap(),
                by_instance["num_accepted_tokens"].as_u64().unwrap()
            ),
            own,
            "{instance}"
        );
    }
    let engines = fleet["fleet"]["by_engine"].as_object().unwrap();
    let third = host_port(&urls[2]);
    assert_eq!(
        engines.keys().filter(|k| k.starts_with(&third)).count(),
        2,
        "{engines:?}"
    );
    assert!(
        stdout.contains("Speculative Decoding Metrics  [prometheus]"),
        "{stdout}"
    );
    // The live timeline has per-instance points from rate().
    let timeline = result["spec_decode"]["timeline"].as_array().unwrap();
    assert!(
        timeline
            .iter()
            .any(|p| p["endpoint"].as_str().unwrap().starts_with("prometheus/")
                && p["accepted_per_s"].as_f64().unwrap() > 0.0),
        "no live point from Prometheus"
    );
}

#[tokio::test]
async fn a_replica_restarted_mid_run_keeps_its_totals_through_prometheus() {
    // The restart comes with the 11th request; requests arrive every 250 ms, Prometheus scrapes
    // every 200 ms, so it holds the counters' last value before the restart.
    let replica = Speclens::instant_spec_sim("0.7", &["--reset-counters-after", "10"]);
    let urls = vec![replica.url()];
    let prometheus = start_prometheus(&urls).await;
    let (_, result) = bench(
        &urls,
        &prometheus.url,
        &["--num-prompts", "20", "--request-rate", "4", "--arrival", "constant"],
    );
    let per_request = &result["spec_decode"]["per_request"];
    let truth = (
        per_request["total_spec_decode_steps"]["avg"].as_f64().unwrap() as u64,
        per_request["total_draft_tokens"]["avg"].as_f64().unwrap() as u64,
        per_request["total_accepted_draft_tokens"]["avg"].as_f64().unwrap() as u64,
    );
    let fleet = &result["spec_decode"]["prometheus"];
    assert_eq!(counts(&fleet["result"]["data"]), truth, "{fleet}");
    assert!(
        !fleet["fleet"]["resets"].as_array().unwrap().is_empty(),
        "the restart is reported"
    );
    let direct = &result["spec_decode"]["scrape"][0]["result"];
    assert_eq!(direct["status"], "na");
    assert!(
        direct["error"].as_str().unwrap().starts_with("Counter reset detected"),
        "{direct}"
    );
}

#[test]
fn an_unreachable_prometheus_is_a_reason_and_the_run_completes() {
    let replica = Speclens::instant_spec_sim("0.7", &[]);
    let closed = format!("http://127.0.0.1:{}", free_port());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (code, stdout, stderr) = run_speclens(&[
        "bench",
        "--url",
        &replica.url(),
        "--num-prompts",
        "10",
        "--prometheus-url",
        &closed,
        "--prometheus-token",
        "secret-prometheus-token-123",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let text = std::fs::read_to_string(out.join("result.json")).unwrap();
    let result: Value = serde_json::from_str(&text).unwrap();
    let fleet = &result["spec_decode"]["prometheus"]["result"];
    assert_eq!(fleet["status"], "na");
    assert!(
        fleet["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to query Prometheus at"),
        "{fleet}"
    );
    assert_eq!(result["completed"], 10);
    assert!(!text.contains("secret-prometheus-token") && !stdout.contains("secret-prometheus-token"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_gauges_are_averaged_over_the_window() {
    // SGLang's exposition (a reference fixture) served as a scrape target of its own, whose
    // gauges change a third of the way into the run: accept length 2.00 (rate 0.40) before,
    // 4.00 (rate 0.80) after. An instant query or `last_over_time` reads 4.00, a range ending
    // at the start reads 2.00; the window's mean lies between them, at the time-weighted value.
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let fixture = crate::common::read_fixture("generated_sglang_multiproc.prom");
    assert!(
        fixture.contains("} 3.09\n") && fixture.contains("} 0.6973\n"),
        "the fixture's values"
    );
    let before = fixture
        .replace("} 3.09\n", "} 2.00\n")
        .replace("} 0.6973\n", "} 0.40\n");
    let after = fixture
        .replace("} 3.09\n", "} 4.00\n")
        .replace("} 0.6973\n", "} 0.80\n");
    let switched = Arc::new(AtomicBool::new(false));
    let flag = switched.clone();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let text = if flag.load(Ordering::SeqCst) {
                after.clone()
            } else {
                before.clone()
            };
            async move { text }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let prometheus = start_prometheus_job("sglang", &[target]).await;
    let replica = Speclens::instant_spec_sim("0.7", &[]);
    let unix_s = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    // 40 requests at a constant 10 per second: about 4 s; the gauges change 1.5 s in.
    let started_s = unix_s();
    let switch = {
        let switched = switched.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            switched.store(true, Ordering::SeqCst);
            unix_s()
        })
    };
    let (url, prom) = (replica.url(), prometheus.url.clone());
    let (stdout, result) = tokio::task::spawn_blocking(move || {
        bench_selecting(
            &[url],
            &prom,
            r#"{job="sglang"}"#,
            &["--num-prompts", "40", "--request-rate", "10", "--arrival", "constant"],
        )
    })
    .await
    .unwrap();
    let ended_s = unix_s();
    let switched_s = switch.await.unwrap();
    let fleet = &result["spec_decode"]["prometheus"];
    assert_eq!(fleet["result"]["status"], "na");
    let length = fleet["sglang"]["accept_length"]
        .as_f64()
        .unwrap_or_else(|| panic!("{fleet}"));
    let rate = fleet["sglang"]["accept_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("{fleet}"));
    assert!(
        2.0 < length && length < 4.0,
        "strictly between the two values: {length}"
    );
    // The time-weighted mean over the window, which opens after the process started and
    // closes before it exited, lasting at least the run's own duration: the earliest such
    // window weighs 2.00 the most, the latest 4.00.
    let duration_s = result["duration"].as_f64().unwrap();
    let weighted =
        |start_s: f64, end_s: f64| (2.0 * (switched_s - start_s) + 4.0 * (end_s - switched_s)) / (end_s - start_s);
    let lowest = weighted(started_s, started_s + duration_s);
    let highest = weighted(ended_s - duration_s, ended_s);
    assert!(
        (lowest - 0.15..=highest + 0.15).contains(&length),
        "accept length {length}: the time-weighted mean lies in {lowest:.2}–{highest:.2}"
    );
    // The rate is the same mix of 0.40 and 0.80 (each value is 0.2 × its length here).
    assert!(
        (rate - length * 0.2).abs() < 0.01,
        "accept rate {rate} against length {length}"
    );
    assert!(
        stdout.contains(&format!("accept length {length:.2}, accept rate {:.2} %", rate * 100.0)),
        "{stdout}"
    );
}
