//! The shared crate's one error type.

use thiserror::Error;

/// Reason given when a window saw no drafted tokens (AISBench's wording).
pub const NO_ACTIVITY: &str = "No spec decode activity detected during benchmark window";

/// Everything that can go wrong in the pure logic of the shared crate.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// The Prometheus text exposition is malformed.
    #[error("invalid metrics text at line {line}: {message}")]
    Exposition { line: usize, message: String },
    /// A spec-decode sample holds a value that cannot be a counter (±Inf, negative, fractional).
    #[error("{metric}{{{labels}}}: {message}")]
    CounterValue {
        metric: String,
        labels: String,
        message: String,
    },
    /// The same spec-decode series appears twice in one exposition.
    #[error("duplicate sample {metric}{{{labels}}}")]
    DuplicateSample { metric: String, labels: String },
    /// Some spec-decode counter families are present and others are missing.
    #[error("incomplete spec decode metrics: {missing} missing")]
    IncompleteCounters { missing: String },
    /// A window in which nothing was drafted (AISBench's wording).
    #[error("{}", NO_ACTIVITY)]
    NoActivity,
    /// A window's counters say more tokens were accepted than drafted.
    #[error("Impossible counters: {accepted} accepted tokens exceed {drafted} draft tokens in the window")]
    AcceptedAboveDrafted { accepted: u64, drafted: u64 },
    /// SGLang's counters say fewer tokens were generated than its requests and verify steps give.
    #[error("Inconsistent counters: {generated} generated tokens are fewer than {requests} requests plus {verify} verify calls in the window")]
    GeneratedBelowSteps { generated: u64, requests: u64, verify: u64 },
    /// The counters before and after a window are of two engines.
    #[error("The server's counters changed engine during the window ({before} before, {after} after)")]
    EngineChanged { before: String, after: String },
    /// A series counted before a window is gone after it: the server restarted.
    #[error("Counter reset detected: {counter} is missing after the benchmark window (server restarted?)")]
    SeriesVanished { counter: String },
    /// A counter is lower after a window than before it: the server restarted.
    #[error("Counter reset detected: {counter} went down from {before} to {after} during the benchmark window (server restarted?)")]
    CounterWentDown { counter: String, before: u64, after: u64 },
    /// A chart could not be drawn on its backend.
    #[error("chart drawing failed: {0}")]
    Chart(String),
    /// A Prometheus HTTP API answer is an error or not the shape it documents.
    #[error("Prometheus API: {0}")]
    PrometheusApi(String),
    /// Settings of `speclens rules` or `speclens grafana` that Prometheus would refuse.
    #[error("{0}")]
    Rules(String),
    /// A `--fail-if` gate is not well formed.
    #[error("invalid --fail-if gate {0}")]
    Gate(String),
    /// A `--goodput` objective is not well formed.
    #[error("invalid --goodput objective {0}")]
    Goodput(String),
    /// An engine schedule breaks the engine's own rules.
    #[error("invalid schedule: {0}")]
    Schedule(String),
    /// A model input is outside its domain.
    #[error("invalid model input: {0}")]
    ModelInput(String),
}
