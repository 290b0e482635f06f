//! The shared crate's one error type.

use thiserror::Error;

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
    /// A chart could not be drawn on its backend.
    #[error("chart drawing failed: {0}")]
    Chart(String),
    /// A Prometheus HTTP API answer is an error or not the shape it documents.
    #[error("Prometheus API: {0}")]
    PrometheusApi(String),
    /// A `--fail-if` gate is not well formed.
    #[error("invalid --fail-if gate {0}")]
    Gate(String),
    /// A `--goodput` objective is not well formed.
    #[error("invalid --goodput objective {0}")]
    Goodput(String),
    /// A model input is outside its domain.
    #[error("invalid model input: {0}")]
    ModelInput(String),
}
