//! The engine-specific request fields a run sends, given the engine that serves the target (from
//! `/v1/models`, or as the user says); responses are still read by their shape.

use speclens_shared::engine::Engine;

/// What a run sends, given the engine and the user's flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFields {
    /// SGLang's `return_spec_tokens_details`: on by default for SGLang, on request elsewhere,
    /// never to TensorRT-LLM (its request models refuse unknown fields).
    pub sglang_spec_details: bool,
    /// Why a field the user asked for is not sent.
    pub note: Option<String>,
}

impl RequestFields {
    pub fn decide(engine: Option<Engine>, sglang_spec_details: bool) -> RequestFields {
        match engine {
            Some(Engine::Sglang) => RequestFields {
                sglang_spec_details: true,
                note: None,
            },
            Some(Engine::Trtllm) if sglang_spec_details => RequestFields {
                sglang_spec_details: false,
                note: Some(
                    "--sglang-spec-details is not sent to a TensorRT-LLM server: its requests refuse unknown fields (HTTP 400)"
                        .into(),
                ),
            },
            _ => RequestFields {
                sglang_spec_details,
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
        assert!(RequestFields::decide(Some(Engine::Sglang), false).sglang_spec_details);
        let trt = RequestFields::decide(Some(Engine::Trtllm), true);
        assert!(!trt.sglang_spec_details && trt.note.is_some());
        assert!(RequestFields::decide(None, true).sglang_spec_details);
        assert!(!RequestFields::decide(Some(Engine::Vllm), false).sglang_spec_details);
    }
}
