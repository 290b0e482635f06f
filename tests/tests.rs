//! All integration and browser tests of speclens, in one test binary (one module per area).

mod aiperf_reference;
mod analysis;
mod bench_run;
mod bounds;
mod bounds_decoded;
mod browser_context;
mod browser_demo;
mod browser_live;
mod browser_report;
mod browser_story;
mod browser_sweep_live;
mod browser_whatif;
mod common;
mod dashboard_server;
mod decisions;
mod engines;
mod files_and_flags;
mod fleet;
mod parity;
mod real_llamacpp;
mod real_vllm;
mod reference_data;
mod sim_server;
mod structure;
mod trace_replay;
mod watch;
