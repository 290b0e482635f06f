//! What a page shows, built from runs and results: a run's view (live and saved), the
//! dashboard's WebSocket protocol and the page's copy of it, acceptance by position, the
//! overview and the sweep's headline.

pub mod compare;
pub mod headline;
pub mod live_state;
pub mod overview;
pub mod positions;
pub mod protocol;
pub mod run;
