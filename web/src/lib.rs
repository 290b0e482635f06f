//! speclens dashboard (Leptos, client-side rendered): the live run over WebSocket and the
//! what-if page that runs the shared speedup model in the browser. The view and its state live
//! in the URL fragment (`#live`, `#whatif?…`).

mod canvas;
mod live_page;
mod whatif_page;

pub use live_page::LivePage;
pub use whatif_page::WhatIfPage;

use leptos::ev;
use leptos::prelude::*;

/// The page's views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Live,
    WhatIf,
}

impl View {
    /// `#live` (or nothing) is the live run; any other fragment is a what-if state.
    pub fn from_fragment(fragment: &str) -> View {
        let f = fragment.trim_start_matches('#');
        if f.is_empty() || f == "live" || f.starts_with("live?") {
            View::Live
        } else {
            View::WhatIf
        }
    }
}

fn current_view() -> View {
    View::from_fragment(&window().location().hash().unwrap_or_default())
}

/// The application shell: navigation and the selected view.
#[component]
pub fn App() -> impl IntoView {
    let (view, set_view) = signal(current_view());
    let listener = window_event_listener(ev::hashchange, move |_| {
        let next = current_view();
        if view.get_untracked() != next {
            set_view.set(next);
        }
    });
    on_cleanup(move || listener.remove());
    view! {
        <header class="topbar">
            <span class="brand">"speclens"</span>
            <nav>
                <a href="#live" class:active=move || view.get() == View::Live>"Live run"</a>
                <a href="#whatif" class:active=move || view.get() == View::WhatIf>"What-if"</a>
            </nav>
            <span class="tagline">"speculative decoding: acceptance, break-even, model"</span>
        </header>
        <main>
            {move || match view.get() {
                View::Live => view! { <LivePage/> }.into_any(),
                View::WhatIf => view! { <WhatIfPage/> }.into_any(),
            }}
        </main>
    }
}
