//! Two runs side by side: the figures with which one is better, latency, acceptance by
//! position and the timelines.

use leptos::prelude::*;
use plotters::style::RGBColor;
use speclens_shared::chart::{
    colors, draw_latency_comparison, draw_per_position, draw_series_panels, hover, Positions, RunLatencies, Series,
    SeriesPanel, XFrame,
};
use speclens_shared::model::speedup::implied_alpha;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::view::compare::{difference, FIGURES};
use speclens_shared::view::run::{run_view_from_result, RunView, TimelinePoint};
use speclens_shared::Error;

use crate::api::fetch_json;
use crate::chart::canvas::{chart_canvas, Draw, Root};
use crate::components::figures::*;

/// Latency panels of two runs side by side.
pub struct LatencyComparison;

impl Draw<Vec<RunLatencies>> for LatencyComparison {
    fn draw(runs: &Vec<RunLatencies>, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_latency_comparison(root, runs, scale).map(|()| None)
    }
}

/// Both runs' acceptance by draft position, beside the geometric curve of the first's E.
pub struct PositionsComparison;

/// Both runs' acceptance rate and accepted tokens per second over time.
pub struct TimelineComparison;

impl Draw<Vec<SeriesPanel>> for TimelineComparison {
    fn draw(panels: &Vec<SeriesPanel>, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_series_panels(root, panels, scale)
    }
}

#[component]
pub fn CompareRuns(a: String, b: String) -> impl IntoView {
    let (ua, ub) = (format!("/api/runs/{a}"), format!("/api/runs/{b}"));
    let ra = LocalResource::new(move || fetch_json::<RunResult>(ua.clone()));
    let rb = LocalResource::new(move || fetch_json::<RunResult>(ub.clone()));
    view! {
        <section class="page runs">
            <h1>"Compare runs"</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match (ra.get(), rb.get()) {
                (Some(Ok(x)), Some(Ok(y))) => compare_body(&a, &x, &b, &y).into_any(),
                (Some(Err(e)), _) | (_, Some(Err(e))) => view! { <p class="error" id="compare-error">"Cannot open a run: " {e}</p> }.into_any(),
                _ => view! { <p class="hint">"Loading…"</p> }.into_any(),
            }}
        </section>
    }
}

/// The two runs' figures side by side, with the signed difference, the change and which is
/// better.
pub fn compare_table(
    (a, x, ca): (&str, &RunResult, &'static str),
    (b, y, cb): (&str, &RunResult, &'static str),
) -> impl IntoView {
    view! {
        <div class="table-box">
            <table class="model-table compare" id="compare">
                <thead><tr><th class="text">""</th>
                    <th class=ca>{a.to_string()}</th><th class=cb>{b.to_string()}</th><th>"second − first"</th><th>"change"</th>
                    <th title="The run whose figure is better: higher throughput and acceptance, lower latency and failures. ITL has no better side: speculation sends several tokens per chunk, so its ITL grows while TPOT falls." tabindex="0">"better"</th></tr></thead>
                <tbody>
                    {FIGURES.iter().map(|(label, term, figure, d, better)| {
                        let (delta, change, winner) = difference(figure(x), figure(y), *d, *better, (a, b));
                        view! { <tr><td class="text" title=term.map(|t| t.definition())>{*label}</td><td class=ca>{cell(figure(x), *d)}</td><td class=cb>{cell(figure(y), *d)}</td><td>{delta}</td><td>{change}</td><td class="text">{winner}</td></tr> }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// Each run's acceptance by draft position (its first path), and the first run's E for the
/// geometric curve beside them.
fn compared_positions(runs: [(&str, &RunView, RGBColor); 2]) -> (Vec<Positions>, f64) {
    let mut positions = Vec::new();
    let mut first_e = None;
    for (id, view, color) in runs {
        if let Some(p) = view.positions_by_path().into_iter().next() {
            first_e.get_or_insert(p.acceptance_length);
            positions.push(Positions {
                label: format!("{id} ({})", p.label),
                color,
                rates: p.rates,
            });
        }
    }
    (positions, first_e.unwrap_or(1.0))
}

/// The two runs' acceptance timelines: rate and accepted tokens/s.
fn compared_timelines(runs: [(&str, &RunView, &RunResult, RGBColor); 2]) -> Vec<SeriesPanel> {
    // A run without speculation has no acceptance: it is left out of the timelines (absent),
    // not drawn as a line at 0; so is a run too short for a timeline (its page says why).
    let timeline_of = |pick: fn(&TimelinePoint) -> Option<f64>| -> Vec<Series> {
        runs.into_iter()
            .filter(|(_, view, result, _)| {
                result.spec_decode_acceptance_length.is_some() && view.timeline_too_short().is_none()
            })
            .map(|(id, view, _, color)| Series {
                label: id.to_string(),
                color,
                points: view
                    .timeline
                    .iter()
                    .filter_map(|p| pick(p).map(|v| (p.t_s, v)))
                    .collect(),
            })
            .collect()
    };
    vec![
        SeriesPanel {
            y_desc: "acceptance rate (%)".into(),
            series: timeline_of(|p| p.acceptance_rate),
        },
        SeriesPanel {
            y_desc: "accepted tokens/s".into(),
            series: timeline_of(|p| Some(p.accepted_per_s)),
        },
    ]
}

/// The comparison of two loaded runs: the table with signed differences, then latencies,
/// acceptance by position and the timelines overlaid.
pub fn compare_body(a: &str, x: &RunResult, b: &str, y: &RunResult) -> impl IntoView {
    let arm = |v: &RunResult| {
        if v.spec_decode_acceptance_length.is_some() {
            "spec-arm"
        } else {
            "base-arm"
        }
    };
    let colour = |v: &RunResult, fallback| {
        if v.spec_decode_acceptance_length.is_some() {
            fallback
        } else {
            colors::BASE
        }
    };
    let (ca, cb) = (arm(x), arm(y));
    let (col_a, col_b) = (colour(x, colors::PROPOSED), colour(y, colors::SPECULATIVE));
    let (va, vb) = (run_view_from_result(x), run_view_from_result(y));
    let latencies_of = |id: &str, view: &RunView, result: &RunResult, color| RunLatencies {
        label: id.to_string(),
        color,
        latencies: [
            view.ttft_ms.clone(),
            view.itl_ms.clone().filter(|_| result.streamed()),
            view.e2el_ms.clone(),
        ],
    };
    let latencies = vec![latencies_of(a, &va, x, col_a), latencies_of(b, &vb, y, col_b)];
    let (positions, first_e) = compared_positions([(a, &va, col_a), (b, &vb, col_b)]);
    let timelines = compared_timelines([(a, &va, x, col_a), (b, &vb, y, col_b)]);
    let any_timeline = timelines.iter().any(|p| p.series.iter().any(|s| !s.points.is_empty()));
    let not_streamed = [(a, x), (b, y)]
        .iter()
        .filter(|(_, r)| !r.streamed())
        .map(|(id, _)| id.to_string())
        .collect::<Vec<_>>();
    view! {
        {compare_table((a, x, ca), (b, y, cb))}
        {(!not_streamed.is_empty()).then(|| view! {
            <p class="hint" id="compare-not-streamed">{format!("Not streamed, so no ITL or TPOT: {}.", not_streamed.join(", "))}</p>
        })}
        <div class="chart-box"><h3>"Latency"</h3>
            {chart_canvas::<_, LatencyComparison>("compare-latency", "small-chart", "speclens-compare-latency".into(), Signal::stored(latencies))}
        </div>
        <div class="grid2">
            {(!positions.is_empty()).then(|| view! {
                <div class="chart-box"><h3>"Acceptance by draft position"</h3>
                    {chart_canvas::<_, PositionsComparison>("compare-positions", "small-chart", "speclens-compare-positions".into(), Signal::stored((positions, first_e)))}
                </div>
            })}
            {any_timeline.then(|| view! {
                <div class="chart-box"><h3>"Acceptance over time"</h3>
                    {chart_canvas::<_, TimelineComparison>("compare-timeline", "small-chart", "speclens-compare-timeline".into(), Signal::stored(timelines))}
                </div>
            })}
        </div>
    }
}

impl Draw<(Vec<Positions>, f64)> for PositionsComparison {
    fn draw(data: &(Vec<Positions>, f64), root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_per_position(root, &data.0, data.1, scale)
    }

    fn hover(data: &(Vec<Positions>, f64), x: f64) -> Option<String> {
        let k = data.0.first().map_or(1, |p| p.rates.len().max(1)) as u32;
        hover::positions_at(&data.0, implied_alpha(data.1, k), x)
    }
}
