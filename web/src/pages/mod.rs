//! The dashboard's views, one file each: the overview, the live run, the run history and what
//! it opens (a run, a comparison, a sweep, an accept folder), and the what-if page.

pub mod accept;
pub mod compare;
pub mod live;
pub mod overview;
pub mod run;
pub mod runs;
pub mod sweep;
pub mod whatif;
