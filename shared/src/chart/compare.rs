//! Two runs side by side: their latencies (TTFT, ITL, E2E; mean, median and p99 as grouped
//! bars, one panel per latency so each keeps its own scale).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{chart_error, colors, draw_empty, legend_above, tick, Swatch};
use crate::error::Error;
use crate::run::record::LatencyStats;

/// One run's latencies for [`draw_latency_comparison`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunLatencies {
    pub label: String,
    pub color: RGBColor,
    /// TTFT, ITL and E2E latency, in milliseconds (None: not measured, e.g. ITL without
    /// streaming).
    pub latencies: [Option<LatencyStats>; 3],
}

const PANELS: [&str; 3] = ["TTFT (ms)", "ITL (ms)", "E2E latency (ms)"];
const STATS: [&str; 3] = ["mean", "median", "p99"];

fn stat(s: &LatencyStats, i: usize) -> Option<f64> {
    match i {
        0 => Some(s.mean),
        1 => Some(s.median),
        _ => s.percentiles.get("99").copied(),
    }
}

/// Mean, median and p99 of each latency, one bar per run in each group; a panel neither run
/// measured says so.
pub fn draw_latency_comparison<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    runs: &[RunLatencies],
    scale: f64,
) -> Result<(), Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    root.fill(&WHITE).map_err(chart_error)?;
    let legend: Vec<(String, Swatch)> = runs.iter().map(|r| (r.label.clone(), Swatch::Bar(r.color))).collect();
    let plot = legend_above(root, &legend, scale)?;
    let areas = plot.split_evenly((1, PANELS.len()));
    let n = runs.len().max(1) as f64;
    for (p, (area, title)) in areas.iter().zip(PANELS).enumerate() {
        let values: Vec<Vec<Option<f64>>> = runs
            .iter()
            .map(|r| {
                (0..STATS.len())
                    .map(|i| r.latencies[p].as_ref().and_then(|s| stat(s, i)))
                    .collect()
            })
            .collect();
        let y_top = values.iter().flatten().flatten().copied().fold(0.0f64, f64::max);
        if y_top <= 0.0 {
            draw_empty(area, &format!("{title}: not measured"), scale)?;
            continue;
        }
        let y_max = y_top * 1.15;
        let mut chart = ChartBuilder::on(area)
            .margin(px(8.0))
            .x_label_area_size(px(40.0))
            .y_label_area_size(px(60.0))
            .build_cartesian_2d(-0.5f64..(STATS.len() as f64 - 0.5), 0f64..y_max)
            .map_err(chart_error)?;
        let name_at = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                STATS.get(i as usize).map_or(String::new(), |s| s.to_string())
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(STATS.len())
            .x_label_formatter(&name_at)
            .y_label_formatter(&|y| tick(*y, y_max))
            .x_desc(title)
            .label_style(font(11.0))
            .axis_desc_style(font(12.0))
            .light_line_style(colors::GRID)
            .draw()
            .map_err(chart_error)?;
        let width = 0.8 / n;
        for (r, (run, run_values)) in runs.iter().zip(&values).enumerate() {
            let left = |i: usize| i as f64 - 0.4 + width * r as f64;
            chart
                .draw_series(run_values.iter().enumerate().filter_map(|(i, v)| {
                    Some(Rectangle::new(
                        [(left(i), 0.0), (left(i) + width * 0.92, (*v)?)],
                        run.color.filled(),
                    ))
                }))
                .map_err(chart_error)?;
            chart
                .draw_series(run_values.iter().enumerate().filter_map(|(i, v)| {
                    Some(Text::new(
                        tick((*v)?, y_max.min(19.9)),
                        (left(i) + width * 0.46, (*v)?),
                        TextStyle::from(font(10.0)).pos(Pos::new(HPos::Center, VPos::Bottom)),
                    ))
                }))
                .map_err(chart_error)?;
        }
    }
    root.present().map_err(chart_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn stats(mean: f64) -> LatencyStats {
        LatencyStats {
            mean,
            median: mean * 0.9,
            std: 1.0,
            percentiles: BTreeMap::from([("99".to_string(), mean * 2.0)]),
        }
    }

    #[test]
    fn both_runs_are_drawn_and_an_unmeasured_latency_says_so() {
        let runs = [
            RunLatencies {
                label: "base-run".into(),
                color: colors::BASE,
                latencies: [Some(stats(40.0)), None, Some(stats(900.0))],
            },
            RunLatencies {
                label: "spec-run".into(),
                color: colors::SPECULATIVE,
                latencies: [Some(stats(45.0)), None, Some(stats(500.0))],
            },
        ];
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (900, 300)).into_drawing_area();
            draw_latency_comparison(&root, &runs, 1.0).unwrap();
        }
        assert!(svg.contains("base-run") && svg.contains("spec-run"));
        assert!(svg.contains("ITL (ms): not measured"));
        assert!(svg.contains("1,800"), "E2E p99 of the base run, grouped");
    }
}
