//! What every chart shares: the app's colours, where a chart's x axis went (`XFrame`) and the
//! nearest point to a pointer, the legend strip above the plot, tick labels, the empty chart
//! and plotters' error mapped to the crate's.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::Error;

/// The app's fixed colours: the Okabe–Ito palette, told apart with every common colour-vision
/// deficiency, with grey for the plain arm.
pub mod colors {
    use plotters::style::RGBColor;
    /// Accepted draft tokens (bluish green).
    pub const ACCEPTED: RGBColor = RGBColor(0x00, 0x9e, 0x73);
    /// Rejected draft tokens (vermillion).
    pub const REJECTED: RGBColor = RGBColor(0xd5, 0x5e, 0x00);
    /// Proposed draft tokens (blue).
    pub const PROPOSED: RGBColor = RGBColor(0x00, 0x72, 0xb2);
    /// The base (non-speculative) arm.
    pub const BASE: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
    /// The speculative arm and the selected model curve (reddish purple).
    pub const SPECULATIVE: RGBColor = RGBColor(0xcc, 0x79, 0xa7);
    /// Other model curves, told apart by their order in this list (orange, sky blue, yellow,
    /// blue, bluish green, vermillion).
    pub const OTHERS: [RGBColor; 6] = [
        RGBColor(0xe6, 0x9f, 0x00),
        RGBColor(0x56, 0xb4, 0xe9),
        RGBColor(0xf0, 0xe4, 0x42),
        RGBColor(0x00, 0x72, 0xb2),
        RGBColor(0x00, 0x9e, 0x73),
        RGBColor(0xd5, 0x5e, 0x00),
    ];
    /// Reference lines (S = 1) and the geometric curve.
    pub const REFERENCE: RGBColor = RGBColor(0x33, 0x33, 0x33);
    /// Grid lines.
    pub const GRID: RGBColor = RGBColor(0xee, 0xee, 0xee);
}

/// Where a chart put its x axis: the plotting area's left and right edge in backend pixels and
/// the data values there, so a pointer's position reads back as a data value (the page's hover
/// readouts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XFrame {
    pub left_px: i32,
    pub right_px: i32,
    pub lo: f64,
    pub hi: f64,
    /// A log axis (the what-if's batch sizes).
    pub log: bool,
}

impl XFrame {
    /// The frame of a plotting area drawn over `lo..hi`.
    pub(crate) fn of<DB: DrawingBackend, C: plotters::coord::CoordTranslate>(
        area: &DrawingArea<DB, C>,
        lo: f64,
        hi: f64,
        log: bool,
    ) -> XFrame {
        let (x, _) = area.get_pixel_range();
        XFrame {
            left_px: x.start,
            right_px: x.end,
            lo,
            hi,
            log,
        }
    }

    /// The data value under pixel `px` (in the backend's pixels), or `None` outside the area.
    pub fn value_at(&self, px: f64) -> Option<f64> {
        let (left, right) = (f64::from(self.left_px), f64::from(self.right_px));
        if right <= left || px < left || px > right {
            return None;
        }
        let frac = (px - left) / (right - left);
        Some(if self.log && self.lo > 0.0 && self.hi > 0.0 {
            (self.lo.ln() + frac * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + frac * (self.hi - self.lo)
        })
    }
}

/// The index of the value in `xs` nearest to `x` (`None` for none).
pub fn nearest(xs: impl IntoIterator<Item = f64>, x: f64) -> Option<usize> {
    xs.into_iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .min_by(|a, b| (a.1 - x).abs().total_cmp(&(b.1 - x).abs()))
        .map(|(i, _)| i)
}

/// How a legend entry shows its series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Swatch {
    Line(RGBColor),
    Dashed(RGBColor),
    Bar(RGBColor),
    /// A dot of the first colour ringed in the second (a crossing marker).
    Dot(RGBColor, RGBColor),
}

/// One series as a line through dots: solid, or dashed (a needed or modelled figure beside a
/// measured one). `scale` multiplies widths and radii.
pub(crate) fn draw_dotted_line<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    points: &[(f64, f64)],
    color: RGBColor,
    dashed: bool,
    scale: f64,
) -> Result<(), Error>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    if dashed {
        chart
            .draw_series(DashedLineSeries::new(
                points.iter().copied(),
                px(6.0),
                px(4.0),
                color.stroke_width(px(2.5)),
            ))
            .map_err(chart_error)?;
    } else {
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(px(2.5))))
            .map_err(chart_error)?;
    }
    draw_markers(chart, points, &[], color, scale)
}

/// Each point's dot in `color`: filled, or hollow (a ring on white) where `hollow[i]` says
/// point `i` had no steady window (its figure is the whole run's); missing entries are filled.
pub(crate) fn draw_markers<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    points: &[(f64, f64)],
    hollow: &[bool],
    color: RGBColor,
    scale: f64,
) -> Result<(), Error>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let px = |v: f64| (v * scale).round().max(1.0) as u32;
    let is_hollow = |i: usize| hollow.get(i).copied().unwrap_or(false);
    chart
        .draw_series(
            points
                .iter()
                .enumerate()
                .filter(|(i, _)| !is_hollow(*i))
                .map(|(_, p)| Circle::new(*p, px(3.5), color.filled())),
        )
        .map_err(chart_error)?;
    chart
        .draw_series(
            points
                .iter()
                .enumerate()
                .filter(|(i, _)| is_hollow(*i))
                .flat_map(|(_, p)| {
                    [
                        Circle::new(*p, px(4.5), WHITE.filled()),
                        Circle::new(*p, px(4.5), color.stroke_width(px(2.0))),
                    ]
                }),
        )
        .map_err(chart_error)?;
    Ok(())
}

/// Draw `items` left to right (wrapping into rows) in a strip above the plot, and return the
/// area below it: a legend never covers data. Swatch, gap and text scale with `scale`, so
/// nothing overlaps at 2× density.
pub(crate) fn legend_above<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    items: &[(String, Swatch)],
    scale: f64,
) -> Result<DrawingArea<DB, Shift>, Error> {
    if items.is_empty() {
        return Ok(root.clone());
    }
    let style = TextStyle::from(("sans-serif", 12.0 * scale).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let s = |v: f64| (v * scale).round() as i32;
    let (width, _) = root.dim_in_pixel();
    let (pad, swatch_w, gap, spacing, row_h) = (s(10.0), s(18.0), s(6.0), s(16.0), s(18.0));
    // Lay the items out first: (row, x, label width).
    let mut placed = Vec::with_capacity(items.len());
    let (mut row, mut x) = (0, pad);
    for (label, _) in items {
        let text_w = root
            .estimate_text_size(label, &style)
            .map_or(label.len() as u32 * 7, |(w, _)| w) as i32;
        let item_w = swatch_w + gap + text_w;
        if x > pad && x + item_w > width as i32 - pad {
            row += 1;
            x = pad;
        }
        placed.push((row, x));
        x += item_w + spacing;
    }
    let strip_h = pad / 2 + (row + 1) * row_h + pad / 2;
    let (strip, rest) = root.split_vertically(strip_h.max(1) as u32);
    for ((label, swatch), (row, x)) in items.iter().zip(placed) {
        let y = pad / 2 + row * row_h + row_h / 2;
        let line_w = s(2.0).max(1) as u32;
        match *swatch {
            Swatch::Line(c) => strip.draw(&PathElement::new([(x, y), (x + swatch_w, y)], c.stroke_width(line_w))),
            Swatch::Dashed(c) => {
                let dash = swatch_w / 3;
                strip
                    .draw(&PathElement::new([(x, y), (x + dash, y)], c.stroke_width(line_w)))
                    .and_then(|_| {
                        strip.draw(&PathElement::new(
                            [(x + 2 * dash, y), (x + swatch_w, y)],
                            c.stroke_width(line_w),
                        ))
                    })
            }
            Swatch::Bar(c) => strip.draw(&Rectangle::new(
                [(x, y - s(5.0)), (x + swatch_w, y + s(5.0))],
                c.filled(),
            )),
            Swatch::Dot(inner, ring) => {
                let centre = (x + swatch_w / 2, y);
                strip
                    .draw(&Circle::new(centre, s(7.0).max(2) as u32, ring.filled()))
                    .and_then(|_| strip.draw(&Circle::new(centre, s(5.0).max(1) as u32, inner.filled())))
            }
        }
        .map_err(chart_error)?;
        strip
            .draw(&Text::new(label.clone(), (x + swatch_w + gap, y), style.clone()))
            .map_err(chart_error)?;
    }
    Ok(rest)
}

/// An axis tick label for an axis spanning `range`: whole numbers without decimals and with
/// thousands separators (12,500), smaller ranges with the decimals their steps need.
pub(crate) fn tick(v: f64, range: f64) -> String {
    if range >= 20.0 {
        let whole = format!("{:.0}", v.abs());
        let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
        for (i, ch) in whole.chars().enumerate() {
            if i > 0 && (whole.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(ch);
        }
        if v.round() < 0.0 {
            grouped.insert(0, '-');
        }
        grouped
    } else if range >= 2.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub(crate) fn chart_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> Error {
    Error::Chart(e.to_string())
}

/// Centered text on an otherwise empty chart ("No traffic", "No spec-decode data").
pub(crate) fn draw_empty<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    scale: f64,
) -> Result<(), Error> {
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

/// A tick on an axis of whole things (concurrency, requests): the number without decimals,
/// grouped; nothing between whole numbers.
pub(crate) fn whole_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        tick(v, f64::INFINITY)
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_whole_and_grouped_on_wide_axes() {
        assert_eq!(tick(4000.0, 18_000.0), "4,000");
        assert_eq!(tick(12_500.4, 18_000.0), "12,500");
        assert_eq!(tick(1_234_567.0, 2e6), "1,234,567");
        assert_eq!(tick(-1500.0, 3000.0), "-1,500");
        assert_eq!(tick(64.0, 320.0), "64");
        assert_eq!(tick(2.5, 3.0), "2.5");
        assert_eq!(tick(0.25, 1.05), "0.25");
        assert_eq!(whole_tick(4.0), "4");
        assert_eq!(whole_tick(2.5), "");
        assert_eq!(whole_tick(12000.0), "12,000");
    }

    #[test]
    fn a_pointer_reads_back_as_a_data_value() {
        let f = XFrame {
            left_px: 100,
            right_px: 300,
            lo: 0.0,
            hi: 20.0,
            log: false,
        };
        assert_eq!(f.value_at(200.0), Some(10.0));
        assert_eq!(f.value_at(99.0), None);
        let log = XFrame {
            lo: 1.0,
            hi: 100.0,
            log: true,
            ..f
        };
        assert!((log.value_at(200.0).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(nearest([1.0, 4.0, 8.0], 5.5), Some(1));
        assert_eq!(nearest([], 5.5), None);
    }

    #[test]
    fn the_legend_sits_above_the_plot_and_wraps() {
        let mut svg = String::new();
        let rest_h;
        {
            let root = SVGBackend::with_string(&mut svg, (300, 200)).into_drawing_area();
            let items: Vec<(String, Swatch)> = (0..6)
                .map(|i| (format!("series number {i}"), Swatch::Line(colors::OTHERS[i])))
                .collect();
            let rest = legend_above(&root, &items, 1.0).unwrap();
            rest_h = rest.dim_in_pixel().1;
        }
        assert!(rest_h < 200 - 36, "six long labels need more than one row: {rest_h}");
        assert!(svg.contains("series number 5"));
    }
}
