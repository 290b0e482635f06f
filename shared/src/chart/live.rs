//! The live page's charts: series over time, acceptance by draft position for each path beside
//! the geometric curve of the same E, and distribution histograms.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{chart_error, colors, draw_empty, legend_above, tick, Swatch, XFrame};
use crate::error::Error;
use crate::model::speedup as model;

/// One line of a time series chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
}

/// One y axis of a time-series chart and the series drawn against it.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesPanel {
    /// Axis title with its unit.
    pub y_desc: String,
    pub series: Vec<Series>,
}

/// Draw time series (x: seconds into the run) on one axis; "No traffic" when empty. Returns
/// where the x axis lies (`None` when empty).
pub fn draw_series_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &[Series],
    y_desc: &str,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    let panel = SeriesPanel {
        y_desc: y_desc.to_string(),
        series: series.to_vec(),
    };
    draw_series_panels(root, std::slice::from_ref(&panel), scale)
}

/// Time series on panels stacked one above the other, each with its own y axis (so a rate in
/// percent and a length in tokens both use their whole height) and one shared x axis; the
/// legend sits above the panels. "No traffic" when no panel has a point. Returns where the
/// shared x axis lies (`None` when empty).
pub fn draw_series_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panels: &[SeriesPanel],
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    root.fill(&WHITE).map_err(chart_error)?;
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let x_max = panels
        .iter()
        .flat_map(|panel| panel.series.iter().flat_map(|s| s.points.iter()))
        .filter(finite)
        .map(|p| p.0)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    let Some(x_max) = x_max else {
        draw_empty(root, "No traffic", scale)?;
        root.present().map_err(chart_error)?;
        return Ok(None);
    };
    let x_max = x_max.max(1.0);
    let legend: Vec<(String, Swatch)> = panels
        .iter()
        .flat_map(|p| p.series.iter().map(|s| (s.label.clone(), Swatch::Line(s.color))))
        .collect();
    let plot = legend_above(root, &legend, scale)?;
    let areas = plot.split_evenly((panels.len().max(1), 1));
    let mut frame = None;
    for (i, (area, panel)) in areas.iter().zip(panels).enumerate() {
        let last = i + 1 == panels.len();
        let y_top = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(finite)
            .map(|p| p.1)
            .fold(0.0f64, f64::max);
        let y_max = if y_top <= 0.0 { 1.0 } else { y_top * 1.15 };
        let mut chart = ChartBuilder::on(area)
            .margin_left(px(10.0))
            .margin_right(px(14.0))
            .margin_top(px(6.0))
            .margin_bottom(px(4.0))
            .x_label_area_size(px(if last { 40.0 } else { 18.0 }))
            .y_label_area_size(px(72.0))
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(chart_error)?;
        let x_ticks = |x: &f64| if last { tick(*x, x_max) } else { String::new() };
        let y_ticks = |y: &f64| tick(*y, y_max);
        let mut mesh = chart.configure_mesh();
        mesh.y_desc(panel.y_desc.as_str())
            .x_label_formatter(&x_ticks)
            .y_label_formatter(&y_ticks)
            .label_style(font(12.0))
            .axis_desc_style(font(13.0))
            .light_line_style(colors::GRID);
        if last {
            mesh.x_desc("seconds into the run");
        }
        mesh.draw().map_err(chart_error)?;
        frame = Some(XFrame::of(chart.plotting_area(), 0.0, x_max, false));
        for s in &panel.series {
            let style = s.color.stroke_width(px(2.0));
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), style))
                .map_err(chart_error)?;
            chart
                .draw_series(s.points.iter().map(|p| Circle::new(*p, px(2.5), s.color.filled())))
                .map_err(chart_error)?;
        }
    }
    root.present().map_err(chart_error)?;
    Ok(frame)
}

/// One path's measured acceptance by draft position (index 0 = position 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Positions {
    /// The path and where it came from: "per-request (vLLM)", "scrape [host:port]".
    pub label: String,
    pub color: RGBColor,
    pub rates: Vec<f64>,
}

/// Measured acceptance by draft position (labelled 0..k−1, as vLLM's `position` label and the
/// console number them; drawn at x = 1..k), one bar per path side by
/// side, beside the geometric curve implied by the measured E (of the first path). Returns
/// where the position axis lies (`None` without data).
pub fn draw_per_position<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    measured: &[Positions],
    measured_e: f64,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    root.fill(&WHITE).map_err(chart_error)?;
    let k = measured.iter().map(|m| m.rates.len()).max().unwrap_or(0);
    if k == 0 {
        draw_empty(root, "No spec-decode data", scale)?;
        root.present().map_err(chart_error)?;
        return Ok(None);
    }
    let first_k = measured
        .iter()
        .find(|m| !m.rates.is_empty())
        .map_or(k, |m| m.rates.len());
    let alpha = model::implied_alpha(measured_e, first_k as u32);
    let mut legend: Vec<(String, Swatch)> = measured
        .iter()
        .map(|m| (m.label.clone(), Swatch::Bar(m.color)))
        .collect();
    legend.push((
        format!("geometric α = {alpha:.3} (same E = {measured_e:.2})"),
        Swatch::Line(colors::REFERENCE),
    ));
    let plot = legend_above(root, &legend, scale)?;
    let mut chart = ChartBuilder::on(&plot)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(60.0))
        .build_cartesian_2d(0.5f64..(k as f64 + 0.5), 0f64..1.05f64)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_desc("draft position (from 0, as vLLM's position label)")
        .y_desc("accepted (fraction of drafts)")
        .y_label_formatter(&|y| tick(*y, 1.0))
        .x_labels(k.min(16))
        .x_label_formatter(&|x| format!("{:.0}", x - 1.0))
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(colors::GRID)
        .draw()
        .map_err(chart_error)?;
    let frame = XFrame::of(chart.plotting_area(), 0.5, k as f64 + 0.5, false);
    let bar_w = 0.7 / measured.len() as f64;
    for (n, m) in measured.iter().enumerate() {
        let color = m.color;
        let offset = -0.35 + bar_w * n as f64;
        let bars = m.rates.iter().enumerate().map(move |(i, p)| {
            let x = i as f64 + 1.0 + offset;
            Rectangle::new([(x, 0.0), (x + bar_w * 0.9, *p)], color.filled())
        });
        chart.draw_series(bars).map_err(chart_error)?;
    }
    let geometric: Vec<(f64, f64)> = (1..=first_k).map(|i| (i as f64, alpha.powi(i as i32))).collect();
    let style = colors::REFERENCE.stroke_width(px(2.0));
    chart
        .draw_series(LineSeries::new(geometric.iter().copied(), style))
        .map_err(chart_error)?;
    chart
        .draw_series(
            geometric
                .iter()
                .map(|p| Circle::new(*p, px(3.0), colors::REFERENCE.filled())),
        )
        .map_err(chart_error)?;
    root.present().map_err(chart_error)?;
    Ok(Some(frame))
}

/// One panel of [`draw_histograms`].
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramPanel<'a> {
    /// Axis description with its unit ("TTFT (ms)").
    pub x_desc: &'a str,
    pub color: RGBColor,
    pub bins: Option<&'a crate::run::aggregate::Bins>,
}

/// Distributions side by side, one panel each; a panel without data says "No data".
pub fn draw_histograms<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panels: &[HistogramPanel],
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    root.fill(&WHITE).map_err(chart_error)?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (area, panel) in areas.iter().zip(panels) {
        let Some(bins) = panel.bins.filter(|b| b.total() > 0) else {
            draw_empty(area, &format!("{}: no data", panel.x_desc), scale)?;
            continue;
        };
        let x_lo = bins.lo;
        let x_hi = bins.lo + bins.width * bins.counts.len() as f64;
        let y_max = bins.counts.iter().copied().max().unwrap_or(1).max(1) as f64 * 1.1;
        let mut chart = ChartBuilder::on(area)
            .margin(px(8.0))
            .x_label_area_size(px(36.0))
            .y_label_area_size(px(56.0))
            .build_cartesian_2d(x_lo..x_hi, 0f64..y_max)
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc)
            .y_desc("count")
            .x_labels(5)
            .y_labels(5)
            .y_label_formatter(&|y| tick(*y, y_max.max(20.0)))
            .x_label_formatter(&|x| tick(*x, x_hi - x_lo))
            .label_style(font(11.0))
            .axis_desc_style(font(12.0))
            .light_line_style(colors::GRID)
            .draw()
            .map_err(chart_error)?;
        let color = panel.color;
        let bars = bins.counts.iter().enumerate().map(move |(i, c)| {
            let x = bins.lo + bins.width * i as f64;
            Rectangle::new([(x, 0.0), (x + bins.width * 0.92, *c as f64)], color.filled())
        });
        chart.draw_series(bars).map_err(chart_error)?;
    }
    root.present().map_err(chart_error)?;
    Ok(())
}

#[cfg(test)]
mod live_chart_tests {
    use super::*;

    #[test]
    fn series_and_positions_draw_and_empty_data_says_so() {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (600, 300)).into_drawing_area();
            let s = Series {
                label: "accepted/s".into(),
                color: colors::ACCEPTED,
                points: vec![(1.0, 10.0), (2.0, 12.0)],
            };
            draw_series_chart(&root, &[s], "tokens/s", 1.0).unwrap();
        }
        assert!(out.contains("accepted/s"));
        let mut empty = String::new();
        {
            let root = SVGBackend::with_string(&mut empty, (600, 300)).into_drawing_area();
            draw_series_chart(&root, &[], "tokens/s", 1.0).unwrap();
        }
        assert!(empty.contains("No traffic"));
        let mut pos = String::new();
        {
            let root = SVGBackend::with_string(&mut pos, (600, 300)).into_drawing_area();
            let paths = [
                Positions {
                    label: "per-request".into(),
                    color: colors::ACCEPTED,
                    rates: vec![0.8, 0.5, 0.2],
                },
                Positions {
                    label: "scrape [h:1]".into(),
                    color: colors::PROPOSED,
                    rates: vec![0.8, 0.5],
                },
            ];
            draw_per_position(&root, &paths, 2.5, 1.0).unwrap();
        }
        assert!(pos.contains("geometric α") && pos.contains("scrape [h:1]"));
        let mut hist = String::new();
        {
            let root = SVGBackend::with_string(&mut hist, (900, 300)).into_drawing_area();
            let bins = crate::run::aggregate::Bins::from_values(&[10.0, 11.0, 12.5, 30.0], 40);
            let panels = [
                HistogramPanel {
                    x_desc: "TTFT (ms)",
                    color: colors::PROPOSED,
                    bins: bins.as_ref(),
                },
                HistogramPanel {
                    x_desc: "ITL (ms)",
                    color: colors::PROPOSED,
                    bins: None,
                },
            ];
            draw_histograms(&root, &panels, 1.0).unwrap();
        }
        assert!(hist.contains("TTFT (ms)") && hist.contains("ITL (ms): no data"));
    }
}
