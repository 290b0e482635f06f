//! The typed result model: what `bench`, `sweep` and `accept` write (`result.json`,
//! `sweep.json`, `accept-<category>.json`) and what `read`, `serve` (`/api/runs`), `report` and
//! the web app read back. One set of serde types for every writer and reader; the layout is
//! described in `docs/FORMATS.md`. `vllm bench serve` result files read into [`RunResult`] too
//! (every key optional; keys this model does not name land in [`RunResult::extra`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::speedup::Measured;
use crate::run::aggregate::SpecSummary;
use crate::run::notices::Notices;
use crate::run::progress::{Distributions, TimelinePoint};
use crate::run::record::{LatencyStats, RequestRecord, RunMetrics, RunTally};
use crate::scrape::fleet::FleetWindow;
use crate::scrape::{SglangGauges, SpecDecodeData, SpecDecodeResult};

/// `schema` of a speclens `result.json`.
pub const RESULT_SCHEMA: &str = "speclens.result";
/// Version of `result.json`'s layout; readers refuse versions they do not know.
pub const RESULT_SCHEMA_VERSION: u32 = 1;

/// `request_rate` as `vllm bench serve` writes it: a number, or `"inf"` without a rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestRate {
    PerSecond(f64),
    Text(String),
}

impl RequestRate {
    pub fn from_option(rate: Option<f64>) -> RequestRate {
        rate.map_or_else(|| RequestRate::Text("inf".into()), RequestRate::PerSecond)
    }
}

/// `errors`: speclens writes failures by kind; `vllm bench serve --save-detailed` writes one
/// message per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Errors {
    ByKind(BTreeMap<String, ErrorCount>),
    PerRequest(Vec<serde_json::Value>),
}

/// Failed requests of one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorCount {
    pub count: u64,
    /// The first failure's message.
    pub first: String,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

/// The run's settings as recorded: header names only (values may be secret), never the key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub urls: Vec<String>,
    pub endpoint: String,
    pub model: String,
    /// Every served name the run sent to in turn, when several (`model` is the first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    pub stream: bool,
    pub concurrency: Option<u64>,
    pub request_rate: Option<f64>,
    pub arrival: String,
    pub burstiness: f64,
    pub num_prompts: u64,
    pub duration_s: Option<f64>,
    pub warmup: u64,
    pub seed: u64,
    pub dataset: String,
    pub dataset_path: Option<String>,
    pub categories: Vec<String>,
    pub input_tokens: u32,
    pub input_tokens_stddev: f64,
    pub output_tokens: u32,
    pub output_tokens_stddev: f64,
    /// vLLM's `--random-range-ratio` of the synthetic lengths (0: fixed or normal).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub range_ratio: f64,
    /// Tokens of the prefix every prompt shared.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub prefix_tokens: u32,
    pub temperature: f64,
    /// Whether the requests set `ignore_eos` (synthetic prompts and trace replays always do).
    #[serde(default)]
    pub ignore_eos: bool,
    /// The prompts file a trace replay filled its hash blocks from (`--trace-fill`); absent
    /// for filler words, or a run that replays no trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_fill: Option<String>,
    pub metrics_endpoints: Vec<String>,
    pub scrape_interval_s: f64,
    pub timeout_s: f64,
    pub percentiles: Vec<f64>,
    pub header_names: Vec<String>,
    pub api_key_set: bool,
    /// The `--goodput` objectives in milliseconds, by vLLM's names (`ttft`, `tpot`, `e2el`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub goodput: BTreeMap<String, f64>,
    /// The engine serving the target (`vllm`, `sglang`, `trtllm`, `llamacpp`), detected from its
    /// `/v1/models` or named with `--engine`; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The version the server reports (vLLM's `/version`, llama.cpp's `/props` build); absent
    /// when it reports none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
}

/// One scraped endpoint's window, as AISBench writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointResult {
    pub endpoint: String,
    pub result: SpecDecodeResult,
}

/// What the Prometheus path found for a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetOutcome {
    /// AISBench's result shape (`ok` with data, or `na` with the reason).
    pub result: SpecDecodeResult,
    /// The growth by instance, engine and model, when the counters were there.
    #[serde(rename = "fleet")]
    pub window: Option<FleetWindow>,
    /// SGLang's gauges averaged over the window, when only they were there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sglang: Option<SglangGauges>,
}

/// Both spec-decode paths of a run, in full.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeSection {
    /// Direct `/metrics` windows, one per endpoint.
    #[serde(default)]
    pub scrape: Vec<EndpointResult>,
    /// AIPerf's per-request figures, when requests carried stats.
    #[serde(default)]
    pub per_request: Option<SpecSummary>,
    /// Per-request payloads rejected, by reason.
    #[serde(default)]
    pub per_request_rejected: BTreeMap<String, u64>,
    #[serde(default)]
    pub prometheus: Option<FleetOutcome>,
    /// Live scrapes during the run.
    #[serde(default)]
    pub timeline: Vec<TimelinePoint>,
    /// Counter resets seen during the run, as `[endpoint] what happened`.
    #[serde(default)]
    pub resets: Vec<String>,
}

/// A run's `result.json`: `vllm bench serve`'s keys first (so its tools read it), then
/// speclens's own. Also reads `vllm bench serve --save-result` files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speclens_version: Option<String>,
    pub date: Option<String>,
    /// `vllm bench serve` writes null without `--label`.
    #[serde(deserialize_with = "null_as_default")]
    pub label: String,
    #[serde(deserialize_with = "null_as_default")]
    pub partial: bool,
    pub backend: Option<String>,
    pub model_id: Option<String>,
    pub num_prompts: Option<u64>,
    pub request_rate: Option<RequestRate>,
    pub burstiness: Option<f64>,
    pub max_concurrency: Option<u64>,
    pub duration: Option<f64>,
    pub completed: Option<u64>,
    pub failed: Option<u64>,
    pub total_input_tokens: Option<u64>,
    pub total_output_tokens: Option<u64>,
    pub request_throughput: Option<f64>,
    /// Completed requests per second within every `--goodput` objective; null without one, as
    /// `vllm bench serve` writes it.
    pub request_goodput: Option<f64>,
    /// How many completed requests met the objectives (speclens's own key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_requests: Option<u64>,
    pub output_throughput: Option<f64>,
    pub total_token_throughput: Option<f64>,
    pub max_concurrent_requests: Option<u64>,
    /// Output tokens per second in the closed loop's steady window (`steady::steady_state`):
    /// what a sweep compares; absent when the run never reached one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_output_throughput: Option<f64>,
    /// That window's length in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_window_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_ttft_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_ttft_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub std_ttft_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_tpot_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_tpot_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub std_tpot_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_itl_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_itl_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub std_itl_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_e2el_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_e2el_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub std_e2el_ms: Option<f64>,
    /// The scrape path's window (`vllm bench serve`'s `spec_decode_*` keys), when valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_acceptance_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_acceptance_length: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_num_drafts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_draft_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_accepted_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_per_position_acceptance_rates: Option<Vec<f64>>,
    /// Measured draft tokens per draft and the configured k, when both paths allow it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_mean_draft_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_num_spec_tokens: Option<u32>,
    /// Failed requests by kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Errors>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<RunConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notices: Option<Notices>,
    /// Each served name's per-request acceptance, when the run sent to several (`--model a,b`:
    /// a base model and its adapters); each row's `category` is the name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_by_model: Vec<crate::results::accept::CategoryAcceptance>,
    /// Why the run's acceptance stands for no real text (empty: valid), from its config when
    /// written; see [`RunResult::content_invalid`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_invalid_for_acceptance: Option<Vec<crate::results::content_mark::ContentInvalid>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distributions: Option<Distributions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecodeSection>,
    /// The engine's own load over the window, where it exports the gauges (vLLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_load: Option<EngineLoad>,
    /// Who pays in the tail: each request's acceptance length against its latency, where the
    /// requests carried their acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<crate::run::tail::TailAttribution>,
    /// A sweep point's file: when the sweep that measured it started (RFC 3339), so a later
    /// sweep into the same folder can tell its own points from earlier ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_started: Option<String>,
    /// Set when this result was not written by its run but recovered from the records it left
    /// (killed before it finished): what was recovered and what was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<String>,
    /// Keys this model does not name: the latency percentiles (`p99_ttft_ms`, named by the
    /// percentiles asked for) and, in `vllm bench serve` files, everything else it writes.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// The records a run left when it stopped before writing its result (killed, or its machine
/// went down), folded one at a time into a partial result.
#[derive(Default)]
pub struct Recovery {
    tally: RunTally,
    /// Each window request's start and end (ms since the run began).
    spans_ms: Vec<(f64, f64)>,
}

impl Recovery {
    pub fn push(&mut self, r: &RequestRecord) {
        self.tally.push(r);
        if !r.warmup {
            self.spans_ms.push((r.start_ms, r.start_ms + r.e2el_ms.unwrap_or(0.0)));
        }
    }

    /// The partial result: the request figures over the records' span (first start to last
    /// end), as `vllm bench serve` defines them; `cut_lines` records that did not read (the
    /// last line cut by the kill) are named, and so is what was never saved (the metrics
    /// scrapes, so no acceptance from the counters).
    pub fn finish(self, label: &str, cut_lines: u64) -> RunResult {
        let start = self.spans_ms.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
        let end = self.spans_ms.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
        let duration_s = if end > start { (end - start) / 1e3 } else { 0.0 };
        let metrics = self
            .tally
            .metrics(duration_s, None, None, max_overlap(&self.spans_ms), &[99.0]);
        let mut result = RunResult {
            label: label.into(),
            partial: true,
            num_prompts: Some(self.tally.requests),
            ..RunResult::default()
        };
        result.set_metrics(&metrics);
        let cut = match cut_lines {
            0 => String::new(),
            1 => "; 1 line did not read (cut by the stop)".into(),
            n => format!("; {n} lines did not read"),
        };
        result.recovered = Some(format!(
            "recovered from the {} records of a run whose result was not saved (stopped or unwritable){cut}; its metrics scrapes were not saved",
            self.tally.requests
        ));
        result
    }
}

/// The most spans open at once.
fn max_overlap(spans_ms: &[(f64, f64)]) -> u64 {
    let mut events: Vec<(f64, i64)> = spans_ms.iter().flat_map(|&(a, b)| [(a, 1), (b, -1)]).collect();
    // An end before a start at the same instant: back-to-back requests do not overlap.
    events.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let (mut open, mut most) = (0i64, 0i64);
    for (_, step) in events {
        open += step;
        most = most.max(open);
    }
    most.max(0) as u64
}

/// The named settings where two run configurations differ, as "model a, now b" (`now` is
/// `this`'s); nothing when either file has no configuration (a `vllm bench serve` file).
fn differences(
    this: Option<&RunConfig>,
    other: Option<&RunConfig>,
    settings: impl Fn(&RunConfig) -> Vec<(&'static str, String)>,
) -> Vec<String> {
    let (Some(this), Some(other)) = (this, other) else {
        return Vec::new();
    };
    settings(this)
        .into_iter()
        .zip(settings(other))
        .filter(|((_, now), (_, then))| now != then)
        .map(|((name, now), (_, then))| format!("{name} {then}, now {now}"))
        .collect()
}

/// The engine's own load over a run's window: vLLM's `kv_cache_usage_perc`,
/// `num_requests_running` and `num_requests_waiting` gauges over its scrapes, and its
/// `num_preemptions` counter's delta. Each figure only where the server exports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineLoad {
    /// KV-cache usage, a fraction (1 is full): mean and highest over the window's scrapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_usage_mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_usage_max: Option<f64>,
    /// Requests preempted during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<u64>,
    /// Mean requests in the running batch, and waiting, over the window's scrapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_mean: Option<f64>,
    /// Scrapes the gauges were read from.
    pub scrapes: usize,
}

impl EngineLoad {
    /// `KV 41.2/63.0 %, 0 preemptions, 7.9 running, 0.0 waiting`, `—` for what is missing.
    pub fn summary(&self) -> String {
        let f = |v: Option<f64>, scale: f64| v.map_or_else(|| "—".to_string(), |v| format!("{:.1}", v * scale));
        format!(
            "KV {}/{} %, {} preemptions, {} running, {} waiting",
            f(self.kv_cache_usage_mean, 100.0),
            f(self.kv_cache_usage_max, 100.0),
            self.preemptions.map_or_else(|| "—".to_string(), |p| p.to_string()),
            f(self.running_mean, 1.0),
            f(self.waiting_mean, 1.0)
        )
    }
}

impl EngineLoad {
    /// The load over a window: the gauges' mean (and KV's highest) over the live scrapes during
    /// it (a scrape after the run sees an idle engine), preemptions as after minus before
    /// (`None` across a counter reset).
    pub fn over(
        before: Option<&crate::scrape::LoadSample>,
        during: &[crate::scrape::LoadSample],
        after: Option<&crate::scrape::LoadSample>,
    ) -> Option<EngineLoad> {
        let mean = |f: fn(&crate::scrape::LoadSample) -> Option<f64>| {
            let v: Vec<f64> = during.iter().filter_map(f).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let preemptions = match (before.and_then(|b| b.preemptions), after.and_then(|a| a.preemptions)) {
            (Some(b), Some(a)) if a >= b => Some(a - b),
            _ => None,
        };
        let load = EngineLoad {
            kv_cache_usage_mean: mean(|s| s.kv_cache_usage),
            kv_cache_usage_max: during.iter().filter_map(|s| s.kv_cache_usage).reduce(f64::max),
            preemptions,
            running_mean: mean(|s| s.running),
            waiting_mean: mean(|s| s.waiting),
            scrapes: during.len(),
        };
        let any = load.kv_cache_usage_mean.is_some()
            || load.preemptions.is_some()
            || load.running_mean.is_some()
            || load.waiting_mean.is_some();
        any.then_some(load)
    }
}

/// A value, or its default when the file holds null.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The latency families `vllm bench serve` reports, as named in its keys.
pub const LATENCY_FAMILIES: [&str; 4] = ["ttft", "tpot", "itl", "e2el"];

/// The server's own timings' key families in `result.json` (none ends in a latency family's
/// `_ttft_ms`, `_tpot_ms`, `_itl_ms` or `_e2el_ms`, so they are never read as one of those).
pub const SERVER_FAMILIES: [&str; 3] = ["server_queue_time", "server_time_to_first_token", "ttft_outside_server"];

/// `result.json`'s mark that its server timings take the server's TTFT as vLLM 0.33 counts it,
/// from scheduling (after the queue).
pub const SERVER_TTFT_AFTER_QUEUE: &str = "server_ttft_after_queue";

impl RunResult {
    /// Was the run streamed? (Only streamed runs measure ITL and TPOT; `vllm bench serve` files
    /// do not say, and count as streamed.)
    pub fn streamed(&self) -> bool {
        self.config.as_ref().is_none_or(|c| c.stream)
    }

    /// A speclens result with its identity filled in.
    pub fn new(speclens_version: &str, date: &str, label: &str) -> RunResult {
        RunResult {
            schema: Some(RESULT_SCHEMA.into()),
            schema_version: Some(RESULT_SCHEMA_VERSION),
            speclens_version: Some(speclens_version.into()),
            date: Some(date.into()),
            label: label.into(),
            ..RunResult::default()
        }
    }

    /// How this run's server differs from `other`'s, as the two files tell it (base URL,
    /// model, engine, and k where both saw it): one phrase per difference, empty when none is
    /// seen. Two points of one arm pool only when this is empty.
    pub fn server_differences(&self, other: &RunResult) -> Vec<String> {
        let k = |r: &RunResult| r.spec_decode_num_spec_tokens.map(|k| k.to_string());
        let mut found = differences(self.config.as_ref(), other.config.as_ref(), |c| {
            vec![
                ("URL", c.urls.join(" ")),
                ("model", c.model.clone()),
                ("engine", c.engine.clone().unwrap_or_else(|| "unknown".into())),
            ]
        });
        if let (Some(a), Some(b)) = (k(self), k(other)) {
            if a != b {
                found.push(format!("k {b}, now {a}"));
            }
        }
        found
    }

    /// How this run's workload differs from `other`'s (endpoint, streaming, dataset, lengths,
    /// temperature): points of any two arms compare only when this is empty.
    pub fn workload_differences(&self, other: &RunResult) -> Vec<String> {
        differences(self.config.as_ref(), other.config.as_ref(), |c| {
            vec![
                ("endpoint", c.endpoint.clone()),
                ("streaming", c.stream.to_string()),
                ("dataset", c.dataset.clone()),
                ("dataset file", c.dataset_path.clone().unwrap_or_default()),
                ("categories", c.categories.join(",")),
                (
                    "input tokens",
                    format!("{} ± {}", c.input_tokens, c.input_tokens_stddev),
                ),
                (
                    "output tokens",
                    format!("{} ± {}", c.output_tokens, c.output_tokens_stddev),
                ),
                ("range ratio", c.range_ratio.to_string()),
                ("prefix tokens", c.prefix_tokens.to_string()),
                ("temperature", c.temperature.to_string()),
                ("ignore_eos", c.ignore_eos.to_string()),
            ]
        })
    }

    /// Whether speclens wrote this file (else it is a `vllm bench serve` result or similar).
    pub fn is_speclens(&self) -> bool {
        self.schema.as_deref() == Some(RESULT_SCHEMA)
    }

    /// A clear refusal of a speclens file of a layout this build does not know.
    pub fn check_version(&self) -> Result<(), String> {
        match self.schema_version {
            Some(v) if self.is_speclens() && v > RESULT_SCHEMA_VERSION => Err(format!(
                "written by a newer speclens (result schema {v}; this build reads up to {RESULT_SCHEMA_VERSION})"
            )),
            _ => Ok(()),
        }
    }

    /// Fill `vllm bench serve`'s request-level keys.
    pub fn set_metrics(&mut self, m: &RunMetrics) {
        self.duration = Some(m.duration_s);
        self.completed = Some(m.completed);
        self.failed = Some(m.failed);
        self.max_concurrency = m.max_concurrency;
        self.request_rate = Some(RequestRate::from_option(m.request_rate));
        self.total_input_tokens = Some(m.total_input_tokens);
        self.total_output_tokens = Some(m.total_output_tokens);
        self.request_throughput = Some(m.request_throughput);
        self.request_goodput = m.request_goodput;
        self.good_requests = m.good_requests;
        self.output_throughput = Some(m.output_throughput);
        self.total_token_throughput = Some(m.total_token_throughput);
        self.max_concurrent_requests = Some(m.max_concurrent_requests);
        for (family, stats) in LATENCY_FAMILIES.iter().zip([&m.ttft, &m.tpot, &m.itl, &m.e2el]) {
            let Some(s) = stats else { continue };
            let (mean, median, std) = self.latency_mut(family);
            *mean = Some(s.mean);
            *median = Some(s.median);
            *std = Some(s.std);
            for (p, v) in &s.percentiles {
                self.extra.insert(format!("p{p}_{family}_ms"), (*v).into());
            }
        }
        self.set_server_split(&m.server);
        self.tail.clone_from(&m.tail);
        m.chunks.write_into(&mut self.extra);
    }

    /// The per-token ITL, tokens per chunk and E2E normalized interactivity this result holds.
    pub fn chunk_figures(&self) -> crate::run::chunks::ChunkFigures {
        crate::run::chunks::ChunkFigures::read_from(&self.extra)
    }

    /// The server's own timings (vLLM 0.33's per-request metrics), in `vllm bench serve`'s key
    /// shape: `mean_server_queue_time_ms`, `median_…`, `std_…`, `p99_…`, the same for
    /// `server_time_to_first_token` and `ttft_outside_server`, and how many requests had them.
    fn set_server_split(&mut self, split: &crate::run::record::ServerSplit) {
        if split.requests == 0 && split.queue_time.is_none() {
            return;
        }
        self.extra.insert("server_timed_requests".into(), split.requests.into());
        // The server's TTFT counted from scheduling (vLLM 0.33's): files before this key
        // counted the time outside the server from a TTFT taken to include the queue.
        self.extra.insert(SERVER_TTFT_AFTER_QUEUE.into(), true.into());
        for (family, stats) in SERVER_FAMILIES.iter().zip([
            &split.queue_time,
            &split.time_to_first_token,
            &split.ttft_outside_server,
        ]) {
            if let Some(s) = stats {
                s.write_keys(&format!("{family}_ms"), &mut self.extra);
            }
        }
    }

    /// vLLM 0.33's per-request server timings in a `vllm bench serve --save-detailed` result
    /// (`server_queue_times`, `server_ttfts`: seconds, `null` for a response without them, in
    /// the order of `ttfts` and `errors`), folded into the distributions speclens writes for its
    /// own runs, at the file's own percentiles; failed requests left out. Nothing changes for a
    /// file without the lists, or one that already has the distributions.
    pub fn read_vllm_server_times(&mut self) {
        if self.extra.contains_key("server_timed_requests") {
            return;
        }
        let list = |key: &str| self.extra.get(key).and_then(serde_json::Value::as_array);
        let (Some(queues), Some(server_ttfts)) = (list("server_queue_times"), list("server_ttfts")) else {
            return;
        };
        let client_ttfts = list("ttfts");
        let errors = match &self.errors {
            Some(Errors::PerRequest(errors)) => Some(errors),
            _ => None,
        };
        let ms = |v: Option<&serde_json::Value>| {
            v.and_then(serde_json::Value::as_f64)
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| s * 1e3)
        };
        let mut tally = crate::run::record::RunTally::default();
        for i in 0..queues.len().max(server_ttfts.len()) {
            let error = errors.and_then(|e| e.get(i)).and_then(serde_json::Value::as_str);
            if error.is_some_and(|e| !e.is_empty()) {
                continue;
            }
            let server = crate::request::per_request::ServerTimings {
                queue_time_ms: ms(queues.get(i)),
                time_to_first_token_ms: ms(server_ttfts.get(i)),
                generation_time_ms: None,
            };
            tally.push_server(&server, ms(client_ttfts.and_then(|c| c.get(i))));
        }
        let mut percentiles: Vec<f64> = self
            .latency("ttft")
            .map(|l| l.percentiles.keys().filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default();
        if percentiles.is_empty() {
            percentiles.push(99.0);
        }
        percentiles.sort_by(f64::total_cmp);
        self.set_server_split(&tally.server_split(&percentiles));
    }

    /// The TTFT split this result's server timings give (see [`crate::run::record::TtftSplit`]). A
    /// file written before [`SERVER_TTFT_AFTER_QUEUE`] counted the time outside the server as
    /// client TTFT − server TTFT; its queue is taken out of that here, so the parts add up.
    pub fn ttft_split(&self) -> Option<crate::run::record::TtftSplit> {
        let mean = |family: &str| self.extra.get(&format!("mean_{family}_ms")).and_then(|v| v.as_f64());
        let queue = mean(SERVER_FAMILIES[0])?;
        let mut outside = mean(SERVER_FAMILIES[2])?;
        if self.extra.get(SERVER_TTFT_AFTER_QUEUE).and_then(|v| v.as_bool()) != Some(true) {
            outside -= queue;
        }
        crate::run::record::TtftSplit::of_means(
            self.extra.get("server_timed_requests").and_then(|v| v.as_u64())?,
            queue,
            mean(SERVER_FAMILIES[1])?,
            outside,
        )
    }

    fn latency_mut(&mut self, family: &str) -> (&mut Option<f64>, &mut Option<f64>, &mut Option<f64>) {
        match family {
            "ttft" => (&mut self.mean_ttft_ms, &mut self.median_ttft_ms, &mut self.std_ttft_ms),
            "tpot" => (&mut self.mean_tpot_ms, &mut self.median_tpot_ms, &mut self.std_tpot_ms),
            "itl" => (&mut self.mean_itl_ms, &mut self.median_itl_ms, &mut self.std_itl_ms),
            _ => (&mut self.mean_e2el_ms, &mut self.median_e2el_ms, &mut self.std_e2el_ms),
        }
    }

    /// Why the run's acceptance stands for no real text: the reasons written with it, else those
    /// of its config (a file from before the mark), else none (a file without either, such as
    /// `vllm bench serve`'s, is taken as valid).
    pub fn content_invalid(&self) -> Vec<crate::results::content_mark::ContentInvalid> {
        match (&self.content_invalid_for_acceptance, &self.config) {
            (Some(reasons), _) => reasons.clone(),
            (None, Some(c)) => {
                crate::results::content_mark::content_invalid(&c.dataset, c.ignore_eos, c.trace_fill.as_deref())
            }
            (None, None) => Vec::new(),
        }
    }

    /// One latency family's figures (`ttft`, `tpot`, `itl`, `e2el`), percentiles included.
    pub fn latency(&self, family: &str) -> Option<LatencyStats> {
        let (mean, median, std) = match family {
            "ttft" => (self.mean_ttft_ms, self.median_ttft_ms, self.std_ttft_ms),
            "tpot" => (self.mean_tpot_ms, self.median_tpot_ms, self.std_tpot_ms),
            "itl" => (self.mean_itl_ms, self.median_itl_ms, self.std_itl_ms),
            "e2el" => (self.mean_e2el_ms, self.median_e2el_ms, self.std_e2el_ms),
            _ => return None,
        };
        let mean = mean?;
        Some(LatencyStats {
            mean,
            median: median.unwrap_or(mean),
            std: std.unwrap_or(0.0),
            percentiles: crate::run::latency_stats::percentiles_under(&format!("{family}_ms"), &self.extra),
        })
    }

    /// Fill the scrape path's `spec_decode_*` keys from its window.
    pub fn set_spec_window(&mut self, d: &SpecDecodeData) {
        self.spec_decode_acceptance_rate = d.acceptance_rate;
        self.spec_decode_acceptance_length = d.acceptance_length;
        self.spec_decode_num_drafts = d.num_drafts;
        self.spec_decode_draft_tokens = d.draft_tokens;
        self.spec_decode_accepted_tokens = Some(d.accepted_tokens);
        self.spec_decode_per_position_acceptance_rates =
            Some(d.per_position_acceptance_rates.values().copied().collect());
    }

    /// The per-request path's figures, when the run has them.
    pub fn per_request(&self) -> Option<&SpecSummary> {
        self.spec_decode.as_ref()?.per_request.as_ref()
    }

    /// The measured acceptance as the model takes it: E, k and the draft tokens per draft when
    /// the result has both counts (scrape path first, then the per-request path).
    pub fn measured(&self) -> Option<Measured> {
        let ratio = |num: f64, den: f64| (den > 0.0).then(|| num / den);
        if let (Some(e), Some(rates)) = (
            self.spec_decode_acceptance_length,
            &self.spec_decode_per_position_acceptance_rates,
        ) {
            if e > 0.0 && !rates.is_empty() {
                return Some(Measured {
                    e,
                    k: rates.len() as u32,
                    draft_tokens: self
                        .spec_decode_draft_tokens
                        .zip(self.spec_decode_num_drafts)
                        .and_then(|(t, d)| ratio(t as f64, d as f64)),
                });
            }
        }
        let per_request = self.per_request()?;
        let e = per_request.spec_decode_token_weighted_acceptance_length.as_ref()?.avg;
        let k = per_request
            .pooled_spec_decode_acceptance_histogram
            .keys()
            .max()
            .copied()?;
        Some(Measured {
            e,
            k: self.spec_decode_num_spec_tokens.unwrap_or(k),
            draft_tokens: ratio(
                per_request.total_draft_tokens.avg,
                per_request.total_spec_decode_steps.avg,
            ),
        })
    }

    /// The run's spec-decode counts: (drafts, accepted tokens, draft tokens), from the window's
    /// counters, else the per-request totals; `None` when neither counted drafts.
    pub fn spec_counts(&self) -> Option<(f64, f64, Option<f64>)> {
        if let (Some(drafts), Some(accepted)) = (self.spec_decode_num_drafts, self.spec_decode_accepted_tokens) {
            return (drafts > 0).then_some((
                drafts as f64,
                accepted as f64,
                self.spec_decode_draft_tokens.map(|t| t as f64),
            ));
        }
        let p = self.per_request()?;
        let drafts = p.total_spec_decode_steps.avg;
        (drafts > 0.0).then_some((
            drafts,
            p.total_accepted_draft_tokens.avg,
            Some(p.total_draft_tokens.avg),
        ))
    }

    /// Requests the window held (`num_prompts`).
    pub fn requests(&self) -> u64 {
        self.num_prompts.unwrap_or(0)
    }

    /// Why a path of this run has no data, in the dashboard's words.
    pub fn not_available(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(spec) = &self.spec_decode {
            for s in &spec.scrape {
                if let Some(error) = &s.result.error {
                    out.push(format!("scrape path [{}]: {error}", s.endpoint));
                }
            }
        }
        if self.per_request().is_none() {
            out.push("per-request path: no request carried spec-decode stats".into());
        }
        let prometheus = self.spec_decode.as_ref().and_then(|s| s.prometheus.as_ref());
        if let Some(error) = prometheus.and_then(|p| p.result.error.as_ref()) {
            out.push(format!("Prometheus path: {error}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `vllm bench serve --save-detailed` 0.33 result's server timings become the
    /// distributions speclens writes, failed requests and responses without timings left out.
    #[test]
    fn vllm_0_33_server_timings_fold_into_the_server_split() {
        let text = r#"{"completed": 3, "failed": 1, "mean_ttft_ms": 63.3, "p90_ttft_ms": 78.0, "p99_ttft_ms": 79.8,
            "ttfts": [0.05, 0.08, 0.0, 0.06], "errors": ["", "", "timeout", ""],
            "server_queue_times": [0.01, 0.03, null, null], "server_ttfts": [0.025, 0.03, 0.02, null]}"#;
        let mut r: RunResult = serde_json::from_str(text).unwrap();
        r.read_vllm_server_times();
        let get = |k: &str| r.extra[k].as_f64().unwrap();
        assert_eq!(r.extra["server_timed_requests"], 2);
        assert!((get("mean_server_queue_time_ms") - 20.0).abs() < 1e-9);
        assert!((get("mean_server_time_to_first_token_ms") - 27.5).abs() < 1e-9);
        assert!((get("mean_ttft_outside_server_ms") - 17.5).abs() < 1e-9);
        // At the file's own percentiles.
        assert!(r.extra.contains_key("p90_server_queue_time_ms") && r.extra.contains_key("p99_ttft_outside_server_ms"));
        let split = r.ttft_split().unwrap();
        assert_eq!((split.queue_ms, split.in_server_ms), (20.0, 27.5));
        // Read again: nothing changes; a file without the lists gets nothing.
        let before = r.extra.clone();
        r.read_vllm_server_times();
        assert_eq!(r.extra, before);
        let mut plain: RunResult = serde_json::from_str(r#"{"completed": 1}"#).unwrap();
        plain.read_vllm_server_times();
        assert!(plain.ttft_split().is_none() && !plain.extra.contains_key("server_timed_requests"));
        // A file of an earlier speclens counted the time outside as client − server TTFT: its
        // queue comes out of it, so the parts still add up to the client's TTFT (65 ms).
        let older: RunResult = serde_json::from_str(
            r#"{"completed": 2, "server_timed_requests": 2, "mean_server_queue_time_ms": 20.0,
                "mean_server_time_to_first_token_ms": 27.5, "mean_ttft_outside_server_ms": 37.5}"#,
        )
        .unwrap();
        let split = older.ttft_split().unwrap();
        assert_eq!(
            (split.queue_ms, split.in_server_ms, split.outside_server_ms),
            (20.0, 27.5, 17.5)
        );
    }

    #[test]
    fn a_vllm_result_reads_with_its_own_keys_kept() {
        let text = r#"{"date": "20250101-000000", "backend": "vllm", "label": null, "model_id": "m", "tokenizer_id": "m",
            "num_prompts": 10, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4,
            "duration": 2.0, "completed": 10, "failed": 0, "request_goodput": null,
            "mean_ttft_ms": 20.0, "p99_ttft_ms": 40.0, "p99.9_ttft_ms": 41.0}"#;
        let r: RunResult = serde_json::from_str(text).unwrap();
        assert!(!r.is_speclens());
        assert_eq!(r.request_rate, Some(RequestRate::Text("inf".into())));
        let ttft = r.latency("ttft").unwrap();
        assert_eq!(
            (ttft.median, ttft.percentiles["99"], ttft.percentiles["99.9"]),
            (20.0, 40.0, 41.0)
        );
        assert!(r.extra.contains_key("tokenizer_id"));
        assert!(r.latency("itl").is_none());
        let detailed: RunResult = serde_json::from_str(r#"{"errors": ["", "timeout"], "completed": 1}"#).unwrap();
        assert!(matches!(detailed.errors, Some(Errors::PerRequest(_))));
    }

    #[test]
    fn two_runs_differ_by_their_server_and_workload_settings_only() {
        let config = RunConfig {
            urls: vec!["http://a".into()],
            model: "m".into(),
            output_tokens: 128,
            ..RunConfig::default()
        };
        let run = |config: RunConfig, k: Option<u32>| RunResult {
            config: Some(config),
            spec_decode_num_spec_tokens: k,
            ..RunResult::default()
        };
        let then = run(config.clone(), Some(3));
        // Another level, seed or k unseen: the same server and workload.
        let same = run(
            RunConfig {
                concurrency: Some(8),
                seed: 9,
                ..config.clone()
            },
            None,
        );
        assert!(same.server_differences(&then).is_empty() && same.workload_differences(&then).is_empty());
        let other = run(
            RunConfig {
                urls: vec!["http://b".into()],
                output_tokens: 64,
                ..config
            },
            Some(5),
        );
        assert_eq!(
            other.server_differences(&then),
            ["URL http://a, now http://b", "k 3, now 5"]
        );
        assert_eq!(other.workload_differences(&then), ["output tokens 128 ± 0, now 64 ± 0"]);
        assert!(
            RunResult::default().server_differences(&then).is_empty(),
            "a file without a config"
        );
    }

    #[test]
    fn a_killed_run_s_records_become_a_partial_result_over_their_span() {
        let record = |start_ms: f64, e2el_ms: f64, success: bool| RequestRecord {
            start_ms,
            e2el_ms: Some(e2el_ms),
            success,
            output_tokens: if success { 10 } else { 0 },
            ..RequestRecord::default()
        };
        let mut recovery = Recovery::default();
        for r in [
            record(0.0, 500.0, true),
            record(250.0, 750.0, true),
            record(1000.0, 1000.0, false),
        ] {
            recovery.push(&r);
        }
        let r = recovery.finish("run-a", 1);
        assert!(r.partial);
        assert_eq!((r.completed, r.failed, r.num_prompts), (Some(2), Some(1), Some(3)));
        // 0 → 2,000 ms: 20 tokens in 2 s; two requests overlap, the third starts as one ends.
        assert_eq!((r.duration, r.output_throughput), (Some(2.0), Some(10.0)));
        assert_eq!(r.max_concurrent_requests, Some(2));
        assert!(r.recovered.unwrap().contains("3 records"));
    }

    #[test]
    fn a_newer_layout_is_refused_by_name() {
        let mut r = RunResult::new("9", "d", "l");
        assert!(r.check_version().is_ok());
        r.schema_version = Some(RESULT_SCHEMA_VERSION + 1);
        assert!(r.check_version().unwrap_err().contains("newer speclens"));
    }
}
