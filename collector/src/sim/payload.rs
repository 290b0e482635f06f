//! The sim's payload dialects: how one simulated reply is written as each engine writes it
//! (vLLM's `metrics.speculative_decoding` at its levels, SGLang's `meta_info`, TensorRT-LLM's
//! released and pending shapes, llama.cpp's), for chat and text completions, whole or streamed.

use serde_json::{json, Value};

use speclens_shared::engine::Engine;

use super::engine::{FinishReason, SeqStats};

/// Where per-request spec-decode stats go, by engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadShape {
    /// `metrics.speculative_decoding` at the response root / on the final usage chunk.
    Vllm,
    /// TensorRT-LLM as released: `avg_decoded_tokens_per_iter` on every choice, JSON
    /// `/metrics`, Prometheus text at `/prometheus/metrics`.
    Trtllm,
    /// TensorRT-LLM with the still-open PR #19311: `choices[i].speculative_decoding` on the
    /// terminal chunk as well.
    TrtllmPr19311,
    /// `sglext.spec_tokens_details`, when the request sets `return_spec_tokens_details`; SGLang's
    /// gauges and counters on `/metrics`.
    Sglang,
    /// SGLang with the still-open PR #34814 (`--speculative-decoding-stats`): one
    /// `sglext.speculative_decoding_stats` entry per choice, exact counts (and with `detailed`
    /// each step's verify and accept lengths), on every response; SGLang's `/metrics`.
    SglangPr34814,
    /// llama.cpp's server: `timings.draft_n` / `draft_n_accepted`, `llamacpp:` counters.
    LlamaCpp,
    /// A llama.cpp-compatible server that adds mlx-vlm's `timings.draft_rounds` (mlx-vlm PR #1788).
    LlamaCppRounds,
}

impl PayloadShape {
    /// The engine the shape is of.
    pub fn engine(self) -> Engine {
        match self {
            PayloadShape::Vllm => Engine::Vllm,
            PayloadShape::Trtllm | PayloadShape::TrtllmPr19311 => Engine::Trtllm,
            PayloadShape::Sglang | PayloadShape::SglangPr34814 => Engine::Sglang,
            PayloadShape::LlamaCpp | PayloadShape::LlamaCppRounds => Engine::LlamaCpp,
        }
    }

    pub(super) fn trtllm(self) -> bool {
        self.engine() == Engine::Trtllm
    }
}

/// Request fields trtllm-serve's request models know; it answers HTTP 400 to any other (its
/// pydantic models forbid extra fields), where vLLM and SGLang ignore them.
pub(super) const TRTLLM_FIELDS: [&str; 17] = [
    "model",
    "messages",
    "prompt",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "n",
    "stream",
    "stream_options",
    "stop",
    "seed",
    "ignore_eos",
    "frequency_penalty",
    "presence_penalty",
    "user",
];

/// vLLM's `--per-request-spec-decode-metrics` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerRequestMetrics {
    None,
    Summary,
    Detailed,
}

/// Words the sim "generates", one token each.
const VOCAB: [&str; 32] = [
    "the",
    "model",
    "drafts",
    "tokens",
    "and",
    "the",
    "target",
    "verifies",
    "them",
    "in",
    "one",
    "pass",
    "so",
    "accepted",
    "drafts",
    "cost",
    "little",
    "while",
    "rejected",
    "ones",
    "are",
    "discarded",
    "at",
    "the",
    "next",
    "step",
    "which",
    "keeps",
    "output",
    "exactly",
    "the",
    "same",
];

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Chat,
    Completion,
}

/// Per-request facts the response builders need.
pub(super) struct Reply {
    pub(super) kind: Kind,
    pub(super) id: String,
    pub(super) created: u64,
    pub(super) model_json: String,
    pub(super) n: u32,
    pub(super) k: u32,
    pub(super) prompt_tokens: u64,
    pub(super) include_usage: bool,
    /// vLLM's `stream_options.continuous_usage_stats` (with `include_usage`): every chunk
    /// carries the usage so far, its `completion_tokens` that choice's tokens.
    pub(super) continuous_usage: bool,
    pub(super) sglang_details: bool,
    pub(super) per_request: PerRequestMetrics,
    /// vLLM 0.33's `--enable-per-request-metrics`: the engine's timings in `metrics`.
    pub(super) timings: bool,
    pub(super) payload: PayloadShape,
    pub(super) salt: u64,
}

pub(super) fn text_of(salt: u64, first: u32, count: u32) -> String {
    let mut text = String::with_capacity(count as usize * 8);
    for pos in first..first + count {
        text.push(' ');
        text.push_str(VOCAB[((u64::from(pos) * 7 + salt) % VOCAB.len() as u64) as usize]);
    }
    text
}

/// The `system_fingerprint` of every response (vLLM names its version and build there).
pub(super) const SYSTEM_FINGERPRINT: &str = concat!("speclens-sim-", env!("CARGO_PKG_VERSION"));

pub(super) fn ratio(num: u64, den: u64, empty: f64) -> f64 {
    if den == 0 {
        empty
    } else {
        num as f64 / den as f64
    }
}

impl Reply {
    pub(super) fn speculative(&self) -> bool {
        self.k > 0 && self.per_request != PerRequestMetrics::None
    }

    /// vLLM's `metrics.speculative_decoding` (null when n > 1). With `summary` the per-step
    /// arrays are `null` in a whole response and left out of the streamed usage chunk, as
    /// vLLM 0.32 writes them.
    pub(super) fn vllm_stats(&self, stats: &SeqStats, streamed: bool) -> Value {
        if self.n > 1 {
            return Value::Null;
        }
        let mut v = json!({
            "mean_acceptance_length": 1.0 + ratio(stats.accepted, stats.steps, 0.0),
            "draft_acceptance_rate": ratio(stats.accepted, stats.drafted, 0.0),
            "acceptance_histogram": stats.histogram,
            "num_spec_steps": stats.steps,
            "num_accepted_draft_tokens": stats.accepted,
            "num_draft_tokens": stats.drafted,
            "num_spec_tokens": self.k,
        });
        if self.per_request == PerRequestMetrics::Detailed {
            v["per_step_accepted"] = json!(stats.per_step_accepted);
            v["per_step_drafted"] = json!(stats.per_step_drafted);
        } else if !streamed {
            v["per_step_accepted"] = Value::Null;
            v["per_step_drafted"] = Value::Null;
        }
        v
    }

    /// vLLM's request timing fields: the engine's own with `--enable-per-request-metrics`
    /// (vLLM 0.33; the sim leaves `mean_itl_ms` and `tokens_per_second` null), else null in a
    /// whole response and absent from a stream.
    pub(super) fn vllm_timings(&self, stats: Option<&SeqStats>, streamed: bool) -> Value {
        match stats.filter(|_| self.timings && self.n == 1) {
            Some(s) => json!({
                // vLLM 0.33 counts its TTFT from scheduling, after the queue.
                "time_to_first_token_ms": (s.ttft_ms - s.queue_ms).max(0.0), "generation_time_ms": s.generation_ms,
                "queue_time_ms": s.queue_ms, "mean_itl_ms": null, "tokens_per_second": null,
            }),
            None if streamed => json!({}),
            None => json!({
                "time_to_first_token_ms": null, "generation_time_ms": null, "queue_time_ms": null,
                "mean_itl_ms": null, "tokens_per_second": null,
            }),
        }
    }

    /// TensorRT-LLM's per-choice additions: `avg_decoded_tokens_per_iter` as released, and the
    /// pending PR #19311's `speculative_decoding` (absent when nothing was drafted).
    pub(super) fn trtllm_choice(&self, choice: &mut Value, stats: &SeqStats) {
        if !self.payload.trtllm() || self.k == 0 {
            return;
        }
        choice["avg_decoded_tokens_per_iter"] = json!(1.0 + ratio(stats.accepted, stats.steps, 0.0));
        if let Some(spec) = self.trtllm_stats(stats) {
            choice["speculative_decoding"] = spec;
        }
    }

    /// PR #19311's per-choice object; absent when nothing was drafted.
    pub(super) fn trtllm_stats(&self, stats: &SeqStats) -> Option<Value> {
        (self.speculative() && self.payload == PayloadShape::TrtllmPr19311 && stats.drafted > 0).then(|| {
            json!({
                "acceptance_rate": ratio(stats.accepted, stats.drafted, 0.0),
                "total_accepted_draft_tokens": stats.accepted,
                "total_draft_tokens": stats.drafted,
                "num_spec_steps": stats.steps,
                "acceptance_histogram": stats.histogram,
                "num_spec_tokens": self.k,
            })
        })
    }

    /// SGLang's `sglext` for the choices (its length counts the prefill token too; drafted is
    /// verify steps × (draft tokens − 1), from the configuration). A choice that never verified
    /// gets no entry; with n > 1 the details are a list. `None` when nothing is left.
    pub(super) fn sglang_stats(&self, all: &[&SeqStats]) -> Option<Value> {
        if !(self.speculative() && self.payload.engine() == Engine::Sglang && self.sglang_details) {
            return None;
        }
        let one = |stats: &SeqStats| {
            json!({
                "spec_accept_rate": ratio(stats.accepted, stats.steps * u64::from(self.k), 0.0),
                "spec_accept_length": ratio(stats.accepted + stats.steps + 1, stats.steps + 1, 1.0),
                "spec_num_correct_drafts": stats.accepted,
                "spec_num_proposed_drafts": stats.steps * u64::from(self.k),
                "spec_verify_ct": stats.steps,
                "spec_correct_drafts_histogram": stats.histogram,
            })
        };
        let details: Vec<Value> = all.iter().filter(|s| s.steps > 0).map(|s| one(s)).collect();
        match (self.n, details.len()) {
            (_, 0) => None,
            (1, _) => Some(json!({"spec_tokens_details": details[0]})),
            _ => Some(json!({"spec_tokens_details": details})),
        }
    }

    /// llama.cpp's `timings` (the draft fields only when something was drafted; mlx-vlm's
    /// `draft_rounds`, the verify steps, beside them in that shape).
    pub(super) fn llamacpp_timings(&self, stats: &SeqStats, completion_tokens: u64) -> Option<Value> {
        if self.payload.engine() != Engine::LlamaCpp {
            return None;
        }
        let mut timings = json!({"prompt_n": self.prompt_tokens, "predicted_n": completion_tokens});
        if stats.drafted > 0 {
            timings["draft_n"] = json!(stats.drafted);
            timings["draft_n_accepted"] = json!(stats.accepted);
            if self.payload == PayloadShape::LlamaCppRounds {
                timings["draft_rounds"] = json!(stats.steps);
            }
        }
        Some(timings)
    }

    /// SGLang PR #34814's entry for choice `index`: the verifier's exact counts, its mean
    /// accept length (the bonus token counted, as vLLM counts it) and, with `detailed`, each
    /// step's verify and accept lengths (each counting the step's own token).
    pub(super) fn sglang_pr34814_entry(&self, index: u32, stats: &SeqStats) -> Option<Value> {
        if !(self.speculative() && self.payload == PayloadShape::SglangPr34814) {
            return None;
        }
        let detailed = self.per_request == PerRequestMetrics::Detailed;
        let mut entry = json!({
            "index": index,
            "mode": if detailed { "detailed" } else { "summary" },
            "num_verification_steps": stats.steps,
            "num_verified_draft_tokens": stats.drafted,
            "num_accepted_draft_tokens": stats.accepted,
            "draft_acceptance_rate": ratio(stats.accepted, stats.drafted, 0.0),
            "mean_accept_length": 1.0 + ratio(stats.accepted, stats.steps, 0.0),
        });
        if detailed {
            let plus_one = |list: &[u64]| list.iter().map(|x| x + 1).collect::<Vec<u64>>();
            entry["verify_lengths"] = json!(plus_one(&stats.per_step_drafted));
            entry["accept_lengths"] = json!(plus_one(&stats.per_step_accepted));
        }
        Some(entry)
    }

    /// Root-level additions to the final object (vLLM metrics, SGLang sglext). A whole vLLM
    /// response always has `metrics`: null without per-request stats or timings, else the
    /// request's timing fields (null, as vLLM 0.32 sends them, or with
    /// `--enable-per-request-metrics` the engine's own, as vLLM 0.33 does) beside
    /// `speculative_decoding`. A stream's usage chunk carries the same, less the nulls.
    pub(super) fn root_stats(&self, body: &mut Value, all: &[&SeqStats], streamed: bool) {
        let stats = all.first().copied().filter(|_| self.speculative());
        match (self.payload, stats) {
            (PayloadShape::Vllm, Some(stats)) => {
                let mut metrics = self.vllm_timings(all.first().copied(), streamed);
                metrics["speculative_decoding"] = self.vllm_stats(stats, streamed);
                body["metrics"] = metrics;
            }
            (PayloadShape::Vllm, None) if self.timings && self.n == 1 => {
                body["metrics"] = self.vllm_timings(all.first().copied(), streamed);
            }
            (PayloadShape::Vllm, None) if !streamed => body["metrics"] = Value::Null,
            (PayloadShape::Sglang | PayloadShape::SglangPr34814, Some(_)) if !streamed => {
                let mut sglext = self.sglang_stats(all).unwrap_or_else(|| json!({}));
                let entries: Vec<Value> = all
                    .iter()
                    .zip(0u32..)
                    .filter_map(|(stats, index)| self.sglang_pr34814_entry(index, stats))
                    .collect();
                if !entries.is_empty() {
                    sglext["speculative_decoding_stats"] = json!(entries);
                }
                if sglext.as_object().is_some_and(|m| !m.is_empty()) {
                    body["sglext"] = sglext;
                }
            }
            _ => {}
        }
    }

    /// `usage`; a whole response also names the token details (null), as vLLM does.
    pub(super) fn usage(&self, completion_tokens: u64, streamed: bool) -> Value {
        let mut usage = json!({"prompt_tokens": self.prompt_tokens, "total_tokens": self.prompt_tokens + completion_tokens,
               "completion_tokens": completion_tokens});
        if !streamed {
            usage["prompt_tokens_details"] = Value::Null;
            usage["completion_tokens_details"] = Value::Null;
        }
        usage
    }

    /// A chunk's `,"usage":{…}` with `tokens` generated so far, when every chunk carries it.
    pub(super) fn chunk_usage(&self, tokens: u64) -> String {
        if self.continuous_usage {
            format!(",\"usage\":{}", self.usage(tokens, true))
        } else {
            String::new()
        }
    }

    pub(super) fn object(&self, chunk: bool) -> &'static str {
        match (self.kind, chunk) {
            (Kind::Chat, true) => "chat.completion.chunk",
            (Kind::Chat, false) => "chat.completion",
            (Kind::Completion, _) => "text_completion",
        }
    }

    /// `data: {...}\n\n` for a chunk whose choices are given as JSON text.
    pub(super) fn sse(&self, choices: &str, extra: &str) -> String {
        format!(
            "data: {{\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[{choices}]{extra}}}\n\n",
            self.id,
            self.object(true),
            self.created,
            self.model_json
        )
    }

    pub(super) fn content_choice(&self, index: u32, text: &str) -> String {
        match self.kind {
            Kind::Chat => format!(
                "{{\"index\":{index},\"delta\":{{\"content\":\"{text}\"}},\"logprobs\":null,\"finish_reason\":null,\"token_ids\":null}}"
            ),
            Kind::Completion => format!(
                "{{\"index\":{index},\"text\":\"{text}\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null,\"prompt_token_ids\":null,\"token_ids\":null}}"
            ),
        }
    }

    pub(super) fn finish_choice(&self, index: u32, reason: FinishReason, stats: &SeqStats, text: &str) -> String {
        let mut choice = match self.kind {
            Kind::Chat => json!({"index": index, "delta": {}, "logprobs": null, "finish_reason": reason.as_str(),
                                 "stop_reason": null, "token_ids": null}),
            Kind::Completion => {
                json!({"index": index, "text": text, "logprobs": null, "finish_reason": reason.as_str(),
                                       "stop_reason": null, "prompt_token_ids": null, "token_ids": null})
            }
        };
        if self.kind == Kind::Chat && !text.is_empty() {
            choice["delta"]["content"] = json!(text);
        }
        self.trtllm_choice(&mut choice, stats);
        choice.to_string()
    }

    /// The chunks that finish choice `index`, whose last tokens were `last`. vLLM sends the last
    /// tokens in the chunk that carries the finish reason, and names its build there
    /// (`system_fingerprint`) unless a usage chunk follows; the other shapes send a content
    /// chunk, then the finish in a chunk of its own (llama.cpp's `timings` on it).
    pub(super) fn finish_chunk(
        &self,
        index: u32,
        reason: FinishReason,
        stats: &SeqStats,
        last: Option<String>,
        tokens: u64,
    ) -> String {
        if self.payload == PayloadShape::Vllm {
            let fingerprint = if self.include_usage {
                String::new()
            } else {
                format!(",\"system_fingerprint\":\"{SYSTEM_FINGERPRINT}\"")
            };
            let text = last.unwrap_or_default();
            let extra = format!("{fingerprint}{}", self.chunk_usage(tokens));
            return self.sse(&self.finish_choice(index, reason, stats, &text), &extra);
        }
        let mut out = last.map_or_else(String::new, |text| {
            self.sse(&self.content_choice(index, &text), &self.chunk_usage(tokens))
        });
        // llama.cpp's timings, or SGLang PR #34814's entry for this choice, ride its finish.
        let extra = match (
            self.llamacpp_timings(stats, tokens),
            self.sglang_pr34814_entry(index, stats),
        ) {
            (Some(t), _) => format!(",\"timings\":{t}"),
            (None, Some(entry)) => format!(",\"sglext\":{{\"speculative_decoding_stats\":[{entry}]}}"),
            (None, None) => String::new(),
        };
        out.push_str(&self.sse(&self.finish_choice(index, reason, stats, ""), &extra));
        out
    }
}
