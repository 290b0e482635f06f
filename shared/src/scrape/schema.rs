//! Which engine a `/metrics` text comes from and the names of its spec-decode families: the
//! schemas (vLLM's, copied by llama.cpp and TensorRT-LLM under their own prefixes, and SGLang's
//! verify, generation and request counters, and TensorRT-LLM's per-position pair), each family's
//! metric name, the families a window needs, and the engine gauges a window averages.

use crate::engine::Engine;

/// Prefixes of the spec-decode counters, one per engine (llama.cpp copies vLLM's families).
pub const COUNTER_PREFIXES: [&str; 4] = [
    Engine::ALL[0].prefix(),
    Engine::ALL[1].prefix(),
    Engine::ALL[2].prefix(),
    Engine::ALL[3].prefix(),
];

pub(crate) const DRAFTS: &str = "spec_decode_num_drafts_total";
pub(crate) const DRAFT_TOKENS: &str = "spec_decode_num_draft_tokens_total";
const ACCEPTED: &str = "spec_decode_num_accepted_tokens_total";
const PER_POS: &str = "spec_decode_num_accepted_tokens_per_pos_total";
const VERIFY_CALLS: &str = "spec_verify_calls_total";
const GENERATION: &str = "generation_tokens_total";
const REQUESTS: &str = "num_requests_total";
/// TensorRT-LLM's per-request pair, added when each request finishes, by `token_position`:
/// draft tokens proposed at each position, and those accepted.
const DRAFTED_AT_POS: &str = "spec_decode_drafted_tokens_total";
const ACCEPTED_AT_POS: &str = "spec_decode_accepted_tokens_total";

/// TensorRT-LLM's info gauge of its speculative config (`spec_method`, `spec_num_tokens`,
/// `spec_draft_model` labels, value 1).
pub(crate) const TRTLLM_SPEC_CONFIG_INFO: &str = "trtllm_speculative_config_info";

/// The engine gauges a window averages (TensorRT-LLM's and SGLang's), by full metric name.
pub const ENGINE_GAUGES: [&str; 9] = [
    "trtllm_spec_decode_acceptance_length",
    "trtllm_avg_decoded_tokens_per_iter",
    "trtllm_spec_decode_draft_overhead",
    "sglang:spec_accept_length",
    "sglang:spec_accept_rate",
    "sglang:spec_num_steps",
    "sglang:spec_num_draft_tokens",
    // SGLang 0.5.23's DSpark proposer: its draft cap and its accepted length per block.
    "sglang:spec_cap_length",
    "sglang:spec_block_accept_length",
];

/// A spec-decode counter family, whatever the engine's name for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Drafts,
    DraftTokens,
    Accepted,
    /// Accepted tokens by position: vLLM's `…_per_pos_total{position}` (drafts whose first
    /// i + 1 tokens were accepted), TensorRT-LLM's `…_accepted_tokens_total{token_position}`
    /// (the same count, added when each request finishes).
    PerPos,
    /// TensorRT-LLM's draft tokens proposed at each position (`token_position`); position 0
    /// counts the steps that drafted at all.
    DraftedPerPos,
    Generation,
    Requests,
}

/// A spec-decode counter family of vLLM's schema under any prefix (the Prometheus path's view).
pub(crate) fn family_of(name: &str) -> Option<(Engine, Family)> {
    let schema = Engine::of_metric_name(name)?;
    let rest = &name[schema.prefix().len()..];
    let family = match rest {
        DRAFTS => Family::Drafts,
        DRAFT_TOKENS => Family::DraftTokens,
        ACCEPTED => Family::Accepted,
        PER_POS => Family::PerPos,
        ACCEPTED_AT_POS if schema == Engine::Trtllm => Family::PerPos,
        DRAFTED_AT_POS if schema == Engine::Trtllm => Family::DraftedPerPos,
        _ => return None,
    };
    Some((schema, family))
}

/// Any engine's counter family: vLLM's schema under `vllm:`, `llamacpp:` and `trtllm_`, and
/// SGLang's verify, generation and request counters.
pub(crate) fn counter_family(name: &str) -> Option<(Engine, Family)> {
    if let Some(rest) = name.strip_prefix(Engine::Sglang.prefix()) {
        let family = match rest {
            VERIFY_CALLS => Family::Drafts,
            GENERATION => Family::Generation,
            REQUESTS => Family::Requests,
            _ => return None,
        };
        return Some((Engine::Sglang, family));
    }
    family_of(name)
}

/// The family's metric name (without prefix) in a schema.
pub fn family_name(schema: Engine, family: Family) -> &'static str {
    match (schema, family) {
        (Engine::Sglang, Family::Drafts) => VERIFY_CALLS,
        (_, Family::Drafts) => DRAFTS,
        (_, Family::DraftTokens) => DRAFT_TOKENS,
        (_, Family::Accepted) => ACCEPTED,
        (Engine::Trtllm, Family::PerPos) => ACCEPTED_AT_POS,
        (_, Family::PerPos) => PER_POS,
        (_, Family::DraftedPerPos) => DRAFTED_AT_POS,
        (_, Family::Generation) => GENERATION,
        (_, Family::Requests) => REQUESTS,
    }
}

/// The label that carries the draft position on a schema's per-position families.
pub fn position_label(schema: Engine) -> &'static str {
    match schema {
        Engine::Trtllm => "token_position",
        _ => "position",
    }
}

/// The families a schema must have for a window; the others are optional. TensorRT-LLM's
/// per-position pair stands in for its iteration counters when those are off.
pub(crate) fn required(schema: Engine) -> &'static [Family] {
    match schema {
        Engine::Vllm | Engine::LlamaCpp => &[Family::Drafts, Family::DraftTokens, Family::Accepted],
        Engine::Trtllm => &[Family::DraftTokens, Family::Accepted],
        Engine::Sglang => &[Family::Drafts, Family::Generation, Family::Requests],
    }
}
