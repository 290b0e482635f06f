//! The sweep's chart: both arms' throughput by concurrency (or median E2E latency by request
//! rate), and their ratio with the 1.0 line, the measured crossing and the predicted B*.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{chart_error, colors, draw_markers, legend_above, tick, whole_tick, Swatch, XFrame};
use crate::error::Error;
use crate::sweep::{Axis, PairTable, SweepFile, SweepRow};

/// One speculative arm's table (against plain) and its colour.
struct ArmLine<'a> {
    name: String,
    color: RGBColor,
    table: &'a PairTable,
}

/// The colour of a sweep's `i`-th speculative arm on every sweep chart: the first in the
/// speculative colour, the others in turn.
pub(crate) fn arm_color(i: usize) -> RGBColor {
    match i {
        0 => colors::SPECULATIVE,
        _ => colors::OTHERS[(i - 1) % colors::OTHERS.len()],
    }
}

/// The arms to draw: every arm of a multi-arm sweep, each in its own colour, else the one.
fn arm_lines(table: &SweepFile) -> Vec<ArmLine<'_>> {
    if table.arms.arms.len() > 1 {
        table
            .arms
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| ArmLine {
                name: a.name.clone(),
                color: arm_color(i),
                table: &a.table,
            })
            .collect()
    } else {
        vec![ArmLine {
            name: "speculative".into(),
            color: colors::SPECULATIVE,
            table: table.head(),
        }]
    }
}

/// Each arm's output throughput against concurrency (base grey, speculative arms coloured),
/// their ratios to plain on a second panel with the 1.0 line, the measured crossings and the
/// predicted B* (one arm). Returns where the concurrency axis lies.
pub fn draw_sweep_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    table: &SweepFile,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    root.fill(&WHITE).map_err(chart_error)?;
    let arms = arm_lines(table);
    let mut legend: Vec<(String, Swatch)> = arms.iter().map(|a| (a.name.clone(), Swatch::Line(a.color))).collect();
    legend.push(("plain (base)".to_string(), Swatch::Line(colors::BASE)));
    if table
        .head()
        .rows
        .iter()
        .any(|r| r.spec_spread.is_some() || r.base_spread.is_some())
    {
        legend.push(("bars: the repeats' range".to_string(), Swatch::Bar(colors::REFERENCE)));
    }
    // The crossings and the model's B* are named with their values in the legend, never on
    // the plot, where a curve could run through the text; the plot marks where they are.
    let symbol = table.axis.symbol();
    for a in &arms {
        if let Some(b) = a.table.crossing {
            let label = if arms.len() == 1 {
                format!("measured {symbol} = {b:.1}")
            } else {
                format!("{} measured {symbol} = {b:.1}", a.name)
            };
            legend.push((label, Swatch::Dot(colors::REJECTED, a.color)));
        }
    }
    for (first, second, b) in switches(table) {
        legend.push((
            format!("k switch {first} → {second} at {b:.1}"),
            Swatch::Dashed(colors::REFERENCE),
        ));
    }
    let knees = knees(table, &arms);
    if !knees.is_empty() {
        legend.push((
            "ring: knee of throughput against load".to_string(),
            Swatch::Dot(WHITE, colors::REFERENCE),
        ));
    }
    if let Some(over) = table.arms.base_saturation.over_saturated_from {
        legend.push((
            format!("plain over-saturated from {over}"),
            Swatch::Dashed(colors::BASE),
        ));
    }
    if let Some((name, b)) = model_break_even(table, &arms) {
        let label = match name {
            Some(name) => format!("model B* = {b:.1} ({name})"),
            None => format!("model B* = {b:.1}"),
        };
        legend.push((label, Swatch::Dashed(colors::PROPOSED)));
    }
    let plot = legend_above(root, &legend, scale)?;
    let (top, bottom) = plot.split_vertically(plot.dim_in_pixel().1 * 3 / 5);
    let x_max = arms
        .iter()
        .flat_map(|a| a.table.rows.iter().map(|r| r.level))
        .chain(table.head().rows.iter().map(|r| r.level))
        .fold(1.0f64, f64::max)
        * 1.05;
    let frame = draw_throughput(&top, table, &arms, &knees, x_max, scale)?;
    draw_ratio(&bottom, table, &arms, x_max, scale)?;
    root.present().map_err(chart_error)?;
    Ok(Some(frame))
}

/// Each knee to ring on the throughput panel: `(level, figure there, colour)` of every arm
/// (single-arm sweeps: the headline's) and of plain.
fn knees(table: &SweepFile, arms: &[ArmLine<'_>]) -> Vec<(f64, f64, RGBColor)> {
    let mut out = Vec::new();
    let spec_knees = table.arms.arms.iter().map(|a| a.saturation.knee);
    for (line, knee) in arms.iter().zip(spec_knees) {
        let at = knee.and_then(|k| line.table.rows.iter().find(|r| r.level == k));
        if let Some((row, figure)) = at.and_then(|r| Some((r, r.figures().0?))) {
            out.push((row.level, figure, line.color));
        }
    }
    let base_rows = &arms.first().map_or(table.head(), |a| a.table).rows;
    let base_knee = table.arms.base_saturation.knee;
    if let Some((row, figure)) = base_knee
        .and_then(|k| base_rows.iter().find(|r| r.level == k))
        .and_then(|r| Some((r, r.figures().1?)))
    {
        out.push((row.level, figure, colors::BASE));
    }
    out
}

/// The throughput panel's top: the highest figure or spread of any arm, with room above.
fn throughput_top(arms: &[ArmLine<'_>]) -> f64 {
    arms.iter()
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
        * 1.15
}

/// A line's points and, for each, whether it had no steady window (drawn hollow).
type Line = (RGBColor, Vec<(f64, f64)>, Vec<bool>);

/// Each arm's throughput line in its colour, then plain's (from `base_rows`).
fn throughput_lines(arms: &[ArmLine<'_>], base_rows: &[SweepRow]) -> Vec<Line> {
    let mut lines: Vec<Line> = arms
        .iter()
        .map(|a| {
            let (points, hollow) = a
                .table
                .rows
                .iter()
                .filter_map(|r| r.figures().0.map(|v| ((r.level, v), r.spec_unsteady)))
                .unzip();
            (a.color, points, hollow)
        })
        .collect();
    let (base, hollow) = base_rows
        .iter()
        .filter_map(|r| r.figures().1.map(|v| ((r.level, v), r.base_unsteady)))
        .unzip();
    lines.push((colors::BASE, base, hollow));
    lines
}

/// The repeats' spreads (level, (min, max), colour) of every arm and of plain.
fn throughput_spreads(arms: &[ArmLine<'_>], base_rows: &[SweepRow]) -> Vec<(f64, (f64, f64), RGBColor)> {
    arms.iter()
        .flat_map(|a| {
            a.table
                .rows
                .iter()
                .filter_map(|r| Some((r.level, r.spec_spread?, a.color)))
        })
        .chain(
            base_rows
                .iter()
                .filter_map(|r| Some((r.level, r.base_spread?, colors::BASE))),
        )
        .collect()
}

/// The upper panel: each arm's compared figure (`Axis::figure`) by level, knees ringed, plain's
/// over-saturation dashed.
fn draw_throughput<DB: DrawingBackend>(
    top: &DrawingArea<DB, Shift>,
    table: &SweepFile,
    arms: &[ArmLine<'_>],
    knees: &[(f64, f64, RGBColor)],
    x_max: f64,
    scale: f64,
) -> Result<XFrame, Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    let y_max = throughput_top(arms);
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
    let base_rows = &arms.first().map_or(table.head(), |a| a.table).rows;
    for (color, points, hollow) in throughput_lines(arms, base_rows) {
        let style = color.stroke_width(px(2.5));
        chart
            .draw_series(LineSeries::new(points.iter().copied(), style))
            .map_err(chart_error)?;
        draw_markers(&mut chart, &points, &hollow, color, scale)?;
    }
    // The repeats' spread, min to max, at each point run more than once.
    chart
        .draw_series(
            throughput_spreads(arms, base_rows)
                .into_iter()
                .map(|(c, (lo, hi), color)| PathElement::new([(c, lo), (c, hi)], color.stroke_width(px(2.0)))),
        )
        .map_err(chart_error)?;
    draw_saturation(
        &mut chart,
        knees,
        table.arms.base_saturation.over_saturated_from,
        y_max,
        scale,
    )?;
    Ok(XFrame::of(chart.plotting_area(), 0.0, x_max, false))
}

/// The knees ringed and plain's over-saturation dashed on the throughput panel.
fn draw_saturation<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    knees: &[(f64, f64, RGBColor)],
    over_saturated_from: Option<f64>,
    y_max: f64,
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    chart
        .draw_series(
            knees
                .iter()
                .map(|(level, figure, color)| Circle::new((*level, *figure), px(8.0), color.stroke_width(px(2.0)))),
        )
        .map_err(chart_error)?;
    if let Some(over) = over_saturated_from {
        chart
            .draw_series(DashedLineSeries::new(
                [(over, 0.0), (over, y_max)],
                px(4.0),
                px(4.0),
                colors::BASE.stroke_width(px(1.5)),
            ))
            .map_err(chart_error)?;
    }
    Ok(())
}

/// The lower panel: each arm's ratio by level (arm ÷ plain throughput, or plain ÷ arm
/// latency), the 1.0 line, the measured crossings and the model's B*.
fn draw_ratio<DB: DrawingBackend>(
    bottom: &DrawingArea<DB, Shift>,
    table: &SweepFile,
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
        // One panel for every arm (the legend names them by colour): the axis says so.
        .y_desc(match (table.axis, arms.len() > 1) {
            (Axis::Concurrency, true) => "each arm ÷ plain",
            (Axis::Concurrency, false) => "spec ÷ plain",
            (Axis::RequestRate, true) => "plain ÷ each arm, latency",
            (Axis::RequestRate, false) => "plain ÷ spec latency",
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
    for a in arms {
        draw_arm_ratio(&mut lower, a, scale)?;
    }
    let mut verticals: Vec<(f64, RGBColor, f64)> = switches(table)
        .into_iter()
        .map(|(_, _, b)| (b, colors::REFERENCE, 1.0))
        .collect();
    verticals.extend(model_break_even(table, arms).map(|(_, b)| (b, colors::PROPOSED, 1.5)));
    for (b, color, width) in verticals.into_iter().filter(|(b, _, _)| *b > 0.0 && *b < x_max) {
        lower
            .draw_series(DashedLineSeries::new(
                [(b, 0.0), (b, r_max)],
                px(4.0),
                px(4.0),
                color.stroke_width(px(width)),
            ))
            .map_err(chart_error)?;
    }
    Ok(())
}

/// One arm's ratio by level on the ratio panel: its repeats' bounds, its line and points, and
/// its crossing's dot.
fn draw_arm_ratio<DB: DrawingBackend>(
    lower: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    a: &ArmLine<'_>,
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let (ratios, hollow): (Vec<(f64, f64)>, Vec<bool>) = a
        .table
        .rows
        .iter()
        .filter_map(|r| r.ratio().map(|x| ((r.level, x), r.unsteady())))
        .unzip();
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
    draw_markers(lower, &ratios, &hollow, a.color, scale)?;
    if let Some(b) = a.table.crossing {
        // The crossing's dot: vermillion, ringed in the arm's colour (named in the legend).
        lower
            .draw_series([
                Circle::new((b, 1.0), px(7.0), a.color.filled()),
                Circle::new((b, 1.0), px(5.0), colors::REJECTED.filled()),
            ])
            .map_err(chart_error)?;
    }
    Ok(())
}

/// Where one arm starts to beat another (the level to change k at): each pair's crossing.
fn switches(table: &SweepFile) -> Vec<(String, String, f64)> {
    table
        .arms
        .pairs
        .iter()
        .filter_map(|p| Some((p.first.clone(), p.second.clone(), p.table.crossing?)))
        .collect()
}

/// The model's B* to draw (a batch size: on a concurrency axis only): the sweep's prediction
/// with one arm, else the answer's arm's ([`SweepFile::decider`], the one model B* every page
/// shows), named.
fn model_break_even(table: &SweepFile, arms: &[ArmLine<'_>]) -> Option<(Option<String>, f64)> {
    if !table.axis.is_concurrency() {
        return None;
    }
    if arms.len() == 1 {
        return Some((None, table.head().prediction.as_ref()?.break_even_batch));
    }
    let decider = table.decider()?;
    Some((
        Some(decider.name.clone()),
        decider.table.prediction.as_ref()?.break_even_batch,
    ))
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
            crate::model::speedup::Costs {
                draft_cost: 0.0,
                ridge_tokens: 295.0,
            },
        );
        let table = SweepFile::from(PairTable::new(rows.to_vec(), Some(pred)));
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

    #[test]
    fn knees_are_ringed_and_plain_s_over_saturation_is_dashed_and_named() {
        // Plain flat from 8 and queueing from 16 (latency doubling); the arm rising to 8.
        let rows = [
            (1.0, 200.0, 100.0, 100.0),
            (8.0, 1200.0, 800.0, 100.0),
            (16.0, 1000.0, 800.0, 200.0),
            (32.0, 700.0, 800.0, 400.0),
        ]
        .map(|(c, s, b, d)| SweepRow {
            spec_output_tokens_per_s: Some(s),
            base_output_tokens_per_s: Some(b),
            spec_median_e2el_ms: Some(d),
            base_median_e2el_ms: Some(d),
            ..SweepRow::at(Level::Concurrency(c as u64))
        });
        let mut table = SweepFile::from(PairTable::new(rows.to_vec(), None));
        table.arms.arms.push(crate::sweep::arms::ArmSweep {
            adaptive: false,
            name: "spec".into(),
            k: Some(3),
            acceptance_length: Some(2.5),
            drafts: None,
            per_position_acceptance_rates: Vec::new(),
            table: PairTable::new(rows.to_vec(), None),
            latency: Vec::new(),
            engine: Vec::new(),
            by_category: Vec::new(),
            step_cost: Vec::new(),
            saturation: Default::default(),
            calibrated: None,
            sustained_within_slo: None,
        });
        let mut without = String::new();
        {
            let root = SVGBackend::with_string(&mut without, (800, 600)).into_drawing_area();
            draw_sweep_chart(&root, &table, 1.0).unwrap();
        }
        table.arms.base_saturation = crate::sweep::saturation::Saturation {
            knee: Some(8.0),
            over_saturated_from: Some(16.0),
        };
        table.arms.arms[0].saturation.knee = Some(8.0);
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (800, 600)).into_drawing_area();
            draw_sweep_chart(&root, &table, 1.0).unwrap();
        }
        assert_eq!(texts_with(&out, "plain over-saturated from 16").len(), 1);
        assert_eq!(texts_with(&out, "ring: knee of throughput against load").len(), 1);
        // The arm's ring and plain's at 8, and the legend's swatch, beyond the chart without.
        let circles = |svg: &str| svg.matches("<circle").count();
        assert!(
            circles(&out) >= circles(&without) + 2,
            "{} vs {}",
            circles(&out),
            circles(&without)
        );
        assert!(texts_with(&without, "over-saturated").is_empty());
    }

    /// Text elements of an SVG whose text contains `needle`, with their y coordinate.
    fn texts_with(svg: &str, needle: &str) -> Vec<(f64, String)> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = t.split('>').nth(1)?.split("</text").next()?.to_string();
                let y: f64 = t.split(" y=\"").nth(1)?.split('"').next()?.parse().ok()?;
                body.contains(needle).then_some((y, body))
            })
            .collect()
    }

    /// Every crossing, the k switch and the model's B* are named with their values in the
    /// legend strip above the plots, at a wide and a phone width: no curve can cross them.
    #[test]
    fn every_crossing_is_named_with_its_value_above_the_plots() {
        let rows = |spec: [f64; 3]| -> Vec<SweepRow> {
            [(1.0, spec[0]), (32.0, spec[1]), (128.0, spec[2])]
                .map(|(c, s)| SweepRow {
                    spec_output_tokens_per_s: Some(s),
                    base_output_tokens_per_s: Some(1000.0),
                    ..SweepRow::at(Level::Concurrency(c as u64))
                })
                .to_vec()
        };
        let costs = crate::model::speedup::Costs {
            draft_cost: 0.05,
            ridge_tokens: 74.0,
        };
        let arm = |name: &str, spec: [f64; 3], e: f64, k: u32| crate::sweep::arms::ArmSweep {
            adaptive: false,
            name: name.into(),
            k: Some(k),
            acceptance_length: Some(e),
            drafts: None,
            per_position_acceptance_rates: Vec::new(),
            table: PairTable::new(rows(spec), Some(crate::sweep::Prediction::new(e, k, None, costs))),
            latency: Vec::new(),
            engine: Vec::new(),
            by_category: Vec::new(),
            step_cost: Vec::new(),
            saturation: Default::default(),
            calibrated: None,
            sustained_within_slo: None,
        };
        let mut table = SweepFile::default();
        table.arms.arms = vec![
            arm("spec", [2000.0, 1100.0, 800.0], 2.9, 3),
            arm("spec-k1", [1500.0, 1200.0, 900.0], 1.8, 1),
        ];
        table.arms.pairs = vec![crate::sweep::arms::PairSweep {
            first: "spec".into(),
            second: "spec-k1".into(),
            table: PairTable::new(
                [(1.0, 2000.0, 1500.0), (32.0, 1100.0, 1200.0), (128.0, 800.0, 900.0)]
                    .map(|(c, a, b)| SweepRow {
                        spec_output_tokens_per_s: Some(a),
                        base_output_tokens_per_s: Some(b),
                        ..SweepRow::at(Level::Concurrency(c as u64))
                    })
                    .to_vec(),
                None,
            ),
        }];
        let spec_b = table.arms.arms[0].table.crossing.unwrap();
        let k1_b = table.arms.arms[1].table.crossing.unwrap();
        let switch = table.arms.pairs[0].table.crossing.unwrap();
        let model_b = table.arms.arms[0].table.prediction.unwrap().break_even_batch;
        for (w, h) in [(1400, 560), (420, 420)] {
            let mut out = String::new();
            {
                let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
                draw_sweep_chart(&root, &table, 1.0).unwrap();
            }
            let labels = [
                format!("spec measured B* = {spec_b:.1}"),
                format!("spec-k1 measured B* = {k1_b:.1}"),
                format!("k switch spec → spec-k1 at {switch:.1}"),
                format!("model B* = {model_b:.1} (spec)"),
            ];
            // The plots start below the legend: the highest axis tick label is lower down.
            let top_tick = texts_with(&out, "×").iter().map(|(y, _)| *y).fold(f64::MAX, f64::min);
            for label in labels {
                let found = texts_with(&out, &label);
                assert_eq!(found.len(), 1, "{label} once at {w} px: {found:?}");
                assert!(
                    found[0].0 < top_tick.min(h as f64 * 0.4),
                    "{label} at y {} above the plots at {w} px",
                    found[0].0
                );
            }
        }
    }
}
