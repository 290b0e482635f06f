//! Small pieces every page uses: a figure formatted, a latency row, a table heading with its
//! definition on hover, a run's status line and its what-if link, a view's title.

use leptos::prelude::*;
use speclens_shared::glossary::Term;
use speclens_shared::run::record::LatencyStats;
use speclens_shared::view::headline::{run_whatif_link, Headline};
use speclens_shared::view::run::{RunStatus, RunView};

pub fn fmt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "No traffic".to_string(), |x| format!("{x:.decimals$}"))
}

/// One latency's mean, median and p99, its name defined on hover (the table's rows name the
/// figure without the unit: the header says milliseconds).
pub fn latency_row(term: Term, stats: Option<LatencyStats>) -> impl IntoView {
    let cells = match stats {
        Some(s) => [s.mean, s.median, s.percentiles.get("99").copied().unwrap_or(f64::NAN)].map(|v| format!("{v:.2}")),
        None => [(); 3].map(|_| "—".to_string()),
    };
    let name = term.name().trim_end_matches(" (ms)").trim_end_matches(" latency");
    view! { <tr><td title=term.definition() tabindex="0">{name}</td><td>{cells[0].clone()}</td><td>{cells[1].clone()}</td><td>{cells[2].clone()}</td></tr> }
}

/// The first letter in capitals (a tile's label from the glossary's name).
pub fn capitalised(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

/// The link to the what-if page with the model B* it opens on beside it: the sweep's headline
/// when the dashboard holds a sweep (its measured acceptance, ridge and draft cost: the one
/// model B* every page shows), else this run's measured acceptance on the page's defaults
/// (`shared::headline::run_whatif_link`).
pub fn whatif_link(run: &RunView, sweep: Option<&Headline>) -> Option<AnyView> {
    let (fragment, label, beside) = match sweep {
        Some(h) => {
            let (fragment, b) = h.whatif_link();
            let c = &h.prediction.costs;
            (
                fragment,
                format!("What-if with the sweep's measured acceptance (arm {}) →", h.arm),
                format!(
                    " model B* = {b:.1} (the sweep's: ridge T* = {}, draft cost c = {})",
                    c.ridge_tokens, c.draft_cost
                ),
            )
        }
        None => {
            let (fragment, b) = run_whatif_link(run)?;
            (
                fragment,
                "What-if with this run's measured acceptance →".to_string(),
                format!(" model B* = {b:.1} (an H100's ridge, drafts free: change them there)"),
            )
        }
    };
    Some(
        view! { <p><a id="whatif-from-run" href=format!("#{fragment}")>{label}</a>
        <span class="hint" id="whatif-from-run-bstar">{beside}</span></p> }
        .into_any(),
    )
}

/// ` · label model · status · counts · elapsed`.
pub fn status_line(r: &RunView) -> String {
    let status = match r.status {
        RunStatus::Idle => "no run yet",
        RunStatus::Running => "running",
        RunStatus::Finished => "finished",
        RunStatus::Partial => "stopped early (partial)",
    };
    let total = r.progress.total.map_or(String::new(), |t| format!(" of {t}"));
    format!(
        " · {} {} · {status} · {} completed, {} failed{total} · {:.1} s",
        r.label, r.model, r.progress.completed, r.progress.failed, r.progress.elapsed_s
    )
}

/// A column header whose figure the glossary defines (on hover and focus).
pub fn term_th(label: &'static str, term: Term) -> impl IntoView {
    view! { <th title=term.definition() tabindex="0">{label}</th> }
}

pub fn cell(v: Option<impl Into<f64>>, decimals: usize) -> String {
    v.map_or_else(|| "—".into(), |x| format!("{:.decimals$}", x.into()))
}

/// A view's title: its kind, then the folder's name unless that name only repeats the kind (the
/// demo's `sweep` and `accept` folders would read "Sweep sweep").
pub fn view_title(kind: &str, folder_word: &str, id: &str) -> String {
    if id.eq_ignore_ascii_case(folder_word) {
        kind.to_string()
    } else {
        format!("{kind}: {id}")
    }
}
