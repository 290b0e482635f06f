//! One plotters backend for the page: the canvas it shows, or the SVG a download writes. The
//! shared charts are generic over their backend; drawing through this one type compiles each
//! chart once for both uses instead of twice (about 78 KB of wasm).

use plotters::prelude::SVGBackend;
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};
use plotters_canvas::CanvasBackend;

/// The canvas on the page, or an SVG document being written.
pub enum PageBackend<'a> {
    Canvas(CanvasBackend),
    Svg(SVGBackend<'a>),
}

/// A drawing error of either backend, as text.
#[derive(Debug)]
pub struct PageDrawError(String);

impl std::fmt::Display for PageDrawError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PageDrawError {}

fn lift<E: std::error::Error + Send + Sync>(e: DrawingErrorKind<E>) -> DrawingErrorKind<PageDrawError> {
    match e {
        DrawingErrorKind::DrawingError(e) => DrawingErrorKind::DrawingError(PageDrawError(e.to_string())),
        DrawingErrorKind::FontError(f) => DrawingErrorKind::FontError(f),
    }
}

/// Call the same method on whichever backend this is.
macro_rules! forward {
    ($self:expr, $b:ident => $call:expr) => {
        match $self {
            PageBackend::Canvas($b) => $call.map_err(lift),
            PageBackend::Svg($b) => $call.map_err(lift),
        }
    };
}

impl DrawingBackend for PageBackend<'_> {
    type ErrorType = PageDrawError;

    fn get_size(&self) -> (u32, u32) {
        match self {
            PageBackend::Canvas(b) => b.get_size(),
            PageBackend::Svg(b) => b.get_size(),
        }
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.ensure_prepared())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.present())
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.draw_pixel(point, color))
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.draw_line(from, to, style))
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.draw_rect(upper_left, bottom_right, style, fill))
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.draw_path(path, style))
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.draw_circle(center, radius, style, fill))
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.fill_polygon(vert, style))
    }

    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.draw_text(text, style, pos))
    }

    fn estimate_text_size<T: BackendTextStyle>(
        &self,
        text: &str,
        style: &T,
    ) -> Result<(u32, u32), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.estimate_text_size(text, style))
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<PageDrawError>> {
        forward!(self, b => b.blit_bitmap(pos, size, src))
    }
}
