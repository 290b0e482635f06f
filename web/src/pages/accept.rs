//! An accept folder: acceptance per category, its chart and the workload's warnings.

use leptos::prelude::*;
use speclens_shared::glossary::Term;
use speclens_shared::results::accept::AcceptMatrix;
use speclens_shared::results::warnings::category_warnings;

use crate::api::fetch_json;
use crate::chart::canvas::chart_canvas;
use crate::components::charts::*;
use crate::components::figures::*;

#[component]
pub fn AcceptView(id: String) -> impl IntoView {
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
