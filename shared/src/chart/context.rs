//! The sweep's context charts: B* against the input length (each arm's measured crossing with
//! the repeats' range, the model's B*(L) dashed beside it) and what moved between the lengths
//! (the acceptance length measured beside the step cost, the acceptance length the load needs).

use plotters::coord::Shift;
use plotters::prelude::*;

use plotters::coord::combinators::LogCoord;
use plotters::coord::types::RangedCoordf64;

use super::frame::{chart_error, colors, draw_dotted_line, legend_above, nearest, Swatch, XFrame};
use crate::error::Error;
use crate::model::context::BreakEven;
use crate::sweep::contexts::ContextSweep;
use crate::sweep::SweepFile;

/// One arm of a context chart: its name, its colour (the sweep chart's order and colours) and
/// the colour of its dashed series (vermillion when it is the only arm).
struct ArmColors {
    name: String,
    color: RGBColor,
    dashed: RGBColor,
}

/// The start of both context charts: a white canvas, then the sweep's contexts and their arms'
/// colours; `None` (the canvas presented empty) for a sweep without a context axis.
fn begin<'t, DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    table: &'t SweepFile,
) -> Result<Option<(&'t ContextSweep, Vec<ArmColors>)>, Error> {
    root.fill(&WHITE).map_err(chart_error)?;
    let Some(contexts) = &table.contexts else {
        root.present().map_err(chart_error)?;
        return Ok(None);
    };
    let names = contexts.arm_names();
    let single = names.len() == 1;
    let arms = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let color = super::sweep::arm_color(i);
            let dashed = if single { colors::REJECTED } else { color };
            ArmColors { name, color, dashed }
        })
        .collect();
    Ok(Some((contexts, arms)))
}

/// The log x range over the input lengths, with a margin on each side.
fn x_range(contexts: &ContextSweep) -> (f64, f64) {
    let lengths = contexts.contexts.iter().map(|c| f64::from(c.input_tokens.max(1)));
    let hi = lengths.clone().fold(1.0f64, f64::max);
    let lo = lengths.fold(hi, f64::min);
    ((lo / 1.5).max(1.0), hi * 1.5)
}

/// The plot of a context chart: input tokens on a log axis (with a margin each side), 0 to
/// `y_max` up, the mesh drawn.
fn context_axes<'a, DB: DrawingBackend>(
    plot: &'a DrawingArea<DB, Shift>,
    contexts: &ContextSweep,
    y_max: f64,
    y_desc: &str,
    y_decimals: usize,
    scale: f64,
) -> Result<ChartContext<'a, DB, Cartesian2d<LogCoord<f64>, RangedCoordf64>>, Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    let (x_lo, x_hi) = x_range(contexts);
    let mut chart = ChartBuilder::on(plot)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(60.0))
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0f64..y_max)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_desc(contexts.axis.tokens_name())
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.y_decimals$}"))
        .y_labels(5)
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(colors::GRID)
        .draw()
        .map_err(chart_error)?;
    Ok(chart)
}

/// The value a break-even is drawn at (a sweep that paid at every level: its last level).
fn drawn(b: Option<BreakEven>) -> Option<f64> {
    match b? {
        BreakEven::At(v) | BreakEven::Beyond(v) => Some(v),
        BreakEven::Never => None,
    }
}

/// The value the model's B*(L) is drawn at: none where it pays at every batch it searched
/// (the end of that search, a million, would flatten the chart; the table says so).
fn drawn_model(b: Option<BreakEven>) -> Option<f64> {
    match b? {
        BreakEven::At(v) => Some(v),
        BreakEven::Beyond(_) | BreakEven::Never => None,
    }
}

/// B* against input tokens: each arm's measured crossing (a dot; a ring where the sweep paid
/// at every level, drawn at its last level; a bar for the repeats' range) and the model's B*(L)
/// dashed (vermillion for a single arm). Returns where the input-length axis lies.
pub fn draw_context_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    table: &SweepFile,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    let Some((contexts, arms)) = begin(root, table)? else {
        return Ok(None);
    };
    let mut legend: Vec<(String, Swatch)> = Vec::new();
    for a in &arms {
        legend.push((format!("{}: measured B*", a.name), Swatch::Line(a.color)));
        legend.push((format!("{}: model B*(L)", a.name), Swatch::Dashed(a.dashed)));
    }
    let rings = contexts
        .contexts
        .iter()
        .flat_map(|c| c.arms.iter())
        .any(|a| matches!(a.measured, Some(BreakEven::Beyond(_))));
    if rings {
        legend.push((
            "ring: pays at every level swept".to_string(),
            Swatch::Dot(WHITE, colors::REFERENCE),
        ));
    }
    let plot = legend_above(root, &legend, scale)?;
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let y_max = contexts
        .contexts
        .iter()
        .flat_map(|c| c.arms.iter())
        .flat_map(|a| {
            [
                drawn(a.measured),
                drawn_model(a.model),
                a.measured_interval.map(|i| i.1),
            ]
        })
        .flatten()
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut chart = context_axes(&plot, contexts, y_max, "B* (concurrency)", 0, scale)?;
    for ArmColors { name, color, dashed } in &arms {
        let per_context = || {
            contexts
                .contexts
                .iter()
                .filter_map(move |c| Some((f64::from(c.input_tokens), c.arm(name)?)))
        };
        let measured: Vec<(f64, f64, bool)> = per_context()
            .filter_map(|(l, a)| Some((l, drawn(a.measured)?, matches!(a.measured, Some(BreakEven::Beyond(_))))))
            .collect();
        let model: Vec<(f64, f64)> = per_context()
            .filter_map(|(l, a)| Some((l, drawn_model(a.model)?)))
            .collect();
        draw_dotted_line(&mut chart, &model, *dashed, true, scale)?;
        chart
            .draw_series(LineSeries::new(
                measured.iter().map(|&(l, b, _)| (l, b)),
                color.stroke_width(px(2.5)),
            ))
            .map_err(chart_error)?;
        for (l, a) in per_context() {
            if let Some((lo, hi)) = a.measured_interval {
                chart
                    .draw_series(LineSeries::new([(l, lo), (l, hi)], color.stroke_width(px(2.0))))
                    .map_err(chart_error)?;
            }
        }
        chart
            .draw_series(measured.iter().map(|&(l, b, beyond)| {
                let style = if beyond {
                    color.stroke_width(px(2.5))
                } else {
                    color.filled()
                };
                Circle::new((l, b), px(5.0), style)
            }))
            .map_err(chart_error)?;
    }
    root.present().map_err(chart_error)?;
    let (x_lo, x_hi) = x_range(contexts);
    Ok(Some(XFrame::of(chart.plotting_area(), x_lo, x_hi, true)))
}

/// What moved along the context: each arm's acceptance length (solid) beside its step cost,
/// the acceptance length its highest common level needs (E ÷ speedup; dashed, vermillion for a single
/// arm), against input tokens. Speculation pays there while the solid line is above the dashed.
pub fn draw_context_cost_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    table: &SweepFile,
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    let Some((contexts, arms)) = begin(root, table)? else {
        return Ok(None);
    };
    let mut legend: Vec<(String, Swatch)> = Vec::new();
    for a in &arms {
        legend.push((format!("{}: E measured", a.name), Swatch::Line(a.color)));
        legend.push((
            format!("{}: step cost (E needed at its highest common level)", a.name),
            Swatch::Dashed(a.dashed),
        ));
    }
    let plot = legend_above(root, &legend, scale)?;
    let y_max = contexts
        .contexts
        .iter()
        .flat_map(|c| c.arms.iter())
        .flat_map(|a| [a.acceptance_length, a.step_cost])
        .flatten()
        .filter(|v| v.is_finite())
        .fold(2.0f64, f64::max)
        * 1.1;
    let mut chart = context_axes(&plot, contexts, y_max, "E, tokens per step", 1, scale)?;
    for ArmColors { name, color, dashed } in &arms {
        let series = |pick: fn(&crate::sweep::contexts::ContextArm) -> Option<f64>| -> Vec<(f64, f64)> {
            contexts
                .contexts
                .iter()
                .filter_map(|c| Some((f64::from(c.input_tokens), pick(c.arm(name)?)?)))
                .collect()
        };
        draw_dotted_line(&mut chart, &series(|a| a.acceptance_length), *color, false, scale)?;
        draw_dotted_line(&mut chart, &series(|a| a.step_cost), *dashed, true, scale)?;
    }
    root.present().map_err(chart_error)?;
    let (x_lo, x_hi) = x_range(contexts);
    Ok(Some(XFrame::of(chart.plotting_area(), x_lo, x_hi, true)))
}

/// The hover text at input length `tokens`: each arm's figures at the nearest length swept.
pub fn context_at(table: &SweepFile, tokens: f64) -> Option<String> {
    let contexts = table.contexts.as_ref()?;
    // Nearest on the log axis the charts draw.
    let i = nearest(
        contexts.contexts.iter().map(|c| f64::from(c.input_tokens.max(1)).ln()),
        tokens.max(1.0).ln(),
    )?;
    let c = &contexts.contexts[i];
    let b = |v: Option<BreakEven>| match v {
        Some(BreakEven::At(b)) => format!("{b:.1}"),
        Some(BreakEven::Beyond(b)) => format!("past {b}"),
        Some(BreakEven::Never) => "none (loses from the first level)".to_string(),
        None => "—".to_string(),
    };
    let f = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
    let parts: Vec<String> = c
        .arms
        .iter()
        .map(|a| {
            format!(
                "{}: measured B* {}, model {}; E {}, step cost {}",
                a.arm,
                b(a.measured),
                b(a.model),
                f(a.acceptance_length),
                f(a.step_cost)
            )
        })
        .collect();
    Some(format!(
        "{} {}: {}",
        c.input_tokens,
        contexts.axis.tokens_name(),
        parts.join(" · ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::contexts::{ContextArm, ContextSlice};

    fn sweep() -> SweepFile {
        let slice = |input_tokens: u32, measured, model, e, cost| ContextSlice {
            input_tokens,
            mean_context_tokens: f64::from(input_tokens) + 64.0,
            folder: String::new(),
            arms: vec![ContextArm {
                arm: "spec".into(),
                measured: Some(measured),
                measured_interval: Some((30.0, 50.0)),
                model: Some(model),
                acceptance_length: Some(e),
                step_cost: Some(cost),
                step_cost_level: Some(16.0),
            }],
        };
        SweepFile {
            contexts: Some(ContextSweep {
                axis: Default::default(),
                kv_ratio: 1e-5,
                draft_kv_share: 0.0,
                contexts: vec![
                    slice(32, BreakEven::At(45.0), BreakEven::At(42.2), 2.54, 1.09),
                    slice(1024, BreakEven::Beyond(96.0), BreakEven::At(72.3), 2.53, 1.76),
                ],
                by_concurrency: Vec::new(),
                not_measured: Vec::new(),
            }),
            ..SweepFile::default()
        }
    }

    #[test]
    fn both_charts_draw_each_series_in_its_colour_and_the_hover_names_the_nearest_length() {
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        for cost in [false, true] {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (800, 400)).into_drawing_area();
                let frame = if cost {
                    draw_context_cost_chart(&root, &sweep(), 1.0)
                } else {
                    draw_context_chart(&root, &sweep(), 1.0)
                };
                assert!(frame.unwrap().expect("a frame").log);
            }
            for c in [colors::SPECULATIVE, colors::REJECTED] {
                assert!(svg.contains(&hex(c)), "{} not in the chart", hex(c));
            }
            assert!(svg.contains("input tokens"), "{svg}");
        }
        let text = context_at(&sweep(), 900.0).unwrap();
        assert_eq!(
            text,
            "1024 input tokens: spec: measured B* past 96, model 72.3; E 2.53, step cost 1.76"
        );
        // Without a context axis there is nothing to draw.
        let mut svg = String::new();
        let root = SVGBackend::with_string(&mut svg, (800, 400)).into_drawing_area();
        assert_eq!(draw_context_chart(&root, &SweepFile::default(), 1.0).unwrap(), None);
    }
}
