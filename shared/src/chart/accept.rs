//! The acceptance-by-category chart: one bar per prompt category (its acceptance length E, the
//! measured path's), highest first, with the 1.0 floor (nothing accepted) as the axis.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{chart_error, colors, draw_empty, XFrame};
use crate::error::Error;

/// One category's bar.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryBar {
    pub category: String,
    /// Acceptance length E (tokens per verify step).
    pub acceptance_length: f64,
    pub requests: u64,
}

/// The bars as drawn, left to right: finite ones, highest E first.
pub fn sorted_bars(bars: &[CategoryBar]) -> Vec<&CategoryBar> {
    let mut sorted: Vec<&CategoryBar> = bars.iter().filter(|b| b.acceptance_length.is_finite()).collect();
    sorted.sort_by(|a, b| b.acceptance_length.total_cmp(&a.acceptance_length));
    sorted
}

/// Bars of E by category (sorted by E, highest first: see [`sorted_bars`]); "No spec-decode
/// data" when empty. Returns where the category axis lies.
pub fn draw_category_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    bars: &[CategoryBar],
    scale: f64,
) -> Result<Option<XFrame>, Error> {
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let font = |size: f64| ("sans-serif", size * scale).into_font();
    root.fill(&WHITE).map_err(chart_error)?;
    let bars = sorted_bars(bars);
    if bars.is_empty() {
        draw_empty(root, "No spec-decode data", scale)?;
        root.present().map_err(chart_error)?;
        return Ok(None);
    }
    let y_max = bars.iter().map(|b| b.acceptance_length).fold(1.0f64, f64::max);
    let y_max = 1.0 + (y_max - 1.0) * 1.15 + 0.05;
    let n = bars.len();
    // Each name fits its slot (about 7 px a character at 12 px): a longer one is cut with an
    // ellipsis, so neighbours never run together on a narrow screen (the table names them).
    let slot_chars = ((root.dim_in_pixel().0 as f64 / scale - 72.0) / n as f64 / 7.0)
        .floor()
        .max(3.0) as usize;
    let names: Vec<String> = bars.iter().map(|b| fit(&b.category, slot_chars)).collect();
    let mut chart = ChartBuilder::on(root)
        .margin(px(10.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(52.0))
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 1f64..y_max)
        .map_err(chart_error)?;
    // Categories sit at whole x positions; only those get a name.
    let name_at = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&name_at)
        .y_desc("acceptance length E")
        .y_label_formatter(&|y| format!("{y:.1}"))
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .light_line_style(colors::GRID)
        .draw()
        .map_err(chart_error)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let x = i as f64;
            Rectangle::new(
                [(x - 0.35, 1.0), (x + 0.35, b.acceptance_length.max(1.0))],
                colors::SPECULATIVE.filled(),
            )
        }))
        .map_err(chart_error)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            Text::new(
                if slot_chars >= 15 {
                    format!("{:.2} ({} req.)", b.acceptance_length, b.requests)
                } else {
                    format!("{:.2}", b.acceptance_length)
                },
                (i as f64, b.acceptance_length.max(1.0)),
                TextStyle::from(font(12.0)).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )
        }))
        .map_err(chart_error)?;
    root.present().map_err(chart_error)?;
    Ok(Some(XFrame::of(chart.plotting_area(), -0.5, n as f64 - 0.5, false)))
}

/// `name` cut to at most `chars` characters (the last an ellipsis) when longer.
fn fit(name: &str, chars: usize) -> String {
    if name.chars().count() <= chars {
        name.to_string()
    } else {
        name.chars().take(chars.saturating_sub(1)).chain(['…']).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Two categories, the lower first.
    pub(crate) fn two_bars() -> [CategoryBar; 2] {
        [
            CategoryBar {
                category: "qa".into(),
                acceptance_length: 1.8,
                requests: 4,
            },
            CategoryBar {
                category: "coding".into(),
                acceptance_length: 2.6,
                requests: 5,
            },
        ]
    }

    #[test]
    fn bars_are_drawn_highest_first_with_their_values() {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (600, 300)).into_drawing_area();
            let bars = two_bars();
            draw_category_chart(&root, &bars, 1.0).unwrap();
        }
        let find = |t: &str| svg.find(t).unwrap_or_else(|| panic!("{t} not in {svg}"));
        let (coding, qa) = (find("\ncoding\n"), find("\nqa\n"));
        assert!(coding < qa, "coding (E 2.6) comes first");
        assert!(svg.contains("2.60 (5 req.)") && svg.contains("1.80 (4 req.)"));
    }

    #[test]
    fn names_are_cut_to_their_slot() {
        assert_eq!(fit("coding", 8), "coding");
        assert_eq!(fit("summarization", 8), "summari…");
    }
}
