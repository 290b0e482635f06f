//! The sweep's chart: both arms' throughput by concurrency (or median E2E latency by request
//! rate), and their ratio with the 1.0 line, the measured crossing and the predicted B*.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{chart_error, colors, legend_above, tick, whole_tick, Swatch, XFrame};
use crate::error::Error;
use crate::sweep::{Axis, SweepTable};

/// One speculative arm's table (against plain) and its colour.
struct ArmLine<'a> {
    name: String,
    color: RGBColor,
    table: &'a SweepTable,
}

/// The arms to draw: every arm of a multi-arm sweep, each in its own colour, else the one.
fn arm_lines(table: &SweepTable) -> Vec<ArmLine<'_>> {
    if table.arms.arms.len() > 1 {
        table
            .arms
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| ArmLine {
                name: a.name.clone(),
                color: if i == 0 {
                    colors::SPECULATIVE
                } else {
                    colors::OTHERS[(i - 1) % colors::OTHERS.len()]
                },
                table: &a.table,
            })
            .collect()
    } else {
        vec![ArmLine {
            name: "speculative".into(),
            color: colors::SPECULATIVE,
            table,
        }]
    }
}

/// Each arm's output throughput against concurrency (base grey, speculative arms coloured),
/// their ratios to plain on a second panel with the 1.0 line, the measured crossings and the
/// predicted B* (one arm). Returns where the concurrency axis lies.
pub fn draw_sweep_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    table: &SweepTable,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    root.fill(&WHITE).map_err(chart_error)?;
    let arms = arm_lines(table);
    let mut legend: Vec<(String, Swatch)> = arms.iter().map(|a| (a.name.clone(), Swatch::Line(a.color))).collect();
    legend.push(("plain (base)".to_string(), Swatch::Line(colors::BASE)));
    if table
        .rows
        .iter()
        .any(|r| r.spec_spread.is_some() || r.base_spread.is_some())
    {
        legend.push(("bars: the repeats' range".to_string(), Swatch::Bar(colors::REFERENCE)));
    }
    if arms.iter().any(|a| a.table.crossing.is_some()) {
        legend.push((
            format!("measured {}", table.axis.symbol()),
            Swatch::Bar(colors::REJECTED),
        ));
    }
    // The model's B* is a batch size: drawn on a concurrency axis only, for one arm.
    if arms.len() == 1 && table.prediction.is_some() && table.axis.is_concurrency() {
        legend.push(("model's B*".to_string(), Swatch::Dashed(colors::PROPOSED)));
    }
    let plot = legend_above(root, &legend, scale)?;
    let (top, bottom) = plot.split_vertically(plot.dim_in_pixel().1 * 3 / 5);
    let x_max = arms
        .iter()
        .flat_map(|a| a.table.rows.iter().map(|r| r.level))
        .chain(table.rows.iter().map(|r| r.level))
        .fold(1.0f64, f64::max)
        * 1.05;
    let frame = draw_throughput(&top, table, &arms, x_max, scale)?;
    draw_ratio(&bottom, table, &arms, x_max, scale)?;
    root.present().map_err(chart_error)?;
    Ok(Some(frame))
}

/// The upper panel: each arm's compared figure (`Axis::figure`) by level.
fn draw_throughput<DB: DrawingBackend>(
    top: &DrawingArea<DB, Shift>,
    table: &SweepTable,
    arms: &[ArmLine<'_>],
    x_max: f64,
    scale: f64,
) -> Result<XFrame, Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    let y_max = arms
        .iter()
        .flat_map(|a| a.table.rows.iter())
        .flat_map(|r| {
            [
                r.figures().0,
                r.figures().1,
                r.spec_spread.map(|s| s.1),
                r.base_spread.map(|s| s.1),
            ]
        })
        .flatten()
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(top)
        .margin(px(10.0))
        .x_label_area_size(px(30.0))
        .y_label_area_size(px(76.0))
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .y_desc(table.axis.figure())
        .x_label_formatter(&|x| level_tick(table.axis, *x))
        .y_label_formatter(&|y| tick(*y, y_max))
        .y_labels(6)
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(colors::GRID)
        .draw()
        .map_err(chart_error)?;
    let base_rows = &arms.first().map_or(table, |a| a.table).rows;
    let mut lines: Vec<(RGBColor, Vec<(f64, f64)>)> = arms
        .iter()
        .map(|a| {
            (
                a.color,
                a.table
                    .rows
                    .iter()
                    .filter_map(|r| r.figures().0.map(|v| (r.level, v)))
                    .collect(),
            )
        })
        .collect();
    lines.push((
        colors::BASE,
        base_rows
            .iter()
            .filter_map(|r| r.figures().1.map(|v| (r.level, v)))
            .collect(),
    ));
    for (color, points) in lines {
        let style = color.stroke_width(px(2.5));
        chart
            .draw_series(LineSeries::new(points.iter().copied(), style))
            .map_err(chart_error)?;
        chart
            .draw_series(points.iter().map(|p| Circle::new(*p, px(3.5), color.filled())))
            .map_err(chart_error)?;
    }
    // The repeats' spread, min to max, at each point run more than once.
    let mut spreads: Vec<(f64, (f64, f64), RGBColor)> = Vec::new();
    for a in arms {
        spreads.extend(
            a.table
                .rows
                .iter()
                .filter_map(|r| Some((r.level, r.spec_spread?, a.color))),
        );
    }
    spreads.extend(
        base_rows
            .iter()
            .filter_map(|r| Some((r.level, r.base_spread?, colors::BASE))),
    );
    chart
        .draw_series(
            spreads
                .into_iter()
                .map(|(c, (lo, hi), color)| PathElement::new([(c, lo), (c, hi)], color.stroke_width(px(2.0)))),
        )
        .map_err(chart_error)?;
    Ok(XFrame::of(chart.plotting_area(), 0.0, x_max, false))
}

/// The lower panel: each arm's ratio by level (arm ÷ plain throughput, or plain ÷ arm
/// latency), the 1.0 line, the measured crossings and the model's B*.
fn draw_ratio<DB: DrawingBackend>(
    bottom: &DrawingArea<DB, Shift>,
    table: &SweepTable,
    arms: &[ArmLine<'_>],
    x_max: f64,
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    let r_max = arms
        .iter()
        .flat_map(|a| a.table.rows.iter())
        .filter_map(|r| r.ratio_bounds().map(|b| b.1).or(r.ratio()))
        .fold(1.2f64, f64::max)
        * 1.1;
    let mut lower = ChartBuilder::on(bottom)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(76.0))
        .build_cartesian_2d(0f64..x_max, 0f64..r_max)
        .map_err(chart_error)?;
    lower
        .configure_mesh()
        .x_desc(match table.axis {
            Axis::Concurrency => "concurrency",
            Axis::RequestRate => "requests/s",
        })
        .y_desc(match table.axis {
            Axis::Concurrency => "spec ÷ base",
            Axis::RequestRate => "base ÷ spec latency",
        })
        .x_label_formatter(&|x| level_tick(table.axis, *x))
        .y_label_formatter(&|y| format!("{y:.1}×"))
        .y_labels(4)
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(colors::GRID)
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
    for (i, a) in arms.iter().enumerate() {
        let ratios: Vec<(f64, f64)> = a
            .table
            .rows
            .iter()
            .filter_map(|r| r.ratio().map(|x| (r.level, x)))
            .collect();
        lower
            .draw_series(a.table.rows.iter().filter_map(|r| {
                let (lo, hi) = r
                    .ratio_bounds()
                    .filter(|_| r.spec_spread.is_some() || r.base_spread.is_some())?;
                Some(PathElement::new(
                    [(r.level, lo), (r.level, hi)],
                    a.color.stroke_width(px(2.0)),
                ))
            }))
            .map_err(chart_error)?;
        lower
            .draw_series(LineSeries::new(ratios.iter().copied(), a.color.stroke_width(px(2.5))))
            .map_err(chart_error)?;
        lower
            .draw_series(ratios.iter().map(|p| Circle::new(*p, px(3.5), a.color.filled())))
            .map_err(chart_error)?;
        if let Some(b) = a.table.crossing {
            lower
                .draw_series([Circle::new((b, 1.0), px(6.0), colors::REJECTED.filled())])
                .map_err(chart_error)?;
            let label = if arms.len() == 1 {
                format!("measured {} = {b:.1}", table.axis.symbol())
            } else {
                format!("{} {} = {b:.1}", a.name, table.axis.symbol())
            };
            // Labels of several arms stacked, so that near crossings stay readable.
            let y = 1.0 + r_max * (0.08 + 0.09 * i as f64);
            lower
                .draw_series([Text::new(label, (b, y), font(13.0))])
                .map_err(chart_error)?;
        }
    }
    if let Some(p) = table
        .prediction
        .as_ref()
        .filter(|_| table.axis.is_concurrency() && arms.len() == 1)
    {
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
    Ok(())
}

/// A level's axis label: whole concurrencies, rates with a decimal where they need one.
fn level_tick(axis: Axis, x: f64) -> String {
    match axis {
        Axis::Concurrency => whole_tick(x),
        Axis::RequestRate if x.fract().abs() < 1e-9 => whole_tick(x),
        Axis::RequestRate => format!("{x:.1}"),
    }
}

#[cfg(test)]
mod sweep_chart_tests {
    use super::*;
    use crate::sweep::{Level, SweepRow};

    #[test]
    fn sweep_chart_marks_the_crossing_and_the_prediction() {
        let rows = [
            (16.0, 4000.0, 2000.0),
            (128.0, 9000.0, 8000.0),
            (256.0, 9500.0, 14000.0),
        ]
        .map(|(c, s, b)| SweepRow {
            spec_output_tokens_per_s: Some(s),
            base_output_tokens_per_s: Some(b),
            ..SweepRow::at(Level::Concurrency(c as u64))
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
        // Ratios 2.0, 1.125, 0.679: the crossing is 128 + 128 × 0.125 ÷ 0.446 = 163.8.
        assert!(
            out.contains("measured B* = 163.8") && out.contains("model B* = 184.4"),
            "labels"
        );
    }
}
