//! The sweep's step-cost chart: by concurrency, the acceptance length each arm measured beside
//! the one its load needs (a speculative step's cost in plain steps); speculation pays where the
//! measured line is above the needed one.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{chart_error, colors, draw_dotted_line, draw_markers, legend_above, nearest, Swatch, XFrame};
use crate::error::Error;
use crate::sweep::SweepFile;

/// The arms with step-cost rows, each with its colour (the sweep chart's order and colours).
fn arms_with_rows(table: &SweepFile) -> Vec<(&crate::sweep::arms::ArmSweep, RGBColor)> {
    table
        .arms
        .arms
        .iter()
        .enumerate()
        .map(|(i, a)| (a, super::sweep::arm_color(i)))
        .filter(|(a, _)| !a.step_cost.is_empty())
        .collect()
}

/// Whether the sweep has a step-cost chart to draw.
pub fn has_step_cost(table: &SweepFile) -> bool {
    !arms_with_rows(table).is_empty()
}

/// Each arm's measured acceptance length (solid) and the one its load needs (dashed, vermillion
/// for a single arm), by concurrency. Returns where the concurrency axis lies.
pub fn draw_step_cost_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    table: &SweepFile,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    root.fill(&WHITE).map_err(chart_error)?;
    let arms = arms_with_rows(table);
    if arms.is_empty() {
        root.present().map_err(chart_error)?;
        return Ok(None);
    }
    let single = arms.len() == 1;
    let needed_color = |c: RGBColor| if single { colors::REJECTED } else { c };
    let mut legend: Vec<(String, Swatch)> = Vec::new();
    for (a, color) in &arms {
        legend.push((format!("{}: E measured", a.name), Swatch::Line(*color)));
        legend.push((
            format!("{}: E needed (step cost in plain steps)", a.name),
            Swatch::Dashed(needed_color(*color)),
        ));
    }
    let plot = legend_above(root, &legend, scale)?;
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    let rows = || arms.iter().flat_map(|(a, _)| a.step_cost.iter());
    let x_max = rows().map(|r| r.level).fold(1.0f64, f64::max) * 1.05;
    let y_max = rows()
        .flat_map(|r| [r.acceptance_length, r.needed_acceptance_length()])
        .filter(|v| v.is_finite())
        .fold(2.0f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&plot)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(60.0))
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_desc("concurrency")
        .y_desc("E, tokens per step")
        .y_label_formatter(&|y| format!("{y:.1}"))
        .y_labels(5)
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(colors::GRID)
        .draw()
        .map_err(chart_error)?;
    for (a, color) in &arms {
        let measured: Vec<(f64, f64)> = a.step_cost.iter().map(|r| (r.level, r.acceptance_length)).collect();
        let needed: Vec<(f64, f64)> = a
            .step_cost
            .iter()
            .map(|r| (r.level, r.needed_acceptance_length()))
            .collect();
        // Levels without a steady window are hollow, as on the throughput chart.
        let hollow: Vec<bool> = a.step_cost.iter().map(|r| !r.steady).collect();
        draw_dotted_line(&mut chart, &measured, *color, false, scale)?;
        draw_dotted_line(&mut chart, &needed, needed_color(*color), true, scale)?;
        draw_markers(&mut chart, &measured, &hollow, *color, scale)?;
        draw_markers(&mut chart, &needed, &hollow, needed_color(*color), scale)?;
    }
    root.present().map_err(chart_error)?;
    Ok(Some(XFrame::of(chart.plotting_area(), 0.0, x_max, false)))
}

/// The hover text at concurrency `level`: each arm's measured and needed E and its margin there.
pub fn step_cost_at(table: &SweepFile, level: f64) -> Option<String> {
    let arms = arms_with_rows(table);
    let levels: Vec<f64> = arms
        .iter()
        .flat_map(|(a, _)| a.step_cost.iter().map(|r| r.level))
        .collect();
    let at = levels[nearest(levels.iter().copied(), level)?];
    let parts: Vec<String> = arms
        .iter()
        .filter_map(|(a, _)| {
            let r = a.step_cost.iter().find(|r| r.level == at)?;
            Some(format!(
                "{}: a step costs {:.2} plain steps, so E ≥ {:.2} is needed; E = {:.2} measured ({:+.2})",
                a.name,
                r.step_cost,
                r.needed_acceptance_length(),
                r.acceptance_length,
                r.margin()
            ))
        })
        .collect();
    Some(format!("concurrency {at}: {}", parts.join(" · ")))
}
