//! The serving engines speclens knows, as one type: what detection reads from `/v1/models`, the
//! schema a `/metrics` text follows, the shape of a response's per-request stats, and the name
//! result files record. The CLI's `--engine` and the simulated engine's payload map to it.

use serde::{Deserialize, Serialize};

/// A serving engine. The order (`Ord`) is the one lists of engines are printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// vLLM: `vllm:spec_decode_*` counters (drafts, draft tokens, accepted, per position);
    /// per request, `metrics.speculative_decoding` at the response root.
    Vllm,
    /// TensorRT-LLM: vLLM's families under `trtllm_` (no drafts counter) and length gauges; per
    /// request, `choices[i].speculative_decoding` on the terminal chunk (PR #19311) or, as
    /// released, `avg_decoded_tokens_per_iter` only.
    Trtllm,
    /// SGLang: `sglang:spec_verify_calls_total`, `generation_tokens_total`,
    /// `num_requests_total` and its gauges; per request, `sglext.spec_tokens_details`.
    Sglang,
    /// llama.cpp's server: vLLM's families under `llamacpp:`, values printed with 6 significant
    /// digits; per request, `timings.draft_n` / `draft_n_accepted` (a rate, no length).
    #[serde(rename = "llamacpp")]
    LlamaCpp,
}

impl Engine {
    /// Every engine, in the order their metric prefixes are tried on a name.
    pub const ALL: [Engine; 4] = [Engine::Vllm, Engine::LlamaCpp, Engine::Trtllm, Engine::Sglang];

    /// The name result files record (and the CLI's `--engine` value).
    pub const fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Trtllm => "trtllm",
            Engine::Sglang => "sglang",
            Engine::LlamaCpp => "llamacpp",
        }
    }

    /// The engine's name as its project writes it, for people: `vLLM`, `TensorRT-LLM`, `SGLang`,
    /// `llama.cpp`.
    pub const fn display_name(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Trtllm => "TensorRT-LLM",
            Engine::Sglang => "SGLang",
            Engine::LlamaCpp => "llama.cpp",
        }
    }

    /// The prefix of the engine's metric names.
    pub const fn prefix(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm:",
            Engine::LlamaCpp => "llamacpp:",
            Engine::Trtllm => "trtllm_",
            Engine::Sglang => "sglang:",
        }
    }

    /// The engine of a counter set's prefix (vLLM's for one no engine uses).
    pub fn of_prefix(prefix: &str) -> Engine {
        Engine::ALL
            .into_iter()
            .find(|e| e.prefix() == prefix)
            .unwrap_or(Engine::Vllm)
    }

    /// The engine whose metric names a sample carries.
    pub fn of_metric_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| name.starts_with(e.prefix()))
    }

    /// The engine's `owned_by` in `/v1/models` (what [`Engine::from_owned_by`] reads back).
    pub const fn owned_by(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Trtllm => "tensorrt_llm",
            Engine::Sglang => "sglang",
            Engine::LlamaCpp => "llamacpp",
        }
    }

    /// The engine of a `/v1/models` entry's `owned_by` (vLLM `vllm`, SGLang `sglang`,
    /// TensorRT-LLM `tensorrt_llm`, llama.cpp `llamacpp`; other spellings seen in the wild).
    pub fn from_owned_by(owned_by: &str) -> Option<Engine> {
        match owned_by.trim().to_ascii_lowercase().as_str() {
            "vllm" => Some(Engine::Vllm),
            "sglang" => Some(Engine::Sglang),
            "tensorrt_llm" | "tensorrt-llm" | "trtllm" => Some(Engine::Trtllm),
            "llamacpp" | "llama.cpp" | "llama-cpp" => Some(Engine::LlamaCpp),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_prefixes_and_owners_map_back_to_their_engine() {
        for engine in Engine::ALL {
            assert_eq!(Engine::of_prefix(engine.prefix()), engine);
            assert_eq!(Engine::from_owned_by(engine.name()), Some(engine));
            assert_eq!(Engine::from_owned_by(engine.owned_by()), Some(engine));
            let json = serde_json::to_string(&engine).unwrap();
            assert_eq!(json, format!("\"{}\"", engine.name()));
            assert_eq!(serde_json::from_str::<Engine>(&json).unwrap(), engine);
        }
        assert_eq!(
            Engine::of_metric_name("sglang:spec_accept_length"),
            Some(Engine::Sglang)
        );
        assert_eq!(Engine::of_metric_name("process_cpu_seconds_total"), None);
        assert_eq!(Engine::of_prefix("tgi:"), Engine::Vllm);
        assert_eq!(Engine::from_owned_by("tensorrt_llm"), Some(Engine::Trtllm));
        assert_eq!(Engine::from_owned_by("openai"), None);
    }
}
