//! `speclens bench`: the load generator, in stages. [`prepare`] resolves the model, the
//! endpoints and the workload; `measure` runs the warm-up and the window (see [`load`]) with
//! the live scrapes around them; [`paths::SpecPaths`] puts both spec-decode paths together; and
//! [`output`] prints the console report and writes the files. Ctrl-C stops sending, drains
//! what is in flight (bounded) and saves a partial run.

pub mod answer;
mod chunk_counts;
pub mod client;
pub mod datafile;
pub mod engine;
pub mod load;
pub mod output;
pub mod paths;
pub mod plan;
pub mod prometheus;
pub mod scrape;
mod stages;
pub mod sweep_line;
pub mod tokens;
pub mod trace;
pub mod wire;
pub mod workload;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use indicatif::ProgressBar;
use speclens_shared::check::gates::GateOutcome;
use speclens_shared::engine::Engine;
use speclens_shared::run::record::RunTally;
use speclens_shared::run::steady::{SteadyScan, SteadyState};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::{CollectorError, Signal};
use crate::live::LiveHub;
use crate::net::{redact_url, server_base};
use crate::session::Session;
use client::Target as Server;
use engine::RequestFields;
use load::{Phase, Runner, Shared};
use paths::SpecPaths;
pub use plan::Checks;
pub use plan::Plan;
use scrape::Timeline;
pub use stages::{LoadOutcome, Prepared, RunOutput};
use workload::BodySettings;

/// The measured window with the scrapes around it.
struct Measured {
    outcome: LoadOutcome,
    scrapes: Vec<paths::Scrapes>,
    timeline: Timeline,
    fleet: Option<prometheus::FleetOutcome>,
}

/// `speclens bench`: run, print, save.
pub async fn run(plan: Plan) -> Result<RunOutput, CollectorError> {
    let checks = plan.checks.clone();
    let output = run_with(plan, None).await?;
    verdict(&output, &checks)?;
    Ok(output)
}

/// Whether a saved run passes `bench`'s checks, in order: not stopped by a signal, some
/// request succeeded, failures within `--max-error-rate`, no `--fail-if` gate holding.
pub fn verdict(out: &RunOutput, checks: &Checks) -> Result<(), CollectorError> {
    let dir = out.dir.display();
    if let Some(signal) = out.interrupted {
        return Err(CollectorError::Interrupted {
            message: format!("stopped by {}: the partial run is saved in {dir}", signal.name()),
            signal,
        });
    }
    let (requests, failed) = (out.tally.requests, out.tally.failed);
    let first_error = out
        .tally
        .first_error
        .as_deref()
        .map(|e| format!("; the first: {e}"))
        .unwrap_or_default();
    if requests > 0 && failed == requests {
        return Err(CollectorError::RunFailed(format!(
            "no request succeeded ({failed} failed{first_error}); the results are saved in {dir}"
        )));
    }
    let rate = if requests == 0 {
        0.0
    } else {
        failed as f64 / requests as f64
    };
    if rate > checks.max_error_rate {
        return Err(CollectorError::RunFailed(format!(
            "{failed} of {} requests failed ({:.1} %, above --max-error-rate {}{first_error}); the results are saved in {dir}",
            requests,
            rate * 100.0,
            checks.max_error_rate
        )));
    }
    let result = serde_json::to_value(&out.result).map_err(|e| CollectorError::Output(e.to_string()))?;
    let mut tripped = Vec::new();
    for gate in &checks.gates {
        match gate.check(&result) {
            GateOutcome::Passed { .. } => {}
            GateOutcome::Tripped { value } => tripped.push(format!("{gate} (measured {value})")),
            GateOutcome::Missing => tripped.push(format!("{gate} (the run has no {})", gate.metric)),
        }
    }
    if tripped.is_empty() {
        Ok(())
    } else {
        Err(CollectorError::GateTripped(format!(
            "--fail-if: {}; the results are saved in {dir}",
            tripped.join(", ")
        )))
    }
}

/// A run that feeds `hub` (a dashboard another command serves) instead of its own.
pub async fn run_with(plan: Plan, hub: Option<LiveHub>) -> Result<RunOutput, CollectorError> {
    plan.check()?;
    let mut session = Session::new(hub, plan.dashboard_port);
    let mut prepared = prepare(plan, session.hub.clone()).await?;
    let _lock = crate::results_folder::write::lock_dir(&prepared.out_dir)?;
    session
        .serve(prepared.plan.dashboard_port, results_dir_of(&prepared.out_dir))
        .await?;
    let hub = &session.hub;
    let records_tmp = prepared
        .out_dir
        .join(crate::results_folder::history::RECORDS_IN_PROGRESS);
    let measured = measure(&prepared, hub, &records_tmp).await?;
    prepared.settle_server_version().await;
    let paths = SpecPaths::new(
        measured.scrapes,
        measured.timeline,
        measured.fleet,
        &measured.outcome.tally,
    );
    let (result, not_saved) = output::save_and_print(&prepared, &measured.outcome, &paths, &records_tmp)?;
    hub.finish(&result).await;
    if let Some(message) = not_saved {
        return Err(CollectorError::Output(message));
    }
    session.close("the finished run").await?;
    Ok(RunOutput {
        dir: prepared.out_dir,
        result,
        interrupted: measured.outcome.interrupted,
        tally: measured.outcome.tally,
    })
}

/// Resolve what the run needs before its first request: the model, the metrics endpoints, the
/// results folder, the prompts and their bodies, the connections.
pub async fn prepare(plan: Plan, hub: LiveHub) -> Result<Prepared, CollectorError> {
    let client = http_client(&plan)?;
    let (models, engine) = resolve_model(&client, &plan.target).await?;
    // The run's model (its label, `model_id`): the first of those it sends to.
    let model = models[0].clone();
    // Asked beside the run, never waited for: a slow server delays nothing (see
    // `Prepared::settle_server_version`).
    let version_probe = {
        let (client, headers) = (client.clone(), plan.target.headers.clone());
        let base = server_base(&plan.target.urls[0]).to_string();
        tokio::spawn(async move { crate::net::server_version(&client, &headers, &base).await })
    };
    let fields = RequestFields::decide(engine, plan.target.sglang_spec_details, plan.target.continuous_usage);
    if let Some(note) = &fields.note {
        eprintln!("speclens: {note}");
    }
    let mut endpoints = if plan.scrape.enabled {
        scrape::endpoints(&plan.target.urls, &plan.scrape.metrics_urls)?
    } else {
        Vec::new()
    };
    // TensorRT-LLM answers `/metrics` with JSON: its Prometheus text is elsewhere.
    for endpoint in &mut endpoints {
        let (url, note) = scrape::resolve_url(&client, &endpoint.url).await;
        if let (Some(note), true) = (note, plan.output.print) {
            eprintln!("speclens: {note}");
        }
        endpoint.url = url;
    }
    let out_dir = match &plan.output.dir {
        Some(dir) => dir.clone(),
        None => crate::results_folder::write::default_out_dir(&plan.output.label),
    };
    let token_counter = tokens::TokenCounter::new();
    let settings = BodySettings {
        endpoint: plan.target.endpoint,
        models: models.clone(),
        stream: plan.target.stream,
        temperature: plan.workload.temperature,
        sglang_spec_details: fields.sglang_spec_details,
        continuous_usage_stats: fields.continuous_usage_stats,
    };
    let warmup_count = plan.load.warmup;
    let (warmup, window) = workload::feeds(
        &plan.workload,
        plan.load.warmup as usize,
        plan.load.prompts as usize,
        matches!(plan.load.stop, plan::Stop::Until(_)),
        settings,
        token_counter,
    )
    .await?;
    // The folder is made once the workload is read: a run refused for its flags or its
    // dataset leaves none behind.
    std::fs::create_dir_all(out_dir.join("performances"))
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out_dir.display())))?;
    let servers = servers(&plan.target);
    let shared = Arc::new(Shared::new(client, hub, token_counter, servers));
    Ok(Prepared {
        plan,
        model,
        models,
        engine,
        server_version: None,
        version_probe: Some(version_probe),
        out_dir,
        endpoints,
        warmup_count,
        warmup,
        window,
        shared,
    })
}

/// One request target per server URL.
fn servers(target: &plan::Target) -> Vec<Server> {
    let path = target.endpoint.path();
    let proxied = wire::proxy_in_environment();
    let budget = Arc::new(wire::Budget::new(target.max_buffered_bytes));
    target
        .urls
        .iter()
        .map(|u| {
            let url = format!("{}{path}", server_base(u));
            Server {
                display_url: redact_url(&url),
                wire: (!proxied).then(|| wire::Wire::for_url(&url)).flatten(),
                url,
                endpoint: target.endpoint,
                headers: target.headers.clone(),
                stream: target.stream,
                timeout: target.timeout,
                max_response_bytes: target.max_response_bytes,
                budget: budget.clone(),
            }
        })
        .collect()
}

/// The run's progress bar over warm-up and window (hidden when the console is not printed to).
fn progress_bar(p: &Prepared) -> ProgressBar {
    let total = p.warmup_count + p.plan.window_requests().unwrap_or(0);
    if p.plan.output.print {
        output::progress_bar(total, p.plan.load.stop)
    } else {
        ProgressBar::hidden()
    }
}

/// Each endpoint with its scrapes before and after the window.
fn pair_scrapes(
    endpoints: &[scrape::Endpoint],
    before: Vec<scrape::Scraped>,
    after: Vec<scrape::Scraped>,
) -> Vec<paths::Scrapes> {
    endpoints
        .iter()
        .cloned()
        .zip(before.into_iter().zip(after))
        .map(
            |(endpoint, ((before, before_load), (after, after_load)))| paths::Scrapes {
                endpoint,
                before,
                after,
                before_load,
                after_load,
            },
        )
        .collect()
}

/// Warm-up, the "before" scrapes, the window with its live samplers, the settled "after"
/// scrapes and the Prometheus window.
async fn measure(p: &Prepared, hub: &LiveHub, records_tmp: &std::path::Path) -> Result<Measured, CollectorError> {
    let plan = &p.plan;
    let client = &p.shared.client;
    // The sender stays alive for the whole run (a dropped sender would read as a change).
    let (cancel_tx, mut cancel) = watch::channel(false);
    let cancel_tx = Arc::new(cancel_tx);
    let caught: Arc<std::sync::OnceLock<Signal>> = Arc::default();
    let ctrl_c = tokio::spawn(stop_on_signal(cancel_tx.clone(), caught.clone()));
    let mut records_out = load::RecordSink::create(records_tmp)?;
    let progress = progress_bar(p);
    let started = Instant::now();
    let started_unix_ns = unix_now_ns();
    let (mut tally, mut steady_scan) = folds(p);
    let mut runner = Runner {
        tally: &mut tally,
        steady: steady_scan.as_mut(),
        shared: &p.shared,
        load: &plan.load,
        seed: plan.workload.seed,
        started,
        records_out: &mut records_out,
        progress: &progress,
        cancel: &mut cancel,
    };
    let warm = runner
        .run(Phase {
            feed: p.warmup.clone(),
            count: p.warmup_count,
            first_id: 0,
            warmup: true,
        })
        .await?;
    let before: Vec<_> =
        futures_util::future::join_all(p.endpoints.iter().map(|e| scrape::fetch_with_load(client, &e.url))).await;
    let window_start_unix_s = prometheus::unix_now_s();
    // The hub starts the run first, so the samplers' first points belong to it.
    hub.start_run(&plan.output.label, &p.model, plan.window_requests())
        .await;
    let (stop_tx, stop_rx) = watch::channel(false);
    let samplers = start_samplers(p, hub, started, stop_rx);
    let window_start = Instant::now();
    let mut partial = warm.partial;
    if !partial {
        let window = runner
            .run(Phase {
                feed: p.window.clone(),
                count: plan.load.prompts,
                first_id: p.warmup_count,
                warmup: false,
            })
            .await?;
        partial = window.partial;
    }
    // First send to last completion (not to the end of measuring what arrived).
    let window_end = p
        .shared
        .last_done()
        .filter(|t| *t > window_start)
        .unwrap_or_else(Instant::now);
    progress.finish_and_clear();
    let _ = stop_tx.send(true);
    let (timeline, after, fleet) = after_the_window(p, samplers, window_start_unix_s).await;
    ctrl_c.abort();
    let records_cut = records_out.finish();
    // The scan saw every record as it was folded; the window's figures are one pass over the
    // records just written (all of them: a cut file has no window).
    let steady = match (steady_scan, &records_cut) {
        (Some(scan), None) => steady_window(records_tmp, scan)?,
        _ => None,
    };
    let scrapes = pair_scrapes(&p.endpoints, before, after);
    Ok(Measured {
        outcome: LoadOutcome {
            tally,
            steady,
            duration_s: (window_end - window_start).as_secs_f64(),
            started_unix_ns,
            window_start_unix_s,
            window_ms: [window_start, window_end].map(|at| load::ms_after(started, at)).into(),
            max_in_flight: p.shared.max_in_flight(),
            partial,
            interrupted: caught.get().copied(),
            records_cut,
        },
        scrapes,
        timeline,
        fleet,
    })
}

/// Wall-clock Unix nanoseconds now.
fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// What the window's records are folded into: the tally (SGLang leaves the details out of a
/// request that never verified: a zero-step request) and a closed loop's steady-window scan (an
/// open loop has no "full" state to measure).
fn folds(p: &Prepared) -> (RunTally, Option<SteadyScan>) {
    let plan = &p.plan;
    let tally =
        RunTally::new((p.engine == Some(Engine::Sglang)).then_some(Engine::Sglang)).with_goodput(plan.output.goodput);
    let steady_scan = match (plan.load.concurrency, plan.load.request_rate) {
        (Some(c), None) => SteadyScan::new(c),
        _ => None,
    };
    (tally, steady_scan)
}

/// Once the window has ended: the samplers' timeline, the settled "after" scrapes and, once
/// those are settled, the Prometheus window.
async fn after_the_window(
    p: &Prepared,
    samplers: Vec<tokio::task::JoinHandle<Timeline>>,
    window_start_unix_s: f64,
) -> (Timeline, Vec<scrape::Scraped>, Option<prometheus::FleetOutcome>) {
    let timeline = Timeline::merge(
        futures_util::future::join_all(samplers)
            .await
            .into_iter()
            .flatten()
            .collect(),
    );
    let after: Vec<_> = futures_util::future::join_all(
        p.endpoints
            .iter()
            .map(|e| scrape::fetch_settled(&p.shared.client, &e.url, Duration::from_secs(2))),
    )
    .await;
    // The counters are settled: the Prometheus path's window ends here.
    let fleet = match &p.plan.scrape.prometheus {
        Some(prom) => {
            if p.plan.output.print {
                eprintln!("speclens: reading the window from Prometheus (waits for a scrape past its end)");
            }
            Some(prom.window(window_start_unix_s, prometheus::unix_now_s()).await)
        }
        None => None,
    };
    (timeline, after, fleet)
}

/// The steady window of a closed loop whose records `scan` observed, from its records file.
fn steady_window(records: &std::path::Path, scan: SteadyScan) -> Result<Option<SteadyState>, CollectorError> {
    let Some(mut count) = scan.window() else {
        return Ok(None);
    };
    crate::results_folder::history::for_each_record(records, |r| count.count(r)).map_err(CollectorError::Output)?;
    Ok(Some(count.finish()))
}

/// One live sampler per endpoint, and one for Prometheus when configured.
fn start_samplers(
    p: &Prepared,
    hub: &LiveHub,
    started: Instant,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<Timeline>> {
    let interval = p.plan.scrape.interval;
    let mut samplers: Vec<_> = p
        .endpoints
        .iter()
        .map(|e| {
            tokio::spawn(scrape::sample_live(
                p.shared.client.clone(),
                e.clone(),
                interval,
                started,
                hub.clone(),
                stop.clone(),
            ))
        })
        .collect();
    if let Some(prom) = &p.plan.scrape.prometheus {
        samplers.push(tokio::spawn(prometheus::sample_live(
            prom.clone(),
            interval,
            started,
            hub.clone(),
            stop,
        )));
    }
    samplers
}

/// On SIGINT or SIGTERM: note which, and stop sending (what is in flight is waited for, up to
/// the drain timeout); a second signal abandons what is still in flight at once.
async fn stop_on_signal(cancel: Arc<watch::Sender<bool>>, caught: Arc<std::sync::OnceLock<Signal>>) {
    let signal = crate::net::stop_signal().await;
    let _ = caught.set(signal);
    eprintln!(
        "\nspeclens: {} — stopping: waiting for requests in flight (a second signal abandons them), then saving a partial run",
        signal.name()
    );
    let _ = cancel.send(true);
    let again = crate::net::stop_signal().await;
    eprintln!(
        "speclens: {} again — abandoning the requests in flight, saving the partial run",
        again.name()
    );
    // Sent again, the same value wakes the drain, which then stops waiting.
    let _ = cancel.send(true);
}

fn http_client(plan: &Plan) -> Result<reqwest::Client, CollectorError> {
    client_for(
        &plan.target,
        plan.load.concurrency.map_or(1024, |c| c as usize).min(4096),
    )
}

/// An HTTP client for `target`'s servers (its TLS settings), keeping `idle` connections a host.
pub(crate) fn client_for(target: &plan::Target, idle: usize) -> Result<reqwest::Client, CollectorError> {
    let mut builder = crate::net::client_builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(idle)
        .danger_accept_invalid_certs(target.insecure);
    if let (Some(pem), false) = (&target.ca_cert_pem, target.insecure) {
        builder = builder.use_preconfigured_tls(crate::tls::trusting(pem)?);
    }
    builder
        .build()
        .map_err(|e| CollectorError::InvalidArgument(format!("cannot build the HTTP client: {e}")))
}

/// A `/v1/models` answer, read typed: each model's id and owner, nothing else of the answer
/// kept (a list of 64 MiB costs its ids, not a JSON tree many times its size). An id or owner
/// that is not a string reads as none; a null `data`, or an entry that is not an object, lists
/// nothing there (as the list was read before it was typed).
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct ModelList {
    #[serde(default, deserialize_with = "entries")]
    pub data: Vec<ListedModel>,
}

/// A value read as `T` when it is one, else skipped (any other JSON value, not kept).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum OrOther<T> {
    This(T),
    Other(serde::de::IgnoredAny),
}

impl<T> OrOther<T> {
    fn this(self) -> Option<T> {
        match self {
            OrOther::This(t) => Some(t),
            OrOther::Other(_) => None,
        }
    }
}

/// The entries of `data` that are objects (each read on its own, so the list is never held as
/// a tree); none for a null `data`.
fn entries<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ListedModel>, D::Error> {
    let entries: Option<Vec<OrOther<ListedModel>>> = serde::Deserialize::deserialize(d)?;
    Ok(entries
        .unwrap_or_default()
        .into_iter()
        .filter_map(OrOther::this)
        .collect())
}

/// One model of a [`ModelList`].
#[derive(Debug, serde::Deserialize)]
pub(crate) struct ListedModel {
    #[serde(default, deserialize_with = "string_or_none")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    pub owned_by: Option<String>,
}

impl ModelList {
    /// The ids listed, in order.
    pub fn ids(&self) -> Vec<&str> {
        self.data.iter().filter_map(|m| m.id.as_deref()).collect()
    }

    /// The engine the first model's `owned_by` names.
    pub fn engine(&self) -> Option<Engine> {
        self.data
            .first()
            .and_then(|m| m.owned_by.as_deref())
            .and_then(Engine::from_owned_by)
    }
}

/// A string, or `None` for any other JSON value (skipped, not kept).
fn string_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(<OrOther<String> as serde::Deserialize>::deserialize(d)?.this())
}

/// Why a model list could not be read: the text to show, and whether the server answered at all
/// (an HTTP error or an odd body) or not (refused, timed out, TLS).
#[derive(Debug, Clone)]
pub(crate) struct ModelsError {
    pub answered: bool,
    pub text: String,
}

impl std::fmt::Display for ModelsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The first server's model list (`/v1/models`).
pub(crate) async fn list_models(client: &reqwest::Client, target: &plan::Target) -> Result<ModelList, ModelsError> {
    let url = format!("{}/v1/models", server_base(&target.urls[0]));
    let shown = redact_url(&url);
    let response = client
        .get(&url)
        .headers(target.headers.clone())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| {
            let described = crate::net::describe_http(e);
            let fix = crate::net::connect_hint(&described).unwrap_or(if described.starts_with("cannot connect") {
                "is the server running, and is that its address?"
            } else {
                "is --url an OpenAI-compatible server?"
            });
            ModelsError {
                answered: false,
                text: format!("{shown}: {described} — {fix}"),
            }
        })?;
    let answered = |text: String| ModelsError { answered: true, text };
    let status = response.status();
    if !status.is_success() {
        let fix = match status.as_u16() {
            401 | 403 => "the server wants a key: pass it with --api-key",
            404 => "no model list there: is --url the server's base URL (no /v1/chat/completions)? Or name the model with --model",
            _ => "name the model with --model to skip the listing",
        };
        return Err(answered(format!("{shown} answered HTTP {} — {fix}", status.as_u16())));
    }
    let body = crate::net::read_limited(response, crate::net::MAX_API_BYTES)
        .await
        .map_err(|e| answered(format!("{shown}: {e}")))?;
    serde_json::from_slice(&body).map_err(|e| {
        answered(format!("{shown} answered something that is not a model list ({e}) — is --url an OpenAI-compatible server? Or name the model with --model"))
    })
}

/// Whether `target`'s first server can be benchmarked as given: it answers, and without
/// `--model` it lists one. A sweep asks this of every arm before its first point, so a dead
/// server is found before the others' points are measured.
pub(crate) async fn check_serves(target: &plan::Target) -> Result<(), CollectorError> {
    let listed = list_models(&client_for(target, 1)?, target).await;
    if let Err(e) = &listed {
        if !e.answered {
            return Err(CollectorError::Server(e.text.clone()));
        }
    }
    choose_model(listed, target).map(|_| ())
}

/// The models to ask for (`--model`, else the first one listed; several are sent in turn) and
/// the engine (`--engine`, else the listing's `owned_by`). Without `--model`, the list must
/// answer.
async fn resolve_model(
    client: &reqwest::Client,
    target: &plan::Target,
) -> Result<(Vec<String>, Option<Engine>), CollectorError> {
    choose_model(list_models(client, target).await, target)
}

/// The model and engine of [`resolve_model`], from the server's listing.
fn choose_model(
    listed: Result<ModelList, ModelsError>,
    target: &plan::Target,
) -> Result<(Vec<String>, Option<Engine>), CollectorError> {
    let engine = target.engine.or(listed.as_ref().ok().and_then(ModelList::engine));
    if !target.models.is_empty() {
        // A model the server does not serve would fail every request: say so before any is sent.
        let served: Vec<&str> = listed.as_ref().map(ModelList::ids).unwrap_or_default();
        if let Some(m) = target
            .models
            .iter()
            .find(|m| !served.is_empty() && !served.contains(&m.as_str()))
        {
            return Err(CollectorError::InvalidArgument(format!(
                "--model {m:?} is not served by {}: it serves {} (name one of them with --model, or leave --model out for the first)",
                redact_url(server_base(&target.urls[0])),
                served.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
            )));
        }
        return Ok((target.models.clone(), engine));
    }
    let v = listed.map_err(|why| CollectorError::Server(format!("cannot list the models: {why}")))?;
    let model = v.data.first().and_then(|m| m.id.clone()).ok_or_else(|| {
        CollectorError::Server(format!(
            "{}/v1/models lists no model: name one with --model",
            redact_url(server_base(&target.urls[0]))
        ))
    })?;
    Ok((vec![model], engine))
}

/// The folder a run's dashboard serves: the one holding the run's folder.
fn results_dir_of(out_dir: &std::path::Path) -> PathBuf {
    out_dir.parent().map_or_else(|| PathBuf::from("."), PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #63 item 12: the model list keeps ids and owners only; entries that are not objects, ids
    /// that are not strings and a null `data` list nothing, as the untyped read did.
    #[test]
    fn a_model_list_is_read_for_its_ids_and_owners_only() {
        let list: ModelList = serde_json::from_str(
            r#"{"object": "list", "data": [{"id": "a", "owned_by": "vllm", "root": {"deep": [1, 2]}},
                5, {"id": 7, "owned_by": null}, null, {"id": "b"}]}"#,
        )
        .unwrap();
        assert_eq!(list.ids(), ["a", "b"]);
        assert_eq!(list.engine(), Some(Engine::Vllm));
        let none: ModelList = serde_json::from_str(r#"{"data": null}"#).unwrap();
        assert!(none.ids().is_empty() && none.engine().is_none());
        assert!(serde_json::from_str::<ModelList>(r#"{"data": "all"}"#).is_err());
    }

    #[test]
    fn urls_lose_their_secrets_and_the_v1_suffix() {
        assert_eq!(
            redact_url("http://user:pw@h:8000/v1/chat/completions?key=s"),
            "http://h:8000/v1/chat/completions"
        );
        // Not parseable as a URL (a space in the host), user and password still go.
        assert_eq!(redact_url("http://user:p@ss@h st:80/x?key=s"), "http://h st:80/x");
        assert_eq!(redact_url("user:pw@h:80"), "h:80");
        assert_eq!(server_base("http://h:8000/v1/"), "http://h:8000");
        assert_eq!(server_base("http://h:8000/prefix"), "http://h:8000/prefix");
    }
}
