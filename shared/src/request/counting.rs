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

/// The upstream issue a per-request over-count on `engine` points at.
fn past_end_source(engine: Engine) -> String {
    match engine {
        Engine::Vllm => VLLM_PAST_END.to_string(),
        Engine::Sglang => SGLANG_PAST_END.to_string(),
        Engine::Trtllm | Engine::LlamaCpp => format!("the counting {VLLM_PAST_END} describes"),
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
    /// Requests whose Σ (1 + accepted per step) exceeds their completion tokens by more than
    /// a last step cut short can (k − 1: its accepted drafts past `max_tokens` or an end of
    /// sequence, counted by vLLM though never emitted).
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
    /// tokens (the prefill's first token is among them) plus what a last step cut short by
    /// `max_tokens` leaves counted, k − 1 at most.
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
        // k as the record names it, else its drafted tokens per step.
        let k = r
            .num_spec_tokens
            .map(u64::from)
            .unwrap_or_else(|| r.num_draft_tokens.div_ceil(r.num_spec_steps));
        if counted > completion.saturating_add(k.saturating_sub(1)) {
            e.over += 1;
            e.excess_tokens = e.excess_tokens.saturating_add(counted - completion);
        }
        if r.num_accepted_draft_tokens > completion {
            e.accepted_above += 1;
        }
    }

    /// One warning per engine whose requests count more than a last step cut short can, with
    /// the share of accepted tokens never emitted and the issue it points at.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (engine, e) in self
            .by_engine
            .iter()
            .filter(|(_, e)| e.over > 0 || e.accepted_above > 0)
        {
            let share = if e.accepted_tokens > 0 {
                format!(
                    " ({:.1} % of the accepted draft tokens)",
                    e.excess_tokens as f64 / e.accepted_tokens as f64 * 100.0
                )
            } else {
                String::new()
            };
            let mut text = format!(
                "Counting check: {} of {} {} requests count more tokens than they emitted (Σ (1 + accepted per step) above completion_tokens by more than a last step cut short can), {} tokens in all{share}, so acceptance reads high",
                e.over,
                e.checked,
                engine.display_name(),
                e.excess_tokens
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
        // A last step cut short by max_tokens: up to k − 1 = 2 tokens counted past the end.
        t.push(&record(Engine::Vllm, 100, 200, Some(299)));
        t.push(&record(Engine::Vllm, 100, 200, Some(298)));
        // Unknown completion tokens: not checked.
        t.push(&record(Engine::Vllm, 10, 90, None));
        assert_eq!(t.warnings(), Vec::<String>::new());
        // vLLM #56101's case: 6 counted where 3 tokens were emitted.
        t.push(&record(Engine::Vllm, 2, 4, Some(3)));
        let w = t.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("1 of 5 vLLM requests") && w[0].contains("3 tokens in all"),
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
