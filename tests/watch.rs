//! `speclens rules` and `speclens grafana` against a real Prometheus (Debian's, started here on
//! 127.0.0.1): a sim of each engine shape scraped while a bench runs, the recorded series equal
//! to the bench's own window figures; an acceptance drop mid-run and a load past a sweep's
//! break-even fire their alerts; every dashboard query evaluates, over recorded series or a raw
//! expression docs/GRAFANA.md lists.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::bench::Bench;
use crate::common::prometheus::{Prometheus, ScrapeJob};
use crate::common::{read_fixture, run_speclens, Speclens};

/// The recording rules' window in the first test: it covers the whole bench and the scrapes
/// around it, and Prometheus's first sample is inside it (so the warm-up is not counted).
const WINDOW_S: f64 = 30.0;

/// `speclens rules ARGS -o DIR/rules.yml`, checked by promtool as it writes.
fn write_rules(dir: &Path, args: &[&str]) -> PathBuf {
    let path = dir.join("rules.yml");
    let mut full = vec!["rules"];
    full.extend_from_slice(args);
    full.extend(["-o", path.to_str().unwrap()]);
    let (code, stdout, stderr) = run_speclens(&full);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains("SUCCESS"), "promtool checked the file: {stderr}");
    path
}

/// A bench of `n` requests; its `result.json`.
fn bench(url: &str, n: &str, extra: &[&str]) -> Value {
    Bench::at(url).set("--num-prompts", n).quiet().args(extra).ok().result
}

fn close(what: &str, got: f64, want: f64, relative: f64) {
    assert!(
        (got - want).abs() <= relative * want.abs().max(1e-9),
        "{what}: Prometheus recorded {got}, speclens's window {want} (tolerance {} %)",
        relative * 100.0
    );
}

/// The one value of a recorded figure for one engine.
async fn one(p: &Prometheus, name: &str, engine: &str) -> f64 {
    let v = p.vector(&format!("{name}{{serving_engine=\"{engine}\"}}")).await;
    assert_eq!(v.len(), 1, "{name} for {engine}: {v:?}");
    v[0].1
}

#[tokio::test]
async fn recorded_series_equal_the_bench_window_on_every_engine_shape() {
    let shapes: [(&str, &[&str], &str); 4] = [
        ("vllm", &[], "/metrics"),
        ("trtllm", &["--payload", "trtllm"], "/prometheus/metrics"),
        ("sglang", &["--payload", "sglang"], "/metrics"),
        ("llamacpp", &["--payload", "llamacpp"], "/metrics"),
    ];
    let sims: Vec<Speclens> = shapes
        .iter()
        .map(|(_, extra, _)| Speclens::instant_spec_sim("0.7", extra))
        .collect();
    // A warm-up before Prometheus starts: the series an engine creates on first use
    // (TensorRT-LLM's positions, llama.cpp's families, SGLang's counters) exist from its first
    // scrape, so the window's growth is all the bench's. Its counts, 2/5 of the bench's, keep
    // every series' first value far from zero: rate() then extrapolates each series of a target
    // by the same factor (it stops short of a counter's zero point, which a small first value
    // brings near), and their ratios are exact.
    for sim in &sims {
        bench(&sim.url(), "16", &["--output-tokens", "32"]);
    }
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), &["--window", "30s"]);
    let jobs: Vec<ScrapeJob> = shapes
        .iter()
        .zip(&sims)
        .map(|((name, _, path), sim)| ScrapeJob::new(name, &[sim.url()]).at_path(path))
        .collect();
    let prometheus = Prometheus::start(&jobs, Some(&rules)).await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let urls: Vec<String> = sims.iter().map(Speclens::url).collect();
    let results: Vec<Value> = tokio::task::spawn_blocking(move || {
        urls.iter()
            .map(|u| bench(u, "40", &["--output-tokens", "32"]))
            .collect()
    })
    .await
    .unwrap();
    // Scrapes after the last request, and a rule evaluation over them.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let p = &prometheus;
    let name = |figure: &str| format!("speclens:spec_decode_{figure}:rate30s");
    for ((engine, _, _), result) in shapes.iter().zip(&results) {
        let window = &result["spec_decode"]["scrape"][0]["result"];
        assert_eq!(window["status"], "ok", "{engine}: {window}");
        let data = &window["data"];
        // Ratios of counters from one target: the same growth, to float rounding.
        let length = data["acceptance_length"].as_f64().unwrap();
        close(
            &format!("{engine} acceptance length"),
            one(p, &name("acceptance_length"), engine).await,
            length,
            1e-6,
        );
        let rate = data["acceptance_rate"].as_f64().unwrap();
        // SGLang's rate is its gauge's mean: over the window's scrapes in speclens, over the
        // rule's 30 s in Prometheus (the warm-up's value before the bench): within 10 %.
        let tolerance = if *engine == "sglang" { 0.10 } else { 1e-6 };
        close(
            &format!("{engine} acceptance rate"),
            one(p, &name("acceptance_rate_percent"), engine).await,
            rate,
            tolerance,
        );
        // Per-second figures: the window's growth ÷ 30 s, but Prometheus's rate() extrapolates
        // the growth past the ends of its samples (promql/functions.go, extrapolatedRate): by
        // half the samples' mean interval before the first (which lies far from the range's
        // start here), and after the last by up to 1.1 mean intervals (to the range's end, when
        // the rule was evaluated that soon after it): at most 1.6 of the n − 1 intervals
        // between the n samples, 1.6 ÷ (n − 1) of the growth. n is counted at the rule's time,
        // not assumed from the configured interval (`up` is 1 for each scrape that answered;
        // one that timed out on a busy machine leaves a gap); a scrape that began before that
        // time and ended after it is counted here and was not there, so n − 2 bounds the
        // rule's n − 1. Plus 1 % for the client's own timing.
        let evaluated = p
            .vector(&format!(
                "timestamp({}{{serving_engine=\"{engine}\"}})",
                name("drafts_per_second")
            ))
            .await[0]
            .1;
        let n = p
            .vector(&format!(
                "sum_over_time(up{{job=\"{engine}\"}}[{WINDOW_S}s] @ {evaluated})"
            ))
            .await
            .first()
            .map_or(0.0, |(_, n)| *n);
        assert!(n >= 8.0, "{engine}: {n} scrapes in the rule's window");
        let extrapolation = 1.6 / (n - 2.0) + 0.01;
        let drafts = data["num_drafts"].as_f64().unwrap();
        close(
            &format!("{engine} drafts/s"),
            one(p, &name("drafts_per_second"), engine).await,
            drafts / WINDOW_S,
            extrapolation,
        );
        let accepted = data["accepted_tokens"].as_f64().unwrap();
        close(
            &format!("{engine} accepted/s"),
            one(p, &name("accepted_tokens_per_second"), engine).await,
            accepted / WINDOW_S,
            extrapolation,
        );
        let positions = data["per_position_acceptance_rates"].as_object().unwrap();
        let recorded = p
            .vector(&format!(
                "{}{{serving_engine=\"{engine}\"}}",
                name("position_acceptance_rate")
            ))
            .await;
        assert_eq!(
            recorded.len(),
            positions.len(),
            "{engine}: {recorded:?} against {positions:?}"
        );
        for (labels, v) in &recorded {
            let pos = labels["position"].as_str().unwrap();
            close(
                &format!("{engine} position {pos}"),
                *v,
                positions[pos].as_f64().unwrap(),
                1e-6,
            );
        }
        if !positions.is_empty() {
            // The geometric curve of the same E: α by bisection in the rules, as the collector's.
            let k = positions.len() as u32;
            let alpha = one(p, "speclens:spec_decode_implied_alpha:rate30s", engine).await;
            let want = speclens_shared::model::speedup::implied_alpha(length, k);
            assert!((alpha - want).abs() < 2e-5, "{engine}: α {alpha} against {want}");
            let geometric = p
                .vector(&format!(
                    "speclens:spec_decode_geometric_position_rate:rate30s{{serving_engine=\"{engine}\"}}"
                ))
                .await;
            assert_eq!(geometric.len() as u32, k, "{engine}: {geometric:?}");
        }
    }
    // SGLang counts no draft tokens and no positions: no such series, not a zero.
    assert!(p
        .vector(&format!(
            "{}{{serving_engine=\"sglang\"}}",
            name("draft_tokens_per_second")
        ))
        .await
        .is_empty());
    let dashboard = every_dashboard_query_evaluates(p, dir.path()).await;
    // The dashboard's fleet length pools the engines' counts: 1 + Σ accepted ÷ Σ drafts over the four
    // windows (each engine's per-second rates over the same 30 s; within 5 % for rate()'s
    // extrapolation, which differs between targets).
    let (accepted, drafts) = results.iter().fold((0.0, 0.0), |(a, d), r| {
        let data = &r["spec_decode"]["scrape"][0]["result"]["data"];
        (
            a + data["accepted_tokens"].as_f64().unwrap(),
            d + data["num_drafts"].as_f64().unwrap(),
        )
    });
    let panel = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == "Acceptance length, fleet")
        .expect("the fleet length panel");
    let query = panel["targets"][0]["expr"]
        .as_str()
        .unwrap()
        .replace("$model_name", ".*")
        .replace("$instance", ".*");
    let fleet = p.vector(&query).await;
    close(
        "the fleet's acceptance length",
        fleet[0].1,
        1.0 + accepted / drafts,
        0.05,
    );
}

/// The dashboard JSON parses, every query reads recorded series the rules define or is a raw
/// expression docs/GRAFANA.md lists, and each evaluates without error (the figure panels with
/// data from the sims).
async fn every_dashboard_query_evaluates(p: &Prometheus, dir: &Path) -> Value {
    let path = dir.join("dashboard.json");
    let (code, stdout, stderr) = run_speclens(&["grafana", "--window", "30s", "-o", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let rules = std::fs::read_to_string(dir.join("rules.yml")).unwrap();
    let records: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: "))
        .collect();
    let guide = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/GRAFANA.md")).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 10, "{}", panels.len());
    for panel in panels {
        let title = panel["title"].as_str().unwrap();
        assert!(!panel["description"].as_str().unwrap().is_empty(), "{title}");
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let names: Vec<&str> = expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .filter(|w| w.starts_with("speclens:"))
                .collect();
            if names.is_empty() {
                assert!(
                    guide.contains(expr),
                    "{title}: the raw expression is not in docs/GRAFANA.md: {expr}"
                );
            }
            for n in names {
                assert!(records.contains(&n), "{title}: {n} is not a recorded series");
            }
            let query = expr
                .replace("$model_name", ".*")
                .replace("$instance", ".*")
                .replace("$__rate_interval", "30s");
            let answer = p.query(&query).await.unwrap();
            assert_eq!(answer["status"], "success", "{title}: {query}: {answer}");
            if title.contains("by instance") || title.ends_with(", fleet") {
                assert!(
                    !answer["data"]["result"].as_array().unwrap().is_empty(),
                    "{title}: no data"
                );
            }
        }
    }
    dashboard
}

/// The sweep fixture with a measured break-even written into its recommendation (the fixture's
/// own sweep found none: speculation was ahead at both levels).
fn sweep_with_cutoff(dir: &Path, level: f64) -> PathBuf {
    let text: String = read_fixture("speclens_sweep_first_arm_twice.json")
        .lines()
        .filter(|l| !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut sweep: Value = serde_json::from_str(&text).unwrap();
    let path = dir.join("sweep.json");
    std::fs::write(&path, &text).unwrap();
    let (code, _, stderr) = run_speclens(&["rules", "--from-sweep", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("ahead at every level measured"), "{stderr}");
    sweep["recommendation"]["cut_off"] = serde_json::json!({"level": level, "arm": "k3"});
    std::fs::write(&path, sweep.to_string()).unwrap();
    path
}

#[tokio::test]
async fn an_acceptance_drop_mid_run_and_a_load_past_the_break_even_fire_their_alerts() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = sweep_with_cutoff(dir.path(), 4.0);
    let rules = write_rules(
        dir.path(),
        &[
            "--engine",
            "vllm",
            "--window",
            "1s",
            "--baseline",
            "30s",
            "--for",
            "1s",
            "--from-sweep",
            sweep.to_str().unwrap(),
        ],
    );
    // 12 ms steps, α 0.8 (E 2.95 at k = 3) for the first 100 requests, then α 0.24 (E 1.31).
    // Each alert must hold for 1 s: a request's prefill token comes a step before its first
    // draft, so in the bench's first 100 ms output grows while drafts do not.
    let sim = Speclens::start(&[
        "sim",
        "--port",
        "0",
        "--num-spec-tokens",
        "3",
        "--alpha",
        "0.8",
        "--acceptance-drop-after",
        "100",
        "--acceptance-drop-factor",
        "0.3",
    ]);
    let prometheus = Prometheus::start(&[ScrapeJob::new("vllm", &[sim.url()])], Some(&rules)).await;
    let url = sim.url();
    let run = tokio::task::spawn_blocking(move || bench(&url, "300", &["--concurrency", "8", "--output-tokens", "48"]));
    let started = Instant::now();
    let mut fired: Vec<(String, f64)> = Vec::new();
    while !run.is_finished() && started.elapsed() < Duration::from_secs(120) {
        let alerts = prometheus.query("ALERTS{alertstate=\"firing\"}").await.unwrap();
        for a in alerts["data"]["result"].as_array().into_iter().flatten() {
            let name = a["metric"]["alertname"].as_str().unwrap().to_string();
            if !fired.iter().any(|(n, _)| *n == name) {
                let finished = prometheus.vector("sum(vllm:request_success_total)").await;
                fired.push((name, finished.first().map_or(0.0, |f| f.1)));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let result = run.await.unwrap();
    assert_eq!(result["completed"], 300, "{result}");
    let when = |name: &str| fired.iter().find(|(n, _)| n == name).map(|(_, f)| *f);
    let drop = when("SpecDecodeAcceptanceLengthBelowBaseline")
        .unwrap_or_else(|| panic!("the baseline alert fired: {fired:?}"));
    assert!(
        drop >= 100.0,
        "it fired after the drop (100 requests finished), at {drop}"
    );
    // E 1.31 after the drop is under the default floor of 1.5 too.
    let low = when("SpecDecodeAcceptanceLengthLow").unwrap_or_else(|| panic!("the floor alert fired: {fired:?}"));
    assert!(low >= 100.0, "{low}");
    assert!(
        when("SpecDecodeLoadPastBreakEven").is_some(),
        "8 requests running past the break-even of 4: {fired:?}"
    );
    assert_eq!(when("SpecDecodeDraftsStopped"), None, "drafts never stopped: {fired:?}");
}
