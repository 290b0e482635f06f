//! Static reports (`speclens report`) in headless Chromium that can reach no network: opened from
//! `file://`, no failed or refused load in the browser log, the run's figures in the DOM, charts
//! proved by canvas pixels, state in the URL fragment, a hostile model name shown as text, and
//! a clear message for another schema version.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::browser_whatif::redrawn;
use crate::common::browser::{
    assert_series_drawn, canvas_ink, open_offline_browser, rgb, severe_log, start_chromedriver, text_of, value_of,
};
use crate::common::{run_speclens, wait_for, workspace, Speclens};

const HOSTILE: &str = "<img src=x onerror=alert(1)>";

fn report(inputs: &[&Path], out: &Path) {
    let dist = crate::common::built_web_dir();
    let mut args = vec![
        "report",
        "--web-dir",
        dist.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let (code, stdout, stderr) = run_speclens(&args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("Report: "), "{stdout}");
}

#[tokio::test]
async fn a_report_opens_offline_from_a_file_with_its_figures_charts_and_fragment_state() {
    let sim = Speclens::instant_spec_sim("0.7", &["--model", HOSTILE]);
    let results = tempfile::tempdir().unwrap();
    let run_dir = results.path().join("run-a");
    let (code, out, err) = run_speclens(&[
        "bench",
        "--url",
        &sim.url(),
        "--num-prompts",
        "40",
        "--output-tokens",
        "32",
        "--scrape-interval",
        "0.1",
        "--quiet",
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(run_dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["model_id"], HOSTILE);

    // A trace replayed with filler words beside it: marked content-invalid in the report.
    let filler_dir = results.path().join("filler");
    let trace = crate::common::fixture("made_mooncake_trace.jsonl");
    let bench = [
        "bench",
        "--url",
        &sim.url(),
        "--quiet",
        "--out",
        filler_dir.to_str().unwrap(),
    ];
    let (code, out, err) =
        run_speclens(&[&bench[..], &crate::trace_replay::replay_args(trace.to_str().unwrap())].concat());
    assert_eq!(code, 0, "{out}{err}");

    let file = results.path().join("report.html");
    report(&[&run_dir], &file);
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.len() < 1_000_000, "a one-run report is {} bytes", html.len());
    assert!(!html.contains(HOSTILE), "the model name is never raw HTML in the file");

    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_offline_browser(&driver, profile.path()).await;
    let url = format!("file://{}", file.display());
    client.goto(&url).await.unwrap();

    // A one-run report opens on its run.
    let status = wait_for("the run to show", Duration::from_secs(30), || async {
        Some(text_of(&client, "#run-status").await).filter(|s| s.contains("finished"))
    })
    .await;
    assert!(status.contains(HOSTILE), "the model name shows as text: {status}");
    let images: u64 = client
        .execute("return document.querySelectorAll('img').length", vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    assert_eq!(images, 0, "no element was made from the model name");
    let rate = result["spec_decode_acceptance_rate"].as_f64().unwrap();
    assert_eq!(
        text_of(&client, "#tile-acceptance-rate .tile-value").await,
        format!("{rate:.2}")
    );
    let length = result["spec_decode"]["per_request"]["spec_decode_token_weighted_acceptance_length"]["avg"]
        .as_f64()
        .unwrap();
    assert_eq!(text_of(&client, "#pr-length").await, format!("{length:.3}"));
    for id in ["live-positions", "live-latency-dist", "live-acceptance-dist"] {
        let (ink, _) = wait_for("a chart", Duration::from_secs(20), || async {
            canvas_ink(&client, id).await.filter(|(ink, _)| *ink > 2000)
        })
        .await;
        assert!(ink > 2000, "{id}");
    }
    assert_series_drawn(&client, "live-positions", &[("per-request bars", rgb::ACCEPTED)]).await;
    assert_series_drawn(&client, "live-latency-dist", &[("latency bars", rgb::PROPOSED)]).await;

    // The what-if seeded from the run, then changed: its URL reopens the same view and values.
    client.goto(&format!("{url}#whatif?alpha=0.6&k=4")).await.unwrap();
    let drawn = redrawn(&client, None).await;
    assert!(drawn.ink * 50 > drawn.pixels, "{drawn:?}");
    let reopened_url = client.current_url().await.unwrap().to_string();
    client.goto("about:blank").await.unwrap();
    client.goto(&reopened_url).await.unwrap();
    let again = redrawn(&client, None).await;
    assert_eq!(
        (value_of(&client, "#alpha").await, value_of(&client, "#k").await),
        ("0.6".into(), "4".into())
    );
    assert_eq!((again.hash, again.ink), (drawn.hash, drawn.ink));
    client.goto(&format!("{url}#runs?open=run-a")).await.unwrap();
    wait_for("the run view again", Duration::from_secs(20), || async {
        text_of(&client, "#run-status").await.contains("finished").then_some(())
    })
    .await;

    // The filler replay's report carries its mark, as its console and result.json do.
    let filler_file = results.path().join("filler.html");
    report(&[&filler_dir], &filler_file);
    client.goto(&format!("file://{}", filler_file.display())).await.unwrap();
    let mark = wait_for("the content-invalid mark", Duration::from_secs(30), || async {
        Some(text_of(&client, "#run-content-invalid").await).filter(|t| !t.is_empty())
    })
    .await;
    assert!(
        mark.starts_with("Content-invalid for acceptance (trace filler words (no --trace-fill), ignore_eos answers)"),
        "{mark}"
    );

    let severe = severe_log(&client).await;
    assert!(severe.is_empty(), "failed or refused loads: {severe:?}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn vllm_results_and_sweeps_make_a_report_and_another_schema_gets_a_message() {
    let fixtures = workspace().join("tests/fixtures/vllm_bench_results");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vllm.html");
    // One file alone, and the folder of a vLLM sweep (each file a run, both arms a sweep).
    report(&[&fixtures.join("spec-c16.json"), &fixtures], &file);
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(fixtures.join("spec-c16.json")).unwrap()).unwrap();

    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_offline_browser(&driver, profile.path()).await;
    let url = format!("file://{}", file.display());
    client.goto(&format!("{url}#runs?open=spec-c16")).await.unwrap();
    let rate = spec["spec_decode_acceptance_rate"].as_f64().unwrap();
    wait_for(
        "vLLM's acceptance rate as reported",
        Duration::from_secs(30),
        || async {
            (text_of(&client, "#tile-acceptance-rate .tile-value").await == format!("{rate:.2}")).then_some(())
        },
    )
    .await;
    client.goto(&format!("{url}#runs")).await.unwrap();
    wait_for("every run listed", Duration::from_secs(20), || async {
        let list = text_of(&client, "#run-list").await;
        let rows = list.lines().filter(|l| l.contains("c16") || l.contains("c256")).count();
        (list.contains("vllm_bench_results/base-c256") && rows == 5).then_some(())
    })
    .await;
    client
        .goto(&format!("{url}#runs?sweep=vllm_bench_results"))
        .await
        .unwrap();
    wait_for("the sweep chart", Duration::from_secs(20), || async {
        canvas_ink(&client, "sweep-chart").await.filter(|(ink, _)| *ink > 2000)
    })
    .await;
    assert_series_drawn(
        &client,
        "sweep-chart",
        &[("speculative arm", rgb::SPECULATIVE), ("plain arm", rgb::BASE)],
    )
    .await;
    assert!(severe_log(&client).await.is_empty());

    // The log check sees what it must refuse: a load the page's policy forbids.
    client
        .execute("fetch('https://example.com/x').catch(() => {}); return 1;", vec![])
        .await
        .unwrap();
    let refused = wait_for("the refused load in the log", Duration::from_secs(10), || async {
        Some(severe_log(&client).await).filter(|l| !l.is_empty())
    })
    .await;
    assert!(
        refused.iter().any(|m| m.contains("Content Security Policy")),
        "{refused:?}"
    );

    // The same data under another schema version: a message, not an empty page.
    let html = std::fs::read_to_string(&file).unwrap();
    let other = html.replacen(r#""schema_version":1,"#, r#""schema_version":99,"#, 1);
    assert_ne!(other, html);
    let other_file = dir.path().join("other.html");
    std::fs::write(&other_file, other).unwrap();
    client.goto(&format!("file://{}", other_file.display())).await.unwrap();
    let message = wait_for("the schema message", Duration::from_secs(20), || async {
        Some(text_of(&client, "#report-error").await).filter(|m| !m.is_empty())
    })
    .await;
    assert!(
        message.contains("schema version 99") && message.contains("reads version 1"),
        "{message}"
    );
    client.close().await.unwrap();
}
