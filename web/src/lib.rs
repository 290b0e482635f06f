//! speclens dashboard (Leptos, client-side rendered): the live run over WebSocket and the
//! what-if page that runs the shared speedup model in the browser. The view and its state live
//! in the URL fragment (`#live`, `#whatif?…`). The same app is the static report when the page
//! carries a report's data (`speclens report`).

mod api;
mod chart;
mod components;
mod pages;

pub use pages::live::LivePage;
pub use pages::overview::OverviewPage;
pub use pages::runs::RunsPage;
pub use pages::whatif::WhatIfPage;

use leptos::ev;
use leptos::prelude::*;

/// The page's views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Overview,
    Live,
    WhatIf,
    Runs,
}

impl View {
    /// Nothing or `#overview` is the overview, `#live` the live run, `#runs…` the history; any
    /// other fragment is a what-if state.
    pub fn from_fragment(fragment: &str) -> View {
        let f = fragment.trim_start_matches('#');
        if f.is_empty() || f == "overview" {
            View::Overview
        } else if f == "live" || f.starts_with("live?") {
            View::Live
        } else if f == "runs" || f.starts_with("runs?") {
            View::Runs
        } else {
            View::WhatIf
        }
    }
}

fn current_fragment() -> String {
    window().location().hash().unwrap_or_default()
}

/// The application shell: navigation and the selected view.
#[component]
pub fn App() -> impl IntoView {
    // The runs views read their state from the fragment when they mount, so any change of
    // fragment there re-renders; the what-if page follows its own fragment changes.
    let report = api::embedded();
    if let Some(Err(message)) = report {
        return view! {
            <header class="topbar"><span class="brand">"speclens"</span><span class="tagline">"static report"</span></header>
            <main><div class="notice" role="alert" id="report-error">{message.clone()}</div></main>
        }
        .into_any();
    }
    let in_report = report.is_some();
    if in_report && current_fragment().trim_start_matches('#').is_empty() {
        if let Some(id) = api::only_run() {
            let _ = window().location().set_hash(&format!("runs?open={id}"));
        }
    }
    let (fragment, set_fragment) = signal(current_fragment());
    // A report has no live run: a live link opens its overview.
    let view = Memo::new(move |_| match View::from_fragment(&fragment.get()) {
        View::Live if in_report => View::Overview,
        v => v,
    });
    let tagline = match report {
        Some(Ok(data)) => format!(
            "static report · written by speclens {} on {}",
            data.speclens_version, data.created
        ),
        _ => "speculative decoding: acceptance, break-even, model".to_string(),
    };
    // The navigation's What-if opens on the sweep's headline (its measured acceptance, ridge and
    // draft cost: the model B* every page shows), else a report's run, else the defaults.
    let sweep_model = api::SweepModel(LocalResource::new(api::sweep_headline));
    provide_context(sweep_model);
    let report_run = api::report_run_whatif();
    let whatif_href = move || match sweep_model.get() {
        Some(h) => format!("#{}", h.whatif_link().0),
        None => report_run
            .as_ref()
            .map_or_else(|| "#whatif".to_string(), |f| format!("#{f}")),
    };
    let listener = window_event_listener(ev::hashchange, move |_| set_fragment.set(current_fragment()));
    on_cleanup(move || listener.remove());
    view! {
        <header class="topbar">
            <span class="brand">"speclens"</span>
            <nav>
                <a href="#overview" class:active=move || view.get() == View::Overview>"Overview"</a>
                {(!in_report).then(|| view! { <a href="#live" class:active=move || view.get() == View::Live>"Live run"</a> })}
                <a id="nav-whatif" href=whatif_href class:active=move || view.get() == View::WhatIf>"What-if"</a>
                <a href="#runs" class:active=move || view.get() == View::Runs>"Runs"</a>
            </nav>
            <span class="tagline" id="tagline">{tagline}</span>
        </header>
        <main>
            {move || match view.get() {
                View::Overview => view! { <OverviewPage/> }.into_any(),
                View::Live => view! { <LivePage/> }.into_any(),
                View::WhatIf => view! { <WhatIfPage/> }.into_any(),
                View::Runs => {
                    fragment.track();
                    view! { <RunsPage/> }.into_any()
                }
            }}
        </main>
    }
    .into_any()
}
