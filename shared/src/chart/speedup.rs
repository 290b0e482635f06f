//! The what-if page's chart: S(B) for each k, the selected curve in colour, S = 1 and the
//! break-even batch.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{chart_error, colors, legend_above, tick, Swatch, XFrame};
use crate::error::Error;
use crate::model::speedup as model;
use crate::model::whatif::WhatIf;

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
                points: xs.into_iter().map(|b| (b, w.speedup_at(e, d, b))).collect(),
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

/// Draw S(B) against batch size (log axis) with the 1.0 line and the break-even point.
/// `scale` multiplies font sizes and line widths (the device pixel ratio on a canvas).
pub fn draw_speedup_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &SpeedupChart,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
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
    // Every curve is named; the selected one in the speculative colour, the others each in a
    // colour of their own, thinner.
    let color_of = |i: usize, curve: &Curve| {
        if curve.selected {
            colors::SPECULATIVE
        } else {
            colors::OTHERS[i % colors::OTHERS.len()]
        }
    };
    let mut legend = vec![("S = 1 (no gain)".to_string(), Swatch::Dashed(colors::REFERENCE))];
    legend.extend(data.curves.iter().enumerate().map(|(i, c)| {
        let label = if c.selected {
            format!("{} (selected)", c.label)
        } else {
            c.label.clone()
        };
        (label, Swatch::Line(color_of(i, c)))
    }));
    // B* is named with its value in the legend, where no curve can run through it.
    if let Some(b) = data.break_even {
        legend.push((
            format!("B* = {b:.1}"),
            Swatch::Dot(colors::SPECULATIVE, colors::SPECULATIVE),
        ));
    }
    let plot = legend_above(root, &legend, scale)?;
    let mut chart = ChartBuilder::on(&plot)
        .margin(px(12.0))
        .x_label_area_size(px(42.0))
        .y_label_area_size(px(60.0))
        .build_cartesian_2d((1f64..data.batch_max).log_scale(), 0f64..y_max)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_desc("batch size B (concurrent sequences)")
        .y_desc("speedup S(B)")
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(colors::GRID)
        .x_label_formatter(&|x| tick(*x, data.batch_max))
        .y_label_formatter(&|y| format!("{y:.1}×"))
        .draw()
        .map_err(chart_error)?;
    let frame = XFrame::of(chart.plotting_area(), 1.0, data.batch_max, true);
    chart
        .draw_series(DashedLineSeries::new(
            [(1.0, 1.0), (data.batch_max, 1.0)],
            px(6.0),
            px(4.0),
            colors::REFERENCE.stroke_width(px(1.0)),
        ))
        .map_err(chart_error)?;
    // The other curves first so the selected one stays on top.
    let mut curves: Vec<(usize, &Curve)> = data.curves.iter().enumerate().collect();
    curves.sort_by_key(|(_, c)| c.selected);
    for (i, curve) in curves {
        let width = if curve.selected { 3.0 } else { 1.5 };
        chart
            .draw_series(LineSeries::new(
                curve.points.iter().copied(),
                color_of(i, curve).stroke_width(px(width)),
            ))
            .map_err(chart_error)?;
    }
    if let Some(b) = data.break_even {
        chart
            .draw_series([Circle::new((b, 1.0), px(5.0), colors::SPECULATIVE.filled())])
            .map_err(chart_error)?;
    }
    root.present().map_err(chart_error)?;
    Ok(Some(frame))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::whatif::Acceptance;

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
            proposer: crate::model::speedup::Proposer::Drafter1b,
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
            out.contains("#CC79A7") || out.contains("#cc79a7"),
            "selected curve colour"
        );
        assert!(out.contains("S = 1 (no gain)"));
        for k in [1, 2, 3, 4, 5] {
            assert!(out.contains(&format!("k={k} ")), "every curve is named (k={k})");
        }
        let other = svg(&WhatIf {
            acceptance: Acceptance::Alpha(0.9),
            ..w
        });
        assert_ne!(out, other, "a different α draws a different chart");
    }
}
