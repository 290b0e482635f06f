//! `speclens model`: the speedup model's table on the command line (docs/MODEL.md), optionally fed
//! with a measured E and measured per-position rates (the CLI builds the report from its flags).
//! Arithmetic only; runs anywhere.

use speclens_shared::model::ModelReport;

use crate::error::CollectorError;

/// Print the report as text or JSON.
pub fn run(report: &ModelReport, json: bool) -> Result<(), CollectorError> {
    if json {
        let text = serde_json::to_string_pretty(report).map_err(|e| CollectorError::Output(e.to_string()))?;
        crate::console::print(&format!("{text}\n"))
    } else {
        crate::console::print(&report.render())
    }
}
