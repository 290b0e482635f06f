//! One server's window result: its two phases' scrapes combined into AISBench's
//! `spec_decode_<label>.json` value, and its console block.

use crate::engine::Engine;
use serde::{Deserialize, Serialize};

use super::counters::{CounterSet, SpecCounters};
use super::derive::{derive, window_delta, SpecDecodeData, WindowFacts};
use super::gauges::GaugeMeans;
use super::parse::ScrapeFailure;

/// `ok` iff the result carries data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultStatus {
    Ok,
    Na,
}

/// The raw counters of the two phases (null for a phase that failed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawPhases {
    pub before: Option<SpecCounters>,
    pub after: Option<SpecCounters>,
}

/// One server's window result, AISBench's `performances/spec_decode_<label>.json` shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeResult {
    pub status: ResultStatus,
    pub url: String,
    pub error: Option<String>,
    pub data: Option<SpecDecodeData>,
    pub raw: RawPhases,
}

/// Combine the two phases' scrapes of one server into its window result (vLLM's schema, or
/// one whose gauges are not needed).
pub fn window_result(
    url: &str,
    before: Result<CounterSet, ScrapeFailure>,
    after: Result<CounterSet, ScrapeFailure>,
) -> SpecDecodeResult {
    window_result_with(url, before, after, &GaugeMeans::default())
}

/// The "before" snapshot a window is measured from. llama.cpp adds its spec-decode families once
/// something was drafted, TensorRT-LLM its per-position pair and SGLang 0.5.23 its
/// `is_streaming` label sets once a request finished: when "before" lacks them and "after" has
/// them, they were zero then.
pub fn window_before(
    before: Result<CounterSet, ScrapeFailure>,
    after: &Result<CounterSet, ScrapeFailure>,
) -> Result<CounterSet, ScrapeFailure> {
    match (before, after) {
        (Err(ScrapeFailure::NoSpecMetrics), Ok(a)) if a.schema() == Engine::LlamaCpp => Ok(a.zeroed()),
        (Err(ScrapeFailure::GaugesOnly { .. }), Ok(a)) if a.schema() == Engine::Sglang => Ok(a.zeroed()),
        (Err(ScrapeFailure::TrtllmNoSpec), Ok(a))
            if a.schema() == Engine::Trtllm && a.total.drafted_per_pos.contains_key(&0) =>
        {
            Ok(a.zeroed())
        }
        (before, _) => before,
    }
}

/// Combine the two phases' scrapes of one server, and its gauges over the window, into its
/// window result.
pub fn window_result_with(
    url: &str,
    before: Result<CounterSet, ScrapeFailure>,
    after: Result<CounterSet, ScrapeFailure>,
    gauges: &GaugeMeans,
) -> SpecDecodeResult {
    let before = window_before(before, &after);
    let raw = RawPhases {
        before: before.as_ref().ok().map(|c| c.total.clone()),
        after: after.as_ref().ok().map(|c| c.total.clone()),
    };
    let outcome = match (&before, &after) {
        (Ok(b), Ok(a)) => window_delta(b, a)
            .and_then(|d| derive(a.schema(), &d, &WindowFacts::between(b, a, gauges)))
            .map_err(|e| e.to_string()),
        _ => {
            let mut reasons = Vec::new();
            if let Err(e) = &before {
                reasons.push(format!("[before] {e}"));
            }
            if let Err(e) = &after {
                reasons.push(format!("[after] {e}"));
            }
            Err(reasons.join("; "))
        }
    };
    match outcome {
        Ok(data) => SpecDecodeResult {
            status: ResultStatus::Ok,
            url: url.to_string(),
            error: None,
            data: Some(data),
            raw,
        },
        Err(reason) => SpecDecodeResult {
            status: ResultStatus::Na,
            url: url.to_string(),
            error: Some(reason),
            data: None,
            raw,
        },
    }
}

/// The AISBench console block for one server (starts with an empty line, ends without one).
pub fn console_block(host_port: &str, result: &SpecDecodeResult) -> String {
    let title = format!("========== Speculative Decoding Metrics  [{host_port}] ==========");
    let frame = "=".repeat(title.chars().count().saturating_sub(2));
    let mut out = format!("\n{frame}\n{title}\n{frame}\n");
    let mut row = |label: &str, value: String| out.push_str(&format!("{label:<45} {value}\n"));
    match &result.data {
        Some(d) => {
            let or_na = |v: Option<String>| v.unwrap_or_else(|| "N/A".to_string());
            row("Acceptance rate (%)", d.rate_text());
            row("Acceptance length", d.length_text());
            row("Drafts", or_na(d.num_drafts.map(|v| v.to_string())));
            row("Draft tokens", or_na(d.draft_tokens.map(|v| v.to_string())));
            row("Accepted tokens", d.accepted_tokens.to_string());
            let per_pos: Vec<String> = d
                .per_position_acceptance_rates
                .iter()
                .map(|(p, r)| format!("{p}: {r:.4}"))
                .collect();
            row("Per-position acceptance rates", format!("{{{}}}", per_pos.join(", ")));
            for note in &d.notes {
                row("Note", note.clone());
            }
        }
        None => {
            row("Status", "N/A".to_string());
            if let Some(reason) = &result.error {
                row("Reason", reason.clone());
            }
        }
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scrape::derive::derive_since_start;
    use crate::scrape::parse::parse_metrics;
    use crate::scrape::testing::{counters, single};
    use crate::scrape::ResultStatus;

    #[test]
    fn counter_that_went_down_is_reported_never_negative() {
        let before = single(counters(100, 300, 200, &[80]));
        let after = single(counters(40, 120, 90, &[30]));
        let reason = window_delta(&before, &after).unwrap_err().to_string();
        assert!(
            reason.contains("vllm:spec_decode_num_drafts_total{engine=\"0\"} went down from 100 to 40"),
            "{reason}"
        );
        let r = window_result("http://h:1/metrics", Ok(before), Ok(after));
        assert_eq!(r.status, ResultStatus::Na);
        assert!(r.data.is_none());
        assert!(r.raw.before.is_some() && r.raw.after.is_some());
    }

    #[test]
    fn phase_errors_are_prefixed_and_joined() {
        let r = window_result(
            "u",
            Err(ScrapeFailure::NoSpecMetrics),
            Err(ScrapeFailure::NoSpecMetrics),
        );
        assert_eq!(
            r.error.as_deref(),
            Some("[before] No spec decode metrics found on server; [after] No spec decode metrics found on server")
        );
        let r = window_result("u", Ok(single(counters(1, 1, 1, &[]))), Err(ScrapeFailure::Http(503)));
        assert_eq!(r.error.as_deref(), Some("[after] Metrics endpoint returned HTTP 503"));
        assert!(r.raw.before.is_some() && r.raw.after.is_none());
    }

    #[test]
    fn result_json_has_spec_key_order() {
        let before = single(counters(100, 500, 300, &[100, 90]));
        let after = single(counters(15520, 77600, 50415, &[15520, 13968]));
        let r = window_result("http://10.0.0.1:8080/metrics", Ok(before), Ok(after));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.starts_with(
            r#"{"status":"ok","url":"http://10.0.0.1:8080/metrics","error":null,"data":{"num_drafts":15420,"draft_tokens":77100,"accepted_tokens":50115,"acceptance_rate":65.0,"acceptance_length":4.25,"per_position_acceptance_rates":{"0":1.0,"1":0.9}},"raw":{"before":{"num_drafts":100,"num_draft_tokens":500,"num_accepted_tokens":300,"accepted_per_pos":{"0":100,"1":90}}"#
        ), "{json}");
        let back: SpecDecodeResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn console_block_matches_aisbench_layout() {
        let before = single(counters(100, 500, 300, &[100, 90, 75, 50, 30]));
        let after = single(counters(15520, 77600, 50415, &[15520, 13968, 11640, 7760, 4656]));
        let r = window_result("http://10.0.0.1:8080/metrics", Ok(before), Ok(after));
        let want = "
=================================================================
========== Speculative Decoding Metrics  [10.0.0.1:8080] ==========
=================================================================
Acceptance rate (%)                           65.00
Acceptance length                             4.25
Drafts                                        15420
Draft tokens                                  77100
Accepted tokens                               50115
Per-position acceptance rates                 {0: 1.0000, 1: 0.9000, 2: 0.7500, 3: 0.5000, 4: 0.3000}";
        assert_eq!(console_block("10.0.0.1:8080", &r), want);
        let na = window_result("u", Err(ScrapeFailure::Http(500)), Err(ScrapeFailure::Http(500)));
        let block = console_block("h:1", &na);
        assert!(block.ends_with("Status                                        N/A\nReason                                        [before] Metrics endpoint returned HTTP 500; [after] Metrics endpoint returned HTTP 500"), "{block}");
    }

    #[test]
    fn a_missing_family_voids_only_the_figures_that_need_it() {
        let no_drafts = "vllm:spec_decode_num_draft_tokens_total 30\nvllm:spec_decode_num_accepted_tokens_total 12\n";
        let c = parse_metrics(no_drafts).unwrap().counters.unwrap();
        assert_eq!(c.missing, vec!["vllm:spec_decode_num_drafts_total".to_string()]);
        let d = derive_since_start(&c).unwrap();
        assert_eq!(
            (d.num_drafts, d.draft_tokens, d.acceptance_rate, d.acceptance_length),
            (None, Some(30), Some(40.0), None)
        );
        assert!(
            d.notes[0].contains("vllm:spec_decode_num_drafts_total"),
            "{:?}",
            d.notes
        );
        let no_tokens = "vllm:spec_decode_num_drafts_total 10\nvllm:spec_decode_num_accepted_tokens_total 12\n";
        let c = parse_metrics(no_tokens).unwrap().counters.unwrap();
        let d = derive_since_start(&c).unwrap();
        assert_eq!(
            (d.num_drafts, d.draft_tokens, d.acceptance_rate, d.acceptance_length),
            (Some(10), None, None, Some(2.2))
        );
        // The window between two such scrapes keeps the reason.
        let r = window_result("u", Ok(c.zeroed()), Ok(c));
        assert!(r.data.unwrap().notes[0].contains("num_draft_tokens_total"));
    }
}
