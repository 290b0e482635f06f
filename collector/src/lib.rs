//! speclens collector: the library behind the `speclens` binary (a thin `main.rs` calls it).

pub mod accept_table;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod console;
pub mod error;
pub mod files;
pub mod live;
pub mod net;
pub mod results_folder;
pub mod serve;
pub mod session;
pub mod sim;
pub mod tls;

pub use error::CollectorError;
