//! A sweep's arms checked before its first point: every server answers (and lists a model),
//! and each arm's role (speculative or plain) matches what its server's `/metrics` shows.

use std::time::Duration;

use speclens_shared::scrape::ScrapeFailure;
use speclens_shared::sweep::arms::BASE_ARM;

use crate::bench;
use crate::error::CollectorError;

/// The arms' set-up, checked before anything is measured (swapped URLs would otherwise measure
/// a crossing of the wrong sign and recommend "speculation off"): the warnings to keep, or an
/// error unless `--allow-mixed-arms`.
pub(super) async fn check_arms(
    arms: &[(String, String)],
    target: &bench::plan::Target,
    allow_mixed_arms: bool,
) -> Result<Vec<String>, CollectorError> {
    // Every arm's server answers (and lists a model, without --model) before the first point:
    // a dead base URL is not found after the spec arm's points have run.
    let mut dead = Vec::new();
    for (name, url) in arms {
        let mut target = target.clone();
        target.urls = vec![url.clone()];
        if let Err(e) = bench::check_serves(&target).await {
            dead.push(format!("  arm {name}: {e}"));
        }
    }
    if !dead.is_empty() {
        return Err(CollectorError::Server(format!(
            "{} before the points it would serve, so none of them was started:\n{}",
            if dead.len() == 1 {
                "an arm's server fails its check"
            } else {
                "arms' servers fail their check"
            },
            dead.join("\n")
        )));
    }
    let warnings = mismatched_arms(arms).await;
    if !warnings.is_empty() {
        let lines: Vec<String> = warnings.iter().map(|w| format!("  {w}")).collect();
        if !allow_mixed_arms {
            return Err(CollectorError::InvalidArgument(format!(
                "the arms do not match their servers:\n{}\n(check the URLs; --allow-mixed-arms goes on and keeps this warning in sweep.json)",
                lines.join("\n")
            )));
        }
        crate::console::status(&format!(
            "Warning: the arms do not match their servers (--allow-mixed-arms):\n{}\n",
            lines.join("\n")
        ));
    }
    Ok(warnings)
}

/// What an arm's `/metrics` says of its role before the sweep sends anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Spec-decode counters (or SGLang's gauges) are exported: the server speculates.
    Speculates,
    /// The metrics answer without any: the server does not.
    Plain,
    /// No answer to judge by (unreachable, malformed): the sweep's own points will say why.
    Unknown,
}

/// Each arm's role as its server shows it against the role it was given: a sentence per
/// mismatch, naming the arm and what was seen.
async fn mismatched_arms(arms: &[(String, String)]) -> Vec<String> {
    let Ok(client) = crate::net::client_builder().timeout(Duration::from_secs(10)).build() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (name, url) in arms {
        let Ok(endpoints) = bench::scrape::endpoints(std::slice::from_ref(url), &[]) else {
            continue;
        };
        let Some(endpoint) = endpoints.first() else { continue };
        let (metrics, _) = bench::scrape::resolve_url(&client, &endpoint.url).await;
        let role = match bench::scrape::fetch(&client, &metrics).await {
            Ok(_) => Role::Speculates,
            Err(ScrapeFailure::NoSpecMetrics) => Role::Plain,
            Err(_) => Role::Unknown,
        };
        let plain = name == BASE_ARM;
        let redacted = crate::net::redact_url(&metrics);
        match (plain, role) {
            (true, Role::Speculates) => found.push(format!(
                "arm {name} is given as plain (--base-url) but its server speculates: {redacted} exports spec-decode counters"
            )),
            (false, Role::Plain) => found.push(format!(
                "arm {name} is given as speculative but its server does not speculate: {redacted} exports no spec-decode counters"
            )),
            _ => {}
        }
    }
    found
}
