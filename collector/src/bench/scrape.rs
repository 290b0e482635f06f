//! The server-scrape path from the collector's side: which `/metrics` endpoints a run reads,
//! fetching them (failures become the reasons of docs/METRICS.md §1.4, never errors), the
//! settled "after" snapshot, and the live sampler that builds the timeline.

use std::collections::BTreeMap;
use std::time::Duration;

use speclens_shared::capped::CappedLog;
use speclens_shared::scrape::{
    counters_from_text, derive, CounterSet, IncreaseAccumulator, LoadSample, ScrapeFailure, WindowFacts,
};
use speclens_shared::view::run::TimelinePoint;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::CollectorError;
use crate::live::{LiveHub, Source};

/// One metrics endpoint: its `host:port` label and full URL.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub label: String,
    pub url: String,
}

/// `host:port` of a URL (IPv6 literals keep their brackets), with the scheme's default port.
pub fn host_port(url: &str) -> Result<(String, String), CollectorError> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| CollectorError::InvalidArgument(format!("bad URL {url:?}: {e}")))?;
    let host = match parsed.host() {
        Some(url::Host::Ipv6(a)) => format!("[{a}]"),
        Some(h) => h.to_string(),
        None => return Err(CollectorError::InvalidArgument(format!("URL {url:?} has no host"))),
    };
    let port = parsed.port_or_known_default().unwrap_or(80);
    Ok((format!("{host}:{port}"), parsed.scheme().to_string()))
}

/// The endpoints to scrape: the explicit ones, else `/metrics` of each unique server.
pub fn endpoints(server_urls: &[String], explicit: &[String]) -> Result<Vec<Endpoint>, CollectorError> {
    let mut out: Vec<Endpoint> = Vec::new();
    if explicit.is_empty() {
        for url in server_urls {
            let (label, scheme) = host_port(url)?;
            if !out.iter().any(|e| e.label == label) {
                out.push(Endpoint {
                    url: format!("{scheme}://{label}/metrics"),
                    label,
                });
            }
        }
    } else {
        for url in explicit {
            let (label, _) = host_port(url)?;
            if !out.iter().any(|e| e.url == *url) {
                out.push(Endpoint {
                    label,
                    url: url.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// Fetch a metrics text; the failure says why, in the words of docs/METRICS.md §1.4.
pub async fn fetch_text(client: &reqwest::Client, url: &str) -> Result<String, ScrapeFailure> {
    let fail = |cause: String| ScrapeFailure::Fetch {
        url: crate::net::redact_url(url),
        cause,
    };
    // A hung `/metrics` fails the scrape, never the run.
    let response = client
        .get(url)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .map_err(|e| fail(crate::net::describe_http(e)))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND && url.ends_with(TRTLLM_PROMETHEUS_PATH) {
        return Err(ScrapeFailure::TrtllmNotMounted);
    }
    if !response.status().is_success() {
        return Err(ScrapeFailure::Http(response.status().as_u16()));
    }
    crate::net::read_text_limited(response, crate::net::MAX_METRICS_BYTES)
        .await
        .map_err(fail)
}

/// Where trtllm-serve mounts its Prometheus text (its `/metrics` answers JSON).
const TRTLLM_PROMETHEUS_PATH: &str = "/prometheus/metrics";

/// The URL to scrape for `url`: itself, or TensorRT-LLM's `/prometheus/metrics` on the same
/// server when `url` answers JSON; the note says when it changed.
pub async fn resolve_url(client: &reqwest::Client, url: &str) -> (String, Option<String>) {
    if !matches!(fetch(client, url).await, Err(ScrapeFailure::JsonBody)) {
        return (url.to_string(), None);
    }
    let Ok(mut prometheus) = reqwest::Url::parse(url) else {
        return (url.to_string(), None);
    };
    prometheus.set_path(TRTLLM_PROMETHEUS_PATH);
    prometheus.set_query(None);
    let note = format!(
        "{} answers JSON (TensorRT-LLM's iteration stats): scraping {} instead",
        crate::net::redact_url(url),
        crate::net::redact_url(prometheus.as_str())
    );
    (prometheus.to_string(), Some(note))
}

/// Fetch and parse one snapshot of the spec-decode counters.
pub async fn fetch(client: &reqwest::Client, url: &str) -> Result<CounterSet, ScrapeFailure> {
    fetch_with_load(client, url).await.0
}

/// One scrape of an endpoint: its counters (or why not) and its engine-load gauges.
pub type Scraped = (Result<CounterSet, ScrapeFailure>, Option<LoadSample>);

/// One snapshot of the spec-decode counters and of the engine's load, from one fetch.
pub async fn fetch_with_load(client: &reqwest::Client, url: &str) -> Scraped {
    match fetch_text(client, url).await {
        Ok(text) => (counters_from_text(&text), LoadSample::of_text(&text)),
        Err(e) => (Err(e), None),
    }
}

/// The "after" snapshot (with the load it showed): scrape until two in a row agree (an engine
/// can answer before it records its last step), at most `limit`.
pub async fn fetch_settled(client: &reqwest::Client, url: &str, limit: Duration) -> Scraped {
    let deadline = Instant::now() + limit;
    let (first, mut load) = fetch_with_load(client, url).await;
    let Ok(mut last) = first else {
        return (first, load);
    };
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        // A failed retry keeps the good snapshot already in hand.
        let (Ok(next), next_load) = fetch_with_load(client, url).await else {
            return (Ok(last), load);
        };
        load = next_load.or(load);
        if next.total == last.total {
            return (Ok(next), load);
        }
        last = next;
    }
    (Ok(last), load)
}

/// What the live samplers saw.
#[derive(Debug, Default)]
pub struct Timeline {
    pub points: Vec<TimelinePoint>,
    /// Counter resets seen during the run, by endpoint label (counted; the first few in full).
    pub resets: BTreeMap<String, CappedLog>,
    /// The engine gauges of each scrape in the window, by endpoint label (TensorRT-LLM's and
    /// SGLang's; a window averages them).
    pub gauges: Vec<(String, BTreeMap<String, f64>)>,
    /// The engine's load in each live scrape, by endpoint label.
    pub loads: Vec<(String, LoadSample)>,
}

impl Timeline {
    /// The resets as `result.json` and the console list them: `[endpoint] what happened`, the
    /// first few of each endpoint, then how many more.
    pub fn reset_lines(&self) -> Vec<String> {
        self.resets
            .iter()
            .flat_map(|(label, log)| log.lines(&format!("[{label}] "), "counter resets"))
            .collect()
    }

    /// Every sampler's timeline as one, in time order.
    pub fn merge(parts: Vec<Timeline>) -> Timeline {
        let mut all = Timeline::default();
        for part in parts {
            all.points.extend(part.points);
            for (label, log) in part.resets {
                all.resets.entry(label).or_default().absorb(log);
            }
            all.gauges.extend(part.gauges);
            all.loads.extend(part.loads);
        }
        all.points.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        all
    }
}

/// Scrape `endpoint` every `interval` until `stop` turns true; each point goes to `hub` as it
/// comes, and the whole timeline is returned.
pub async fn sample_live(
    client: reqwest::Client,
    endpoint: Endpoint,
    interval: Duration,
    started: Instant,
    hub: LiveHub,
    stop: watch::Receiver<bool>,
) -> Timeline {
    let mut timeline = Timeline::default();
    let mut acc = IncreaseAccumulator::default();
    let mut last_at: Option<Instant> = None;
    let mut ticked = false;
    // One last scrape when the run ends closes the final interval.
    let mut ticks = Ticks::new(interval, stop, true);
    while ticks.next().await {
        let at = Instant::now();
        let t_s = (at - started).as_secs_f64();
        let (counters, load) = fetch_with_load(&client, &endpoint.url).await;
        // The first tick comes at once, before the load has ramped up: its gauges would show
        // an idle engine (as the counters' first scrape is only their baseline).
        if let Some(load) = load.filter(|_| ticked) {
            timeline.loads.push((endpoint.label.clone(), load));
        }
        ticked = true;
        let point = match counters {
            Err(e) => Some(TimelinePoint {
                endpoint: endpoint.label.clone(),
                t_s,
                interval_s: 0.0,
                accepted_per_s: 0.0,
                drafted_per_s: 0.0,
                drafts_per_s: 0.0,
                acceptance_rate: None,
                acceptance_length: None,
                per_position: BTreeMap::new(),
                error: Some(e.to_string()),
            }),
            Ok(counters) => {
                let step = acc.observe(&counters);
                if !acc.resets.is_empty() {
                    let log = std::mem::take(&mut acc.resets);
                    timeline.resets.entry(endpoint.label.clone()).or_default().absorb(log);
                }
                if last_at.is_some() && !counters.gauges.is_empty() {
                    timeline.gauges.push((endpoint.label.clone(), counters.gauges.clone()));
                }
                last_at.replace(at).map(|prev| {
                    let dt = (at - prev).as_secs_f64().max(1e-9);
                    let stats = derive(counters.schema(), &step, &WindowFacts::of(&counters)).ok();
                    TimelinePoint {
                        endpoint: endpoint.label.clone(),
                        t_s,
                        interval_s: dt,
                        accepted_per_s: step.num_accepted_tokens as f64 / dt,
                        drafted_per_s: step.num_draft_tokens as f64 / dt,
                        drafts_per_s: step.num_drafts as f64 / dt,
                        acceptance_rate: stats.as_ref().and_then(|s| s.acceptance_rate),
                        acceptance_length: stats.as_ref().and_then(|s| s.acceptance_length),
                        per_position: stats.map(|s| s.per_position_acceptance_rates).unwrap_or_default(),
                        error: None,
                    }
                })
            }
        };
        if let Some(p) = point {
            hub.note_point(Source::Direct, p.clone()).await;
            timeline.points.push(p);
        }
    }
    timeline
}

/// The live samplers' clock: a tick every interval (a late one delays the next; none bunch up)
/// until the run stops, and one more at the stop for a sampler whose last sample closes the
/// final interval.
pub struct Ticks {
    ticker: tokio::time::Interval,
    stop: watch::Receiver<bool>,
    one_more_at_stop: bool,
    stopped: bool,
}

impl Ticks {
    pub fn new(interval: Duration, stop: watch::Receiver<bool>, one_more_at_stop: bool) -> Ticks {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Ticks {
            ticker,
            stop,
            one_more_at_stop,
            stopped: false,
        }
    }

    /// Wait for the next sample: `false` once the run has stopped (and its last sample, if
    /// any, was taken).
    pub async fn next(&mut self) -> bool {
        if self.stopped {
            return false;
        }
        tokio::select! {
            _ = self.ticker.tick() => true,
            _ = self.stop.changed() => {
                self.stopped = true;
                self.one_more_at_stop
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_unique_host_ports() {
        let urls = vec![
            "http://10.0.0.1:8080/v1".to_string(),
            "http://10.0.0.1:8080".to_string(),
            "https://example.com".to_string(),
            "http://[::1]:9090".to_string(),
        ];
        let e = endpoints(&urls, &[]).unwrap();
        let got: Vec<(&str, &str)> = e.iter().map(|e| (e.label.as_str(), e.url.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("10.0.0.1:8080", "http://10.0.0.1:8080/metrics"),
                ("example.com:443", "https://example.com:443/metrics"),
                ("[::1]:9090", "http://[::1]:9090/metrics"),
            ]
        );
        let explicit = endpoints(&urls, &["http://127.0.0.1:9400/prom/metrics".into()]).unwrap();
        assert_eq!(explicit[0].label, "127.0.0.1:9400");
        assert!(endpoints(&["not a url".into()], &[]).is_err());
    }
}
