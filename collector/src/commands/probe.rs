//! `speclens probe URL`: one look at a server in a second or two — its model list, version,
//! metrics text, and one small request with its counters before and after — judged by
//! `shared::probe` into what speclens will measure there, what it cannot and what turns it on,
//! and the next commands with the URL filled in.

use std::time::Duration;

use serde_json::{json, Value};
use speclens_shared::run::probe::{ProbeReport, Seen};
use speclens_shared::scrape::counters_from_text;

use crate::bench::engine::RequestFields;
use crate::bench::plan::Target;
use crate::bench::{self, scrape};
use crate::error::CollectorError;
use crate::net::{redact_url, server_base};
use speclens_shared::engine::Engine;

/// What `speclens probe` is asked to do.
pub struct Plan {
    /// The server (its first URL) with the user's key, headers and TLS settings.
    pub target: Target,
    /// Print the findings as JSON instead of text.
    pub json: bool,
}

/// Each request the probe makes waits at most this long.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// `speclens probe`: exit 0 when the server answered, 1 when it did not.
pub async fn run(plan: Plan) -> Result<(), CollectorError> {
    let report = probe(&plan.target).await?;
    if plan.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| CollectorError::Output(format!("cannot write the probe as JSON: {e}")))?;
        crate::console::print(&format!("{text}\n"))?;
    } else {
        crate::console::print(&report.text())?;
    }
    if report.reachable {
        Ok(())
    } else {
        Err(CollectorError::Server(format!("{} did not answer", report.url)))
    }
}

/// Look at the server and judge what was seen.
pub async fn probe(target: &Target) -> Result<ProbeReport, CollectorError> {
    let client = bench::client_for(target, 2)?;
    let url = target.urls[0].clone();
    let base = server_base(&url).to_string();
    let listed = bench::list_models(&client, target).await;
    let models = listed.as_ref().map(|list| {
        list.data
            .iter()
            .filter_map(|m| Some((m.id.clone()?, m.owned_by.clone())))
            .collect::<Vec<(String, Option<String>)>>()
    });
    let engine = target
        .engine
        .or_else(|| listed.as_ref().ok().and_then(bench::ModelList::engine));
    let version = crate::net::server_version(&client, &target.headers, &base).await;
    let metrics_url = scrape::endpoints(std::slice::from_ref(&url), &[])?
        .into_iter()
        .next()
        .map(|e| e.url);
    let (metrics_url, metrics_note) = match metrics_url {
        Some(u) => scrape::resolve_url(&client, &u).await,
        None => (format!("{base}/metrics"), None),
    };
    let read_metrics = || async {
        scrape::fetch_text(&client, &metrics_url)
            .await
            .map(|text| (redact_url(&metrics_url), text))
            .map_err(|e| e.to_string())
    };
    let before = read_metrics().await;
    // The probe asks one model: the first named, else the first listed.
    let model = target
        .models
        .first()
        .cloned()
        .or_else(|| models.as_ref().ok().and_then(|m| m.first()).map(|(id, _)| id.clone()));
    let answer = match &model {
        Some(model) => ask(&client, target, engine, &base, model).await,
        None => Err("no model to ask for (the server lists none; name one with --model)".to_string()),
    };
    let after = read_metrics().await;
    let drafts = |m: &Result<(String, String), String>| {
        let counters = counters_from_text(&m.as_ref().ok()?.1).ok()?;
        let t = counters.total;
        // The drafts counter where the engine has one, else its draft tokens (TensorRT-LLM).
        Some(if t.num_drafts > 0 || t.num_draft_tokens == 0 {
            t.num_drafts
        } else {
            t.num_draft_tokens
        })
    };
    let drafts_before_after = drafts(&before).zip(drafts(&after));
    let seen = Seen {
        url: redact_url(server_base(&url)).trim_end_matches('/').to_string(),
        models: models.map_err(|e| e.text.clone()),
        version,
        metrics: after,
        metrics_note,
        answer,
        drafts_before_after,
    };
    Ok(ProbeReport::of(&seen))
}

/// One short chat request, not streamed, with the engine's fields for per-request stats.
async fn ask(
    client: &reqwest::Client,
    target: &Target,
    engine: Option<Engine>,
    base: &str,
    model: &str,
) -> Result<Value, String> {
    let mut body = json!({
        "model": model,
        "messages": [{"role": "user", "content": "Repeat after me: the quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog."}],
        "max_tokens": 32,
        "temperature": 0.0,
        "stream": false,
    });
    if RequestFields::decide(engine, target.sglang_spec_details, target.continuous_usage).sglang_spec_details {
        body["return_spec_tokens_details"] = json!(true);
    }
    let response = client
        .post(format!("{base}/v1/chat/completions"))
        .headers(target.headers.clone())
        .timeout(PROBE_TIMEOUT.max(target.timeout.min(Duration::from_secs(60))))
        .json(&body)
        .send()
        .await
        .map_err(crate::net::describe_http)?;
    let status = response.status();
    let bytes = crate::net::read_limited(response, crate::net::MAX_API_BYTES).await?;
    if !status.is_success() {
        return Err(format!(
            "HTTP {}: {}",
            status.as_u16(),
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("the answer is not JSON: {e}"))
}
