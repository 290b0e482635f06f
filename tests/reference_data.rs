//! The shared core against the real and generated reference texts in tests/fixtures: every
//! `.prom` file parses to the totals its numbers imply, and the real per-request payloads adapt.

use std::collections::BTreeMap;

use speclens_shared::engine::Engine;
use speclens_shared::request::per_request::{adapt_response, PayloadOutcome, PayloadScan};
use speclens_shared::scrape::prom;
use speclens_shared::scrape::{
    counters_from_text, parse_metrics, window_result, window_result_with, CounterSet, GaugeMeans, ResultStatus,
    ScrapeFailure, SpecCounters,
};
use speclens_shared::Error;

use crate::common::{json_fixture_text, read_fixture};

fn counters(text: &str) -> CounterSet {
    counters_from_text(text).unwrap_or_else(|e| panic!("{e}"))
}

fn spec(drafts: u64, tokens: u64, accepted: u64, per_pos: &[u64]) -> SpecCounters {
    SpecCounters::new(drafts, tokens, accepted, per_pos)
}

#[test]
fn every_prom_fixture_is_valid_exposition_text() {
    let dir = crate::common::workspace().join("tests/fixtures");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("prom") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let samples: Result<Vec<_>, _> = prom::samples(&text).collect();
        let samples = samples.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!samples.is_empty(), "{}", path.display());
        checked += 1;
    }
    assert_eq!(checked, 14, "all fourteen .prom fixtures were read");
}

#[test]
fn aisbench_valid_metrics_text() {
    let c = counters(&read_fixture("aisbench_valid_metrics_text.prom"));
    assert_eq!(c.total, spec(15420, 77100, 50115, &[15420, 13878, 11565]));
    assert_eq!(c.series.keys().collect::<Vec<_>>(), vec!["engine=\"0\""]);
}

#[test]
fn aisbench_no_spec_decode_text() {
    let failure = counters_from_text(&read_fixture("aisbench_no_spec_decode_text.prom")).unwrap_err();
    assert_eq!(failure, ScrapeFailure::NoSpecMetrics);
    assert_eq!(failure.to_string(), "No spec decode metrics found on server");
}

#[test]
fn vllm_single_and_multiproc_agree_and_created_gauges_are_not_summed() {
    let single = counters(&read_fixture("generated_vllm_single.prom"));
    let multi = counters(&read_fixture("generated_vllm_multiproc.prom"));
    let want = spec(15420, 46260, 30115, &[12100, 10015, 8000]);
    assert_eq!(single.total, want);
    assert_eq!(multi.total, want);
    assert_eq!(
        single.by_label("model_name").keys().collect::<Vec<_>>(),
        vec!["Qwen/Qwen3-8B"]
    );
}

#[test]
fn vllm_dp2_sums_engines_and_keeps_the_split() {
    let c = counters(&read_fixture("generated_vllm_dp2.prom"));
    assert_eq!(c.total, spec(2000, 6000, 3600, &[1500, 1200, 900]));
    let by_engine = c.by_label("engine");
    assert_eq!(by_engine["0"], spec(800, 2400, 1500, &[600, 500, 400]));
    assert_eq!(by_engine["1"], spec(1200, 3600, 2100, &[900, 700, 500]));
}

/// A vLLM with two data-parallel engines ignores a per-batch-size schedule: its window says how
/// many engines it counted, and the schedule's warning follows from it.
#[test]
fn a_two_engine_vllm_exposition_warns_that_a_schedule_is_ignored() {
    use speclens_shared::sweep::schedules::{vllm_schedule_warnings, ServerFacts};
    let dp2 = window_from_zero(&read_fixture("generated_vllm_dp2.prom")).data.unwrap();
    assert_eq!(dp2.data_parallel_engines, Some(2));
    let warnings = vllm_schedule_warnings(&ServerFacts {
        vllm_engines: dp2.data_parallel_engines,
        ..ServerFacts::default()
    });
    assert!(
        warnings[0].starts_with("schedule ignored under data parallelism"),
        "{warnings:?}"
    );
    let single = window_from_zero(&read_fixture("generated_vllm_single.prom"))
        .data
        .unwrap();
    assert_eq!(single.data_parallel_engines, None, "one engine: nothing to say");
}

#[test]
fn vllm_large_values_in_go_exponent_form() {
    let c = counters(&read_fixture("generated_vllm_large.prom"));
    assert_eq!(c.total, spec(6_491_797, 12_983_594, 9_000_001, &[5_000_000, 4_000_001]));
}

/// SGLang 0.5.23: the `is_streaming` label sets are summed, and DSpark's two gauges are read and
/// named in the window's notes.
#[test]
fn sglang_0_5_23_sums_its_is_streaming_label_sets_and_shows_dspark_s_gauges() {
    let text = read_fixture("written_sglang_0523_dspark_metrics.prom");
    let c = counters(&text);
    assert_eq!(
        (c.total.num_drafts, c.total.generation_tokens, c.total.requests),
        (1000, Some(3200), Some(30))
    );
    let g = parse_metrics(&text).unwrap().sglang.unwrap();
    assert_eq!((g.cap_length, g.block_accept_length), (Some(6.0), Some(4.1)));
    let d = window_from_zero(&text).data.expect("a window");
    // (3,200 − 30) ÷ 1,000 verify steps.
    assert_eq!(d.acceptance_length, Some(3.17));
    let notes = d.notes.join("\n");
    assert!(notes.contains("DSpark's draft cap: 6.00"), "{notes}");
    assert!(notes.contains("DSpark's accepted length per block: 4.10"), "{notes}");
    // Before its first request finished (no verify call counted yet) the labelled counters are
    // absent: zero then.
    let before = text
        .lines()
        .filter(|l| !l.contains("is_streaming"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("} 1000.0", "} 0.0");
    assert!(matches!(
        counters_from_text(&before),
        Err(ScrapeFailure::GaugesOnly { .. })
    ));
    let r = window_result("http://h:1/metrics", counters_from_text(&before), Ok(c));
    assert_eq!(r.status, ResultStatus::Ok, "{:?}", r.error);
    assert_eq!(r.data.unwrap().accepted_tokens, 3200 - 30 - 1000);
}

#[test]
fn sglang_gauges_are_reported_as_gauges_without_a_delta() {
    let text = read_fixture("generated_sglang_multiproc.prom");
    let snapshot = parse_metrics(&text).unwrap();
    assert!(snapshot.counters.is_none());
    let g = snapshot.sglang.unwrap();
    assert_eq!(g.accept_length, Some(3.09));
    assert_eq!(g.accept_rate, Some(0.6973));
    assert_eq!(g.num_steps, Some(3.0));
    assert_eq!(g.num_draft_tokens, Some(4.0));
    assert_eq!(g.verify_calls_total, Some(2729.0));
    // Older SGLang: no request counter, so no window delta, and the reason names it.
    let failure = counters_from_text(&text).unwrap_err();
    assert_eq!(
        failure,
        ScrapeFailure::GaugesOnly {
            missing: vec!["sglang:num_requests_total".into()]
        }
    );
    assert!(failure.to_string().contains("sglang:num_requests_total"), "{failure}");
}

/// The window of a server from a zero "before" to the fixture's counters and gauges.
fn window_from_zero(text: &str) -> speclens_shared::scrape::SpecDecodeResult {
    let after = counters(text);
    let gauges = GaugeMeans::over([&after.gauges]);
    window_result_with("http://h:1/metrics", Ok(after.zeroed()), Ok(after), &gauges)
}

#[test]
fn tensorrt_llm_s_per_position_pair_gives_drafts_length_and_positions() {
    let text = read_fixture("written_trtllm_prometheus_per_position.prom");
    let c = counters(&text);
    assert_eq!(
        c.total.drafted_per_pos,
        [(0, 1000), (1, 1000), (2, 600)].into_iter().collect()
    );
    assert_eq!(
        c.total.accepted_per_pos,
        [(0, 800), (1, 550), (2, 240)].into_iter().collect()
    );
    assert_eq!(
        c.series.len(),
        1,
        "token_position is not part of the series: {:?}",
        c.series.keys()
    );
    let config = c.spec_config.clone().expect("trtllm_speculative_config_info");
    assert_eq!(
        (
            config.method.as_deref(),
            config.num_spec_tokens,
            config.draft_model.as_deref()
        ),
        (Some("Eagle3"), Some(3), Some("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"))
    );
    let d = window_from_zero(&text).data.expect("a window");
    // drafts = drafted at position 0; 2,600 draft tokens, 1,590 accepted.
    assert_eq!(
        (d.num_drafts, d.draft_tokens, d.accepted_tokens),
        (Some(1000), Some(2600), 1590)
    );
    assert_eq!(d.acceptance_length, Some(1.0 + 1590.0 / 1000.0));
    assert_eq!(d.acceptance_rate, Some(1590.0 / 2600.0 * 100.0));
    let rates: Vec<f64> = d.per_position_acceptance_rates.values().copied().collect();
    assert_eq!(
        rates,
        vec![0.8, 0.55, 0.24],
        "vLLM's definition: accepted at i ÷ drafts"
    );
    let notes = d.notes.join("\n");
    assert!(notes.contains("600 of 1000 drafts reached position 2"), "{notes}");
    assert!(notes.contains("2: 0.4000"), "conditional rate 240 ÷ 600: {notes}");
    assert!(
        notes.contains("acceptance rate of 60.22 %"),
        "the iteration counters' 1620 ÷ 2690: {notes}"
    );
    assert!(notes.contains("method Eagle3, k = 3"), "{notes}");
    assert_eq!(d.spec_config, Some(config));

    // A server whose pair has not appeared yet (no request finished) reads as zero before.
    let before = counters_from_text(
        &read_fixture("written_trtllm_prometheus_metrics.prom")
            .replace("trtllm_spec_decode_num", "trtllm_spec_decode_off"),
    );
    assert_eq!(before.unwrap_err(), ScrapeFailure::TrtllmNoSpec);
    let r = window_result(
        "http://h:1/prometheus/metrics",
        Err(ScrapeFailure::TrtllmNoSpec),
        Ok(counters(&text)),
    );
    assert_eq!(r.status, ResultStatus::Ok, "{:?}", r.error);
    assert_eq!(r.data.unwrap().num_drafts, Some(1000));
}

#[test]
fn tensorrt_llm_counters_give_a_rate_and_its_gauge_the_length() {
    let text = read_fixture("written_trtllm_prometheus_metrics.prom");
    let c = counters(&text);
    assert_eq!(
        (c.schema(), c.total.num_draft_tokens, c.total.num_accepted_tokens),
        (Engine::Trtllm, 9000, 5400)
    );
    let r = window_from_zero(&text);
    let d = r.data.expect("a window");
    assert_eq!(
        (d.num_drafts, d.draft_tokens, d.accepted_tokens),
        (None, Some(9000), 5400)
    );
    assert_eq!(d.acceptance_rate, Some(60.0));
    assert_eq!(
        d.acceptance_length,
        Some(2.8),
        "the acceptance-length gauge, not a delta"
    );
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("trtllm_spec_decode_acceptance_length")),
        "{:?}",
        d.notes
    );
    let json = serde_json::to_value(&d).unwrap();
    assert!(json["num_drafts"].is_null(), "no drafts counter: null, never 0");
    // Its /metrics is JSON; without enable_iter_perf_stats the text has no spec families.
    assert_eq!(
        counters_from_text("[{\"iter\": 1}]").unwrap_err(),
        ScrapeFailure::JsonBody
    );
    let plain = "trtllm_request_success_total{engine_type=\"pytorch\",model_name=\"m\"} 3\n";
    let failure = counters_from_text(plain).unwrap_err();
    assert_eq!(failure, ScrapeFailure::TrtllmNoSpec);
    assert!(failure.to_string().contains("enable_iter_perf_stats"));
    assert!(ScrapeFailure::TrtllmNotMounted
        .to_string()
        .contains("return_perf_metrics"));
}

#[test]
fn sglang_counters_give_the_window_length_in_both_conventions() {
    let text = read_fixture("written_sglang_spec_counters.prom");
    let c = counters(&text);
    assert_eq!(c.schema(), Engine::Sglang);
    assert_eq!(
        (c.total.num_drafts, c.total.generation_tokens, c.total.requests),
        (1000, Some(3100), Some(100))
    );
    let d = window_from_zero(&text).data.expect("a window");
    // (3100 − 100) / 1000 in ours; 3100 / 1000 in SGLang's.
    assert_eq!(d.acceptance_length, Some(3.0));
    assert_eq!(
        (d.num_drafts, d.draft_tokens, d.accepted_tokens),
        (Some(1000), None, 2000)
    );
    assert!(d.notes.iter().any(|n| n.contains("gives 3.10")), "{:?}", d.notes);
    assert!(
        (d.acceptance_rate.unwrap() - 65.0).abs() < 1e-9,
        "mean of the rate gauges"
    );
    // A counter that went down is a restart, named by its SGLang name.
    let mut before = c.clone();
    before.series.get_mut("").unwrap().generation_tokens = Some(5000);
    let reason = window_result("u", Ok(before), Ok(c)).error.unwrap();
    assert!(reason.contains("sglang:generation_tokens_total"), "{reason}");
}

#[test]
fn llama_cpp_rounded_counters_are_flagged_and_no_rate_exceeds_one() {
    let text = read_fixture("written_llamacpp_metrics.prom");
    let after = counters(&text);
    assert_eq!((after.schema(), after.rounded_max), (Engine::LlamaCpp, Some(3_703_700)));
    // One more draft, fully accepted at position 0, looks like nothing at 6 digits, while
    // position 1 grew by a rounding step: its rate would read 10 / 0.
    let mut before = after.clone();
    let series = before.series.get_mut("").unwrap();
    series.num_drafts -= 10;
    series.num_draft_tokens -= 30;
    series.num_accepted_tokens -= 10;
    series.accepted_per_pos.insert(1, 617_264);
    before.total = series.clone();
    let r = window_result("u", Ok(before), Ok(after));
    let d = r.data.expect("a window");
    assert!(
        d.notes.iter().any(|n| n.contains("6 significant digits")),
        "{:?}",
        d.notes
    );
    assert!(
        d.per_position_acceptance_rates.values().all(|r| *r <= 1.0),
        "{:?}",
        d.per_position_acceptance_rates
    );
    assert!(d.notes.iter().any(|n| n.contains("above 1")), "{:?}", d.notes);
    // Before the first draft llama.cpp has no spec families: the window starts from zero.
    let from_nothing = window_result_with(
        "u",
        Err(ScrapeFailure::NoSpecMetrics),
        Ok(counters(&text)),
        &GaugeMeans::default(),
    );
    assert_eq!(from_nothing.status, ResultStatus::Ok);
}

#[test]
fn impossible_vllm_counters_are_not_a_rate_above_100() {
    let before = single_vllm(spec(0, 0, 0, &[]));
    let after = single_vllm(spec(10, 10, 50, &[]));
    let r = window_result("u", Ok(before), Ok(after));
    assert_eq!(r.status, ResultStatus::Na);
    assert!(r.error.unwrap().contains("Impossible counters"));
}

fn single_vllm(c: SpecCounters) -> CounterSet {
    let text = format!(
        "vllm:spec_decode_num_drafts_total {}\nvllm:spec_decode_num_draft_tokens_total {}\nvllm:spec_decode_num_accepted_tokens_total {}\n",
        c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens
    );
    counters(&text)
}

/// The shapes of open pull requests, written from their code: SGLang's exact counts (summary,
/// and detailed with a ragged step), named as following the unmerged PR; mlx-vlm's rounds as a
/// length, (predicted_n − 1) ÷ draft_rounds, never one from predicted_n − draft_n_accepted.
#[test]
fn pending_shapes_follow_their_unmerged_prs() {
    use speclens_shared::request::per_request::SGLANG_PR34814;
    let payloads: serde_json::Value =
        serde_json::from_str(&json_fixture_text("written_pending_payloads.json")).unwrap();
    let PayloadOutcome::Record(summary) = adapt_response(&payloads["sglang_pr34814_summary"]) else {
        panic!("a full record from the exact counts")
    };
    assert_eq!(
        (
            summary.num_spec_steps,
            summary.num_draft_tokens,
            summary.num_accepted_draft_tokens
        ),
        (10, 40, 18)
    );
    assert_eq!(summary.mean_acceptance_length, 2.8);
    assert!(summary.acceptance_histogram.is_empty() && summary.per_step_accepted.is_none());
    assert_eq!(summary.unmerged_pr.as_deref(), Some(SGLANG_PR34814));
    let PayloadOutcome::Record(detailed) = adapt_response(&payloads["sglang_pr34814_detailed"]) else {
        panic!("a full record with per-step lists")
    };
    assert_eq!(detailed.per_step_drafted, Some(vec![4, 3, 4]));
    assert_eq!(detailed.per_step_accepted, Some(vec![4, 0, 1]));
    assert_eq!(
        detailed.acceptance_histogram,
        [(0, 1), (1, 1), (4, 1)].into_iter().collect()
    );
    assert_eq!(detailed.unmerged_pr.as_deref(), Some(SGLANG_PR34814));
    let PayloadOutcome::Partial(mlx) = adapt_response(&payloads["mlx_vlm_draft_rounds"]) else {
        panic!("a partial record")
    };
    // 40 tokens after the first in 16 rounds; steps taken as predicted_n − draft_n_accepted would
    // inflate it to 41 ÷ 11 = 3.73.
    assert_eq!(mlx.mean_acceptance_length, Some(2.5));
    assert_eq!(
        (mlx.num_accepted_draft_tokens, mlx.num_draft_tokens),
        (Some(30), Some(64))
    );
}

#[test]
fn released_engines_per_request_figures_are_partial_records() {
    let payloads: serde_json::Value = serde_json::from_str(&json_fixture_text("written_engine_payloads.json")).unwrap();
    let PayloadOutcome::Partial(trt) = adapt_response(&payloads["trtllm_released"]) else {
        panic!("TensorRT-LLM's avg_decoded_tokens_per_iter is a partial record")
    };
    assert_eq!(
        (trt.engine, trt.mean_acceptance_length, trt.num_draft_tokens),
        (Engine::Trtllm, Some(2.75), None)
    );
    let PayloadOutcome::Partial(llama) = adapt_response(&payloads["llamacpp"]) else {
        panic!("llama.cpp's timings are a partial record")
    };
    assert_eq!(
        (
            llama.engine,
            llama.num_accepted_draft_tokens,
            llama.num_draft_tokens,
            llama.mean_acceptance_length
        ),
        (Engine::LlamaCpp, Some(51), Some(96), None)
    );
    let PayloadOutcome::Record(both) = adapt_response(&payloads["sglang_n2"]) else {
        panic!("SGLang's n > 1 list is one record")
    };
    assert_eq!(
        (
            both.num_spec_steps,
            both.num_accepted_draft_tokens,
            both.num_draft_tokens
        ),
        (8, 9, 24)
    );
    assert_eq!(both.mean_acceptance_length, 2.125);
    assert_eq!(
        both.acceptance_histogram,
        [(0, 3), (1, 2), (2, 2), (3, 1)].into_iter().collect()
    );
    let mut scan = PayloadScan::new();
    scan.push(&serde_json::json!({"choices": [{"delta": {"content": "x"}}]}));
    scan.push(&payloads["sglang_stream_chunk"]);
    scan.push(&serde_json::json!({"choices": [], "usage": {"completion_tokens": 20}}));
    let PayloadOutcome::Record(streamed) = scan.finish() else {
        panic!("SGLang's own chunk carries the record")
    };
    assert_eq!((streamed.num_spec_steps, streamed.completion_tokens), (4, Some(20)));
}

#[test]
fn real_vllm_excerpt_cut_before_the_accepted_sample_is_incomplete() {
    let text = read_fixture("real_vllm_pr41916_metrics_excerpt.prom");
    let totals: BTreeMap<&str, f64> = prom::samples(&text)
        .map(Result::unwrap)
        .filter(|s| s.name.ends_with("_total"))
        .map(|s| (s.name, s.value))
        .collect();
    assert_eq!(totals["vllm:spec_decode_num_drafts_total"], 6_491_797.0);
    assert_eq!(totals["vllm:spec_decode_num_draft_tokens_total"], 6_491_797.0);
    let err = parse_metrics(&text).unwrap_err();
    assert!(matches!(err, Error::IncompleteCounters { .. }), "{err}");
    assert!(err.to_string().contains("vllm:spec_decode_num_accepted_tokens_total"));
}

#[test]
fn window_between_two_reference_snapshots() {
    // The multiprocess text holds the same counter values as the single-process one, so a window
    // between them saw no spec-decode activity.
    let before = counters(&read_fixture("generated_vllm_single.prom"));
    let after = counters(&read_fixture("generated_vllm_multiproc.prom"));
    let r = window_result("http://127.0.0.1:8000/metrics", Ok(before), Ok(after));
    assert_eq!(r.status, ResultStatus::Na);
    assert_eq!(r.error.as_deref(), Some(speclens_shared::scrape::NO_ACTIVITY));
}

#[test]
fn real_vllm_summary_payload() {
    let body: serde_json::Value = serde_json::from_str(
        &json_fixture_text("real_vllm_per_request_spec_decode_pr48915.json")
            .replace("[ ... ]", "[]")
            .replace("{ ... }", "{}"),
    )
    .unwrap();
    let PayloadOutcome::Record(r) = adapt_response(&body) else {
        panic!("no record")
    };
    assert_eq!(r.engine, Engine::Vllm);
    assert_eq!(r.mean_acceptance_length, 1.2325581395348837);
    assert_eq!(r.draft_acceptance_rate, 0.07751937984496124);
    assert_eq!(r.acceptance_histogram, [(0, 39), (1, 1), (3, 3)].into_iter().collect());
    assert_eq!(
        (
            r.num_spec_steps,
            r.num_accepted_draft_tokens,
            r.num_draft_tokens,
            r.num_spec_tokens
        ),
        (43, 10, 129, Some(3))
    );
}

#[test]
fn real_trtllm_choice_payload() {
    let choice: serde_json::Value =
        serde_json::from_str(&json_fixture_text("real_trtllm_per_choice_spec_decode_pr19311.json")).unwrap();
    let body = serde_json::json!({"choices": [choice]});
    let PayloadOutcome::Record(r) = adapt_response(&body) else {
        panic!("no record")
    };
    assert_eq!(r.engine, Engine::Trtllm);
    assert_eq!(r.mean_acceptance_length, 2.5);
    assert_eq!(r.acceptance_histogram, [(0, 8), (2, 6), (3, 6)].into_iter().collect());
}

#[test]
fn real_truncated_detailed_capture_is_a_clear_json_error_and_its_totals_are_consistent() {
    let text = read_fixture("real_vllm_per_request_spec_decode_detailed_syv66.txt");
    let body: String = text.lines().filter(|l| !l.starts_with('#')).collect();
    let err = serde_json::from_str::<serde_json::Value>(&body).unwrap_err();
    assert!(err.is_eof(), "the capture is cut inside per_step_accepted: {err}");
    // The complete fields before the cut satisfy every rule of docs/METRICS.md §2.5 for vLLM's summary.
    let summary = body.split(", \"per_step_accepted\"").next().unwrap().to_string() + "}";
    let stats: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let PayloadOutcome::Record(r) = adapt_response(&serde_json::json!({"metrics": {"speculative_decoding": stats}}))
    else {
        panic!("no record")
    };
    assert_eq!(
        (r.num_spec_steps, r.num_accepted_draft_tokens, r.num_draft_tokens),
        (33, 168, 231)
    );
    assert_eq!(r.mean_acceptance_length, 6.0909);
}

/// Each counting check fires on the fixture written from its upstream issue and stays quiet on
/// the clean ones.
#[test]
fn each_counting_check_fires_on_its_upstream_bug_and_stays_quiet_on_clean_fixtures() {
    use speclens_shared::request::counting::PastEndTally;
    let warnings = |bodies: &[&serde_json::Value]| {
        let mut tally = PastEndTally::default();
        for body in bodies {
            let PayloadOutcome::Record(r) = adapt_response(body) else {
                panic!("no record: {body}")
            };
            tally.push(&r);
        }
        tally.warnings()
    };
    let vllm: serde_json::Value =
        serde_json::from_str(&json_fixture_text("written_vllm_per_request_past_eos_56101.json")).unwrap();
    let buggy = warnings(&[&vllm["counted_past_eos"]]);
    assert!(
        buggy.len() == 1 && buggy[0].contains("1 of 1 vLLM requests") && buggy[0].contains("#56101"),
        "{buggy:?}"
    );
    assert_eq!(warnings(&[&vllm["counted_to_eos"]]), Vec::<String>::new());
    let sglang: serde_json::Value =
        serde_json::from_str(&json_fixture_text("written_sglang_spec_details_past_eos_39826.json")).unwrap();
    let buggy = warnings(&[&sglang]);
    assert!(
        buggy.len() == 1
            && buggy[0].contains("SGLang")
            && buggy[0].contains("#39826")
            && buggy[0].contains("accepted draft tokens alone exceed completion_tokens"),
        "{buggy:?}"
    );
    let payloads: serde_json::Value = serde_json::from_str(&json_fixture_text("written_engine_payloads.json")).unwrap();
    assert_eq!(warnings(&[&payloads["sglang_n2"]]), Vec::<String>::new());

    // TensorRT-LLM: the pair at 0 under rising iteration counters is named, in the window's
    // notes where the pair's absence would otherwise be; the clean expositions say nothing of it.
    let flat = window_from_zero(&read_fixture("written_trtllm_per_position_flat_17082.prom"))
        .data
        .expect("the iteration counters still give a window");
    assert!(
        flat.notes[0].starts_with("Counting check:") && flat.notes[0].contains("#17082"),
        "{:?}",
        flat.notes
    );
    assert_eq!((flat.num_drafts, flat.per_position_acceptance_rates.len()), (None, 0));
    for clean in [
        "written_trtllm_prometheus_per_position.prom",
        "written_trtllm_prometheus_metrics.prom",
    ] {
        let d = window_from_zero(&read_fixture(clean)).data.expect("a window");
        assert!(
            !d.notes.iter().any(|n| n.contains("Counting check")),
            "{clean}: {:?}",
            d.notes
        );
    }
}
