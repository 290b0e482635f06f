//! The what-if page: model inputs (α or a measured E, k, proposer/c, GPU/ridge), the model table
//! (α × k: E, S at batch 1, S asymptotic, break-even B), the S(B) chart, and the best k from
//! measured per-position rates. Every change redraws at once and is written to the URL fragment.

use leptos::ev;
use leptos::html::Input;
use leptos::prelude::*;
use speclens_shared::chart::{draw_speedup_chart, hover, speedup_chart, XFrame};
use speclens_shared::model::speedup::{Proposer, GPU_PRESETS, NOTHING_MEASURED, UNCHARGED_COSTS};
use speclens_shared::model::whatif::{break_even_text, parse_input, parse_number_list, Acceptance, Gpu, WhatIf, MAX_K};
use speclens_shared::Error;
use wasm_bindgen::JsValue;

use crate::chart::canvas::{chart_canvas, Draw, Root};

/// S(B) for each k of the what-if state.
struct SpeedupCurves;

impl Draw<WhatIf> for SpeedupCurves {
    fn draw(w: &WhatIf, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_speedup_chart(root, &speedup_chart(w), scale)
    }

    fn hover(w: &WhatIf, batch: f64) -> Option<String> {
        hover::speedup_at(&speedup_chart(w), batch)
    }
}

fn current_fragment() -> String {
    window().location().hash().unwrap_or_default()
}

fn write_fragment(fragment: &str) {
    let url = format!("#{fragment}");
    if current_fragment() != url {
        if let Ok(history) = window().history() {
            let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
        }
    }
}

/// Keep an input showing the state's value, but never write to it while the user is typing in
/// it: a write moves the caret and would turn "0.8" into "80" mid-typing.
fn bind_value(input: NodeRef<Input>, value: impl Fn() -> String + 'static) {
    Effect::new(move |_| {
        let text = value();
        let Some(el) = input.get() else { return };
        let focused = document().active_element().is_some_and(|a| a.is_same_node(Some(&el)));
        if !focused && el.value() != text {
            el.set_value(&text);
        }
    });
}

fn fmt_speedup(s: f64) -> String {
    format!("{s:.2}×")
}

/// The notice under an input whose typed value breaks its rule (the same words as a bad link
/// value gets), or nothing.
fn input_notice(id: &'static str, notice: ReadSignal<Option<String>>) -> impl IntoView {
    move || {
        notice
            .get()
            .map(|text| view! { <p class="notice input-notice" role="alert" id=format!("notice-{id}")>{text}</p> })
    }
}

/// What a typed value means: `Ok(Some(v))` a value to apply, `Ok(None)` nothing yet (the field
/// is empty), `Err` the notice to show (the value is ignored and the model keeps `kept`).
fn typed(key: &str, label: &str, text: &str, kept: &str) -> Result<Option<f64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    parse_input(key, text)
        .map(Some)
        .map_err(|rule| format!("Ignored {label} = {text}: {rule}. The model keeps {kept}."))
}

/// A labelled number input bound to one field of the state (`id` is its key in the URL, so a
/// typed value obeys the same rule as a linked one, and a broken rule gets the same notice).
fn number_input(
    id: &'static str,
    label: &'static str,
    step: &'static str,
    value: impl Fn() -> String + Copy + 'static,
    disabled: impl Fn() -> bool + Send + Sync + 'static,
    on_value: impl Fn(f64) + 'static,
) -> impl IntoView {
    let input = NodeRef::<Input>::new();
    let (notice, set_notice) = signal(None::<String>);
    // The value when the user started typing: a broken rule restores it (typing "40" passes
    // through "4", which must not stay in force).
    let (before, set_before) = signal(None::<String>);
    bind_value(input, value);
    view! {
        <label class="field" for=id>
            <span>{label}</span>
            <input
                id=id
                node_ref=input
                type="number"
                step=step
                prop:disabled=disabled
                on:focus=move |_| set_before.set(Some(value()))
                on:input=move |ev| {
                    // The input's own text (`value` is empty while the text is not a number).
                    let text = input.get_untracked().map(|el| el.value()).unwrap_or_else(|| event_target_value(&ev));
                    let kept = before.get_untracked().unwrap_or_else(value);
                    match typed(id, label, &text, &kept) {
                        Ok(v) => {
                            set_notice.set(None);
                            if let Some(v) = v {
                                on_value(v);
                            }
                        }
                        Err(message) => {
                            set_notice.set(Some(message));
                            if let Ok(v) = parse_input(id, &kept) {
                                on_value(v);
                            }
                        }
                    }
                }
            />
            {input_notice(id, notice)}
        </label>
    }
}

/// A labelled text input holding a comma-separated list.
fn list_input(
    id: &'static str,
    label: &'static str,
    placeholder: &'static str,
    value: impl Fn() -> String + 'static,
    on_list: impl Fn(Vec<f64>) + 'static,
) -> impl IntoView {
    let input = NodeRef::<Input>::new();
    bind_value(input, value);
    view! {
        <label class="field wide" for=id>
            <span>{label}</span>
            <input
                id=id
                node_ref=input
                type="text"
                placeholder=placeholder
                on:change=move |ev| {
                    if let Some(list) = parse_number_list(&event_target_value(&ev)) {
                        on_list(list);
                    }
                }
            />
        </label>
    }
}

fn join(values: &[f64]) -> String {
    values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

#[component]
pub fn WhatIfPage() -> impl IntoView {
    let (initial, load_errors) = WhatIf::from_fragment(&current_fragment());
    let (state, set_state) = signal(initial);

    // URL ← state.
    Effect::new(move |_| state.with(|w| write_fragment(&w.to_fragment())));
    // State ← URL, when a user edits the fragment or follows a link.
    let hash_listener = window_event_listener(ev::hashchange, move |_| {
        let (next, _) = WhatIf::from_fragment(&current_fragment());
        if state.with_untracked(|w| *w != next) {
            set_state.set(next);
        }
    });
    on_cleanup(move || hash_listener.remove());
    // The chart's size in points, for the web benchmark (the chart itself follows the state).
    Effect::new(move |_| {
        let points: usize = state.with(|w| speedup_chart(w).curves.iter().map(|c| c.points.len()).sum());
        if let Some(canvas) = document().get_element_by_id("speedup-chart") {
            let _ = canvas.set_attribute("data-points", &points.to_string());
        }
    });

    let measured_e = move || matches!(state.with(|w| w.acceptance), Acceptance::MeasuredE(_));

    view! {
        <section class="page whatif">
            <h1>"What-if: the speedup model"</h1>
            <p class="lede">
                "Expected tokens per verify step E(α, k), speedup S(B) at batch size B and the break-even batch B*, "
                "computed in your browser before anything is measured. Feed it a measured E to see what your runs imply."
            </p>
            {(!load_errors.is_empty()).then(|| view! {
                <div class="notice" role="alert" id="link-notices">
                    <strong>"Some link values were ignored: "</strong>
                    {load_errors.join("; ")}
                </div>
            })}
            <WhatIfInputs state=state set_state=set_state/>

            <div class="problems">
                {move || state.with(WhatIf::problems).into_iter().map(|p| view! { <p class="warning">{p}</p> }).collect_view()}
            </div>

            <div class="tiles">
                {move || {
                    let row = state.with(WhatIf::selected_row);
                    let tiles = vec![
                        ("tile-e", "E (tokens / step)", format!("{:.3}", row.expected_tokens)),
                        ("tile-alpha", if measured_e() { "implied α" } else { "α" }, format!("{:.4}", row.alpha)),
                        ("tile-s1", "S at batch 1", fmt_speedup(row.speedup_batch1)),
                        ("tile-sinf", "S asymptotic", fmt_speedup(row.speedup_asymptotic)),
                        ("tile-bstar", "break-even B*", break_even_text(&row)),
                    ];
                    tiles.into_iter().map(|(id, label, value)| view! {
                        <div class="tile" id=id><div class="tile-label">{label}</div><div class="tile-value">{value}</div></div>
                    }).collect_view()
                }}
            </div>

            <div class="chart-box">
                {chart_canvas::<_, SpeedupCurves>("speedup-chart", "speedup", "speclens-speedup-model".into(), state.into())}
            </div>

            <ModelTable state=state set_state=set_state/>

            <BestK state=state set_state=set_state/>

            <footer class="disclaimer">
                <p><strong>{NOTHING_MEASURED}</strong>" Costs the model does not charge, each of which moves the real crossing to smaller batches:"</p>
                <ul>{UNCHARGED_COSTS.iter().map(|c| view! { <li>{*c}</li> }).collect_view()}</ul>
            </footer>
        </section>
    }
}

/// The model's inputs: acceptance (α or a measured E), k, the measured draft length, and the
/// costs (proposer, GPU ridge, chart range).
#[component]
fn WhatIfInputs(state: ReadSignal<WhatIf>, set_state: WriteSignal<WhatIf>) -> impl IntoView {
    let set = move |f: Box<dyn Fn(&mut WhatIf)>| set_state.update(|w| f(w));
    let measured_e = move || matches!(state.with(|w| w.acceptance), Acceptance::MeasuredE(_));
    let e_input = NodeRef::<Input>::new();
    let (e_notice, set_e_notice) = signal(None::<String>);
    let (d_notice, set_d_notice) = signal(None::<String>);
    bind_value(e_input, move || match state.with(|w| w.acceptance) {
        Acceptance::MeasuredE(e) => e.to_string(),
        Acceptance::Alpha(_) => String::new(),
    });
    let alpha_text = move || {
        format!("{:.4}", state.with(WhatIf::alpha))
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    };
    view! {
        <>
            <form class="inputs" on:submit=|ev| ev.prevent_default()>
                <fieldset>
                    <legend>"Acceptance"</legend>
                    {number_input("alpha", "α (per-token acceptance)", "0.01",
                        alpha_text, measured_e,
                        move |a| set(Box::new(move |w| w.acceptance = Acceptance::Alpha(a))))}
                    <input id="alpha-range" type="range" min="0" max="1" step="0.01" aria-label="α slider"
                        prop:value=move || state.with(WhatIf::alpha).to_string()
                        prop:disabled=measured_e
                        on:input=move |ev| {
                            if let Ok(a) = event_target_value(&ev).parse::<f64>() {
                                set_state.update(|w| w.acceptance = Acceptance::Alpha(a));
                            }
                        }
                    />
                    <label class="field" for="e">
                        <span>"or a measured E (acceptance length)"</span>
                        <input id="e" node_ref=e_input type="number" step="0.01" min="1" placeholder="e.g. 3.2"
                            on:input=move |_| {
                                let text = e_input.get_untracked().map(|el| el.value()).unwrap_or_default();
                                match typed("e", "E", &text, "the previous acceptance") {
                                    Ok(Some(e)) => {
                                        set_e_notice.set(None);
                                        set_state.update(|w| w.acceptance = Acceptance::MeasuredE(e));
                                    }
                                    Ok(None) => {
                                        set_e_notice.set(None);
                                        let alpha = state.with_untracked(WhatIf::alpha);
                                        set_state.update(|w| w.acceptance = Acceptance::Alpha(alpha));
                                    }
                                    Err(message) => set_e_notice.set(Some(message)),
                                }
                            }
                        />
                        {input_notice("e", e_notice)}
                    </label>
                    {number_input("k", "k (draft tokens per step)", "1",
                        move || state.with(|w| w.k).to_string(), || false,
                        move |k| set(Box::new(move |w| w.k = k as u32)))}
                    <label class="field" for="draft-tokens">
                        <span>"draft tokens per draft (measured; empty: k)"</span>
                        <input id="draft-tokens" type="number" step="0.01" min="0" placeholder="k"
                            prop:value=move || state.with(|w| w.draft_tokens.map_or(String::new(), |d| format!("{d}")))
                            on:change=move |ev| {
                                let kept = state.with_untracked(|w| w.draft_tokens.map_or("full k-token drafts".to_string(), |d| d.to_string()));
                                match typed("d", "draft tokens per draft", &event_target_value(&ev), &kept) {
                                    Ok(d) => {
                                        set_d_notice.set(None);
                                        set_state.update(|w| w.draft_tokens = d);
                                    }
                                    Err(message) => set_d_notice.set(Some(message)),
                                }
                            }
                        />
                        {input_notice("draft-tokens", d_notice)}
                    </label>
                </fieldset>
                <CostInputs state=state set_state=set_state/>
            </form>
        </>
    }
}

/// The model table over the chosen α rows and k columns, the selected cell highlighted.
#[component]
fn ModelTable(state: ReadSignal<WhatIf>, set_state: WriteSignal<WhatIf>) -> impl IntoView {
    view! {
        <>
            <h2>"Model table"</h2>
            <div class="inputs row">
                {list_input("alphas", "α rows", "0.4, 0.6, 0.8",
                    move || state.with(|w| join(&w.table_alphas)),
                    move |list| {
                        let list: Vec<f64> = list.into_iter().filter(|a| (0.0..=1.0).contains(a)).collect();
                        if !list.is_empty() { set_state.update(|w| w.table_alphas = list) }
                    })}
                {list_input("ks", "k columns", "1, 2, 3, 4, 5",
                    move || state.with(|w| w.table_ks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
                    move |list| {
                        let ks: Vec<u32> = list.into_iter().filter(|k| k.fract() == 0.0 && *k >= 1.0 && *k <= f64::from(MAX_K)).map(|k| k as u32).collect();
                        if !ks.is_empty() { set_state.update(|w| w.table_ks = ks) }
                    })}
            </div>
            {move || state.with(|w| w.draft_tokens.map(|d| view! {
                <p class="hint" id="draft-tokens-note">{format!(
                    "The tiles and the thick curve charge {d:.2} draft tokens per draft, as measured, at k = {}; the table and the other curves assume full k-token drafts.",
                    w.k
                )}</p>
            }))}
            <div class="table-box"><table class="model-table" id="model-table">
                <thead><tr><th>"α"</th><th>"k"</th><th>"E"</th><th>"S(1)"</th><th>"S(∞)"</th><th>"break-even B*"</th></tr></thead>
                <tbody>
                    {move || {
                        let (rows, selected) = state.with(|w| (w.table(), (w.alpha(), w.k)));
                        rows.into_iter().map(|r| {
                            let is_selected = (r.alpha - selected.0).abs() < 1e-9 && r.k == selected.1;
                            view! {
                                <tr class:selected=is_selected>
                                    <td>{format!("{:.4}", r.alpha)}</td>
                                    <td>{r.k}</td>
                                    <td>{format!("{:.3}", r.expected_tokens)}</td>
                                    <td>{fmt_speedup(r.speedup_batch1)}</td>
                                    <td>{fmt_speedup(r.speedup_asymptotic)}</td>
                                    <td>{break_even_text(&r)}</td>
                                </tr>
                            }
                        }).collect_view()
                    }}
                </tbody>
            </table></div>
        </>
    }
}

/// The best k from measured per-position rates at a batch size.
#[component]
fn BestK(state: ReadSignal<WhatIf>, set_state: WriteSignal<WhatIf>) -> impl IntoView {
    let set = move |f: Box<dyn Fn(&mut WhatIf)>| set_state.update(|w| f(w));
    view! {
        <>
            <h2>"Best k from measured per-position rates"</h2>
            <p class="hint">
                "Real acceptance decays faster by position than the geometric model assumes, so the best k is usually smaller than the table suggests. "
                "Enter unconditional rates by draft position (1..k), as vLLM reports them."
            </p>
            <div class="inputs row">
                {list_input("rates", "per-position rates", "0.8, 0.6, 0.45, 0.3",
                    move || state.with(|w| join(&w.position_rates)),
                    move |list| {
                        let list: Vec<f64> = list.into_iter().filter(|p| (0.0..=1.0).contains(p)).take(MAX_K as usize).collect();
                        set_state.update(|w| w.position_rates = list)
                    })}
                {number_input("batch", "at batch size", "1",
                    move || state.with(|w| w.batch).to_string(), || false,
                    move |b| set(Box::new(move |w| w.batch = b as u32)))}
            </div>
            <div id="best-k">
                {move || state.with(|w| w.best_k().map(|best| {
                    let choices = speclens_shared::model::speedup::per_position_choices(&w.position_rates, w.costs(), f64::from(w.batch));
                    view! {
                        <p class="best">{format!("Best k at batch {}: k = {} (E {:.3}, S {})", w.batch, best.k, best.expected_tokens, fmt_speedup(best.speedup))}</p>
                        <div class="table-box"><table class="model-table">
                            <thead><tr><th>"k"</th><th>"E from measured rates"</th><th>{format!("S({})", w.batch)}</th></tr></thead>
                            <tbody>
                                {choices.into_iter().map(|c| view! {
                                    <tr class:selected=c.k == best.k><td>{c.k}</td><td>{format!("{:.3}", c.expected_tokens)}</td><td>{fmt_speedup(c.speedup)}</td></tr>
                                }).collect_view()}
                            </tbody>
                        </table></div>
                    }
                }))}
            </div>
        </>
    }
}

/// The costs: proposer (draft cost c), GPU ridge, and how far the chart reaches.
#[component]
fn CostInputs(state: ReadSignal<WhatIf>, set_state: WriteSignal<WhatIf>) -> impl IntoView {
    let set = move |f: Box<dyn Fn(&mut WhatIf)>| set_state.update(|w| f(w));
    view! {
        <fieldset>
            <legend>"Costs"</legend>
            <label class="field" for="proposer">
                <span>"proposer"</span>
                <select id="proposer"
                    prop:value=move || state.with(|w| w.proposer.key()).to_string()
                    on:change=move |ev| {
                        let key = event_target_value(&ev);
                        set_state.update(|w| w.proposer = match key.as_str() {
                            "1b-draft" => Proposer::Drafter1b,
                            "custom" => Proposer::Custom(w.proposer.draft_cost()),
                            _ => Proposer::Ngram,
                        });
                    }>
                    <option value="ngram">"n-gram (c = 0)"</option>
                    <option value="1b-draft">"1B drafter for an 8B target (c = 0.165)"</option>
                    <option value="custom">"custom c"</option>
                </select>
            </label>
            {number_input("c", "draft cost c (draft step ÷ target step)", "0.005",
                move || state.with(|w| w.proposer.draft_cost()).to_string(),
                move || !matches!(state.with(|w| w.proposer), Proposer::Custom(_)),
                move |c| set(Box::new(move |w| w.proposer = Proposer::Custom(c))))}
            <label class="field" for="gpu">
                <span>"GPU (roofline ridge)"</span>
                <select id="gpu"
                    prop:value=move || match state.with(|w| w.gpu) { Gpu::Preset(k) => k.to_string(), Gpu::Ridge(_) => "custom".into() }
                    on:change=move |ev| {
                        let key = event_target_value(&ev);
                        set_state.update(|w| w.gpu = match GPU_PRESETS.iter().find(|g| g.key == key) {
                            Some(g) => Gpu::Preset(g.key),
                            None => Gpu::Ridge(w.gpu.ridge_tokens()),
                        });
                    }>
                    {GPU_PRESETS.iter().map(|g| view! {
                        <option value=g.key>{format!("{} — T* = {}", g.name, g.ridge_tokens)}</option>
                    }).collect_view()}
                    <option value="custom">"custom ridge"</option>
                </select>
            </label>
            {number_input("ridge", "ridge T* (token positions)", "1",
                move || state.with(|w| w.gpu.ridge_tokens()).to_string(),
                move || !matches!(state.with(|w| w.gpu), Gpu::Ridge(_)),
                move |t| set(Box::new(move |w| w.gpu = Gpu::Ridge(t))))}
            {number_input("bmax", "chart up to batch", "1",
                move || state.with(|w| w.batch_max).to_string(), || false,
                move |b| set(Box::new(move |w| w.batch_max = b as u32)))}
            {number_input("ctx", "context (tokens each sequence holds; 0: none)", "256",
                move || state.with(|w| w.context_tokens).to_string(), || false,
                move |l| set(Box::new(move |w| w.context_tokens = l)))}
        </fieldset>
    }
}
