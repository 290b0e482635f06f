//! The fleet path: spec-decode counters read through the Prometheus HTTP API instead of each
//! replica's `/metrics`. Parses the API's JSON answers and computes a benchmark window's growth
//! per series with `increase()`'s reset rule (a drop is a restart; the new value is growth since),
//! summed and broken down by instance, engine and model.
//!
//! Prometheus's own `increase()` extrapolates to the edges of its range, so its figure is not
//! the counters' growth (it is off by up to a scrape interval's worth of traffic, and fractional).
//! This module reads the stored samples instead and takes the growth from each series' last
//! sample at or before the window's start to its first sample at or after its end: the exact
//! growth whenever the counters are quiet at the edges, as they are around a benchmark.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::capped::CappedLog;
use crate::error::Error;
use crate::scrape::schema::{family_of, Family};
use crate::scrape::SpecCounters;

/// One series of an API answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiSeries {
    /// `__name__`.
    pub name: String,
    /// Every other label.
    pub labels: BTreeMap<String, String>,
    /// `(unix seconds, value)` in time order.
    pub samples: Vec<(f64, f64)>,
}

impl ApiSeries {
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }
}

fn api_error(message: impl Into<String>) -> Error {
    Error::PrometheusApi(message.into())
}

/// A sample's value as the API writes it: a string ("NaN", "+Inf" too), read straight into a
/// number (no text kept per sample).
struct SampleValue(f64);

impl<'de> Deserialize<'de> for SampleValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SampleValue, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = SampleValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sample value string")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SampleValue, E> {
                match text {
                    "+Inf" | "Inf" => Ok(SampleValue(f64::INFINITY)),
                    "-Inf" => Ok(SampleValue(f64::NEG_INFINITY)),
                    other => other
                        .parse()
                        .map(SampleValue)
                        .map_err(|_| E::custom(format!("sample value {other:?} is not a number"))),
                }
            }
        }
        d.deserialize_str(Visit)
    }
}

/// An API answer as it is read: typed, so a 60 MiB answer costs its series and samples (16
/// bytes a sample), not a tree of JSON values several times its size.
#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(rename = "errorType", default)]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<AnswerData>,
}

#[derive(Deserialize)]
struct AnswerData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<AnswerSeries>,
}

#[derive(Deserialize)]
struct AnswerSeries {
    metric: BTreeMap<String, String>,
    #[serde(default)]
    values: Option<Vec<(f64, SampleValue)>>,
    #[serde(default)]
    value: Option<(f64, SampleValue)>,
}

/// The series of a `/api/v1/query` or `/api/v1/query_range` answer (`matrix` or `vector`); an
/// answer with `"status": "error"` becomes its `errorType: error` text.
pub fn parse_api_answer(body: &str) -> Result<Vec<ApiSeries>, Error> {
    let answer: Answer = serde_json::from_str(body)
        .map_err(|e| api_error(format!("the answer is not a Prometheus API answer ({e})")))?;
    if answer.status != "success" {
        let kind = answer.error_type.as_deref().unwrap_or("error");
        let message = answer.error.as_deref().unwrap_or("no error text");
        return Err(api_error(format!("{kind}: {message}")));
    }
    let data = answer
        .data
        .ok_or_else(|| api_error("the answer has no data.result list"))?;
    let mut out = Vec::with_capacity(data.result.len());
    for r in data.result {
        let mut labels = r.metric;
        let name = labels.remove("__name__").unwrap_or_default();
        let samples: Vec<(f64, f64)> = match data.result_type.as_str() {
            "matrix" => r
                .values
                .ok_or_else(|| api_error("a matrix series has no values"))?
                .into_iter()
                .map(|(t, v)| (t, v.0))
                .collect(),
            "vector" => {
                let (t, v) = r.value.ok_or_else(|| api_error("a vector series has no value"))?;
                vec![(t, v.0)]
            }
            other => return Err(api_error(format!("result type {other:?}, expected matrix or vector"))),
        };
        out.push(ApiSeries { name, labels, samples });
    }
    Ok(out)
}

/// One counter's growth over a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    pub increase: f64,
    /// Drops seen (restarts), each counted as growth from zero.
    pub resets: u32,
    /// Whether a sample at or after the window's end was there (else the growth may be short).
    pub reaches_end: bool,
}

/// Growth of a counter from its last sample at or before `start_s` (its first sample when it
/// began inside the window) to its first sample at or after `end_s` (its last when Prometheus
/// has none after the end yet), with `increase()`'s reset rule. Non-finite samples are skipped;
/// `None` when no sample is left in that span.
pub fn counter_growth(samples: &[(f64, f64)], start_s: f64, end_s: f64) -> Option<Growth> {
    let finite: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(t, v)| t.is_finite() && v.is_finite())
        .collect();
    let first = finite.iter().rposition(|(t, _)| *t <= start_s).unwrap_or(0);
    let last = finite.iter().position(|(t, _)| *t >= end_s);
    let reaches_end = last.is_some();
    let last = last.unwrap_or(finite.len().checked_sub(1)?);
    if last < first {
        return None;
    }
    let span = &finite[first..=last];
    let (mut increase, mut resets) = (0.0, 0);
    for pair in span.windows(2) {
        let (was, now) = (pair[0].1, pair[1].1);
        if now >= was {
            increase += now - was;
        } else {
            increase += now;
            resets += 1;
        }
    }
    Some(Growth {
        increase,
        resets,
        reaches_end,
    })
}

/// Reason when the selector matches no spec-decode counter.
pub const NO_COUNTERS: &str = "No spec decode metrics found in Prometheus for this selector";

/// A window's growth through Prometheus: the fleet's total and its breakdowns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetWindow {
    /// `vllm:` or `llamacpp:`.
    pub prefix: String,
    pub total: SpecCounters,
    /// By the `instance` label (one scrape target each).
    pub by_instance: BTreeMap<String, SpecCounters>,
    /// By instance and `engine` (`host:port engine 0`).
    pub by_engine: BTreeMap<String, SpecCounters>,
    /// By `model_name`.
    pub by_model: BTreeMap<String, SpecCounters>,
    /// One line per series that restarted inside the window (the first few, then how many more).
    pub resets: Vec<String>,
    /// Series Prometheus had no sample of after the window's end (their growth may be short;
    /// the first few, then how many more).
    pub short: Vec<String>,
    /// How many series were short of samples (`short` lists the first few).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub short_count: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn series_text(s: &ApiSeries) -> String {
    let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{}{{{}}}", s.name, labels.join(","))
}

/// Sum the window's growth of every spec-decode counter series; an error when none is there.
pub fn fleet_window(series: &[ApiSeries], start_s: f64, end_s: f64) -> Result<FleetWindow, String> {
    let mut w = FleetWindow::default();
    let (mut resets, mut short) = (CappedLog::default(), CappedLog::default());
    for s in series {
        let Some((schema, family)) = family_of(&s.name) else {
            continue;
        };
        if w.prefix.is_empty() {
            w.prefix = schema.prefix().to_string();
        }
        let Some(g) = counter_growth(&s.samples, start_s, end_s) else {
            continue;
        };
        if !(g.increase >= 0.0 && g.increase < 2f64.powi(53)) {
            return Err(format!("{} grew by {}: not a counter", series_text(s), g.increase));
        }
        if g.resets > 0 {
            resets.record(|| {
                format!(
                    "{} restarted {} time(s) in the window: counted as growth from zero",
                    series_text(s),
                    g.resets
                )
            });
        }
        if !g.reaches_end {
            short.record(|| series_text(s));
        }
        let mut c = SpecCounters::default();
        let n = g.increase.round() as u64;
        match family {
            Family::Drafts => c.num_drafts = n,
            Family::DraftTokens => c.num_draft_tokens = n,
            Family::Accepted => c.num_accepted_tokens = n,
            Family::PerPos => {
                let Ok(pos) = s.label("position").parse::<u32>() else {
                    return Err(format!("{} has no numeric position label", series_text(s)));
                };
                c.accepted_per_pos.insert(pos, n);
            }
            // SGLang's counters and TensorRT-LLM's per-position pair are not among the families
            // this path queries.
            Family::Generation | Family::Requests | Family::DraftedPerPos => continue,
        }
        w.total.add(&c);
        w.by_instance
            .entry(s.label("instance").to_string())
            .or_default()
            .add(&c);
        let engine = format!("{} engine {}", s.label("instance"), s.label("engine"));
        w.by_engine.entry(engine).or_default().add(&c);
        w.by_model.entry(s.label("model_name").to_string()).or_default().add(&c);
    }
    if w.prefix.is_empty() {
        return Err(NO_COUNTERS.into());
    }
    w.resets = resets.lines("", "series restarts");
    w.short = short.lines("", "series short of samples");
    w.short_count = short.count;
    Ok(w)
}

/// The PromQL selector of every spec-decode counter, narrowed by the user's `{…}` matchers
/// (`{job="vllm",model_name="…"}`; empty for none).
pub fn counters_selector(user_selector: &str) -> Result<String, String> {
    selector_for(
        user_selector,
        "drafts|draft_tokens|accepted_tokens|accepted_tokens_per_pos",
    )
}

/// The counters whose names are `spec_decode_num_<one of families>_total` (a regex alternation:
/// `drafts`, `draft_tokens`, `accepted_tokens`, `accepted_tokens_per_pos`), narrowed likewise.
pub fn selector_for(user_selector: &str, families: &str) -> Result<String, String> {
    narrowed(
        user_selector,
        &format!(r#"__name__=~"(vllm|llamacpp):spec_decode_num_({families})_total""#),
    )
}

/// `{__name__="<name>", <the user's matchers>}`.
pub fn metric_selector(user_selector: &str, name: &str) -> Result<String, String> {
    narrowed(user_selector, &format!(r#"__name__="{name}""#))
}

/// `{<first>, <the user's matchers>}`; the user's selector must be `{…}` or empty.
fn narrowed(user_selector: &str, first: &str) -> Result<String, String> {
    let inner = user_selector.trim();
    let inner = if inner.is_empty() {
        ""
    } else {
        inner
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .ok_or_else(|| {
                format!("series selector {inner:?} must be label matchers in braces, e.g. {{job=\"vllm\"}}")
            })?
            .trim()
    };
    Ok(if inner.is_empty() {
        format!("{{{first}}}")
    } else {
        format!("{{{first},{inner}}}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_and_errors_carry_their_text() {
        let body = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"vllm:spec_decode_num_drafts_total","instance":"a:1","engine":"0","model_name":"m"},
             "values":[[100,"5"],[101.5,"7"],[103,"NaN"]]}]}}"#;
        let s = parse_api_answer(body).unwrap();
        assert_eq!(s[0].name, "vllm:spec_decode_num_drafts_total");
        assert_eq!(s[0].label("instance"), "a:1");
        assert_eq!(s[0].samples[1], (101.5, 7.0));
        assert!(s[0].samples[2].1.is_nan());
        let err = parse_api_answer(r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#);
        assert_eq!(
            err.unwrap_err().to_string(),
            "Prometheus API: bad_data: parse error at char 3"
        );
        assert!(parse_api_answer("<html>").is_err());
        let vector =
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[5,"+Inf"]}]}}"#;
        assert_eq!(parse_api_answer(vector).unwrap()[0].samples, vec![(5.0, f64::INFINITY)]);
    }

    #[test]
    fn growth_runs_from_the_last_sample_before_to_the_first_after_with_resets() {
        let samples = [
            (0.0, 10.0),
            (5.0, 10.0),
            (10.0, 25.0),
            (15.0, 4.0),
            (20.0, 9.0),
            (25.0, 9.0),
            (30.0, 50.0),
        ];
        // Window 6..21: from (5, 10) to (25, 9): +15, restart (+4), +5, +0 = 24.
        let g = counter_growth(&samples, 6.0, 21.0).unwrap();
        assert_eq!((g.increase, g.resets, g.reaches_end), (24.0, 1, true));
        // Traffic after the end is not counted; a window past the data is short.
        assert_eq!(counter_growth(&samples, 0.0, 10.0).unwrap().increase, 15.0);
        assert!(!counter_growth(&samples, 0.0, 99.0).unwrap().reaches_end);
        assert_eq!(counter_growth(&[], 0.0, 1.0), None);
    }

    #[test]
    fn the_window_sums_and_breaks_down_by_instance_engine_and_model() {
        let series = |name: &str, instance: &str, engine: &str, pos: Option<u32>, a: f64, b: f64| {
            let mut labels: BTreeMap<String, String> =
                [("instance", instance), ("engine", engine), ("model_name", "m")]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
            if let Some(p) = pos {
                labels.insert("position".into(), p.to_string());
            }
            ApiSeries {
                name: format!("vllm:spec_decode_{name}_total"),
                labels,
                samples: vec![(0.0, a), (10.0, b)],
            }
        };
        let all = [
            series("num_drafts", "a:1", "0", None, 0.0, 10.0),
            series("num_drafts", "a:1", "1", None, 5.0, 15.0),
            series("num_drafts", "b:2", "0", None, 0.0, 20.0),
            series("num_draft_tokens", "a:1", "0", None, 0.0, 30.0),
            series("num_accepted_tokens", "a:1", "0", None, 0.0, 12.0),
            series("num_accepted_tokens_per_pos", "a:1", "0", Some(0), 0.0, 8.0),
            series("num_accepted_tokens_per_pos", "b:2", "0", Some(0), 0.0, 3.0),
        ];
        let w = fleet_window(&all, 1.0, 9.0).unwrap();
        assert_eq!(w.total.num_drafts, 40);
        assert_eq!(w.by_instance["a:1"].num_drafts, 20);
        assert_eq!(w.by_engine["a:1 engine 1"].num_drafts, 10);
        assert_eq!(w.by_model["m"].num_accepted_tokens, 12);
        assert_eq!(w.total.accepted_per_pos[&0], 11);
        assert!(w.resets.is_empty() && w.short.is_empty());
        assert!(fleet_window(&[], 0.0, 1.0)
            .unwrap_err()
            .contains("No spec decode metrics"));
    }

    #[test]
    fn selectors_narrow_the_counter_names() {
        assert_eq!(
            counters_selector(r#"{job="vllm"}"#).unwrap(),
            r#"{__name__=~"(vllm|llamacpp):spec_decode_num_(drafts|draft_tokens|accepted_tokens|accepted_tokens_per_pos)_total",job="vllm"}"#
        );
        assert!(counters_selector("").unwrap().starts_with("{__name__=~"));
        assert!(counters_selector("job=vllm").is_err());
        assert_eq!(
            metric_selector("{a=\"b\"}", "sglang:spec_accept_rate").unwrap(),
            r#"{__name__="sglang:spec_accept_rate",a="b"}"#
        );
    }
}
