//! One module per command that is not the load generator itself (`bench`) or the simulated
//! engine (`sim`): each turns its plan into work and prints or serves the answer.

pub mod accept;
mod arm_check;
pub mod check;
pub mod demo;
pub mod model;
pub mod probe;
pub mod read;
pub mod report;
pub mod scrape;
pub mod sweep;
mod sweep_points;
pub mod watch;
