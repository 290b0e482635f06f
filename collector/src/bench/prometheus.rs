//! The fleet path: a run's spec-decode acceptance read through a Prometheus server's HTTP API
//! (or Thanos, Mimir, VictoriaMetrics: the same API) instead of each replica's `/metrics`. The
//! window's growth comes from the stored samples (`speclens_shared::scrape::fleet`); the live timeline
//! from `rate()` per instance. Every failure becomes an N/A result with its reason: it never
//! fails the benchmark.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use serde::Serialize;
use speclens_shared::figures::{acceptance_length, acceptance_rate_pct};
use speclens_shared::scrape::fleet::{
    counters_selector, fleet_window, metric_selector, parse_api_answer, selector_for, ApiSeries, FleetWindow,
    NO_COUNTERS,
};
use speclens_shared::scrape::{derive_stats, RawPhases, ResultStatus, SglangGauges, SpecCounters, SpecDecodeResult};
use speclens_shared::view::run::TimelinePoint;
use tokio::sync::watch;

use super::scrape::{Ticks, Timeline};
use crate::error::CollectorError;
use crate::live::{LiveHub, Source};
use crate::net::redact_url;
pub use speclens_shared::results::run_result::FleetOutcome;

/// The label of the Prometheus path in consoles, files and the live timeline.
pub const LABEL: &str = "prometheus";

/// How to reach a Prometheus HTTP API (Thanos, Mimir and VictoriaMetrics answer the same API).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Base URL, e.g. http://prometheus:9090.
    pub url: String,
    /// Series selector narrowing the counters, e.g. `{job="vllm"}`.
    pub selector: String,
    /// Bearer token; never written anywhere.
    pub token: Option<String>,
    /// Basic-auth user and password; the password is never written anywhere.
    pub user: Option<String>,
    pub password: Option<String>,
    /// PEM file of a CA to trust for an https:// Prometheus (besides the system's roots).
    pub ca_cert: Option<std::path::PathBuf>,
    pub timeout_s: f64,
    /// Seconds to wait after the run for a sample past the window's end.
    pub wait_s: f64,
    /// Range of rate() for the live timeline, in seconds.
    pub rate_window_s: f64,
}

/// A configured Prometheus API.
#[derive(Clone)]
pub struct Prometheus {
    client: reqwest::Client,
    base: String,
    selector: String,
    user_selector: String,
    wait: Duration,
    rate_window_s: f64,
}

/// Unix time now, in seconds.
pub fn unix_now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Prometheus {
    /// `None` without `--prometheus-url`; an error for flags that cannot work.
    pub fn new(args: &Settings) -> Result<Prometheus, CollectorError> {
        let url = &args.url;
        let bad = |m: String| CollectorError::InvalidArgument(m);
        let parsed = reqwest::Url::parse(url).map_err(|e| bad(format!("--prometheus-url {}: {e}", redact_url(url))))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(bad("--prometheus-url must be http:// or https://".into()));
        }
        for (name, v) in [
            ("--prometheus-timeout", args.timeout_s),
            ("--prometheus-wait", args.wait_s),
            ("--prometheus-rate-window", args.rate_window_s),
        ] {
            if !(0.0..=86_400.0).contains(&v) {
                return Err(bad(format!("{name} must be between 0 and 86400 seconds, got {v}")));
            }
        }
        let selector = counters_selector(&args.selector).map_err(bad)?;
        let mut headers = HeaderMap::new();
        let auth = match (&args.token, &args.user) {
            (Some(_), Some(_)) => {
                return Err(bad("--prometheus-token and --prometheus-user exclude each other".into()))
            }
            (Some(token), None) => Some(format!("Bearer {token}")),
            (None, Some(user)) => {
                use base64::Engine as _;
                let pair = format!("{user}:{}", args.password.as_deref().unwrap_or(""));
                Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                ))
            }
            (None, None) => None,
        };
        if let Some(auth) = auth {
            let mut value = HeaderValue::from_str(&auth)
                .map_err(|_| bad("the Prometheus credentials hold characters a header cannot carry".into()))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let mut builder = crate::net::client_builder()
            .default_headers(headers)
            .timeout(Duration::from_secs_f64(args.timeout_s.max(0.1)));
        if let Some(path) = &args.ca_cert {
            let pem = crate::files::read(path, crate::files::Kind::Certificate)
                .map_err(|why| bad(format!("--prometheus-ca-cert {}: {why}", path.display())))?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .map_err(|e| bad(format!("--prometheus-ca-cert {}: {e}", path.display())))?;
            builder = builder.add_root_certificate(cert);
        }
        let client = builder
            .build()
            .map_err(|e| bad(format!("cannot build the Prometheus client: {e}")))?;
        Ok(Prometheus {
            client,
            base: url.trim_end_matches('/').to_string(),
            selector,
            user_selector: args.selector.trim().to_string(),
            wait: Duration::from_secs_f64(args.wait_s),
            rate_window_s: args.rate_window_s,
        })
    }

    /// What the results name this source by: the redacted URL and the selector.
    pub fn display(&self) -> String {
        format!(
            "{}/ {}",
            redact_url(&self.base).trim_end_matches('/'),
            self.user_selector
        )
        .trim_end()
        .to_string()
    }

    /// One instant query at `time_s`; the error says what failed, without secrets.
    async fn query(&self, promql: &str, time_s: f64) -> Result<Vec<ApiSeries>, String> {
        let url = format!("{}/api/v1/query", self.base);
        let response = self
            .client
            .get(&url)
            .query(&[("query", promql), ("time", &format!("{time_s:.3}"))])
            .send()
            .await
            .map_err(|e| {
                format!(
                    "Failed to query Prometheus at {}: {}",
                    redact_url(&self.base),
                    e.without_url()
                )
            })?;
        let status = response.status();
        let body = crate::net::read_text_limited(response, crate::net::MAX_API_BYTES)
            .await
            .map_err(|e| format!("Failed to read Prometheus's answer: {e}"))?;
        match parse_api_answer(&body) {
            Ok(series) => Ok(series),
            Err(e) if status.is_success() => Err(e.to_string()),
            Err(e) => Err(format!("Prometheus returned HTTP {}: {e}", status.as_u16())),
        }
    }

    /// The raw samples of every counter series from `from_s` to `to_s`.
    async fn samples(&self, from_s: f64, to_s: f64) -> Result<Vec<ApiSeries>, String> {
        let range_ms = ((to_s - from_s) * 1000.0).ceil().max(1.0) as u64;
        self.query(&format!("{}[{range_ms}ms]", self.selector), to_s).await
    }

    /// SGLang's gauges averaged over `[start_s, end_s]` (`avg_over_time`, mean over ranks);
    /// `None` when Prometheus holds none.
    async fn sglang_means(&self, start_s: f64, end_s: f64) -> Result<Option<SglangGauges>, String> {
        let range_ms = ((end_s - start_s) * 1000.0).ceil().max(1.0) as u64;
        let mean = |name: &'static str| async move {
            let sel = metric_selector(&self.user_selector, name)?;
            let series = self
                .query(&format!("avg(avg_over_time({sel}[{range_ms}ms]))"), end_s)
                .await?;
            Ok::<Option<f64>, String>(
                series
                    .first()
                    .and_then(|s| s.samples.first())
                    .map(|(_, v)| *v)
                    .filter(|v| v.is_finite()),
            )
        };
        let gauges = SglangGauges {
            accept_length: mean("sglang:spec_accept_length").await?,
            accept_rate: mean("sglang:spec_accept_rate").await?,
            num_steps: mean("sglang:spec_num_steps").await?,
            num_draft_tokens: mean("sglang:spec_num_draft_tokens").await?,
            verify_calls_total: None,
            cap_length: mean("sglang:spec_cap_length").await?,
            block_accept_length: mean("sglang:spec_block_accept_length").await?,
        };
        Ok((gauges != SglangGauges::default()).then_some(gauges))
    }

    /// The window `[start_s, end_s]` (unix seconds): waits (up to `--prometheus-wait`) until
    /// Prometheus holds a sample past the end of every series, then sums the growth. The
    /// result is AISBench's shape; the breakdown comes beside it.
    pub async fn window(&self, start_s: f64, end_s: f64) -> FleetOutcome {
        // Look back far enough to find each series' last sample before the start (a minute
        // covers the usual 15-30 s scrape intervals).
        let from_s = start_s - 60.0;
        let deadline = Instant::now() + self.wait;
        let outcome = loop {
            let attempt = match self.samples(from_s, unix_now_s()).await {
                Ok(series) => fleet_window(&series, start_s, end_s),
                Err(e) => Err(e),
            };
            match attempt {
                Ok(w) if !w.short.is_empty() && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                other => break other,
            }
        };
        let checked = outcome.and_then(|w| {
            if !w.short.is_empty() {
                return Err(format!(
                    "Prometheus had no sample after the window's end within {:.0} s for {} series (raise --prometheus-wait to about one scrape interval)",
                    self.wait.as_secs_f64(),
                    w.short_count
                ));
            }
            Ok((derive_stats(&w.total).map_err(|e| e.to_string())?, w))
        });
        let (status, error, data, window) = match checked {
            Ok((data, w)) => (ResultStatus::Ok, None, Some(data), Some(w)),
            Err(reason) => (ResultStatus::Na, Some(reason), None, None),
        };
        // No counters: SGLang's gauges, averaged over the window, are what there is.
        let sglang = if error.as_deref() == Some(NO_COUNTERS) {
            self.sglang_means(start_s, end_s).await.ok().flatten()
        } else {
            None
        };
        let error = match (&sglang, error) {
            (Some(g), Some(_)) => Some(format!(
                "No spec decode counters in Prometheus for this selector (SGLang exposes only gauges, so no window delta is possible); over the window its gauges averaged: accept length {}, accept rate {}",
                g.accept_length.map_or("N/A".into(), |v| format!("{v:.2}")),
                g.accept_rate.map_or("N/A".into(), |v| format!("{:.2} %", v * 100.0)),
            )),
            (_, error) => error,
        };
        let result = SpecDecodeResult {
            status,
            url: self.display(),
            error,
            data,
            // Prometheus holds series, not one server's two snapshots.
            raw: RawPhases {
                before: None,
                after: None,
            },
        };
        FleetOutcome { result, window, sglang }
    }

    /// Per-instance rates now, one query per counter (rate() drops the metric name):
    /// `sum by (instance[, position]) (rate(<counter>[window]))`.
    async fn rates(&self) -> Result<BTreeMap<String, SpecCounterRates>, String> {
        let window_ms = (self.rate_window_s * 1000.0).round().max(1.0) as u64;
        let family_query = |family: &str, by: &str| {
            selector_for(&self.user_selector, family).map(|sel| format!("sum by ({by}) (rate({sel}[{window_ms}ms]))"))
        };
        let queries = [
            family_query("drafts", "instance")?,
            family_query("draft_tokens", "instance")?,
            family_query("accepted_tokens", "instance")?,
            family_query("accepted_tokens_per_pos", "instance, position")?,
        ];
        let now_s = unix_now_s();
        let mut out: BTreeMap<String, SpecCounterRates> = BTreeMap::new();
        // One query after another, each answer folded and dropped before the next is asked:
        // at most one answer is held at a time, so the peak does not depend on how several
        // large answers happen to interleave.
        for (family, query) in queries.iter().enumerate() {
            for s in self.query(query, now_s).await? {
                let Some(&(_, v)) = s.samples.first() else { continue };
                if !v.is_finite() {
                    continue;
                }
                let r = out.entry(s.label("instance").to_string()).or_default();
                match family {
                    0 => r.drafts_per_s += v,
                    1 => r.drafted_per_s += v,
                    2 => r.accepted_per_s += v,
                    _ => {
                        if let Ok(pos) = s.label("position").parse::<u32>() {
                            *r.per_pos_per_s.entry(pos).or_default() += v;
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Rates of one instance's counters (per second).
#[derive(Debug, Default, Serialize)]
struct SpecCounterRates {
    drafts_per_s: f64,
    drafted_per_s: f64,
    accepted_per_s: f64,
    per_pos_per_s: BTreeMap<u32, f64>,
}

/// Endpoint name of an instance's live points.
fn endpoint_of(instance: &str) -> String {
    format!("{LABEL}/{instance}")
}

/// Query the per-instance rates every `interval` until `stop`; each point goes to `hub` as it
/// comes, and the whole timeline is returned.
pub async fn sample_live(
    prometheus: Prometheus,
    interval: Duration,
    started: Instant,
    hub: LiveHub,
    stop: watch::Receiver<bool>,
) -> Timeline {
    let mut timeline = Timeline::default();
    // Prometheus's window is read once the run has ended: no last query at the stop.
    let mut ticks = Ticks::new(interval, stop, false);
    while ticks.next().await {
        let t_s = started.elapsed().as_secs_f64();
        let point = |endpoint: String| TimelinePoint {
            endpoint,
            t_s,
            interval_s: interval.as_secs_f64(),
            accepted_per_s: 0.0,
            drafted_per_s: 0.0,
            drafts_per_s: 0.0,
            acceptance_rate: None,
            acceptance_length: None,
            per_position: BTreeMap::new(),
            error: None,
        };
        let points: Vec<TimelinePoint> = match prometheus.rates().await {
            Err(e) => vec![TimelinePoint {
                error: Some(e),
                ..point(LABEL.to_string())
            }],
            Ok(by_instance) => by_instance
                .into_iter()
                .map(|(instance, r)| {
                    let drafts = r.drafts_per_s;
                    TimelinePoint {
                        accepted_per_s: r.accepted_per_s,
                        drafted_per_s: r.drafted_per_s,
                        drafts_per_s: drafts,
                        acceptance_rate: acceptance_rate_pct(r.accepted_per_s, r.drafted_per_s),
                        acceptance_length: acceptance_length(r.accepted_per_s, drafts),
                        per_position: if drafts > 0.0 {
                            r.per_pos_per_s.iter().map(|(p, v)| (*p, v / drafts)).collect()
                        } else {
                            BTreeMap::new()
                        },
                        ..point(endpoint_of(&instance))
                    }
                })
                .collect(),
        };
        for p in points {
            hub.note_point(Source::Prometheus, p.clone()).await;
            timeline.points.push(p);
        }
    }
    timeline
}

/// The breakdown table under the Prometheus block: one row per instance, engine and model.
pub fn breakdown_table(w: &FleetWindow) -> String {
    use comfy_table::{presets, CellAlignment, Table};
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "by",
        "series",
        "acceptance rate %",
        "acceptance length",
        "drafts",
        "draft tokens",
        "accepted tokens",
    ]);
    let groups: [(&str, &BTreeMap<String, SpecCounters>); 3] = [
        ("instance", &w.by_instance),
        ("engine", &w.by_engine),
        ("model", &w.by_model),
    ];
    for (by, map) in groups {
        for (key, c) in map {
            let (rate, length) = derive_stats(c).map_or(("—".to_string(), "—".to_string()), |d| {
                (d.rate_text(), d.length_text())
            });
            table.add_row(vec![
                by.to_string(),
                key.clone(),
                rate,
                length,
                c.num_drafts.to_string(),
                c.num_draft_tokens.to_string(),
                c.num_accepted_tokens.to_string(),
            ]);
        }
    }
    for i in 2..7 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("{table}\n")
}
