//! What the simulated server's handlers share: its settings, its engines' counters, the request
//! accounting behind the simulated restart, and the clock of `created` stamps.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use speclens_shared::figures::acceptance_length;
use tokio::sync::mpsc;

use super::engine::{EngineCounters, EngineShared, FinishHook, Submission};
use super::exposition;
use super::settings::SimSettings;

pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Server-wide request accounting: finished requests, the simulated restart.
pub(super) struct Lifecycle {
    pub(super) k: u32,
    pub(super) engines: Vec<Arc<EngineShared>>,
    pub(super) finished: AtomicU64,
    pub(super) reset_after: Option<u64>,
    pub(super) reset_done: AtomicBool,
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
    pub(super) fn before_admit(&self) {
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
    pub(super) recent: std::sync::Mutex<((u64, u64, u64), Option<exposition::RecentGauges>)>,
    pub(super) lifecycle: Arc<Lifecycle>,
    pub(super) submit: Vec<mpsc::UnboundedSender<Submission>>,
    pub(super) next_engine: AtomicUsize,
    pub requests: AtomicU64,
}

impl SimState {
    pub(super) fn submit(&self, submission: Submission) -> Result<(), Submission> {
        self.lifecycle.before_admit();
        let i = self.next_engine.fetch_add(1, Ordering::Relaxed) % self.submit.len();
        self.submit[i].send(submission).map_err(|e| e.0)
    }

    pub(super) fn finished_requests(&self) -> u64 {
        self.lifecycle.finished.load(Ordering::Acquire)
    }

    pub(super) fn engine_counters(&self) -> Vec<EngineCounters> {
        self.lifecycle.engines.iter().map(|e| e.counters().clone()).collect()
    }

    /// The engine gauges now: acceptance over the drafts since the previous scrape, or the
    /// last such figure when there were none.
    pub(super) fn recent_gauges(&self, engines: &[EngineCounters]) -> Option<exposition::RecentGauges> {
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
