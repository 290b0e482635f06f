//! The run history: the runs under the collector's results folder (`/api/runs`), one run opened
//! in the live page's views (`#runs?open=<id>`), and two runs side by side
//! (`#runs?compare=<a>,<b>`; the run without speculation grey, the speculative one coloured).

use gloo_net::http::Request;
use leptos::prelude::*;
use serde::de::DeserializeOwned;
use speclens_shared::glossary::Term;
use speclens_shared::model::speedup::implied_alpha;
use speclens_shared::results::accept::AcceptMatrix;
use speclens_shared::results::run_list::{RunList, RunListEntry};
use speclens_shared::results::run_result::RunResult;
use speclens_shared::run::record::TTFT_SPLIT_DEFINITION;
use speclens_shared::run::tail::{TailAttribution, TAIL_DEFINITION};
use speclens_shared::view::headline::Headline;
use speclens_shared::view::run::run_view_from_result;
use speclens_shared::view::run::{RunView, TimelinePoint};

use speclens_shared::chart::{
    colors, draw_category_chart, draw_latency_comparison, draw_per_position, draw_series_panels, draw_step_cost_chart,
    draw_sweep_chart, draw_tail_scatter, has_step_cost, hover, step_cost_at, tail_at, CategoryBar, Positions,
    RunLatencies, Series, SeriesPanel, XFrame,
};
use speclens_shared::results::warnings::category_warnings;
use speclens_shared::sweep::adaptive::ADAPTIVE_ACCEPTANCE_NOTE;
use speclens_shared::sweep::arms::ArmSweep;
use speclens_shared::sweep::step_cost::STEP_COST_DEFINITION;
use speclens_shared::sweep::{Axis, PairTable, SweepFile};
use speclens_shared::Error;

use crate::canvas::{chart_canvas, Draw, Root};
use crate::live_page::{status_line, whatif_link, RunPanel};

/// The sweep: both arms' throughput by concurrency (or latency by rate), their ratio, the
/// crossing and the model's.
pub struct SweepChart;

impl Draw<SweepFile> for SweepChart {
    fn draw(t: &SweepFile, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_sweep_chart(root, t, scale)
    }

    fn hover(t: &SweepFile, level: f64) -> Option<String> {
        hover::sweep_at(t, level)
    }
}

/// The acceptance length each arm measured beside the one its load needs, by concurrency.
pub struct StepCostChart;

impl Draw<SweepFile> for StepCostChart {
    fn draw(t: &SweepFile, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_step_cost_chart(root, t, scale)
    }

    fn hover(t: &SweepFile, level: f64) -> Option<String> {
        step_cost_at(t, level)
    }
}

/// Each request's acceptance length against its E2E latency.
pub struct TailChart;

impl Draw<TailAttribution> for TailChart {
    fn draw(t: &TailAttribution, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_tail_scatter(root, t, scale)
    }

    fn hover(t: &TailAttribution, e: f64) -> Option<String> {
        tail_at(t, e)
    }
}

/// Acceptance length by prompt category, highest first.
pub struct CategoryChart;

impl Draw<Vec<CategoryBar>> for CategoryChart {
    fn draw(bars: &Vec<CategoryBar>, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_category_chart(root, bars, scale)
    }

    fn hover(bars: &Vec<CategoryBar>, x: f64) -> Option<String> {
        hover::category_at(bars, x)
    }
}

/// One bar per category of an accept run.
pub fn category_bars(matrix: &AcceptMatrix) -> Vec<CategoryBar> {
    matrix
        .categories
        .iter()
        .map(|c| CategoryBar {
            category: c.category.clone(),
            acceptance_length: c.acceptance_length,
            requests: c.requests,
        })
        .collect()
}

/// What the fragment asks the page to show.
#[derive(Debug, Clone, PartialEq)]
enum RunsView {
    List,
    Open(String),
    Compare(String, String),
    Sweep(String),
    Accept(String),
}

fn parse(fragment: &str) -> RunsView {
    let query = fragment
        .trim_start_matches('#')
        .trim_start_matches("runs")
        .trim_start_matches('?');
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("open", id)) if !id.is_empty() => return RunsView::Open(id.to_string()),
            Some(("sweep", id)) if !id.is_empty() => return RunsView::Sweep(id.to_string()),
            Some(("accept", id)) if !id.is_empty() => return RunsView::Accept(id.to_string()),
            Some(("compare", ids)) => {
                if let Some((a, b)) = ids.split_once(',') {
                    return RunsView::Compare(a.to_string(), b.to_string());
                }
            }
            _ => {}
        }
    }
    RunsView::List
}

/// The collector's answer at `url` as `T` (the shared result types), or the report's copy of
/// it in a static report.
pub async fn fetch_json<T: DeserializeOwned>(url: String) -> Result<T, String> {
    let value = match crate::report_data::response(&url) {
        Some(answer) => answer?,
        None => {
            let response = Request::get(&url).send().await.map_err(|e| e.to_string())?;
            if !response.ok() {
                return Err(format!("{url}: HTTP {}", response.status()));
            }
            response.json::<serde_json::Value>().await.map_err(|e| e.to_string())?
        }
    };
    serde_json::from_value(value).map_err(|e| format!("{url}: {e}"))
}

/// A column header whose figure the glossary defines (on hover and focus).
pub fn term_th(label: &'static str, term: Term) -> impl IntoView {
    view! { <th title=term.definition() tabindex="0">{label}</th> }
}

fn cell(v: Option<impl Into<f64>>, decimals: usize) -> String {
    v.map_or_else(|| "—".into(), |x| format!("{:.decimals$}", x.into()))
}

#[component]
pub fn RunsPage() -> impl IntoView {
    let view_kind = parse(&window().location().hash().unwrap_or_default());
    match view_kind {
        RunsView::List => view! { <RunList/> }.into_any(),
        RunsView::Open(id) => view! { <OpenRun id=id/> }.into_any(),
        RunsView::Compare(a, b) => view! { <CompareRuns a=a b=b/> }.into_any(),
        RunsView::Sweep(id) => view! { <SweepView id=id/> }.into_any(),
        RunsView::Accept(id) => view! { <AcceptView id=id/> }.into_any(),
    }
}

#[component]
fn RunList() -> impl IntoView {
    let runs = LocalResource::new(|| fetch_json::<RunList>("/api/runs".into()));
    let (picked, set_picked) = signal(Vec::<String>::new());
    let (filter, set_filter) = signal(String::new());
    view! {
        <section class="page runs">
            <h1>"Runs"</h1>
            {move || match runs.get() {
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error">"Cannot list runs: " {e}</p> }.into_any(),
                Some(Ok(v)) if v.runs.is_empty() && v.sweeps.is_empty() && v.accepts.is_empty() => view! {
                    <div class="empty" id="runs-empty">
                        <p>{format!("No runs in {} yet.", v.results_dir)}</p>
                        <p class="hint">"Run " <code>"speclens demo"</code> ", or measure a server with "
                            <code>"speclens bench --url http://127.0.0.1:8000 --out results/my-run"</code> ", then reload."</p>
                    </div>
                }.into_any(),
                Some(Ok(v)) => {
                    let list = v.runs;
                    let dir = v.results_dir;
                    let links = |ids: Vec<String>, kind: &'static str| -> Vec<String> {
                        ids.into_iter().map(|id| format!("{kind}={id}")).collect()
                    };
                    let (sweeps, accepts) = (links(v.sweeps, "sweep"), links(v.accepts, "accept"));
                    let total = list.len();
                    let rows = list.clone();
                    view! {
                        <p id="sweep-links">{sweeps.into_iter().map(|q| view! { <a class="pill" href=format!("#runs?{q}")>{q.replace('=', ": ")}</a> }).collect_view()}
                            {accepts.into_iter().map(|q| view! { <a class="pill" href=format!("#runs?{q}")>{q.replace('=', ": ")}</a> }).collect_view()}</p>
                        <div class="inputs row">
                            <label class="field" for="run-filter">
                                <span>"filter (run, kind, label, model)"</span>
                                <input id="run-filter" type="search" placeholder="e.g. sweep spec"
                                    on:input=move |ev| set_filter.set(event_target_value(&ev))/>
                            </label>
                        </div>
                        <p class="hint" id="run-count">{move || {
                            let shown = list_shown(&list, &filter.get());
                            format!("{shown} of {total} runs in {dir}, newest first. Tick two to compare them.")
                        }}</p>
                        <p>{move || {
                            let p = picked.get();
                            (p.len() == 2).then(|| view! { <a id="compare-link" href=format!("#runs?compare={},{}", p[0], p[1])>"Compare the two ticked runs →"</a> })
                        }}</p>
                        <div class="table-box">
                            <table class="model-table run-list" id="run-list">
                                <thead><tr><th>""</th><th>"run"</th><th>"kind"</th><th>"model"</th><th>"label"</th>
                                    {term_th("concurrency", Term::Concurrency)}{term_th("E", Term::AcceptanceLength)}
                                    {term_th("out tok/s (steady window)", Term::OutputSteady)}{term_th("out tok/s (whole run)", Term::OutputWholeRun)}<th>"date"</th></tr></thead>
                                <tbody>
                                    {list_rows(rows, filter, set_picked)}
                                </tbody>
                            </table>
                        </div>
                    }.into_any()
                }
            }}
        </section>
    }
}

/// How many runs the filter lets through.
fn list_shown(list: &[RunListEntry], filter: &str) -> usize {
    list.iter().filter(|r| r.matches(filter)).count()
}

/// One row per run, hidden when the filter does not match it.
fn list_rows(
    list: Vec<RunListEntry>,
    filter: ReadSignal<String>,
    set_picked: WriteSignal<Vec<String>>,
) -> impl IntoView {
    list.into_iter()
        .map(|r| {
            let id = r.id.clone();
            let id_for_box = id.clone();
            let row = r.clone();
            let name = match (&r.repeat_of, r.repeats) {
                (Some(point), _) => format!("↳ repeat of {}", point.rsplit('/').next().unwrap_or(point)),
                (None, Some(n)) => format!(" (median of {n})"),
                (None, None) => String::new(),
            };
            let repeat = r.repeat_of.is_some();
            view! {
                <tr class:hidden=move || !row.matches(&filter.get()) class:repeat=repeat>
                    <td><input type="checkbox" aria-label=format!("compare {id}") on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        let id = id_for_box.clone();
                        set_picked.update(|p| {
                            p.retain(|x| *x != id);
                            if on { p.push(id); }
                            while p.len() > 2 { p.remove(0); }
                        });
                    }/></td>
                    <td class="text"><a href=format!("#runs?open={id}")>{id.clone()}</a>{r.partial.then_some(" (partial)")}
                        {(!name.is_empty()).then(|| view! { <span class="hint">{name}</span> })}</td>
                    <td class="text">{r.kind.clone()}</td>
                    <td class="text">{r.model_id.clone().unwrap_or_else(|| "—".into())}</td>
                    <td class="text">{if r.label.is_empty() { "—".to_string() } else { r.label.clone() }}</td>
                    <td>{cell(r.max_concurrency.map(|c| c as f64), 0)}</td>
                    <td>{cell(r.spec_decode_acceptance_length, 2)}</td>
                    <td>{cell(r.steady_output_throughput, 1)}</td>
                    <td>{cell(r.output_throughput, 1)}</td>
                    <td class="text">{r.readable_date().unwrap_or_else(|| "—".into())}</td>
                </tr>
            }
        })
        .collect_view()
}

#[component]
fn OpenRun(id: String) -> impl IntoView {
    let url = format!("/api/runs/{id}");
    let result = LocalResource::new(move || fetch_json::<RunResult>(url.clone()));
    let run = Signal::derive(move || match result.get() {
        Some(Ok(v)) => run_view_from_result(&v),
        _ => RunView::idle(),
    });
    view! {
        <section class="page live">
            <h1>"Run " {id.clone()}</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match result.get() {
                // A bad link shows its error and the way back, not an empty dashboard.
                Some(Err(e)) => view! { <p class="error" id="run-error">"Cannot open the run: " {e}</p> }.into_any(),
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Ok(v)) => view! {
                    <p class="status" id="run-status">{move || status_line(&run.get())}</p>
                    {v.ttft_split().map(|split| view! {
                        <p class="hint" id="run-ttft-split" title=TTFT_SPLIT_DEFINITION tabindex="0">{split.sentence()}</p>
                    })}
                    {v.tail.clone().map(|tail| view! {
                        <div class="chart-box"><h3 title=TAIL_DEFINITION tabindex="0">"Who pays in the tail: acceptance against E2E latency, by request"</h3>
                            <p class="hint" id="run-tail-sentence" title=TAIL_DEFINITION tabindex="0">{tail.sentence()}</p>
                            {chart_canvas::<_, TailChart>("run-tail", "small-chart", "speclens-tail".into(), Signal::stored(tail))}
                        </div>
                    })}
                    {move || run.with(whatif_link)}
                    <RunPanel run=run/>
                }.into_any(),
            }}
        </section>
    }
}

/// Was the run streamed? (Only streamed runs measure ITL and TPOT; `vllm bench serve` files
/// do not say, and count as streamed.)
fn streamed(r: &RunResult) -> bool {
    r.config.as_ref().is_none_or(|c| c.stream)
}

/// Latency panels of two runs side by side.
struct LatencyComparison;

impl Draw<Vec<RunLatencies>> for LatencyComparison {
    fn draw(runs: &Vec<RunLatencies>, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_latency_comparison(root, runs, scale).map(|()| None)
    }
}

/// Both runs' acceptance by draft position, beside the geometric curve of the first's E.
struct PositionsComparison;

impl Draw<(Vec<Positions>, f64)> for PositionsComparison {
    fn draw(data: &(Vec<Positions>, f64), root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_per_position(root, &data.0, data.1, scale)
    }

    fn hover(data: &(Vec<Positions>, f64), x: f64) -> Option<String> {
        let k = data.0.first().map_or(1, |p| p.rates.len().max(1)) as u32;
        hover::positions_at(&data.0, implied_alpha(data.1, k), x)
    }
}

/// Both runs' acceptance rate and accepted tokens per second over time.
struct TimelineComparison;

impl Draw<Vec<SeriesPanel>> for TimelineComparison {
    fn draw(panels: &Vec<SeriesPanel>, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_series_panels(root, panels, scale)
    }
}

/// Which way a figure of the comparison is better.
#[derive(Clone, Copy)]
enum Better {
    Higher,
    Lower,
    /// Neither way (a count of requests).
    Neither,
}

/// A figure of the comparison table: its name, its definition, how to read it from a run, its
/// decimals and which way is better.
type Figure = (&'static str, Option<Term>, fn(&RunResult) -> Option<f64>, usize, Better);

const FIGURES: [Figure; 9] = [
    (
        "completed requests",
        None,
        |r| r.completed.map(|c| c as f64),
        0,
        Better::Neither,
    ),
    (
        "failed requests",
        None,
        |r| r.failed.map(|c| c as f64),
        0,
        Better::Lower,
    ),
    (
        "output tokens/s (steady window)",
        Some(Term::OutputSteady),
        |r| r.steady_output_throughput,
        1,
        Better::Higher,
    ),
    (
        "output tokens/s (whole run)",
        Some(Term::OutputWholeRun),
        |r| r.output_throughput,
        1,
        Better::Higher,
    ),
    ("mean TTFT (ms)", Some(Term::Ttft), |r| r.mean_ttft_ms, 2, Better::Lower),
    (
        "mean TPOT (ms)",
        Some(Term::Tpot),
        |r| r.mean_tpot_ms.filter(|_| streamed(r)),
        2,
        Better::Lower,
    ),
    (
        "mean ITL (ms)",
        Some(Term::Itl),
        |r| r.mean_itl_ms.filter(|_| streamed(r)),
        2,
        Better::Neither,
    ),
    (
        "acceptance rate (%)",
        Some(Term::AcceptanceRate),
        |r| r.spec_decode_acceptance_rate,
        2,
        Better::Higher,
    ),
    (
        "acceptance length",
        Some(Term::AcceptanceLength),
        |r| r.spec_decode_acceptance_length,
        3,
        Better::Higher,
    ),
];

/// `second − first` with its sign, the relative change, and which run is better by the figure
/// (so a faster run reads as better whichever way its number moved).
fn difference(
    first: Option<f64>,
    second: Option<f64>,
    decimals: usize,
    better: Better,
    names: (&str, &str),
) -> (String, String, String) {
    match (first, second) {
        (Some(p), Some(q)) => {
            let winner = match better {
                _ if p == q => "same".to_string(),
                Better::Neither => "—".to_string(),
                Better::Higher => if q > p { names.1 } else { names.0 }.to_string(),
                Better::Lower => if q < p { names.1 } else { names.0 }.to_string(),
            };
            let change = if p != 0.0 {
                format!("{:+.1} %", (q / p - 1.0) * 100.0)
            } else {
                "—".into()
            };
            (format!("{:+.decimals$}", q - p), change, winner)
        }
        _ => ("—".into(), "—".into(), "—".into()),
    }
}

#[component]
fn CompareRuns(a: String, b: String) -> impl IntoView {
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
fn compare_table(
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

/// The comparison of two loaded runs: the table with signed differences, then latencies,
/// acceptance by position and the timelines overlaid.
fn compare_body(a: &str, x: &RunResult, b: &str, y: &RunResult) -> impl IntoView {
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
            view.itl_ms.clone().filter(|_| streamed(result)),
            view.e2el_ms.clone(),
        ],
    };
    let latencies = vec![latencies_of(a, &va, x, col_a), latencies_of(b, &vb, y, col_b)];
    let mut positions = Vec::new();
    let mut first_e = None;
    for (id, view, color) in [(a, &va, col_a), (b, &vb, col_b)] {
        if let Some(p) = view.positions_by_path().into_iter().next() {
            first_e.get_or_insert(p.acceptance_length);
            positions.push(Positions {
                label: format!("{id} ({})", p.label),
                color,
                rates: p.rates,
            });
        }
    }
    // A run without speculation has no acceptance: it is left out of the timelines (absent),
    // not drawn as a line at 0; so is a run too short for a timeline (its page says why).
    let timeline_of = |pick: fn(&TimelinePoint) -> Option<f64>| -> Vec<Series> {
        [(a, &va, x, col_a), (b, &vb, y, col_b)]
            .into_iter()
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
    let timelines = vec![
        SeriesPanel {
            y_desc: "acceptance rate (%)".into(),
            series: timeline_of(|p| p.acceptance_rate),
        },
        SeriesPanel {
            y_desc: "accepted tokens/s".into(),
            series: timeline_of(|p| Some(p.accepted_per_s)),
        },
    ];
    let any_timeline = timelines.iter().any(|p| p.series.iter().any(|s| !s.points.is_empty()));
    let not_streamed = [(a, x), (b, y)]
        .iter()
        .filter(|(_, r)| !streamed(r))
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
                    {chart_canvas::<_, PositionsComparison>("compare-positions", "small-chart", "speclens-compare-positions".into(), Signal::stored((positions, first_e.unwrap_or(1.0))))}
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

#[component]
fn SweepView(id: String) -> impl IntoView {
    let url = format!("/api/sweeps/{id}");
    let table = LocalResource::new(move || fetch_json::<SweepFile>(url.clone()));
    let parsed = Signal::derive(move || table.get().and_then(|r| r.ok()));
    view! {
        <section class="page runs">
            <h1>{view_title("Sweep", "sweep", &id)}</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match table.get() {
                Some(Err(e)) => Some(view! { <p class="error">"Cannot open the sweep: " {e}</p> }),
                _ => None,
            }}
            {move || parsed.get().map(|t| view! {
                <div class="chart-box">{chart_canvas::<_, SweepChart>("sweep-chart", "tall-chart", "speclens-sweep".into(), Signal::stored(t))}</div>
            })}
            {move || parsed.get().filter(has_step_cost).map(|t| view! {
                <div class="chart-box"><h3 title=STEP_COST_DEFINITION tabindex="0">"Acceptance length: needed at each load against measured"</h3>
                    {chart_canvas::<_, StepCostChart>("sweep-step-cost", "small-chart", "speclens-step-cost".into(), Signal::stored(t))}
                </div>
            })}
            {move || parsed.get().map(|t| {
                let spread = |v: Option<f64>, s: Option<(f64, f64)>| match (v, s) {
                    (Some(v), Some((lo, hi))) => format!("{v:.1} ({lo:.1}–{hi:.1})"),
                    (v, _) => cell(v, 1),
                };
                let arms = (t.arms.arms.len() > 1).then(|| t.arms.arms.clone());
                let recommendation = t.recommendation.clone();
                let whatif = Headline::of_sweep(&t).map(|h| {
                    let (fragment, b) = h.whatif_link();
                    (fragment, format!(" arm {}: model B* = {b:.1}", h.arm))
                });
                view! {
                    <div class="findings" id="sweep-findings">
                        {t.head().findings().into_iter().map(|line| view! { <p>{line}</p> }).collect_view()}
                        {t.arms.arms.iter().find(|a| !a.adaptive).and_then(|a| a.step_cost_sentence()).map(|line| view! {
                            <p id="sweep-step-cost-sentence" title=STEP_COST_DEFINITION tabindex="0">{line}</p>
                        })}
                    </div>
                    <div class="notices" id="sweep-notices">
                        {t.warnings.iter().cloned().chain(t.earlier_notes()).chain(t.arms.tail_regressions()).map(|line| view! { <p class="hint">{line}</p> }).collect_view()}
                    </div>
                    {whatif.map(|(fragment, beside)| view! { <p><a id="whatif-from-sweep" href=format!("#{fragment}")>"What-if with the headline arm's measured acceptance →"</a>
                        <span class="hint" id="whatif-from-sweep-bstar">{beside}</span></p> })}
                    {arms.map(arms_table)}
                    {(!t.arms.adaptive.is_empty()).then(|| view! {
                        <div class="findings" id="sweep-adaptive">
                            {t.arms.adaptive.iter().map(|j| view! { <p class="headline">{format!("Adaptive arm: {}.", j.summary())}</p> }).collect_view()}
                            <p class="hint">{format!("An adaptive arm's server runs a draft-length schedule: it is judged by throughput and TPOT against the best fixed choice at each level, never picked for a k, and its acceptance length {ADAPTIVE_ACCEPTANCE_NOTE}.")}</p>
                        </div>
                    })}
                    {recommendation.map(|r| view! {
                        <div class="findings" id="sweep-recommendation">
                            <h3>"Recommendation"</h3>
                            <p class="headline">{r.summary()}</p>
                            {r.settings.iter().filter(|s| !s.line.is_empty()).map(|s| view! {
                                <p>{format!("{}: ", s.engine)}<code>{s.line.clone()}</code></p>
                                <p class="hint">{format!("From: {}", s.basis)}</p>
                                {s.warnings.iter().map(|w| view! { <p class="hint warning">{format!("Warning: {w}")}</p> }).collect_view()}
                            }).collect_view()}
                        </div>
                    })}
                    <div class="table-box">
                        <table class="model-table" id="sweep-table">
                            {match t.axis {
                                Axis::Concurrency => view! { <thead><tr>{term_th("concurrency", Term::Concurrency)}
                                    {term_th("spec output tok/s, steady window (repeats' range)", Term::OutputSteady)}
                                    {term_th("plain output tok/s, steady window (repeats' range)", Term::OutputSteady)}
                                    {term_th("spec ÷ plain", Term::Ratio)}<th>"verdict"</th></tr></thead> }.into_any(),
                                Axis::RequestRate => view! { <thead><tr><th>"requests/s"</th>{term_th("spec median E2E ms (repeats' range)", Term::E2el)}
                                    {term_th("plain median E2E ms (repeats' range)", Term::E2el)}<th>"plain ÷ spec"</th><th>"verdict"</th></tr></thead> }.into_any(),
                            }}
                            <tbody>
                                {t.head().rows.iter().map(|r| {
                                    let (ratio, verdict) = PairTable::verdict(r);
                                    let (spec, base) = r.figures();
                                    view! { <tr>
                                        <td>{format!("{}", r.level)}</td>
                                        <td>{spread(spec, r.spec_spread)}</td>
                                        <td>{spread(base, r.base_spread)}</td>
                                        <td>{ratio}</td>
                                        <td>{verdict}</td>
                                    </tr> }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                    <details class="console" id="sweep-console" open>
                        <summary>"What the console printed: every arm against plain, latency differences (TPOT first), engine load and each arm's model prediction"</summary>
                        <pre>{t.render()}</pre>
                    </details>
                }
            })}
        </section>
    }
}

/// Every arm of a sweep against plain: its k, acceptance length, crossing and ratio by level.
fn arms_table(arms: Vec<ArmSweep>) -> impl IntoView {
    view! {
        <div class="table-box">
            <table class="model-table" id="sweep-arms">
                <thead><tr><th>"arm"</th>{term_th("k", Term::DraftLength)}{term_th("acceptance length", Term::AcceptanceLength)}
                    {term_th("crossing (repeats' range)", Term::Crossing)}{term_th("ratio to plain by level", Term::Ratio)}</tr></thead>
                <tbody>
                    {arms.into_iter().map(|a| {
                        let crossing = match (a.table.crossing, a.table.crossing_interval) {
                            (Some(b), Some((lo, hi))) => format!("{b:.1} ({lo:.1}–{hi:.1})"),
                            (Some(b), None) => format!("{b:.1}"),
                            (None, _) => "none in range".into(),
                        };
                        let ratios: Vec<String> = a.table.rows.iter().filter_map(|r| Some(format!("{}: {:.3}", r.level, r.ratio()?))).collect();
                        let (name, k, length) = if a.adaptive {
                            (
                                format!("{} (adaptive)", a.name),
                                a.k.map_or("—".into(), |k| format!("up to {k}")),
                                format!("{} ({ADAPTIVE_ACCEPTANCE_NOTE})", cell(a.acceptance_length, 3)),
                            )
                        } else {
                            (a.name, a.k.map_or("—".into(), |k| k.to_string()), cell(a.acceptance_length, 3))
                        };
                        view! { <tr>
                            <td>{name}</td>
                            <td>{k}</td>
                            <td>{length}</td>
                            <td>{crossing}</td>
                            <td>{ratios.join(", ")}</td>
                        </tr> }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn AcceptView(id: String) -> impl IntoView {
    let url = format!("/api/accept/{id}");
    let rows = LocalResource::new(move || fetch_json::<AcceptMatrix>(url.clone()));
    view! {
        <section class="page runs">
            <h1>{view_title("Acceptance by category", "accept", &id)}</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match rows.get() {
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error">"Cannot open: " {e}</p> }.into_any(),
                Some(Ok(v)) => {
                    let pooled = AcceptMatrix::pooled_line(&v.categories);
                    let notes = category_warnings(&v.categories);
                    view! {
                    <div class="chart-box"><h3>"Acceptance length by category"</h3>
                        {chart_canvas::<_, CategoryChart>("accept-chart", "small-chart", "speclens-acceptance-by-category".into(), Signal::stored(category_bars(&v)))}
                    </div>
                    {pooled.map(|l| view! { <p class="headline" id="accept-pooled">{l}</p> })}
                    <div class="table-box"><table class="model-table" id="accept-matrix">
                        <thead><tr><th>"category"</th><th>"path"</th><th>"requests"</th>
                            {term_th("acceptance length (± 95 %)", Term::AcceptanceLength)}{term_th("acceptance rate %", Term::AcceptanceRate)}
                            {term_th("per-position rates", Term::DraftPosition)}</tr></thead>
                        <tbody>
                            {v.categories.iter().map(|r| view! { <tr>
                                <td>{r.category.clone()}</td>
                                <td>{r.path.clone()}</td>
                                <td>{r.requests}</td>
                                <td>{r.length_text()}</td>
                                <td>{format!("{:.2}", r.acceptance_rate)}</td>
                                <td>{r.positions_text()}</td>
                            </tr> }).collect_view()}
                        </tbody>
                    </table></div>
                    <div id="accept-notes">
                        {notes.into_iter().map(|n| view! { <p class="notice">{format!("Note: {n}")}</p> }).collect_view()}
                    </div>
                }.into_any()
                }
            }}
        </section>
    }
}

/// A view's title: its kind, then the folder's name unless that name only repeats the kind (the
/// demo's `sweep` and `accept` folders would read "Sweep sweep").
fn view_title(kind: &str, folder_word: &str, id: &str) -> String {
    if id.eq_ignore_ascii_case(folder_word) {
        kind.to_string()
    } else {
        format!("{kind}: {id}")
    }
}
