//! `speclens scrape URL [--watch]`: a server's spec-decode counters and the rates they imply,
//! once or every few seconds (with the growth between scrapes and any counter reset).

use std::time::Duration;

use speclens_shared::scrape::{derive_stats, parse_metrics, IncreaseAccumulator, ScrapeFailure};
use tokio::time::Instant;

use crate::bench::scrape::{fetch_text, host_port};
use crate::error::CollectorError;

/// `speclens scrape URL [--watch]`.
pub async fn run(url: &str, watch: bool, interval_s: f64) -> Result<(), CollectorError> {
    let url = if url.trim_end_matches('/').ends_with("/metrics") {
        url.to_string()
    } else {
        let (label, scheme) = host_port(url)?;
        format!("{scheme}://{label}/metrics")
    };
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| CollectorError::InvalidArgument(e.to_string()))?;
    let mut acc = IncreaseAccumulator::default();
    let mut last: Option<Instant> = None;
    loop {
        let at = Instant::now();
        match fetch_text(&client, &url)
            .await
            .and_then(|t| parse_metrics(&t).map_err(ScrapeFailure::Invalid))
        {
            Err(e) => crate::outln!("{url}: {e}")?,
            Ok(snapshot) => {
                if let Some(c) = &snapshot.counters {
                    let t = &c.total;
                    crate::outln!(
                        "{url}: drafts {} · draft tokens {} · accepted {} · per position {:?}",
                        t.num_drafts,
                        t.num_draft_tokens,
                        t.num_accepted_tokens,
                        t.accepted_per_pos
                    )?;
                    match derive_stats(t) {
                        Ok(d) => crate::outln!(
                            "  since start: acceptance rate {:.2} % · acceptance length {:.2}",
                            d.acceptance_rate,
                            d.acceptance_length
                        )?,
                        Err(reason) => crate::outln!("  since start: {reason}")?,
                    }
                    let step = acc.observe(c);
                    if let Some(prev) = last {
                        let dt = (at - prev).as_secs_f64();
                        match derive_stats(&step) {
                            Ok(d) => crate::outln!(
                                "  last {dt:.1} s: {:.1} accepted/s · {:.1} drafted/s · rate {:.2} % · length {:.2}",
                                step.num_accepted_tokens as f64 / dt,
                                step.num_draft_tokens as f64 / dt,
                                d.acceptance_rate,
                                d.acceptance_length
                            )?,
                            Err(_) => crate::outln!("  last {dt:.1} s: No traffic")?,
                        }
                    }
                    for r in acc.resets.drain(..) {
                        crate::outln!("  reset: {r}")?;
                    }
                } else if let Some(g) = &snapshot.sglang {
                    crate::outln!(
                        "{url}: SGLang gauges: accept length {:?} · accept rate {:?} · verify calls {:?}",
                        g.accept_length,
                        g.accept_rate,
                        g.verify_calls_total
                    )?;
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
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}
