//! The run history: the runs under the collector's results folder (`/api/runs`), one run opened
//! in the live page's views (`#runs?open=<id>`), and two runs side by side
//! (`#runs?compare=<a>,<b>`; the run without speculation grey, the speculative one coloured).

use gloo_net::http::Request;
use leptos::prelude::*;
use serde_json::Value;
use speclens_shared::protocol::{run_view_from_result, RunView};

use speclens_shared::chart::draw_sweep_chart;
use speclens_shared::sweep::SweepTable;

use crate::canvas::draw_on;
use crate::live_page::{status_line, whatif_fragment, RunPanel};

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

/// The collector's answer at `url`, or the report's copy of it in a static report.
async fn fetch_json(url: String) -> Result<Value, String> {
    if let Some(answer) = crate::report::response(&url) {
        return answer;
    }
    let response = Request::get(&url).send().await.map_err(|e| e.to_string())?;
    if !response.ok() {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    response.json::<Value>().await.map_err(|e| e.to_string())
}

fn cell(v: &Value, key: &str, decimals: usize) -> String {
    v.get(key)
        .and_then(Value::as_f64)
        .map_or_else(|| "—".into(), |x| format!("{x:.decimals$}"))
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
    let runs = LocalResource::new(|| fetch_json("/api/runs".into()));
    let (picked, set_picked) = signal(Vec::<String>::new());
    view! {
        <section class="page runs">
            <h1>"Runs"</h1>
            {move || match runs.get() {
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error">"Cannot list runs: " {e}</p> }.into_any(),
                Some(Ok(v)) => {
                    let list = v["runs"].as_array().cloned().unwrap_or_default();
                    let dir = v["results_dir"].as_str().unwrap_or("").to_string();
                    let links = |key: &str, kind: &'static str| -> Vec<String> {
                        v[key].as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect::<Vec<String>>()).unwrap_or_default()
                            .into_iter().map(|id| format!("{kind}={id}")).collect()
                    };
                    let (sweeps, accepts) = (links("sweeps", "sweep"), links("accepts", "accept"));
                    view! {
                        <p id="sweep-links">{sweeps.into_iter().map(|q| view! { <a class="pill" href=format!("#runs?{q}")>{q.replace('=', ": ")}</a> }).collect_view()}
                            {accepts.into_iter().map(|q| view! { <a class="pill" href=format!("#runs?{q}")>{q.replace('=', ": ")}</a> }).collect_view()}</p>
                        <p class="hint">{format!("{} runs in {dir}. Tick two to compare them.", list.len())}</p>
                        <p>{move || {
                            let p = picked.get();
                            (p.len() == 2).then(|| view! { <a id="compare-link" href=format!("#runs?compare={},{}", p[0], p[1])>"Compare the two ticked runs →"</a> })
                        }}</p>
                        <table class="model-table" id="run-list">
                            <thead><tr><th>""</th><th>"run"</th><th>"date"</th><th>"completed"</th><th>"out tok/s"</th><th>"acceptance length"</th></tr></thead>
                            <tbody>
                                {list.into_iter().map(|r| {
                                    let id = r["id"].as_str().unwrap_or_default().to_string();
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
                                            <td>{r["date"].as_str().unwrap_or("—").to_string()}</td>
                                            <td>{cell(&r, "completed", 0)}</td>
                                            <td>{cell(&r, "output_throughput", 1)}</td>
                                            <td>{cell(&r, "spec_decode_acceptance_length", 3)}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any()
                }
            }}
        </section>
    }
}

#[component]
fn OpenRun(id: String) -> impl IntoView {
    let url = format!("/api/runs/{id}");
    let result = LocalResource::new(move || fetch_json(url.clone()));
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
    let ra = LocalResource::new(move || fetch_json(ua.clone()));
    let rb = LocalResource::new(move || fetch_json(ub.clone()));
    let rows: [(&str, &str, usize); 8] = [
        ("completed requests", "completed", 0),
        ("failed requests", "failed", 0),
        ("output tokens/s", "output_throughput", 1),
        ("mean TTFT (ms)", "mean_ttft_ms", 2),
        ("mean ITL (ms)", "mean_itl_ms", 2),
        ("mean TPOT (ms)", "mean_tpot_ms", 2),
        ("acceptance rate (%)", "spec_decode_acceptance_rate", 2),
        ("acceptance length", "spec_decode_acceptance_length", 3),
    ];
    view! {
        <section class="page runs">
            <h1>"Compare runs"</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match (ra.get(), rb.get()) {
                (Some(Ok(x)), Some(Ok(y))) => {
                    let arm = |v: &Value| if v.get("spec_decode_acceptance_length").is_some() { "spec-arm" } else { "base-arm" };
                    let (ca, cb) = (arm(&x), arm(&y));
                    view! {
                        <table class="model-table compare" id="compare">
                            <thead><tr><th>""</th>
                                <th class=ca>{a.clone()}</th><th class=cb>{b.clone()}</th><th>"second ÷ first"</th></tr></thead>
                            <tbody>
                                {rows.iter().map(|(label, key, d)| {
                                    let ratio = match (x.get(*key).and_then(Value::as_f64), y.get(*key).and_then(Value::as_f64)) {
                                        (Some(p), Some(q)) if p != 0.0 => format!("{:.3}", q / p),
                                        _ => "—".into(),
                                    };
                                    view! { <tr><td>{*label}</td><td class=ca>{cell(&x, key, *d)}</td><td class=cb>{cell(&y, key, *d)}</td><td>{ratio}</td></tr> }
                                }).collect_view()}
                            </tbody>
                        </table>
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
    let table = LocalResource::new(move || fetch_json(url.clone()));
    let parsed = Signal::derive(move || {
        table
            .get()
            .and_then(|r| r.ok())
            .and_then(|v| serde_json::from_value::<SweepTable>(v).ok())
    });
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    Effect::new(move |_| {
        let (Some(c), Some(t)) = (canvas.get(), parsed.get()) else {
            return;
        };
        let result = draw_on(&c, |root, scale| draw_sweep_chart(root, &t, scale));
        let _ = c.set_attribute("data-draws", "1");
        let _ = c.set_attribute("data-error", &result.err().unwrap_or_default());
    });
    view! {
        <section class="page runs">
            <h1>"Sweep " {id.clone()}</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match table.get() {
                Some(Err(e)) => Some(view! { <p class="error">"Cannot open the sweep: " {e}</p> }),
                _ => None,
            }}
            <div class="chart-box"><canvas id="sweep-chart" class="tall-chart" node_ref=canvas></canvas></div>
            <pre id="sweep-table">{move || parsed.get().map(|t| t.render()).unwrap_or_default()}</pre>
        </section>
    }
}

#[component]
fn AcceptView(id: String) -> impl IntoView {
    let url = format!("/api/accept/{id}");
    let rows = LocalResource::new(move || fetch_json(url.clone()));
    view! {
        <section class="page runs">
            <h1>"Acceptance by category " {id.clone()}</h1>
            <p><a href="#runs">"← all runs"</a></p>
            {move || match rows.get() {
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error">"Cannot open: " {e}</p> }.into_any(),
                Some(Ok(v)) => view! {
                    <table class="model-table" id="accept-matrix">
                        <thead><tr><th>"category"</th><th>"path"</th><th>"requests"</th><th>"acceptance length"</th><th>"acceptance rate %"</th><th>"per-position rates"</th></tr></thead>
                        <tbody>
                            {v["categories"].as_array().cloned().unwrap_or_default().into_iter().map(|r| {
                                let per_pos: Vec<String> = r["per_position_acceptance_rates"].as_object()
                                    .map(|m| m.values().filter_map(Value::as_f64).map(|x| format!("{x:.3}")).collect()).unwrap_or_default();
                                view! { <tr>
                                    <td>{r["category"].as_str().unwrap_or("").to_string()}</td>
                                    <td>{r["path"].as_str().unwrap_or("").to_string()}</td>
                                    <td>{cell(&r, "requests", 0)}</td>
                                    <td>{cell(&r, "acceptance_length", 3)}</td>
                                    <td>{cell(&r, "acceptance_rate", 2)}</td>
                                    <td>{per_pos.join(", ")}</td>
                                </tr> }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any(),
            }}
        </section>
    }
}
