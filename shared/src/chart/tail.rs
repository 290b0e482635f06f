//! The run's tail scatter: each request's acceptance length against its E2E latency, the p99
//! line and the lowest acceptance quartile's bound, so who pays in the tail is seen.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{chart_error, colors, legend_above, nearest, tick, Swatch, XFrame};
use crate::error::Error;
use crate::run::tail::TailAttribution;

/// Requests as dots (acceptance length across, E2E latency up), the p99 E2E latency dashed
/// across, the lowest quartile's bound dashed up. Returns where the acceptance axis lies.
pub fn draw_tail_scatter<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    tail: &TailAttribution,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    root.fill(&WHITE).map_err(chart_error)?;
    let r = tail
        .correlation_e2el
        .map_or_else(String::new, |r| format!(", r = {r:+.2}"));
    let legend = [
        (
            format!("requests ({}{r})", tail.requests),
            Swatch::Line(colors::SPECULATIVE),
        ),
        (
            format!("p99 E2E latency {:.1} ms", tail.p99_e2el_ms),
            Swatch::Dashed(colors::REJECTED),
        ),
        (
            format!("lowest acceptance quartile: E ≤ {:.2}", tail.quartiles[0]),
            Swatch::Dashed(colors::REFERENCE),
        ),
    ];
    let plot = legend_above(root, &legend, scale)?;
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    let x_lo = tail.points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min).min(1.0);
    let x_hi = tail.points.iter().map(|p| p.0).fold(x_lo + 1.0, f64::max) * 1.05;
    let y_hi = tail
        .points
        .iter()
        .map(|p| p.1)
        .fold(tail.p99_e2el_ms, f64::max)
        .max(1.0)
        * 1.1;
    let mut chart = ChartBuilder::on(&plot)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(70.0))
        .build_cartesian_2d(x_lo..x_hi, 0f64..y_hi)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_desc("acceptance length of the request (tokens per step)")
        .y_desc("E2E latency (ms)")
        .x_label_formatter(&|x| format!("{x:.1}"))
        .y_label_formatter(&|y| tick(*y, y_hi))
        .y_labels(5)
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(colors::GRID)
        .draw()
        .map_err(chart_error)?;
    chart
        .draw_series(
            tail.points
                .iter()
                .map(|p| Circle::new((p.0, p.1), px(3.0), colors::SPECULATIVE.filled())),
        )
        .map_err(chart_error)?;
    chart
        .draw_series(DashedLineSeries::new(
            [(x_lo, tail.p99_e2el_ms), (x_hi, tail.p99_e2el_ms)],
            px(6.0),
            px(4.0),
            colors::REJECTED.stroke_width(px(2.0)),
        ))
        .map_err(chart_error)?;
    chart
        .draw_series(DashedLineSeries::new(
            [(tail.quartiles[0], 0.0), (tail.quartiles[0], y_hi)],
            px(4.0),
            px(4.0),
            colors::REFERENCE.stroke_width(px(1.0)),
        ))
        .map_err(chart_error)?;
    root.present().map_err(chart_error)?;
    Ok(Some(XFrame::of(chart.plotting_area(), x_lo, x_hi, false)))
}

/// The hover text at acceptance length `e`: the request nearest it in acceptance, its latency.
pub fn tail_at(tail: &TailAttribution, e: f64) -> Option<String> {
    let p = tail.points[nearest(tail.points.iter().map(|p| p.0), e)?];
    let tpot = p.2.map_or_else(String::new, |t| format!(", TPOT {t:.2} ms"));
    Some(format!(
        "a request with acceptance length {:.2}: E2E {:.1} ms{tpot}",
        p.0, p.1
    ))
}
