//! Prometheus rule files from the collector's formulas: recording rules for every spec-decode
//! figure per engine (so dashboards and alerts share one definition) and alerting rules a team
//! can adopt: acceptance length under a floor or under its own trailing baseline, drafts stopped
//! while requests go on, and the engine's load past the break-even a sweep measured.

use crate::engine::Engine;
use crate::error::Error;
use crate::scrape::formulas::Figure;

use super::promql::{derived_rules, figure_expr, recorded_name, Activity, Recording, Scope, ENGINE_LABEL, GROUP};

/// The break-even a sweep measured, for the load alert.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadCutoff {
    /// Requests in flight from which the plain server was measured ahead.
    pub concurrency: f64,
    /// Where it comes from, for the alert's description (`sweep "qwen-k3" (k3 against plain)`).
    pub source: String,
}

/// What `speclens rules` writes.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSettings {
    /// The engines whose rules are written.
    pub engines: Vec<Engine>,
    /// Label matchers and the rate window.
    pub scope: Scope,
    /// The groups' evaluation interval (Prometheus's global one when `None`).
    pub interval: Option<String>,
    /// The acceptance-length floor of the first alert.
    pub min_acceptance_length: f64,
    /// The trailing baseline's range (`1d`).
    pub baseline: String,
    /// How far under its baseline (percent) the length may fall before the second alert.
    pub baseline_drop_pct: f64,
    /// How long a condition holds before an alert fires (`10m`).
    pub hold: String,
    /// The measured break-even, when a sweep gave one.
    pub cutoff: Option<LoadCutoff>,
}

impl RuleSettings {
    /// The defaults for `engines` and `scope`: a floor of 1.5 tokens a step, 20 % under the last
    /// day's mean, held for 10 minutes.
    pub fn new(engines: Vec<Engine>, scope: Scope) -> RuleSettings {
        RuleSettings {
            engines,
            scope,
            interval: None,
            min_acceptance_length: 1.5,
            baseline: "1d".into(),
            baseline_drop_pct: 20.0,
            hold: "10m".into(),
            cutoff: None,
        }
    }

    /// Errors naming the setting that PromQL or Prometheus would refuse.
    pub fn check(&self) -> Result<(), Error> {
        for (what, d) in [
            ("the rate window", Some(&self.scope.window)),
            ("the baseline", Some(&self.baseline)),
            ("the hold", Some(&self.hold)),
            ("the evaluation interval", self.interval.as_ref()),
        ] {
            if let Some(d) = d {
                check_duration(what, d)?;
            }
        }
        if !(self.min_acceptance_length.is_finite() && self.min_acceptance_length >= 1.0) {
            return Err(Error::Rules(format!(
                "the acceptance-length floor {} is not a length (at least 1.0)",
                self.min_acceptance_length
            )));
        }
        if !(self.baseline_drop_pct > 0.0 && self.baseline_drop_pct < 100.0) {
            return Err(Error::Rules(format!(
                "the drop under the baseline {} % is not between 0 and 100",
                self.baseline_drop_pct
            )));
        }
        if self.engines.is_empty() {
            return Err(Error::Rules("no engine to write rules for".into()));
        }
        Ok(())
    }
}

/// A PromQL duration: one or more `<digits><unit>`, the units largest first and each at most
/// once (`y w d h m s ms`: `1h30m`), and more than zero, as Prometheus parses one.
pub fn check_duration(what: &str, d: &str) -> Result<(), Error> {
    let bad = || {
        Error::Rules(format!(
            "{what} {d:?} is not a Prometheus duration (e.g. 30s, 5m, 1h30m, 1d)"
        ))
    };
    const UNITS: [&str; 7] = ["y", "w", "d", "h", "ms", "m", "s"];
    // The units' order of size: `ms` is tried before `m` when reading, but is the smallest.
    let rank = |u: &str| {
        ["y", "w", "d", "h", "m", "s", "ms"]
            .iter()
            .position(|x| *x == u)
            .unwrap_or(0)
    };
    let (mut rest, mut last, mut total): (&str, Option<usize>, u128) = (d, None, 0);
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let value: u128 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit = UNITS.into_iter().find(|u| rest.starts_with(u)).ok_or_else(bad)?;
        let r = rank(unit);
        if last.is_some_and(|l| r <= l) {
            return Err(bad());
        }
        last = Some(r);
        total = total.saturating_add(value);
        rest = &rest[unit.len()..];
    }
    if total == 0 {
        return Err(bad());
    }
    Ok(())
}

/// A YAML scalar: the JSON string, which YAML reads as the same double-quoted scalar.
/// `text` where Prometheus's alert templates read it as text: a space between two braces in a
/// row, so a name from a sweep folder cannot open a Go template action (`{{ query "…" }}`).
fn template_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = None;
    for c in text.chars() {
        if (c == '{' || c == '}') && last == Some(c) {
            out.push(' ');
        }
        out.push(c);
        last = Some(c);
    }
    out
}

fn q(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// One recording rule in YAML.
fn record(out: &mut String, rule: &Recording) {
    out.push_str(&format!(
        "      - record: {}\n        expr: {}\n",
        rule.record,
        q(&rule.expr)
    ));
    if !rule.labels.is_empty() {
        out.push_str("        labels:\n");
        for (k, v) in &rule.labels {
            out.push_str(&format!("          {k}: {}\n", q(v)));
        }
    }
}

/// One alerting rule.
fn alert(out: &mut String, name: &str, expr: &str, hold: &str, summary: &str, description: &str) {
    out.push_str(&format!(
        "      - alert: {name}\n        expr: {}\n        for: {hold}\n        labels:\n          severity: warning\n        annotations:\n          summary: {}\n          description: {}\n",
        q(expr),
        q(summary),
        q(description)
    ));
}

/// The recording rules, one group (evaluated in order, so the derived series read this
/// evaluation's figures): every figure and activity family per engine, then the derived ones.
pub fn recording_rules(settings: &RuleSettings) -> Vec<Recording> {
    let scope = &settings.scope;
    let w = &scope.window;
    let mut rules = Vec::new();
    for engine in &settings.engines {
        let labels = vec![(ENGINE_LABEL.to_string(), engine.name().to_string())];
        let exprs = Figure::ALL
            .into_iter()
            .filter_map(|figure| Some((recorded_name(figure, w), figure_expr(*engine, figure, scope)?)))
            .chain(
                Activity::ALL
                    .into_iter()
                    .filter_map(|a| Some((a.recorded_name(w), a.expr(*engine, scope)?))),
            );
        for (record, expr) in exprs {
            rules.push(Recording {
                record,
                expr,
                labels: labels.clone(),
            });
        }
    }
    rules.extend(derived_rules(w));
    rules
}

/// The alerting rules, `(name, expr, summary, description)`.
pub fn alerting_rules(settings: &RuleSettings) -> Vec<(&'static str, String, String, String)> {
    let w = &settings.scope.window;
    let length = recorded_name(Figure::AcceptanceLength, w);
    let drafts = recorded_name(Figure::DraftsPerS, w);
    let keep = 1.0 - settings.baseline_drop_pct / 100.0;
    let mut out = vec![
        (
            "SpecDecodeAcceptanceLengthLow",
            format!("{length} < {}", settings.min_acceptance_length),
            "Acceptance length on {{ $labels.instance }} is {{ $value | printf \"%.2f\" }} tokens a step".to_string(),
            format!(
                "Over the last {w}, each verify step emitted fewer than {} tokens (1 + accepted ÷ drafts; speclens's definition, docs/METRICS.md). Speculation may cost more than it returns: check the drafter and the workload.",
                settings.min_acceptance_length
            ),
        ),
        (
            "SpecDecodeAcceptanceLengthBelowBaseline",
            format!("{length} < {keep} * avg_over_time({length}[{}])", settings.baseline),
            "Acceptance length on {{ $labels.instance }} fell under its own baseline".to_string(),
            format!(
                "The acceptance length over the last {w} is more than {} % under its mean over the last {}: the drafter or the traffic changed.",
                settings.baseline_drop_pct, settings.baseline
            ),
        ),
        (
            "SpecDecodeDraftsStopped",
            format!(
                "({drafts} == 0) and on ({GROUP}) (({} > 0) or ({} > 0))",
                Activity::OutputTokensPerS.recorded_name(w),
                Activity::RequestsFinishedPerS.recorded_name(w)
            ),
            "No drafts on {{ $labels.instance }} while it serves requests".to_string(),
            format!(
                "Over the last {w} the server drafted nothing while output tokens or finished requests grew: speculation is off (TensorRT-LLM's SpeculationGate, a per-batch-size schedule at 0, a drafter that failed)."
            ),
        ),
    ];
    if let Some(cut) = &settings.cutoff {
        out.push((
            "SpecDecodeLoadPastBreakEven",
            format!(
                "{} > {}",
                Activity::RequestsRunning.recorded_name(w),
                cut.concurrency
            ),
            "{{ $labels.instance }} runs {{ $value }} requests, past the measured break-even".to_string(),
            format!(
                "{} measured the plain server ahead from {} requests in flight: past that load, speculation costs throughput. Consider a per-batch-size schedule or turning speculation off.",
                template_literal(&cut.source),
                cut.concurrency
            ),
        ));
    }
    out
}

/// The rule file: the recording group, then the alerting group.
pub fn rule_file(settings: &RuleSettings, written_by: &str) -> Result<String, Error> {
    settings.check()?;
    let mut out = format!(
        "# Prometheus rules for speculative decoding, from speclens's own formulas (docs/METRICS.md §1.6).\n# Written by {written_by}.\n# Check: promtool check rules <this file>. Load: rule_files in prometheus.yml.\ngroups:\n"
    );
    let interval = settings
        .interval
        .as_ref()
        .map(|i| format!("    interval: {i}\n"))
        .unwrap_or_default();
    out.push_str(&format!("  - name: speclens-spec-decode\n{interval}    rules:\n"));
    for rule in recording_rules(settings) {
        record(&mut out, &rule);
    }
    out.push_str(&format!(
        "  - name: speclens-spec-decode-alerts\n{interval}    rules:\n"
    ));
    for (name, expr, summary, description) in alerting_rules(settings) {
        alert(&mut out, name, &expr, &settings.hold, &summary, &description);
    }
    Ok(out)
}

/// Every record name the rules write (the dashboard's queries must use only these).
pub fn recorded_names(settings: &RuleSettings) -> std::collections::BTreeSet<String> {
    recording_rules(settings).into_iter().map(|r| r.record).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> RuleSettings {
        RuleSettings::new(
            Engine::ALL.to_vec(),
            Scope {
                matchers: String::new(),
                window: "5m".into(),
            },
        )
    }

    #[test]
    fn durations_and_thresholds_are_checked() {
        assert!(check_duration("w", "1h30m").is_ok());
        assert!(check_duration("w", "250ms").is_ok());
        assert!(check_duration("w", "1d2h3m4s5ms").is_ok());
        for bad in ["", "5", "m", "5 m", "-5m", "5mm", "1s1m", "5m5m", "0s", "0m0s"] {
            assert!(check_duration("w", bad).is_err(), "{bad}");
        }
        let mut s = settings();
        s.min_acceptance_length = 0.5;
        assert!(s.check().unwrap_err().to_string().contains("floor 0.5"));
        let mut s = settings();
        s.baseline_drop_pct = 100.0;
        assert!(s.check().is_err());
    }

    #[test]
    fn the_file_has_every_engines_figures_and_the_alerts() {
        let mut s = settings();
        s.cutoff = Some(LoadCutoff {
            concurrency: 24.0,
            source: "sweep \"x\"".into(),
        });
        let text = rule_file(&s, "speclens test").unwrap();
        for engine in Engine::ALL {
            assert!(
                text.contains(&format!("serving_engine: \"{}\"", engine.name())),
                "{engine:?}"
            );
        }
        for alert in [
            "SpecDecodeAcceptanceLengthLow",
            "SpecDecodeAcceptanceLengthBelowBaseline",
            "SpecDecodeDraftsStopped",
            "SpecDecodeLoadPastBreakEven",
        ] {
            assert!(text.contains(&format!("- alert: {alert}\n")), "{alert}");
        }
        assert!(text.contains("speclens:requests_running > 24"));
        // Every expression is one YAML double-quoted scalar on its line.
        for line in text.lines().filter(|l| l.trim_start().starts_with("expr: ")) {
            let v = line.trim_start().trim_start_matches("expr: ");
            let back: String = serde_json::from_str(v).unwrap();
            assert!(!back.is_empty());
        }
        assert!(recorded_names(&s).contains("speclens:spec_decode_implied_alpha:rate5m"));
    }

    #[test]
    fn a_sweep_s_name_cannot_open_a_template_action_in_the_alert() {
        assert_eq!(
            template_literal("sweep \"{{ query \"up\" }}\""),
            "sweep \"{ { query \"up\" } }\""
        );
        assert_eq!(template_literal("{{{x}}}"), "{ { {x} } }");
        assert_eq!(template_literal("k3 {a} plain"), "k3 {a} plain");
    }
}
