//! Which engine serves the target, from `/v1/models` (`owned_by`: vLLM `vllm`, SGLang
//! `sglang`, TensorRT-LLM `tensorrt_llm`, llama.cpp `llamacpp`), or as the user says. It decides
//! which engine-specific request fields are sent; responses are still read by their shape.

/// An engine speclens knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Vllm,
    Sglang,
    Trtllm,
    LlamaCpp,
}

impl Engine {
    /// The engine of a `/v1/models` entry's `owned_by`.
    pub fn from_owned_by(owned_by: &str) -> Option<Engine> {
        match owned_by.trim().to_ascii_lowercase().as_str() {
            "vllm" => Some(Engine::Vllm),
            "sglang" => Some(Engine::Sglang),
            "tensorrt_llm" | "tensorrt-llm" | "trtllm" => Some(Engine::Trtllm),
            "llamacpp" | "llama.cpp" | "llama-cpp" => Some(Engine::LlamaCpp),
            _ => None,
        }
    }

    /// The name `result.json` records.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Trtllm => "trtllm",
            Engine::LlamaCpp => "llamacpp",
        }
    }
}

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
    fn engines_by_owned_by_and_the_fields_they_get() {
        assert_eq!(Engine::from_owned_by("vllm"), Some(Engine::Vllm));
        assert_eq!(Engine::from_owned_by("tensorrt_llm"), Some(Engine::Trtllm));
        assert_eq!(Engine::from_owned_by("openai"), None);
        assert!(RequestFields::decide(Some(Engine::Sglang), false).sglang_spec_details);
        let trt = RequestFields::decide(Some(Engine::Trtllm), true);
        assert!(!trt.sglang_spec_details && trt.note.is_some());
        assert!(RequestFields::decide(None, true).sglang_spec_details);
        assert!(!RequestFields::decide(Some(Engine::Vllm), false).sglang_spec_details);
    }
}
