//! speclens dashboard (Leptos, client-side rendered): the what-if page that runs the shared
//! speedup model in the browser. The page state lives in the URL fragment.

mod canvas;
mod whatif_page;

pub use whatif_page::WhatIfPage;

use leptos::prelude::*;

/// The application shell.
#[component]
pub fn App() -> impl IntoView {
    view! {
        <header class="topbar">
            <span class="brand">"speclens"</span>
            <span class="tagline">"speculative decoding: acceptance, break-even, model"</span>
        </header>
        <main>
            <WhatIfPage/>
        </main>
    }
}
