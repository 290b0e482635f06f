//! The files a run writes and every reader reads back (docs/FORMATS.md): `result.json`, the
//! accept files, the list of a results folder, AIPerf's exports, what a static report carries
//! and the workload's warnings. No page type is imported here: the page builds its views from
//! these.

pub mod accept;
pub mod aiperf;
pub mod aiperf_records;
pub mod content_mark;
pub mod report_data;
pub mod result_text;
pub mod run_list;
pub mod run_result;
pub mod warnings;
