//! speclens collector: the library behind the `speclens` binary (a thin `main.rs` calls it).

pub mod bench;
pub mod cli;
pub mod error;
pub mod net;
pub mod serve;
pub mod sim;

pub use error::CollectorError;
