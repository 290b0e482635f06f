//! What the pages share: small figures and headings, one run's panel, the result charts.

pub mod charts;
pub mod figures;
pub mod run_panel;
