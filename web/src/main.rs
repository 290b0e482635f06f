//! Entry point of the dashboard's wasm bundle: install the panic hook and mount the app.

/// A panic stops the wasm instance (the release build aborts): log it, and say so at the top of
/// the page without touching what is shown, so the last figures stay readable.
fn show_panic_in_place(info: &std::panic::PanicHookInfo) {
    console_error_panic_hook::hook(info);
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let (Ok(banner), Some(body)) = (document.create_element("div"), document.body()) else {
        return;
    };
    banner.set_class_name("notice panic");
    let _ = banner.set_attribute("role", "alert");
    let _ = banner.set_attribute("id", "panic-notice");
    // Text, never HTML: the message may quote data from the server.
    banner.set_text_content(Some(&format!(
        "The dashboard stopped on an internal error; the figures below are the last it showed. \
         Reload the page to start again. ({info})"
    )));
    let _ = body.prepend_with_node_1(&banner);
}

fn main() {
    std::panic::set_hook(Box::new(show_panic_in_place));
    leptos::mount::mount_to_body(speclens_web::App);
}
