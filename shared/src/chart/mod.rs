//! Charts drawn with plotters, generic over the drawing backend: the same code draws on the
//! page's canvas and to SVG in native tests and reports. One file per view (the what-if's
//! speedup curves, the live page's charts, the sweep); colours and helpers
//! shared in `frame`.

mod accept;
mod compare;
mod context;
pub mod frame;
pub mod hover;
mod live;
mod speedup;
mod step_cost;
mod sweep;
mod tail;

pub use accept::{draw_category_chart, sorted_bars, CategoryBar};
pub use compare::{draw_latency_comparison, RunLatencies};
pub use context::{context_at, draw_context_chart, draw_context_cost_chart};
pub use frame::{colors, nearest, XFrame};
pub use live::{
    draw_histograms, draw_per_position, draw_series_chart, draw_series_panels, HistogramPanel, Positions, Series,
    SeriesPanel,
};
pub use speedup::{draw_speedup_chart, speedup_chart, Curve, SpeedupChart};
pub use step_cost::{draw_step_cost_chart, has_step_cost, step_cost_at};
pub use sweep::draw_sweep_chart;
pub use tail::{draw_tail_scatter, tail_at};
