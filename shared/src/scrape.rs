//! Server-scrape path (docs/METRICS.md §1): spec-decode counters read from a `/metrics` text (vLLM's
//! and llama.cpp's four families, TensorRT-LLM's two `trtllm_` counters and gauges, SGLang's verify,
//! generation and request counters), their delta over a benchmark window, reset-aware accumulation
//! for live sampling, the AISBench-compatible result value and its console block.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::capped::CappedLog;
use crate::error::Error;
use crate::prom::{self, Sample};

/// Reason given when the window saw no drafted tokens (AISBench's wording).
pub const NO_ACTIVITY: &str = "No spec decode activity detected during benchmark window";

/// Prefixes of the spec-decode counters, one per engine (llama.cpp copies vLLM's families).
pub const COUNTER_PREFIXES: [&str; 4] = ["vllm:", "llamacpp:", "trtllm_", "sglang:"];

const DRAFTS: &str = "spec_decode_num_drafts_total";
const DRAFT_TOKENS: &str = "spec_decode_num_draft_tokens_total";
const ACCEPTED: &str = "spec_decode_num_accepted_tokens_total";
const PER_POS: &str = "spec_decode_num_accepted_tokens_per_pos_total";
const VERIFY_CALLS: &str = "spec_verify_calls_total";
const GENERATION: &str = "generation_tokens_total";
const REQUESTS: &str = "num_requests_total";

/// The engine gauges a window averages (TensorRT-LLM's and SGLang's), by full metric name.
pub const ENGINE_GAUGES: [&str; 7] = [
    "trtllm_spec_decode_acceptance_length",
    "trtllm_avg_decoded_tokens_per_iter",
    "trtllm_spec_decode_draft_overhead",
    "sglang:spec_accept_length",
    "sglang:spec_accept_rate",
    "sglang:spec_num_steps",
    "sglang:spec_num_draft_tokens",
];

/// Which engine's counter schema a scrape follows; it decides which figures are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schema {
    /// `vllm:spec_decode_*`: drafts, draft tokens, accepted tokens, per position.
    Vllm,
    /// `llamacpp:spec_decode_*`: vLLM's families, values printed with 6 significant digits.
    LlamaCpp,
    /// `trtllm_spec_decode_*`: draft and accepted tokens (no drafts counter), length gauges.
    Trtllm,
    /// `sglang:spec_verify_calls_total`, `generation_tokens_total`, `num_requests_total`.
    Sglang,
}

impl Schema {
    fn of_prefix(prefix: &str) -> Schema {
        match prefix {
            "llamacpp:" => Schema::LlamaCpp,
            "trtllm_" => Schema::Trtllm,
            "sglang:" => Schema::Sglang,
            _ => Schema::Vllm,
        }
    }

    /// The engine's name as `result.json` records it.
    pub fn engine(self) -> &'static str {
        match self {
            Schema::Vllm => "vllm",
            Schema::LlamaCpp => "llamacpp",
            Schema::Trtllm => "trtllm",
            Schema::Sglang => "sglang",
        }
    }
}

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
    /// SGLang only: `sglang:generation_tokens_total` (every output token, each request's first
    /// included). With SGLang, `num_drafts` holds `sglang:spec_verify_calls_total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens: Option<u64>,
    /// SGLang only: `sglang:num_requests_total` (finished requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
}

impl SpecCounters {
    /// Counters from the three totals and the per-position values for positions 0, 1, ….
    pub fn new(num_drafts: u64, num_draft_tokens: u64, num_accepted_tokens: u64, per_pos: &[u64]) -> SpecCounters {
        SpecCounters {
            num_drafts,
            num_draft_tokens,
            num_accepted_tokens,
            accepted_per_pos: per_pos.iter().enumerate().map(|(i, v)| (i as u32, *v)).collect(),
            generation_tokens: None,
            requests: None,
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
        let add = |mine: Option<u64>, theirs: Option<u64>| match (mine, theirs) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        self.generation_tokens = add(self.generation_tokens, other.generation_tokens);
        self.requests = add(self.requests, other.requests);
    }
}

/// Spec-decode counters of one scrape: the server-level sum and the per-label-set split.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterSet {
    /// `vllm:`, `llamacpp:`, `trtllm_` or `sglang:`.
    pub prefix: String,
    /// Sum over all label sets (the server-level figure).
    pub total: SpecCounters,
    /// Per label set (every label but `position`), keyed by its canonical text
    /// `engine="0",model_name="Qwen/Qwen3-8B"`. SGLang's families carry different labels, so
    /// its counters are one series under the empty key.
    pub series: BTreeMap<String, SpecCounters>,
    /// The engine gauges of [`ENGINE_GAUGES`] present in this scrape, each the mean over its
    /// label sets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gauges: BTreeMap<String, f64>,
    /// llama.cpp only: the largest counter value, when one is ≥ 1e6 and so printed with 6
    /// significant digits (rounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounded_max: Option<u64>,
    /// Counter families of the schema the server does not expose (an older vLLM): the figures
    /// that need them are left out, the others stand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

impl CounterSet {
    /// The same series, every counter at zero (a server before its first draft).
    pub fn zeroed(&self) -> CounterSet {
        let zero = |c: &SpecCounters| SpecCounters {
            accepted_per_pos: c.accepted_per_pos.keys().map(|p| (*p, 0)).collect(),
            generation_tokens: c.generation_tokens.map(|_| 0),
            requests: c.requests.map(|_| 0),
            ..SpecCounters::default()
        };
        CounterSet {
            prefix: self.prefix.clone(),
            total: zero(&self.total),
            series: self.series.iter().map(|(k, c)| (k.clone(), zero(c))).collect(),
            gauges: BTreeMap::new(),
            rounded_max: None,
            missing: self.missing.clone(),
        }
    }

    /// The engine schema the counters follow.
    pub fn schema(&self) -> Schema {
        Schema::of_prefix(&self.prefix)
    }

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

    fn counter_name(&self, family: Family, series: &str) -> String {
        format!("{}{}{{{}}}", self.prefix, family_name(self.schema(), family), series)
    }
}

/// SGLang's spec-decode gauges, each the mean over label sets (ranks).
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
    /// The engine whose metric names the text holds (`vllm:`, `sglang:`, `trtllm_`,
    /// `llamacpp:`), spec-decode or not: it names the server option a missing family needs.
    #[serde(default)]
    pub engine: Option<Schema>,
    /// SGLang's counters a window needs that the text lacks (it then has only gauges).
    #[serde(default)]
    pub sglang_missing: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Family {
    Drafts,
    DraftTokens,
    Accepted,
    PerPos,
    Generation,
    Requests,
}

/// A spec-decode counter family of vLLM's schema under any prefix (the Prometheus path's view).
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

/// Any engine's counter family: vLLM's schema under `vllm:`, `llamacpp:` and `trtllm_`, and
/// SGLang's verify, generation and request counters.
fn counter_family(name: &str) -> Option<(&'static str, Family)> {
    if let Some(rest) = name.strip_prefix("sglang:") {
        let family = match rest {
            VERIFY_CALLS => Family::Drafts,
            GENERATION => Family::Generation,
            REQUESTS => Family::Requests,
            _ => return None,
        };
        return Some(("sglang:", family));
    }
    family_of(name)
}

/// The family's metric name (without prefix) in a schema.
fn family_name(schema: Schema, family: Family) -> &'static str {
    match (schema, family) {
        (Schema::Sglang, Family::Drafts) => VERIFY_CALLS,
        (_, Family::Drafts) => DRAFTS,
        (_, Family::DraftTokens) => DRAFT_TOKENS,
        (_, Family::Accepted) => ACCEPTED,
        (_, Family::PerPos) => PER_POS,
        (_, Family::Generation) => GENERATION,
        (_, Family::Requests) => REQUESTS,
    }
}

/// The families a schema must have for a window; the others are optional.
fn required(schema: Schema) -> &'static [Family] {
    match schema {
        Schema::Vllm | Schema::LlamaCpp => &[Family::Drafts, Family::DraftTokens, Family::Accepted],
        Schema::Trtllm => &[Family::DraftTokens, Family::Accepted],
        Schema::Sglang => &[Family::Drafts, Family::Generation, Family::Requests],
    }
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

/// The engine whose metric names a sample carries.
fn engine_of_name(name: &str) -> Option<Schema> {
    ["vllm:", "llamacpp:", "trtllm_", "sglang:"]
        .iter()
        .find(|p| name.starts_with(**p))
        .map(|p| Schema::of_prefix(p))
}

/// The engine's own load in one scrape (vLLM's families): KV-cache usage (mean over engines),
/// running and waiting requests and preemptions so far (summed over engines). A family the
/// text lacks is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadSample {
    pub kv_cache_usage: Option<f64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub preemptions: Option<u64>,
}

impl LoadSample {
    /// The load families of a metrics text; `None` when the text is not valid exposition or
    /// holds none of them.
    pub fn of_text(text: &str) -> Option<LoadSample> {
        let (mut kv, mut kv_n, mut running, mut waiting, mut preempted) = (0.0, 0u32, None, None, None);
        let add = |slot: &mut Option<f64>, v: f64| *slot = Some(slot.unwrap_or(0.0) + v);
        for sample in prom::samples(text) {
            let sample = sample.ok()?;
            if !sample.value.is_finite() || sample.value < 0.0 {
                continue;
            }
            match sample.name {
                "vllm:kv_cache_usage_perc" => {
                    kv += sample.value;
                    kv_n += 1;
                }
                "vllm:num_requests_running" => add(&mut running, sample.value),
                "vllm:num_requests_waiting" => add(&mut waiting, sample.value),
                "vllm:num_preemptions_total" => add(&mut preempted, sample.value),
                _ => {}
            }
        }
        let load = LoadSample {
            kv_cache_usage: (kv_n > 0).then(|| kv / f64::from(kv_n)),
            running,
            waiting,
            preemptions: preempted.map(|p| p.round() as u64),
        };
        (load != LoadSample::default()).then_some(load)
    }
}

/// llama.cpp prints counters with 6 significant digits: from 1e6 on, a value is rounded.
const LLAMACPP_EXACT_BELOW: u64 = 1_000_000;

/// Parse a Prometheus text exposition into its spec-decode snapshot.
///
/// Only `_total` samples of the counter families are read (the `_created` gauges that follow
/// them are not counters); every other line is checked for syntax and ignored, but for the
/// engine gauges of [`ENGINE_GAUGES`].
pub fn parse_metrics(text: &str) -> Result<MetricsSnapshot, Error> {
    let mut series: BTreeMap<String, SpecCounters> = BTreeMap::new();
    let mut seen: BTreeSet<(Family, String, u32)> = BTreeSet::new();
    let mut families: BTreeSet<Family> = BTreeSet::new();
    let mut prefix: Option<&'static str> = None;
    let mut gauges: BTreeMap<&'static str, GaugeMean> = BTreeMap::new();
    let mut engine: Option<Schema> = None;
    let mut largest = 0u64;

    for sample in prom::samples(text) {
        let sample = sample?;
        if engine.is_none() {
            engine = engine_of_name(sample.name);
        }
        if let Some(name) = ENGINE_GAUGES.iter().find(|g| **g == sample.name) {
            gauges.entry(name).or_default().push(sample.value);
            continue;
        }
        let Some((this_prefix, family)) = counter_family(sample.name) else {
            continue;
        };
        if *prefix.get_or_insert(this_prefix) != this_prefix {
            return Err(Error::Exposition {
                line: sample.line,
                message: format!(
                    "spec decode counters of two engines ({} and {this_prefix}) in one exposition",
                    prefix.unwrap_or_default()
                ),
            });
        }
        // SGLang's families carry different labels: they are summed into one series.
        let key = if this_prefix == "sglang:" {
            String::new()
        } else {
            series_key(&sample)
        };
        let position = match family {
            Family::PerPos => draft_position(&sample)?,
            _ => 0,
        };
        if this_prefix != "sglang:" && !seen.insert((family, key.clone(), position)) {
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
        largest = largest.max(value);
        families.insert(family);
        let entry = series.entry(key).or_default();
        let add = |slot: &mut Option<u64>| *slot = Some(slot.unwrap_or(0).saturating_add(value));
        match family {
            Family::Drafts if this_prefix == "sglang:" => entry.num_drafts = entry.num_drafts.saturating_add(value),
            Family::Drafts => entry.num_drafts = value,
            Family::DraftTokens => entry.num_draft_tokens = value,
            Family::Accepted => entry.num_accepted_tokens = value,
            Family::PerPos => {
                entry.accepted_per_pos.insert(position, value);
            }
            Family::Generation => add(&mut entry.generation_tokens),
            Family::Requests => add(&mut entry.requests),
        }
    }

    let gauge_means: BTreeMap<String, f64> = gauges
        .iter()
        .filter_map(|(name, g)| g.mean().map(|m| (name.to_string(), m)))
        .collect();
    let gauge = |name: &str| gauge_means.get(name).copied();
    let sglang = SglangGauges {
        accept_length: gauge("sglang:spec_accept_length"),
        accept_rate: gauge("sglang:spec_accept_rate"),
        num_steps: gauge("sglang:spec_num_steps"),
        num_draft_tokens: gauge("sglang:spec_num_draft_tokens"),
        verify_calls_total: series
            .get("")
            .filter(|_| prefix == Some("sglang:") && families.contains(&Family::Drafts))
            .map(|c| c.num_drafts as f64),
    };
    let sglang = (sglang != SglangGauges::default()).then_some(sglang);

    let (counters, sglang_missing) = counter_set(prefix, &families, series, &gauge_means, largest)?;
    Ok(MetricsSnapshot {
        counters,
        sglang,
        engine,
        sglang_missing,
    })
}

/// The counter set of one exposition's spec-decode families, with the SGLang families it lacks
/// when they make no figure; `None` without counters (or a plain SGLang server's).
fn counter_set(
    prefix: Option<&'static str>,
    families: &BTreeSet<Family>,
    series: BTreeMap<String, SpecCounters>,
    gauge_means: &BTreeMap<String, f64>,
    largest: u64,
) -> Result<(Option<CounterSet>, Vec<String>), Error> {
    let mut sglang_missing = Vec::new();
    let counters = match prefix {
        Some(prefix) if !families.is_empty() => {
            let schema = Schema::of_prefix(prefix);
            let missing: Vec<String> = required(schema)
                .iter()
                .filter(|f| !families.contains(f))
                .map(|f| format!("{prefix}{}", family_name(schema, *f)))
                .collect();
            if schema == Schema::Sglang && !families.contains(&Family::Drafts) {
                // Generation and request counters alone: a plain SGLang server.
                None
            } else if schema == Schema::Sglang && !missing.is_empty() {
                sglang_missing = missing;
                None
            } else if match schema {
                // Without accepted tokens no figure of vLLM's schema stands; the others need all.
                Schema::Vllm | Schema::LlamaCpp => !families.contains(&Family::Accepted),
                Schema::Trtllm | Schema::Sglang => !missing.is_empty(),
            } {
                // Without accepted tokens no figure stands.
                return Err(Error::IncompleteCounters {
                    missing: missing.join(", "),
                });
            } else {
                let mut total = SpecCounters::default();
                for counters in series.values() {
                    total.add(counters);
                }
                let rounded_max = (schema == Schema::LlamaCpp && largest >= LLAMACPP_EXACT_BELOW).then_some(largest);
                let schema_gauges = gauge_means
                    .iter()
                    .filter(|(name, _)| name.starts_with(prefix))
                    .map(|(n, v)| (n.clone(), *v))
                    .collect();
                Some(CounterSet {
                    prefix: prefix.to_string(),
                    total,
                    series,
                    gauges: schema_gauges,
                    rounded_max,
                    missing,
                })
            }
        }
        _ => None,
    };
    Ok((counters, sglang_missing))
}

/// A per-position sample's `position` label, as a draft position.
fn draft_position(sample: &prom::Sample<'_>) -> Result<u32, Error> {
    let Some(pos) = sample.label("position") else {
        return Err(Error::Exposition {
            line: sample.line,
            message: format!("{} sample without a position label", sample.name),
        });
    };
    pos.parse::<u32>().map_err(|_| Error::Exposition {
        line: sample.line,
        message: format!("position label {pos:?} is not a draft position"),
    })
}

/// Derived stats of one window, as AISBench's `data` and `vllm bench serve`'s `spec_decode_*`.
///
/// vLLM's and llama.cpp's counters measure every field. TensorRT-LLM has no drafts counter
/// (`num_drafts` null, the length from its gauges); SGLang has no draft-token counter
/// (`draft_tokens` null, the rate from its gauge). `notes` says where such a figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeData {
    /// Verify steps (SGLang: `spec_verify_calls_total`); null where the engine counts none.
    pub num_drafts: Option<u64>,
    /// Null where the engine counts none.
    pub draft_tokens: Option<u64>,
    pub accepted_tokens: u64,
    /// Percent (bonus token excluded); null when the counters cannot give one.
    #[serde(serialize_with = "crate::pyfloat::option")]
    pub acceptance_rate: Option<f64>,
    /// Tokens per verify step, bonus included; 0.0 when there were no drafts (AISBench).
    #[serde(serialize_with = "crate::pyfloat::option")]
    pub acceptance_length: Option<f64>,
    /// Fraction of drafts whose first `i + 1` tokens were all accepted, by position `i`.
    #[serde(serialize_with = "crate::pyfloat::map")]
    pub per_position_acceptance_rates: BTreeMap<u32, f64>,
    /// Where a figure comes from when it is not a counter delta, and why one is missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl SpecDecodeData {
    /// The acceptance rate (%) with two decimals, or `N/A`.
    pub fn rate_text(&self) -> String {
        self.acceptance_rate
            .map_or_else(|| "N/A".to_string(), |v| format!("{v:.2}"))
    }

    /// The acceptance length with two decimals, or `N/A`.
    pub fn length_text(&self) -> String {
        self.acceptance_length
            .map_or_else(|| "N/A".to_string(), |v| format!("{v:.2}"))
    }
}

/// A scrape's own stats since the server started: its counters as a delta from zero, its
/// gauges as they are now.
pub fn derive_since_start(c: &CounterSet) -> Result<SpecDecodeData, String> {
    derive(c.schema(), &c.total, &WindowFacts::of(c))
}

/// What a window's figures depend on besides the counters' delta.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowFacts {
    /// The engine gauges averaged over the window.
    pub gauges: GaugeMeans,
    /// llama.cpp's largest counter value, when it was printed rounded.
    pub rounded_max: Option<u64>,
    /// Counter families the server lacks.
    pub missing: Vec<String>,
}

impl WindowFacts {
    /// The facts of one scrape.
    pub fn of(c: &CounterSet) -> WindowFacts {
        WindowFacts {
            gauges: GaugeMeans::over([&c.gauges]),
            rounded_max: c.rounded_max,
            missing: c.missing.clone(),
        }
    }

    /// The facts of a window between two scrapes, with its gauges.
    pub fn between(before: &CounterSet, after: &CounterSet, gauges: &GaugeMeans) -> WindowFacts {
        let mut missing = after.missing.clone();
        missing.extend(before.missing.iter().filter(|m| !after.missing.contains(m)).cloned());
        WindowFacts {
            gauges: gauges.clone(),
            rounded_max: after.rounded_max.max(before.rounded_max),
            missing,
        }
    }

    fn lacks(&self, family: &str) -> Option<&String> {
        self.missing.iter().find(|m| m.ends_with(family))
    }
}

/// Engine gauges averaged over a window's scrapes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GaugeMeans {
    /// Mean of each gauge over the scrapes that had it, by metric name.
    pub means: BTreeMap<String, f64>,
    /// Scrapes averaged.
    pub scrapes: usize,
}

impl GaugeMeans {
    /// The mean of each gauge over the given scrapes.
    pub fn over<'a>(scrapes: impl IntoIterator<Item = &'a BTreeMap<String, f64>>) -> GaugeMeans {
        let mut sums: BTreeMap<String, GaugeMean> = BTreeMap::new();
        let mut n = 0;
        for gauges in scrapes {
            n += 1;
            for (name, v) in gauges {
                sums.entry(name.clone()).or_default().push(*v);
            }
        }
        GaugeMeans {
            means: sums
                .iter()
                .filter_map(|(k, g)| g.mean().map(|m| (k.clone(), m)))
                .collect(),
            scrapes: n,
        }
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.means.get(name).copied()
    }

    fn described(&self, name: &str) -> String {
        let n = self.scrapes;
        format!(
            "mean of the gauge {name} over {n} scrape{} in the window (the engine's recent iterations, not a count over the window)",
            if n == 1 { "" } else { "s" }
        )
    }
}

/// Derive the window's stats from a delta of vLLM's (or llama.cpp's) counters, or the reason
/// there are none.
pub fn derive_stats(delta: &SpecCounters) -> Result<SpecDecodeData, String> {
    derive(Schema::Vllm, delta, &WindowFacts::default())
}

/// Derive the window's stats of any engine from its counters' delta and the facts around it.
pub fn derive(schema: Schema, delta: &SpecCounters, facts: &WindowFacts) -> Result<SpecDecodeData, String> {
    match schema {
        Schema::Vllm | Schema::LlamaCpp => derive_vllm(delta, facts),
        Schema::Trtllm => derive_trtllm(delta, &facts.gauges),
        Schema::Sglang => derive_sglang(delta, &facts.gauges),
    }
}

fn derive_vllm(delta: &SpecCounters, facts: &WindowFacts) -> Result<SpecDecodeData, String> {
    let no_drafts = facts.lacks(DRAFTS);
    let no_draft_tokens = facts.lacks(DRAFT_TOKENS);
    let active = match no_draft_tokens {
        None => delta.num_draft_tokens > 0,
        Some(_) => delta.num_drafts > 0 || delta.num_accepted_tokens > 0,
    };
    if !active {
        return Err(NO_ACTIVITY.to_string());
    }
    let rounded_max = facts.rounded_max;
    let drafts = delta.num_drafts as f64;
    let accepted = delta.num_accepted_tokens as f64;
    let mut notes = Vec::new();
    let mut acceptance_rate = (no_draft_tokens.is_none() && delta.num_draft_tokens > 0)
        .then(|| accepted / delta.num_draft_tokens as f64 * 100.0);
    let (acceptance_length, mut per_position_acceptance_rates) = if delta.num_drafts == 0 {
        (0.0, BTreeMap::new())
    } else {
        let per_pos: BTreeMap<u32, f64> = delta
            .accepted_per_pos
            .iter()
            .map(|(p, v)| (*p, *v as f64 / drafts))
            .collect();
        (
            crate::figures::acceptance_length(accepted, drafts).unwrap_or(0.0),
            per_pos,
        )
    };
    if let Some(largest) = rounded_max {
        // A value v ≥ 1e6 printed with 6 significant digits is off by up to half its last digit.
        let digits = (largest as f64).log10().floor() as i32;
        let error = 10f64.powi(digits - 5) / 2.0;
        notes.push(format!(
            "llama.cpp prints its counters with 6 significant digits: values from 1e6 on are rounded (here up to ±{error:.0}), so each delta is uncertain by up to ±{:.0} tokens",
            2.0 * error
        ));
        let before = per_position_acceptance_rates.len();
        per_position_acceptance_rates.retain(|_, r| *r <= 1.0);
        if per_position_acceptance_rates.len() < before {
            notes.push("per-position rates above 1 (an artefact of the rounding) are left out".into());
        }
        if acceptance_rate.is_some_and(|r| r > 100.0) {
            acceptance_rate = None;
            notes.push("the acceptance rate came out above 100 % from rounded counters and is left out".into());
        }
    } else if no_draft_tokens.is_none() && delta.num_accepted_tokens > delta.num_draft_tokens {
        return Err(format!(
            "Impossible counters: {} accepted tokens exceed {} draft tokens in the window",
            delta.num_accepted_tokens, delta.num_draft_tokens
        ));
    }
    let mut acceptance_length = Some(acceptance_length);
    if let Some(name) = no_draft_tokens {
        notes.push(format!(
            "{name} is not on the server: no draft-token total and no acceptance rate"
        ));
    }
    if let Some(name) = no_drafts {
        notes.push(format!(
            "{name} is not on the server: no drafts, no acceptance length, no per-position rates"
        ));
        acceptance_length = None;
        per_position_acceptance_rates.clear();
    }
    Ok(SpecDecodeData {
        num_drafts: no_drafts.is_none().then_some(delta.num_drafts),
        draft_tokens: no_draft_tokens.is_none().then_some(delta.num_draft_tokens),
        accepted_tokens: delta.num_accepted_tokens,
        acceptance_rate,
        acceptance_length,
        per_position_acceptance_rates,
        notes,
    })
}

fn derive_trtllm(delta: &SpecCounters, gauges: &GaugeMeans) -> Result<SpecDecodeData, String> {
    if delta.num_draft_tokens == 0 {
        return Err(NO_ACTIVITY.to_string());
    }
    if delta.num_accepted_tokens > delta.num_draft_tokens {
        return Err(format!(
            "Impossible counters: {} accepted tokens exceed {} draft tokens in the window",
            delta.num_accepted_tokens, delta.num_draft_tokens
        ));
    }
    let mut notes = vec![
        "TensorRT-LLM counts no drafts (verify steps): no per-position rates, and the length comes from its gauges"
            .to_string(),
    ];
    let length = [
        "trtllm_spec_decode_acceptance_length",
        "trtllm_avg_decoded_tokens_per_iter",
    ]
    .iter()
    .find_map(|name| gauges.get(name).map(|v| (name, v)));
    let acceptance_length = match length {
        Some((name, v)) => {
            notes.push(format!("acceptance length: {}", gauges.described(name)));
            Some(v)
        }
        None => {
            notes.push(
                "acceptance length: no trtllm_spec_decode_acceptance_length gauge was scraped in the window".into(),
            );
            None
        }
    };
    Ok(SpecDecodeData {
        num_drafts: None,
        draft_tokens: Some(delta.num_draft_tokens),
        accepted_tokens: delta.num_accepted_tokens,
        acceptance_rate: Some(delta.num_accepted_tokens as f64 / delta.num_draft_tokens as f64 * 100.0),
        acceptance_length,
        per_position_acceptance_rates: BTreeMap::new(),
        notes,
    })
}

fn derive_sglang(delta: &SpecCounters, gauges: &GaugeMeans) -> Result<SpecDecodeData, String> {
    let verify = delta.num_drafts;
    if verify == 0 {
        return Err(NO_ACTIVITY.to_string());
    }
    let generation = delta.generation_tokens.unwrap_or(0);
    let requests = delta.requests.unwrap_or(0);
    // Every request's first token comes from prefill; each verify step gives accepted + 1.
    let Some(accepted) = generation.checked_sub(requests).and_then(|t| t.checked_sub(verify)) else {
        return Err(format!(
            "Inconsistent counters: {generation} generated tokens are fewer than {requests} requests plus {verify} verify calls in the window"
        ));
    };
    let mut notes = vec![
        format!(
            "acceptance length = (Δ sglang:generation_tokens_total − Δ sglang:num_requests_total) / Δ sglang:spec_verify_calls_total; SGLang's own convention (Δgeneration / Δverify, the first token counted) gives {:.2}",
            generation as f64 / verify as f64
        ),
        "SGLang counts no draft tokens: no draft-token total and no per-position rates".to_string(),
    ];
    let acceptance_rate = match gauges.get("sglang:spec_accept_rate") {
        Some(rate) => {
            notes.push(format!(
                "acceptance rate: {}",
                gauges.described("sglang:spec_accept_rate")
            ));
            Some(rate * 100.0)
        }
        None => {
            notes.push("acceptance rate: no sglang:spec_accept_rate gauge was scraped in the window".into());
            None
        }
    };
    Ok(SpecDecodeData {
        num_drafts: Some(verify),
        draft_tokens: None,
        accepted_tokens: accepted,
        acceptance_rate,
        acceptance_length: Some((generation - requests) as f64 / verify as f64),
        per_position_acceptance_rates: BTreeMap::new(),
        notes,
    })
}

/// The counters' growth between two snapshots of the same server, or the reason it cannot be
/// trusted: a counter that went down (or a label set that vanished) means the server restarted
/// inside the window, and the figure would be wrong.
pub fn window_delta(before: &CounterSet, after: &CounterSet) -> Result<SpecCounters, String> {
    if before.prefix != after.prefix {
        return Err(format!(
            "The server's counters changed engine during the window ({} before, {} after)",
            before.prefix, after.prefix
        ));
    }
    for (key, b) in &before.series {
        let Some(a) = after.series.get(key) else {
            return Err(format!(
                "Counter reset detected: {} is missing after the benchmark window (server restarted?)",
                before.counter_name(Family::Drafts, key)
            ));
        };
        let went_down = scalars(b, a)
            .into_iter()
            .find(|(_, bv, av)| av < bv)
            .map(|(family, bv, av)| (before.counter_name(family, key), bv, av))
            .or_else(|| {
                b.accepted_per_pos
                    .iter()
                    .filter_map(|(pos, bv)| a.accepted_per_pos.get(pos).map(|av| (*pos, *bv, *av)))
                    .find(|(_, bv, av)| av < bv)
                    .map(|(pos, bv, av)| (before.counter_name(Family::PerPos, &with_position(key, pos)), bv, av))
            });
        if let Some((name, bv, av)) = went_down {
            return Err(format!(
                "Counter reset detected: {name} went down from {bv} to {av} during the benchmark window (server restarted?)"
            ));
        }
    }
    let (b, a) = (&before.total, &after.total);
    let grown = |bv: Option<u64>, av: Option<u64>| av.map(|av| av.saturating_sub(bv.unwrap_or(0)));
    let mut delta = SpecCounters {
        num_drafts: a.num_drafts.saturating_sub(b.num_drafts),
        num_draft_tokens: a.num_draft_tokens.saturating_sub(b.num_draft_tokens),
        num_accepted_tokens: a.num_accepted_tokens.saturating_sub(b.num_accepted_tokens),
        accepted_per_pos: BTreeMap::new(),
        generation_tokens: grown(b.generation_tokens, a.generation_tokens),
        requests: grown(b.requests, a.requests),
    };
    let positions: BTreeSet<u32> = b
        .accepted_per_pos
        .keys()
        .chain(a.accepted_per_pos.keys())
        .copied()
        .collect();
    for pos in positions {
        let bv = b.accepted_per_pos.get(&pos).copied().unwrap_or(0);
        let av = a.accepted_per_pos.get(&pos).copied().unwrap_or(bv);
        delta.accepted_per_pos.insert(pos, av.saturating_sub(bv));
    }
    Ok(delta)
}

/// The scalar counters of one series before and after, by family (the SGLang-only ones when
/// present).
fn scalars(b: &SpecCounters, a: &SpecCounters) -> Vec<(Family, u64, u64)> {
    let mut out = vec![
        (Family::Drafts, b.num_drafts, a.num_drafts),
        (Family::DraftTokens, b.num_draft_tokens, a.num_draft_tokens),
        (Family::Accepted, b.num_accepted_tokens, a.num_accepted_tokens),
    ];
    if let (Some(bv), Some(av)) = (b.generation_tokens, a.generation_tokens) {
        out.push((Family::Generation, bv, av));
    }
    if let (Some(bv), Some(av)) = (b.requests, a.requests) {
        out.push((Family::Requests, bv, av));
    }
    out
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
    /// Only SGLang's gauges are there (the named counters are missing): no window delta.
    GaugesOnly { missing: Vec<String> },
    /// The endpoint answered JSON, not Prometheus text (TensorRT-LLM's `/metrics`).
    JsonBody,
    /// TensorRT-LLM's Prometheus endpoint is not mounted.
    TrtllmNotMounted,
    /// TensorRT-LLM's Prometheus text has no `trtllm_spec_decode_*` counters.
    TrtllmNoSpec,
}

impl fmt::Display for ScrapeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScrapeFailure::Http(code) => write!(f, "Metrics endpoint returned HTTP {code}"),
            ScrapeFailure::Fetch { url, cause } => write!(f, "Failed to fetch metrics from {url}: {cause}"),
            ScrapeFailure::Invalid(err) => write!(f, "Invalid metrics text: {err}"),
            ScrapeFailure::NoSpecMetrics => f.write_str("No spec decode metrics found on server"),
            ScrapeFailure::GaugesOnly { missing } if missing.is_empty() => f.write_str(
                "No spec decode counters on server (only SGLang's gauges, so no window delta is possible)",
            ),
            ScrapeFailure::GaugesOnly { missing } => write!(
                f,
                "No window delta: SGLang's {} missing (only its gauges are there; SGLang versions with sglang:spec_verify_calls_total have them)",
                missing.join(", ")
            ),
            ScrapeFailure::JsonBody => f.write_str(
                "Metrics endpoint answered JSON, not Prometheus text (TensorRT-LLM's /metrics gives iteration stats; its Prometheus text is at /prometheus/metrics)",
            ),
            ScrapeFailure::TrtllmNotMounted => f.write_str(
                "TensorRT-LLM's /prometheus/metrics is not there (HTTP 404): start trtllm-serve with `return_perf_metrics: true` in --extra_llm_api_options, and `enable_iter_perf_stats: true` for the spec decode metrics",
            ),
            ScrapeFailure::TrtllmNoSpec => f.write_str(
                "No trtllm_spec_decode_* counters on TensorRT-LLM's /prometheus/metrics: set `enable_iter_perf_stats: true` in --extra_llm_api_options (beside `return_perf_metrics: true`)",
            ),
        }
    }
}

/// Turn a fetched body into counters, or the failure to report for that phase.
pub fn counters_from_text(text: &str) -> Result<CounterSet, ScrapeFailure> {
    let body = text.trim_start_matches('\u{feff}').trim_start();
    if body.starts_with('{') || body.starts_with('[') {
        return Err(ScrapeFailure::JsonBody);
    }
    let snapshot = parse_metrics(text).map_err(ScrapeFailure::Invalid)?;
    match snapshot {
        MetricsSnapshot { counters: Some(c), .. } => Ok(c),
        MetricsSnapshot {
            sglang: Some(_),
            sglang_missing,
            ..
        } => Err(ScrapeFailure::GaugesOnly {
            missing: sglang_missing,
        }),
        MetricsSnapshot {
            engine: Some(Schema::Trtllm),
            ..
        } => Err(ScrapeFailure::TrtllmNoSpec),
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

/// Combine the two phases' scrapes of one server into its window result (vLLM's schema, or
/// one whose gauges are not needed).
pub fn window_result(
    url: &str,
    before: Result<CounterSet, ScrapeFailure>,
    after: Result<CounterSet, ScrapeFailure>,
) -> SpecDecodeResult {
    window_result_with(url, before, after, &GaugeMeans::default())
}

/// Combine the two phases' scrapes of one server, and its gauges over the window, into its
/// window result.
pub fn window_result_with(
    url: &str,
    before: Result<CounterSet, ScrapeFailure>,
    after: Result<CounterSet, ScrapeFailure>,
    gauges: &GaugeMeans,
) -> SpecDecodeResult {
    // llama.cpp adds its spec-decode families once something was drafted: none before the
    // window means zero then.
    let before = match (before, &after) {
        (Err(ScrapeFailure::NoSpecMetrics), Ok(a)) if a.schema() == Schema::LlamaCpp => Ok(a.zeroed()),
        (before, _) => before,
    };
    let raw = RawPhases {
        before: before.as_ref().ok().map(|c| c.total.clone()),
        after: after.as_ref().ok().map(|c| c.total.clone()),
    };
    let outcome = match (&before, &after) {
        (Ok(b), Ok(a)) => window_delta(b, a).and_then(|d| derive(a.schema(), &d, &WindowFacts::between(b, a, gauges))),
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

/// The longest file label [`unique_file_labels`] makes (a file name must stay well under the
/// file system's 255 bytes with its prefix and extension).
pub const MAX_FILE_LABEL_CHARS: usize = 64;

/// A file label for each name, as [`result_file_label`] makes it, cut to
/// [`MAX_FILE_LABEL_CHARS`], and made unique: names that clean to the same label (`a/b`, `a_b`,
/// `a?b`) get `-2`, `-3`… in their order, so none overwrites another's file. The names
/// themselves are kept inside the files.
pub fn unique_file_labels(names: &[String]) -> Vec<String> {
    let mut taken = BTreeSet::new();
    names
        .iter()
        .map(|name| {
            let base: String = result_file_label(name).chars().take(MAX_FILE_LABEL_CHARS).collect();
            let mut label = base.clone();
            let mut n = 1;
            while !taken.insert(label.clone()) {
                n += 1;
                label = format!("{base}-{n}");
            }
            label
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
            let or_na = |v: Option<String>| v.unwrap_or_else(|| "N/A".to_string());
            row("Acceptance rate (%)", d.rate_text());
            row("Acceptance length", d.length_text());
            row("Drafts", or_na(d.num_drafts.map(|v| v.to_string())));
            row("Draft tokens", or_na(d.draft_tokens.map(|v| v.to_string())));
            row("Accepted tokens", d.accepted_tokens.to_string());
            let per_pos: Vec<String> = d
                .per_position_acceptance_rates
                .iter()
                .map(|(p, r)| format!("{p}: {r:.4}"))
                .collect();
            row("Per-position acceptance rates", format!("{{{}}}", per_pos.join(", ")));
            for note in &d.notes {
                row("Note", note.clone());
            }
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
    /// The resets detected, each naming the counter (the first few in full).
    pub resets: CappedLog,
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
                        resets.record(|| format!("{} went down from {was} to {now}: counted as a restart", name()));
                        now
                    }
                };
                let scalar = |family: Family| move || next.counter_name(family, key);
                step.num_drafts = grow(&scalar(Family::Drafts), was.num_drafts, now.num_drafts);
                step.num_draft_tokens = grow(&scalar(Family::DraftTokens), was.num_draft_tokens, now.num_draft_tokens);
                step.num_accepted_tokens = grow(
                    &scalar(Family::Accepted),
                    was.num_accepted_tokens,
                    now.num_accepted_tokens,
                );
                if let (Some(w), Some(n)) = (was.generation_tokens, now.generation_tokens) {
                    step.generation_tokens = Some(grow(&scalar(Family::Generation), w, n));
                }
                if let (Some(w), Some(n)) = (was.requests, now.requests) {
                    step.requests = Some(grow(&scalar(Family::Requests), w, n));
                }
                for (pos, v) in &now.accepted_per_pos {
                    let w = was.accepted_per_pos.get(pos).copied().unwrap_or(0);
                    let name = || next.counter_name(Family::PerPos, &with_position(key, *pos));
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
    use crate::results::EngineLoad;

    #[test]
    fn engine_load_over_a_window() {
        let text = |kv: f64, running: u32, preempted: u32| {
            format!(
                "vllm:kv_cache_usage_perc{{engine=\"0\"}} {kv}\nvllm:kv_cache_usage_perc{{engine=\"1\"}} {kv}\n\
                 vllm:num_requests_running{{engine=\"0\"}} {running}\nvllm:num_requests_waiting{{engine=\"0\"}} 1\n\
                 vllm:num_preemptions_total{{engine=\"0\"}} {preempted}.0\n"
            )
        };
        let before = LoadSample::of_text(&text(0.0, 0, 3)).unwrap();
        let during = [
            LoadSample::of_text(&text(0.5, 8, 4)).unwrap(),
            LoadSample::of_text(&text(0.1, 2, 6)).unwrap(),
        ];
        let after = LoadSample::of_text(&text(0.0, 0, 7)).unwrap();
        let load = EngineLoad::over(Some(&before), &during, Some(&after)).unwrap();
        assert_eq!(load.kv_cache_usage_mean, Some(0.3));
        assert_eq!(load.kv_cache_usage_max, Some(0.5));
        assert_eq!(
            (load.preemptions, load.running_mean, load.scrapes),
            (Some(4), Some(5.0), 2)
        );
        // Without live scrapes only the preemptions are known (the idle after-scrape is no mean).
        let bare = EngineLoad::over(Some(&before), &[], Some(&after)).unwrap();
        assert_eq!((bare.kv_cache_usage_mean, bare.preemptions), (None, Some(4)));
        // A counter reset gives no preemption count, not a silent zero; no families: nothing.
        let reset = EngineLoad::over(Some(&after), &during, Some(&before)).unwrap();
        assert_eq!(reset.preemptions, None);
        assert_eq!(LoadSample::of_text("vllm:spec_decode_num_drafts_total 3\n"), None);
        assert_eq!(LoadSample::of_text("not exposition {"), None);
    }

    fn counters(drafts: u64, tokens: u64, accepted: u64, per_pos: &[u64]) -> SpecCounters {
        SpecCounters::new(drafts, tokens, accepted, per_pos)
    }

    fn single(c: SpecCounters) -> CounterSet {
        CounterSet {
            prefix: "vllm:".into(),
            total: c.clone(),
            series: [("engine=\"0\"".to_string(), c)].into_iter().collect(),
            gauges: BTreeMap::new(),
            rounded_max: None,
            missing: Vec::new(),
        }
    }

    #[test]
    fn aisbench_delta_example() {
        let before = single(counters(100, 500, 300, &[100, 90, 75, 50, 30]));
        let after = single(counters(15520, 77600, 50415, &[15520, 13968, 11640, 7760, 4656]));
        let delta = window_delta(&before, &after).unwrap();
        let d = derive_stats(&delta).unwrap();
        assert_eq!(
            (d.num_drafts, d.draft_tokens, d.accepted_tokens),
            (Some(15420), Some(77100), 50115)
        );
        assert!((d.acceptance_rate.unwrap() - 65.0).abs() < 1e-12);
        assert!((d.acceptance_length.unwrap() - 4.25).abs() < 1e-12);
        let want = [1.0, 0.9, 0.75, 0.5, 0.3];
        for (i, w) in want.iter().enumerate() {
            assert!((d.per_position_acceptance_rates[&(i as u32)] - w).abs() < 1e-12);
        }
    }

    #[test]
    fn aisbench_documentation_example() {
        let d = derive_stats(&counters(163, 815, 809, &[])).unwrap();
        assert_eq!(format!("{:.2}", d.acceptance_rate.unwrap()), "99.26");
        assert_eq!(format!("{:.2}", d.acceptance_length.unwrap()), "5.96");
    }

    #[test]
    fn no_draft_tokens_is_na_and_no_drafts_gives_zero_length() {
        assert_eq!(derive_stats(&counters(0, 0, 0, &[0])).unwrap_err(), NO_ACTIVITY);
        let d = derive_stats(&counters(0, 10, 4, &[3])).unwrap();
        assert_eq!(d.acceptance_length, Some(0.0));
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
    fn names_that_clean_alike_get_labels_of_their_own_and_long_ones_are_cut() {
        let names: Vec<String> = ["a/b", "a_b", "a?b", "a_b-2", &"x".repeat(300)]
            .map(String::from)
            .to_vec();
        let labels = unique_file_labels(&names);
        assert_eq!(labels[..3], ["a_b", "a_b-2", "a_b-3"]);
        // A name whose own label is taken by a suffix gets the next.
        assert_eq!(labels[3], "a_b-2-2");
        assert_eq!(labels[4], "x".repeat(MAX_FILE_LABEL_CHARS));
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
    fn a_missing_family_voids_only_the_figures_that_need_it() {
        let no_drafts = "vllm:spec_decode_num_draft_tokens_total 30\nvllm:spec_decode_num_accepted_tokens_total 12\n";
        let c = parse_metrics(no_drafts).unwrap().counters.unwrap();
        assert_eq!(c.missing, vec!["vllm:spec_decode_num_drafts_total".to_string()]);
        let d = derive_since_start(&c).unwrap();
        assert_eq!(
            (d.num_drafts, d.draft_tokens, d.acceptance_rate, d.acceptance_length),
            (None, Some(30), Some(40.0), None)
        );
        assert!(
            d.notes[0].contains("vllm:spec_decode_num_drafts_total"),
            "{:?}",
            d.notes
        );
        let no_tokens = "vllm:spec_decode_num_drafts_total 10\nvllm:spec_decode_num_accepted_tokens_total 12\n";
        let c = parse_metrics(no_tokens).unwrap().counters.unwrap();
        let d = derive_since_start(&c).unwrap();
        assert_eq!(
            (d.num_drafts, d.draft_tokens, d.acceptance_rate, d.acceptance_length),
            (Some(10), None, None, Some(2.2))
        );
        // The window between two such scrapes keeps the reason.
        let r = window_result("u", Ok(c.zeroed()), Ok(c));
        assert!(r.data.unwrap().notes[0].contains("num_draft_tokens_total"));
    }

    #[test]
    fn small_rates_are_written_as_python_writes_them() {
        let d = derive_stats(&counters(100_000, 300_000, 3, &[1, 0])).unwrap();
        let json = serde_json::to_string(&d).unwrap();
        assert!(
            json.contains(r#""per_position_acceptance_rates":{"0":1e-05,"1":0.0}"#),
            "{json}"
        );
        let back: SpecDecodeData = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
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
            Err(ScrapeFailure::GaugesOnly { missing: vec![] })
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
        assert_eq!(acc.resets.count, 4);
        assert!(acc.resets.kept[0].contains("vllm:spec_decode_num_drafts_total{engine=\"0\"} went down from 110 to 4"));
    }
}
