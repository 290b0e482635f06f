//! A benchmark run's plan: what `bench`, `sweep`, `accept` and the demo ask of the load path,
//! typed and checked. The command line builds it from flags (`crate::cli`); the other commands
//! build it directly. The API key lives only in the target's headers, marked sensitive.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use speclens_shared::check::gates::Gate;
use speclens_shared::run::goodput::Slo;

use super::answer::EndpointKind;
use super::prometheus::Prometheus;
use super::workload::{Dataset, Workload};
use crate::error::CollectorError;
use speclens_shared::engine::Engine;

/// Inter-arrival times when a request rate is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Exponential gaps (a Poisson process); gamma when the burstiness is not 1.
    Poisson,
    /// Equal gaps.
    Constant,
}

impl Arrival {
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Poisson => "poisson",
            Arrival::Constant => "constant",
        }
    }
}

/// The servers under test and how to talk to them.
#[derive(Debug, Clone)]
pub struct Target {
    /// Base URLs; requests are spread across them in turn.
    pub urls: Vec<String>,
    pub endpoint: EndpointKind,
    /// The models to ask for, in turn (empty: the first the first server lists).
    pub models: Vec<String>,
    /// Every request's headers: content type, the API key (sensitive), the extra headers.
    pub headers: HeaderMap,
    /// Names of the extra headers, for the record (their values may be secret).
    pub header_names: Vec<String>,
    pub api_key_set: bool,
    pub timeout: Duration,
    pub stream: bool,
    pub max_response_bytes: usize,
    /// The response bytes every request in flight may buffer together.
    pub max_buffered_bytes: usize,
    /// Ask for SGLang's per-request stats even when the server is not known as SGLang.
    pub sglang_spec_details: bool,
    /// `--continuous-usage-stats`: `None` sends it to vLLM and SGLang only.
    pub continuous_usage: Option<bool>,
    /// The engine, when the user names it (None: from the server's `/v1/models`).
    pub engine: Option<Engine>,
    /// A CA's PEM certificate to trust for https:// servers (besides the system's roots).
    pub ca_cert_pem: Option<Vec<u8>>,
    /// Accept any certificate of an https:// server (a self-signed test server).
    pub insecure: bool,
}

impl Target {
    /// A target with default settings: chat, streamed, 600 s timeout, 64 MiB responses, 1 GiB
    /// buffered by all responses in flight together.
    pub fn new(urls: Vec<String>) -> Target {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Target {
            urls,
            endpoint: EndpointKind::Chat,
            models: Vec::new(),
            headers,
            header_names: Vec::new(),
            api_key_set: false,
            timeout: Duration::from_secs(600),
            stream: true,
            max_response_bytes: 64 << 20,
            max_buffered_bytes: 1 << 30,
            sglang_spec_details: false,
            continuous_usage: None,
            engine: None,
            ca_cert_pem: None,
            insecure: false,
        }
    }

    /// Send `Authorization: Bearer <key>` (never written anywhere).
    pub fn set_api_key(&mut self, key: &str) -> Result<(), CollectorError> {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            CollectorError::InvalidArgument("the API key holds characters a header cannot carry".into())
        })?;
        value.set_sensitive(true);
        self.headers.insert(AUTHORIZATION, value);
        self.api_key_set = true;
        Ok(())
    }

    /// Add a header given as `Name: value`.
    pub fn add_header(&mut self, header: &str) -> Result<(), CollectorError> {
        let bad = |what: &str| CollectorError::InvalidArgument(format!("{what} in --header {header:?}"));
        let (name, value) = header.split_once(':').ok_or_else(|| bad("no \"Name: value\""))?;
        let header_name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad("a bad header name"))?;
        let value = HeaderValue::from_str(value.trim()).map_err(|_| bad("a bad header value"))?;
        self.header_names.push(name.trim().to_string());
        self.headers.insert(header_name, value);
        Ok(())
    }
}

/// When the measured window ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After every prompt of the workload was sent once.
    Count,
    /// When this long has passed (the workload's prompts are cycled).
    Until(Duration),
}

/// How requests are dispatched.
#[derive(Debug, Clone)]
pub struct Load {
    /// Most requests in flight at once (None: no limit).
    pub concurrency: Option<u64>,
    /// Requests per second (None or infinite: all at once, limited by the concurrency).
    pub request_rate: Option<f64>,
    pub arrival: Arrival,
    /// Gamma shape of the gaps: 1 is Poisson, below 1 burstier.
    pub burstiness: f64,
    /// Prompts in the window's workload.
    pub prompts: u64,
    pub stop: Stop,
    /// Requests sent and finished before the window, excluded from every figure.
    pub warmup: u64,
    /// After Ctrl-C, how long requests in flight may finish before they are abandoned.
    pub drain: Duration,
    /// A trace's fixed schedule: each window request's send time in seconds from the first
    /// (instead of a rate's gaps).
    pub fixed_offsets_s: Option<std::sync::Arc<[f64]>>,
}

impl Load {
    /// `prompts` requests, all at once within `concurrency`.
    pub fn closed_loop(concurrency: Option<u64>, prompts: u64) -> Load {
        Load {
            concurrency,
            request_rate: None,
            arrival: Arrival::Poisson,
            burstiness: 1.0,
            prompts,
            stop: Stop::Count,
            warmup: 0,
            drain: Duration::from_secs(10),
            fixed_offsets_s: None,
        }
    }
}

/// Where the spec-decode counters are read during the run.
#[derive(Clone)]
pub struct Scrape {
    /// Metrics endpoints (empty: `/metrics` of each target).
    pub metrics_urls: Vec<String>,
    /// Whether `/metrics` is scraped at all.
    pub enabled: bool,
    /// Time between live scrapes.
    pub interval: Duration,
    /// The fleet path through a Prometheus API, when configured.
    pub prometheus: Option<Prometheus>,
}

impl Default for Scrape {
    fn default() -> Scrape {
        Scrape {
            metrics_urls: Vec::new(),
            enabled: true,
            interval: Duration::from_secs(1),
            prometheus: None,
        }
    }
}

/// What the run writes and prints.
#[derive(Debug, Clone)]
pub struct Output {
    /// Results folder (None: `speclens-results/<time>-<label>/`).
    pub dir: Option<PathBuf>,
    pub label: String,
    /// Latency percentiles to report.
    pub percentiles: Vec<f64>,
    /// `--goodput` objectives: the requests that meet them are counted as goodput.
    pub goodput: Option<Slo>,
    /// Print the console report (runs inside sweep and accept only write their files).
    pub print: bool,
}

/// What a finished `bench` run must pass for exit code 0 (sweep and accept points check
/// nothing: their commands judge the whole).
#[derive(Clone, Debug)]
pub struct Checks {
    /// Fail when more than this fraction of the window's requests failed (1: never).
    pub max_error_rate: f64,
    /// `--fail-if` conditions on `result.json`'s figures.
    pub gates: Vec<Gate>,
}

impl Default for Checks {
    fn default() -> Checks {
        Checks {
            max_error_rate: 1.0,
            gates: Vec::new(),
        }
    }
}

/// One benchmark run.
#[derive(Clone)]
pub struct Plan {
    pub target: Target,
    pub workload: Workload,
    pub load: Load,
    pub scrape: Scrape,
    pub output: Output,
    pub checks: Checks,
    /// Serve the live dashboard on this port during the run (and after it, until Ctrl-C).
    pub dashboard_port: Option<u16>,
}

impl Plan {
    /// What does not hold together, before anything is sent.
    pub fn check(&self) -> Result<(), CollectorError> {
        if self.target.urls.is_empty() {
            return Err(CollectorError::InvalidArgument("give at least one --url".into()));
        }
        self.check_settings()
    }

    /// [`Plan::check`] but the servers: what a sweep or accept checks of its runs' template.
    pub fn check_settings(&self) -> Result<(), CollectorError> {
        let invalid = |m: String| Err(CollectorError::InvalidArgument(m));
        let w = &self.workload;
        for (name, v) in [
            ("--temperature", w.temperature),
            ("--input-tokens-stddev", w.input_tokens_stddev),
            ("--output-tokens-stddev", w.output_tokens_stddev),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return invalid(format!("{name} must be a finite number ≥ 0, got {v}"));
            }
        }
        if matches!(w.dataset, Dataset::Mooncake(..)) {
            if self.load.request_rate.is_some() {
                return invalid(
                    "a trace brings its own arrival times: leave out --request-rate (--trace-speedup scales them)"
                        .into(),
                );
            }
            if self.load.stop != Stop::Count {
                return invalid("a trace is replayed once: leave out --duration".into());
            }
        }
        if w.multi_turn {
            if self.target.endpoint != EndpointKind::Chat {
                return invalid("--multi-turn sends conversations: it needs --endpoint chat".into());
            }
            if !matches!(w.dataset, Dataset::SpecBench(_) | Dataset::Hf(..)) {
                return invalid("--multi-turn takes a dataset of turns: --dataset spec-bench or hf".into());
            }
        }
        if !(w.range_ratio.is_finite() && (0.0..1.0).contains(&w.range_ratio)) {
            return invalid(format!(
                "--range-ratio must be in [0, 1), as vLLM's, got {}",
                w.range_ratio
            ));
        }
        if w.range_ratio > 0.0 && (w.input_tokens_stddev > 0.0 || w.output_tokens_stddev > 0.0) {
            return invalid(
                "--range-ratio draws uniform lengths: leave out --input-tokens-stddev and --output-tokens-stddev"
                    .into(),
            );
        }
        if let Some(r) = self.load.request_rate {
            if !(r.is_infinite() && r > 0.0 || r.is_finite() && r >= 1e-6) {
                return invalid(format!(
                    "--request-rate must be at least 1e-6 requests/s (or inf), got {r}"
                ));
            }
        }
        if self.load.concurrency == Some(0) {
            return invalid("--concurrency must be at least 1".into());
        }
        if !(self.load.burstiness.is_finite() && self.load.burstiness > 0.0) {
            return invalid(format!("--burstiness must be > 0, got {}", self.load.burstiness));
        }
        if self.output.percentiles.iter().any(|p| !(0.0..=100.0).contains(p)) {
            return invalid("--percentiles must lie in [0, 100]".into());
        }
        if self.load.prompts == 0 {
            return invalid("--num-prompts must be at least 1".into());
        }
        if let (false, Some(slo)) = (self.target.stream, &self.output.goodput) {
            if slo.ttft_ms.is_some() || slo.tpot_ms.is_some() {
                return invalid(
                    "--goodput ttft and tpot need a stream: without one the first token arrives with the whole answer \
                     (drop --no-stream, or give an e2el objective)"
                        .into(),
                );
            }
        }
        Ok(())
    }

    /// Requests the window sends when it ends by count.
    pub fn window_requests(&self) -> Option<u64> {
        matches!(self.load.stop, Stop::Count).then_some(self.load.prompts)
    }
}

/// `seconds` as a duration when it is a finite number in `[min, 1e7]`; `None` otherwise.
pub fn seconds(value: f64, min: f64) -> Option<Duration> {
    (value.is_finite() && value >= min && value <= 1e7)
        .then(|| Duration::try_from_secs_f64(value).ok())
        .flatten()
}
