//! `speclens probe`: what a server is and what speclens can measure there, judged from one look
//! at its model list, its metrics text and one request's answer (the collector fetches them;
//! this module only reads them). The report names what will be measured, what cannot be and
//! the server option that would turn it on, and the next commands with the URL filled in.

use crate::engine::Engine;
use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::request::per_request::{adapt_response, PayloadOutcome};
use crate::run::notices::PER_REQUEST_HOW_TO;
use crate::run::record::NO_SPECULATION_HINT;
use crate::scrape::parse_metrics;
use crate::scrape::prom;

/// The spec-decode families speclens reads, by engine (sample names as exposed).
const FAMILIES: [(Engine, &[&str]); 4] = [
    (
        Engine::Vllm,
        &[
            "vllm:spec_decode_num_drafts_total",
            "vllm:spec_decode_num_draft_tokens_total",
            "vllm:spec_decode_num_accepted_tokens_total",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total",
        ],
    ),
    (
        Engine::LlamaCpp,
        &[
            "llamacpp:spec_decode_num_drafts_total",
            "llamacpp:spec_decode_num_draft_tokens_total",
            "llamacpp:spec_decode_num_accepted_tokens_total",
            "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
        ],
    ),
    (
        Engine::Trtllm,
        &[
            "trtllm_spec_decode_num_draft_tokens_total",
            "trtllm_spec_decode_num_accepted_tokens_total",
            "trtllm_spec_decode_acceptance_length",
        ],
    ),
    (
        Engine::Sglang,
        &[
            "sglang:spec_verify_calls_total",
            "sglang:generation_tokens_total",
            "sglang:num_requests_total",
            "sglang:spec_accept_length",
            "sglang:spec_accept_rate",
        ],
    ),
];

/// The server option that exports each engine's metrics.
fn metrics_option(engine: Option<Engine>) -> &'static str {
    match engine {
        Some(Engine::Sglang) => "SGLang exports them with --enable-metrics",
        Some(Engine::LlamaCpp) => "llama-server exports them with --metrics",
        Some(Engine::Trtllm) => {
            "trtllm-serve exports them at /prometheus/metrics with enable_iter_perf_stats: true in --extra_llm_api_options"
        }
        _ => "vLLM exports them at /metrics unless started with --disable-log-stats",
    }
}

/// What the collector saw of the server.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The server's base URL, redacted.
    pub url: String,
    /// `/v1/models`: each model's id and `owned_by`, or why it could not be read.
    pub models: Result<Vec<(String, Option<String>)>, String>,
    /// A version the server reports (vLLM's `/version`, llama.cpp's `/props`), if any.
    pub version: Option<String>,
    /// The metrics endpoint read and its text, or why it could not be read; with the note of
    /// a moved endpoint (TensorRT-LLM's `/prometheus/metrics`).
    pub metrics: Result<(String, String), String>,
    pub metrics_note: Option<String>,
    /// One small request's whole answer, or why it failed.
    pub answer: Result<Value, String>,
    /// The servers' drafts counter (or verify calls) before and after that request.
    pub drafts_before_after: Option<(u64, u64)>,
}

/// The probe's findings, as printed and as `--json` writes them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeReport {
    pub url: String,
    pub reachable: bool,
    /// The engine, from `owned_by` or from the metric names.
    pub engine: Option<Engine>,
    pub version: Option<String>,
    pub models: Vec<String>,
    pub metrics_url: Option<String>,
    /// Why the metrics could not be read, when they could not.
    pub metrics_error: Option<String>,
    pub metrics_note: Option<String>,
    /// Spec-decode families the metrics text exports, and those of its engine it lacks.
    pub spec_families: Vec<String>,
    pub missing_families: Vec<String>,
    /// `detailed` (per-step lists), `summary`, `partial` (a released engine's length or rate
    /// only), `none`, or `not probed` (the request failed).
    pub per_request: String,
    /// Whether the server speculates, when the evidence says; and the evidence.
    pub speculates: Option<bool>,
    pub evidence: String,
    /// What speclens will measure there, what it cannot (each with what turns it on), and the
    /// next commands.
    pub measures: Vec<String>,
    pub cannot: Vec<String>,
    pub next: Vec<String>,
}

impl ProbeReport {
    /// Judge what was seen.
    pub fn of(seen: &Seen) -> ProbeReport {
        let models: Vec<String> = seen
            .models
            .as_ref()
            .map(|m| m.iter().map(|(id, _)| id.clone()).collect())
            .unwrap_or_default();
        let owned_by = seen
            .models
            .as_ref()
            .ok()
            .and_then(|m| m.first())
            .and_then(|(_, o)| o.clone());
        let (metrics_url, metrics_error, names, schema) = match &seen.metrics {
            Ok((url, text)) => {
                let names: BTreeSet<String> = prom::samples(text)
                    .filter_map(Result::ok)
                    .map(|s| s.name.to_string())
                    .collect();
                let schema = parse_metrics(text).ok().and_then(|m| m.engine);
                (Some(url.clone()), None, names, schema)
            }
            Err(why) => (None, Some(why.clone()), BTreeSet::new(), None),
        };
        let expected: &[&str] = schema
            .and_then(|s| FAMILIES.iter().find(|(e, _)| *e == s))
            .map_or(&[], |(_, f)| f);
        let spec_families: Vec<String> = FAMILIES
            .iter()
            .flat_map(|(_, f)| f.iter())
            .filter(|f| names.contains(**f))
            .map(|f| f.to_string())
            .collect();
        let missing_families: Vec<String> = if spec_families.is_empty() {
            Vec::new()
        } else {
            expected
                .iter()
                .filter(|f| !names.contains(**f))
                .map(|f| f.to_string())
                .collect()
        };
        let engine = owned_by.as_deref().and_then(Engine::from_owned_by).or(schema);
        let (per_request, answer_evidence) = per_request_level(&seen.answer);
        let counter_delta = seen.drafts_before_after.map(|(a, b)| b.saturating_sub(a));
        let (speculates, evidence) = match (counter_delta, answer_evidence, spec_families.is_empty()) {
            (Some(d), _, _) if d > 0 => (Some(true), format!("the probe request added {d} to the draft counter")),
            (_, Some(evidence), _) => (Some(true), evidence),
            (_, None, false) => (
                Some(true),
                "its metrics export spec-decode families (the probe request drafted nothing)".to_string(),
            ),
            _ if metrics_error.is_none() => (
                Some(false),
                "no spec-decode family in its metrics and no per-request stats in its answer".to_string(),
            ),
            _ => (
                None,
                "its metrics could not be read and its answer carries no per-request stats".to_string(),
            ),
        };
        let reachable = seen.models.is_ok() || seen.answer.is_ok();
        let mut report = ProbeReport {
            url: seen.url.clone(),
            reachable,
            engine,
            version: seen.version.clone(),
            models,
            metrics_url,
            metrics_error,
            metrics_note: seen.metrics_note.clone(),
            spec_families,
            missing_families,
            per_request,
            speculates,
            evidence,
            measures: Vec::new(),
            cannot: Vec::new(),
            next: Vec::new(),
        };
        report.judge(seen, schema);
        report
    }

    /// What speclens will measure at the server, what it cannot (each with what turns it on),
    /// and the next commands, from what the report says of it.
    fn judge(&mut self, seen: &Seen, schema: Option<Engine>) {
        let (measures, cannot) = (&mut self.measures, &mut self.cannot);
        let (reachable, speculates, per_request) = (self.reachable, self.speculates, self.per_request.as_str());
        if !reachable {
            cannot.push(format!(
                "anything: the server did not answer ({}) — is it running, and is the URL its base address?",
                seen.models.as_ref().err().map_or("", String::as_str)
            ));
        } else if speculates == Some(false) {
            measures.push("latency and throughput (TTFT, TPOT, ITL, E2E) as vllm bench serve does".into());
            cannot.push(format!(
                "acceptance: {NO_SPECULATION_HINT} It can serve as a sweep's plain arm (--base-url)."
            ));
        } else {
            measures.push("latency and throughput (TTFT, TPOT, ITL, E2E) as vllm bench serve does".into());
            match (&self.metrics_error, self.spec_families.is_empty()) {
                (Some(why), _) => cannot.push(format!(
                    "the scrape path (acceptance from counters before and after a run): {why}; {}",
                    metrics_option(schema)
                )),
                (None, true) => cannot.push(format!(
                    "the scrape path: the metrics export no spec-decode family; {}",
                    metrics_option(schema)
                )),
                (None, false) => {
                    measures.push(format!(
                        "acceptance rate and length from the {} counters before and after each run, live every scrape interval",
                        schema.map_or("server's", Engine::name)
                    ));
                    if self.spec_families.iter().any(|f| f.ends_with("per_pos_total")) {
                        measures.push("acceptance by draft position".into());
                    } else if !self.missing_families.is_empty() {
                        cannot.push(format!(
                            "the figures of {} (not exported by this server)",
                            self.missing_families.join(", ")
                        ));
                    }
                }
            }
            match per_request {
                "detailed" | "summary" => measures.push(format!(
                    "per-request acceptance ({per_request}): distributions, histograms, acceptance per category"
                )),
                "partial" => {
                    measures.push("a per-request acceptance figure (a length or a rate, not full counts)".into());
                    cannot.push(format!("full per-request records: {}", how_to(self.engine)));
                }
                _ => cannot.push(format!("per-request stats: {}", how_to(self.engine))),
            }
        }
        let url = &seen.url;
        self.next = if !reachable {
            Vec::new()
        } else if speculates == Some(false) {
            vec![
                format!("speclens bench --url {url} --num-prompts 200 --concurrency 16"),
                format!("speclens sweep --spec-url <the speculative server> --base-url {url} --concurrency 1,4,16,64"),
            ]
        } else {
            vec![
                format!("speclens bench --url {url} --num-prompts 200 --concurrency 16"),
                format!("speclens accept --url {url} --dataset jsonl --dataset-path prompts.jsonl"),
                format!(
                    "speclens sweep --spec-url {url} --base-url <the same model served plain> --concurrency 1,4,16,64"
                ),
            ]
        };
    }

    /// The console text: what the server is, what is measured and what is not, and what next.
    pub fn text(&self) -> String {
        let mut out = format!("speclens probe {}\n", self.url);
        let line = |out: &mut String, label: &str, value: &str| out.push_str(&format!("  {label:<14}{value}\n"));
        line(&mut out, "reachable", if self.reachable { "yes" } else { "no" });
        let engine = match (self.engine, &self.version) {
            (Some(e), Some(v)) => format!("{} {v}", e.name()),
            (Some(e), None) => e.name().to_string(),
            (None, _) => "unknown (no owned_by, no engine metric names)".into(),
        };
        line(&mut out, "engine", &engine);
        line(
            &mut out,
            "models",
            &if self.models.is_empty() {
                "none listed".to_string()
            } else {
                self.models.join(", ")
            },
        );
        let metrics = match (&self.metrics_url, &self.metrics_error) {
            (Some(u), _) => u.clone(),
            (None, Some(e)) => format!("not read: {e}"),
            (None, None) => "not read".into(),
        };
        line(&mut out, "metrics", &metrics);
        if let Some(note) = &self.metrics_note {
            line(&mut out, "", note);
        }
        let families = if self.spec_families.is_empty() {
            "none".to_string()
        } else {
            self.spec_families.join(", ")
        };
        line(&mut out, "spec families", &families);
        if !self.missing_families.is_empty() {
            line(&mut out, "missing", &self.missing_families.join(", "));
        }
        line(&mut out, "per-request", &self.per_request);
        let speculates = match self.speculates {
            Some(true) => "yes",
            Some(false) => "no",
            None => "cannot tell",
        };
        line(&mut out, "speculates", &format!("{speculates} ({})", self.evidence));
        let list = |out: &mut String, title: &str, items: &[String]| {
            if !items.is_empty() {
                out.push_str(&format!("{title}\n"));
                for item in items {
                    out.push_str(&format!("  - {item}\n"));
                }
            }
        };
        list(&mut out, "speclens will measure:", &self.measures);
        list(&mut out, "speclens cannot measure:", &self.cannot);
        list(&mut out, "Next:", &self.next);
        out
    }
}

/// What turns per-request stats on for `engine` (every engine's way when it is not known).
fn how_to(engine: Option<Engine>) -> String {
    let prefix = match engine {
        Some(Engine::Vllm) => "vLLM:",
        Some(Engine::Sglang) => "SGLang:",
        Some(Engine::Trtllm) => "TensorRT-LLM:",
        Some(Engine::LlamaCpp) => {
            return "llama-server returns drafted and accepted tokens per request (timings), no steps: a rate, not a length".into()
        }
        _ => return PER_REQUEST_HOW_TO.to_string(),
    };
    PER_REQUEST_HOW_TO
        .split("; ")
        .find(|part| part.starts_with(prefix))
        .unwrap_or(PER_REQUEST_HOW_TO)
        .to_string()
}

/// The level of the probe request's per-request stats (`detailed`, `summary`, `partial`,
/// `none`, or `not probed`), and what they say of drafting, if anything.
fn per_request_level(answer: &Result<Value, String>) -> (String, Option<String>) {
    let drafted = |n: u64| (n > 0).then(|| format!("the probe request's answer counts {n} draft tokens"));
    match answer {
        Err(_) => ("not probed".to_string(), None),
        Ok(body) => match adapt_response(body) {
            PayloadOutcome::Record(r) if r.per_step_accepted.is_some() => {
                ("detailed".into(), drafted(r.num_draft_tokens))
            }
            PayloadOutcome::Record(r) => ("summary".into(), drafted(r.num_draft_tokens)),
            PayloadOutcome::Partial(p) => {
                let evidence = match (p.num_draft_tokens, p.mean_acceptance_length) {
                    (Some(n), _) => drafted(n),
                    (None, Some(e)) if e > 1.0 => Some(format!(
                        "the probe request's answer reports {e:.2} tokens per decoding iteration"
                    )),
                    _ => None,
                };
                ("partial".into(), evidence)
            }
            PayloadOutcome::NoStats | PayloadOutcome::Rejected(_) => ("none".into(), None),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(metrics: Result<&str, &str>, answer: Value, drafts: Option<(u64, u64)>) -> Seen {
        Seen {
            url: "http://127.0.0.1:8000".into(),
            models: Ok(vec![("m".into(), Some("vllm".into()))]),
            version: None,
            metrics: metrics
                .map(|t| ("http://127.0.0.1:8000/metrics".to_string(), t.to_string()))
                .map_err(str::to_string),
            metrics_note: None,
            answer: Ok(answer),
            drafts_before_after: drafts,
        }
    }

    const VLLM_NO_PER_POS: &str = "vllm:spec_decode_num_drafts_total{engine=\"0\"} 10.0\n\
        vllm:spec_decode_num_draft_tokens_total{engine=\"0\"} 30.0\n\
        vllm:spec_decode_num_accepted_tokens_total{engine=\"0\"} 20.0\n";

    #[test]
    fn a_speculating_vllm_without_per_position_counters_names_what_is_missing() {
        let report = ProbeReport::of(&seen(
            Ok(VLLM_NO_PER_POS),
            serde_json::json!({"choices": []}),
            Some((10, 14)),
        ));
        assert_eq!(report.speculates, Some(true));
        assert!(
            report.evidence.contains("added 4 to the draft counter"),
            "{}",
            report.evidence
        );
        assert_eq!(
            report.missing_families,
            ["vllm:spec_decode_num_accepted_tokens_per_pos_total"]
        );
        assert_eq!(report.per_request, "none");
        assert!(report
            .cannot
            .iter()
            .any(|c| c.contains("--per-request-spec-decode-metrics summary")));
        assert!(report.next[0].starts_with("speclens bench --url http://127.0.0.1:8000 "));
    }

    #[test]
    fn a_plain_server_is_named_plain_with_the_flags_that_turn_speculation_on() {
        let report = ProbeReport::of(&seen(
            Ok("vllm:num_requests_running 0.0\n"),
            serde_json::json!({}),
            None,
        ));
        assert_eq!(report.speculates, Some(false));
        assert!(report.cannot[0].contains("--speculative-config"), "{:?}", report.cannot);
        assert!(report.next[1].contains("--base-url http://127.0.0.1:8000"));
    }

    #[test]
    fn unreadable_metrics_are_named_with_the_option_that_exports_them() {
        let report = ProbeReport::of(&seen(Err("HTTP 404"), serde_json::json!({}), None));
        assert_eq!(report.speculates, None);
        assert!(
            report.text().contains("metrics       not read: HTTP 404"),
            "{}",
            report.text()
        );
    }
}
