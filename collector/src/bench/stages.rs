//! What the bench's stages hand each other: a prepared run (the plan with what was resolved
//! before the first request), what the load phase produced, and the finished run.

use std::path::PathBuf;
use std::sync::Arc;

use speclens_shared::engine::Engine;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::run::record::RunTally;
use speclens_shared::run::steady::SteadyState;

use super::load::{self, Shared};
use super::plan::Plan;
use super::scrape::Endpoint;
use super::workload::Feed;
use crate::error::Signal;

/// A finished run: where its files are, `result.json`'s content and the window's figures (its
/// records are in the folder's `records.jsonl`).
pub struct RunOutput {
    pub dir: PathBuf,
    pub result: RunResult,
    pub tally: RunTally,
    /// The signal that stopped the run early, if one did.
    pub interrupted: Option<Signal>,
}

/// A run ready to send: the plan with what was resolved before the first request.
pub struct Prepared {
    pub plan: Plan,
    /// The model asked for.
    pub model: String,
    /// Every served name the run sends to, in turn (`model` first).
    pub models: Vec<String>,
    /// The engine serving it, as detected or named (None: not known).
    pub engine: Option<Engine>,
    /// The version the server reports (None: it reports none, or had not answered by the end
    /// of the run).
    pub server_version: Option<String>,
    /// The question for it, asked beside the run.
    pub(super) version_probe: Option<tokio::task::JoinHandle<Option<String>>>,
    pub out_dir: PathBuf,
    /// Metrics endpoints scraped directly (none with scraping off).
    pub endpoints: Vec<Endpoint>,
    /// Warm-up requests, and each phase's requests in sending order.
    pub(super) warmup_count: u64,
    pub(super) warmup: Feed,
    pub(super) window: Feed,
    pub(super) shared: Arc<Shared>,
}

/// What the load phase produced.
pub struct LoadOutcome {
    /// The window's records, folded.
    pub tally: RunTally,
    /// The closed loop's steady window (none for an open loop, or one that never filled).
    pub steady: Option<SteadyState>,
    /// Seconds from the window's first send to its last completion.
    pub duration_s: f64,
    /// Wall-clock Unix nanoseconds at the run's start (from which records' `start_ms` count),
    /// and Unix seconds at the window's first send.
    pub started_unix_ns: u64,
    pub window_start_unix_s: f64,
    /// The window on the records' clock (ms from the run's start): first send to last
    /// completion, what AIPerf's time-weighted figures cover.
    pub window_ms: (f64, f64),
    pub max_in_flight: u64,
    pub partial: bool,
    /// The signal that stopped the run early, if one did.
    pub interrupted: Option<Signal>,
    /// Set when `records.jsonl` could not be written whole (a full disk).
    pub records_cut: Option<load::RecordsCut>,
}

impl Prepared {
    /// The version the server reported, if its probe has answered by the end of the run (it is
    /// never waited for: a probe still out is dropped, and the run records no version).
    pub async fn settle_server_version(&mut self) {
        if let Some(probe) = self.version_probe.take() {
            self.server_version = if probe.is_finished() {
                probe.await.ok().flatten()
            } else {
                probe.abort();
                None
            };
        }
    }
}
