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
}

impl CollectorError {
    /// The exit code, as ripgrep's: 2 for usage errors, 1 for a run or check that failed.
    pub fn exit_code(&self) -> u8 {
        match self {
            CollectorError::InvalidArgument(_) | CollectorError::WeakToken => 2,
            CollectorError::ClosedPipe => 0,
            _ => 1,
        }
    }
}
