//! One run's panel, the same live and saved: the tiles, the acceptance and token-flow
//! timelines, latencies and their distributions, the per-request path, acceptance by draft
//! position and the replicas.

use leptos::prelude::*;
use plotters::style::RGBColor;
use speclens_shared::chart::{
    colors, draw_histograms, draw_per_position, draw_series_chart, draw_series_panels, hover, HistogramPanel,
    Positions, Series, SeriesPanel, XFrame,
};
use speclens_shared::glossary::Term;
use speclens_shared::model::speedup::implied_alpha;
use speclens_shared::results::content_mark::CONTENT_INVALID_DEFINITION;
use speclens_shared::run::aggregate::Bins;
use speclens_shared::view::run::{RunStatus, RunView, Tiles, TimelinePoint};
use speclens_shared::Error;

use crate::chart::canvas::{chart_canvas, Draw, Root};
use crate::components::figures::*;

/// "Output: X tokens/s (whole run)", and the steady window's figure when the run had one: the
/// one a sweep compares, so a sweep point's page shows the console's number, named.
pub fn throughput_line(r: &RunView) -> String {
    let whole = format!("Output: {:.1} tokens/s (whole run)", r.output_tokens_per_s);
    match (r.steady_output_tokens_per_s, r.steady_window_s) {
        (Some(steady), Some(window_s)) => {
            format!("{whole} · {steady:.1} tokens/s in the steady window ({window_s:.2} s), the figure sweeps compare")
        }
        (Some(steady), None) => {
            format!("{whole} · {steady:.1} tokens/s in the steady window, the figure sweeps compare")
        }
        _ => whole,
    }
}

/// Acceptance over time: the rate (percent) and the length (tokens per step), each on its own
/// axis, one point per scrape interval.
pub struct AcceptanceOverTime;

impl Draw<RunView> for AcceptanceOverTime {
    fn draw(run: &RunView, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        let of = |pick: fn(&TimelinePoint) -> Option<f64>| -> Vec<(f64, f64)> {
            run.timeline
                .iter()
                .filter_map(|p| pick(p).map(|v| (p.t_s, v)))
                .collect()
        };
        let panels = [
            SeriesPanel {
                y_desc: "acceptance rate (%)".into(),
                series: vec![Series {
                    label: "acceptance rate (%)".into(),
                    color: colors::ACCEPTED,
                    points: of(|p| p.acceptance_rate),
                }],
            },
            SeriesPanel {
                y_desc: "length (tokens/step)".into(),
                series: vec![Series {
                    label: "acceptance length (tokens/step)".into(),
                    color: colors::SPECULATIVE,
                    points: of(|p| p.acceptance_length),
                }],
            },
        ];
        draw_series_panels(root, &panels, scale)
    }

    fn hover(run: &RunView, t_s: f64) -> Option<String> {
        hover::timeline_at(run, t_s)
    }
}

/// Draft tokens proposed, accepted and rejected per second.
pub struct TokenFlow;

impl Draw<RunView> for TokenFlow {
    fn draw(run: &RunView, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        let t = &run.timeline;
        let series = [
            Series {
                label: "proposed/s".into(),
                color: colors::PROPOSED,
                points: t.iter().map(|p| (p.t_s, p.drafted_per_s)).collect(),
            },
            Series {
                label: "accepted/s".into(),
                color: colors::ACCEPTED,
                points: t.iter().map(|p| (p.t_s, p.accepted_per_s)).collect(),
            },
            Series {
                label: "rejected/s".into(),
                color: colors::REJECTED,
                points: t
                    .iter()
                    .map(|p| (p.t_s, (p.drafted_per_s - p.accepted_per_s).max(0.0)))
                    .collect(),
            },
        ];
        draw_series_chart(root, &series, "draft tokens/s", scale)
    }

    fn hover(run: &RunView, t_s: f64) -> Option<String> {
        hover::timeline_at(run, t_s)
    }
}

/// Path colours in the per-position chart: per-request first, then each scraped endpoint.
pub const PATH_COLORS: [RGBColor; 4] = [
    colors::ACCEPTED,
    colors::PROPOSED,
    colors::SPECULATIVE,
    colors::REJECTED,
];

/// Acceptance by draft position for each path, beside the geometric curve of the same E.
pub struct PositionsChart;

impl Draw<RunView> for PositionsChart {
    fn draw(run: &RunView, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        let (measured, e) = measured_positions(run);
        draw_per_position(root, &measured, e, scale)
    }

    fn hover(run: &RunView, x: f64) -> Option<String> {
        let (measured, e) = measured_positions(run);
        let k = measured.first().map_or(0, |p| p.rates.len()) as u32;
        hover::positions_at(&measured, implied_alpha(e, k.max(1)), x)
    }
}

/// Each path's positions in its colour, and the first path's E.
pub fn measured_positions(run: &RunView) -> (Vec<Positions>, f64) {
    let paths = run.positions_by_path();
    let e = paths.first().map_or(1.0, |p| p.acceptance_length);
    let measured = paths
        .into_iter()
        .zip(PATH_COLORS.iter().cycle())
        .map(|(p, color)| Positions {
            label: p.label,
            color: *color,
            rates: p.rates,
        })
        .collect();
    (measured, e)
}

/// TTFT, ITL and E2E latency histograms side by side.
pub struct LatencyDistributions;

impl Draw<RunView> for LatencyDistributions {
    fn draw(run: &RunView, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        let d = &run.distributions;
        let panels = [
            ("TTFT (ms)", d.ttft_ms.as_ref()),
            ("ITL (ms)", d.itl_ms.as_ref()),
            ("E2E latency (ms)", d.e2el_ms.as_ref()),
        ]
        .map(|(x_desc, bins)| HistogramPanel {
            x_desc,
            color: colors::PROPOSED,
            bins,
        });
        draw_histograms(root, &panels, scale).map(|()| None)
    }
}

/// Per-request acceptance length and the pooled drafts accepted per step.
pub struct AcceptanceDistributions;

impl Draw<RunView> for AcceptanceDistributions {
    fn draw(run: &RunView, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        let pooled = run
            .per_request
            .as_ref()
            .and_then(|s| Bins::from_counts(&s.pooled_spec_decode_acceptance_histogram));
        let panels = [
            HistogramPanel {
                x_desc: "acceptance length per request",
                color: colors::SPECULATIVE,
                bins: run.distributions.acceptance_length.as_ref(),
            },
            HistogramPanel {
                x_desc: "drafts accepted per step (pooled)",
                color: colors::ACCEPTED,
                bins: pooled.as_ref(),
            },
        ];
        draw_histograms(root, &panels, scale).map(|()| None)
    }
}

/// "over N requests · M steps" under the acceptance distributions.
pub fn acceptance_counts(run: &RunView) -> String {
    let requests = run.distributions.acceptance_length.as_ref().map_or(0, Bins::total);
    let steps: u64 = run
        .per_request
        .as_ref()
        .map_or(0, |s| s.pooled_spec_decode_acceptance_histogram.values().sum());
    format!("{requests} requests with spec-decode steps · {steps} steps pooled")
}

/// Tiles, charts, latencies, per-request path and per-position chart of one run (live or
/// opened from the history).
#[component]
pub fn RunPanel(run: Signal<RunView>) -> impl IntoView {
    // A tile shows this run's figure; before its first interval, the previous run's (a sweep's
    // last point), named under the value.
    let tile = move |id: &'static str, term: Term, pick: fn(&Tiles) -> Option<f64>, decimals: usize| {
        let shown = move || {
            run.with(|r| {
                let (value, from) = r.tile_or_previous(pick);
                (fmt(value, decimals), from.map(|label| format!("{label}, the last run")))
            })
        };
        view! { <div class="tile" id=id title=term.definition() tabindex="0"><div class="tile-label">{capitalised(term.name())}</div>
            <div class="tile-value">{move || shown().0}</div>
            {move || shown().1.map(|note| view! { <div class="tile-note">{note}</div> })}
        </div> }
    };
    let scope = move || {
        run.with(|r| match r.status {
            RunStatus::Running => "Last scrape interval of each endpoint, updated as the run goes; the whole run's figures replace them when it ends.",
            RunStatus::Finished | RunStatus::Partial => "Whole run, as saved in result.json.",
            RunStatus::Idle => "",
        })
    };
    // The timelines, or why a saved run's are not drawn; a memo, so the charts are made again
    // only when that answer changes, not on every update of the run.
    let timeline_too_short = Memo::new(move |_| run.with(|r| r.timeline_too_short()));
    view! {
        <p class="hint tiles-scope" id="tiles-scope">{scope}</p>
        {move || run.with(|r| r.content_invalid.clone()).map(|mark| view! {
            <p class="warning" id="run-content-invalid" title=CONTENT_INVALID_DEFINITION tabindex="0">{mark}</p>
        })}
        <div class="tiles">
            {tile("tile-acceptance-rate", Term::AcceptanceRate, |t| t.acceptance_rate, 2)}
            {tile("tile-acceptance-length", Term::AcceptanceLength, |t| t.acceptance_length, 2)}
            {tile("tile-accepted-per-s", Term::AcceptedPerS, |t| t.accepted_per_s, 1)}
            {tile("tile-drafted-per-s", Term::DraftedPerS, |t| t.drafted_per_s, 1)}
            {tile("tile-drafts-per-s", Term::DraftsPerS, |t| t.drafts_per_s, 1)}
            {tile("tile-draft-share", Term::DraftShare, |t| t.draft_share, 1)}
        </div>
        {move || match timeline_too_short.get() {
            None => view! {
                <div class="grid2">
                    <div class="chart-box"><h3>"Acceptance over time"</h3>{chart_canvas::<_, AcceptanceOverTime>("live-acceptance", "small-chart", "speclens-acceptance-over-time".into(), run)}</div>
                    <div class="chart-box"><h3>"Token flow"</h3>{chart_canvas::<_, TokenFlow>("live-flow", "small-chart", "speclens-token-flow".into(), run)}</div>
                </div>
            }.into_any(),
            Some(why) => view! {
                <h3>"Acceptance over time · token flow"</h3>
                <p class="hint" id="timeline-too-short">{why}</p>
            }.into_any(),
        }}
        <div class="grid2">
            <div>
                <h3>"Latency (ms)"</h3>
                <div class="table-box"><table class="model-table" id="latency">
                    <thead><tr><th>""</th><th>"mean"</th><th>"median"</th><th>"p99"</th></tr></thead>
                    <tbody>
                        {move || latency_row(Term::Ttft, run.with(|r| r.ttft_ms.clone()))}
                        {move || latency_row(Term::Tpot, run.with(|r| r.tpot_ms.clone()))}
                        {move || latency_row(Term::Itl, run.with(|r| r.itl_ms.clone()))}
                        {move || latency_row(Term::ItlPerToken, run.with(|r| r.chunks.itl_per_token.clone()))}
                        {move || latency_row(Term::E2el, run.with(|r| r.e2el_ms.clone()))}
                    </tbody>
                </table></div>
                {move || run.with(|r| r.chunks.page_line()).map(|line| {
                    let defined = format!("{} {}", Term::TokensPerChunk.definition(), Term::Interactivity.definition());
                    view! { <p class="hint" id="chunk-figures" title=defined tabindex="0">{line}</p> }
                })}
                <p id="output-throughput">{move || run.with(throughput_line)}</p>
                <h3>"Per-request path"</h3>
                <div id="per-request">
                    {per_request_path(run)}
                </div>
                {per_replica(run)}
                <div id="not-available">
                    {move || run.with(|r| r.not_available.clone()).into_iter().map(|r| view! { <p class="warning">"N/A: " {r}</p> }).collect_view()}
                </div>
                <div id="notices">
                    {move || run.with(|r| r.notices.clone()).into_iter().map(|r| view! { <p class="notice">{r}</p> }).collect_view()}
                </div>
            </div>
            <div class="chart-box"><h3>"Acceptance by draft position"</h3>{chart_canvas::<_, PositionsChart>("live-positions", "small-chart", "speclens-acceptance-by-position".into(), run)}
                <p class="hint">"A draft is accepted only if all earlier ones were, so rates fall with position; when they fall faster than the geometric curve, the best k is smaller than the geometric table suggests."</p>
            </div>
        </div>
        <div class="chart-box"><h3>"Latency distributions"</h3>{chart_canvas::<_, LatencyDistributions>("live-latency-dist", "wide-chart", "speclens-latency-distributions".into(), run)}</div>
        <div class="chart-box"><h3>"Acceptance distributions"</h3>{chart_canvas::<_, AcceptanceDistributions>("live-acceptance-dist", "wide-chart", "speclens-acceptance-distributions".into(), run)}
            <p class="hint" id="acceptance-dist-counts">{move || run.with(acceptance_counts)}</p>
        </div>
    }
}

/// The per-request path's figures of a run, or why there are none.
pub fn per_request_path(run: Signal<RunView>) -> impl IntoView {
    move || {
        run.with(|r| match &r.per_request {
            Some(s) => {
                let e = s
                    .spec_decode_token_weighted_acceptance_length
                    .as_ref()
                    .map_or("N/A".to_string(), |d| format!("{:.3}", d.avg));
                let rate = s
                    .spec_decode_overall_draft_acceptance_rate
                    .as_ref()
                    .map_or("N/A".to_string(), |d| format!("{:.2}", d.avg));
                view! {
                    <p>"Token-weighted acceptance length: " <strong id="pr-length">{e}</strong>
                       " · overall draft acceptance rate: " <strong id="pr-rate">{rate}</strong> " %"
                       " · steps: " <strong id="pr-steps">{format!("{:.0}", s.total_spec_decode_steps.avg)}</strong></p>
                    <p class="hint">{s.histogram_line().unwrap_or_default()}</p>
                }
                .into_any()
            }
            None => view! { <p class="hint">"N/A: no request carried spec-decode stats (yet)."</p> }.into_any(),
        })
    }
}

/// Each endpoint's acceptance over the live scrapes, when there are any.
pub fn per_replica(run: Signal<RunView>) -> impl IntoView {
    move || {
        let rows = run.with(|r| r.acceptance_by_endpoint());
        (!rows.is_empty()).then(|| view! {
            <h3>"Per replica (live scrapes)"</h3>
            <div class="table-box"><table class="model-table" id="per-replica">
                <thead><tr><th>"endpoint"</th><th>"acceptance rate (%)"</th><th>"acceptance length"</th><th>"drafts"</th></tr></thead>
                <tbody>
                    {rows.into_iter().map(|e| view! {
                        <tr>
                            <td>{e.endpoint}</td>
                            <td>{e.acceptance_rate.map_or("—".to_string(), |v| format!("{v:.2}"))}</td>
                            <td>{e.acceptance_length.map_or("—".to_string(), |v| format!("{v:.2}"))}</td>
                            <td>{format!("{:.0}", e.drafts)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table></div>
        })
    }
}
