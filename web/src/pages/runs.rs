//! The run history: the runs under the collector's results folder (`/api/runs`), one run opened
//! in the live page's views (`#runs?open=<id>`), and two runs side by side
//! (`#runs?compare=<a>,<b>`; the run without speculation grey, the speculative one coloured).

use leptos::prelude::*;
use speclens_shared::glossary::Term;
use speclens_shared::results::run_list::{RunList, RunListEntry};

use crate::api::fetch_json;
use crate::components::figures::*;
use crate::pages::accept::AcceptView;
use crate::pages::compare::CompareRuns;
use crate::pages::run::OpenRun;
use crate::pages::sweep::SweepView;

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
