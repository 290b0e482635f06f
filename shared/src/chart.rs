//! Charts drawn with plotters, generic over the drawing backend: the same code draws on the
//! page's canvas and to SVG in native tests and reports. Colours are fixed across the app.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::Error;
use crate::model;
use crate::whatif::WhatIf;

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

/// One S(B) curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub label: String,
    /// (batch size, speedup), batch increasing.
    pub points: Vec<(f64, f64)>,
    /// The selected curve is drawn thick and coloured, the others faint.
    pub selected: bool,
}

/// Everything the S(B) chart shows.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedupChart {
    pub curves: Vec<Curve>,
    /// The selected curve's break-even batch, when it lies on the axis.
    pub break_even: Option<f64>,
    pub batch_max: f64,
}

/// Batch sizes for a curve: log-spaced from 1 to `batch_max`, plus the roofline kinks so the
/// curve's corners are exact.
fn batch_points(batch_max: f64, kinks: &[f64]) -> Vec<f64> {
    const N: usize = 240;
    let ln_max = batch_max.ln();
    let mut xs: Vec<f64> = (0..=N).map(|i| (ln_max * i as f64 / N as f64).exp()).collect();
    xs.extend(kinks.iter().copied().filter(|b| *b > 1.0 && *b < batch_max));
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs
}

/// The chart for a what-if state: the selected k thick, the table's other k faint.
pub fn speedup_chart(w: &WhatIf) -> SpeedupChart {
    let costs = w.costs();
    let alpha = w.alpha();
    let batch_max = f64::from(w.batch_max.max(2));
    let mut ks = w.table_ks.clone();
    if !ks.contains(&w.k) {
        ks.push(w.k);
    }
    ks.sort_unstable();
    let curves = ks
        .iter()
        .map(|&k| {
            let selected = k == w.k;
            let e = if selected {
                w.expected_tokens()
            } else {
                model::expected_tokens(alpha, k)
            };
            // The selected k charges the measured draft length when one is given.
            let d = if selected {
                w.selected_draft_tokens()
            } else {
                f64::from(k)
            };
            let t = costs.ridge_tokens;
            let xs = batch_points(batch_max, &[t / (d + 1.0), t]);
            Curve {
                label: format!("k={k}  E={e:.2}"),
                points: xs.into_iter().map(|b| (b, model::speedup(e, d, costs, b))).collect(),
                selected,
            }
        })
        .collect();
    let row = w.selected_row();
    let break_even = (row.pays_at_batch1() && row.break_even_batch >= 1.0 && row.break_even_batch <= batch_max)
        .then_some(row.break_even_batch);
    SpeedupChart {
        curves,
        break_even,
        batch_max,
    }
}

fn chart_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> Error {
    Error::Chart(e.to_string())
}

/// Draw S(B) against batch size (log axis) with the 1.0 line and the break-even point.
/// `scale` multiplies font sizes and line widths (the device pixel ratio on a canvas).
pub fn draw_speedup_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &SpeedupChart,
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    root.fill(&WHITE).map_err(chart_error)?;
    let y_max = data
        .curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(1.2f64, f64::max)
        * 1.1;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    let mut chart = ChartBuilder::on(root)
        .margin(px(12.0))
        .x_label_area_size(px(42.0))
        .y_label_area_size(px(52.0))
        .build_cartesian_2d((1f64..data.batch_max).log_scale(), 0f64..y_max)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_desc("batch size B (concurrent sequences)")
        .y_desc("speedup S(B)")
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}×"))
        .draw()
        .map_err(chart_error)?;
    chart
        .draw_series(DashedLineSeries::new(
            [(1.0, 1.0), (data.batch_max, 1.0)],
            px(6.0),
            px(4.0),
            colors::REFERENCE.stroke_width(px(1.0)),
        ))
        .map_err(chart_error)?
        .label("S = 1 (no gain)")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + px(18.0) as i32, y)], colors::REFERENCE));
    // Faint curves first so the selected one stays on top.
    let mut curves: Vec<&Curve> = data.curves.iter().collect();
    curves.sort_by_key(|c| c.selected);
    for curve in curves {
        let style = if curve.selected {
            colors::SPECULATIVE.stroke_width(px(3.0))
        } else {
            colors::OTHER.stroke_width(px(1.5))
        };
        let series = chart
            .draw_series(LineSeries::new(curve.points.iter().copied(), style))
            .map_err(chart_error)?;
        if curve.selected {
            series
                .label(curve.label.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + px(18.0) as i32, y)], style));
        }
    }
    if let Some(b) = data.break_even {
        chart
            .draw_series([Circle::new((b, 1.0), px(5.0), colors::SPECULATIVE.filled())])
            .map_err(chart_error)?;
        chart
            .draw_series([Text::new(format!("B* = {b:.1}"), (b, 1.0 + y_max * 0.04), font(13.0))])
            .map_err(chart_error)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0xcc, 0xcc, 0xcc))
        .label_font(font(12.0))
        .draw()
        .map_err(chart_error)?;
    root.present().map_err(chart_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::whatif::Acceptance;

    fn svg(w: &WhatIf) -> String {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (800, 480)).into_drawing_area();
            draw_speedup_chart(&root, &speedup_chart(w), 1.0).unwrap();
        }
        out
    }

    #[test]
    fn chart_data_follows_the_model() {
        let w = WhatIf {
            acceptance: Acceptance::Alpha(0.4),
            k: 1,
            table_ks: vec![1, 3],
            ..WhatIf::default()
        };
        let data = speedup_chart(&w);
        assert_eq!(data.curves.len(), 2);
        let selected = data.curves.iter().find(|c| c.selected).unwrap();
        assert_eq!(selected.points[0], (1.0, 1.4));
        assert!((data.break_even.unwrap() - 206.5).abs() < 1e-9);
        assert!(
            selected.points.iter().any(|p| (p.0 - 147.5).abs() < 1e-9),
            "kink at T*/(k+1) is sampled"
        );
        assert!(selected.points.windows(2).all(|p| p[0].0 < p[1].0));
    }

    #[test]
    fn no_break_even_marker_when_speculation_never_pays() {
        let w = WhatIf {
            acceptance: Acceptance::Alpha(0.05),
            k: 4,
            proposer: crate::model::Proposer::Drafter1b,
            ..WhatIf::default()
        };
        assert_eq!(speedup_chart(&w).break_even, None);
    }

    #[test]
    fn draws_curves_reference_line_and_marker_to_svg() {
        let w = WhatIf {
            acceptance: Acceptance::Alpha(0.4),
            k: 1,
            ..WhatIf::default()
        };
        let out = svg(&w);
        assert!(out.contains("B* = 206.5"), "break-even label");
        assert!(
            out.contains("#6A3D9A") || out.contains("#6a3d9a"),
            "selected curve colour"
        );
        assert!(out.contains("S = 1 (no gain)"));
        let other = svg(&WhatIf {
            acceptance: Acceptance::Alpha(0.9),
            ..w
        });
        assert_ne!(out, other, "a different α draws a different chart");
    }
}

/// One line of a time series chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
}

/// Draw time series (x: seconds into the run) on one axis; "No traffic" when empty.
pub fn draw_series_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &[Series],
    y_desc: &str,
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    root.fill(&WHITE).map_err(chart_error)?;
    let all = series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let (mut x_max, mut y_max) = (1.0f64, 0.0f64);
    let mut any = false;
    for p in all {
        any = true;
        x_max = x_max.max(p.0);
        y_max = y_max.max(p.1);
    }
    if !any {
        draw_empty(root, "No traffic", scale)?;
        root.present().map_err(chart_error)?;
        return Ok(());
    }
    let y_max = if y_max <= 0.0 { 1.0 } else { y_max * 1.15 };
    let mut chart = ChartBuilder::on(root)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(56.0))
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_desc("seconds into the run")
        .y_desc(y_desc)
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(chart_error)?;
    for s in series {
        let style = s.color.stroke_width(px(2.0));
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), style))
            .map_err(chart_error)?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + px(18.0) as i32, y)], style));
        chart
            .draw_series(s.points.iter().map(|p| Circle::new(*p, px(2.5), s.color.filled())))
            .map_err(chart_error)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0xcc, 0xcc, 0xcc))
        .label_font(font(12.0))
        .draw()
        .map_err(chart_error)?;
    root.present().map_err(chart_error)?;
    Ok(())
}

/// Centered text on an otherwise empty chart ("No traffic", "No spec-decode data").
fn draw_empty<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, text: &str, scale: f64) -> Result<(), Error> {
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

/// One path's measured acceptance by draft position (index 0 = position 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Positions {
    /// The path and where it came from: "per-request (vLLM)", "scrape [host:port]".
    pub label: String,
    pub color: RGBColor,
    pub rates: Vec<f64>,
}

/// Measured acceptance by draft position (1..k as users count them), one bar per path side by
/// side, beside the geometric curve implied by the measured E (of the first path).
pub fn draw_per_position<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    measured: &[Positions],
    measured_e: f64,
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    root.fill(&WHITE).map_err(chart_error)?;
    let k = measured.iter().map(|m| m.rates.len()).max().unwrap_or(0);
    if k == 0 {
        draw_empty(root, "No spec-decode data", scale)?;
        root.present().map_err(chart_error)?;
        return Ok(());
    }
    let first_k = measured
        .iter()
        .find(|m| !m.rates.is_empty())
        .map_or(k, |m| m.rates.len());
    let alpha = model::implied_alpha(measured_e, first_k as u32);
    let mut chart = ChartBuilder::on(root)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(48.0))
        .build_cartesian_2d(0.5f64..(k as f64 + 0.5), 0f64..1.05f64)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_desc("draft position")
        .y_desc("accepted (fraction of drafts)")
        .x_labels(k.min(16))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(chart_error)?;
    let bar_w = 0.7 / measured.len() as f64;
    for (n, m) in measured.iter().enumerate() {
        let color = m.color;
        let offset = -0.35 + bar_w * n as f64;
        let bars = m.rates.iter().enumerate().map(move |(i, p)| {
            let x = i as f64 + 1.0 + offset;
            Rectangle::new([(x, 0.0), (x + bar_w * 0.9, *p)], color.filled())
        });
        chart
            .draw_series(bars)
            .map_err(chart_error)?
            .label(m.label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + px(14.0) as i32, y + 5)], color.filled()));
    }
    let geometric: Vec<(f64, f64)> = (1..=first_k).map(|i| (i as f64, alpha.powi(i as i32))).collect();
    let style = colors::REFERENCE.stroke_width(px(2.0));
    chart
        .draw_series(LineSeries::new(geometric.iter().copied(), style))
        .map_err(chart_error)?
        .label(format!("geometric α = {alpha:.3} (same E = {measured_e:.2})"))
        .legend(move |(x, y)| PathElement::new([(x, y), (x + px(18.0) as i32, y)], style));
    chart
        .draw_series(
            geometric
                .iter()
                .map(|p| Circle::new(*p, px(3.0), colors::REFERENCE.filled())),
        )
        .map_err(chart_error)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0xcc, 0xcc, 0xcc))
        .label_font(font(12.0))
        .draw()
        .map_err(chart_error)?;
    root.present().map_err(chart_error)?;
    Ok(())
}

/// One panel of [`draw_histograms`].
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramPanel<'a> {
    /// Axis description with its unit ("TTFT (ms)").
    pub x_desc: &'a str,
    pub color: RGBColor,
    pub bins: Option<&'a crate::aggregate::Bins>,
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
            .y_label_area_size(px(44.0))
            .build_cartesian_2d(x_lo..x_hi, 0f64..y_max)
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc)
            .y_desc("count")
            .x_labels(5)
            .y_labels(5)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .x_label_formatter(&|x| {
                format!("{x:.3}")
                    .trim_end_matches('0')
                    .trim_end_matches('.')
                    .to_string()
            })
            .label_style(font(11.0))
            .axis_desc_style(font(12.0))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
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
            let bins = crate::aggregate::Bins::from_values(&[10.0, 11.0, 12.5, 30.0], 40);
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

/// Both arms' output throughput against concurrency (base grey, speculative coloured), the
/// ratio on a second panel with the 1.0 line, the measured crossing and the predicted B*.
pub fn draw_sweep_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    table: &crate::sweep::SweepTable,
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    root.fill(&WHITE).map_err(chart_error)?;
    let (top, bottom) = root.split_vertically(root.dim_in_pixel().1 * 3 / 5);
    let x_max = table.rows.iter().map(|r| r.concurrency).fold(1.0f64, f64::max) * 1.05;
    let y_max = table
        .rows
        .iter()
        .flat_map(|r| [r.spec_output_tokens_per_s, r.base_output_tokens_per_s])
        .flatten()
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(&top)
        .margin(px(10.0))
        .x_label_area_size(px(30.0))
        .y_label_area_size(px(64.0))
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .y_desc("output tokens/s")
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(chart_error)?;
    let arms = [
        (
            "speculative",
            colors::SPECULATIVE,
            table
                .rows
                .iter()
                .filter_map(|r| r.spec_output_tokens_per_s.map(|v| (r.concurrency, v)))
                .collect::<Vec<_>>(),
        ),
        (
            "base",
            colors::BASE,
            table
                .rows
                .iter()
                .filter_map(|r| r.base_output_tokens_per_s.map(|v| (r.concurrency, v)))
                .collect(),
        ),
    ];
    for (label, color, points) in arms {
        let style = color.stroke_width(px(2.5));
        chart
            .draw_series(LineSeries::new(points.iter().copied(), style))
            .map_err(chart_error)?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + px(18.0) as i32, y)], style));
        chart
            .draw_series(points.iter().map(|p| Circle::new(*p, px(3.5), color.filled())))
            .map_err(chart_error)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0xcc, 0xcc, 0xcc))
        .label_font(font(12.0))
        .draw()
        .map_err(chart_error)?;
    let ratios: Vec<(f64, f64)> = table
        .rows
        .iter()
        .filter_map(|r| r.ratio().map(|x| (r.concurrency, x)))
        .collect();
    let r_max = ratios.iter().map(|p| p.1).fold(1.2f64, f64::max) * 1.1;
    let mut lower = ChartBuilder::on(&bottom)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(64.0))
        .build_cartesian_2d(0f64..x_max, 0f64..r_max)
        .map_err(chart_error)?;
    lower
        .configure_mesh()
        .x_desc("concurrency")
        .y_desc("spec ÷ base")
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(chart_error)?;
    lower
        .draw_series(DashedLineSeries::new(
            [(0.0, 1.0), (x_max, 1.0)],
            px(6.0),
            px(4.0),
            colors::REFERENCE.stroke_width(px(1.0)),
        ))
        .map_err(chart_error)?;
    lower
        .draw_series(LineSeries::new(
            ratios.iter().copied(),
            colors::SPECULATIVE.stroke_width(px(2.5)),
        ))
        .map_err(chart_error)?;
    lower
        .draw_series(
            ratios
                .iter()
                .map(|p| Circle::new(*p, px(3.5), colors::SPECULATIVE.filled())),
        )
        .map_err(chart_error)?;
    if let Some(b) = table.crossing {
        lower
            .draw_series([Circle::new((b, 1.0), px(6.0), colors::REJECTED.filled())])
            .map_err(chart_error)?;
        lower
            .draw_series([Text::new(
                format!("measured B* = {b:.1}"),
                (b, 1.0 + r_max * 0.08),
                font(13.0),
            )])
            .map_err(chart_error)?;
    }
    if let Some(p) = &table.prediction {
        let b = p.break_even_batch;
        if b > 0.0 && b < x_max {
            lower
                .draw_series(DashedLineSeries::new(
                    [(b, 0.0), (b, r_max)],
                    px(4.0),
                    px(4.0),
                    colors::PROPOSED.stroke_width(px(1.5)),
                ))
                .map_err(chart_error)?;
            lower
                .draw_series([Text::new(format!("model B* = {b:.1}"), (b, r_max * 0.9), font(12.0))])
                .map_err(chart_error)?;
        }
    }
    root.present().map_err(chart_error)?;
    Ok(())
}

#[cfg(test)]
mod sweep_chart_tests {
    use super::*;
    use crate::sweep::{SweepRow, SweepTable};

    #[test]
    fn sweep_chart_marks_the_crossing_and_the_prediction() {
        let rows = [
            (16.0, 4000.0, 2000.0),
            (128.0, 9000.0, 8000.0),
            (256.0, 9500.0, 14000.0),
        ]
        .map(|(c, s, b)| SweepRow {
            concurrency: c,
            spec_output_tokens_per_s: Some(s),
            base_output_tokens_per_s: Some(b),
        });
        let pred = crate::sweep::Prediction::new(
            2.5,
            3,
            None,
            crate::model::Costs {
                draft_cost: 0.0,
                ridge_tokens: 295.0,
            },
        );
        let table = SweepTable::new(rows.to_vec(), Some(pred));
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (800, 600)).into_drawing_area();
            draw_sweep_chart(&root, &table, 1.0).unwrap();
        }
        assert!(
            out.contains("measured B* = ") && out.contains("model B* = 184.4"),
            "labels"
        );
    }
}
