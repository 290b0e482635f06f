//! The sweep along the context in real headless Chromium: a real context sweep of two timed
//! sims whose steps read a KV term, served by `speclens serve`; the sweep page draws B* against
//! the input length (measured and the model's, each in its colour) and the acceptance length
//! against the step cost, and its tables and sentences are the console's. Screenshots at 1400
//! and 420 px (`docs/screenshots` with `SPECLENS_UPDATE_SCREENSHOTS=1`).

use std::time::Duration;

use crate::common::browser::{
    assert_series_drawn, open_browser, rgb, screenshot, set_width, sideways_overflow, start_chromedriver, text_of,
    visit,
};
use crate::common::{read_json, run_speclens_within, Speclens};

#[tokio::test]
async fn the_sweep_page_draws_b_star_against_the_context_beside_the_model() {
    let dist = crate::common::built_web_dir();
    // A ridge of 16 token positions and a KV term of 1e-4: the arms cross within 32 requests,
    // later at the longer prompt.
    let timing = [
        "--time-scale",
        "1",
        "--step-ms",
        "0.5",
        "--ridge",
        "16",
        "--kv-ratio",
        "1e-4",
    ];
    let spec = Speclens::start(
        &[
            &["sim", "--port", "0", "--num-spec-tokens", "3", "--alpha", "0.7"][..],
            &timing,
        ]
        .concat(),
    );
    let base = Speclens::start(&[&["sim", "--port", "0"][..], &timing].concat());
    let results = tempfile::tempdir().unwrap();
    let out = results.path().join("ctx");
    let (code, stdout, stderr) = run_speclens_within(
        &[
            "sweep",
            "--spec-url",
            &spec.url(),
            "--base-url",
            &base.url(),
            "--concurrency",
            "1,4,8,12,16,24,32",
            "--input-tokens",
            "32,256",
            "--output-tokens",
            "32",
            "--ridge",
            "16",
            "--kv-ratio",
            "1e-4",
            "--repeats",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(240),
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let console = format!("{stdout}{stderr}");
    let file: speclens_shared::sweep::SweepFile =
        serde_json::from_value(read_json(&out.join("sweep.json"))).expect("sweep.json reads");
    let contexts = file.contexts.expect("the context axis in sweep.json");

    let server = Speclens::serve_results(&dist, results.path());
    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, profile.path()).await;
    set_width(&client, 1400).await;
    let base_url = server.url();
    visit(&client, &base_url, "runs?sweep=ctx", "#sweep-contexts").await;
    assert_series_drawn(
        &client,
        "sweep-context",
        &[("measured B*", rgb::SPECULATIVE), ("model B*(L)", rgb::REJECTED)],
    )
    .await;
    assert_series_drawn(
        &client,
        "sweep-context-cost",
        &[("E measured", rgb::SPECULATIVE), ("step cost", rgb::REJECTED)],
    )
    .await;
    // The table, what moved and L* per concurrency: the console's lines, one computation.
    let table = text_of(&client, "#sweep-context-spec").await;
    for row in contexts.rows("spec") {
        let line = row.join(" ");
        assert!(
            table
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == line),
            "{line} not in\n{table}"
        );
        assert!(console.contains(&row[1]), "{}", row[1]);
    }
    let section = text_of(&client, "#sweep-contexts").await;
    for line in contexts.what_moved("spec").into_iter().chain(contexts.crossing_lines()) {
        assert!(section.contains(&line), "{line} not on the page:\n{section}");
        assert!(console.contains(&line), "{line} not on the console");
    }
    scroll_to_contexts(&client).await;
    screenshot(&client, "sweep-context-1400").await;
    set_width(&client, 420).await;
    visit(&client, &base_url, "runs?sweep=ctx", "#sweep-contexts").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        sideways_overflow(&client).await,
        0,
        "the context section scrolls sideways at 420 px"
    );
    scroll_to_contexts(&client).await;
    screenshot(&client, "sweep-context-420").await;
    client.close().await.unwrap();
}

/// Bring the context section to the top of the window (for its screenshot).
async fn scroll_to_contexts(client: &fantoccini::Client) {
    client
        .execute("document.getElementById('sweep-contexts').scrollIntoView();", vec![])
        .await
        .expect("the context section");
}
