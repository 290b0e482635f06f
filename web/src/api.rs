//! Where the pages' data come from: the collector's API (`/api/…`), or in static-report mode
//! the report's embedded copy of the same answers.
//!
//! Static-report mode: when the page carries a report's data (a `<script type="application/json">`
//! written by `speclens report`), the run history reads from it instead of the collector's API,
//! and a report written with another schema version says so instead of showing an empty page.

use std::sync::OnceLock;

use gloo_net::http::Request;
use leptos::prelude::*;
use serde::de::DeserializeOwned;
use speclens_shared::results::report_data::{ReportData, REPORT_ELEMENT_ID};
use speclens_shared::results::run_list::RunList;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::sweep::SweepFile;
use speclens_shared::view::headline::{run_whatif_link, Headline};
use speclens_shared::view::overview::pick_run;
use speclens_shared::view::run::run_view_from_result;

static REPORT: OnceLock<Option<Result<ReportData, String>>> = OnceLock::new();

/// The embedded report, read once: `None` when the page is served by the collector.
pub fn embedded() -> Option<&'static Result<ReportData, String>> {
    REPORT
        .get_or_init(|| {
            let element = document().get_element_by_id(REPORT_ELEMENT_ID)?;
            Some(ReportData::parse(&element.text_content().unwrap_or_default()))
        })
        .as_ref()
}

/// The answer the collector would give at `path`, from the report.
pub fn response(path: &str) -> Option<Result<serde_json::Value, String>> {
    Some(match embedded()? {
        Ok(data) => data
            .responses
            .get(path)
            .cloned()
            .ok_or_else(|| format!("{path} is not in this report")),
        Err(message) => Err(message.clone()),
    })
}

/// The one run of a single-run report (opened at once instead of a one-line list).
pub fn only_run() -> Option<String> {
    let Some(Ok(data)) = embedded() else { return None };
    let runs = data.responses.get("/api/runs")?["runs"].as_array()?;
    match runs.as_slice() {
        [one]
            if data
                .responses
                .keys()
                .filter(|k| k.starts_with("/api/sweeps/") || k.starts_with("/api/accept/"))
                .count()
                == 0 =>
        {
            one["id"].as_str().map(str::to_string)
        }
        _ => None,
    }
}

/// The headline of the sweep the dashboard's model figures are about: the first sweep the
/// results folder (or the report) holds, as the overview picks it. Every what-if link with a
/// model B* beside it (the navigation's, the run and live pages') carries this one when a
/// sweep exists, so they show the sweep's model B* and no other.
pub async fn sweep_headline() -> Option<Headline> {
    let list = fetch_json::<RunList>("/api/runs".into()).await.ok()?;
    let id = list.sweeps.first()?;
    let table = fetch_json::<SweepFile>(format!("/api/sweeps/{id}")).await.ok()?;
    Headline::of_sweep(&table)
}

/// The sweep's headline, fetched once for the whole page (a context the App provides).
#[derive(Clone, Copy)]
pub struct SweepModel(pub LocalResource<Option<Headline>>);

impl SweepModel {
    /// The headline once fetched; `None` while loading or without a sweep.
    pub fn get(&self) -> Option<Headline> {
        self.0.get().flatten()
    }
}

/// The page's sweep headline, from the App's context (`None` outside it).
pub fn sweep_model() -> Option<Headline> {
    use_context::<SweepModel>().and_then(|m| m.get())
}

/// Without a sweep, a report's What-if opens on the acceptance of the run its overview
/// describes.
pub fn report_run_whatif() -> Option<String> {
    let Some(Ok(data)) = embedded() else { return None };
    let list: RunList = serde_json::from_value(data.responses.get("/api/runs")?.clone()).ok()?;
    let (entry, _) = pick_run(&list.runs, None)?;
    let result: RunResult =
        serde_json::from_value(data.responses.get(&format!("/api/runs/{}", entry.id))?.clone()).ok()?;
    run_whatif_link(&run_view_from_result(&result)).map(|(fragment, _)| fragment)
}

/// The collector's answer at `url` as `T` (the shared result types), or the report's copy of
/// it in a static report.
pub async fn fetch_json<T: DeserializeOwned>(url: String) -> Result<T, String> {
    let value = match response(&url) {
        Some(answer) => answer?,
        None => {
            let response = Request::get(&url).send().await.map_err(|e| e.to_string())?;
            if !response.ok() {
                return Err(format!("{url}: HTTP {}", response.status()));
            }
            response.json::<serde_json::Value>().await.map_err(|e| e.to_string())?
        }
    };
    serde_json::from_value(value).map_err(|e| format!("{url}: {e}"))
}
