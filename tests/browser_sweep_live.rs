//! `speclens sweep --dashboard` in headless Chromium: the live page follows the sweep point by
//! point and, after the last point, shows its measured B* and recommendation as `sweep.json`
//! holds them (the shared computation's sentences, compared whole), with its chart drawn.

use std::time::Duration;

use speclens_shared::sweep::SweepFile;
use speclens_shared::view::headline::Headline;
use speclens_shared::view::overview::break_even_of_headline;

use crate::common::browser::{canvas_ink, open_browser, start_chromedriver, text_of};
use crate::common::{wait_for, Speclens};

#[tokio::test]
async fn a_sweep_s_dashboard_shows_its_answer_when_the_last_point_is_done() {
    let dist = crate::common::built_web_dir();
    // A ridge of 8 token positions and free n-gram drafts: k = 3 at α = 0.7 crosses plain
    // near 5 concurrent requests, inside 1–16.
    let timing = ["--ridge", "8", "--step-ms", "2"];
    let spec = Speclens::sim(&[&timing[..], &["--num-spec-tokens", "3", "--alpha", "0.7"]].concat());
    let base = Speclens::sim(&timing);
    let out = tempfile::tempdir().unwrap();
    let (mut sweep, url) = crate::common::spawn_with_dashboard(
        &[
            "sweep",
            "--spec-url",
            &spec.url(),
            "--base-url",
            &base.url(),
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
            "--dashboard",
            "--dashboard-port",
            "0",
            "--out",
            out.path().to_str().unwrap(),
        ],
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
    let table: SweepFile =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("sweep.json")).unwrap()).unwrap();
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
    client.close().await.unwrap();
    let _ = sweep.kill();
    let _ = sweep.wait();
}
