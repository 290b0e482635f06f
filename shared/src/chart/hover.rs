//! The values under the pointer, as the page's hover readout says them: for a chart's x value
//! (read back through its [`super::XFrame`]), the nearest measured point in words.

use super::accept::{sorted_bars, CategoryBar};
use super::frame::{nearest, tick};
use super::live::Positions;
use super::speedup::SpeedupChart;
use crate::sweep::{Axis, SweepFile};
use crate::view::run::RunView;

/// The scrape interval nearest `t_s` seconds into the run: acceptance and draft flow.
pub fn timeline_at(run: &RunView, t_s: f64) -> Option<String> {
    let i = nearest(run.timeline.iter().map(|p| p.t_s), t_s)?;
    let p = &run.timeline[i];
    let mut parts = vec![format!("{:.1} s, {}", p.t_s, p.endpoint)];
    if let Some(rate) = p.acceptance_rate {
        parts.push(format!("acceptance rate {rate:.1} %"));
    }
    if let Some(length) = p.acceptance_length {
        parts.push(format!("length {length:.2}"));
    }
    parts.push(format!(
        "proposed {}/s, accepted {}/s",
        tick(p.drafted_per_s, 1e9),
        tick(p.accepted_per_s, 1e9)
    ));
    Some(parts.join(" · "))
}

/// The sweep's row nearest `level`: both arms (with the repeats' range) and their ratio.
pub fn sweep_at(table: &SweepFile, level: f64) -> Option<String> {
    if table.arms.arms.len() > 1 {
        return arms_at(table, level);
    }
    let i = nearest(table.head().rows.iter().map(|r| r.level), level)?;
    let r = &table.head().rows[i];
    let (noun, unit) = match table.axis {
        Axis::Concurrency => ("concurrency", "tok/s"),
        Axis::RequestRate => ("request rate", "ms median E2E"),
    };
    let arm = |v: Option<f64>, spread: Option<(f64, f64)>| match (v, spread) {
        (Some(v), Some((lo, hi))) => format!("{} {unit} ({}–{})", tick(v, 1e9), tick(lo, 1e9), tick(hi, 1e9)),
        (Some(v), None) => format!("{} {unit}", tick(v, 1e9)),
        (None, _) => "not measured".to_string(),
    };
    let (spec, base) = r.figures();
    let ratio = r.ratio().map_or(String::new(), |x| {
        format!(
            " · ratio {x:.2}× ({})",
            if x > 1.0 {
                "speculation pays"
            } else {
                "speculation loses"
            }
        )
    });
    Some(format!(
        "{noun} {}: speculative {} · plain {}{ratio}",
        tick(r.level, 1e9),
        arm(spec, r.spec_spread),
        arm(base, r.base_spread)
    ))
}

/// A multi-arm sweep's level nearest `level`: each arm's ratio to plain.
fn arms_at(table: &SweepFile, level: f64) -> Option<String> {
    let levels = table.arms.levels();
    let at = levels[nearest(levels.iter().copied(), level)?];
    let noun = match table.axis {
        Axis::Concurrency => "concurrency",
        Axis::RequestRate => "request rate",
    };
    let parts: Vec<String> = table
        .arms
        .arms
        .iter()
        .map(|a| {
            let ratio = a.table.rows.iter().find(|r| r.level == at).and_then(|r| r.ratio());
            format!(
                "{} {}",
                a.name,
                ratio.map_or_else(|| "—".to_string(), |x| format!("{x:.2}×"))
            )
        })
        .collect();
    let unit = match table.axis {
        Axis::Concurrency => "tok/s",
        Axis::RequestRate => "ms median E2E",
    };
    let plain = table
        .arms
        .arms
        .iter()
        .find_map(|a| a.table.rows.iter().find(|r| r.level == at).and_then(|r| r.figures().1))
        .map_or_else(|| "not measured".to_string(), |v| format!("{} {unit}", tick(v, 1e9)));
    Some(format!(
        "{noun} {}: {} (each ÷ plain) · plain {plain}",
        tick(at, 1e9),
        parts.join(" · ")
    ))
}

/// The draft position nearest `x`: each path's rate beside the geometric curve's (α^position).
pub fn positions_at(paths: &[Positions], alpha: f64, x: f64) -> Option<String> {
    let k = paths.iter().map(|p| p.rates.len()).max()?;
    let position = (x.round() as usize).clamp(1, k.max(1));
    let mut parts: Vec<String> = paths
        .iter()
        .filter_map(|p| Some(format!("{} {:.3}", p.label, p.rates.get(position - 1)?)))
        .collect();
    parts.push(format!("geometric {:.3}", alpha.powi(position as i32)));
    // Numbered from 0 as the axis, the console and vLLM's `position` label number them.
    Some(format!("position {}: {}", position - 1, parts.join(" · ")))
}

/// Each S(B) curve at the batch size nearest `batch`.
pub fn speedup_at(chart: &SpeedupChart, batch: f64) -> Option<String> {
    let first = chart.curves.first()?;
    let i = nearest(first.points.iter().map(|p| p.0), batch)?;
    let b = first.points[i].0;
    let parts: Vec<String> = chart
        .curves
        .iter()
        .filter_map(|c| {
            let j = nearest(c.points.iter().map(|p| p.0), b)?;
            Some(format!("{}: {:.2}×", c.label.replace("  ", " "), c.points[j].1))
        })
        .collect();
    Some(format!("B = {}: {}", tick(b, 1e9), parts.join(" · ")))
}

/// The category bar nearest `x` (bars sit at 0, 1, … in the drawn order).
pub fn category_at(bars: &[CategoryBar], x: f64) -> Option<String> {
    let sorted = sorted_bars(bars);
    let i = x.round();
    let bar = sorted.get(usize::try_from(i as i64).ok()?)?;
    Some(format!(
        "{}: acceptance length {:.2} over {} requests",
        bar.category, bar.acceptance_length, bar.requests
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::frame::colors;
    use crate::sweep::{Level, PairTable, SweepRow};

    #[test]
    fn the_readout_names_the_nearest_point() {
        let table = SweepFile::from(PairTable::new(
            vec![
                SweepRow {
                    spec_output_tokens_per_s: Some(12_451.0),
                    base_output_tokens_per_s: Some(5_182.6),
                    spec_spread: Some((12_422.0, 12_466.0)),
                    ..SweepRow::at(Level::Concurrency(64))
                },
                SweepRow {
                    spec_output_tokens_per_s: Some(13_000.0),
                    base_output_tokens_per_s: Some(18_000.0),
                    ..SweepRow::at(Level::Concurrency(256))
                },
            ],
            None,
        ));
        let text = sweep_at(&table, 100.0).unwrap();
        assert_eq!(
            text,
            "concurrency 64: speculative 12,451 tok/s (12,422–12,466) · plain 5,183 tok/s · ratio 2.40× (speculation pays)"
        );
        assert!(sweep_at(&table, 250.0).unwrap().contains("speculation loses"));
        let paths = [Positions {
            label: "per-request".into(),
            color: colors::ACCEPTED,
            rates: vec![0.8, 0.56, 0.42],
        }];
        assert_eq!(
            positions_at(&paths, 0.75, 2.2).unwrap(),
            "position 1: per-request 0.560 · geometric 0.562"
        );
        let bars = crate::chart::accept::tests::two_bars();
        assert_eq!(
            category_at(&bars, 0.1).unwrap(),
            "coding: acceptance length 2.60 over 5 requests"
        );
        assert_eq!(category_at(&bars, 7.0), None);
    }
}
