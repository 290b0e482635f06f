//! The engine-specific request fields a run sends, given the engine that serves the target (from
//! `/v1/models`, or as the user says); responses are still read by their shape.

use speclens_shared::engine::Engine;

/// What a run sends, given the engine and the user's flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFields {
    /// SGLang's `return_spec_tokens_details`: on by default for SGLang, on request elsewhere,
    /// never to TensorRT-LLM (its request models refuse unknown fields).
    pub sglang_spec_details: bool,
    /// vLLM's and SGLang's `stream_options.continuous_usage_stats`: the usage so far in every
    /// chunk, which counts each chunk's tokens (the per-token ITL). On by default for those
    /// two engines, on request elsewhere.
    pub continuous_usage_stats: bool,
    /// Why a field the user asked for is not sent.
    pub note: Option<String>,
}

impl RequestFields {
    /// The fields for `engine` given `--sglang-spec-details` and `--continuous-usage-stats`
    /// (`None`: auto).
    pub fn decide(engine: Option<Engine>, sglang_spec_details: bool, continuous_usage: Option<bool>) -> RequestFields {
        let continuous_usage_stats =
            continuous_usage.unwrap_or(matches!(engine, Some(Engine::Vllm) | Some(Engine::Sglang)));
        match engine {
            Some(Engine::Sglang) => RequestFields {
                sglang_spec_details: true,
                continuous_usage_stats,
                note: None,
            },
            Some(Engine::Trtllm) if sglang_spec_details => RequestFields {
                sglang_spec_details: false,
                continuous_usage_stats,
                note: Some(
                    "--sglang-spec-details is not sent to a TensorRT-LLM server: its requests refuse unknown fields (HTTP 400)"
                        .into(),
                ),
            },
            _ => RequestFields {
                sglang_spec_details,
                continuous_usage_stats,
                note: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_fields_each_engine_gets() {
        assert!(RequestFields::decide(Some(Engine::Sglang), false, None).sglang_spec_details);
        let trt = RequestFields::decide(Some(Engine::Trtllm), true, None);
        assert!(!trt.sglang_spec_details && trt.note.is_some());
        assert!(RequestFields::decide(None, true, None).sglang_spec_details);
        assert!(!RequestFields::decide(Some(Engine::Vllm), false, None).sglang_spec_details);
        // The usage in every chunk: auto for vLLM and SGLang only, else as asked.
        let continuous = |engine, asked| RequestFields::decide(engine, false, asked).continuous_usage_stats;
        assert!(continuous(Some(Engine::Vllm), None) && continuous(Some(Engine::Sglang), None));
        assert!(!continuous(Some(Engine::Trtllm), None) && !continuous(Some(Engine::LlamaCpp), None));
        assert!(!continuous(None, None) && continuous(None, Some(true)));
        assert!(!continuous(Some(Engine::Vllm), Some(false)));
    }
}
