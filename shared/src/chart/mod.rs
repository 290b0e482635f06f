//! Charts drawn with plotters, generic over the drawing backend: the same code draws on the
//! page's canvas and to SVG in native tests and reports. One file per view (the what-if's
//! speedup curves, the live page's charts, the sweep); colours and helpers shared here.

use plotters::coord::Shift;
use plotters::prelude::*;

mod live;
mod speedup;
mod sweep;

pub use live::{draw_histograms, draw_per_position, draw_series_chart, HistogramPanel, Positions, Series};
pub use speedup::{draw_speedup_chart, speedup_chart, Curve, SpeedupChart};
pub use sweep::draw_sweep_chart;

use crate::error::Error;

/// The app's fixed colours (vLLM Grafana / AIPerf conventions).
pub mod colors {
    use plotters::style::RGBColor;
    /// Accepted draft tokens.
    pub const ACCEPTED: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
    /// Rejected draft tokens.
    pub const REJECTED: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
    /// Proposed draft tokens.
    pub const PROPOSED: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
    /// The base (non-speculative) arm.
    pub const BASE: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
    /// The speculative arm and the selected model curve.
    pub const SPECULATIVE: RGBColor = RGBColor(0x6a, 0x3d, 0x9a);
    /// Other model curves.
    pub const OTHER: RGBColor = RGBColor(0xb8, 0xa9, 0xd6);
    /// Reference lines (S = 1).
    pub const REFERENCE: RGBColor = RGBColor(0x33, 0x33, 0x33);
}

pub(crate) fn chart_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> Error {
    Error::Chart(e.to_string())
}

/// Centered text on an otherwise empty chart ("No traffic", "No spec-decode data").
pub(crate) fn draw_empty<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    scale: f64,
) -> Result<(), Error> {
    let (w, h) = root.dim_in_pixel();
    let half_width = (text.chars().count() as f64 * 3.8 * scale) as i32;
    root.draw(&Text::new(
        text.to_string(),
        (w as i32 / 2 - half_width, h as i32 / 2),
        ("sans-serif", 16.0 * scale).into_font(),
    ))
    .map_err(chart_error)?;
    Ok(())
}
