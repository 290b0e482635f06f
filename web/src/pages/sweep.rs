//! A sweep: its headline, the throughput and step-cost charts, every arm's table and what the
//! console printed.

use leptos::prelude::*;
use speclens_shared::chart::has_step_cost;
use speclens_shared::glossary::Term;
use speclens_shared::sweep::adaptive::{ADAPTIVE_ACCEPTANCE_NOTE, RECOVERY_RULE, SCHEDULE_CHECK_RULE, THRASH_RULE};
use speclens_shared::sweep::arms::ArmSweep;
use speclens_shared::sweep::contexts::{
    ContextSweep, CONTEXT_BREAK_EVEN_DEFINITION, CONTEXT_CROSSING_DEFINITION, CONTEXT_STEP_COST_DEFINITION,
    ENGINE_LINES_NOTE,
};
use speclens_shared::sweep::step_cost::STEP_COST_DEFINITION;
use speclens_shared::sweep::{Axis, PairTable, SweepFile};
use speclens_shared::view::headline::Headline;

use crate::api::fetch_json;
use crate::chart::canvas::chart_canvas;
use crate::components::charts::*;
use crate::components::figures::*;

#[component]
pub fn SweepView(id: String) -> impl IntoView {
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
            {move || parsed.get().and_then(|t| Some((t.contexts.clone()?, t))).map(|(contexts, t)| {
                view! {
                    <div class="findings" id="sweep-contexts">
                        <h3 title=CONTEXT_BREAK_EVEN_DEFINITION tabindex="0">"Along the context: B* per input length, measured and the model's"</h3>
                        <div class="chart-box">{chart_canvas::<_, ContextChart>("sweep-context", "small-chart", "speclens-context".into(), Signal::stored(t.clone()))}</div>
                        <h3 title=CONTEXT_STEP_COST_DEFINITION tabindex="0">"What moved: the acceptance length against the step cost"</h3>
                        <div class="chart-box">{chart_canvas::<_, ContextCostChart>("sweep-context-cost", "small-chart", "speclens-context-cost".into(), Signal::stored(t))}</div>
                        {context_tables(&contexts)}
                    </div>
                }
            })}
            {move || parsed.get().map(|t| {
                let arms = (t.arms.arms.len() > 1).then(|| t.arms.arms.clone());
                let recommendation = t.recommendation.clone();
                let whatif = Headline::of_sweep(&t).map(|h| {
                    let (fragment, b) = h.whatif_link();
                    (fragment, format!(" arm {}: model B* = {b:.1}", h.arm))
                });
                view! {
                    <div class="findings" id="sweep-findings">
                        {t.head().finding_lines().into_iter().map(|line| view! { <p>{line}</p> }).collect_view()}
                        {t.arms.arms.iter().find(|a| !a.adaptive).and_then(|a| a.step_cost_sentence()).map(|line| view! {
                            <p id="sweep-step-cost-sentence" title=STEP_COST_DEFINITION tabindex="0">{line}</p>
                        })}
                    </div>
                    <div class="notices" id="sweep-notices">
                        {t.unsteady_note().map(|line| view! { <p class="hint" id="sweep-unsteady">{line}</p> })}
                        {t.warnings.iter().cloned().chain(t.earlier_notes()).chain(t.arms.tail_regressions()).map(|line| view! { <p class="hint">{line}</p> }).collect_view()}
                    </div>
                    {whatif.map(|(fragment, beside)| view! { <p><a id="whatif-from-sweep" href=format!("#{fragment}")>"What-if with the headline arm's measured acceptance →"</a>
                        <span class="hint" id="whatif-from-sweep-bstar">{beside}</span></p> })}
                    {arms.map(arms_table)}
                    {(!t.arms.adaptive.is_empty()).then(|| view! {
                        <div class="findings" id="sweep-adaptive">
                            {t.arms.adaptive.iter().map(|j| view! { <p class="headline" title=format!("{SCHEDULE_CHECK_RULE}; {THRASH_RULE}; {RECOVERY_RULE}")>{format!("Adaptive arm: {}.", j.summary())}</p> }).collect_view()}
                            <p class="hint">{format!("An adaptive arm's server runs a draft-length schedule: it is judged by throughput and TPOT against the best fixed choice at each level, never picked for a k, and its acceptance length {ADAPTIVE_ACCEPTANCE_NOTE}.")}</p>
                        </div>
                    })}
                    {recommendation.map(|r| view! {
                        <div class="findings" id="sweep-recommendation">
                            <h3>"Recommendation"</h3>
                            <p class="headline">{r.summary()}</p>
                            {r.settings.iter().filter(|s| !s.line.is_empty()).map(|s| view! {
                                <p>{format!("{}: ", s.label())}<code>{s.line.clone()}</code></p>
                                <p class="hint">{format!("From: {}", s.basis)}</p>
                                {s.warnings.iter().map(|w| view! { <p class="hint warning">{format!("Warning: {w}")}</p> }).collect_view()}
                            }).collect_view()}
                        </div>
                    })}
                    {sweep_table(&t)}
                    // The detail the console keeps in sweep-detail.txt, a section each.
                    {t.arms.detail_sections().into_iter().enumerate().map(|(i, (title, text))| view! {
                        <details class="console detail" id=format!("sweep-detail-{i}")>
                            <summary>{title}</summary>
                            <pre>{text}</pre>
                        </details>
                    }).collect_view()}
                    <details class="console" id="sweep-console">
                        <summary>"Everything the sweep wrote to the console and sweep-detail.txt: every arm against plain, the detail above and each arm's model prediction"</summary>
                        <pre>{t.render()}</pre>
                    </details>
                }
            })}
        </section>
    }
}

/// A context sweep's tables: each arm's figures per input length, what moved, and L* per
/// concurrency (the console's lines, from the same computation).
fn context_tables(contexts: &ContextSweep) -> impl IntoView {
    view! {
        {contexts.arm_names().into_iter().map(|arm| view! {
            <div class="table-box">
                <table class="model-table" id=format!("sweep-context-{arm}")>
                    <thead><tr><th>{contexts.axis.tokens_name()}</th>
                        <th title=CONTEXT_BREAK_EVEN_DEFINITION tabindex="0">{format!("{arm}: measured B* (repeats' range)")}</th>
                        {term_th("model B*(L)", Term::ModelBreakEven)}
                        {term_th("acceptance length", Term::AcceptanceLength)}
                        <th title=CONTEXT_STEP_COST_DEFINITION tabindex="0">"step cost (E ÷ speedup, at the highest common level)"</th></tr></thead>
                    <tbody>
                        {contexts.rows(&arm).into_iter().map(|cells| view! {
                            <tr>{cells.into_iter().map(|c| view! { <td>{c}</td> }).collect_view()}</tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            {contexts.what_moved(&arm).into_iter().map(|line| view! {
                <p class="headline" title=CONTEXT_STEP_COST_DEFINITION tabindex="0">{line}</p>
            }).collect_view()}
        }).collect_view()}
        <div id="sweep-context-crossings">
            {contexts.crossing_lines().into_iter().map(|line| view! {
                <p title=CONTEXT_CROSSING_DEFINITION tabindex="0">{line}</p>
            }).collect_view()}
        </div>
        {contexts.partial_line().map(|line| view! { <p class="hint warning">{line}</p> })}
        <p class="hint">{ENGINE_LINES_NOTE}</p>
    }
}

/// The head table of a sweep: each level's two arms (with the repeats' range), their ratio and
/// the verdict.
fn sweep_table(t: &SweepFile) -> impl IntoView {
    let spread = |v: Option<f64>, s: Option<(f64, f64)>| match (v, s) {
        (Some(v), Some((lo, hi))) => format!("{v:.1} ({lo:.1}–{hi:.1})"),
        (v, _) => cell(v, 1),
    };
    view! {
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
    }
}

/// Every arm of a sweep against plain: its k, acceptance length, crossing and ratio by level.
pub fn arms_table(arms: Vec<ArmSweep>) -> impl IntoView {
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
