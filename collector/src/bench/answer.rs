//! How an OpenAI endpoint's answers read: which endpoint, the generated text of a whole answer,
//! its `usage` counts, and one streamed event read by a typed skim (no maps built) with the rare
//! event that carries a spec-decode payload parsed whole.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

/// Which OpenAI endpoint to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointKind {
    /// `/v1/chat/completions`
    Chat,
    /// `/v1/completions`
    Completions,
}

impl EndpointKind {
    /// The endpoint's path under a server's base URL.
    pub fn path(self) -> &'static str {
        match self {
            EndpointKind::Chat => "/v1/chat/completions",
            EndpointKind::Completions => "/v1/completions",
        }
    }

    /// `vllm bench serve`'s backend name for it.
    pub fn backend(self) -> &'static str {
        match self {
            EndpointKind::Chat => "openai-chat",
            EndpointKind::Completions => "openai",
        }
    }

    /// The `--endpoint` name.
    pub fn name(self) -> &'static str {
        match self {
            EndpointKind::Chat => "chat",
            EndpointKind::Completions => "completions",
        }
    }
}

/// The generated text of a chunk or body (chat delta / message content, or completion text).
pub(super) fn content(v: &Value, endpoint: EndpointKind, streamed: bool) -> String {
    let Some(choices) = v.get("choices").and_then(Value::as_array) else {
        return String::new();
    };
    choices
        .iter()
        .filter_map(|c| match (endpoint, streamed) {
            (EndpointKind::Chat, true) => c["delta"]["content"].as_str(),
            (EndpointKind::Chat, false) => c["message"]["content"].as_str(),
            (EndpointKind::Completions, _) => c["text"].as_str(),
        })
        .collect()
}

/// A whole answer's or event's `usage` counts (a count that is not an unsigned integer is left
/// out), or `None` without a `usage` object.
pub(super) fn usage_of(v: &Value) -> Option<SkimUsage> {
    let usage = v.get("usage").and_then(Value::as_object)?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64);
    Some(SkimUsage {
        completion_tokens: count("completion_tokens"),
        prompt_tokens: count("prompt_tokens"),
        total_tokens: count("total_tokens"),
    })
}

/// What the timing needs from a streamed event, borrowed from its text where it can be.
#[derive(Deserialize)]
struct Skim<'a> {
    #[serde(borrow, default)]
    choices: Choices<'a>,
    /// Read typed: with `continuous_usage_stats` every chunk carries one.
    #[serde(default)]
    usage: Option<SkimUsage>,
    #[serde(default)]
    error: Option<Value>,
    // Spec-decode payloads (vLLM, SGLang, llama.cpp); TensorRT-LLM's sits in each choice.
    #[serde(default)]
    metrics: Option<IgnoredAny>,
    #[serde(default)]
    sglext: Option<IgnoredAny>,
    /// llama.cpp's draft counts ride its `timings`.
    #[serde(default)]
    timings: Option<IgnoredAny>,
}

/// A `usage` object's counts (a count that is not an unsigned integer fails the skim, and the
/// event is read whole).
#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct SkimUsage {
    #[serde(default)]
    pub(super) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(super) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(super) total_tokens: Option<u64>,
}

/// An event's `choices`, folded as they are read (no list is built: one event of the hundreds
/// in a response costs no allocation unless several choices each carry text).
#[derive(Default)]
struct Choices<'a> {
    /// The choices' `delta.content`, joined in order.
    delta_text: Cow<'a, str>,
    /// The choices' `text` (the completions endpoint), joined in order.
    text: Cow<'a, str>,
    /// A choice carries a per-choice spec-decode payload.
    payload: bool,
    /// The event holds several choices, or one whose `index` is not 0 (`n` > 1: the usage so
    /// far is then per choice, and the chunk counts cannot be told apart).
    several: bool,
}

impl<'a> Choices<'a> {
    fn join(into: &mut Cow<'a, str>, more: Option<Cow<'a, str>>) {
        match more {
            Some(more) if into.is_empty() => *into = more,
            Some(more) => into.to_mut().push_str(&more),
            None => {}
        }
    }

    /// The generated text of the endpoint's shape.
    fn text(self, endpoint: EndpointKind) -> Cow<'a, str> {
        match endpoint {
            EndpointKind::Chat => self.delta_text,
            EndpointKind::Completions => self.text,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Choices<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fold<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Fold<'a> {
            type Value = Choices<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of choices or null")
            }
            fn visit_unit<E>(self) -> Result<Choices<'a>, E> {
                Ok(Choices::default())
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<Choices<'a>, S::Error> {
                let mut all = Choices::default();
                let mut seen = 0u32;
                while let Some(c) = seq.next_element::<SkimChoice<'a>>()? {
                    seen += 1;
                    all.several |= seen > 1 || c.index != 0;
                    Choices::join(&mut all.delta_text, c.delta.and_then(|d| d.content));
                    Choices::join(&mut all.text, c.text);
                    all.payload |= c.speculative_decoding.is_some() || c.avg_decoded_tokens_per_iter.is_some();
                }
                Ok(all)
            }
        }
        deserializer.deserialize_any(Fold(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct SkimChoice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(borrow, default)]
    delta: Option<SkimDelta<'a>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    speculative_decoding: Option<IgnoredAny>,
    /// Released TensorRT-LLM's per-choice length.
    #[serde(default)]
    avg_decoded_tokens_per_iter: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct SkimDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

/// What one streamed event means for the timing.
pub(super) struct Event<'a> {
    /// Its generated text (empty for role, finish and usage events).
    pub(super) text: Cow<'a, str>,
    /// The whole event, when it carries a spec-decode payload or server timings (for the
    /// adapters), or its shape did not fit the skim.
    pub(super) whole: Option<Value>,
    /// Its `usage` counts.
    pub(super) usage: Option<SkimUsage>,
    /// It holds another choice than the first (see [`Choices::several`]).
    pub(super) several: bool,
}

/// Read one SSE event: a typed skim (no maps built) for the common shape, usage included; the
/// rare event with a spec-decode payload, or of a shape the skim's types do not fit, parsed
/// whole.
pub(super) fn read_event(data: &str, endpoint: EndpointKind) -> Result<Event<'_>, String> {
    if let Ok(skim) = serde_json::from_str::<Skim>(data) {
        if let Some(err) = skim.error {
            return Err(format!("error event in the stream: {err}"));
        }
        let (choice_payload, several) = (skim.choices.payload, skim.choices.several);
        let text = skim.choices.text(endpoint);
        // A content chunk's usage so far (continuous_usage_stats) is read from the skim; the
        // last usage, in a chunk of its own, goes to the payload adapters whole.
        let carries_payload = (skim.usage.is_some() && text.is_empty())
            || skim.metrics.is_some()
            || skim.sglext.is_some()
            || skim.timings.is_some()
            || choice_payload;
        let whole = if carries_payload {
            Some(serde_json::from_str::<Value>(data).map_err(|e| format!("an SSE event is not JSON: {e}"))?)
        } else {
            None
        };
        return Ok(Event {
            usage: skim.usage,
            text,
            whole,
            several,
        });
    }
    let v: Value = serde_json::from_str(data).map_err(|e| format!("an SSE event is not JSON: {e}"))?;
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return Err(format!("error event in the stream: {err}"));
    }
    Ok(Event {
        text: Cow::Owned(content(&v, endpoint, true)),
        several: v.get("choices").and_then(Value::as_array).is_some_and(|c| {
            c.len() > 1
                || c.iter()
                    .any(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) != 0)
        }),
        usage: usage_of(&v),
        whole: Some(v),
    })
}
