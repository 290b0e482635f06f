//! `speclens demo` tells one story on its console, its dashboard and its report: the what-if
//! link it prints carries the sweep's headline arm and opens, in real headless Chromium, on the
//! B* printed beside it; the overview's tiles are that arm's figures from `sweep.json`; every
//! what-if link on the pages opens on the B* shown beside it; no crossing's label is drawn over
//! at 1400, 1024 or 420 px and no text overlaps at 420 px; the report, opened from `file://`,
//! lands on the same overview. The demo's points are too short for a timeline, and the run page
//! says so instead of drawing two dots.

use std::time::Duration;

use fantoccini::{Client, Locator};
use speclens_shared::view::overview::batch_text;

use crate::common::browser::{
    assert_labels_clear, assert_one_model_bstar, crossing_labels, href_of, link_notices, open_browser,
    overlapping_texts, overview_whatif_link, set_width, start_chromedriver, text_of, visit, whatif_bstar,
};
use crate::common::{field_after, read_json, wait_for, Speclens};

#[tokio::test]
async fn the_demo_tells_one_story_on_its_console_dashboard_and_report() {
    let dist = crate::common::built_web_dir();
    let out = tempfile::tempdir().unwrap();
    let demo = Speclens::start_until(
        &[
            "demo",
            "--port",
            "0",
            "--web-dir",
            dist.to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
        ],
        "speclens what-if: ",
        Duration::from_secs(240),
    );
    let url = demo.url();
    let console = &demo.earlier;
    assert!(
        url.contains("#whatif?e=") && url.contains("&k=") && url.contains("&rates="),
        "{url}\n{console}"
    );
    assert!(
        console.contains("summarization")
            && console.contains("Arms against plain")
            && console.contains("spec ÷ spec-k1: crossing")
            && console.contains("Recommendation:"),
        "{console}"
    );
    assert!(
        console.contains("speclens dashboard: http://127.0.0.1:"),
        "the live page is served from the start"
    );
    // The answer comes first: within 25 lines of the sweep's last point line, before the
    // tables, led by the measured crossing.
    let lines: Vec<&str> = console.lines().collect();
    let last_point = lines
        .iter()
        .rposition(|l| l.trim_start().starts_with("base c = "))
        .unwrap_or_else(|| panic!("point lines: {console}"));
    let answer = lines
        .iter()
        .position(|l| l.starts_with("Answer (measured first"))
        .unwrap_or_else(|| panic!("an answer block: {console}"));
    assert!(
        answer > last_point && answer - last_point <= 25,
        "answer at line {answer}, last point at {last_point}: {console}"
    );
    assert!(
        lines[answer + 1].starts_with("  Measured: speculation pays below B* = "),
        "{console}"
    );
    // The seeded figures are the sweep's headline arm's, as sweep.json holds them, with every
    // parameter the model needs; the B* printed beside the link is that arm's prediction.
    let named = console
        .split("seeded with the measured acceptance of arm ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("the headline arm: {console}"))
        .to_string();
    let sweep = read_json(&out.path().join("sweep/sweep.json"));
    let arm = sweep["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == named.as_str())
        .unwrap_or_else(|| panic!("arm {named} in sweep.json"))
        .clone();
    crate::common::assert_step_cost_flips_at_crossing(&sweep);
    let prediction = &arm["table"]["prediction"];
    let query = |name: &str| field_after(&url.replace('&', " "), &format!("{name}="));
    let e: f64 = query("e").parse().unwrap();
    assert_eq!(Some(e), prediction["measured_e"].as_f64(), "{url}");
    assert!((e - arm["acceptance_length"].as_f64().unwrap()).abs() < 1e-9, "{url}");
    let rates: Vec<String> = arm["per_position_acceptance_rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_f64().unwrap().to_string())
        .collect();
    assert_eq!(query("rates"), rates.join(","), "{url}");
    assert_eq!(query("k"), prediction["k"].to_string(), "{url}");
    assert_eq!(
        query("ridge").parse::<f64>().ok(),
        prediction["costs"]["ridge_tokens"].as_f64(),
        "{url}"
    );
    let printed = field_after(console, "model B* = ");
    let predicted = prediction["break_even_batch"].as_f64().unwrap();
    assert_eq!(printed, format!("{predicted:.1}"), "{console}");
    for file in [
        "accept/accept-summarization.json",
        "accept/position-matrix.json",
        "accept/position-matrix.csv",
        "sweep/spec-c1.json",
        "sweep/spec-k1-c84.json",
        "sweep/base-c84.json",
        "report.html",
    ] {
        assert!(out.path().join(file).is_file(), "the demo saved {file}");
    }
    assert!(console.contains("Report: "), "{console}");
    // The detail tables are in the file the console names, not on the console.
    let detail_file = out.path().join("sweep/sweep-detail.txt");
    assert!(
        console.contains(&format!("{} (--verbose prints it here)", detail_file.display()))
            && !console.contains("Step cost, spec"),
        "{console}"
    );
    let detail = std::fs::read_to_string(&detail_file).unwrap();
    assert!(
        detail.contains("Step cost, spec (")
            && detail.contains("Engine load, spec | plain")
            && detail.contains("SGLang: "),
        "{detail}"
    );

    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, profile.path()).await;
    set_width(&client, 1400).await;

    // The console's link opens on the B* printed beside it, with no notice of an unread
    // parameter.
    client.goto(&url).await.unwrap();
    assert_eq!(whatif_bstar(&client).await, printed, "{url}");
    let notices = link_notices(&client).await;
    assert_eq!(notices, serde_json::json!([]), "{url}");

    // The overview is about the same arm: its E, k, measured and predicted break-even.
    let base = format!("{}/", url.split('#').next().unwrap().trim_end_matches('/'));
    let crossing = arm["table"]["crossing"]
        .as_f64()
        .expect("the headline arm crosses plain");
    let k = arm["k"].as_u64().unwrap();
    let headline = Headline {
        arm: named.clone(),
        e,
        k,
        crossing: batch_text(crossing),
        predicted: batch_text(predicted),
    };
    headline.holds_on_the_overview(&client, &base).await;

    // The overview's and the sweep page's what-if links open on the B* they print.
    let overview_link = overview_whatif_link(&client).await;
    client.goto(&format!("{base}{overview_link}")).await.unwrap();
    assert_eq!(whatif_bstar(&client).await, printed, "{overview_link}");
    visit(&client, &base, "runs?sweep=sweep", "#sweep-table").await;
    let sweep_link = href_of(&client, "#whatif-from-sweep").await;
    assert_eq!(
        text_of(&client, "#whatif-from-sweep-bstar").await,
        format!("arm {named}: model B* = {printed}")
    );
    client.goto(&format!("{base}{sweep_link}")).await.unwrap();
    assert_eq!(whatif_bstar(&client).await, printed, "{sweep_link}");

    // Every arm's crossing and the model's B* are named on the sweep charts, nothing drawn over
    // them at any width; at a phone's width no text lies over another.
    let mut labels = crossing_labels(&sweep);
    labels.push(format!("model B* = {printed} ({named})"));
    for width in [1400, 1024, 420] {
        set_width(&client, width).await;
        for (fragment, ready, chart) in [
            ("overview", "#ov-crossing", "overview-sweep"),
            ("runs?sweep=sweep", "#sweep-table", "sweep-chart"),
        ] {
            visit(&client, &base, fragment, ready).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_labels_clear(&client, chart, &labels, &format!("{width} px")).await;
            if width == 420 {
                assert_eq!(
                    overlapping_texts(&client).await,
                    Vec::<String>::new(),
                    "#{fragment}: text over text at 420 px"
                );
            }
        }
    }
    set_width(&client, 1400).await;

    // The accept page draws the category × position matrix the demo saved as a heat map: each
    // cell's colour is its rate's, and pointing at a cell reads its value out.
    let matrix: speclens_shared::results::accept::PositionMatrix =
        serde_json::from_value(read_json(&out.path().join("accept/position-matrix.json"))).unwrap();
    assert!(
        matrix.rows.len() >= 2,
        "the demo's prompts have several categories: {matrix:?}"
    );
    assert!(
        console.contains("Acceptance rate by category and draft position"),
        "{console}"
    );
    visit(&client, &base, "runs?accept=accept", "#accept-heatmap").await;
    let cells = client
        .execute(
            "return [...document.querySelectorAll('#accept-heatmap tbody tr')].map(tr =>
                [...tr.querySelectorAll('td.heat')].map(td => [td.textContent, getComputedStyle(td).backgroundColor]));",
            vec![],
        )
        .await
        .unwrap();
    let cells: Vec<Vec<(String, String)>> = serde_json::from_value(cells).unwrap();
    assert_eq!(cells.len(), matrix.rows.len() + 1, "{cells:?}");
    for (row, drawn) in matrix.all_rows().zip(&cells) {
        let want: Vec<(String, String)> = row
            .rates
            .iter()
            .map(|r| match r {
                Some(r) => (format!("{r:.3}"), speclens_shared::results::accept::heat_colour(*r)),
                None => ("—".into(), "rgba(0, 0, 0, 0)".into()),
            })
            .collect();
        assert_eq!(drawn, &want, "{}", row.category);
    }
    let (row, rate) = (&matrix.rows[1], matrix.rows[1].rates[0].unwrap());
    client
        .execute(
            "document.querySelectorAll('#accept-heatmap tbody tr')[1].querySelector('td.heat')
                .dispatchEvent(new MouseEvent('mouseenter'));",
            vec![],
        )
        .await
        .unwrap();
    let said = format!("{}, position 0: {rate:.3} (accepted at position 0", row.category);
    wait_for("the heat map's readout", Duration::from_secs(10), || async {
        text_of(&client, "#accept-heatmap-readout")
            .await
            .starts_with(&said)
            .then_some(())
    })
    .await;

    // A demo point lasts well under a second: its page says why it draws no timeline.
    visit(&client, &base, "overview", "#overview-latency-run").await;
    let run_line = text_of(&client, "#overview-latency-run").await;
    let run_id = run_line
        .strip_prefix("Run ")
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("{run_line}"))
        .to_string();
    visit(&client, &base, &format!("runs?open={run_id}"), "#latency").await;
    let why = wait_for("the timeline's note", Duration::from_secs(30), || async {
        Some(text_of(&client, "#timeline-too-short").await).filter(|t| !t.is_empty())
    })
    .await;
    let result = read_json(&out.path().join(format!("{run_id}.json")));
    let lasted = result["duration"].as_f64().expect("the point's duration");
    assert!(
        why.starts_with(&format!("Not drawn: this run lasted {lasted:.2} s, ")) && why.contains("at least 4"),
        "{why}"
    );
    assert!(client.find(Locator::Css("#live-acceptance")).await.is_err());
    // The demo's points are random-token prompts: the run page says so, as result.json does.
    assert_eq!(
        result["content_invalid_for_acceptance"],
        serde_json::json!(["random_tokens", "ignore_eos"])
    );
    assert!(
        text_of(&client, "#run-content-invalid")
            .await
            .starts_with("Content-invalid for acceptance (random-token prompts, ignore_eos answers)"),
        "the run page's mark"
    );
    // One model B* on every page: the run and live pages and the navigation open on the
    // sweep's, the B* the console printed.
    let ridge = prediction["costs"]["ridge_tokens"].as_f64().unwrap().to_string();
    assert_one_model_bstar(&client, &base, &run_id, &printed, &ridge).await;

    // The report, opened from a file, tells the same story.
    let report = format!("file://{}", out.path().join("report.html").display());
    headline.holds_on_the_overview(&client, &report).await;
    let link = overview_whatif_link(&client).await;
    client.goto(&format!("{report}{link}")).await.unwrap();
    assert_eq!(whatif_bstar(&client).await, printed, "the report's {link}");
    client.close().await.unwrap();
}

/// What the overview must show of the sweep's headline arm.
struct Headline {
    arm: String,
    e: f64,
    k: u64,
    crossing: String,
    predicted: String,
}

impl Headline {
    /// Open the overview of the page at `base` and hold its tiles to this arm.
    async fn holds_on_the_overview(&self, client: &Client, base: &str) {
        visit(client, base, "overview", "#ov-crossing .tile-value").await;
        assert_eq!(
            text_of(client, "#ov-e .tile-value").await,
            format!("{:.2}", self.e),
            "{base}"
        );
        assert_eq!(
            text_of(client, "#ov-alpha .tile-label").await,
            format!("Implied α (k = {})", self.k),
            "{base}"
        );
        assert_eq!(
            text_of(client, "#ov-crossing .tile-value").await,
            self.crossing,
            "{base}"
        );
        assert_eq!(
            text_of(client, "#ov-predicted .tile-value").await,
            self.predicted,
            "{base}"
        );
        let sources = text_of(client, "#overview-sources").await;
        assert!(
            sources.starts_with(&format!("Acceptance from the sweep's arm {} (", self.arm)),
            "{base}: {sources}"
        );
    }
}
