//! `speclens bench`: the load generator. Requests are dispatched on schedule (concurrency
//! limit, request rate with Poisson/gamma/constant gaps), timed by [`client`], and their records
//! folded by one aggregator that writes `records.jsonl` as they finish. Both spec-decode paths
//! are collected: per-request payloads, and `/metrics` before/after the window plus a live
//! timeline. Ctrl-C stops sending, drains what is in flight (bounded) and saves a partial run.

pub mod client;
pub mod prometheus;
pub mod report;
pub mod scrape;
pub mod tokens;
pub mod wire;
pub mod workload;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Gamma};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use speclens_shared::aggregate::SpecAggregator;
use speclens_shared::notices::{Notices, PathFigures};
use speclens_shared::results::RunResult;
use speclens_shared::run::{ErrorKind, RequestRecord};
use speclens_shared::scrape::{
    window_delta, window_result, CounterSet, ResultStatus, ScrapeFailure, SpecCounters, SpecDecodeResult,
};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::cli::{Arrival, BenchArgs, EndpointKind};
use crate::error::CollectorError;
use crate::live::LiveHub;
use client::{exchange, Target};
use scrape::{Endpoint, Timeline};
use workload::{BodyOptions, Prompt};

/// Validated settings of a run (the API key stays in the headers, never in here).
#[derive(Debug, Clone)]
pub struct BenchSettings {
    pub args: BenchArgs,
    pub model: String,
    pub out_dir: PathBuf,
    pub endpoints: Vec<Endpoint>,
}

/// What the run measured of speculative decoding, by path.
pub struct SpecPaths {
    /// Direct `/metrics` before/after, per endpoint.
    pub windows: Vec<ScrapeWindow>,
    /// Live scrapes (direct and Prometheus).
    pub timeline: Timeline,
    /// The Prometheus path's window and its breakdown, when configured.
    pub fleet: Option<prometheus::FleetOutcome>,
    /// Per-request payloads.
    pub spec: SpecAggregator,
    /// Per-request payloads rejected, by reason.
    pub rejected: BTreeMap<String, u64>,
    /// What the paths say about each other and the server.
    pub notices: Notices,
}

/// Messages from the dispatcher and the request tasks to the aggregator.
enum Event {
    Sent {
        id: u64,
        url: String,
        category: Option<String>,
        start_ms: f64,
        input_tokens: u64,
    },
    /// A request ended: its response as received, measured by the fold (not by the task).
    Done(Box<Finished>),
}

/// A finished request before measuring.
struct Finished {
    id: u64,
    target: usize,
    category: Option<String>,
    start_ms: f64,
    input_tokens: u64,
    outcome: client::Outcome,
}

/// What the load phase produced.
pub struct LoadOutcome {
    pub records: Vec<RequestRecord>,
    /// Seconds from the window's first send to its last completion.
    pub duration_s: f64,
    pub max_in_flight: u64,
    pub partial: bool,
}

fn header_map(args: &BenchArgs) -> Result<HeaderMap, CollectorError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(key) = &args.api_key {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            CollectorError::InvalidArgument("the API key holds characters a header cannot carry".into())
        })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    for h in &args.headers {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| CollectorError::InvalidArgument(format!("--header takes \"Name: value\", got {h:?}")))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| CollectorError::InvalidArgument(format!("bad header name in {h:?}")))?;
        let value = HeaderValue::from_str(value.trim())
            .map_err(|_| CollectorError::InvalidArgument(format!("bad header value in {h:?}")))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

fn http_client(args: &BenchArgs) -> Result<reqwest::Client, CollectorError> {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(args.concurrency.map_or(1024, |c| c as usize).min(4096))
        .build()
        .map_err(|e| CollectorError::InvalidArgument(format!("cannot build the HTTP client: {e}")))
}

/// The model to ask for: `--model`, else the first one the first server lists.
async fn resolve_model(
    client: &reqwest::Client,
    args: &BenchArgs,
    headers: &HeaderMap,
) -> Result<String, CollectorError> {
    if let Some(m) = &args.model {
        return Ok(m.clone());
    }
    let url = format!("{}/v1/models", server_base(&args.urls[0]));
    let fail =
        |why: String| CollectorError::InvalidArgument(format!("cannot list models at {url} ({why}); pass --model"));
    let response = client
        .get(&url)
        .headers(headers.clone())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| fail(e.to_string()))?;
    if !response.status().is_success() {
        return Err(fail(format!("HTTP {}", response.status().as_u16())));
    }
    let v: serde_json::Value = response.json().await.map_err(|e| fail(e.to_string()))?;
    v["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| fail("no model listed".into()))
}

/// A URL fit for files and logs: user, password and query removed (they may hold secrets).
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        Err(_) => url.split(['?', '@']).next().unwrap_or_default().to_string(),
    }
}

/// A server's base URL without a trailing `/` or `/v1` (OpenAI clients often include it).
fn server_base(url: &str) -> &str {
    let url = url.trim_end_matches('/');
    url.strip_suffix("/v1").unwrap_or(url)
}

/// Validate flags that need no network.
fn check_args(args: &BenchArgs) -> Result<(), CollectorError> {
    let invalid = |m: String| Err(CollectorError::InvalidArgument(m));
    if args.urls.is_empty() {
        return invalid("give at least one --url".into());
    }
    if let Some(r) = args.request_rate {
        if !(r.is_infinite() && r > 0.0 || r.is_finite() && r >= 1e-6) {
            return invalid(format!(
                "--request-rate must be at least 1e-6 requests/s (or inf), got {r}"
            ));
        }
    }
    if args.concurrency == Some(0) {
        return invalid("--concurrency must be at least 1".into());
    }
    if !(args.burstiness.is_finite() && args.burstiness > 0.0) {
        return invalid(format!("--burstiness must be > 0, got {}", args.burstiness));
    }
    if args.duration.is_some_and(|d| !(d.is_finite() && d > 0.0 && d <= 1e7)) {
        return invalid("--duration must be a number of seconds in (0, 1e7]".into());
    }
    let seconds = |v: f64, min: f64| v.is_finite() && v >= min && v <= 1e7;
    if !(seconds(args.timeout, 0.001) && seconds(args.scrape_interval, 0.05) && seconds(args.drain_timeout, 0.0)) {
        return invalid(
            "--timeout (≥ 0.001 s), --scrape-interval (≥ 0.05 s) and --drain-timeout (≥ 0 s) must be finite seconds up to 1e7"
                .into(),
        );
    }
    if args.percentiles.iter().any(|p| !(0.0..=100.0).contains(p)) {
        return invalid("--percentiles must lie in [0, 100]".into());
    }
    if args.num_prompts == 0 && args.duration.is_none() {
        return invalid("--num-prompts must be at least 1".into());
    }
    Ok(())
}

/// Gap before each request, in seconds (0 without a rate).
struct Schedule {
    rng: SmallRng,
    rate: Option<f64>,
    arrival: Arrival,
    burstiness: f64,
}

impl Schedule {
    fn next_gap_s(&mut self) -> f64 {
        let Some(rate) = self.rate.filter(|r| r.is_finite()) else {
            return 0.0;
        };
        match self.arrival {
            Arrival::Constant => 1.0 / rate,
            Arrival::Poisson if (self.burstiness - 1.0).abs() < 1e-12 => {
                Exp::new(rate).map_or(1.0 / rate, |d| d.sample(&mut self.rng))
            }
            Arrival::Poisson => Gamma::new(self.burstiness, 1.0 / (rate * self.burstiness))
                .map_or(1.0 / rate, |d| d.sample(&mut self.rng)),
        }
    }
}

struct Shared {
    client: reqwest::Client,
    hub: Arc<LiveHub>,
    tokens: tokens::TokenCounter,
    targets: Vec<Target>,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    /// When the latest response finished arriving: the run's end, whatever measuring of the
    /// received responses is still queued behind it.
    last_done: Mutex<Option<Instant>>,
}

impl Shared {
    fn note_done(&self, at: Instant) {
        let mut last = self.last_done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *last = Some(last.map_or(at, |l| l.max(at)));
    }

    fn last_done(&self) -> Option<Instant> {
        *self.last_done.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Send `prompts` (ids from `first_id`) and fold their records; stops early on `cancel`.
#[allow(clippy::too_many_arguments)]
async fn run_phase(
    shared: &Arc<Shared>,
    prompts: &[Prompt],
    bodies: &[axum::body::Bytes],
    first_id: u64,
    warmup: bool,
    settings: &BenchSettings,
    started: Instant,
    records_out: &mut std::io::BufWriter<std::fs::File>,
    progress: &ProgressBar,
    cancel: &mut watch::Receiver<bool>,
) -> Result<(Vec<RequestRecord>, bool), CollectorError> {
    let args = &settings.args;
    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let limit = Arc::new(Semaphore::new(
        args.concurrency.map_or(Semaphore::MAX_PERMITS, |c| c as usize),
    ));
    let mut schedule = Schedule {
        rng: SmallRng::seed_from_u64(args.seed ^ 0x5eed),
        rate: if warmup { None } else { args.request_rate },
        arrival: args.arrival,
        burstiness: args.burstiness,
    };
    let duration = if warmup {
        None
    } else {
        args.duration.map(Duration::from_secs_f64)
    };
    let phase_start = Instant::now();
    let mut tasks = JoinSet::new();
    let dispatcher = {
        let shared = shared.clone();
        let prompts = prompts.to_vec();
        let bodies = bodies.to_vec();
        let tx = tx.clone();
        let mut cancel = cancel.clone();
        let count = if duration.is_some() {
            u64::MAX
        } else {
            prompts.len() as u64
        };
        async move {
            let mut next_at = phase_start;
            for i in 0..count {
                if *cancel.borrow() {
                    break;
                }
                next_at += Duration::try_from_secs_f64(schedule.next_gap_s()).unwrap_or(Duration::MAX / 4);
                // Duration-bound runs stop at the deadline, by schedule and by the clock (a run
                // without a rate has every send scheduled at the start).
                let ended = |at: Instant| duration.is_some_and(|d| at > phase_start + d);
                if ended(next_at) || ended(Instant::now()) {
                    break;
                }
                // Finished tasks leave the set as the run goes, so long runs do not grow it.
                while tasks.try_join_next().is_some() {}
                tokio::select! {
                    _ = tokio::time::sleep_until(next_at) => {}
                    _ = cancel.changed() => break,
                }
                let permit = tokio::select! {
                    p = limit.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                    _ = cancel.changed() => break,
                };
                if *cancel.borrow() || ended(Instant::now()) {
                    break;
                }
                let idx = (i % prompts.len() as u64) as usize;
                let id = first_id + i;
                let target_idx = (id % shared.targets.len() as u64) as usize;
                let prompt = &prompts[idx];
                let start_ms = (Instant::now() - started).as_secs_f64() * 1e3;
                let _ = tx.send(Event::Sent {
                    id,
                    url: shared.targets[target_idx].display_url.clone(),
                    category: prompt.category.clone(),
                    start_ms,
                    input_tokens: prompt.input_tokens,
                });
                let body = bodies[idx].clone();
                let shared2 = shared.clone();
                let tx2 = tx.clone();
                let category = prompt.category.clone();
                let estimate = prompt.input_tokens;
                tasks.spawn(async move {
                    let now = shared2.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
                    shared2.max_in_flight.fetch_max(now, Ordering::AcqRel);
                    let target = &shared2.targets[target_idx];
                    let outcome = exchange(&shared2.client, target, body).await;
                    shared2.note_done(Instant::now());
                    shared2.in_flight.fetch_sub(1, Ordering::AcqRel);
                    drop(permit);
                    let record = Finished {
                        id,
                        target: target_idx,
                        category,
                        start_ms,
                        input_tokens: estimate,
                        outcome,
                    };
                    let _ = tx2.send(Event::Done(Box::new(record)));
                });
            }
            tasks
        }
    };
    drop(tx);
    let dispatch = tokio::spawn(dispatcher);

    // Aggregator: fold records as they finish; remember what is still in flight.
    let mut pending: Pending = HashMap::new();
    let mut records = Vec::new();
    let mut partial = false;
    let mut drain_deadline: Option<Instant> = None;
    loop {
        let next = match drain_deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(e) => e,
                Err(_) => break,
            },
            None => tokio::select! {
                e = rx.recv() => e,
                _ = cancel.changed() => {
                    partial = true;
                    drain_deadline = Some(Instant::now() + Duration::from_secs_f64(args.drain_timeout));
                    continue;
                }
            },
        };
        let Some(event) = next else { break };
        fold(event, &mut pending, &mut records, records_out, shared, warmup, progress)?;
    }
    // Abandon what did not finish in the drain window (only after Ctrl-C).
    if let Ok(mut tasks) = dispatch.await {
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    while let Ok(event) = rx.try_recv() {
        fold(event, &mut pending, &mut records, records_out, shared, warmup, progress)?;
    }
    let mut abandoned: Vec<_> = pending.into_iter().collect();
    abandoned.sort_by_key(|(id, _)| *id);
    for (id, (url, category, start_ms, input_tokens)) in abandoned {
        let ex = client::Exchange {
            error: Some((ErrorKind::Cancelled, "stopped by the user before it finished".into())),
            ..client::Exchange::default()
        };
        let record = to_record(id, url, category, warmup, start_ms, input_tokens, ex, &shared.tokens);
        write_record(records_out, &record)?;
        records.push(record);
    }
    records.sort_by_key(|r| r.request_id);
    Ok((records, partial))
}

/// Requests sent but not finished yet: url, category, start and input tokens by id.
type Pending = HashMap<u64, (String, Option<String>, f64, u64)>;

/// Fold one event of a phase: remember a send, or write and keep a finished record (the live
/// hub sees the measured window only).
fn fold(
    event: Event,
    pending: &mut Pending,
    records: &mut Vec<RequestRecord>,
    out: &mut std::io::BufWriter<std::fs::File>,
    shared: &Shared,
    warmup: bool,
    progress: &ProgressBar,
) -> Result<(), CollectorError> {
    let hub = &shared.hub;
    match event {
        Event::Sent {
            id,
            url,
            category,
            start_ms,
            input_tokens,
        } => {
            if !warmup {
                hub.note_sent();
            }
            pending.insert(id, (url, category, start_ms, input_tokens));
        }
        Event::Done(finished) => {
            let Finished {
                id,
                target,
                category,
                start_ms,
                input_tokens,
                outcome,
            } = *finished;
            let target = &shared.targets[target];
            let ex = client::measure(target, outcome);
            let record = to_record(
                id,
                target.display_url.clone(),
                category,
                warmup,
                start_ms,
                input_tokens,
                ex,
                &shared.tokens,
            );
            pending.remove(&record.request_id);
            write_record(out, &record)?;
            if !warmup {
                hub.note_record(&record);
            }
            progress.inc(1);
            records.push(record);
        }
    }
    Ok(())
}

fn write_record(out: &mut std::io::BufWriter<std::fs::File>, record: &RequestRecord) -> Result<(), CollectorError> {
    serde_json::to_writer(&mut *out, record).map_err(|e| CollectorError::Output(e.to_string()))?;
    out.write_all(b"\n").map_err(|e| CollectorError::Output(e.to_string()))
}

#[allow(clippy::too_many_arguments)]
fn to_record(
    id: u64,
    url: String,
    category: Option<String>,
    warmup: bool,
    start_ms: f64,
    input_tokens: u64,
    ex: client::Exchange,
    tokens: &tokens::TokenCounter,
) -> RequestRecord {
    let success = ex.error.is_none();
    let (error_kind, error) = match ex.error {
        Some((k, m)) => (Some(k), Some(m)),
        None => (None, None),
    };
    // The server's usage wins; without it, the tokenizer counts the text.
    let output_tokens = match (success, ex.completion_tokens) {
        (false, _) => 0,
        (true, Some(t)) => t,
        (true, None) => tokens.count(&ex.generated_text),
    };
    let spec_decode_acceptance = ex.spec.map(|mut r| {
        r.completion_tokens = r.completion_tokens.or(ex.completion_tokens);
        r
    });
    RequestRecord {
        request_id: id,
        url,
        category,
        warmup,
        start_ms,
        success,
        ttft_ms: ex.ttft_ms.filter(|_| success),
        e2el_ms: ex.e2el_ms,
        itl_ms: if success { ex.itl_ms } else { Vec::new() },
        input_tokens: ex.prompt_tokens.unwrap_or(input_tokens),
        output_tokens,
        error_kind,
        error,
        spec_decode_acceptance,
        spec_decode_rejected: ex.spec_rejected,
    }
}

/// The before/after scrape of every endpoint.
pub struct ScrapeWindow {
    pub endpoint: Endpoint,
    pub before: Result<CounterSet, ScrapeFailure>,
    pub after: Result<CounterSet, ScrapeFailure>,
    /// Restarts the live scrapes saw on this endpoint during the window.
    pub live_resets: Vec<String>,
}

impl ScrapeWindow {
    /// The window's result. A restart seen by the live scrapes makes it N/A even when the two
    /// snapshots alone look fine: after a restart, "after" holds only the growth since it.
    pub fn result(&self) -> SpecDecodeResult {
        let mut r = window_result(&redact_url(&self.endpoint.url), self.before.clone(), self.after.clone());
        if let (Some(first), ResultStatus::Ok) = (self.live_resets.first(), r.status) {
            r.status = ResultStatus::Na;
            r.data = None;
            r.error = Some(format!(
                "Counter reset detected during the window by the live scrapes: {first} (the before/after delta would hold only the growth since the restart)"
            ));
        }
        r
    }

    /// The counters' growth over the window, when its result is valid.
    pub fn delta(&self) -> Option<SpecCounters> {
        if !self.live_resets.is_empty() {
            return None;
        }
        match (&self.before, &self.after) {
            (Ok(b), Ok(a)) => window_delta(b, a).ok(),
            _ => None,
        }
    }
}

/// The two paths side by side (see `speclens_shared::notices`): the counters' window, when every
/// scraped endpoint's is valid (else the Prometheus path's), against the run's per-request totals.
fn assess_paths(
    windows: &[ScrapeWindow],
    fleet: Option<&prometheus::FleetOutcome>,
    spec: &SpecAggregator,
    records: &[RequestRecord],
) -> Notices {
    let deltas: Vec<SpecCounters> = windows.iter().filter_map(ScrapeWindow::delta).collect();
    let counters = if !windows.is_empty() && deltas.len() == windows.len() {
        let mut sum = SpecCounters::default();
        deltas.iter().for_each(|d| sum.add(d));
        Some(sum)
    } else {
        fleet
            .and_then(|f| f.result.data.as_ref())
            .map(|d| SpecCounters::new(d.num_drafts, d.draft_tokens, d.accepted_tokens, &[]))
    };
    let plain = !windows.is_empty()
        && windows
            .iter()
            .all(|w| matches!(w.after, Err(ScrapeFailure::NoSpecMetrics)));
    let server_speculates = if counters.is_some() {
        Some(true)
    } else if plain {
        Some(false)
    } else {
        None
    };
    let window = || records.iter().filter(|r| !r.warmup);
    Notices::assess(&PathFigures {
        counters: counters.as_ref(),
        per_request: spec.totals(),
        per_request_k: spec.num_spec_tokens(),
        requests: window().count() as u64,
        successful: window().filter(|r| r.success).count() as u64,
        with_stats: window().filter(|r| r.spec_decode_acceptance.is_some()).count() as u64,
        server_speculates,
    })
}

/// A finished run: where its files are, `result.json`'s content and the window's records.
pub struct RunOutput {
    pub dir: PathBuf,
    pub result: RunResult,
    pub records: Vec<RequestRecord>,
}

/// `speclens bench`: run, print, save.
pub async fn run(args: BenchArgs) -> Result<RunOutput, CollectorError> {
    run_with(args, None).await
}

/// A run that feeds `hub` (a dashboard another command serves) instead of its own.
pub async fn run_with(args: BenchArgs, hub: Option<Arc<LiveHub>>) -> Result<RunOutput, CollectorError> {
    check_args(&args)?;
    let prometheus = prometheus::Prometheus::from_args(&args.prometheus)?;
    let headers = header_map(&args)?;
    let client = http_client(&args)?;
    let model = resolve_model(&client, &args, &headers).await?;
    let endpoints = if args.no_scrape {
        Vec::new()
    } else {
        scrape::endpoints(&args.urls, &args.metrics_urls)?
    };
    let out_dir = match &args.out {
        Some(dir) => dir.clone(),
        None => report::default_out_dir(&args.label),
    };
    std::fs::create_dir_all(out_dir.join("performances"))
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out_dir.display())))?;
    let settings = BenchSettings {
        args,
        model,
        out_dir,
        endpoints,
    };
    let args = &settings.args;

    let window_count = if args.duration.is_some() {
        args.num_prompts.max(1)
    } else {
        args.num_prompts
    } as usize;
    let token_counter = tokens::TokenCounter::new()?;
    let all = workload::load(args, window_count + args.warmup as usize, &token_counter)?;
    let (warm, window) = all.split_at(args.warmup as usize);
    let opts = BodyOptions {
        endpoint: args.endpoint,
        model: &settings.model,
        stream: !args.no_stream,
        temperature: args.temperature,
        sglang_spec_details: args.sglang_spec_details,
    };
    let warm_bodies: Vec<_> = warm.iter().map(|p| workload::body(p, &opts)).collect();
    let window_bodies: Vec<_> = window.iter().map(|p| workload::body(p, &opts)).collect();
    let path = match args.endpoint {
        EndpointKind::Chat => "/v1/chat/completions",
        EndpointKind::Completions => "/v1/completions",
    };
    let timeout = Duration::from_secs_f64(args.timeout);
    let proxied = wire::proxy_in_environment();
    let targets = args
        .urls
        .iter()
        .map(|u| Target {
            url: format!("{}{path}", server_base(u)),
            display_url: redact_url(&format!("{}{path}", server_base(u))),
            endpoint: args.endpoint,
            headers: headers.clone(),
            stream: !args.no_stream,
            timeout,
            max_response_bytes: (args.max_response_mib as usize).saturating_mul(1 << 20),
            wire: (!proxied)
                .then(|| wire::Wire::for_url(&format!("{}{path}", server_base(u))))
                .flatten(),
        })
        .collect();
    let external_hub = hub.is_some();
    let hub = hub.unwrap_or_else(|| LiveHub::new(64));
    let shared = Arc::new(Shared {
        client: client.clone(),
        hub: hub.clone(),
        tokens: token_counter,
        targets,
        in_flight: AtomicU64::new(0),
        max_in_flight: AtomicU64::new(0),
        last_done: Mutex::new(None),
    });

    // The sender stays alive for the whole run (a dropped sender would read as a change).
    let (cancel_tx, mut cancel) = watch::channel(false);
    let cancel_tx = Arc::new(cancel_tx);
    let ctrl_c = {
        let cancel_tx = cancel_tx.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\nspeclens: stopping — waiting for requests in flight, then saving a partial run");
                let _ = cancel_tx.send(true);
            }
        })
    };

    let records_tmp = settings.out_dir.join(".records.jsonl.tmp");
    let file = std::fs::File::create(&records_tmp)
        .map_err(|e| CollectorError::Output(format!("cannot write {}: {e}", records_tmp.display())))?;
    let mut records_out = std::io::BufWriter::new(file);
    let total = warm.len() as u64
        + if args.duration.is_some() {
            0
        } else {
            window.len() as u64
        };
    let progress = if args.quiet {
        ProgressBar::hidden()
    } else {
        report::progress_bar(total, args.duration)
    };
    let started = Instant::now();
    let dashboard = if args.dashboard && !external_hub {
        Some(start_dashboard(&settings, &hub).await?)
    } else {
        None
    };

    let (mut records, mut partial) = if warm.is_empty() {
        (Vec::new(), false)
    } else {
        run_phase(
            &shared,
            warm,
            &warm_bodies,
            0,
            true,
            &settings,
            started,
            &mut records_out,
            &progress,
            &mut cancel,
        )
        .await?
    };
    let before: Vec<_> =
        futures_util::future::join_all(settings.endpoints.iter().map(|e| scrape::fetch(&client, &e.url))).await;
    let window_start_unix_s = prometheus::unix_now_s();
    let timeline = Arc::new(Mutex::new(Timeline::default()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut samplers: Vec<_> = settings
        .endpoints
        .iter()
        .map(|e| {
            tokio::spawn(scrape::sample_live(
                client.clone(),
                e.clone(),
                Duration::from_secs_f64(args.scrape_interval),
                started,
                timeline.clone(),
                hub.clone(),
                stop_rx.clone(),
            ))
        })
        .collect();
    if let Some(p) = &prometheus {
        samplers.push(tokio::spawn(prometheus::sample_live(
            p.clone(),
            Duration::from_secs_f64(args.scrape_interval),
            started,
            timeline.clone(),
            hub.clone(),
            stop_rx.clone(),
        )));
    }
    let window_start = Instant::now();
    hub.start_run(
        &args.label,
        &settings.model,
        args.duration.is_none().then_some(window.len() as u64),
    );
    let ticker = {
        let hub = hub.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(crate::live::TICK);
            loop {
                tokio::select! {
                    _ = every.tick() => hub.tick((Instant::now() - window_start).as_secs_f64()),
                    _ = stop.changed() => return,
                }
            }
        })
    };
    if !partial {
        let (window_records, window_partial) = run_phase(
            &shared,
            window,
            &window_bodies,
            warm.len() as u64,
            false,
            &settings,
            started,
            &mut records_out,
            &progress,
            &mut cancel,
        )
        .await?;
        records.extend(window_records);
        partial = window_partial;
    }
    // First send to last completion (not to the end of measuring what arrived).
    let window_end = shared
        .last_done()
        .filter(|t| *t > window_start)
        .unwrap_or_else(Instant::now);
    let duration_s = (window_end - window_start).as_secs_f64();
    progress.finish_and_clear();
    let _ = stop_tx.send(true);
    for s in samplers {
        let _ = s.await;
    }
    let _ = ticker.await;
    let after: Vec<_> = futures_util::future::join_all(
        settings
            .endpoints
            .iter()
            .map(|e| scrape::fetch_settled(&client, &e.url, Duration::from_secs(2))),
    )
    .await;
    // The counters are settled: the Prometheus path's window ends here.
    let fleet = match &prometheus {
        Some(p) => {
            if !args.quiet {
                eprintln!("speclens: reading the window from Prometheus (waits for a scrape past its end)");
            }
            Some(p.window(window_start_unix_s, prometheus::unix_now_s()).await)
        }
        None => None,
    };
    ctrl_c.abort();
    records_out.flush().map_err(|e| CollectorError::Output(e.to_string()))?;
    drop(records_out);
    let timeline = std::mem::take(&mut *timeline.lock().unwrap_or_else(|p| p.into_inner()));
    let timeline_resets = timeline.resets.clone();
    let windows: Vec<ScrapeWindow> = settings
        .endpoints
        .iter()
        .cloned()
        .zip(before.into_iter().zip(after))
        .map(|(endpoint, (before, after))| ScrapeWindow {
            live_resets: timeline_resets
                .iter()
                .filter_map(|r| r.strip_prefix(&format!("[{}] ", endpoint.label)).map(str::to_string))
                .collect(),
            endpoint,
            before,
            after,
        })
        .collect();
    let outcome = LoadOutcome {
        records,
        duration_s,
        max_in_flight: shared.max_in_flight.load(Ordering::Acquire),
        partial,
    };
    let mut spec = SpecAggregator::new();
    let mut rejected: BTreeMap<String, u64> = BTreeMap::new();
    for r in outcome.records.iter().filter(|r| !r.warmup && r.success) {
        if let Some(rec) = &r.spec_decode_acceptance {
            spec.push(rec);
        }
        if let Some(reason) = &r.spec_decode_rejected {
            *rejected
                .entry(reason.split(':').next().unwrap_or(reason).to_string())
                .or_default() += 1;
        }
    }
    let notices = assess_paths(&windows, fleet.as_ref(), &spec, &outcome.records);
    let mut not_available: Vec<String> = windows
        .iter()
        .filter_map(|w| {
            w.result()
                .error
                .map(|e| format!("scrape path [{}]: {e}", w.endpoint.label))
        })
        .collect();
    if spec.records() == 0 {
        not_available.push("per-request path: no request carried spec-decode stats".into());
    }
    if let Some(e) = fleet.as_ref().and_then(|f| f.result.error.as_ref()) {
        not_available.push(format!("Prometheus path: {e}"));
    }
    hub.set_findings(not_available, &notices);
    hub.finish(duration_s, partial);
    let paths = SpecPaths {
        windows,
        timeline,
        fleet,
        spec,
        rejected,
        notices,
    };
    let result = report::save_and_print(&settings, &outcome, &paths, &records_tmp)?;
    if let Some(d) = dashboard {
        eprintln!(
            "The dashboard keeps serving the finished run at {} — press Ctrl-C to quit.",
            d.url
        );
        let _ = tokio::signal::ctrl_c().await;
        d.stop().await?;
    }
    Ok(RunOutput {
        dir: settings.out_dir.clone(),
        result,
        records: outcome.records,
    })
}

/// Serve the live dashboard on loopback for this run; prints its URL.
async fn start_dashboard(
    settings: &BenchSettings,
    hub: &Arc<LiveHub>,
) -> Result<crate::serve::Dashboard, CollectorError> {
    let results = settings
        .out_dir
        .parent()
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    live_dashboard(settings.args.dashboard_port, results, hub).await
}

/// Serve the live page for `hub` on 127.0.0.1:`port` and print its URL (used by bench, sweep
/// and accept).
pub async fn live_dashboard(
    port: u16,
    results_dir: PathBuf,
    hub: &Arc<LiveHub>,
) -> Result<crate::serve::Dashboard, CollectorError> {
    let serve = crate::serve::ServeSettings {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        token: None,
        web_dir: crate::serve::resolve_web_dir(None)?,
        fragment: Some("live".into()),
        results_dir,
    };
    let dashboard = crate::serve::start(&serve, hub.clone()).await?;
    println!("speclens dashboard: {}", dashboard.url);
    Ok(dashboard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_secrets_and_the_v1_suffix() {
        assert_eq!(
            redact_url("http://user:pw@h:8000/v1/chat/completions?key=s"),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(server_base("http://h:8000/v1/"), "http://h:8000");
        assert_eq!(server_base("http://h:8000/prefix"), "http://h:8000/prefix");
    }

    fn gaps(arrival: Arrival, burstiness: f64) -> Vec<f64> {
        let mut s = Schedule {
            rng: SmallRng::seed_from_u64(3),
            rate: Some(10.0),
            arrival,
            burstiness,
        };
        (0..20_000).map(|_| s.next_gap_s()).collect()
    }

    fn mean_and_cv(v: &[f64]) -> (f64, f64) {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn arrivals_have_the_asked_rate_and_shape() {
        let (mean, cv) = mean_and_cv(&gaps(Arrival::Poisson, 1.0));
        assert!(
            (mean - 0.1).abs() < 0.003 && (cv - 1.0).abs() < 0.03,
            "Poisson: mean {mean}, cv {cv}"
        );
        // Gamma with shape b has a coefficient of variation of 1/sqrt(b).
        let (mean, cv) = mean_and_cv(&gaps(Arrival::Poisson, 0.25));
        assert!(
            (mean - 0.1).abs() < 0.005 && (cv - 2.0).abs() < 0.1,
            "bursty: mean {mean}, cv {cv}"
        );
        assert!(gaps(Arrival::Constant, 1.0).iter().all(|g| (*g - 0.1).abs() < 1e-12));
        let mut unlimited = Schedule {
            rng: SmallRng::seed_from_u64(1),
            rate: None,
            arrival: Arrival::Poisson,
            burstiness: 1.0,
        };
        assert_eq!(unlimited.next_gap_s(), 0.0);
    }
}
