//! Drawing shared charts on an HTML canvas: size the canvas to its CSS box × devicePixelRatio,
//! then hand it to the plotters canvas backend.

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, IntoDrawingArea};
use plotters_canvas::CanvasBackend;
use speclens_shared::chart::{draw_speedup_chart, SpeedupChart};
use web_sys::HtmlCanvasElement;

/// Milliseconds since the page's navigation started (`performance.now()`), for timings the
/// web benchmark reads (`perf/web.sh`).
pub fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

thread_local! {
    static FIRST_CHART_DRAWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Size `canvas` for sharp pixels and run `draw` on it with the pixel ratio as scale. The first
/// chart the page draws leaves a `speclens:first-chart` performance mark (time from navigation).
pub fn draw_on(
    canvas: &HtmlCanvasElement,
    draw: impl FnOnce(&DrawingArea<CanvasBackend, Shift>, f64) -> Result<(), speclens_shared::Error>,
) -> Result<(), String> {
    let window = web_sys::window().ok_or("no window")?;
    let ratio = window.device_pixel_ratio().max(1.0);
    let rect = canvas.get_bounding_client_rect();
    let (css_w, css_h) = (rect.width().max(240.0), rect.height().max(160.0));
    canvas.set_width((css_w * ratio).round() as u32);
    canvas.set_height((css_h * ratio).round() as u32);
    let backend = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("the canvas has no 2d context")?;
    let root = backend.into_drawing_area();
    draw(&root, ratio).map_err(|e| e.to_string())?;
    if !FIRST_CHART_DRAWN.replace(true) {
        if let Some(p) = window.performance() {
            let _ = p.mark("speclens:first-chart");
        }
    }
    Ok(())
}

/// Draw the S(B) chart; returns a message when the canvas cannot be drawn on.
pub fn draw_speedup(canvas: &HtmlCanvasElement, data: &SpeedupChart) -> Result<(), String> {
    draw_on(canvas, |root, scale| draw_speedup_chart(root, data, scale))
}
