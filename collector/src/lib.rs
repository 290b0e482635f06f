//! speclens collector: the library behind the `speclens` binary (a thin `main.rs` calls it).

pub mod accept;
pub mod bench;
pub mod check_cmd;
pub mod cli;
pub mod console;
pub mod demo;
pub mod error;
pub mod history;
pub mod live;
pub mod model_cmd;
pub mod net;
pub mod probe_cmd;
pub mod read;
pub mod report;
pub mod scrape_cmd;
pub mod serve;
pub mod session;
pub mod sim;
pub mod sweep;
pub mod watch_cmd;

pub use error::CollectorError;
