//! The collector's one error type.

use std::net::SocketAddr;
use std::path::PathBuf;

use thiserror::Error;

/// Everything the collector can fail at, with a message a user can act on.
#[derive(Debug, Error)]
pub enum CollectorError {
    #[error("dashboard assets not found: {dir}/index.html is missing (build them with `bash scripts/demo.sh`, or `trunk build --release`, or pass --web-dir)")]
    WebAssetsMissing { dir: PathBuf },
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("the server stopped with an error: {0}")]
    Serve(std::io::Error),
    #[error("cannot generate an access token: {0}")]
    Token(String),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    Output(String),
    /// The server under test failed before the run could start.
    #[error("{0}")]
    Server(String),
    #[error("an access token must be at least 16 characters of [A-Za-z0-9_-]")]
    WeakToken,
    /// Whoever read stdout stopped reading (`| head`): not a failure of the run.
    #[error("stdout was closed")]
    ClosedPipe,
    /// The run finished and its files are saved, but it failed: no request succeeded, or more
    /// failed than `--max-error-rate` allows.
    #[error("{0}")]
    RunFailed(String),
    /// A `--fail-if` gate held (the files are saved).
    #[error("{0}")]
    GateTripped(String),
    /// A signal stopped the run; what it had is saved, marked partial.
    #[error("{message}")]
    Interrupted { message: String, signal: Signal },
}

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Ctrl-C.
    Interrupt,
    /// What `timeout`, `docker stop` and CI cancellation send.
    Terminate,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    /// The shell's exit code for a process the signal ended: 128 + its number.
    pub fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
        }
    }
}

impl CollectorError {
    /// The exit code: 2 for usage errors, 3 for a `--fail-if` gate that held, 130 / 143 for a
    /// run a signal stopped (as a shell reports it), 1 for any other failure (README "Exit codes").
    pub fn exit_code(&self) -> u8 {
        match self {
            CollectorError::InvalidArgument(_) | CollectorError::WeakToken => 2,
            CollectorError::GateTripped(_) => 3,
            CollectorError::Interrupted { signal, .. } => signal.exit_code(),
            CollectorError::ClosedPipe => 0,
            _ => 1,
        }
    }
}
