//! Command-line interface: raw arguments parsed by clap, validated into settings the rest of
//! the program trusts.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Measure speculative decoding: acceptance, where it stops paying, and what the model predicts.
#[derive(Debug, Parser)]
#[command(name = "speclens", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the dashboard (the in-page what-if model) on 127.0.0.1.
    Serve(ServeArgs),
}

/// Flags of `speclens serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to bind. Anything but a loopback address requires an access token.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to bind (0 picks a free one).
    #[arg(long, default_value_t = 8321)]
    pub port: u16,
    /// Access token required by every page and API request. Generated when binding a
    /// non-loopback address without one.
    #[arg(long, env = "SPECLENS_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Folder holding the built dashboard (index.html, .js, .wasm).
    #[arg(long, env = "SPECLENS_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
}
