//! Cross-checks that catch an engine counting tokens it never emitted, each a warning naming
//! the upstream issue it points at: a request whose steps and accepted drafts add up to more
//! than its completion tokens (vLLM #56101, SGLang #39826), and TensorRT-LLM's per-position
//! counters held at 0 while its iteration counters rise (TensorRT-LLM #17082).

use std::collections::BTreeMap;

use crate::engine::Engine;
use crate::request::per_request::SpecRecord;

/// vLLM counts the drafts a step accepted before it stops the sequence, so an end-of-sequence
/// (or `max_tokens`) inside the accepted prefix leaves tokens counted that were never emitted.
pub const VLLM_PAST_END: &str =
    "vllm-project/vllm #56101 (acceptance counted past an end of sequence inside the accepted prefix)";
/// SGLang counts the reasoning parser's tokens past the end of sequence.
pub const SGLANG_PAST_END: &str = "sgl-project/sglang #39826 (reasoning tokens counted past the end of sequence)";
/// TensorRT-LLM's PyTorch path left the per-position pair at 0 before its fix.
pub const TRTLLM_FLAT_POSITIONS: &str =
    "NVIDIA/TensorRT-LLM #17082 (per-position counters at 0 on the PyTorch path while the iteration counters rise)";

/// The share of the accepted draft tokens counted past the end below which the per-request
/// check stays quiet: vLLM counts a last step's accepted drafts past `max_tokens` too (the same
/// counting as #56101), a bias of a few tenths of a percent on outputs of a hundred tokens.
pub const PAST_END_SHARE_MIN: f64 = 0.01;

/// The upstream issue a per-request over-count on `engine` points at.
fn past_end_source(engine: Engine) -> &'static str {
    match engine {
        Engine::Sglang => SGLANG_PAST_END,
        // vLLM's is the known case; the other engines' records are read with its definitions.
        Engine::Vllm | Engine::Trtllm | Engine::LlamaCpp => VLLM_PAST_END,
    }
}

/// Requests whose stats count more tokens than they emitted, by engine.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PastEndTally {
    by_engine: BTreeMap<Engine, PastEnd>,
}

/// What one engine's over-counting requests add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct PastEnd {
    /// Requests checked (their completion tokens known, some step taken).
    checked: u64,
    /// Requests whose Σ (1 + accepted per step) exceeds their completion tokens.
    over: u64,
    /// Tokens counted beyond the completion tokens, over those requests.
    excess_tokens: u64,
    /// Requests whose accepted draft tokens alone exceed their completion tokens.
    accepted_above: u64,
    /// Accepted draft tokens of every request checked.
    accepted_tokens: u64,
}

impl PastEndTally {
    /// Checks one request's record: every verify step emits one token plus the drafts it
    /// accepted, so Σ (1 + accepted per step) = steps + accepted is at most the completion
    /// tokens (the prefill's first token is among them).
    pub fn push(&mut self, r: &SpecRecord) {
        let Some(completion) = r.completion_tokens else {
            return;
        };
        if r.num_spec_steps == 0 {
            return;
        }
        let e = self.by_engine.entry(r.engine).or_default();
        e.checked += 1;
        e.accepted_tokens = e.accepted_tokens.saturating_add(r.num_accepted_draft_tokens);
        let counted = r.num_spec_steps.saturating_add(r.num_accepted_draft_tokens);
        if counted > completion {
            e.over += 1;
            e.excess_tokens = e.excess_tokens.saturating_add(counted - completion);
        }
        if r.num_accepted_draft_tokens > completion {
            e.accepted_above += 1;
        }
    }

    /// One warning per engine whose requests over-count by at least [`PAST_END_SHARE_MIN`] of
    /// their accepted draft tokens (or whose accepted tokens alone exceed a completion), with
    /// that share and the issue it points at.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (engine, e) in &self.by_engine {
            let share = e.excess_tokens as f64 / e.accepted_tokens.max(1) as f64;
            if e.over == 0 || (share < PAST_END_SHARE_MIN && e.accepted_above == 0) {
                continue;
            }
            let mut text = format!(
                "Counting check: {} of {} {} requests count more tokens than they emitted (Σ (1 + accepted per step) above completion_tokens), {} tokens in all ({:.1} % of the accepted draft tokens), so acceptance reads high",
                e.over,
                e.checked,
                engine.display_name(),
                e.excess_tokens,
                share * 100.0
            );
            if e.accepted_above > 0 {
                text.push_str(&format!(
                    "; in {} of them the accepted draft tokens alone exceed completion_tokens",
                    e.accepted_above
                ));
            }
            text.push_str(&format!(": {}", past_end_source(*engine)));
            out.push(text);
        }
        out
    }
}

/// TensorRT-LLM's per-position pair present but at 0 in every position while its iteration
/// counter counted `iteration_draft_tokens` (both since the server started): the warning.
pub fn flat_positions_warning(
    drafted_per_pos: &BTreeMap<u32, u64>,
    accepted_per_pos: &BTreeMap<u32, u64>,
    iteration_draft_tokens: u64,
) -> Option<String> {
    let present = !drafted_per_pos.is_empty() || !accepted_per_pos.is_empty();
    let flat = drafted_per_pos
        .values()
        .chain(accepted_per_pos.values())
        .all(|v| *v == 0);
    (present && flat && iteration_draft_tokens > 0).then(|| {
        format!(
            "Counting check: TensorRT-LLM's per-position counters (trtllm_spec_decode_drafted_tokens_total and trtllm_spec_decode_accepted_tokens_total by token_position) stand at 0 while its iteration counter counted {iteration_draft_tokens} draft tokens, so drafts and per-position rates are left out and the length comes from its gauges: {TRTLLM_FLAT_POSITIONS}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(engine: Engine, steps: u64, accepted: u64, completion: Option<u64>) -> SpecRecord {
        SpecRecord {
            engine,
            mean_acceptance_length: 1.0 + accepted as f64 / steps as f64,
            draft_acceptance_rate: 0.5,
            acceptance_histogram: BTreeMap::new(),
            num_accepted_draft_tokens: accepted,
            num_draft_tokens: accepted * 2,
            num_spec_steps: steps,
            num_spec_tokens: Some(3),
            completion_tokens: completion,
            per_step_accepted: None,
            per_step_drafted: None,
            unmerged_pr: None,
        }
    }

    #[test]
    fn a_request_counting_past_its_end_is_named_with_its_engine_s_issue() {
        let mut t = PastEndTally::default();
        // Clean: 10 steps and 20 accepted emit 30 tokens after the prefill's one.
        t.push(&record(Engine::Vllm, 10, 20, Some(31)));
        // Exactly what a clean request may count (its first token not from a step).
        t.push(&record(Engine::Vllm, 10, 21, Some(31)));
        // One token past max_tokens in 200 accepted: under 1 %, the last step's truncation.
        t.push(&record(Engine::Vllm, 100, 200, Some(299)));
        // Unknown completion tokens: not checked.
        t.push(&record(Engine::Vllm, 10, 90, None));
        assert_eq!(t.warnings(), Vec::<String>::new());
        // vLLM #56101's case: 6 counted where 3 tokens were emitted.
        t.push(&record(Engine::Vllm, 2, 4, Some(3)));
        let w = t.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("2 of 4 vLLM requests") && w[0].contains("4 tokens in all"),
            "{w:?}"
        );
        assert!(
            w[0].contains("#56101") && w[0].contains("accepted draft tokens alone exceed"),
            "{w:?}"
        );
        // SGLang's over-count names its own issue.
        t.push(&record(Engine::Sglang, 4, 8, Some(9)));
        let w = t.warnings();
        assert!(w.iter().any(|w| w.contains("SGLang") && w.contains("#39826")), "{w:?}");
    }

    #[test]
    fn per_position_counters_at_zero_under_rising_iterations_are_named() {
        let zero: BTreeMap<u32, u64> = [(0, 0), (1, 0)].into();
        let counted: BTreeMap<u32, u64> = [(0, 10), (1, 4)].into();
        let none = BTreeMap::new();
        assert!(flat_positions_warning(&zero, &zero, 500).unwrap().contains("#17082"));
        assert_eq!(flat_positions_warning(&counted, &counted, 500), None);
        assert_eq!(
            flat_positions_warning(&none, &none, 500),
            None,
            "a build without the pair"
        );
        assert_eq!(flat_positions_warning(&zero, &zero, 0), None, "nothing drafted yet");
    }
}
