//! A run, from its records up: each request's record and the run's tally, the per-request
//! aggregation, the figures per token and per chunk, the steady window, AIPerf's time-weighted figures, goodput, who pays in the
//! tail, what the two spec-decode paths say about each other, and the probe's judgement of a
//! server.

pub mod aggregate;
pub mod chunks;
mod console_rows;
pub mod goodput;
pub mod latency_stats;
pub mod notices;
pub mod probe;
pub mod progress;
pub mod record;
pub mod steady;
pub mod tail;
pub mod time_weighted;
