//! speclens shared core, built natively and for wasm32: pure logic only, no I/O, no clocks.
//!
//! The modules follow the data's path, bottom up (docs/DESIGN.md has the map): the leaves every
//! stage uses; `request` (what one response gives) and `scrape` (what the counters give); `run`
//! (records and what a run's records add up to); `model` (the speedup model); `results` (the
//! files); `sweep` (a sweep's comparison and recommendation); `check` (gates and regressions);
//! `view` (what a page shows); `chart` (the charts); `watch` (Prometheus rules and Grafana).
//! No module imports one above it.

// Leaves: used by every stage, importing none of them.
pub mod capped;
pub mod engine;
pub mod error;
pub mod figures;
pub mod file_label;
pub mod glossary;
pub mod pyfloat;
pub mod sample;

// The stages, bottom up.
/// What one response gives.
pub mod request;

/// What the server's counters give.
pub mod scrape;

/// Records, and what a run's records add up to.
pub mod run;

/// The speedup model, the what-if inputs and calibration.
pub mod model;

/// The files runs write and readers read back.
pub mod results;

/// A sweep: the arms compared level by level, the break-even and the recommendation.
pub mod sweep;

/// Gates and regression checks on finished work.
pub mod check;

/// What a page shows.
pub mod view;

/// The charts, drawn the same natively and in the page.
pub mod chart;

/// Prometheus rules and the Grafana dashboard.
pub mod watch;

pub use error::Error;
