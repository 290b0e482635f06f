//! The chart layer: a chart kind drawn with the shared plotters code on the page's canvas or
//! into an SVG download, through one backend.

pub mod backend;
pub mod canvas;
