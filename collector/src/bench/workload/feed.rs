//! From prompts to request bodies: single turns and conversations, built ahead of the clock and
//! fed to the load phase in sending order.

use std::sync::Arc;

use axum::body::Bytes;
use serde_json::json;
use tokio::sync::mpsc;

use super::prompt::{Prompt, Workload};
use super::synthetic::Synthetic;
use crate::bench::answer::EndpointKind;
use crate::bench::tokens::TokenCounter;

/// Requests built before the run at most: a longer synthetic run is generated as it goes, by a
/// thread that keeps this many ready ahead of the sender, so memory does not grow with the run.
pub const BUILT_AHEAD: usize = 8192;

/// One request ready to send.
#[derive(Debug, Clone)]
pub struct Ready {
    pub category: Option<String>,
    /// The served name it asks for, when the run sends to several (`--model a,b`).
    pub model: Option<Arc<str>>,
    /// Input length when known before sending (the server's `usage` replaces it).
    pub input_tokens: u64,
    /// The `max_tokens` the body asks for.
    pub max_tokens: Option<u64>,
    pub body: Bytes,
    /// The rest of a multi-turn conversation, whose first turn `body` is.
    pub conversation: Option<Arc<Conversation>>,
}

impl Ready {
    /// Request `index` of its feed (warm-up included), built from `prompt`.
    pub(super) fn of(prompt: &Prompt, opts: &BodyOptions<'_>, index: usize) -> Ready {
        let first = body_value(prompt, opts, index);
        let conversation = (!prompt.later_turns.is_empty()).then(|| {
            let mut user_turns = vec![prompt.text.clone()];
            user_turns.extend(prompt.later_turns.iter().cloned());
            Arc::new(Conversation {
                user_turns,
                first: first.clone(),
            })
        });
        Ready {
            category: prompt.category.clone(),
            model: (opts.models.len() > 1).then(|| Arc::from(opts.model(index))),
            input_tokens: prompt.input_tokens,
            max_tokens: Some(u64::from(prompt.max_tokens)),
            body: Bytes::from(first.to_string()),
            conversation,
        }
    }
}

/// A multi-turn conversation: the user's turns, each sent (as a chat) with every earlier turn
/// and the server's answers to them.
#[derive(Debug)]
pub struct Conversation {
    pub user_turns: Vec<String>,
    /// The first turn's request, whose settings every turn keeps.
    first: serde_json::Value,
}

impl Conversation {
    /// The request of `turn` (0-based, ≥ 1) after `answers` to the turns before it.
    pub fn body(&self, turn: usize, answers: &[String]) -> Bytes {
        let mut messages = Vec::with_capacity(2 * turn + 1);
        for (i, user) in self.user_turns.iter().take(turn + 1).enumerate() {
            messages.push(json!({"role": "user", "content": user}));
            if let Some(answer) = answers.get(i).filter(|_| i < turn) {
                messages.push(json!({"role": "assistant", "content": answer}));
            }
        }
        let mut body = self.first.clone();
        body["messages"] = serde_json::Value::Array(messages);
        Bytes::from(body.to_string())
    }

    /// The text of `turn`'s messages counted, before the server's usage replaces it.
    pub fn input_tokens(&self, turn: usize, answers: &[String], tokens: &TokenCounter) -> u64 {
        let users: u64 = self.user_turns.iter().take(turn + 1).map(|t| tokens.count(t)).sum();
        users + answers.iter().take(turn).map(|a| tokens.count(a)).sum::<u64>()
    }
}

/// What the bodies share, owned (for the generating thread).
#[derive(Debug, Clone)]
pub struct BodySettings {
    pub endpoint: EndpointKind,
    /// The served names, sent in turn (one for most runs).
    pub models: Vec<String>,
    pub stream: bool,
    pub temperature: f64,
    pub sglang_spec_details: bool,
    pub continuous_usage_stats: bool,
}

impl BodySettings {
    pub(super) fn options(&self) -> BodyOptions<'_> {
        BodyOptions {
            endpoint: self.endpoint,
            models: &self.models,
            stream: self.stream,
            temperature: self.temperature,
            sglang_spec_details: self.sglang_spec_details,
            continuous_usage_stats: self.continuous_usage_stats,
        }
    }
}

/// A phase's requests in sending order: request `j` of the phase is `get(j)`.
#[derive(Clone)]
pub enum Feed {
    /// Built before the run: request `j` is `pool[(offset + j % len) % pool.len()]` (a
    /// duration-bound window cycles its `len` prompts; a dataset file cycles its pool).
    Built {
        pool: Arc<[Ready]>,
        offset: usize,
        len: usize,
    },
    /// Generated as the run goes, in order, by a thread that stays [`BUILT_AHEAD`] ahead.
    Generated(Arc<tokio::sync::Mutex<mpsc::Receiver<Ready>>>),
}

impl Feed {
    /// Request `j` of the phase; `None` when the generator is gone.
    pub async fn get(&self, j: u64) -> Option<Ready> {
        match self {
            Feed::Built { pool, offset, len } => {
                let j = (j % (*len).max(1) as u64) as usize;
                pool.get((offset + j) % pool.len().max(1)).cloned()
            }
            Feed::Generated(rx) => rx.lock().await.recv().await,
        }
    }
}

/// The generating thread: the warm-up's prompts, then the window's (again and again when
/// `cycle`), until the run stops taking them.
pub(super) fn generate(
    args: &Workload,
    warmup: usize,
    window: usize,
    cycle: bool,
    settings: &BodySettings,
    tx: &mpsc::Sender<Ready>,
    primed: tokio::sync::oneshot::Sender<()>,
) {
    let opts = settings.options();
    let mut primed = Some(primed);
    let mut sent = 0usize;
    let mut send = |prompt: Prompt| {
        if tx.blocking_send(Ready::of(&prompt, &opts, sent)).is_err() {
            return false;
        }
        sent += 1;
        if sent == BUILT_AHEAD {
            primed.take().map(|p| p.send(()));
        }
        true
    };
    let mut prompts = Synthetic::new(args);
    for _ in 0..warmup + window {
        if !prompts.next().is_some_and(&mut send) {
            return;
        }
    }
    if !cycle {
        return;
    }
    loop {
        let again = Synthetic::new(args).skip(warmup).take(window);
        for prompt in again {
            if !send(prompt) {
                return;
            }
        }
    }
}

/// What every request body shares.
pub struct BodyOptions<'a> {
    pub endpoint: EndpointKind,
    /// The served names (at least one), sent in turn.
    pub models: &'a [String],
    pub stream: bool,
    pub temperature: f64,
    pub sglang_spec_details: bool,
    /// Streaming: the usage so far in every chunk too.
    pub continuous_usage_stats: bool,
}

/// The JSON body of one request. Streaming requests always ask for the usage chunk: vLLM sends
/// its per-request spec-decode stats on it.
pub fn body(prompt: &Prompt, o: &BodyOptions<'_>) -> Bytes {
    Bytes::from(body_value(prompt, o, 0).to_string())
}

impl BodyOptions<'_> {
    /// The served name request `index` asks for: the names in turn (AIPerf's `round_robin`
    /// model selection).
    fn model(&self, index: usize) -> &str {
        self.models
            .get(index % self.models.len().max(1))
            .map_or("", String::as_str)
    }
}

/// The body of request `index` of its feed.
pub(super) fn body_value(prompt: &Prompt, o: &BodyOptions<'_>, index: usize) -> serde_json::Value {
    let mut body = json!({
        "model": o.model(index),
        "max_tokens": prompt.max_tokens,
        "temperature": o.temperature,
        "stream": o.stream,
    });
    match o.endpoint {
        EndpointKind::Chat => body["messages"] = json!([{"role": "user", "content": prompt.text}]),
        EndpointKind::Completions => body["prompt"] = json!(prompt.text),
    }
    if o.stream {
        body["stream_options"] = if o.continuous_usage_stats {
            json!({"include_usage": true, "continuous_usage_stats": true})
        } else {
            json!({"include_usage": true})
        };
    }
    if prompt.ignore_eos {
        body["ignore_eos"] = json!(true);
    }
    if o.sglang_spec_details {
        body["return_spec_tokens_details"] = json!(true);
    }
    body
}
