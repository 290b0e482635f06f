//! `speclens sim`: a simulated vLLM-compatible server with speculative decoding, for machines
//! without a GPU and for every end-to-end test. Same HTTP API, same `/metrics` text, same
//! per-request payloads as the real engines; acceptance and timing follow configurable models;
//! faults can be injected by flag.

mod api;
pub mod engine;
pub mod exposition;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use speclens_shared::figures::acceptance_length;
use tokio::sync::{mpsc, oneshot};

use crate::error::CollectorError;
pub use api::{PayloadShape, PerRequestMetrics};
pub use engine::{AcceptanceProfile, StepModel};
pub use engine::{EngineConfig, KV_BLOCK_TOKENS};
use engine::{EngineCounters, EngineShared, FinishHook, Submission};

/// Default acceptance when speculation is on but no profile is given.
pub const DEFAULT_ALPHA: f64 = 0.7;

/// Prompt categories the sim recognises from prompt text, with their default acceptance
/// multipliers (copy-heavy work accepts more drafts, free writing and translation fewer).
pub const DEFAULT_CATEGORY_FACTORS: [(&str, f64); 6] = [
    ("summarization", 1.15),
    ("coding", 1.05),
    ("qa", 1.0),
    ("math", 0.95),
    ("writing", 0.85),
    ("translation", 0.8),
];

/// The category of a prompt, from its words.
pub fn detect_category(prompt: &str) -> Option<&'static str> {
    let text = prompt.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if has(&["summar", "tl;dr"]) {
        Some("summarization")
    } else if has(&["translat"]) {
        Some("translation")
    } else if has(&["code", "function", "python", "program"]) {
        Some("coding")
    } else if has(&["math", "calculate", "solve", "equation"]) {
        Some("math")
    } else if has(&["write", "story", "poem", "essay"]) {
        Some("writing")
    } else if text.contains('?') {
        Some("qa")
    } else {
        None
    }
}

/// Faults injected for tests of everything downstream (all off by default).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Answer this fraction of completion requests with HTTP 500.
    pub fail_rate: f64,
    /// Reset the connection mid-stream on this fraction of requests.
    pub reset_rate: f64,
    /// End the SSE stream early (no finish chunk, no `[DONE]`) on this fraction of requests.
    pub truncate_rate: f64,
    /// Delay the first token of this fraction of requests by --stall-ms.
    pub stall_rate: f64,
    pub stall_ms: u64,
    /// Never answer this fraction of requests (the client must time out).
    pub hang_rate: f64,
    /// Answer this fraction of requests with an oversized body (--oversized-kib of padding).
    pub oversized_rate: f64,
    pub oversized_kib: u64,
    /// `/metrics` answers HTTP 503 from the start.
    pub metrics_down: bool,
    /// `/metrics` answers HTTP 503 once this many requests have finished.
    pub metrics_down_after: Option<u64>,
    /// `/metrics` answers HTTP 503 until this many requests have finished.
    pub metrics_down_until: Option<u64>,
    /// Simulate a restart (all counters back to zero) before the first request that arrives
    /// after this many have finished.
    pub reset_counters_after: Option<u64>,
    /// `(after, factor)`: every request that arrives once `after` have finished has its
    /// acceptance multiplied by `factor` (a drafter gone stale, traffic that changed mid-run).
    pub acceptance_drop: Option<(u64, f64)>,
    /// Write `/metrics` as in multiprocess mode (no `_created` gauges).
    pub multiproc_exposition: bool,
    /// Add malformed lines to `/metrics`.
    pub malformed_metrics: bool,
    /// TensorRT-LLM shape: no `/prometheus/metrics` (trtllm-serve without `return_perf_metrics`).
    pub no_perf_metrics: bool,
    /// TensorRT-LLM shape: no iteration counters or gauges there (without
    /// `enable_iter_perf_stats`).
    pub no_iter_perf_stats: bool,
    /// TensorRT-LLM shape: a build before the per-position pair (PR #12636, 2026-03).
    pub no_per_position_pair: bool,
}

/// Validated settings of one simulated server.
#[derive(Debug, Clone)]
pub struct SimSettings {
    pub addr: SocketAddr,
    pub model: String,
    pub api_key: Option<String>,
    pub engines: u32,
    pub engine: EngineConfig,
    /// The acceptance profile at temperature 0 (None on a plain server).
    pub profile: Option<AcceptanceProfile>,
    pub temperature_sensitivity: f64,
    /// Per-request acceptance spread: each request's rates scaled by a factor in
    /// [1 − spread, 1 + spread] drawn from its prompt.
    pub acceptance_spread: f64,
    pub category_factors: Vec<(String, f64)>,
    pub max_model_len: u32,
    pub mean_output_tokens: u32,
    pub per_request: PerRequestMetrics,
    /// vLLM 0.33's `--enable-per-request-metrics`: the engine's timings in each response.
    pub per_request_timings: bool,
    pub payload: PayloadShape,
    /// Spec-decode counters start at this many drafts (see `EngineCounters::started_at`).
    pub counter_start: u64,
    pub faults: Faults,
}

impl SimSettings {
    /// A plain server on `addr` with `speclens sim`'s defaults: one engine, 256 sequences, a
    /// 12 ms step, an H100's ridge, real time, summary per-request stats in vLLM's shape.
    pub fn new(addr: SocketAddr, model: &str) -> SimSettings {
        SimSettings {
            addr,
            model: model.into(),
            api_key: None,
            engines: 1,
            engine: EngineConfig {
                k: 0,
                schedule: Vec::new(),
                max_num_seqs: 256,
                kv_cache_blocks: 524_288 / engine::KV_BLOCK_TOKENS,
                step: StepModel {
                    base_step_s: 0.012,
                    ridge_tokens: 295.0,
                    draft_cost: 0.0,
                    draft_overhead_s: 0.0,
                },
                time_scale: 1.0,
                seed: 0,
            },
            profile: None,
            temperature_sensitivity: 0.15,
            acceptance_spread: 0.0,
            category_factors: DEFAULT_CATEGORY_FACTORS
                .iter()
                .map(|(n, f)| (n.to_string(), *f))
                .collect(),
            max_model_len: 8192,
            mean_output_tokens: 256,
            per_request: PerRequestMetrics::Summary,
            per_request_timings: false,
            payload: PayloadShape::Vllm,
            counter_start: 0,
            faults: Faults::default(),
        }
    }

    /// Speculate with `profile` (its k drafts per step).
    pub fn with_profile(mut self, profile: AcceptanceProfile) -> SimSettings {
        self.engine.k = profile.k();
        self.profile = Some(profile);
        self
    }

    /// The acceptance profile for one request, lowered by temperature and scaled by category.
    pub fn profile_for(&self, prompt: &str, temperature: f64) -> Option<AcceptanceProfile> {
        let base = self.profile.as_ref()?;
        let category = detect_category(prompt)
            .and_then(|c| self.category_factors.iter().find(|(n, _)| n == c))
            .map_or(1.0, |(_, f)| *f);
        let heat = (1.0 - self.temperature_sensitivity * temperature.max(0.0)).max(0.0);
        Some(base.scaled(category * heat * self.spread_factor(prompt)))
    }

    /// The request's own acceptance factor, uniform in [1 − spread, 1 + spread] over prompts:
    /// the same prompt always draws the same factor.
    fn spread_factor(&self, prompt: &str) -> f64 {
        if self.acceptance_spread <= 0.0 {
            return 1.0;
        }
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        prompt.hash(&mut hasher);
        let unit = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
        1.0 + self.acceptance_spread * (2.0 * unit - 1.0)
    }
}

pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Server-wide request accounting: finished requests, the simulated restart.
struct Lifecycle {
    k: u32,
    engines: Vec<Arc<EngineShared>>,
    finished: AtomicU64,
    reset_after: Option<u64>,
    reset_done: AtomicBool,
}

impl FinishHook for Lifecycle {
    fn request_finished(&self) {
        self.finished.fetch_add(1, Ordering::AcqRel);
    }
}

impl Lifecycle {
    /// The simulated restart of `--reset-counters-after N`: once N requests have finished, the
    /// next request to arrive finds a restarted server (every counter back to zero). Between the
    /// two, the counters still show the N requests, as a real server's do until it goes down.
    fn before_admit(&self) {
        let finished = self.finished.load(Ordering::Acquire);
        if self.reset_after.is_some_and(|n| finished >= n) && !self.reset_done.swap(true, Ordering::AcqRel) {
            let now = unix_now();
            for engine in &self.engines {
                let mut c = engine.counters();
                let (running, waiting) = (c.running, c.waiting);
                *c = EngineCounters::new(self.k, now);
                c.running = running;
                c.waiting = waiting;
            }
            tracing::warn!(after = finished, "simulated restart: every counter reset to zero");
        }
    }
}

/// Everything the HTTP handlers share.
pub(crate) struct SimState {
    pub settings: SimSettings,
    /// The spec counters at the last scrape and the gauges of the latest interval with drafts
    /// (SGLang's and TensorRT-LLM's gauges hold recent iterations).
    recent: std::sync::Mutex<((u64, u64, u64), Option<exposition::RecentGauges>)>,
    lifecycle: Arc<Lifecycle>,
    submit: Vec<mpsc::UnboundedSender<Submission>>,
    next_engine: AtomicUsize,
    pub requests: AtomicU64,
}

impl SimState {
    fn submit(&self, submission: Submission) -> Result<(), Submission> {
        self.lifecycle.before_admit();
        let i = self.next_engine.fetch_add(1, Ordering::Relaxed) % self.submit.len();
        self.submit[i].send(submission).map_err(|e| e.0)
    }

    fn finished_requests(&self) -> u64 {
        self.lifecycle.finished.load(Ordering::Acquire)
    }

    fn engine_counters(&self) -> Vec<EngineCounters> {
        self.lifecycle.engines.iter().map(|e| e.counters().clone()).collect()
    }

    /// The engine gauges now: acceptance over the drafts since the previous scrape, or the
    /// last such figure when there were none.
    fn recent_gauges(&self, engines: &[EngineCounters]) -> Option<exposition::RecentGauges> {
        let now = engines.iter().fold((0u64, 0u64, 0u64), |(d, t, a), c| {
            (d + c.num_drafts, t + c.num_draft_tokens, a + c.num_accepted_tokens)
        });
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        let (last, gauges) = &mut *recent;
        let (drafts, tokens, accepted) = (
            now.0.saturating_sub(last.0),
            now.1.saturating_sub(last.1),
            now.2.saturating_sub(last.2),
        );
        if drafts > 0 && tokens > 0 {
            *gauges = Some(exposition::RecentGauges {
                acceptance_length: acceptance_length(accepted as f64, drafts as f64).unwrap_or(1.0),
                acceptance_rate: accepted as f64 / tokens as f64,
            });
        }
        *last = now;
        *gauges
    }
}

/// A running simulated server.
pub struct SimHandle {
    pub addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl SimHandle {
    /// Stop accepting, finish, and return the server's result.
    pub async fn stop(mut self) -> Result<(), CollectorError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.await {
            Ok(result) => result.map_err(CollectorError::Serve),
            Err(e) => Err(CollectorError::Serve(std::io::Error::other(e))),
        }
    }
}

/// Bind and start serving in the background (engines included).
pub async fn start(settings: SimSettings) -> Result<SimHandle, CollectorError> {
    let (listener, addr) = crate::net::bind(settings.addr).await?;
    let created = unix_now();
    let k = settings.engine.k;
    let engines: Vec<Arc<EngineShared>> = (0..settings.engines)
        .map(|_| Arc::new(EngineShared::new(k, created)))
        .collect();
    for engine in &engines {
        engine.counters().start_at(settings.counter_start);
    }
    let lifecycle = Arc::new(Lifecycle {
        k,
        engines: engines.clone(),
        finished: AtomicU64::new(0),
        reset_after: settings.faults.reset_counters_after,
        reset_done: AtomicBool::new(false),
    });
    let mut submit = Vec::new();
    for (i, shared) in engines.iter().enumerate() {
        let (tx, rx) = mpsc::unbounded_channel();
        submit.push(tx);
        let config = EngineConfig {
            seed: settings.engine.seed.wrapping_add(i as u64 * 0x9e37_79b9),
            ..settings.engine.clone()
        };
        tokio::spawn(engine::run_engine(config, shared.clone(), rx, lifecycle.clone()));
    }
    let state = Arc::new(SimState {
        recent: std::sync::Mutex::new(((0, 0, 0), None)),
        settings,
        lifecycle,
        submit,
        next_engine: AtomicUsize::new(0),
        requests: AtomicU64::new(0),
    });
    let (tx, rx) = oneshot::channel::<()>();
    let app = api::router(state);
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        // Without TCP_NODELAY each streamed chunk waits ~40 ms (Nagle meets delayed ACK).
        let _ = tcp.set_nodelay(true);
    });
    // Connections at once are capped as the dashboard's are: clients that never read cannot
    // use up the process's files.
    let listener = crate::net::CappedListener {
        inner: listener,
        slots: Arc::new(tokio::sync::Semaphore::new(crate::net::connection_cap())),
    };
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await
    });
    Ok(SimHandle {
        addr,
        shutdown: Some(tx),
        task,
    })
}

/// [`start`] on a runtime of its own, on a thread of its own: how the demo runs its sims in the
/// same process without sharing a runtime with the load generator, so the client's work never
/// delays an engine's step (as two separate processes would not).
pub async fn start_on_own_thread(settings: SimSettings) -> Result<SimHandle, CollectorError> {
    let (ready_tx, ready_rx) = oneshot::channel::<Result<SocketAddr, CollectorError>>();
    let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<Result<(), CollectorError>>();
    std::thread::Builder::new()
        .name("speclens-sim".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    let _ = ready_tx.send(Err(CollectorError::Serve(e)));
                    return;
                }
            };
            runtime.block_on(async move {
                match start(settings).await {
                    Ok(sim) => {
                        let _ = ready_tx.send(Ok(sim.addr));
                        let _ = shutdown_rx.await;
                        let _ = done_tx.send(sim.stop().await);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            });
        })
        .map_err(CollectorError::Serve)?;
    let addr = ready_rx
        .await
        .map_err(|_| CollectorError::Serve(std::io::Error::other("the sim's thread ended before it served")))??;
    let task = tokio::spawn(async move {
        match done_rx.await {
            Ok(Err(e)) => Err(std::io::Error::other(e.to_string())),
            _ => Ok(()),
        }
    });
    Ok(SimHandle {
        addr,
        shutdown: Some(shutdown_tx),
        task,
    })
}

/// `speclens sim`: serve until Ctrl-C.
pub async fn run(settings: SimSettings) -> Result<(), CollectorError> {
    let describe = match &settings.profile {
        Some(p) => {
            let rates: Vec<String> = p.rates().iter().map(|r| format!("{r:.3}")).collect();
            format!(
                "speculative, k = {}, per-position acceptance at T = 0: {}",
                p.k(),
                rates.join(", ")
            )
        }
        None => "no speculation (base arm)".to_string(),
    };
    let engines = settings.engines;
    let model = settings.model.clone();
    let handle = start(settings).await?;
    crate::outln!("speclens sim: http://{}", handle.addr)?;
    eprintln!("serving {model} on {engines} engine(s), {describe} — press Ctrl-C to stop");
    let _ = crate::net::stop_signal().await;
    handle.stop().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_from_prompt_text() {
        assert_eq!(
            detect_category("Summarize the following article"),
            Some("summarization")
        );
        assert_eq!(detect_category("Translate to German: hello"), Some("translation"));
        assert_eq!(detect_category("Write a Python function"), Some("coding"));
        assert_eq!(detect_category("What is the capital of France?"), Some("qa"));
        assert_eq!(detect_category("hello there"), None);
    }
}
