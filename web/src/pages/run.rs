//! One saved run opened from the history: its panel, the TTFT split, the tail and its files.

use leptos::prelude::*;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::run::record::TTFT_SPLIT_DEFINITION;
use speclens_shared::run::tail::TAIL_DEFINITION;
use speclens_shared::view::run::{run_view_from_result, RunView};

use crate::api::fetch_json;
use crate::chart::canvas::chart_canvas;
use crate::components::charts::*;
use crate::components::figures::*;
use crate::components::run_panel::*;

#[component]
pub fn OpenRun(id: String) -> impl IntoView {
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
                    {move || { let sweep = crate::api::sweep_model(); run.with(|r| whatif_link(r, sweep.as_ref())) }}
                    <RunPanel run=run/>
                }.into_any(),
            }}
        </section>
    }
}
