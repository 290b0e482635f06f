//! The dashboard tells the story, in real headless Chromium against a real `speclens serve` and
//! a real report opened from `file://`: the overview is the landing view, with the measured
//! crossing and acceptance of a real sweep and accept run; however often the live view is
//! visited, one WebSocket stays open; no view scrolls sideways at 420 px and no table is cut
//! off at 1024 px; a chart downloads as SVG, is redrawn when the window is resized and drawn at
//! twice the pixels on a 2× screen. Screenshots of each view at 1400 and 420 px land
//! in `target/screenshots` (and `docs/screenshots` with `SPECLENS_UPDATE_SCREENSHOTS=1`).

use std::path::Path;
use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::Value;

use crate::common::browser::{
    assert_labels_clear, assert_one_model_bstar, assert_series_drawn, canvas_backing, canvas_ink, clipped_tables,
    crossing_labels, href_of, label_overdraw, link_notices, open_browser, open_browser_at_scale, overlapping_texts,
    overview_whatif_link, rgb, screenshot, set_width, severe_log, sideways_overflow, squeezed_tables,
    start_chromedriver, text_of, visit, whatif_bstar,
};
use speclens_shared::view::overview::batch_text;

use crate::common::{run_speclens, run_speclens_within, wait_for, Speclens};

/// Prompts the sim sorts into three categories by their text (see `sim --help`).
const PROMPTS: &str = concat!(
    "{\"prompt\": \"Summarize the memo about the budget in two lines\", \"category\": \"summarization\"}\n",
    "{\"prompt\": \"Write code that sorts a list of numbers\", \"category\": \"coding\"}\n",
    "{\"prompt\": \"Translate this sentence into French\", \"category\": \"translation\"}\n",
);

/// A results folder with a sweep whose arms cross (a ridge of 8 token positions puts the
/// model's break-even near 5.6; 8-token prompts keep prefill, which the sim charges on the same
/// roofline, small), an accept run over three categories, and a speculative and a plain run to
/// compare.
fn measure(results: &Path) {
    let timed = |extra: &[&str]| {
        let mut args = vec!["sim", "--port", "0", "--ridge", "8", "--step-ms", "12"];
        args.extend_from_slice(extra);
        Speclens::start(&args)
    };
    let spec = timed(&["--num-spec-tokens", "3", "--acceptance-rates", "0.8,0.6,0.45"]);
    // The same drafter cut to one token: a second speculative arm of the sweep.
    let short = timed(&["--num-spec-tokens", "1", "--acceptance-rates", "0.8"]);
    let base = timed(&[]);
    let short_arm = format!("spec-k1={}", short.url());
    let run = |args: &[&str]| {
        let (code, out, err) = run_speclens_within(args, Duration::from_secs(240));
        assert_eq!(code, 0, "{args:?}\n{out}{err}");
    };
    let sweep = results.join("sweep");
    run(&[
        "sweep",
        "--spec-url",
        &spec.url(),
        "--arm",
        &short_arm,
        "--base-url",
        &base.url(),
        "--concurrency",
        "1,4,8,16",
        "--requests-per-slot",
        "2",
        "--input-tokens",
        "8",
        "--output-tokens",
        "16",
        "--ridge",
        "8",
        "--out",
        sweep.to_str().unwrap(),
    ]);
    let prompts = results.join("prompts.jsonl");
    std::fs::write(&prompts, PROMPTS).unwrap();
    run(&[
        "accept",
        "--url",
        &spec.url(),
        "--dataset",
        "jsonl",
        "--dataset-path",
        prompts.to_str().unwrap(),
        "--requests-per-category",
        "6",
        "--request-rate",
        "100",
        "--output-tokens",
        "16",
        "--out",
        results.join("accept").to_str().unwrap(),
    ]);
    for (name, url) in [("spec-run", spec.url()), ("base-run", base.url())] {
        run(&[
            "bench",
            "--url",
            &url,
            "--num-prompts",
            "12",
            "--concurrency",
            "4",
            "--input-tokens",
            "8",
            "--output-tokens",
            "16",
            "--scrape-interval",
            "0.2",
            "--out",
            results.join(name).to_str().unwrap(),
        ]);
    }
}

/// Wait for the overview's tiles and return the measured crossing tile's text.
async fn overview_crossing(client: &Client) -> String {
    wait_for("the overview's crossing tile", Duration::from_secs(30), || async {
        Some(text_of(client, "#ov-crossing .tile-value").await).filter(|t| !t.is_empty())
    })
    .await
}

#[tokio::test]
async fn the_overview_lands_first_with_the_measured_crossing_and_the_views_fit_any_width() {
    let dist = crate::common::built_web_dir();
    let results = tempfile::tempdir().unwrap();
    measure(results.path());
    let sweep: Value =
        serde_json::from_str(&std::fs::read_to_string(results.path().join("sweep/sweep.json")).unwrap()).unwrap();
    crate::common::assert_step_cost_flips_at_crossing(&sweep);
    // The headline arm: the one whose crossing is where speculation goes off (the
    // recommendation's cut-off), else the first, as sweep.json names it.
    let headline = sweep["recommendation"]["cut_off"]["arm"]
        .as_str()
        .or(sweep["arms"][0]["name"].as_str())
        .expect("a headline arm");
    let arm = sweep["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == headline)
        .unwrap()
        .clone();
    let crossing = arm["table"]["crossing"]
        .as_f64()
        .expect("the headline arm crosses plain");
    let predicted = arm["table"]["prediction"]["break_even_batch"].as_f64().unwrap();
    // The sweep chart names every arm's measured crossing and the model's B* with its value.
    let mut labels = crossing_labels(&sweep);
    labels.push("model B* = ".into());
    let server = Speclens::serve_results(&dist, results.path());
    let base = format!("{}/", server.url().trim_end_matches('/'));

    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, profile.path()).await;
    set_width(&client, 1400).await;

    // The landing view is the overview: the headline arm's measured crossing beside the
    // model's, its pooled acceptance, and the charts drawn.
    client.goto(&base).await.unwrap();
    assert_eq!(overview_crossing(&client).await, batch_text(crossing));
    assert_eq!(
        text_of(&client, "#ov-predicted .tile-value").await,
        batch_text(predicted)
    );
    let e = arm["acceptance_length"].as_f64().unwrap();
    assert_eq!(text_of(&client, "#ov-e .tile-value").await, format!("{e:.2}"));
    let k = arm["k"].as_u64().expect("the headline arm's k");
    assert_eq!(
        text_of(&client, "#ov-alpha .tile-label").await,
        format!("Implied α (k = {k})"),
        "the tiles are about the headline arm's draft length"
    );
    let sources = text_of(&client, "#overview-sources").await;
    assert!(
        sources.starts_with(&format!("Acceptance from the sweep's arm {headline} (")),
        "the tiles name their arm: {sources}"
    );
    let sentence = text_of(&client, "#overview-break-even").await;
    assert!(
        sentence.contains(&format!("below about {} concurrent requests", batch_text(crossing))),
        "{sentence}"
    );
    // Every arm of the sweep, and the recommendation drawn from them.
    let arms = text_of(&client, "#overview-arms").await;
    assert!(
        arms.contains("spec (k = 3") && arms.contains("spec-k1 (k = 1"),
        "{arms}"
    );
    let recommended = text_of(&client, "#overview-recommendation").await;
    assert!(
        recommended.starts_with("Recommended: k = 3 (spec) at concurrency 1"),
        "{recommended}"
    );
    // The latency figures are the user's own bench run's (the newest with spec figures), not a
    // sweep point's.
    let latency_run = text_of(&client, "#overview-latency-run").await;
    assert!(latency_run.starts_with("Run spec-run: "), "{latency_run}");
    let acceptance = text_of(&client, "#overview-acceptance").await;
    assert!(acceptance.contains("for a geometric α of the same E"), "{acceptance}");
    for chart in ["overview-sweep", "overview-positions", "overview-accept"] {
        wait_for(&format!("the {chart} chart"), Duration::from_secs(30), || async {
            canvas_ink(&client, chart).await.filter(|(ink, _)| *ink > 2000)
        })
        .await;
    }
    assert_series_drawn(
        &client,
        "overview-sweep",
        &[("speculative arm", rgb::SPECULATIVE), ("plain arm", rgb::BASE)],
    )
    .await;
    // No curve or marker over a crossing's label; and the check sees one that is.
    assert_labels_clear(&client, "overview-sweep", &labels, "1400 px").await;
    let crossed = label_overdraw(&client, "overview-sweep", true).await;
    assert!(
        !crossed.is_empty() && crossed.iter().all(|(_, n)| *n > 0),
        "a line through each label is counted: {crossed:?}"
    );
    assert_labels_clear(&client, "overview-sweep", &labels, "1400 px, drawn again").await;
    assert_series_drawn(&client, "overview-positions", &[("measured bars", rgb::ACCEPTED)]).await;
    assert_series_drawn(&client, "overview-accept", &[("category bars", rgb::SPECULATIVE)]).await;
    screenshot(&client, "overview-1400").await;
    // The served page runs under its full Content-Security-Policy: nothing refused.
    let severe = severe_log(&client).await;
    assert!(severe.is_empty(), "{severe:?}");

    // A chart downloads as SVG: the same drawing, as text.
    client
        .find(Locator::Css("#overview-sweep-svg"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let svg: Value = client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             const a = document.getElementById('overview-sweep-svg-link'); \
             if (!a.href.startsWith('blob:')) { done('no download: ' + a.href); return; } \
             fetch(a.href).then(r => r.text()).then(done, e => done('ERR ' + e));",
            vec![],
        )
        .await
        .unwrap();
    let svg = svg.as_str().unwrap_or_default();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(
        svg.contains("output tokens/s") && svg.contains("measured B*"),
        "the sweep chart's axis and legend are in the SVG"
    );
    let name = client
        .find(Locator::Css("#overview-sweep-svg-link"))
        .await
        .unwrap()
        .attr("download")
        .await
        .unwrap();
    assert_eq!(name.as_deref(), Some("speclens-sweep.svg"));

    // Values on hover: the pointer over the sweep chart reads out the nearest point.
    client
        .execute(
            "const c = document.getElementById('overview-sweep'); const r = c.getBoundingClientRect(); \
             c.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + r.width * 0.5, clientY: r.top + r.height * 0.3, bubbles: true}));",
            vec![],
        )
        .await
        .unwrap();
    let tip = wait_for("the hover readout", Duration::from_secs(10), || async {
        Some(text_of(&client, "#overview-sweep-tip").await).filter(|t| !t.is_empty())
    })
    .await;
    assert!(
        tip.starts_with("concurrency ")
            && tip.contains("spec ")
            && tip.contains("spec-k1 ")
            && tip.contains("· plain "),
        "{tip}"
    );
    screenshot(&client, "overview-hover-1400").await;

    // The overview's what-if link opens on the headline arm's model B*, with no notice of a
    // parameter the page could not use.
    let whatif = overview_whatif_link(&client).await;
    client.goto(&format!("{base}{whatif}")).await.unwrap();
    let bstar = whatif_bstar(&client).await;
    assert_eq!(bstar, format!("{predicted:.1}"), "{whatif}");
    let notices = link_notices(&client).await;
    assert_eq!(notices, serde_json::json!([]), "{whatif}");
    // The run and live pages and the navigation give that same B*: the sweep's ridge (8), not
    // an H100's.
    assert_one_model_bstar(&client, &base, "spec-run", &format!("{predicted:.1}"), "8").await;

    // One WebSocket, however often the live view is visited.
    visit(&client, &base, "live", "#live-empty").await;
    client
        .execute(
            "window.__first = window.speclensSocket; window.__sockets = []; \
             const Native = window.WebSocket; \
             window.WebSocket = function (...args) { const s = new Native(...args); window.__sockets.push(s); return s; }; \
             window.WebSocket.prototype = Native.prototype; \
             Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});",
            vec![],
        )
        .await
        .unwrap();
    for _ in 0..10 {
        client.execute("location.hash = '#overview'", vec![]).await.unwrap();
        overview_crossing(&client).await;
        client.execute("location.hash = '#live'", vec![]).await.unwrap();
        wait_for("the live view", Duration::from_secs(30), || async {
            client.find(Locator::Css("#live-empty")).await.ok().map(|_| ())
        })
        .await;
    }
    let open = wait_for("the old sockets to close", Duration::from_secs(30), || async {
        let v: Value = client
            .execute(
                "const all = [window.__first, ...window.__sockets]; \
                 return [all.length, all.filter(s => s.readyState === 0 || s.readyState === 1).length];",
                vec![],
            )
            .await
            .ok()?;
        let (made, open) = (v[0].as_u64()?, v[1].as_u64()?);
        (open == 1).then_some((made, open))
    })
    .await;
    assert_eq!(open, (11, 1), "11 visits of the live view, one socket open");

    // The other views at 1400 px, then every view at 420 px (no sideways scroll) and 1024 px
    // (no table cut off).
    let views = [
        ("overview", "#ov-crossing", "overview"),
        ("runs", "#run-list", "runs"),
        ("runs?open=spec-run", "#latency", "run"),
        ("runs?compare=base-run,spec-run", "#compare", "compare"),
        ("runs?sweep=sweep", "#sweep-table", "sweep"),
        ("runs?accept=accept", "#accept-matrix", "accept"),
        ("whatif?alpha=0.7&k=3", "#model-table", "whatif"),
    ];
    for (fragment, ready, name) in views {
        visit(&client, &base, fragment, ready).await;
        if name != "overview" {
            screenshot(&client, &format!("{name}-1400")).await;
        }
        if name == "sweep" {
            // The sweep's page lists each arm and prints the engine lines.
            assert_labels_clear(&client, "sweep-chart", &labels, "1400 px").await;
            let rows = client.find_all(Locator::Css("#sweep-arms tbody tr")).await.unwrap();
            assert_eq!(rows.len(), 2, "one row per speculative arm");
            // Its what-if link names the headline arm and opens on the B* printed beside it.
            let link = href_of(&client, "#whatif-from-sweep").await;
            let beside = text_of(&client, "#whatif-from-sweep-bstar").await;
            assert_eq!(beside, format!("arm {headline}: model B* = {predicted:.1}"));
            client.goto(&format!("{base}{link}")).await.unwrap();
            let bstar = whatif_bstar(&client).await;
            assert_eq!(bstar, format!("{predicted:.1}"), "{link}");
            visit(&client, &base, fragment, ready).await;
            let rec = text_of(&client, "#sweep-recommendation").await;
            assert!(
                rec.contains("vLLM: --speculative-config") && rec.contains("num_speculative_tokens"),
                "{rec}"
            );
        }
    }
    // A resized window redraws its charts for the new width (not a stretched bitmap).
    visit(&client, &base, "overview", "#ov-crossing").await;
    sharp_chart(&client, "overview-sweep").await;
    set_width(&client, 420).await;
    sharp_chart(&client, "overview-sweep").await;
    for (fragment, ready, name) in views {
        visit(&client, &base, fragment, ready).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            sideways_overflow(&client).await,
            0,
            "#{fragment} scrolls sideways at 420 px"
        );
        assert_eq!(
            overlapping_texts(&client).await,
            Vec::<String>::new(),
            "#{fragment}: text over text at 420 px"
        );
        // Tables scroll inside their box, first column held, no cell squeezed into a tower.
        assert_eq!(
            squeezed_tables(&client).await,
            Vec::<String>::new(),
            "#{fragment}: a squeezed table at 420 px"
        );
        if let Some(chart) = sweep_chart_of(name) {
            assert_labels_clear(&client, chart, &labels, "420 px").await;
        }
        if name == "overview" {
            // The check sees what it must refuse: a label laid over the title.
            client
                .execute(
                    "const h = document.querySelector('h1').getBoundingClientRect();                      const d = document.createElement('div'); d.id = 'overlap-probe'; d.textContent = 'probe label';                      d.style = `position:absolute;left:${h.left + scrollX}px;top:${h.top + scrollY}px`;                      document.body.appendChild(d);",
                    vec![],
                )
                .await
                .unwrap();
            let seen = overlapping_texts(&client).await;
            assert!(seen.iter().any(|p| p.contains("probe label")), "{seen:?}");
            // And a table squeezed into a 60 px box, outside the page's styles.
            client
                .execute(
                    "const t = document.createElement('table'); t.id = 'tower-probe'; t.style.width = '60px';                      t.innerHTML = '<tr><td>a cell of many words that wraps into a tower</td></tr>';                      document.querySelector('main').appendChild(t);",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(squeezed_tables(&client).await, ["tower-probe"]);
            client
                .execute("document.getElementById('tower-probe').remove();", vec![])
                .await
                .unwrap();
            client
                .execute("document.getElementById('overlap-probe').remove();", vec![])
                .await
                .unwrap();
        }
        screenshot(&client, &format!("{name}-420")).await;
    }
    set_width(&client, 1024).await;
    for (fragment, ready, name) in views {
        visit(&client, &base, fragment, ready).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Some(chart) = sweep_chart_of(name) {
            assert_labels_clear(&client, chart, &labels, "1024 px").await;
        }
        assert_eq!(
            clipped_tables(&client).await,
            Vec::<String>::new(),
            "#{fragment} at 1024 px"
        );
        assert_eq!(
            sideways_overflow(&client).await,
            0,
            "#{fragment} scrolls sideways at 1024 px"
        );
    }

    // A report of the same folder, opened from a file, lands on the same overview.
    let report = results.path().join("report.html");
    let (code, out, err) = run_speclens(&[
        "report",
        results.path().to_str().unwrap(),
        "--web-dir",
        dist.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    set_width(&client, 1400).await;
    client.goto(&format!("file://{}", report.display())).await.unwrap();
    assert_eq!(overview_crossing(&client).await, batch_text(crossing));
    assert_eq!(text_of(&client, "#ov-e .tile-value").await, format!("{e:.2}"));
    assert_eq!(
        text_of(&client, "#ov-predicted .tile-value").await,
        batch_text(predicted)
    );
    assert!(text_of(&client, "#overview-latency-run")
        .await
        .starts_with("Run spec-run: "));
    assert!(text_of(&client, "#overview-sources")
        .await
        .starts_with(&format!("Acceptance from the sweep's arm {headline} (")));
    client.close().await.unwrap();

    // On a screen with two device pixels per CSS pixel, charts are drawn at twice the pixels.
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser_at_scale(&driver, profile.path(), 2).await;
    client.goto(&base).await.unwrap();
    overview_crossing(&client).await;
    let (backing, css) = sharp_chart(&client, "overview-sweep").await;
    let ratio: Value = client.execute("return window.devicePixelRatio;", vec![]).await.unwrap();
    assert_eq!(ratio.as_f64(), Some(2.0));
    assert!(
        backing >= 480 && backing == css,
        "canvas {backing} px for {css} device px"
    );
    client.close().await.unwrap();
}

/// The sweep chart's canvas on a view, if the view has one.
fn sweep_chart_of(view: &str) -> Option<&'static str> {
    match view {
        "overview" => Some("overview-sweep"),
        "sweep" => Some("sweep-chart"),
        _ => None,
    }
}

/// Wait until chart `id` is drawn, inked, for the size and pixel ratio it is shown at; returns
/// its backing width and CSS width × devicePixelRatio.
async fn sharp_chart(client: &Client, id: &str) -> (u64, u64) {
    wait_for(
        &format!("{id} drawn at its shown size"),
        Duration::from_secs(30),
        || async {
            let inked = canvas_ink(client, id).await.is_some_and(|(ink, _)| ink > 2000);
            canvas_backing(client, id)
                .await
                .filter(|(backing, css)| inked && backing.abs_diff(*css) <= 1)
        },
    )
    .await
}
