//! A `/metrics` text read into its spec-decode snapshot: the counters of one engine's schema
//! (checked: one engine, no duplicate series, whole non-negative values), SGLang's gauges, and
//! the failure a phase reports when a scrape gives no counters.

use crate::engine::Engine;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::counters::{series_key, with_position, CounterSet, SpecConfig, SpecCounters};
use super::gauges::GaugeMean;
use super::schema::{
    counter_family, family_name, position_label, required, Family, ENGINE_GAUGES, TRTLLM_SPEC_CONFIG_INFO,
};
use crate::error::Error;
use crate::scrape::prom::{self, Sample};

/// SGLang's spec-decode gauges, each the mean over label sets (ranks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SglangGauges {
    /// `sglang:spec_accept_length`, mean over label sets (ranks).
    pub accept_length: Option<f64>,
    /// `sglang:spec_accept_rate` (a fraction), mean over label sets.
    pub accept_rate: Option<f64>,
    /// `sglang:spec_num_steps`, mean over label sets.
    pub num_steps: Option<f64>,
    /// `sglang:spec_num_draft_tokens`, mean over label sets.
    pub num_draft_tokens: Option<f64>,
    /// `sglang:spec_verify_calls_total`, summed over label sets.
    pub verify_calls_total: Option<f64>,
    /// DSpark's `sglang:spec_cap_length` (SGLang 0.5.23), mean over label sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_length: Option<f64>,
    /// DSpark's `sglang:spec_block_accept_length`, mean over label sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_accept_length: Option<f64>,
}

impl SglangGauges {
    /// SGLang's gauges among a scrape's gauge means, with its verify-call total; `None` when the
    /// scrape has none of them.
    fn of(gauge_means: &BTreeMap<String, f64>, verify_calls_total: Option<f64>) -> Option<SglangGauges> {
        let gauge = |name: &str| gauge_means.get(name).copied();
        let sglang = SglangGauges {
            accept_length: gauge("sglang:spec_accept_length"),
            accept_rate: gauge("sglang:spec_accept_rate"),
            num_steps: gauge("sglang:spec_num_steps"),
            num_draft_tokens: gauge("sglang:spec_num_draft_tokens"),
            verify_calls_total,
            cap_length: gauge("sglang:spec_cap_length"),
            block_accept_length: gauge("sglang:spec_block_accept_length"),
        };
        (sglang != SglangGauges::default()).then_some(sglang)
    }
}

/// Everything spec-decode related in one scrape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsSnapshot {
    pub counters: Option<CounterSet>,
    pub sglang: Option<SglangGauges>,
    /// The engine whose metric names the text holds (`vllm:`, `sglang:`, `trtllm_`,
    /// `llamacpp:`), spec-decode or not: it names the server option a missing family needs.
    #[serde(default)]
    pub engine: Option<Engine>,
    /// SGLang's counters a window needs that the text lacks (it then has only gauges).
    #[serde(default)]
    pub sglang_missing: Vec<String>,
}

/// A counter value as an exact non-negative integer; NaN means "skip this sample".
fn counter_value(sample: &Sample<'_>, key: &str) -> Result<Option<u64>, Error> {
    let v = sample.value;
    let fail = |message: &str| Error::CounterValue {
        metric: sample.name.to_string(),
        labels: key.to_string(),
        message: message.to_string(),
    };
    if v.is_nan() {
        return Ok(None);
    }
    if v.is_infinite() {
        return Err(fail("cannot convert infinity to a counter value"));
    }
    if v < 0.0 {
        return Err(fail("negative counter value"));
    }
    if v.fract() != 0.0 || v >= 18_446_744_073_709_551_616.0 {
        return Err(fail("counter value is not a whole number of tokens"));
    }
    Ok(Some(v as u64))
}

/// llama.cpp prints counters with 6 significant digits: from 1e6 on, a value is rounded.
const LLAMACPP_EXACT_BELOW: u64 = 1_000_000;

/// Parse a Prometheus text exposition into its spec-decode snapshot.
///
/// Only `_total` samples of the counter families are read (the `_created` gauges that follow
/// them are not counters); every other line is checked for syntax and ignored, but for the
/// engine gauges of [`ENGINE_GAUGES`].
pub fn parse_metrics(text: &str) -> Result<MetricsSnapshot, Error> {
    let mut series: BTreeMap<String, SpecCounters> = BTreeMap::new();
    let mut seen: BTreeSet<(Family, String, u32)> = BTreeSet::new();
    let mut families: BTreeSet<Family> = BTreeSet::new();
    let mut schema: Option<Engine> = None;
    let mut gauges: BTreeMap<&'static str, GaugeMean> = BTreeMap::new();
    let mut engine: Option<Engine> = None;
    let mut largest = 0u64;
    let mut spec_config: Option<SpecConfig> = None;

    for sample in prom::samples(text) {
        let sample = sample?;
        if engine.is_none() {
            engine = Engine::of_metric_name(sample.name);
        }
        if let Some(name) = ENGINE_GAUGES.iter().find(|g| **g == sample.name) {
            gauges.entry(name).or_default().push(sample.value);
            continue;
        }
        if sample.name == TRTLLM_SPEC_CONFIG_INFO {
            spec_config = Some(spec_config_of(&sample));
            continue;
        }
        let Some((this_schema, family)) = counter_family(sample.name) else {
            continue;
        };
        let first = *schema.get_or_insert(this_schema);
        if first != this_schema {
            return Err(Error::Exposition {
                line: sample.line,
                message: format!(
                    "spec decode counters of two engines ({} and {}) in one exposition",
                    first.prefix(),
                    this_schema.prefix()
                ),
            });
        }
        // SGLang's families carry different labels: they are summed into one series.
        let sglang = this_schema == Engine::Sglang;
        let key = if sglang { String::new() } else { series_key(&sample) };
        let position = match family {
            Family::PerPos | Family::DraftedPerPos => draft_position(&sample, position_label(this_schema))?,
            _ => 0,
        };
        if !sglang && !seen.insert((family, key.clone(), position)) {
            let labels = match family {
                Family::PerPos | Family::DraftedPerPos => with_position(&key, position_label(this_schema), position),
                _ => key,
            };
            return Err(Error::DuplicateSample {
                metric: sample.name.to_string(),
                labels,
            });
        }
        let Some(value) = counter_value(&sample, &key)? else {
            continue;
        };
        largest = largest.max(value);
        families.insert(family);
        store(series.entry(key).or_default(), family, sglang, position, value);
    }

    let gauge_means: BTreeMap<String, f64> = gauges
        .iter()
        .filter_map(|(name, g)| g.mean().map(|m| (name.to_string(), m)))
        .collect();
    let verify_calls = series
        .get("")
        .filter(|_| schema == Some(Engine::Sglang) && families.contains(&Family::Drafts))
        .map(|c| c.num_drafts as f64);
    let sglang = SglangGauges::of(&gauge_means, verify_calls);
    let (mut counters, sglang_missing) = counter_set(schema, &families, series, &gauge_means, largest)?;
    if let Some(c) = counters.as_mut() {
        c.spec_config = spec_config;
    }
    Ok(MetricsSnapshot {
        counters,
        sglang,
        engine,
        sglang_missing,
    })
}

/// One sample's value in its series: SGLang's label sets are summed into one series, as are
/// every engine's generation and request counters; the rest are one sample a series.
fn store(entry: &mut SpecCounters, family: Family, sglang: bool, position: u32, value: u64) {
    let add = |slot: &mut Option<u64>| *slot = Some(slot.unwrap_or(0).saturating_add(value));
    match family {
        Family::Drafts if sglang => entry.num_drafts = entry.num_drafts.saturating_add(value),
        Family::Drafts => entry.num_drafts = value,
        Family::DraftTokens => entry.num_draft_tokens = value,
        Family::Accepted => entry.num_accepted_tokens = value,
        Family::PerPos => {
            entry.accepted_per_pos.insert(position, value);
        }
        Family::DraftedPerPos => {
            entry.drafted_per_pos.insert(position, value);
        }
        Family::Generation => add(&mut entry.generation_tokens),
        Family::Requests => add(&mut entry.requests),
    }
}

/// The counter set of one exposition's spec-decode families, with the SGLang families it lacks
/// when they make no figure; `None` without counters (or a plain SGLang server's).
fn counter_set(
    schema: Option<Engine>,
    families: &BTreeSet<Family>,
    series: BTreeMap<String, SpecCounters>,
    gauge_means: &BTreeMap<String, f64>,
    largest: u64,
) -> Result<(Option<CounterSet>, Vec<String>), Error> {
    let mut sglang_missing = Vec::new();
    let counters = match schema {
        Some(schema) if !families.is_empty() => {
            let prefix = schema.prefix();
            let missing: Vec<String> = required(schema)
                .iter()
                .filter(|f| !families.contains(f))
                .map(|f| format!("{prefix}{}", family_name(schema, *f)))
                .collect();
            if schema == Engine::Sglang && !families.contains(&Family::Drafts) {
                // Generation and request counters alone: a plain SGLang server.
                None
            } else if schema == Engine::Sglang && !missing.is_empty() {
                sglang_missing = missing;
                None
            } else if match schema {
                // Without accepted tokens no figure of vLLM's schema stands; TensorRT-LLM needs its
                // iteration counters or its per-position pair; SGLang needs all.
                Engine::Vllm | Engine::LlamaCpp => !families.contains(&Family::Accepted),
                Engine::Trtllm => !missing.is_empty() && !families.contains(&Family::DraftedPerPos),
                Engine::Sglang => !missing.is_empty(),
            } {
                // Without accepted tokens no figure stands.
                return Err(Error::IncompleteCounters {
                    missing: missing.join(", "),
                });
            } else {
                let mut total = SpecCounters::default();
                for counters in series.values() {
                    total.add(counters);
                }
                let rounded_max = (schema == Engine::LlamaCpp && largest >= LLAMACPP_EXACT_BELOW).then_some(largest);
                let schema_gauges = gauge_means
                    .iter()
                    .filter(|(name, _)| name.starts_with(prefix))
                    .map(|(n, v)| (n.clone(), *v))
                    .collect();
                Some(CounterSet {
                    prefix: prefix.to_string(),
                    total,
                    series,
                    gauges: schema_gauges,
                    rounded_max,
                    missing,
                    spec_config: None,
                })
            }
        }
        _ => None,
    };
    Ok((counters, sglang_missing))
}

/// A per-position sample's position label (`position`, TensorRT-LLM's `token_position`), as a
/// draft position.
fn draft_position(sample: &prom::Sample<'_>, label: &str) -> Result<u32, Error> {
    let Some(pos) = sample.label(label) else {
        return Err(Error::Exposition {
            line: sample.line,
            message: format!("{} sample without a {label} label", sample.name),
        });
    };
    pos.parse::<u32>().map_err(|_| Error::Exposition {
        line: sample.line,
        message: format!("position label {pos:?} is not a draft position"),
    })
}

/// The speculative config in the labels of TensorRT-LLM's info gauge; a `spec_num_tokens` that
/// is not a whole number is left out rather than guessed.
fn spec_config_of(sample: &prom::Sample<'_>) -> SpecConfig {
    let label = |name: &str| sample.label(name).map(|v| v.into_owned()).filter(|v| !v.is_empty());
    SpecConfig {
        method: label("spec_method"),
        num_spec_tokens: label("spec_num_tokens").and_then(|v| v.parse().ok()),
        draft_model: label("spec_draft_model"),
    }
}

/// Why one phase's scrape produced no counters.
#[derive(Debug, Clone, PartialEq)]
pub enum ScrapeFailure {
    /// The endpoint answered with a non-success status.
    Http(u16),
    /// The connection or the read failed.
    Fetch { url: String, cause: String },
    /// The text could not be parsed.
    Invalid(Error),
    /// The text parsed but holds no spec-decode metrics.
    NoSpecMetrics,
    /// Only SGLang's gauges are there (the named counters are missing): no window delta.
    GaugesOnly { missing: Vec<String> },
    /// The endpoint answered JSON, not Prometheus text (TensorRT-LLM's `/metrics`).
    JsonBody,
    /// TensorRT-LLM's Prometheus endpoint is not mounted.
    TrtllmNotMounted,
    /// TensorRT-LLM's Prometheus text has no `trtllm_spec_decode_*` counters.
    TrtllmNoSpec,
}

impl fmt::Display for ScrapeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScrapeFailure::Http(code) => write!(f, "Metrics endpoint returned HTTP {code}"),
            ScrapeFailure::Fetch { url, cause } => write!(f, "Failed to fetch metrics from {url}: {cause}"),
            ScrapeFailure::Invalid(err) => write!(f, "Invalid metrics text: {err}"),
            ScrapeFailure::NoSpecMetrics => f.write_str("No spec decode metrics found on server"),
            ScrapeFailure::GaugesOnly { missing } if missing.is_empty() => f.write_str(
                "No spec decode counters on server (only SGLang's gauges, so no window delta is possible)",
            ),
            ScrapeFailure::GaugesOnly { missing } => write!(
                f,
                "No window delta: SGLang's {} missing (only its gauges are there; SGLang versions with sglang:spec_verify_calls_total have them)",
                missing.join(", ")
            ),
            ScrapeFailure::JsonBody => f.write_str(
                "Metrics endpoint answered JSON, not Prometheus text (TensorRT-LLM's /metrics gives iteration stats; its Prometheus text is at /prometheus/metrics)",
            ),
            ScrapeFailure::TrtllmNotMounted => f.write_str(
                "TensorRT-LLM's /prometheus/metrics is not there (HTTP 404): start trtllm-serve with `return_perf_metrics: true` in --extra_llm_api_options, and `enable_iter_perf_stats: true` for the spec decode metrics",
            ),
            ScrapeFailure::TrtllmNoSpec => f.write_str(
                "No trtllm_spec_decode_* counters on TensorRT-LLM's /prometheus/metrics: set `enable_iter_perf_stats: true` in --extra_llm_api_options (beside `return_perf_metrics: true`); the per-position pair of builds since March 2026 appears once a request has finished",
            ),
        }
    }
}

/// Turn a fetched body into counters, or the failure to report for that phase.
pub fn counters_from_text(text: &str) -> Result<CounterSet, ScrapeFailure> {
    let body = text.trim_start_matches('\u{feff}').trim_start();
    if body.starts_with('{') || body.starts_with('[') {
        return Err(ScrapeFailure::JsonBody);
    }
    let snapshot = parse_metrics(text).map_err(ScrapeFailure::Invalid)?;
    match snapshot {
        MetricsSnapshot { counters: Some(c), .. } => Ok(c),
        MetricsSnapshot {
            sglang: Some(_),
            sglang_missing,
            ..
        } => Err(ScrapeFailure::GaugesOnly {
            missing: sglang_missing,
        }),
        MetricsSnapshot {
            engine: Some(Engine::Trtllm),
            ..
        } => Err(ScrapeFailure::TrtllmNoSpec),
        _ => Err(ScrapeFailure::NoSpecMetrics),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scrape::testing::counters;

    #[test]
    fn parses_counters_skipping_created_gauges_nan_and_other_metrics() {
        let text = "# TYPE vllm:spec_decode_num_drafts_total counter\n\
            vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 10.0\n\
            vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n\
            vllm:spec_decode_num_draft_tokens_total{model_name=\"m\",engine=\"0\"} 30.0 1700000000000\n\
            vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 12\n\
            vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"1\"} NaN\n\
            vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"0\"} 8\n\
            vllm:num_requests_running 3 \n";
        let c = parse_metrics(text).unwrap().counters.unwrap();
        assert_eq!(c.total, counters(10, 30, 12, &[8]));
        assert_eq!(
            c.series.keys().collect::<Vec<_>>(),
            vec!["engine=\"0\",model_name=\"m\""]
        );
        assert_eq!(c.by_label("model_name").keys().collect::<Vec<_>>(), vec!["m"]);
    }

    #[test]
    fn infinity_in_a_counter_is_an_error_elsewhere_it_is_ignored() {
        let base = "vllm:spec_decode_num_drafts_total 1\nvllm:spec_decode_num_draft_tokens_total 3\n";
        let ok = format!("{base}vllm:spec_decode_num_accepted_tokens_total 1\nsome_gauge +Inf\n");
        assert!(parse_metrics(&ok).is_ok());
        let bad = format!("{base}vllm:spec_decode_num_accepted_tokens_total +Inf\n");
        let err = parse_metrics(&bad).unwrap_err().to_string();
        assert!(err.contains("cannot convert infinity"), "{err}");
        let frac = format!("{base}vllm:spec_decode_num_accepted_tokens_total 1.5\n");
        assert!(parse_metrics(&frac).is_err());
    }

    #[test]
    fn duplicates_incomplete_and_mixed_prefixes_are_errors() {
        let dup =
            "vllm:spec_decode_num_drafts_total{engine=\"0\"} 1\nvllm:spec_decode_num_drafts_total{engine=\"0\"} 2\n";
        assert!(matches!(parse_metrics(dup), Err(Error::DuplicateSample { .. })));
        let partial = "vllm:spec_decode_num_drafts_total 1\n";
        let err = parse_metrics(partial).unwrap_err().to_string();
        assert!(err.contains("vllm:spec_decode_num_draft_tokens_total"), "{err}");
        let mixed = "vllm:spec_decode_num_drafts_total 1\nllamacpp:spec_decode_num_drafts_total 1\n";
        assert!(parse_metrics(mixed).is_err());
    }

    #[test]
    fn llamacpp_prefix_is_accepted() {
        let text = "llamacpp:spec_decode_num_drafts_total 2\nllamacpp:spec_decode_num_draft_tokens_total 6\nllamacpp:spec_decode_num_accepted_tokens_total 3\n";
        let c = parse_metrics(text).unwrap().counters.unwrap();
        assert_eq!(c.prefix, "llamacpp:");
        assert_eq!(c.total.num_draft_tokens, 6);
    }

    #[test]
    fn no_spec_metrics_and_gauges_only_are_distinct_failures() {
        assert_eq!(
            counters_from_text("vllm:num_requests_running 1\n"),
            Err(ScrapeFailure::NoSpecMetrics)
        );
        assert_eq!(
            counters_from_text("sglang:spec_accept_length{tp_rank=\"0\"} 3.1\n"),
            Err(ScrapeFailure::GaugesOnly { missing: vec![] })
        );
        assert!(matches!(counters_from_text("garbage{"), Err(ScrapeFailure::Invalid(_))));
    }
}
