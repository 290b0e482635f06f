//! The live dashboard in headless Chromium: `speclens bench --dashboard` against a timed sim,
//! the page's tiles and charts updating while the run goes (values from the DOM, charts from
//! canvas pixels), a connection cut mid-run that the page recovers from by itself, and final
//! figures equal to `result.json`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use fantoccini::Client;
use serde_json::Value;

use crate::common::browser::{open_browser, start_chromedriver, text_of};
use crate::common::{wait_for, workspace, Speclens};

/// Inked pixels and draw count of a canvas.
async fn canvas_ink(client: &Client, id: &str) -> Option<(u64, u64)> {
    let script = format!(
        "const c = document.getElementById('{id}'); if (!c || !c.width) return null; \
         const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let ink = 0; \
         for (let i = 0; i < d.length; i += 4) {{ if (d[i] < 245 || d[i + 1] < 245 || d[i + 2] < 245) ink++; }} \
         return [ink, Number(c.dataset.draws || 0)];"
    );
    let v: Value = client.execute(&script, vec![]).await.ok()?;
    Some((v[0].as_u64()?, v[1].as_u64()?))
}

#[tokio::test]
async fn the_live_page_follows_a_run_recovers_from_a_cut_and_ends_on_the_result() {
    let dist = workspace().join("web/dist");
    assert!(
        dist.join("index.html").is_file(),
        "web/dist is not built: `bash scripts/test.sh` builds it"
    );
    let sim = Speclens::start(&[
        "sim",
        "--port",
        "0",
        "--num-spec-tokens",
        "3",
        "--acceptance-rates",
        "0.85,0.6,0.4",
        "--step-ms",
        "12",
    ]);
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let mut bench = Command::new(env!("CARGO_BIN_EXE_speclens"))
        .args([
            "bench",
            "--url",
            &sim.url(),
            "--num-prompts",
            "240",
            "--concurrency",
            "8",
            "--request-rate",
            "30",
            "--output-tokens",
            "48",
            "--scrape-interval",
            "0.5",
            "--dashboard",
            "--dashboard-port",
            "0",
            "--out",
            run_dir.to_str().unwrap(),
        ])
        .env("SPECLENS_WEB_DIR", &dist)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(bench.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("bench printed the dashboard URL").unwrap();
        if let Some(url) = line.strip_prefix("speclens dashboard: ") {
            break url.to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});

    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, profile.path()).await;
    client.goto(&url).await.unwrap();

    // While it runs: the status says so, the tiles hold numbers, the charts fill in.
    wait_for("the run to show as running", Duration::from_secs(30), || async {
        text_of(&client, "#run-status").await.contains("running").then_some(())
    })
    .await;
    let rate: f64 = wait_for("an acceptance-rate tile", Duration::from_secs(30), || async {
        text_of(&client, "#tile-acceptance-rate .tile-value").await.parse().ok()
    })
    .await;
    assert!((20.0..=95.0).contains(&rate), "acceptance rate tile {rate}");
    let first = wait_for("the token-flow chart", Duration::from_secs(30), || async {
        canvas_ink(&client, "live-flow").await.filter(|(ink, _)| *ink > 2000)
    })
    .await;
    let completed_now = |text: String| {
        text.split(" completed")
            .next()
            .and_then(|t| t.rsplit(' ').next()?.parse::<u64>().ok())
    };
    let early = completed_now(text_of(&client, "#run-status").await).unwrap();

    // Cut the connection mid-run: the page reconnects by itself and catches up from a snapshot.
    client.execute("window.speclensSocket.close()", vec![]).await.unwrap();
    wait_for("the page to reconnect", Duration::from_secs(30), || async {
        let status = text_of(&client, "#run-status").await;
        (status.starts_with("connected") && completed_now(status).is_some_and(|c| c > early)).then_some(())
    })
    .await;
    let later = wait_for("the token-flow chart to redraw", Duration::from_secs(30), || async {
        canvas_ink(&client, "live-flow")
            .await
            .filter(|(_, draws)| *draws > first.1)
    })
    .await;
    assert!(later.0 > 2000);

    // At the end the page shows what result.json holds.
    wait_for("the run to finish", Duration::from_secs(120), || async {
        text_of(&client, "#run-status").await.contains("finished").then_some(())
    })
    .await;
    let result: Value = wait_for("result.json", Duration::from_secs(30), || async {
        std::fs::read_to_string(run_dir.join("result.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
    })
    .await;
    let status = text_of(&client, "#run-status").await;
    assert_eq!(completed_now(status.clone()), result["completed"].as_u64(), "{status}");
    let per_request = &result["spec_decode"]["per_request"];
    let length = per_request["spec_decode_token_weighted_acceptance_length"]["avg"]
        .as_f64()
        .unwrap();
    assert_eq!(text_of(&client, "#pr-length").await, format!("{length:.3}"));
    let steps = per_request["total_spec_decode_steps"]["avg"].as_f64().unwrap();
    assert_eq!(text_of(&client, "#pr-steps").await, format!("{steps:.0}"));
    let positions = canvas_ink(&client, "live-positions").await.unwrap();
    assert!(positions.0 > 2000, "the per-position chart is drawn");

    client.close().await.unwrap();
    let _ = bench.kill();
    let _ = bench.wait();
}
