//! Charts on the page: a [`Draw`] kind draws its data with the shared plotters code on any
//! backend, and [`chart_canvas`] shows it on a canvas sized to its CSS box × devicePixelRatio
//! (sharp at 2×), redrawn when the data change or the window is resized, with SVG and PNG
//! downloads for slides and papers.

use leptos::ev;
use leptos::html::{Canvas, A};
use leptos::prelude::*;
use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, IntoDrawingArea, SVGBackend};
use plotters_canvas::CanvasBackend;
use speclens_shared::chart::XFrame;
use speclens_shared::Error;
use wasm_bindgen::JsValue;
use web_sys::HtmlCanvasElement;

use crate::chart::backend::PageBackend;

/// Milliseconds since the page's navigation started (`performance.now()`), for timings the
/// web benchmark reads (`perf/web.sh`).
pub fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

thread_local! {
    static FIRST_CHART_DRAWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// One kind of chart over data `T`: the same drawing on the canvas and in a downloaded SVG.
pub trait Draw<T>: 'static {
    /// Draw, and say where the x axis went (for the hover readout; `None`: no readout).
    fn draw(data: &T, root: &Root, scale: f64) -> Result<Option<XFrame>, Error>;

    /// The values at x (in the chart's data units) for the hover readout.
    fn hover(_data: &T, _x: f64) -> Option<String> {
        None
    }
}

/// What a chart draws on: the page's canvas or a download's SVG, one type for both.
pub type Root<'a> = DrawingArea<PageBackend<'a>, Shift>;

/// The canvas's CSS size (at least 240 × 160 so a hidden canvas still draws something).
fn css_size(canvas: &HtmlCanvasElement) -> (f64, f64) {
    let rect = canvas.get_bounding_client_rect();
    (rect.width().max(240.0), rect.height().max(160.0))
}

/// Size `canvas` for sharp pixels and run `draw` on it with the pixel ratio as scale. The first
/// chart the page draws leaves a `speclens:first-chart` performance mark (time from navigation).
pub fn draw_on(
    canvas: &HtmlCanvasElement,
    draw: impl FnOnce(&Root, f64) -> Result<Option<XFrame>, Error>,
) -> Result<Option<XFrame>, String> {
    let window = web_sys::window().ok_or("no window")?;
    let ratio = window.device_pixel_ratio().max(1.0);
    let (css_w, css_h) = css_size(canvas);
    canvas.set_width((css_w * ratio).round() as u32);
    canvas.set_height((css_h * ratio).round() as u32);
    let backend = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("the canvas has no 2d context")?;
    let root = PageBackend::Canvas(backend).into_drawing_area();
    let frame = draw(&root, ratio).map_err(|e| e.to_string())?;
    if !FIRST_CHART_DRAWN.replace(true) {
        if let Some(p) = window.performance() {
            let _ = p.mark("speclens:first-chart");
        }
    }
    Ok(frame)
}

/// Record a draw's outcome on the canvas for the browser tests: `data-draws` counts the draws,
/// `data-error` holds the last error (empty when it drew).
pub fn mark_drawn(canvas: &HtmlCanvasElement, result: Result<(), String>) {
    let draws = canvas
        .get_attribute("data-draws")
        .and_then(|d| d.parse::<u64>().ok())
        .unwrap_or(0)
        + 1;
    let _ = canvas.set_attribute("data-draws", &draws.to_string());
    let _ = canvas.set_attribute("data-error", &result.err().unwrap_or_default());
}

/// A chart's drawing: reads its data (tracked when called inside an effect) and draws it.
type DrawFn = std::sync::Arc<dyn Fn(&Root, f64) -> Result<Option<XFrame>, Error> + Send + Sync>;

/// A chart's hover readout at an x value (reads its data untracked).
type HoverFn = std::sync::Arc<dyn Fn(f64) -> Option<String> + Send + Sync>;

/// The chart as an SVG document at `width` × `height` CSS pixels.
fn svg_of(draw: &DrawFn, width: u32, height: u32) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = PageBackend::Svg(SVGBackend::with_string(&mut out, (width, height))).into_drawing_area();
        untrack(|| draw(&root, 1.0)).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Point `link` at `bytes` (a Blob URL, the previous one released) and click it: the browser
/// saves the file as the link's `download` name.
fn offer_download(link: &web_sys::HtmlAnchorElement, url: String) {
    let old = link.href();
    if old.starts_with("blob:") {
        let _ = web_sys::Url::revoke_object_url(&old);
    }
    link.set_href(&url);
    link.click();
}

fn blob_url(text: &str, mime: &str) -> Option<String> {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).ok()?;
    web_sys::Url::create_object_url_with_blob(&blob).ok()
}

/// A chart of kind `K` over `data` on a canvas with id `id` (CSS class `class` sets its size):
/// drawn at once, again when `data` changes or the window is resized, with SVG and PNG
/// download buttons named after `file_stem`.
pub fn chart_canvas<T, K>(id: &'static str, class: &'static str, file_stem: String, data: Signal<T>) -> impl IntoView
where
    T: Send + Sync + 'static,
    K: Draw<T>,
{
    let draw: DrawFn = std::sync::Arc::new(move |root: &Root, scale: f64| data.with(|d| K::draw(d, root, scale)));
    let hover: HoverFn = std::sync::Arc::new(move |x: f64| data.with_untracked(|d| K::hover(d, x)));
    chart_frame(id, class, file_stem, draw, hover)
}

/// The part of [`chart_canvas`] that does not depend on the chart's kind (compiled once).
fn chart_frame(id: &'static str, class: &'static str, file_stem: String, draw: DrawFn, hover: HoverFn) -> AnyView {
    let canvas = NodeRef::<Canvas>::new();
    // Where the last canvas draw put its x axis, and the readout under the pointer.
    let frame = StoredValue::new(None::<XFrame>);
    // The readout's text and its CSS placement beside the pointer (left of it on the right half,
    // so it never sticks out of the chart).
    let (tip, set_tip) = signal(None::<(String, String)>);
    let svg_link = NodeRef::<A>::new();
    let png_link = NodeRef::<A>::new();
    let (resized, set_resized) = signal(0u32);
    let listener = window_event_listener(ev::resize, move |_| set_resized.update(|n| *n += 1));
    on_cleanup(move || listener.remove());
    let on_data = draw.clone();
    Effect::new(move |_| {
        resized.track();
        let Some(c) = canvas.get() else { return };
        // Data to pixels, timed (the web benchmark reads `data-redraw-ms`).
        let started_ms = now_ms();
        let drawn = draw_on(&c, |root, scale| on_data(root, scale));
        frame.set_value(drawn.as_ref().ok().copied().flatten());
        mark_drawn(&c, drawn.map(|_| ()));
        let _ = c.set_attribute("data-redraw-ms", &format!("{:.3}", now_ms() - started_ms));
    });
    let download_svg = move |_| {
        let (Some(c), Some(link)) = (canvas.get_untracked(), svg_link.get_untracked()) else {
            return;
        };
        let (w, h) = css_size(&c);
        let svg = svg_of(&draw, w.round() as u32, h.round() as u32);
        match svg.ok().and_then(|text| blob_url(&text, "image/svg+xml")) {
            Some(url) => offer_download(&link, url),
            None => {
                let _ = c.set_attribute("data-error", "the SVG could not be drawn");
            }
        }
    };
    let download_png = move |_| {
        let (Some(c), Some(link)) = (canvas.get_untracked(), png_link.get_untracked()) else {
            return;
        };
        if let Ok(url) = c.to_data_url_with_type("image/png") {
            offer_download(&link, url);
        }
    };
    let on_move = move |ev: ev::MouseEvent| {
        let ratio = web_sys::window().map_or(1.0, |w| w.device_pixel_ratio().max(1.0));
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        let width = canvas.get_untracked().map_or(0.0, |c| f64::from(c.client_width()));
        let text = frame
            .get_value()
            .and_then(|f| f.value_at(x * ratio))
            .and_then(|value| hover(value));
        let place = if x > width / 2.0 {
            format!("right: {:.0}px; top: {:.0}px", width - x + 14.0, y + 14.0)
        } else {
            format!("left: {:.0}px; top: {:.0}px", x + 14.0, y + 14.0)
        };
        set_tip.set(text.map(|t| (t, place)));
    };
    let (svg_name, png_name) = (format!("{file_stem}.svg"), format!("{file_stem}.png"));
    view! {
        <div class="chart-frame">
            <canvas id=id class=class node_ref=canvas on:mousemove=on_move on:mouseleave=move |_| set_tip.set(None)></canvas>
            {move || tip.get().map(|(text, place)| view! {
                <div class="chart-tip" id=format!("{id}-tip") role="status" style=place>{text}</div>
            })}
            <div class="chart-actions">
                <button type="button" class="download" id=format!("{id}-svg") title="Download this chart as SVG" on:click=download_svg>"SVG"</button>
                <button type="button" class="download" id=format!("{id}-png") title="Download this chart as PNG" on:click=download_png>"PNG"</button>
                <a class="download-link" id=format!("{id}-svg-link") download=svg_name node_ref=svg_link hidden=true></a>
                <a class="download-link" id=format!("{id}-png-link") download=png_name node_ref=png_link hidden=true></a>
            </div>
        </div>
    }
    .into_any()
}
