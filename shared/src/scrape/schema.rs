//! Which engine a `/metrics` text comes from and the names of its spec-decode families: the
//! schemas (vLLM's, copied by llama.cpp and TensorRT-LLM under their own prefixes, and SGLang's
//! verify, generation and request counters), each family's metric name, the families a window
//! needs, and the engine gauges a window averages.

use serde::{Deserialize, Serialize};

/// Prefixes of the spec-decode counters, one per engine (llama.cpp copies vLLM's families).
pub const COUNTER_PREFIXES: [&str; 4] = [
    Schema::ALL[0].prefix(),
    Schema::ALL[1].prefix(),
    Schema::ALL[2].prefix(),
    Schema::ALL[3].prefix(),
];

pub(crate) const DRAFTS: &str = "spec_decode_num_drafts_total";
pub(crate) const DRAFT_TOKENS: &str = "spec_decode_num_draft_tokens_total";
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
    /// Every schema, in the order their prefixes are tried.
    pub const ALL: [Schema; 4] = [Schema::Vllm, Schema::LlamaCpp, Schema::Trtllm, Schema::Sglang];

    /// The prefix of the engine's metric names.
    pub const fn prefix(self) -> &'static str {
        match self {
            Schema::Vllm => "vllm:",
            Schema::LlamaCpp => "llamacpp:",
            Schema::Trtllm => "trtllm_",
            Schema::Sglang => "sglang:",
        }
    }

    /// The schema of a counter set's prefix (vLLM's for one no engine uses).
    pub(crate) fn of_prefix(prefix: &str) -> Schema {
        Schema::ALL
            .into_iter()
            .find(|s| s.prefix() == prefix)
            .unwrap_or(Schema::Vllm)
    }

    /// The engine whose metric names a sample carries.
    pub(crate) fn of_name(name: &str) -> Option<Schema> {
        Schema::ALL.into_iter().find(|s| name.starts_with(s.prefix()))
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
pub(crate) fn family_of(name: &str) -> Option<(Schema, Family)> {
    let schema = Schema::of_name(name)?;
    let rest = &name[schema.prefix().len()..];
    let family = match rest {
        DRAFTS => Family::Drafts,
        DRAFT_TOKENS => Family::DraftTokens,
        ACCEPTED => Family::Accepted,
        PER_POS => Family::PerPos,
        _ => return None,
    };
    Some((schema, family))
}

/// Any engine's counter family: vLLM's schema under `vllm:`, `llamacpp:` and `trtllm_`, and
/// SGLang's verify, generation and request counters.
pub(crate) fn counter_family(name: &str) -> Option<(Schema, Family)> {
    if let Some(rest) = name.strip_prefix(Schema::Sglang.prefix()) {
        let family = match rest {
            VERIFY_CALLS => Family::Drafts,
            GENERATION => Family::Generation,
            REQUESTS => Family::Requests,
            _ => return None,
        };
        return Some((Schema::Sglang, family));
    }
    family_of(name)
}

/// The family's metric name (without prefix) in a schema.
pub(crate) fn family_name(schema: Schema, family: Family) -> &'static str {
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
pub(crate) fn required(schema: Schema) -> &'static [Family] {
    match schema {
        Schema::Vllm | Schema::LlamaCpp => &[Family::Drafts, Family::DraftTokens, Family::Accepted],
        Schema::Trtllm => &[Family::DraftTokens, Family::Accepted],
        Schema::Sglang => &[Family::Drafts, Family::Generation, Family::Requests],
    }
}
