//! speclens shared core, built natively and for wasm32: Prometheus parsing, spec-decode metric
//! types, engine payload adapters, aggregation, the speedup model, the what-if state and charts.
//! Pure logic only: no I/O, no clocks.

pub mod aggregate;
pub mod aiperf;
pub mod calibrate;
pub mod capped;
pub mod chart;
pub mod engine;
pub mod error;
pub mod figures;
pub mod file_label;
pub mod fleet;
pub mod gates;
pub mod glossary;
pub mod goodput;
pub mod headline;
pub mod http_trace;
pub mod live_state;
pub mod model;
pub mod notices;
pub mod overview;
pub mod per_request;
pub mod positions;
pub mod probe;
pub mod prom;
pub mod protocol;
pub mod pyfloat;
pub mod regress;
pub mod report_data;
pub mod results;
pub mod run;
pub mod sample;
pub mod scrape;
pub mod sse;
pub mod steady;
pub mod sweep;
pub mod sweepline;
pub mod tail;
pub mod view;
pub mod warnings;
pub mod watch;
pub mod whatif;

pub use error::Error;
