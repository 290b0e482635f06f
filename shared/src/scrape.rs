//! Server-scrape path (docs/METRICS.md §1): spec-decode counters read from a `/metrics` text, their delta
//! over a benchmark window, reset-aware accumulation for live sampling, the AISBench-compatible
//! result value and its console block.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::prom::{self, Sample};

/// Reason given when the window saw no drafted tokens (AISBench's wording).
pub const NO_ACTIVITY: &str = "No spec decode activity detected during benchmark window";

/// Prefixes under which the vLLM spec-decode counter schema is exposed (llama.cpp copies it).
pub const COUNTER_PREFIXES: [&str; 2] = ["vllm:", "llamacpp:"];

const DRAFTS: &str = "spec_decode_num_drafts_total";
const DRAFT_TOKENS: &str = "spec_decode_num_draft_tokens_total";
const ACCEPTED: &str = "spec_decode_num_accepted_tokens_total";
const PER_POS: &str = "spec_decode_num_accepted_tokens_per_pos_total";

/// The four spec-decode counters of one label set, or their sum over label sets.
///
/// Field names are AISBench's `raw.before` / `raw.after` keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecCounters {
    pub num_drafts: u64,
    pub num_draft_tokens: u64,
    pub num_accepted_tokens: u64,
    /// Drafts whose first `i + 1` tokens were all accepted, by 0-based position `i`.
    pub accepted_per_pos: BTreeMap<u32, u64>,
}

impl SpecCounters {
    /// Counters from the three totals and the per-position values for positions 0, 1, ….
    pub fn new(num_drafts: u64, num_draft_tokens: u64, num_accepted_tokens: u64, per_pos: &[u64]) -> SpecCounters {
        SpecCounters {
            num_drafts,
            num_draft_tokens,
            num_accepted_tokens,
            accepted_per_pos: per_pos.iter().enumerate().map(|(i, v)| (i as u32, *v)).collect(),
        }
    }

    /// Add another set of counters (or deltas) to these.
    pub fn add(&mut self, other: &SpecCounters) {
        // Saturating: counts come from servers, and a wrapped sum would be a silent lie.
        self.num_drafts = self.num_drafts.saturating_add(other.num_drafts);
        self.num_draft_tokens = self.num_draft_tokens.saturating_add(other.num_draft_tokens);
        self.num_accepted_tokens = self.num_accepted_tokens.saturating_add(other.num_accepted_tokens);
        for (pos, v) in &other.accepted_per_pos {
            let slot = self.accepted_per_pos.entry(*pos).or_default();
            *slot = slot.saturating_add(*v);
        }
    }
}

/// Spec-decode counters of one scrape: the server-level sum and the per-label-set split.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterSet {
    /// `vllm:` or `llamacpp:`.
    pub prefix: String,
    /// Sum over all label sets (the server-level figure).
    pub total: SpecCounters,
    /// Per label set (every label but `position`), keyed by its canonical text
    /// `engine="0",model_name="Qwen/Qwen3-8B"`.
    pub series: BTreeMap<String, SpecCounters>,
}

impl CounterSet {
    /// Sum the series by the value of one label (`engine`, `model_name`, `instance`…);
    /// series without the label are grouped under the empty string.
    pub fn by_label(&self, label: &str) -> BTreeMap<String, SpecCounters> {
        let mut out: BTreeMap<String, SpecCounters> = BTreeMap::new();
        for (key, counters) in &self.series {
            let value = label_value(key, label).unwrap_or_default();
            out.entry(value).or_default().add(counters);
        }
        out
    }

    fn counter_name(&self, family: &str, series: &str) -> String {
        format!("{}{}{{{}}}", self.prefix, family, series)
    }
}

/// SGLang's spec-decode gauges (no cumulative counters exist there, so no delta is possible).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SglangGauges {
    /// `sglang:spec_accept_length`, mean over label sets (ranks).
    pub accept_length: Option<f64>,
    /// `sglang:spec_accept_rate` (a fraction), mean over label sets.
    pub accept_rate: Option<f64>,
    /// `sglang:spec_num_steps`, mean over label sets.
    pub num_steps: Option<f64>,
    /// `sglang:spec_num_draft_tokens`, mean over label sets.
    pub num_draft_tokens: Option<f64>,
    /// `sglang:spec_verify_calls_total`, summed over label sets.
    pub verify_calls_total: Option<f64>,
}

/// Everything spec-decode related in one scrape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsSnapshot {
    pub counters: Option<CounterSet>,
    pub sglang: Option<SglangGauges>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Family {
    Drafts,
    DraftTokens,
    Accepted,
    PerPos,
}

pub(crate) fn family_of(name: &str) -> Option<(&'static str, Family)> {
    let (prefix, rest) = COUNTER_PREFIXES
        .iter()
        .find_map(|p| name.strip_prefix(p).map(|rest| (*p, rest)))?;
    let family = match rest {
        DRAFTS => Family::Drafts,
        DRAFT_TOKENS => Family::DraftTokens,
        ACCEPTED => Family::Accepted,
        PER_POS => Family::PerPos,
        _ => return None,
    };
    Some((prefix, family))
}

/// Canonical text of a sample's labels minus `position`: sorted by name, values escaped as in
/// the exposition format.
fn series_key(sample: &Sample<'_>) -> String {
    let mut labels: Vec<_> = sample.labels().filter(|(n, _)| *n != "position").collect();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let mut key = String::new();
    for (i, (name, value)) in labels.iter().enumerate() {
        if i > 0 {
            key.push(',');
        }
        key.push_str(name);
        key.push_str("=\"");
        for c in value.chars() {
            match c {
                '\\' => key.push_str("\\\\"),
                '"' => key.push_str("\\\""),
                '\n' => key.push_str("\\n"),
                c => key.push(c),
            }
        }
        key.push('"');
    }
    key
}

/// A series key with its `position` label added back, for messages.
fn with_position(key: &str, pos: u32) -> String {
    if key.is_empty() {
        format!("position=\"{pos}\"")
    } else {
        format!("{key},position=\"{pos}\"")
    }
}

/// The unescaped value of `label` in a canonical series key.
fn label_value(key: &str, label: &str) -> Option<String> {
    let text = format!("m{{{key}}} 0");
    let sample = prom::samples(&text).next()?.ok()?;
    sample.label(label).map(|v| v.into_owned())
}

/// A counter value as an exact non-negative integer; NaN means "skip this sample".
fn counter_value(sample: &Sample<'_>, key: &str) -> Result<Option<u64>, Error> {
    let v = sample.value;
    let fail = |message: &str| Error::CounterValue {
        metric: sample.name.to_string(),
        labels: key.to_string(),
        message: message.to_string(),
    };
    if v.is_nan() {
        return Ok(None);
    }
    if v.is_infinite() {
        return Err(fail("cannot convert infinity to a counter value"));
    }
    if v < 0.0 {
        return Err(fail("negative counter value"));
    }
    if v.fract() != 0.0 || v >= 18_446_744_073_709_551_616.0 {
        return Err(fail("counter value is not a whole number of tokens"));
    }
    Ok(Some(v as u64))
}

#[derive(Default)]
struct GaugeMean {
    sum: f64,
    n: usize,
}

impl GaugeMean {
    fn push(&mut self, v: f64) {
        if v.is_finite() {
            self.sum += v;
            self.n += 1;
        }
    }
    fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// Parse a Prometheus text exposition into its spec-decode snapshot.
///
/// Only `_total` samples of the four counter families are read (the `_created` gauges that
/// follow them are not counters); every other line is checked for syntax and ignored.
pub fn parse_metrics(text: &str) -> Result<MetricsSnapshot, Error> {
    let mut series: BTreeMap<String, SpecCounters> = BTreeMap::new();
    let mut seen: BTreeSet<(Family, String, u32)> = BTreeSet::new();
    let mut families: BTreeSet<Family> = BTreeSet::new();
    let mut prefix: Option<&'static str> = None;
    let mut gauges: [GaugeMean; 4] = Default::default();
    let mut verify_calls: Option<f64> = None;

    for sample in prom::samples(text) {
        let sample = sample?;
        if let Some(gauge) = sample.name.strip_prefix("sglang:") {
            match gauge {
                "spec_accept_length" => gauges[0].push(sample.value),
                "spec_accept_rate" => gauges[1].push(sample.value),
                "spec_num_steps" => gauges[2].push(sample.value),
                "spec_num_draft_tokens" => gauges[3].push(sample.value),
                "spec_verify_calls_total" if sample.value.is_finite() => {
                    *verify_calls.get_or_insert(0.0) += sample.value
                }
                _ => {}
            }
            continue;
        }
        let Some((this_prefix, family)) = family_of(sample.name) else {
            continue;
        };
        if *prefix.get_or_insert(this_prefix) != this_prefix {
            return Err(Error::Exposition {
                line: sample.line,
                message: "both vllm: and llamacpp: spec decode counters in one exposition".into(),
            });
        }
        let key = series_key(&sample);
        let position = match family {
            Family::PerPos => {
                let Some(pos) = sample.label("position") else {
                    return Err(Error::Exposition {
                        line: sample.line,
                        message: format!("{} sample without a position label", sample.name),
                    });
                };
                pos.parse::<u32>().map_err(|_| Error::Exposition {
                    line: sample.line,
                    message: format!("position label {pos:?} is not a draft position"),
                })?
            }
            _ => 0,
        };
        if !seen.insert((family, key.clone(), position)) {
            let labels = match family {
                Family::PerPos => with_position(&key, position),
                _ => key,
            };
            return Err(Error::DuplicateSample {
                metric: sample.name.to_string(),
                labels,
            });
        }
        let Some(value) = counter_value(&sample, &key)? else {
            continue;
        };
        families.insert(family);
        let entry = series.entry(key).or_default();
        match family {
            Family::Drafts => entry.num_drafts = value,
            Family::DraftTokens => entry.num_draft_tokens = value,
            Family::Accepted => entry.num_accepted_tokens = value,
            Family::PerPos => {
                entry.accepted_per_pos.insert(position, value);
            }
        }
    }

    let counters = match prefix {
        Some(prefix) if !families.is_empty() => {
            let missing: Vec<String> = [
                (Family::Drafts, DRAFTS),
                (Family::DraftTokens, DRAFT_TOKENS),
                (Family::Accepted, ACCEPTED),
            ]
            .iter()
            .filter(|(f, _)| !families.contains(f))
            .map(|(_, name)| format!("{prefix}{name}"))
            .collect();
            if !missing.is_empty() {
                return Err(Error::IncompleteCounters {
                    missing: missing.join(", "),
                });
            }
            let mut total = SpecCounters::default();
            for counters in series.values() {
                total.add(counters);
            }
            Some(CounterSet {
                prefix: prefix.to_string(),
                total,
                series,
            })
        }
        _ => None,
    };
    let [length, rate, steps, draft_tokens] = gauges;
    let sglang = SglangGauges {
        accept_length: length.mean(),
        accept_rate: rate.mean(),
        num_steps: steps.mean(),
        num_draft_tokens: draft_tokens.mean(),
        verify_calls_total: verify_calls,
    };
    let sglang = (sglang != SglangGauges::default()).then_some(sglang);
    Ok(MetricsSnapshot { counters, sglang })
}

/// Derived stats of one window, as AISBench's `data` and `vllm bench serve`'s `spec_decode_*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeData {
    pub num_drafts: u64,
    pub draft_tokens: u64,
    pub accepted_tokens: u64,
    /// Percent (bonus token excluded).
    pub acceptance_rate: f64,
    /// Tokens per verify step, bonus included; 0.0 when there were no drafts.
    pub acceptance_length: f64,
    /// Fraction of drafts whose first `i + 1` tokens were all accepted, by position `i`.
    pub per_position_acceptance_rates: BTreeMap<u32, f64>,
}

/// Derive the window's stats from a counter delta, or the reason there are none.
pub fn derive_stats(delta: &SpecCounters) -> Result<SpecDecodeData, String> {
    if delta.num_draft_tokens == 0 {
        return Err(NO_ACTIVITY.to_string());
    }
    let drafts = delta.num_drafts as f64;
    let accepted = delta.num_accepted_tokens as f64;
    let (acceptance_length, per_position_acceptance_rates) = if delta.num_drafts == 0 {
        (0.0, BTreeMap::new())
    } else {
        let per_pos = delta
            .accepted_per_pos
            .iter()
            .map(|(p, v)| (*p, *v as f64 / drafts))
            .collect();
        (1.0 + accepted / drafts, per_pos)
    };
    Ok(SpecDecodeData {
        num_drafts: delta.num_drafts,
        draft_tokens: delta.num_draft_tokens,
        accepted_tokens: delta.num_accepted_tokens,
        acceptance_rate: accepted / delta.num_draft_tokens as f64 * 100.0,
        acceptance_length,
        per_position_acceptance_rates,
    })
}

/// The counters' growth between two snapshots of the same server, or the reason it cannot be
/// trusted: a counter that went down (or a label set that vanished) means the server restarted
/// inside the window, and the figure would be wrong.
pub fn window_delta(before: &CounterSet, after: &CounterSet) -> Result<SpecCounters, String> {
    for (key, b) in &before.series {
        let Some(a) = after.series.get(key) else {
            return Err(format!(
                "Counter reset detected: {} is missing after the benchmark window (server restarted?)",
                before.counter_name(DRAFTS, key)
            ));
        };
        let scalars = [
            (DRAFTS, b.num_drafts, a.num_drafts),
            (DRAFT_TOKENS, b.num_draft_tokens, a.num_draft_tokens),
            (ACCEPTED, b.num_accepted_tokens, a.num_accepted_tokens),
        ];
        let per_pos = b
            .accepted_per_pos
            .iter()
            .filter_map(|(pos, bv)| a.accepted_per_pos.get(pos).map(|av| (*pos, *bv, *av)));
        let went_down = scalars
            .iter()
            .find(|(_, bv, av)| av < bv)
            .map(|(family, bv, av)| (before.counter_name(family, key), *bv, *av))
            .or_else(|| {
                per_pos
                    .clone()
                    .find(|(_, bv, av)| av < bv)
                    .map(|(pos, bv, av)| (before.counter_name(PER_POS, &with_position(key, pos)), bv, av))
            });
        if let Some((name, bv, av)) = went_down {
            return Err(format!(
                "Counter reset detected: {name} went down from {bv} to {av} during the benchmark window (server restarted?)"
            ));
        }
    }
    let mut delta = SpecCounters {
        num_drafts: after.total.num_drafts - before.total.num_drafts,
        num_draft_tokens: after.total.num_draft_tokens - before.total.num_draft_tokens,
        num_accepted_tokens: after.total.num_accepted_tokens - before.total.num_accepted_tokens,
        accepted_per_pos: BTreeMap::new(),
    };
    let positions: BTreeSet<u32> = before
        .total
        .accepted_per_pos
        .keys()
        .chain(after.total.accepted_per_pos.keys())
        .copied()
        .collect();
    for pos in positions {
        let b = before.total.accepted_per_pos.get(&pos).copied().unwrap_or(0);
        let a = after.total.accepted_per_pos.get(&pos).copied().unwrap_or(b);
        delta.accepted_per_pos.insert(pos, a.saturating_sub(b));
    }
    Ok(delta)
}

/// Why one phase's scrape produced no counters.
#[derive(Debug, Clone, PartialEq)]
pub enum ScrapeFailure {
    /// The endpoint answered with a non-success status.
    Http(u16),
    /// The connection or the read failed.
    Fetch { url: String, cause: String },
    /// The text could not be parsed.
    Invalid(Error),
    /// The text parsed but holds no spec-decode metrics.
    NoSpecMetrics,
    /// Only SGLang's gauges are there: no window delta is possible.
    GaugesOnly,
}

impl fmt::Display for ScrapeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScrapeFailure::Http(code) => write!(f, "Metrics endpoint returned HTTP {code}"),
            ScrapeFailure::Fetch { url, cause } => write!(f, "Failed to fetch metrics from {url}: {cause}"),
            ScrapeFailure::Invalid(err) => write!(f, "Invalid metrics text: {err}"),
            ScrapeFailure::NoSpecMetrics => f.write_str("No spec decode metrics found on server"),
            ScrapeFailure::GaugesOnly => f.write_str(
                "No spec decode counters on server (SGLang exposes only gauges, so no window delta is possible)",
            ),
        }
    }
}

/// Turn a fetched body into counters, or the failure to report for that phase.
pub fn counters_from_text(text: &str) -> Result<CounterSet, ScrapeFailure> {
    let snapshot = parse_metrics(text).map_err(ScrapeFailure::Invalid)?;
    match snapshot {
        MetricsSnapshot { counters: Some(c), .. } => Ok(c),
        MetricsSnapshot { sglang: Some(_), .. } => Err(ScrapeFailure::GaugesOnly),
        _ => Err(ScrapeFailure::NoSpecMetrics),
    }
}

/// `ok` iff the result carries data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultStatus {
    Ok,
    Na,
}

/// The raw counters of the two phases (null for a phase that failed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawPhases {
    pub before: Option<SpecCounters>,
    pub after: Option<SpecCounters>,
}

/// One server's window result, AISBench's `performances/spec_decode_<label>.json` shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeResult {
    pub status: ResultStatus,
    pub url: String,
    pub error: Option<String>,
    pub data: Option<SpecDecodeData>,
    pub raw: RawPhases,
}

/// Combine the two phases' scrapes of one server into its window result.
pub fn window_result(
    url: &str,
    before: Result<CounterSet, ScrapeFailure>,
    after: Result<CounterSet, ScrapeFailure>,
) -> SpecDecodeResult {
    let raw = RawPhases {
        before: before.as_ref().ok().map(|c| c.total.clone()),
        after: after.as_ref().ok().map(|c| c.total.clone()),
    };
    let outcome = match (&before, &after) {
        (Ok(b), Ok(a)) => window_delta(b, a).and_then(|d| derive_stats(&d)),
        _ => {
            let mut reasons = Vec::new();
            if let Err(e) = &before {
                reasons.push(format!("[before] {e}"));
            }
            if let Err(e) = &after {
                reasons.push(format!("[after] {e}"));
            }
            Err(reasons.join("; "))
        }
    };
    match outcome {
        Ok(data) => SpecDecodeResult {
            status: ResultStatus::Ok,
            url: url.to_string(),
            error: None,
            data: Some(data),
            raw,
        },
        Err(reason) => SpecDecodeResult {
            status: ResultStatus::Na,
            url: url.to_string(),
            error: Some(reason),
            data: None,
            raw,
        },
    }
}

/// File label for a `host:port`: every character outside `[A-Za-z0-9._-]` becomes `_`.
pub fn result_file_label(host_port: &str) -> String {
    host_port
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The AISBench console block for one server (starts with an empty line, ends without one).
pub fn console_block(host_port: &str, result: &SpecDecodeResult) -> String {
    let title = format!("========== Speculative Decoding Metrics  [{host_port}] ==========");
    let frame = "=".repeat(title.chars().count().saturating_sub(2));
    let mut out = format!("\n{frame}\n{title}\n{frame}\n");
    let mut row = |label: &str, value: String| out.push_str(&format!("{label:<45} {value}\n"));
    match &result.data {
        Some(d) => {
            row("Acceptance rate (%)", format!("{:.2}", d.acceptance_rate));
            row("Acceptance length", format!("{:.2}", d.acceptance_length));
            row("Drafts", d.num_drafts.to_string());
            row("Draft tokens", d.draft_tokens.to_string());
            row("Accepted tokens", d.accepted_tokens.to_string());
            let per_pos: Vec<String> = d
                .per_position_acceptance_rates
                .iter()
                .map(|(p, r)| format!("{p}: {r:.4}"))
                .collect();
            row("Per-position acceptance rates", format!("{{{}}}", per_pos.join(", ")));
        }
        None => {
            row("Status", "N/A".to_string());
            if let Some(reason) = &result.error {
                row("Reason", reason.clone());
            }
        }
    }
    out.pop();
    out
}

/// Reset-aware accumulation over periodic scrapes (Prometheus `increase()` semantics): a
/// counter that drops is taken to have restarted from zero, so its new value is growth.
#[derive(Debug, Clone, Default)]
pub struct IncreaseAccumulator {
    last: Option<CounterSet>,
    /// Growth summed over all label sets since the first observed scrape.
    pub total: SpecCounters,
    /// Growth per label set since the first observed scrape.
    pub series: BTreeMap<String, SpecCounters>,
    /// One line per detected reset, naming the counter.
    pub resets: Vec<String>,
}

impl IncreaseAccumulator {
    /// Fold in the next scrape; returns the growth since the previous one.
    pub fn observe(&mut self, next: &CounterSet) -> SpecCounters {
        let mut step_total = SpecCounters::default();
        if let Some(prev) = &self.last {
            for (key, now) in &next.series {
                // A label set seen for the first time contributes from its second scrape on.
                let Some(was) = prev.series.get(key) else { continue };
                let mut step = SpecCounters::default();
                let resets = &mut self.resets;
                let mut grow = |name: &dyn Fn() -> String, was: u64, now: u64| -> u64 {
                    if now >= was {
                        now - was
                    } else {
                        resets.push(format!(
                            "{} went down from {was} to {now}: counted as a restart",
                            name()
                        ));
                        now
                    }
                };
                let scalar = |family: &'static str| move || next.counter_name(family, key);
                step.num_drafts = grow(&scalar(DRAFTS), was.num_drafts, now.num_drafts);
                step.num_draft_tokens = grow(&scalar(DRAFT_TOKENS), was.num_draft_tokens, now.num_draft_tokens);
                step.num_accepted_tokens = grow(&scalar(ACCEPTED), was.num_accepted_tokens, now.num_accepted_tokens);
                for (pos, v) in &now.accepted_per_pos {
                    let w = was.accepted_per_pos.get(pos).copied().unwrap_or(0);
                    let name = || next.counter_name(PER_POS, &with_position(key, *pos));
                    step.accepted_per_pos.insert(*pos, grow(&name, w, *v));
                }
                self.series.entry(key.clone()).or_default().add(&step);
                step_total.add(&step);
            }
        }
        self.total.add(&step_total);
        self.last = Some(next.clone());
        step_total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(drafts: u64, tokens: u64, accepted: u64, per_pos: &[u64]) -> SpecCounters {
        SpecCounters::new(drafts, tokens, accepted, per_pos)
    }

    fn single(c: SpecCounters) -> CounterSet {
        CounterSet {
            prefix: "vllm:".into(),
            total: c.clone(),
            series: [("engine=\"0\"".to_string(), c)].into_iter().collect(),
        }
    }

    #[test]
    fn aisbench_delta_example() {
        let before = single(counters(100, 500, 300, &[100, 90, 75, 50, 30]));
        let after = single(counters(15520, 77600, 50415, &[15520, 13968, 11640, 7760, 4656]));
        let delta = window_delta(&before, &after).unwrap();
        let d = derive_stats(&delta).unwrap();
        assert_eq!((d.num_drafts, d.draft_tokens, d.accepted_tokens), (15420, 77100, 50115));
        assert!((d.acceptance_rate - 65.0).abs() < 1e-12);
        assert!((d.acceptance_length - 4.25).abs() < 1e-12);
        let want = [1.0, 0.9, 0.75, 0.5, 0.3];
        for (i, w) in want.iter().enumerate() {
            assert!((d.per_position_acceptance_rates[&(i as u32)] - w).abs() < 1e-12);
        }
    }

    #[test]
    fn aisbench_documentation_example() {
        let d = derive_stats(&counters(163, 815, 809, &[])).unwrap();
        assert_eq!(format!("{:.2}", d.acceptance_rate), "99.26");
        assert_eq!(format!("{:.2}", d.acceptance_length), "5.96");
    }

    #[test]
    fn no_draft_tokens_is_na_and_no_drafts_gives_zero_length() {
        assert_eq!(derive_stats(&counters(0, 0, 0, &[0])).unwrap_err(), NO_ACTIVITY);
        let d = derive_stats(&counters(0, 10, 4, &[3])).unwrap();
        assert_eq!(d.acceptance_length, 0.0);
        assert!(d.per_position_acceptance_rates.is_empty());
    }

    #[test]
    fn per_position_uses_union_and_before_value_for_missing_after() {
        let before = single(counters(10, 30, 10, &[8, 2]));
        let mut after_c = counters(20, 60, 25, &[16]);
        after_c.accepted_per_pos.insert(2, 5);
        let after = single(after_c);
        let delta = window_delta(&before, &after).unwrap();
        assert_eq!(delta.accepted_per_pos, [(0, 8), (1, 0), (2, 5)].into_iter().collect());
    }

    #[test]
    fn counter_that_went_down_is_reported_never_negative() {
        let before = single(counters(100, 300, 200, &[80]));
        let after = single(counters(40, 120, 90, &[30]));
        let reason = window_delta(&before, &after).unwrap_err();
        assert!(
            reason.contains("vllm:spec_decode_num_drafts_total{engine=\"0\"} went down from 100 to 40"),
            "{reason}"
        );
        let r = window_result("http://h:1/metrics", Ok(before), Ok(after));
        assert_eq!(r.status, ResultStatus::Na);
        assert!(r.data.is_none());
        assert!(r.raw.before.is_some() && r.raw.after.is_some());
    }

    #[test]
    fn reset_in_one_engine_is_caught_even_when_the_sum_grows() {
        let mut before = single(counters(100, 300, 200, &[]));
        before.series.insert("engine=\"1\"".into(), counters(50, 150, 100, &[]));
        let mut after = single(counters(400, 1200, 800, &[]));
        after.series.insert("engine=\"1\"".into(), counters(5, 15, 10, &[]));
        assert!(window_delta(&before, &after).unwrap_err().contains("engine=\"1\""));
    }

    #[test]
    fn phase_errors_are_prefixed_and_joined() {
        let r = window_result(
            "u",
            Err(ScrapeFailure::NoSpecMetrics),
            Err(ScrapeFailure::NoSpecMetrics),
        );
        assert_eq!(
            r.error.as_deref(),
            Some("[before] No spec decode metrics found on server; [after] No spec decode metrics found on server")
        );
        let r = window_result("u", Ok(single(counters(1, 1, 1, &[]))), Err(ScrapeFailure::Http(503)));
        assert_eq!(r.error.as_deref(), Some("[after] Metrics endpoint returned HTTP 503"));
        assert!(r.raw.before.is_some() && r.raw.after.is_none());
    }

    #[test]
    fn result_json_has_spec_key_order() {
        let before = single(counters(100, 500, 300, &[100, 90]));
        let after = single(counters(15520, 77600, 50415, &[15520, 13968]));
        let r = window_result("http://10.0.0.1:8080/metrics", Ok(before), Ok(after));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.starts_with(
            r#"{"status":"ok","url":"http://10.0.0.1:8080/metrics","error":null,"data":{"num_drafts":15420,"draft_tokens":77100,"accepted_tokens":50115,"acceptance_rate":65.0,"acceptance_length":4.25,"per_position_acceptance_rates":{"0":1.0,"1":0.9}},"raw":{"before":{"num_drafts":100,"num_draft_tokens":500,"num_accepted_tokens":300,"accepted_per_pos":{"0":100,"1":90}}"#
        ), "{json}");
        let back: SpecDecodeResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn file_labels() {
        assert_eq!(result_file_label("10.0.0.1:8080"), "10.0.0.1_8080");
        assert_eq!(result_file_label("[::1]:9090"), "___1__9090");
    }

    #[test]
    fn console_block_matches_aisbench_layout() {
        let before = single(counters(100, 500, 300, &[100, 90, 75, 50, 30]));
        let after = single(counters(15520, 77600, 50415, &[15520, 13968, 11640, 7760, 4656]));
        let r = window_result("http://10.0.0.1:8080/metrics", Ok(before), Ok(after));
        let want = "
=================================================================
========== Speculative Decoding Metrics  [10.0.0.1:8080] ==========
=================================================================
Acceptance rate (%)                           65.00
Acceptance length                             4.25
Drafts                                        15420
Draft tokens                                  77100
Accepted tokens                               50115
Per-position acceptance rates                 {0: 1.0000, 1: 0.9000, 2: 0.7500, 3: 0.5000, 4: 0.3000}";
        assert_eq!(console_block("10.0.0.1:8080", &r), want);
        let na = window_result("u", Err(ScrapeFailure::Http(500)), Err(ScrapeFailure::Http(500)));
        let block = console_block("h:1", &na);
        assert!(block.ends_with("Status                                        N/A\nReason                                        [before] Metrics endpoint returned HTTP 500; [after] Metrics endpoint returned HTTP 500"), "{block}");
    }

    #[test]
    fn parses_counters_skipping_created_gauges_nan_and_other_metrics() {
        let text = "# TYPE vllm:spec_decode_num_drafts_total counter\n\
            vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 10.0\n\
            vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n\
            vllm:spec_decode_num_draft_tokens_total{model_name=\"m\",engine=\"0\"} 30.0 1700000000000\n\
            vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 12\n\
            vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"1\"} NaN\n\
            vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"0\"} 8\n\
            vllm:num_requests_running 3 \n";
        let c = parse_metrics(text).unwrap().counters.unwrap();
        assert_eq!(c.total, counters(10, 30, 12, &[8]));
        assert_eq!(
            c.series.keys().collect::<Vec<_>>(),
            vec!["engine=\"0\",model_name=\"m\""]
        );
        assert_eq!(c.by_label("model_name").keys().collect::<Vec<_>>(), vec!["m"]);
    }

    #[test]
    fn infinity_in_a_counter_is_an_error_elsewhere_it_is_ignored() {
        let base = "vllm:spec_decode_num_drafts_total 1\nvllm:spec_decode_num_draft_tokens_total 3\n";
        let ok = format!("{base}vllm:spec_decode_num_accepted_tokens_total 1\nsome_gauge +Inf\n");
        assert!(parse_metrics(&ok).is_ok());
        let bad = format!("{base}vllm:spec_decode_num_accepted_tokens_total +Inf\n");
        let err = parse_metrics(&bad).unwrap_err().to_string();
        assert!(err.contains("cannot convert infinity"), "{err}");
        let frac = format!("{base}vllm:spec_decode_num_accepted_tokens_total 1.5\n");
        assert!(parse_metrics(&frac).is_err());
    }

    #[test]
    fn duplicates_incomplete_and_mixed_prefixes_are_errors() {
        let dup =
            "vllm:spec_decode_num_drafts_total{engine=\"0\"} 1\nvllm:spec_decode_num_drafts_total{engine=\"0\"} 2\n";
        assert!(matches!(parse_metrics(dup), Err(Error::DuplicateSample { .. })));
        let partial = "vllm:spec_decode_num_drafts_total 1\n";
        let err = parse_metrics(partial).unwrap_err().to_string();
        assert!(err.contains("vllm:spec_decode_num_draft_tokens_total"), "{err}");
        let mixed = "vllm:spec_decode_num_drafts_total 1\nllamacpp:spec_decode_num_drafts_total 1\n";
        assert!(parse_metrics(mixed).is_err());
    }

    #[test]
    fn llamacpp_prefix_is_accepted() {
        let text = "llamacpp:spec_decode_num_drafts_total 2\nllamacpp:spec_decode_num_draft_tokens_total 6\nllamacpp:spec_decode_num_accepted_tokens_total 3\n";
        let c = parse_metrics(text).unwrap().counters.unwrap();
        assert_eq!(c.prefix, "llamacpp:");
        assert_eq!(c.total.num_draft_tokens, 6);
    }

    #[test]
    fn no_spec_metrics_and_gauges_only_are_distinct_failures() {
        assert_eq!(
            counters_from_text("vllm:num_requests_running 1\n"),
            Err(ScrapeFailure::NoSpecMetrics)
        );
        assert_eq!(
            counters_from_text("sglang:spec_accept_length{tp_rank=\"0\"} 3.1\n"),
            Err(ScrapeFailure::GaugesOnly)
        );
        assert!(matches!(counters_from_text("garbage{"), Err(ScrapeFailure::Invalid(_))));
    }

    #[test]
    fn accumulator_follows_increase_semantics_across_a_restart() {
        let mut acc = IncreaseAccumulator::default();
        assert_eq!(
            acc.observe(&single(counters(100, 300, 150, &[80]))),
            SpecCounters::default()
        );
        let step = acc.observe(&single(counters(110, 330, 160, &[85])));
        assert_eq!(step, counters(10, 30, 10, &[5]));
        // Restart: the new values are growth since the reset.
        let step = acc.observe(&single(counters(4, 12, 6, &[3])));
        assert_eq!(step, counters(4, 12, 6, &[3]));
        assert_eq!(acc.total, counters(14, 42, 16, &[8]));
        assert_eq!(acc.resets.len(), 4);
        assert!(acc.resets[0].contains("vllm:spec_decode_num_drafts_total{engine=\"0\"} went down from 110 to 4"));
    }
}
