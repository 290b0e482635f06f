//! An accept folder: acceptance per category, its chart and the workload's warnings.

use leptos::prelude::*;
use speclens_shared::glossary::Term;
use speclens_shared::results::accept::{heat_colour, heat_text_colour, AcceptMatrix, PositionMatrix};
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
                    {PositionMatrix::of(&v.categories).map(heat_map)}
                    <div id="accept-notes">
                        {notes.into_iter().map(|n| view! { <p class="notice">{format!("Note: {n}")}</p> }).collect_view()}
                    </div>
                }.into_any()
                }
            }}
        </section>
    }
}

/// The category × position matrix as a heat map: a row per category and the pooled row, a
/// column per draft position, each cell coloured by its rate (white 0 to deep blue 1) with its
/// value written in; hovering or focusing a cell reads it out in full beneath.
fn heat_map(matrix: PositionMatrix) -> impl IntoView {
    let readout = RwSignal::new(String::from("Point at a cell for its category, position and rate."));
    let header = matrix
        .positions
        .iter()
        .map(|p| view! { <th>{format!("position {p}")}</th> })
        .collect_view();
    let rows = matrix
        .all_rows()
        .map(|row| {
            let cells = matrix
                .positions
                .iter()
                .zip(&row.rates)
                .map(|(p, rate)| match rate {
                    Some(r) => {
                        let style = format!("background: {}; color: {}", heat_colour(*r), heat_text_colour(*r));
                        let said = format!(
                            "{}, position {p}: {r:.3} (accepted at position {p} ÷ {} verify steps)",
                            row.category, row.num_spec_steps
                        );
                        let (hover, focus, title) = (said.clone(), said.clone(), said);
                        view! {
                            <td class="heat" style=style title=title tabindex="0"
                                on:mouseenter=move |_| readout.set(hover.clone())
                                on:focus=move |_| readout.set(focus.clone())>{format!("{r:.3}")}</td>
                        }
                        .into_any()
                    }
                    None => {
                        view! { <td class="heat none" title="this row drafts no such position">"—"</td> }.into_any()
                    }
                })
                .collect_view();
            view! { <tr><th class="heat-row">{row.category.clone()}</th><td>{row.requests}</td>{cells}</tr> }
        })
        .collect_view();
    view! {
        <div class="table-box"><h3 title=Term::DraftPosition.definition() tabindex="0">"Acceptance rate by category and draft position"</h3>
            <table class="model-table heat-map" id="accept-heatmap">
                <thead><tr><th>"category"</th><th>"requests"</th>{header}</tr></thead>
                <tbody>{rows}</tbody>
            </table>
            <p class="hint" id="accept-heatmap-readout" aria-live="polite">{move || readout.get()}</p>
        </div>
    }
}
