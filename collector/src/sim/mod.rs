//! `speclens sim`: a simulated vLLM-compatible server with speculative decoding, for machines
//! without a GPU and for every end-to-end test. Same HTTP API, same `/metrics` text, same
//! per-request payloads as the real engines; acceptance and timing follow configurable models;
//! faults can be injected by flag.

mod api;
pub mod engine;
pub mod exposition;
mod payload;
mod prefix_cache;
mod settings;
mod state;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::error::CollectorError;
use engine::EngineShared;
pub use engine::{AcceptanceProfile, StepModel};
pub use engine::{EngineConfig, KV_BLOCK_TOKENS};
pub use payload::{PayloadShape, PerRequestMetrics};
pub use settings::{detect_category, Faults, SimSettings, DEFAULT_ALPHA, DEFAULT_CATEGORY_FACTORS};
use state::{unix_now, Lifecycle, SimState};

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
