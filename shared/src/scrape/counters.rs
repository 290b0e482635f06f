//! The spec-decode counters of one scrape: one label set's four counters (`SpecCounters`), the
//! server-level sum beside each label set's (`CounterSet`), the engine's speculative config when
//! it exports one (`SpecConfig`), and the canonical series keys that name them in messages.

use crate::engine::Engine;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::schema::{family_name, position_label, Family};
use crate::scrape::prom::{self, Sample};

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
    /// TensorRT-LLM only: draft tokens proposed at each 0-based position
    /// (`trtllm_spec_decode_drafted_tokens_total{token_position}`); position 0 counts the steps
    /// that drafted at all.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub drafted_per_pos: BTreeMap<u32, u64>,
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
            drafted_per_pos: BTreeMap::new(),
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
        add_by_position(&mut self.accepted_per_pos, &other.accepted_per_pos);
        add_by_position(&mut self.drafted_per_pos, &other.drafted_per_pos);
        let add = |mine: Option<u64>, theirs: Option<u64>| match (mine, theirs) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        self.generation_tokens = add(self.generation_tokens, other.generation_tokens);
        self.requests = add(self.requests, other.requests);
    }
}

fn add_by_position(mine: &mut BTreeMap<u32, u64>, theirs: &BTreeMap<u32, u64>) {
    for (pos, v) in theirs {
        let slot = mine.entry(*pos).or_default();
        *slot = slot.saturating_add(*v);
    }
}

/// The speculative config an engine exports as an info gauge (TensorRT-LLM's
/// `trtllm_speculative_config_info`, whose labels carry it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecConfig {
    /// The proposer (`spec_method`: `Eagle`, `NGram`, `MTP`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Draft tokens a step proposes at most (`spec_num_tokens`): k.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_spec_tokens: Option<u32>,
    /// The draft model, where there is one (`spec_draft_model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_model: Option<String>,
}

impl SpecConfig {
    /// One line for notes and the console: `method Eagle, k = 3, draft model eagle-3b`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = &self.method {
            parts.push(format!("method {m}"));
        }
        if let Some(k) = self.num_spec_tokens {
            parts.push(format!("k = {k}"));
        }
        if let Some(d) = &self.draft_model {
            parts.push(format!("draft model {d}"));
        }
        parts.join(", ")
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
    /// The speculative config the engine exports (TensorRT-LLM), when the scrape has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_config: Option<SpecConfig>,
}

impl CounterSet {
    /// The same series, every counter at zero (a server before its first draft).
    pub fn zeroed(&self) -> CounterSet {
        let zero = |c: &SpecCounters| SpecCounters {
            accepted_per_pos: c.accepted_per_pos.keys().map(|p| (*p, 0)).collect(),
            drafted_per_pos: c.drafted_per_pos.keys().map(|p| (*p, 0)).collect(),
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
            spec_config: self.spec_config.clone(),
        }
    }

    /// The engine schema the counters follow.
    pub fn schema(&self) -> Engine {
        Engine::of_prefix(&self.prefix)
    }

    /// The distinct values of the `engine` label (vLLM's data-parallel engines; 1 for a
    /// server whose series carry none).
    pub fn engines(&self) -> u32 {
        self.by_label("engine").len() as u32
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

    pub(crate) fn counter_name(&self, family: Family, series: &str) -> String {
        format!("{}{}{{{}}}", self.prefix, family_name(self.schema(), family), series)
    }

    /// [`CounterSet::counter_name`] of one position of a per-position family.
    pub(crate) fn position_name(&self, family: Family, series: &str, pos: u32) -> String {
        let key = with_position(series, position_label(self.schema()), pos);
        self.counter_name(family, &key)
    }
}

/// Canonical text of a sample's labels minus the draft position (`position`, TensorRT-LLM's
/// `token_position`): sorted by name, values escaped as in the exposition format.
pub(crate) fn series_key(sample: &Sample<'_>) -> String {
    let mut labels: Vec<_> = sample
        .labels()
        .filter(|(n, _)| *n != "position" && *n != "token_position")
        .collect();
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

/// A series key with its position label (`position`, `token_position`) added back, for messages.
pub(crate) fn with_position(key: &str, label: &str, pos: u32) -> String {
    if key.is_empty() {
        format!("{label}=\"{pos}\"")
    } else {
        format!("{key},{label}=\"{pos}\"")
    }
}

/// The unescaped value of `label` in a canonical series key.
fn label_value(key: &str, label: &str) -> Option<String> {
    let text = format!("m{{{key}}} 0");
    let sample = prom::samples(&text).next()?.ok()?;
    sample.label(label).map(|v| v.into_owned())
}
