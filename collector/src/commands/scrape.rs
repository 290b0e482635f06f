//! `speclens scrape URL [--watch]`: a server's spec-decode counters and the rates they imply,
//! once or every few seconds (with the growth between scrapes and any counter reset).

use speclens_shared::engine::Engine;
use std::time::Duration;

use speclens_shared::scrape::{
    derive, derive_since_start, parse_metrics, IncreaseAccumulator, ScrapeFailure, SpecCounters, WindowFacts,
};
use tokio::time::Instant;

use crate::bench::scrape::{fetch_text, host_port, resolve_url};
use crate::error::CollectorError;

/// `speclens scrape URL [--watch]`.
pub async fn run(url: &str, watch: bool, interval_s: f64) -> Result<(), CollectorError> {
    let url = if url.trim_end_matches('/').ends_with("/metrics") {
        url.to_string()
    } else {
        let (label, scheme) = host_port(url)?;
        format!("{scheme}://{label}/metrics")
    };
    let client = crate::net::client_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| CollectorError::InvalidArgument(e.to_string()))?;
    let (url, note) = resolve_url(&client, &url).await;
    if let Some(note) = note {
        crate::statusln!("speclens: {note}");
    }
    let mut acc = IncreaseAccumulator::default();
    let mut last: Option<Instant> = None;
    loop {
        let at = Instant::now();
        match fetch_text(&client, &url)
            .await
            .and_then(|t| parse_metrics(&t).map_err(ScrapeFailure::Invalid))
        {
            // One scrape that fails is the command failing; a watch keeps trying.
            Err(e) if !watch => return Err(CollectorError::Server(format!("{}: {e}", crate::net::redact_url(&url)))),
            Err(e) => crate::outln!("{url}: {e}")?,
            Ok(snapshot) => {
                if let Some(c) = &snapshot.counters {
                    let t = &c.total;
                    crate::outln!("{url}: {}", counters_line(c.schema(), t))?;
                    if let Some(largest) = c.rounded_max {
                        crate::outln!(
                            "  note: llama.cpp printed counters up to {largest} with 6 significant digits (rounded)"
                        )?;
                    }
                    match derive_since_start(c) {
                        Ok(d) => crate::outln!(
                            "  since start: acceptance rate {} % · acceptance length {}",
                            d.rate_text(),
                            d.length_text()
                        )?,
                        Err(reason) => crate::outln!("  since start: {reason}")?,
                    }
                    let step = acc.observe(c);
                    if let Some(prev) = last {
                        let dt = (at - prev).as_secs_f64();
                        match derive(c.schema(), &step, &WindowFacts::of(c)) {
                            Ok(d) => crate::outln!(
                                "  last {dt:.1} s: {:.1} accepted/s · {:.1} drafted/s · rate {} % · length {}",
                                step.num_accepted_tokens as f64 / dt,
                                step.num_draft_tokens as f64 / dt,
                                d.rate_text(),
                                d.length_text()
                            )?,
                            Err(_) => crate::outln!("  last {dt:.1} s: No traffic")?,
                        }
                    }
                    for r in std::mem::take(&mut acc.resets).lines("", "counter resets") {
                        crate::outln!("  reset: {r}")?;
                    }
                } else if let Some(g) = &snapshot.sglang {
                    crate::outln!(
                        "{url}: SGLang gauges: accept length {:?} · accept rate {:?} · verify calls {:?}",
                        g.accept_length,
                        g.accept_rate,
                        g.verify_calls_total
                    )?;
                    if !snapshot.sglang_missing.is_empty() {
                        crate::outln!("  no window delta: {} missing", snapshot.sglang_missing.join(", "))?;
                    }
                } else {
                    crate::outln!("{url}: {}", ScrapeFailure::NoSpecMetrics)?;
                }
            }
        }
        last = Some(at);
        if !watch {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs_f64(interval_s.max(0.1))) => {}
            _ = crate::net::stop_signal() => return Ok(()),
        }
    }
}

/// One scrape's counters in the engine's own terms.
fn counters_line(schema: Engine, t: &SpecCounters) -> String {
    match schema {
        Engine::Vllm | Engine::LlamaCpp => format!(
            "drafts {} · draft tokens {} · accepted {} · per position {:?}",
            t.num_drafts, t.num_draft_tokens, t.num_accepted_tokens, t.accepted_per_pos
        ),
        Engine::Trtllm => format!(
            "draft tokens {} · accepted {} (TensorRT-LLM counts no drafts)",
            t.num_draft_tokens, t.num_accepted_tokens
        ),
        Engine::Sglang => format!(
            "verify calls {} · generation tokens {} · requests {}",
            t.num_drafts,
            t.generation_tokens.unwrap_or(0),
            t.requests.unwrap_or(0)
        ),
    }
}
