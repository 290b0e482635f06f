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
    #[error("an access token must be at least 16 characters of [A-Za-z0-9_-]")]
    WeakToken,
}
