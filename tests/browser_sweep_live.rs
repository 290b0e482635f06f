//! `speclens sweep --dashboard` in headless Chromium: the live page follows the sweep point by
//! point and, after the last point, shows its measured B* and recommendation as `sweep.json`
//! holds them (the shared computation's sentences, compared whole), with its chart drawn; an
//! adaptive arm swept into the same folder afterwards leaves the earlier arms' colours as they
//! were (read from the sweep page's canvas pixels).

use std::time::Duration;

use speclens_shared::sweep::SweepFile;
use speclens_shared::view::headline::Headline;
use speclens_shared::view::overview::break_even_of_headline;

use crate::common::browser::{
    canvas_colour, canvas_ink, open_browser, rgb, start_chromedriver, text_of, SERIES_PIXELS,
};
use crate::common::{run_speclens_within, wait_for, Speclens};

/// Both sweeps' levels, workload and model.
const WORKLOAD: [&str; 10] = [
    "--concurrency",
    "1,4,16",
    "--requests-per-slot",
    "4",
    "--input-tokens",
    "8",
    "--output-tokens",
    "32",
    "--ridge",
    "8",
];

#[tokio::test]
async fn a_sweep_s_dashboard_shows_its_answer_when_the_last_point_is_done() {
    let dist = crate::common::built_web_dir();
    // A ridge of 8 token positions and free n-gram drafts: k = 3 at α = 0.7 crosses plain
    // near 5 concurrent requests, inside 1–16.
    let timing = ["--ridge", "8", "--step-ms", "2"];
    let spec = Speclens::sim(&[&timing[..], &["--num-spec-tokens", "3", "--alpha", "0.7"]].concat());
    let base = Speclens::sim(&timing);
    let results = tempfile::tempdir().unwrap();
    let out = results.path().join("sweep");
    let (mut sweep, url) = crate::common::spawn_with_dashboard(
        &[
            &["sweep", "--spec-url", &spec.url(), "--base-url", &base.url()][..],
            &WORKLOAD,
            &["--dashboard", "--dashboard-port", "0", "--out", out.to_str().unwrap()],
        ]
        .concat(),
        &dist,
    );

    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, profile.path()).await;
    client.goto(&url).await.unwrap();
    // Between points: the points so far.
    let early = wait_for("the sweep so far", Duration::from_secs(120), || async {
        Some(text_of(&client, "#live-sweep-status").await).filter(|t| !t.is_empty())
    })
    .await;
    assert!(
        early.starts_with("The sweep so far: ") || early.starts_with("The sweep is done"),
        "{early}"
    );
    // After the last point: the answer, as sweep.json holds it.
    wait_for("the sweep's end on the page", Duration::from_secs(240), || async {
        text_of(&client, "#live-sweep-status")
            .await
            .starts_with("The sweep is done")
            .then_some(())
    })
    .await;
    let table: SweepFile = serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert!(table.head().crossing.is_some(), "the arms cross inside 1–16");
    let headline = Headline::of_sweep(&table);
    let answer = break_even_of_headline(&table, headline.as_ref()).sentence;
    assert_eq!(text_of(&client, "#live-sweep-answer").await, answer);
    let recommendation = table.recommendation.as_ref().expect("a recommendation").summary();
    assert_eq!(text_of(&client, "#live-sweep-recommendation").await, recommendation);
    let (fragment, b) = headline.expect("a headline arm").whatif_link();
    assert!(
        text_of(&client, "#whatif-from-live-sweep-bstar")
            .await
            .ends_with(&format!("model B* = {b:.1}")),
        "{fragment}"
    );
    let ink = wait_for("the sweep's chart", Duration::from_secs(30), || async {
        canvas_ink(&client, "live-sweep-chart")
            .await
            .filter(|(ink, _)| *ink > 2000)
    })
    .await;
    assert!(ink.1 >= 1, "{ink:?}");
    let _ = sweep.kill();
    let _ = sweep.wait();

    // The sweep page before and after an adaptive arm joins the folder: the speculative arm
    // stays in its colour and plain in grey (the new arm takes the next colour), so adding an
    // arm cannot swap what a reader learned to read.
    let server = Speclens::serve_results(&dist, results.path());
    let page = format!("{}#runs?sweep=sweep", server.url());
    let next = speclens_shared::chart::colors::OTHERS[0];
    let adaptive_rgb = (next.0, next.1, next.2);
    let colours = |want_adaptive: bool| {
        let client = &client;
        let page = &page;
        async move {
            // Through a blank page: the same address again would only move to its fragment.
            client.goto("about:blank").await.unwrap();
            client.goto(page).await.unwrap();
            wait_for(
                "the sweep page's chart in its colours",
                Duration::from_secs(30),
                || async {
                    let spec = canvas_colour(client, "sweep-chart", rgb::SPECULATIVE).await?;
                    let base = canvas_colour(client, "sweep-chart", rgb::BASE).await?;
                    let adaptive = canvas_colour(client, "sweep-chart", adaptive_rgb).await?;
                    ((adaptive > SERIES_PIXELS) == want_adaptive).then_some((spec, base, adaptive))
                },
            )
            .await
        }
    };
    let (spec_before, base_before, adaptive_before) = colours(false).await;
    assert!(
        spec_before > SERIES_PIXELS && base_before > SERIES_PIXELS,
        "both series drawn: {spec_before} speculative, {base_before} plain pixels"
    );
    let sched = Speclens::sim(
        &[
            &timing[..],
            &[
                "--num-spec-tokens",
                "3",
                "--alpha",
                "0.7",
                "--num-spec-tokens-per-batch-size",
                "[[1,4,3],[5,65536,1]]",
            ],
        ]
        .concat(),
    );
    let sched_arm = format!("sched={}", sched.url());
    let (code, stdout, stderr) = run_speclens_within(
        &[
            &["sweep", "--arm", &sched_arm, "--adaptive", "sched", "--repeats", "1"][..],
            &WORKLOAD,
            &["--out", out.to_str().unwrap()],
        ]
        .concat(),
        Duration::from_secs(240),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (spec_after, base_after, adaptive_after) = colours(true).await;
    assert!(
        spec_after > SERIES_PIXELS && base_after > SERIES_PIXELS && adaptive_after > SERIES_PIXELS,
        "after the adaptive arm: {spec_after} speculative, {base_after} plain, {adaptive_after} adaptive pixels"
    );
    assert!(
        adaptive_before < SERIES_PIXELS / 4,
        "no series in the next arm's colour before it joined: {adaptive_before}"
    );
    client.close().await.unwrap();
}
