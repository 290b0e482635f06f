//! Drawing shared charts on an HTML canvas: size the canvas to its CSS box × devicePixelRatio,
//! then hand it to the plotters canvas backend.

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, IntoDrawingArea};
use plotters_canvas::CanvasBackend;
use speclens_shared::chart::{draw_speedup_chart, SpeedupChart};
use web_sys::HtmlCanvasElement;

/// Size `canvas` for sharp pixels and run `draw` on it with the pixel ratio as scale.
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
    draw(&root, ratio).map_err(|e| e.to_string())
}

/// Draw the S(B) chart; returns a message when the canvas cannot be drawn on.
pub fn draw_speedup(canvas: &HtmlCanvasElement, data: &SpeedupChart) -> Result<(), String> {
    draw_on(canvas, |root, scale| draw_speedup_chart(root, data, scale))
}
