//! The run history: the runs under the collector's results folder (`/api/runs`), one run opened
//! in the live page's views (`#runs?open=<id>`), and two runs side by side
//! (`#runs?compare=<a>,<b>`; the run without speculation grey, the speculative one coloured).

use gloo_net::http::Request;
use leptos::prelude::*;
use serde::de::DeserializeOwned;
use speclens_shared::protocol::RunView;
use speclens_shared::results::{run_view_from_result, AcceptMatrix, RunList, RunResult};

use speclens_shared::chart::draw_sweep_chart;
use speclens_shared::sweep::SweepTable;
use speclens_shared::Error;

use crate::canvas::{chart_canvas, Draw, Root};
use crate::live_page::{status_line, whatif_fragment, RunPanel};

/// The sweep: both arms' throughput by concurrency, their ratio, the crossing and the model's.
pub struct SweepChart;

impl Draw<SweepTable> for SweepChart {
    fn draw(t: &SweepTable, root: &Root, scale: f64) -> Result<(), Error> {
        draw_sweep_chart(root, t, scale)
    }
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
    view! {
        <section class="page runs">
            <h1>"Runs"</h1>
            {move || match runs.get() {
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error">"Cannot list runs: " {e}</p> }.into_any(),
                Some(Ok(v)) => {
                    let list = v.runs;
                    let dir = v.results_dir;
                    let links = |ids: Vec<String>, kind: &'static str| -> Vec<String> {
                        ids.into_iter().map(|id| format!("{kind}={id}")).collect()
                    };
                    let (sweeps, accepts) = (links(v.sweeps, "sweep"), links(v.accepts, "accept"));
                    view! {
                        <p id="sweep-links">{sweeps.into_iter().map(|q| view! { <a class="pill" href=format!("#runs?{q}")>{q.replace('=', ": ")}</a> }).collect_view()}
                            {accepts.into_iter().map(|q| view! { <a class="pill" href=format!("#runs?{q}")>{q.replace('=', ": ")}</a> }).collect_view()}</p>
                        <p class="hint">{format!("{} runs in {dir}. Tick two to compare them.", list.len())}</p>
                        <p>{move || {
                            let p = picked.get();
                            (p.len() == 2).then(|| view! { <a id="compare-link" href=format!("#runs?compare={},{}", p[0], p[1])>"Compare the two ticked runs →"</a> })
                        }}</p>
                        <div class="table-box"><table class="model-table" id="run-list">
                            <thead><tr><th>""</th><th>"run"</th><th>"date"</th><th>"completed"</th><th>"out tok/s"</th><th>"acceptance length"</th></tr></thead>
                            <tbody>
                                {list.into_iter().map(|r| {
                                    let id = r.id.clone();
                                    let id_for_box = id.clone();
                                    view! {
                                        <tr>
                                            <td><input type="checkbox" on:change=move |ev| {
                                                let on = event_target_checked(&ev);
                                                let id = id_for_box.clone();
                                                set_picked.update(|p| {
                                                    p.retain(|x| *x != id);
                                                    if on { p.push(id); }
                                                    while p.len() > 2 { p.remove(0); }
                                                });
                                            }/></td>
                                            <td><a href=format!("#runs?open={id}")>{id.clone()}</a></td>
                                            <td>{r.date.clone().unwrap_or_else(|| "—".into())}</td>
                                            <td>{cell(r.completed.map(|c| c as f64), 0)}</td>
                                            <td>{cell(r.output_throughput, 1)}</td>
                                            <td>{cell(r.spec_decode_acceptance_length, 3)}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table></div>
                    }.into_any()
                }
            }}
        </section>
    }
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
                Some(Err(e)) => Some(view! { <p class="error">"Cannot open the run: " {e}</p> }),
                _ => None,
            }}
            <p class="status" id="run-status">{move || status_line(&run.get())}</p>
            {move || run.with(whatif_fragment).map(|f| view! { <p><a id="whatif-from-run" href=format!("#{f}")>"What-if with this run's measured acceptance →"</a></p> })}
            <RunPanel run=run/>
        </section>
    }
}

#[component]
fn CompareRuns(a: String, b: String) -> impl IntoView {
    let (ua, ub) = (format!("/api/runs/{a}"), format!("/api/runs/{b}"));
    let ra = LocalResource::new(move || fetch_json::<RunResult>(ua.clone()));
    let rb = LocalResource::new(move || fetch_json::<RunResult>(ub.clone()));
    type Figure = fn(&RunResult) -> Option<f64>;
    let rows: [(&str, Figure, usize); 8] = [
        ("completed requests", |r| r.completed.map(|c| c as f64), 0),
        ("failed requests", |r| r.failed.map(|c| c as f64), 0),
        ("output tokens/s", |r| r.output_throughput, 1),
        ("mean TTFT (ms)", |r| r.mean_ttft_ms, 2),
        ("mean ITL (ms)", |r| r.mean_itl_ms, 2),
        ("mean TPOT (ms)", |r| r.mean_tpot_ms, 2),
        ("acceptance rate (%)", |r| r.spec_decode_acceptance_rate, 2),
        ("acceptance length", |r| r.spec_decode_acceptance_length, 3),
    ];
    view! {
        <section class="page runs">
            <h1>"Compare runs"</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match (ra.get(), rb.get()) {
                (Some(Ok(x)), Some(Ok(y))) => {
                    let arm = |v: &RunResult| if v.spec_decode_acceptance_length.is_some() { "spec-arm" } else { "base-arm" };
                    let (ca, cb) = (arm(&x), arm(&y));
                    view! {
                        <div class="table-box"><table class="model-table compare" id="compare">
                            <thead><tr><th>""</th>
                                <th class=ca>{a.clone()}</th><th class=cb>{b.clone()}</th><th>"second ÷ first"</th></tr></thead>
                            <tbody>
                                {rows.iter().map(|(label, figure, d)| {
                                    let ratio = match (figure(&x), figure(&y)) {
                                        (Some(p), Some(q)) if p != 0.0 => format!("{:.3}", q / p),
                                        _ => "—".into(),
                                    };
                                    view! { <tr><td>{*label}</td><td class=ca>{cell(figure(&x), *d)}</td><td class=cb>{cell(figure(&y), *d)}</td><td>{ratio}</td></tr> }
                                }).collect_view()}
                            </tbody>
                        </table></div>
                    }.into_any()
                }
                (Some(Err(e)), _) | (_, Some(Err(e))) => view! { <p class="error">"Cannot open a run: " {e}</p> }.into_any(),
                _ => view! { <p class="hint">"Loading…"</p> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn SweepView(id: String) -> impl IntoView {
    let url = format!("/api/sweeps/{id}");
    let table = LocalResource::new(move || fetch_json::<SweepTable>(url.clone()));
    let parsed = Signal::derive(move || table.get().and_then(|r| r.ok()));
    view! {
        <section class="page runs">
            <h1>"Sweep " {id.clone()}</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match table.get() {
                Some(Err(e)) => Some(view! { <p class="error">"Cannot open the sweep: " {e}</p> }),
                _ => None,
            }}
            {move || parsed.get().map(|t| view! {
                <div class="chart-box">{chart_canvas::<_, SweepChart>("sweep-chart", "tall-chart", "speclens-sweep".into(), Signal::stored(t))}</div>
            })}
            {move || parsed.get().map(|t| {
                let spread = |v: Option<f64>, s: Option<(f64, f64)>| match (v, s) {
                    (Some(v), Some((lo, hi))) => format!("{v:.1} ({lo:.1}–{hi:.1})"),
                    (v, _) => cell(v, 1),
                };
                view! {
                    <div class="findings" id="sweep-findings">
                        {t.findings().into_iter().map(|line| view! { <p>{line}</p> }).collect_view()}
                    </div>
                    <div class="table-box">
                        <table class="model-table" id="sweep-table">
                            <thead><tr><th>"concurrency"</th><th>"spec output tok/s (repeats' range)"</th><th>"plain output tok/s (repeats' range)"</th><th>"spec ÷ plain"</th><th>"verdict"</th></tr></thead>
                            <tbody>
                                {t.rows.iter().map(|r| {
                                    let (ratio, verdict) = SweepTable::verdict(r);
                                    view! { <tr>
                                        <td>{format!("{:.0}", r.concurrency)}</td>
                                        <td>{spread(r.spec_output_tokens_per_s, r.spec_spread)}</td>
                                        <td>{spread(r.base_output_tokens_per_s, r.base_spread)}</td>
                                        <td>{ratio}</td>
                                        <td>{verdict}</td>
                                    </tr> }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }
            })}
        </section>
    }
}

#[component]
fn AcceptView(id: String) -> impl IntoView {
    let url = format!("/api/accept/{id}");
    let rows = LocalResource::new(move || fetch_json::<AcceptMatrix>(url.clone()));
    view! {
        <section class="page runs">
            <h1>"Acceptance by category " {id.clone()}</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match rows.get() {
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error">"Cannot open: " {e}</p> }.into_any(),
                Some(Ok(v)) => view! {
                    <div class="table-box"><table class="model-table" id="accept-matrix">
                        <thead><tr><th>"category"</th><th>"path"</th><th>"requests"</th><th>"acceptance length"</th><th>"acceptance rate %"</th><th>"per-position rates"</th></tr></thead>
                        <tbody>
                            {v.categories.into_iter().map(|r| {
                                let per_pos: Vec<String> = r.per_position_acceptance_rates.values().map(|x| format!("{x:.3}")).collect();
                                view! { <tr>
                                    <td>{r.category}</td>
                                    <td>{r.path}</td>
                                    <td>{r.requests}</td>
                                    <td>{format!("{:.3}", r.acceptance_length)}</td>
                                    <td>{format!("{:.2}", r.acceptance_rate)}</td>
                                    <td>{per_pos.join(", ")}</td>
                                </tr> }
                            }).collect_view()}
                        </tbody>
                    </table></div>
                }.into_any(),
            }}
        </section>
    }
}
