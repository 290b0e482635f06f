//! The live dashboard in headless Chromium: `speclens bench --dashboard` against a timed sim,
//! the page's tiles and charts updating while the run goes (values from the DOM, charts from
//! canvas pixels), a connection cut mid-run that the page recovers from by itself, and final
//! figures equal to `result.json`.

use std::time::Duration;

use serde_json::Value;

use crate::common::browser::{
    assert_series_drawn, canvas_ink, href_of, open_browser, rgb, screenshot, set_width, start_chromedriver, text_of,
    whatif_bstar,
};
use crate::common::{wait_for, Speclens};

#[tokio::test]
async fn the_live_page_follows_a_run_recovers_from_a_cut_and_ends_on_the_result() {
    let dist = crate::common::built_web_dir();
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
    let (mut bench, url) = crate::common::spawn_with_dashboard(
        &[
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
        ],
        &dist,
    );

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
    // The sim accepts position i with 0.85, 0.6 and 0.4: 61.7 % of draft tokens on average.
    // One 0.5 s interval holds some 1,000 draft tokens, within a few percent of the mean.
    assert!(
        (rate - 61.7).abs() < 10.0,
        "acceptance rate tile {rate}, the sim's mean is 61.7"
    );
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
    assert!(
        text_of(&client, "#tiles-scope")
            .await
            .starts_with("Last scrape interval"),
        "interval figures are labelled as such while the run goes"
    );
    // TPOT is measured live, beside ITL: a number while the run goes.
    let live_tpot: f64 = wait_for("a live TPOT", Duration::from_secs(30), || async {
        row_of(&text_of(&client, "#latency").await, "TPOT")
            .split(' ')
            .nth(1)?
            .parse()
            .ok()
    })
    .await;
    assert!(live_tpot > 0.0, "{live_tpot}");
    set_width(&client, 1400).await;
    screenshot(&client, "live-running-1400").await;
    set_width(&client, 420).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    screenshot(&client, "live-running-420").await;
    set_width(&client, 1400).await;

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
    // The token flow over the whole run: each series in its own colour.
    assert_series_drawn(
        &client,
        "live-flow",
        &[("proposed/s", rgb::PROPOSED), ("accepted/s", rgb::ACCEPTED)],
    )
    .await;
    // The finished run's tiles are the whole run's figures, as result.json has them (not the
    // last scrape interval's), and say so.
    let figure = |key: &str| result[key].as_f64().unwrap_or_else(|| panic!("{key} in result.json"));
    let duration = figure("duration");
    let (accepted, drafted, drafts) = (
        figure("spec_decode_accepted_tokens"),
        figure("spec_decode_draft_tokens"),
        figure("spec_decode_num_drafts"),
    );
    let want = [
        (
            "#tile-acceptance-rate",
            format!("{:.2}", figure("spec_decode_acceptance_rate")),
        ),
        (
            "#tile-acceptance-length",
            format!("{:.2}", figure("spec_decode_acceptance_length")),
        ),
        ("#tile-accepted-per-s", format!("{:.1}", accepted / duration)),
        ("#tile-drafted-per-s", format!("{:.1}", drafted / duration)),
        ("#tile-drafts-per-s", format!("{:.1}", drafts / duration)),
        (
            "#tile-draft-share",
            format!("{:.1}", accepted / (accepted + drafts) * 100.0),
        ),
    ];
    for (tile, value) in want {
        assert_eq!(text_of(&client, &format!("{tile} .tile-value")).await, value, "{tile}");
    }
    assert_eq!(
        text_of(&client, "#tiles-scope").await,
        "Whole run, as saved in result.json."
    );
    let tpot_row = row_of(&text_of(&client, "#latency").await, "TPOT");
    assert!(
        tpot_row.starts_with(&format!("TPOT {:.2} ", figure("mean_tpot_ms"))),
        "{tpot_row}"
    );
    screenshot(&client, "live-finished-1400").await;
    set_width(&client, 420).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    screenshot(&client, "live-finished-420").await;
    set_width(&client, 1400).await;
    let per_request = &result["spec_decode"]["per_request"];
    let length = per_request["spec_decode_token_weighted_acceptance_length"]["avg"]
        .as_f64()
        .unwrap();
    assert_eq!(text_of(&client, "#pr-length").await, format!("{length:.3}"));
    let steps = per_request["total_spec_decode_steps"]["avg"].as_f64().unwrap();
    assert_eq!(text_of(&client, "#pr-steps").await, format!("{steps:.0}"));
    let positions = canvas_ink(&client, "live-positions").await.unwrap();
    assert!(positions.0 > 2000, "the per-position chart is drawn");
    assert_series_drawn(&client, "live-positions", &[("per-request bars", rgb::ACCEPTED)]).await;
    let replica = sim
        .url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let per_replica = text_of(&client, "#per-replica").await;
    assert!(per_replica.contains(&replica), "{per_replica}");
    // The distributions: drawn, and over the same requests and steps as result.json.
    for id in ["live-latency-dist", "live-acceptance-dist"] {
        let (ink, _) = canvas_ink(&client, id).await.unwrap();
        assert!(ink > 3000, "{id} is drawn ({ink} pixels)");
    }
    assert_series_drawn(&client, "live-latency-dist", &[("latency bars", rgb::PROPOSED)]).await;
    assert_series_drawn(
        &client,
        "live-acceptance-dist",
        &[
            ("acceptance length bars", rgb::SPECULATIVE),
            ("accepted per step bars", rgb::ACCEPTED),
        ],
    )
    .await;
    let ttft_bins: u64 = result["distributions"]["ttft_ms"]["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(Some(ttft_bins), result["completed"].as_u64());
    let requests = per_request["spec_decode_acceptance_length"]["count"].as_u64().unwrap();
    assert_eq!(
        text_of(&client, "#acceptance-dist-counts").await,
        format!("{requests} requests with spec-decode steps · {steps:.0} steps pooled")
    );

    client.close().await.unwrap();
    let _ = bench.kill();
    let _ = bench.wait();
}

#[tokio::test]
async fn past_runs_open_in_the_same_views_and_compare_side_by_side() {
    let dist = crate::common::built_web_dir();
    // With vLLM 0.33's per-request timings, so the opened run shows its TTFT split.
    let spec = Speclens::instant_spec_sim("0.7", &["--enable-per-request-metrics", "--acceptance-spread", "0.6"]);
    let base = Speclens::instant_plain_sim();
    let results = tempfile::tempdir().unwrap();
    for (name, url) in [("spec-run", spec.url()), ("base-run", base.url())] {
        let (code, out, err) = crate::common::run_speclens(&[
            "bench",
            "--url",
            &url,
            "--num-prompts",
            "20",
            "--output-tokens",
            "24",
            "--scrape-interval",
            "0.2",
            "--out",
            results.path().join(name).to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let sweep_dir = results.path().join("sweep-x");
    // Timed sims (2 ms steps): the step cost compares the arms' TPOT, which an untimed sim
    // does not have.
    let timed_spec = Speclens::start(&[
        "sim",
        "--port",
        "0",
        "--num-spec-tokens",
        "3",
        "--alpha",
        "0.7",
        "--step-ms",
        "2",
    ]);
    let timed_base = Speclens::sim(&["--step-ms", "2"]);
    let (code, out, err) = crate::common::run_speclens(&[
        "sweep",
        "--spec-url",
        &timed_spec.url(),
        "--base-url",
        &timed_base.url(),
        "--concurrency",
        "1,4",
        "--requests-per-slot",
        "2",
        "--output-tokens",
        "16",
        "--out",
        sweep_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // What the sweep page must show of an earlier sweep's point it left out and of a set-up
    // warning, written in as a re-run against another server would (markup must stay text).
    let sweep_file = sweep_dir.join("sweep.json");
    let mut sweep_json: Value = serde_json::from_slice(&std::fs::read(&sweep_file).unwrap()).unwrap();
    sweep_json["earlier_points"] = serde_json::json!([{
        "point": "spec-c8", "sweep_started": "2026-12-03T10:00:00Z",
        "differences": ["model <b>old</b>, now new"], "joined": false,
    }]);
    sweep_json["warnings"] = serde_json::json!(["arm plain drafts tokens"]);
    std::fs::write(&sweep_file, serde_json::to_vec(&sweep_json).unwrap()).unwrap();
    let data = results.path().join("prompts.jsonl");
    std::fs::write(
        &data,
        "{\"prompt\": \"Summarize the memo\", \"category\": \"summarization\"}\n",
    )
    .unwrap();
    let (code, out, err) = crate::common::accept_jsonl(&spec.url(), &data, 5, &results.path().join("accept-x"));
    assert_eq!(code, 0, "{out}{err}");
    let out_accept = format!("{out}{err}");
    // A speculating server that returns no per-request stats: the run says so, and the page too.
    let quiet = Speclens::instant_spec_sim("0.7", &["--per-request-metrics", "none"]);
    let (code, out, err) = crate::common::run_speclens(&[
        "bench",
        "--url",
        &quiet.url(),
        "--num-prompts",
        "4",
        "--output-tokens",
        "16",
        "--out",
        results.path().join("quiet-run").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("Note: The server returned no per-request spec-decode stats"),
        "{out}"
    );
    let server = Speclens::serve_results(&dist, results.path());
    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, profile.path()).await;

    client.goto(&format!("{}#runs", server.url())).await.unwrap();
    wait_for("the run list", Duration::from_secs(30), || async {
        let t = text_of(&client, "#run-list").await;
        (t.contains("spec-run") && t.contains("base-run")).then_some(())
    })
    .await;
    // Both throughputs, each named by its window and defined on hover.
    let list = text_of(&client, "#run-list").await;
    assert!(
        list.contains("out tok/s (steady window)") && list.contains("out tok/s (whole run)"),
        "{list}"
    );
    assert_all_defined(&client, "#run-list th[title]", 4).await;

    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(results.path().join("spec-run/result.json")).unwrap()).unwrap();
    client
        .goto(&format!("{}#runs?open=spec-run", server.url()))
        .await
        .unwrap();
    let length = result["spec_decode_acceptance_length"].as_f64().unwrap();
    wait_for("the opened run's tiles", Duration::from_secs(30), || async {
        (text_of(&client, "#tile-acceptance-length .tile-value").await == format!("{length:.2}")).then_some(())
    })
    .await;
    let status = text_of(&client, "#run-status").await;
    assert!(status.contains("finished · 20 completed"), "{status}");
    // The TTFT split, the sentence the console printed (one computation), defined on hover.
    let split: speclens_shared::results::run_result::RunResult = serde_json::from_value(result.clone()).unwrap();
    let split = split.ttft_split().expect("the server's timings in result.json");
    assert_eq!(text_of(&client, "#run-ttft-split").await, split.sentence());
    assert_all_defined(&client, "#run-ttft-split", 1).await;
    // Who pays in the tail: the sentence of result.json's figures, and the scatter drawn.
    let tail: speclens_shared::run::tail::TailAttribution = serde_json::from_value(result["tail"].clone()).unwrap();
    assert_eq!(text_of(&client, "#run-tail-sentence").await, tail.sentence());
    assert_all_defined(&client, "#run-tail-sentence", 1).await;
    assert_series_drawn(
        &client,
        "run-tail",
        &[("requests", rgb::SPECULATIVE), ("p99 line", rgb::REJECTED)],
    )
    .await;
    // TPOT beside ITL, as result.json has it; every tile and latency row defined on hover; the
    // throughput named by its window.
    let tpot = result["mean_tpot_ms"].as_f64().unwrap();
    let latency = text_of(&client, "#latency").await;
    let tpot_row = row_of(&latency, "TPOT");
    assert!(tpot_row.starts_with(&format!("TPOT {tpot:.2} ")), "{latency}");
    assert_all_defined(&client, ".tile, #latency td[title], #latency tr td:first-child", 10).await;
    let throughput = text_of(&client, "#output-throughput").await;
    let whole = result["output_throughput"].as_f64().unwrap();
    assert!(
        throughput.starts_with(&format!("Output: {whole:.1} tokens/s (whole run)")),
        "{throughput}"
    );
    let ink = wait_for("the per-position chart", Duration::from_secs(30), || async {
        canvas_ink(&client, "live-positions")
            .await
            .filter(|(ink, _)| *ink > 2000)
    })
    .await;
    assert!(ink.1 >= 1);
    // The folder holds a sweep, so the run page's what-if link is the sweep's (one model B* on
    // every page): its arm's measured E with the sweep's ridge, not this run's on an H100's.
    wait_for("the sweep's what-if link", Duration::from_secs(30), || async {
        text_of(&client, "#whatif-from-run-bstar")
            .await
            .contains("the sweep's")
            .then_some(())
    })
    .await;
    let whatif = href_of(&client, "#whatif-from-run").await;
    let e_in_link: f64 = whatif
        .strip_prefix("#whatif?e=")
        .and_then(|r| r.split('&').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{whatif}"));
    let sweep_e = sweep_json["arms"][0]["table"]["prediction"]["measured_e"]
        .as_f64()
        .unwrap();
    assert_eq!(e_in_link, sweep_e, "{whatif}");
    assert!(
        whatif.contains("&k=3&") && whatif.contains("&ridge=295&") && whatif.contains("&rates="),
        "{whatif}"
    );
    let beside = text_of(&client, "#whatif-from-run-bstar").await;
    let notices = client
        .find(fantoccini::Locator::Css("#notices"))
        .await
        .expect("the notices block");
    assert_eq!(notices.text().await.unwrap(), "", "both paths agree on the sim");
    // The link opens on the B* printed beside it.
    client.goto(&format!("{}{whatif}", server.url())).await.unwrap();
    let bstar = whatif_bstar(&client).await;
    assert!(
        beside.starts_with(&format!("model B* = {bstar} ")),
        "{beside} against {bstar}"
    );
    client
        .goto(&format!("{}#runs?open=quiet-run", server.url()))
        .await
        .unwrap();
    let notice = wait_for("the run's notice", Duration::from_secs(30), || async {
        let t = text_of(&client, "#notices").await;
        t.contains("returned no per-request spec-decode stats").then_some(t)
    })
    .await;
    assert!(notice.contains("--per-request-spec-decode-metrics summary"), "{notice}");

    client
        .goto(&format!("{}#runs?compare=base-run,spec-run", server.url()))
        .await
        .unwrap();
    let table = wait_for("the comparison", Duration::from_secs(30), || async {
        let t = text_of(&client, "#compare").await;
        t.contains("output tokens/s").then_some(t)
    })
    .await;
    assert!(table.contains(&format!("{length:.3}")), "{table}");
    // "better" names the run whose figure is better, whichever way its number moved.
    let base: Value =
        serde_json::from_str(&std::fs::read_to_string(results.path().join("base-run/result.json")).unwrap()).unwrap();
    let (base_tpot, spec_tpot) = (
        base["mean_tpot_ms"].as_f64().unwrap(),
        result["mean_tpot_ms"].as_f64().unwrap(),
    );
    // An untimed sim's TPOT can be exactly 0 on both runs: the page says "same" then.
    let faster = if spec_tpot == base_tpot {
        "same"
    } else if spec_tpot < base_tpot {
        "spec-run"
    } else {
        "base-run"
    };
    let tpot_row = row_of(&table, "mean TPOT (ms)");
    assert!(tpot_row.ends_with(faster), "{table}");
    let throughput_row = row_of(&table, "output tokens/s (whole run)");
    let more = if result["output_throughput"].as_f64() > base["output_throughput"].as_f64() {
        "spec-run"
    } else {
        "base-run"
    };
    assert!(throughput_row.ends_with(more), "{table}");
    let classes: Value = client
        .execute(
            "return [...document.querySelectorAll('#compare thead th')].map(e => e.className)",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(classes[1], "base-arm");
    assert_eq!(classes[2], "spec-arm");

    // The sweep and the per-category matrix have their own views; back to the list by its link.
    client
        .find(fantoccini::Locator::Css("a[href='#runs']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(
        "links to the sweep and accept views",
        Duration::from_secs(30),
        || async {
            let t = text_of(&client, "#sweep-links").await;
            (t.contains("sweep: sweep-x") && t.contains("accept: accept-x")).then_some(())
        },
    )
    .await;
    client
        .goto(&format!("{}#runs?sweep=sweep-x", server.url()))
        .await
        .unwrap();
    let table = wait_for("the sweep table", Duration::from_secs(30), || async {
        let t = text_of(&client, "#sweep-table").await;
        t.contains("spec ÷ plain").then_some(t)
    })
    .await;
    assert!(table.contains("concurrency"), "{table}");
    let findings = text_of(&client, "#sweep-findings").await;
    assert!(findings.contains("Model prediction: B* = "), "{findings}");
    let notices = text_of(&client, "#sweep-notices").await;
    assert!(notices.contains("arm plain drafts tokens"), "{notices}");
    assert!(
        notices.contains("Left out, measured against another server or workload (--join-stale pools them): spec-c8 (from the sweep of 2026-12-03T10:00:00Z: model <b>old</b>, now new)"),
        "{notices}"
    );
    wait_for("the sweep chart", Duration::from_secs(30), || async {
        canvas_ink(&client, "sweep-chart").await.filter(|(ink, _)| *ink > 2000)
    })
    .await;
    assert_series_drawn(
        &client,
        "sweep-chart",
        &[("speculative arm", rgb::SPECULATIVE), ("plain arm", rgb::BASE)],
    )
    .await;
    // The step cost: the acceptance length each level needs beside the one measured, drawn,
    // and the sentence of sweep.json's highest level, defined on hover.
    assert_series_drawn(
        &client,
        "sweep-step-cost",
        &[("measured E", rgb::SPECULATIVE), ("needed E", rgb::REJECTED)],
    )
    .await;
    let sweep: speclens_shared::sweep::SweepFile = serde_json::from_value(sweep_json.clone()).unwrap();
    let sentence = sweep.arms.arms[0]
        .step_cost_sentence()
        .expect("step-cost rows in sweep.json");
    assert_eq!(text_of(&client, "#sweep-step-cost-sentence").await, sentence);
    assert_all_defined(&client, "#sweep-step-cost-sentence", 1).await;
    client
        .goto(&format!("{}#runs?accept=accept-x", server.url()))
        .await
        .unwrap();
    wait_for("the accept matrix", Duration::from_secs(30), || async {
        text_of(&client, "#accept-matrix")
            .await
            .contains("summarization")
            .then_some(())
    })
    .await;
    // The pooled E the console prints, from the category files' counts.
    let (mut steps, mut accepted) = (0u64, 0u64);
    for entry in std::fs::read_dir(results.path().join("accept-x")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("accept-") && name.ends_with(".json") {
            let row: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            steps += row["num_spec_steps"].as_u64().unwrap();
            accepted += row["accepted_tokens"].as_u64().unwrap();
        }
    }
    let pooled = text_of(&client, "#accept-pooled").await;
    assert!(
        pooled.contains(&format!(
            "acceptance length {:.3}",
            1.0 + accepted as f64 / steps as f64
        )),
        "{pooled}"
    );
    assert!(
        out_accept.contains(&pooled),
        "the console printed the same line: {out_accept}"
    );

    // A link taken from the dashboard opens the same run in a report of the same folder: the
    // sweep's nested point (`sweep-x/spec-c4`) has one id in both.
    client.goto(&format!("{}#runs", server.url())).await.unwrap();
    let link = wait_for("the sweep point's link", Duration::from_secs(30), || async {
        let links: Value = client
            .execute(
                "return [...document.querySelectorAll('#run-list a')].map(a => a.getAttribute('href'))",
                vec![],
            )
            .await
            .ok()?;
        links
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .find(|h| h.ends_with("/spec-c4"))
            .map(str::to_string)
    })
    .await;
    assert_eq!(link, "#runs?open=sweep-x/spec-c4");
    client.goto(&format!("{}{link}", server.url())).await.unwrap();
    let live_status = wait_for("the point on the dashboard", Duration::from_secs(30), || async {
        Some(text_of(&client, "#run-status").await).filter(|s| s.contains("finished"))
    })
    .await;
    let report = results.path().join("report.html");
    let (code, out, err) = crate::common::run_speclens(&[
        "report",
        results.path().to_str().unwrap(),
        "--web-dir",
        dist.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    client
        .goto(&format!("file://{}{link}", report.display()))
        .await
        .unwrap();
    let report_status = wait_for("the point in the report", Duration::from_secs(30), || async {
        Some(text_of(&client, "#run-status").await).filter(|s| s.contains("finished"))
    })
    .await;
    assert_eq!(report_status, live_status, "the same run, by the same link");
    client.close().await.unwrap();
}

/// At least `at_least` elements match `css`, and each carries a definition (a `title` of more
/// than a few words) that hover and keyboard focus show.
async fn assert_all_defined(client: &fantoccini::Client, css: &str, at_least: u64) {
    let found: Value = client
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map(e => [e.textContent.trim().slice(0, 40), e.getAttribute('title') || '', e.tabIndex]);",
            vec![Value::from(css)],
        )
        .await
        .unwrap();
    let found = found.as_array().unwrap();
    assert!(found.len() as u64 >= at_least, "{css}: {found:?}");
    for e in found {
        let title = e[1].as_str().unwrap();
        assert!(title.split_whitespace().count() >= 5, "{css}: no definition on {e}");
        assert_eq!(e[2], 0, "{css}: {e} is not reachable by keyboard focus");
    }
}

/// The row of a table's text that starts with `name`, its cells joined by single spaces.
fn row_of(table: &str, name: &str) -> String {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|l| l.starts_with(name))
        .unwrap_or_default()
}
