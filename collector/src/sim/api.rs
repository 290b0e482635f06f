//! The simulated server's HTTP API, as vLLM's OpenAI-compatible server: chat and text
//! completions (streaming SSE and not), `/v1/models`, `/health`, `/metrics`, vLLM-style errors,
//! per-request spec-decode stats in the chosen engine's shape, and the injected faults.

use std::future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::engine::{FinishReason, SeqEvent, SeqSpec, SeqStats, Submission};
use super::exposition::{self, ExpositionOptions};
use super::payload::{text_of, Kind, PayloadShape, Reply, SYSTEM_FINGERPRINT, TRTLLM_FIELDS};
use super::settings::{Faults, SimSettings};
use super::state::{unix_now, SimState};

pub(super) fn router(state: Arc<SimState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(|s, h, b| completions(s, h, b, Kind::Chat)))
        .route(
            "/v1/completions",
            post(|s, h, b| completions(s, h, b, Kind::Completion)),
        )
        .route("/v1/models", get(models))
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/metrics", get(metrics))
        .route("/prometheus/metrics", get(trtllm_prometheus))
        .fallback(|| async { (StatusCode::NOT_FOUND, axum::Json(json!({"detail": "Not Found"}))) })
        .method_not_allowed_fallback(|| async {
            (
                StatusCode::METHOD_NOT_ALLOWED,
                axum::Json(json!({"detail": "Method Not Allowed"})),
            )
        })
        .with_state(state)
}

/// vLLM's error body.
fn error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": kind, "param": null, "code": status.as_u16()}});
    (status, axum::Json(body)).into_response()
}

/// `--oversized-rate`: a 200 whose body carries `kib` KiB of padding, streamed in 64 KiB pieces
/// (the sim never holds it whole).
fn oversized(kib: u64, stream: bool) -> Response {
    let piece = Bytes::from(vec![b'a'; 64 * 1024]);
    let (head, tail, content_type): (&'static str, &'static str, &str) = if stream {
        ("data: {\"choices\":[],\"x_padding\":\"", "\"}\n\n", "text/event-stream")
    } else {
        ("{\"x_padding\":\"", "\"}", "application/json")
    };
    let pieces = std::iter::once(Bytes::from_static(head.as_bytes()))
        .chain(std::iter::repeat_n(piece, kib.div_ceil(64) as usize))
        .chain(std::iter::once(Bytes::from_static(tail.as_bytes())))
        .map(Ok::<Bytes, std::convert::Infallible>);
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(futures_util::stream::iter(pieces)),
    )
        .into_response()
}

fn bad_request(message: impl Into<String>) -> Response {
    error(StatusCode::BAD_REQUEST, "BadRequestError", message)
}

fn authorized(state: &SimState, headers: &HeaderMap) -> bool {
    let Some(key) = &state.settings.api_key else {
        return true;
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    crate::net::same_secret(presented, key)
}

async fn models(State(state): State<Arc<SimState>>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
    }
    let s = &state.settings;
    let (created, owner) = (unix_now() as u64, s.payload.engine().owned_by());
    // The base model, then each LoRA adapter as vLLM lists one: its root the adapter's path,
    // its parent the base model.
    let mut data = vec![
        json!({"id": s.model, "object": "model", "created": created, "owned_by": owner,
                  "root": s.model, "parent": null, "max_model_len": s.max_model_len}),
    ];
    data.extend(s.adapters.iter().map(|(name, _)| {
        json!({"id": name, "object": "model", "created": created, "owned_by": owner,
               "root": format!("/adapters/{name}"), "parent": s.model, "max_model_len": s.max_model_len})
    }));
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// `/metrics` in the engine's own form, or the fault's answer.
async fn metrics(State(state): State<Arc<SimState>>) -> Response {
    if let Some(down) = metrics_fault(&state) {
        return down;
    }
    let engines = state.engine_counters();
    let opts = exposition_options(&state);
    let s = &state.settings;
    let mut text = match s.payload {
        PayloadShape::Vllm => exposition::render(&engines, &opts),
        PayloadShape::Sglang | PayloadShape::SglangPr34814 => {
            exposition::render_sglang(&engines, &opts, s.engine.k, state.recent_gauges(&engines))
        }
        PayloadShape::LlamaCpp | PayloadShape::LlamaCppRounds => exposition::render_llamacpp(&engines, &opts),
        PayloadShape::Trtllm | PayloadShape::TrtllmPr19311 => {
            let iteration = engines.iter().map(|c| c.num_drafts + c.requests_finished).sum();
            let json = exposition::render_trtllm_iteration_stats(&engines, iteration, state.recent_gauges(&engines));
            return ([(header::CONTENT_TYPE, "application/json")], json).into_response();
        }
    };
    if s.faults.malformed_metrics {
        text.push_str("vllm:spec_decode_num_drafts_total{engine=\"0\" 12\nthis is not a metric line\n");
    }
    prometheus_text(text)
}

/// TensorRT-LLM's `/prometheus/metrics` (404 on every other engine, as on a trtllm-serve
/// started without `return_perf_metrics`).
async fn trtllm_prometheus(State(state): State<Arc<SimState>>) -> Response {
    if !state.settings.payload.trtllm() || state.settings.faults.no_perf_metrics {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    }
    if let Some(down) = metrics_fault(&state) {
        return down;
    }
    let engines = state.engine_counters();
    let opts = exposition_options(&state);
    let faults = &state.settings.faults;
    let families = exposition::TrtllmFamilies {
        iteration: !faults.no_iter_perf_stats,
        per_position: !faults.no_per_position_pair,
    };
    prometheus_text(exposition::render_trtllm(
        &engines,
        &opts,
        families,
        state.recent_gauges(&engines),
    ))
}

fn exposition_options(state: &SimState) -> ExpositionOptions {
    ExpositionOptions {
        model_name: state.settings.model.clone(),
        speculative: state.settings.engine.k > 0,
        multiprocess: state.settings.faults.multiproc_exposition,
    }
}

fn prometheus_text(text: String) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response()
}

/// The 503 of `--metrics-down*`, when it applies now.
fn metrics_fault(state: &SimState) -> Option<Response> {
    let f = &state.settings.faults;
    let finished = state.finished_requests();
    let down = f.metrics_down
        || f.metrics_down_after.is_some_and(|n| finished >= n)
        || f.metrics_down_until.is_some_and(|n| finished < n);
    down.then(|| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "metrics endpoint down (simulated fault)\n",
        )
            .into_response()
    })
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
    #[serde(default)]
    continuous_usage_stats: bool,
}

/// The request fields the sim honours; others are accepted and ignored, as vLLM does.
#[derive(Debug, Deserialize)]
struct CompletionRequest {
    model: Option<String>,
    messages: Option<Vec<Value>>,
    prompt: Option<Value>,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    ignore_eos: bool,
    temperature: Option<f64>,
    n: Option<u32>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    return_spec_tokens_details: bool,
}

/// The text of a chat message's content (a string or a list of text parts).
fn content_text(message: &Value) -> Result<String, String> {
    match message.get("content") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" ")),
        Some(Value::Null) | None => Ok(String::new()),
        Some(_) => Err("message content must be a string or a list of parts".into()),
    }
}

fn prompt_text(kind: Kind, req: &CompletionRequest) -> Result<String, String> {
    match kind {
        Kind::Chat => {
            let messages = req.messages.as_ref().ok_or("messages: field required")?;
            if messages.is_empty() {
                return Err("messages: at least one message is required".into());
            }
            let texts: Result<Vec<String>, String> = messages.iter().map(content_text).collect();
            Ok(texts?.join("\n"))
        }
        Kind::Completion => match req.prompt.as_ref().ok_or("prompt: field required")? {
            Value::String(s) => Ok(s.clone()),
            Value::Array(items) if items.iter().all(Value::is_string) => {
                Ok(items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"))
            }
            // A list of token ids: one word per token.
            Value::Array(items) if items.iter().all(Value::is_u64) => Ok(vec!["tok"; items.len()].join(" ")),
            _ => Err("prompt must be a string, a list of strings or a list of token ids".into()),
        },
    }
}

/// The sim's tokenizer: one token per whitespace-separated word (at least one).
fn count_tokens(text: &str) -> u64 {
    (text.split_whitespace().count() as u64).max(1)
}

/// A reproducible uniform draw in [0, 1) from (seed, a, b): splitmix64.
fn unit(seed: u64, a: u64, b: u64) -> f64 {
    let mut z = seed ^ a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// What a fault does to one streamed request.
#[derive(Clone, Copy, PartialEq)]
enum StreamFault {
    None,
    Reset,
    Truncate,
}

/// A request's checked parts.
struct Checked {
    prompt: String,
    /// The served name asked for: the model's, or an adapter's.
    served: Option<String>,
    n: u32,
    temperature: f64,
    prompt_tokens: u64,
    max_tokens: u64,
}

/// Check a request as vLLM's OpenAI server does (TensorRT-LLM's shape refuses unknown fields);
/// an error is the message of the 400 answer vLLM gives.
fn check(s: &SimSettings, kind: Kind, req: &CompletionRequest, body: &[u8]) -> Result<Checked, String> {
    if s.payload.trtllm() {
        let fields: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        if let Some(extra) = fields
            .as_object()
            .and_then(|o| o.keys().find(|k| !TRTLLM_FIELDS.contains(&k.as_str())))
        {
            return Err(format!("{extra}: Extra inputs are not permitted"));
        }
    }
    if let Some(model) = &req.model {
        if *model != s.model && !s.adapters.iter().any(|(name, _)| name == model) {
            return Err(format!("The model `{model}` does not exist."));
        }
    }
    let prompt = prompt_text(kind, req)?;
    let n = req.n.unwrap_or(1);
    if !(1..=16).contains(&n) {
        return Err(format!("n must be between 1 and 16, got {n}"));
    }
    let temperature = req.temperature.unwrap_or(1.0);
    if !(temperature.is_finite() && temperature >= 0.0) {
        return Err(format!("temperature must be ≥ 0, got {temperature}"));
    }
    let prompt_tokens = count_tokens(&prompt);
    let room = u64::from(s.max_model_len).saturating_sub(prompt_tokens);
    let max_tokens = req.max_tokens.or(req.max_completion_tokens).map_or(room, u64::from);
    if max_tokens == 0 {
        return Err("max_tokens must be at least 1".into());
    }
    if prompt_tokens + max_tokens > u64::from(s.max_model_len) {
        return Err(format!(
            "This model's maximum context length is {} tokens. However, you requested {} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion).",
            s.max_model_len,
            prompt_tokens + max_tokens
        ));
    }

    Ok(Checked {
        prompt,
        served: req.model.clone(),
        n,
        temperature,
        prompt_tokens,
        max_tokens,
    })
}

/// The request's `n` sequences for the engine: each with its output length (geometric with the
/// configured mean, unless `ignore_eos`) and the acceptance profile its prompt falls in.
fn sequences(s: &SimSettings, req: &CompletionRequest, number: u64, checked: &Checked) -> Vec<SeqSpec> {
    let seed = s.engine.seed;
    let &Checked {
        n,
        temperature,
        prompt_tokens,
        max_tokens,
        ..
    } = checked;
    let profile = s
        .profile_for(&checked.prompt, temperature, checked.served.as_deref())
        .unwrap_or_else(super::engine::AcceptanceProfile::none);
    let mean = f64::from(s.mean_output_tokens);
    let prompt_blocks: std::sync::Arc<[u64]> = if s.engine.prefix_caching {
        super::prefix_cache::block_hashes(&checked.prompt).into()
    } else {
        std::sync::Arc::new([])
    };
    (0..n)
        .map(|index| {
            let eos_at = (!req.ignore_eos).then(|| {
                // Geometric output length with the configured mean.
                let u = unit(seed, number, 100 + u64::from(index)).max(f64::MIN_POSITIVE);
                let len = 1.0 + (u.ln() / (1.0 - 1.0 / mean.max(1.000_001)).ln()).floor();
                len.clamp(1.0, f64::from(u32::MAX)) as u32
            });
            SeqSpec {
                index,
                prompt_tokens,
                max_tokens: max_tokens.min(u64::from(u32::MAX)) as u32,
                eos_at,
                profile: profile.clone(),
                prompt_blocks: prompt_blocks.clone(),
            }
        })
        .collect()
}

/// The faults `--fail-rate`, `--hang-rate`, `--oversized-rate` and `--stall-rate` inject into
/// request `number` (an answer in place of the completion, or a delay), and the stream fault
/// (`--reset-rate`, `--truncate-rate`) its response carries.
async fn injected_fault(f: &Faults, seed: u64, number: u64, stream: bool) -> Result<StreamFault, Response> {
    if unit(seed, number, 1) < f.fail_rate {
        return Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "simulated engine failure (--fail-rate)",
        ));
    }
    if unit(seed, number, 2) < f.hang_rate {
        return future::pending().await;
    }
    if unit(seed, number, 6) < f.oversized_rate {
        return Err(oversized(f.oversized_kib, stream));
    }
    if unit(seed, number, 3) < f.stall_rate {
        tokio::time::sleep(Duration::from_millis(f.stall_ms)).await;
    }
    Ok(if unit(seed, number, 4) < f.reset_rate {
        StreamFault::Reset
    } else if unit(seed, number, 5) < f.truncate_rate {
        StreamFault::Truncate
    } else {
        StreamFault::None
    })
}

async fn completions(State(state): State<Arc<SimState>>, headers: HeaderMap, body: Bytes, kind: Kind) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
    }
    let req: CompletionRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(format!("invalid JSON body: {e}")),
    };
    let s = &state.settings;
    let checked = match check(s, kind, &req, &body) {
        Ok(c) => c,
        Err(message) => return bad_request(message),
    };

    let number = state.requests.fetch_add(1, Ordering::Relaxed);
    let seed = s.engine.seed;
    let f = &s.faults;
    let stream_fault = match injected_fault(f, seed, number, req.stream).await {
        Ok(fault) => fault,
        Err(answer) => return answer,
    };

    let mut seqs = sequences(s, &req, number, &checked);
    if let Some((after, factor)) = f.acceptance_drop {
        if state.finished_requests() >= after {
            for seq in &mut seqs {
                seq.profile = seq.profile.scaled(factor);
            }
        }
    }
    let Checked {
        n,
        prompt_tokens,
        max_tokens,
        ..
    } = checked;
    let (tx, rx) = mpsc::channel(super::engine::EVENTS_QUEUED);
    if state
        .submit(Submission {
            seqs,
            events: tx,
            stream: req.stream,
            arrived: tokio::time::Instant::now(),
        })
        .is_err()
    {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableError",
            "the engine is shutting down",
        );
    }
    let reply = Reply {
        kind,
        id: format!(
            "{}-{number:08x}{:08x}",
            if kind == Kind::Chat { "chatcmpl" } else { "cmpl" },
            seed as u32
        ),
        created: unix_now() as u64,
        model_json: serde_json::to_string(&s.model).unwrap_or_else(|_| "\"\"".into()),
        n,
        k: s.engine.k,
        prompt_tokens,
        include_usage: req.stream_options.as_ref().is_some_and(|o| o.include_usage),
        // vLLM sends it only beside include_usage.
        continuous_usage: req
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage && o.continuous_usage_stats),
        sglang_details: req.return_spec_tokens_details,
        per_request: s.per_request,
        timings: s.per_request_timings,
        payload: s.payload,
        salt: number,
    };
    if req.stream {
        stream_response(reply, rx, stream_fault, max_tokens)
    } else {
        full_response(reply, rx, stream_fault).await
    }
}

/// Per-choice progress while a response is assembled.
struct Progress {
    text: Vec<String>,
    tokens: Vec<u64>,
    finished: Vec<Option<(FinishReason, SeqStats)>>,
}

impl Progress {
    fn new(n: u32) -> Progress {
        Progress {
            text: vec![String::new(); n as usize],
            tokens: vec![0; n as usize],
            finished: vec![None; n as usize],
        }
    }

    fn done(&self) -> bool {
        self.finished.iter().all(Option::is_some)
    }

    fn completion_tokens(&self) -> u64 {
        self.tokens.iter().sum()
    }
}

async fn full_response(reply: Reply, mut rx: mpsc::Receiver<SeqEvent>, fault: StreamFault) -> Response {
    let mut progress = Progress::new(reply.n);
    while let Some(event) = rx.recv().await {
        match event {
            SeqEvent::Tokens { index, first, count } => {
                progress.text[index as usize].push_str(&text_of(reply.salt + u64::from(index), first, count));
                progress.tokens[index as usize] += u64::from(count);
            }
            SeqEvent::Finished {
                index,
                reason,
                stats,
                tokens,
                ..
            } => {
                // A whole response gets no per-step events: its text is made at the end.
                let i = index as usize;
                if progress.tokens[i] == 0 && tokens > 0 {
                    progress.text[i] = text_of(reply.salt + u64::from(index), 0, tokens);
                    progress.tokens[i] = u64::from(tokens);
                }
                progress.finished[i] = Some((reason, *stats));
            }
        }
        if progress.done() {
            break;
        }
    }
    if !progress.done() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableError",
            "the engine stopped",
        );
    }
    if fault != StreamFault::None {
        // The connection breaks before the body is complete.
        let stream = futures_util::stream::iter([
            Ok(Bytes::from_static(b"{\"id\":")),
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "simulated connection reset",
            )),
        ]);
        return ([(header::CONTENT_TYPE, "application/json")], Body::from_stream(stream)).into_response();
    }
    let choices: Vec<Value> = progress
        .finished
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (reason, stats) = f.as_ref().expect("every choice finished");
            let mut choice = match reply.kind {
                Kind::Chat => json!({"index": i,
                    "message": {"role": "assistant", "content": progress.text[i].trim_start(), "refusal": null,
                                "annotations": null, "audio": null, "function_call": null, "reasoning": null},
                    "logprobs": null, "finish_reason": reason.as_str(), "stop_reason": null, "token_ids": null,
                    "routed_experts": null}),
                Kind::Completion => json!({"index": i, "text": progress.text[i], "logprobs": null,
                    "finish_reason": reason.as_str(), "stop_reason": null, "token_ids": null, "prompt_logprobs": null,
                    "prompt_token_ids": null, "routed_experts": null}),
            };
            reply.trtllm_choice(&mut choice, stats);
            choice
        })
        .collect();
    let mut body = json!({
        "id": reply.id, "object": reply.object(false), "created": reply.created,
        "model": serde_json::from_str::<Value>(&reply.model_json).unwrap_or(Value::Null),
        "choices": choices, "service_tier": null, "system_fingerprint": SYSTEM_FINGERPRINT,
        "usage": reply.usage(progress.completion_tokens(), false),
        "kv_transfer_params": null, "ec_transfer_params": null,
    });
    if reply.kind == Kind::Chat {
        for key in ["prompt_logprobs", "prompt_token_ids", "prompt_text"] {
            body[key] = Value::Null;
        }
    }
    let all: Vec<&SeqStats> = progress.finished.iter().flatten().map(|(_, s)| s).collect();
    reply.root_stats(&mut body, &all, false);
    if let Some(timings) = all
        .first()
        .and_then(|s| reply.llamacpp_timings(s, progress.completion_tokens()))
    {
        body["timings"] = timings;
    }
    axum::Json(body).into_response()
}

/// The streaming state machine: one SSE chunk per token group, a finish chunk per choice, the
/// usage chunk when asked, `[DONE]`.
struct StreamState {
    reply: Reply,
    rx: mpsc::Receiver<SeqEvent>,
    progress: Progress,
    fault: StreamFault,
    /// Tokens after which the fault strikes.
    fault_after: u64,
    started: bool,
    ended: bool,
}

impl StreamState {
    /// The next bytes to send, `None` at the end, an error to break the connection.
    async fn next(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.ended {
            return None;
        }
        if !self.started {
            self.started = true;
            if self.reply.kind == Kind::Chat {
                return Some(Ok(Bytes::from(self.role_chunks())));
            }
        }
        let Some(mut event) = self.rx.recv().await else {
            self.ended = true;
            return Some(Err(std::io::Error::other("the engine stopped")));
        };
        // Everything the engine already produced goes out in one write.
        let mut out = String::new();
        loop {
            self.push_event(event, &mut out);
            if self.fault != StreamFault::None && self.progress.completion_tokens() >= self.fault_after {
                self.ended = true;
                return Some(match self.fault {
                    StreamFault::Reset => Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "simulated connection reset",
                    )),
                    _ => Ok(Bytes::from(out)),
                });
            }
            if self.progress.done() {
                break;
            }
            match self.rx.try_recv() {
                Ok(next) => event = next,
                Err(_) => break,
            }
        }
        if self.progress.done() {
            self.ended = true;
            self.push_tail(&mut out);
        }
        Some(Ok(Bytes::from(out)))
    }

    /// The chat API's first chunks: each choice's assistant role with empty content.
    fn role_chunks(&self) -> String {
        let r = &self.reply;
        let mut out = String::new();
        for index in 0..r.n {
            out.push_str(&r.sse(
                &format!("{{\"index\":{index},\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}"),
                &format!(",\"prompt_token_ids\":null,\"prompt_text\":null{}", r.chunk_usage(0)),
            ));
        }
        out
    }

    /// One engine event as SSE: a content chunk, or a choice's finish chunk.
    fn push_event(&mut self, event: SeqEvent, out: &mut String) {
        let r = &self.reply;
        match event {
            SeqEvent::Tokens { index, first, count } => {
                self.progress.tokens[index as usize] += u64::from(count);
                let text = text_of(r.salt + u64::from(index), first, count);
                let usage = r.chunk_usage(self.progress.tokens[index as usize]);
                out.push_str(&r.sse(&r.content_choice(index, &text), &usage));
            }
            SeqEvent::Finished {
                index,
                reason,
                stats,
                last,
                ..
            } => {
                let last_text = last.map(|(first, count)| {
                    self.progress.tokens[index as usize] += u64::from(count);
                    text_of(r.salt + u64::from(index), first, count)
                });
                out.push_str(&r.finish_chunk(index, reason, &stats, last_text, self.progress.tokens[index as usize]));
                self.progress.finished[index as usize] = Some((reason, *stats));
            }
        }
    }

    /// After the last choice finished: SGLang's details, the usage chunk when asked, `[DONE]`.
    fn push_tail(&self, out: &mut String) {
        let r = &self.reply;
        let all: Vec<&SeqStats> = self.progress.finished.iter().flatten().map(|(_, s)| s).collect();
        // SGLang sends its details in a chunk of their own, before the usage chunk.
        if let Some(sglext) = r.sglang_stats(&all) {
            out.push_str(&r.sse("", &format!(",\"sglext\":{sglext}")));
        }
        if r.include_usage {
            let mut tail = json!({"usage": r.usage(self.progress.completion_tokens(), true),
                                  "system_fingerprint": SYSTEM_FINGERPRINT});
            r.root_stats(&mut tail, &all, true);
            let extra: String = tail
                .as_object()
                .map(|m| m.iter().map(|(k, v)| format!(",\"{k}\":{v}")).collect())
                .unwrap_or_default();
            out.push_str(&r.sse("", &extra));
        }
        out.push_str("data: [DONE]\n\n");
    }
}

fn stream_response(reply: Reply, rx: mpsc::Receiver<SeqEvent>, fault: StreamFault, max_tokens: u64) -> Response {
    let n = reply.n;
    let state = StreamState {
        reply,
        rx,
        progress: Progress::new(n),
        fault,
        fault_after: (max_tokens / 2).max(1),
        started: false,
        ended: false,
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move { st.next().await.map(|item| (item, st)) });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_draws_are_uniform_and_reproducible() {
        assert_eq!(unit(1, 2, 3), unit(1, 2, 3));
        let n = 100_000;
        let below: usize = (0..n).filter(|i| unit(9, *i, 1) < 0.25).count();
        assert!((below as f64 / n as f64 - 0.25).abs() < 0.01);
    }

    #[test]
    fn tokens_are_whitespace_words() {
        assert_eq!(count_tokens("a b  c\nd"), 4);
        assert_eq!(count_tokens(""), 1);
        assert_eq!(text_of(0, 0, 3).split_whitespace().count(), 3);
    }
}
