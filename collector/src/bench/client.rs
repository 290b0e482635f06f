//! One request against an OpenAI-compatible server, timed precisely: the receive loop only
//! stamps each network chunk as it arrives and keeps its bytes ([`exchange`]); SSE framing, JSON
//! parsing and the spec-decode payload adapters ([`measure`]) run after the response has ended,
//! on the thread that folds records, off the tasks that stamp.

use std::time::Duration;

use axum::body::Bytes;
use reqwest::header::HeaderMap;
use serde_json::Value;
use speclens_shared::request::http_trace::HttpTrace;
use speclens_shared::request::per_request::{
    PartialSpecRecord, PayloadOutcome, PayloadScan, ServerTimings, SpecRecord,
};
use speclens_shared::run::record::ErrorKind;
use tokio::time::Instant;

use super::answer::{content, read_event, usage_of, EndpointKind, SkimUsage};
use super::wire::{describe, Arrivals, Wire, WireError, WireTrace};

/// Where and how to send.
pub struct Target {
    pub url: String,
    /// The URL as written to records and reports: no user, password or query.
    pub display_url: String,
    pub endpoint: EndpointKind,
    pub headers: HeaderMap,
    pub stream: bool,
    pub timeout: Duration,
    /// A response larger than this is abandoned (a broken server must not exhaust memory).
    pub max_response_bytes: usize,
    /// Our own transport, for `http://` URLs without credentials; reqwest otherwise.
    pub wire: Option<Wire>,
    /// The bytes all responses in flight may buffer together (shared by every server's target).
    pub budget: std::sync::Arc<super::wire::Budget>,
}

/// What one exchange measured (times relative to the send).
#[derive(Debug, Default)]
pub struct Exchange {
    pub ttft_ms: Option<f64>,
    pub e2el_ms: Option<f64>,
    pub itl_ms: Vec<f64>,
    /// Tokens in each content chunk (the first, then one per `itl_ms` gap), from the usage so
    /// far that every chunk carried (`continuous_usage_stats`); empty when any chunk lacked it.
    pub chunk_tokens: Vec<u32>,
    /// From the last non-empty `usage`.
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    /// The generated text (counted with the tokenizer when there is no usage).
    pub generated_text: String,
    pub error: Option<(ErrorKind, String)>,
    pub spec: Option<SpecRecord>,
    pub spec_partial: Option<PartialSpecRecord>,
    pub spec_rejected: Option<String>,
    /// The server's own timings (vLLM 0.33's per-request metrics).
    pub server: Option<ServerTimings>,
    /// The transport's phases (speclens's own transport only).
    pub http: Option<HttpTrace>,
}

fn classify(e: &reqwest::Error) -> ErrorKind {
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_connect() {
        ErrorKind::Connect
    } else if e.is_body() || e.is_decode() {
        ErrorKind::StreamCut
    } else {
        ErrorKind::Connect
    }
}

/// Whether the answer was not HTTP at all (hyper could not parse a response head).
fn not_http(e: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            return h.is_parse();
        }
        source = s.source();
    }
    false
}

/// The message of an answer that is not HTTP.
fn not_http_message(cause: &str) -> String {
    format!("the server's answer is not an HTTP response: {cause}")
}

/// Send one request and keep its response as it arrives; no parsing here (see [`measure`]).
pub async fn exchange(client: &reqwest::Client, target: &Target, body: Bytes) -> Outcome {
    match &target.wire {
        Some(wire) => on_the_wire(wire, target, body).await,
        None => through_reqwest(client, target, body).await,
    }
}

/// A received response, or why there is none.
pub type Outcome = Result<Received, (ErrorKind, String)>;

/// A response as it arrived: when the request went out, its status, each chunk stamped.
pub struct Received {
    sent: Instant,
    status: reqwest::StatusCode,
    content_type: Option<String>,
    content_encoding: Option<String>,
    /// The body as it arrived (held of the shared budget until the response is measured).
    body: Arrivals,
    /// Why the body ended early, if it did.
    cut: Option<(ErrorKind, String)>,
    /// The connection's phases, from speclens's own transport.
    trace: Option<WireTrace>,
}

impl Received {
    /// When the response's last bytes arrived (the send time for an empty body).
    pub fn last_arrival(&self) -> Instant {
        self.body.last().unwrap_or(self.sent)
    }
}

fn over_budget(target: &Target) -> (ErrorKind, String) {
    (
        ErrorKind::BadResponse,
        format!(
            "the responses in flight together passed {} MiB (--max-buffered-mib): this one was abandoned",
            target.budget.limit() >> 20
        ),
    )
}

fn too_large(target: &Target) -> (ErrorKind, String) {
    (
        ErrorKind::BadResponse,
        format!(
            "the response passed {} MiB (--max-response-mib): abandoned",
            target.max_response_bytes >> 20
        ),
    )
}

/// `http://` targets: our own transport, stamped at the socket (see [`wire`]).
async fn on_the_wire(wire: &Wire, target: &Target, body: Bytes) -> Result<Received, (ErrorKind, String)> {
    let deadline = Instant::now() + target.timeout;
    let delivery = tokio::time::timeout_at(
        deadline,
        wire.post(&target.headers, body, target.max_response_bytes, target.budget.charge()),
    )
    .await
    .map_err(|_| {
        (
            ErrorKind::Timeout,
            format!("no complete response within {:?}", target.timeout),
        )
    })?
    .map_err(|e| wire_error(e, target))?;
    Ok(Received {
        sent: delivery.sent,
        status: delivery.status,
        content_type: delivery.content_type,
        content_encoding: delivery.content_encoding,
        body: delivery.body,
        cut: delivery.cut.map(|e| wire_error(e, target)),
        trace: Some(delivery.trace),
    })
}

fn wire_error(e: WireError, target: &Target) -> (ErrorKind, String) {
    match e {
        WireError::Connect(m) | WireError::Request(m) => (ErrorKind::Connect, m),
        WireError::NotHttp(m) => (ErrorKind::BadResponse, not_http_message(&m)),
        WireError::Body(m) => (ErrorKind::StreamCut, format!("the response broke off: {m}")),
        WireError::TooLarge => too_large(target),
        WireError::OverBudget => over_budget(target),
    }
}

/// Other targets (TLS, credentials in the URL, proxies): reqwest, stamped as chunks are read.
async fn through_reqwest(
    client: &reqwest::Client,
    target: &Target,
    body: Bytes,
) -> Result<Received, (ErrorKind, String)> {
    let sent = Instant::now();
    let deadline = sent + target.timeout;
    let request = client.post(&target.url).headers(target.headers.clone()).body(body);
    let response = match tokio::time::timeout_at(deadline, request.send()).await {
        Err(_) => return Err((ErrorKind::Timeout, format!("no response within {:?}", target.timeout))),
        Ok(Err(e)) if not_http(&e) => return Err((ErrorKind::BadResponse, not_http_message(&describe(&e)))),
        Ok(Err(e)) => return Err((classify(&e), describe(&e))),
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    let content_type = super::wire::content_type_of(response.headers());
    let content_encoding = super::wire::header_text(response.headers(), reqwest::header::CONTENT_ENCODING);
    let mut received = Arrivals::new(target.budget.charge());
    let mut cut = None;
    let mut response = response;
    loop {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => {
                cut = Some((
                    ErrorKind::Timeout,
                    format!("response not finished within {:?}", target.timeout),
                ));
                break;
            }
            Ok(Ok(Some(bytes))) => {
                if received.bytes().len() + bytes.len() > target.max_response_bytes {
                    return Err(too_large(target));
                }
                // A copy, so the connection's read buffer is not kept alive by the chunk.
                if !received.push(Instant::now(), &bytes) {
                    return Err(over_budget(target));
                }
            }
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                cut = Some((
                    ErrorKind::StreamCut,
                    format!("the response broke off: {}", describe(&e)),
                ));
                break;
            }
        }
    }
    Ok(Received {
        sent,
        status,
        content_type,
        content_encoding,
        body: received,
        cut,
        trace: None,
    })
}

/// The figures of an exchange: SSE framing, JSON and the spec-decode adapters, run by the
/// caller away from the tasks that stamp arrivals. Never fails: problems land in
/// `Exchange::error`.
pub fn measure(target: &Target, outcome: Outcome) -> Exchange {
    let mut ex = measure_exchange(target, outcome);
    if let Some((_, message)) = &mut ex.error {
        *message = clean_server_text(message, &target.headers);
    }
    ex
}

/// The most of a server's error text a record keeps: a message is a line or two, and a server
/// that answers 60 MB of it must not put 60 MB in every record, export and console line.
pub const MAX_SERVER_TEXT_BYTES: usize = 1024;

/// A server's text made fit for the console, files and reports: the values of the headers we
/// sent (the API key and any `--header`) replaced by `[redacted]` — a server may echo them in
/// its error — then cut to [`MAX_SERVER_TEXT_BYTES`] (saying how much was left out), and
/// control characters written as `\u{..}` escapes, so an escape sequence in a server's answer
/// cannot drive the terminal.
pub fn clean_server_text(text: &str, headers: &HeaderMap) -> String {
    let mut text = text.to_string();
    for (name, value) in headers {
        if name == reqwest::header::CONTENT_TYPE {
            continue;
        }
        let Ok(value) = value.to_str() else { continue };
        for secret in [value, value.strip_prefix("Bearer ").unwrap_or_default()] {
            if secret.len() >= 4 {
                text = text.replace(secret, "[redacted]");
            }
        }
    }
    if text.len() > MAX_SERVER_TEXT_BYTES {
        let mut end = MAX_SERVER_TEXT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text = format!("{}… ({} more bytes not kept)", &text[..end], text.len() - end);
    }
    crate::console::escape_controls(&text, &[]).into_owned()
}

fn measure_exchange(target: &Target, outcome: Outcome) -> Exchange {
    let received = match outcome {
        Ok(r) => r,
        Err((kind, message)) => return failed(kind, message),
    };
    let Received {
        sent,
        status,
        content_type,
        content_encoding,
        body,
        cut,
        trace,
    } = received;
    let ended = body.last().unwrap_or_else(Instant::now);
    // speclens sends no Accept-Encoding: a compressed answer would be read as raw bytes.
    if let Some(encoding) = content_encoding.filter(|e| !e.trim().eq_ignore_ascii_case("identity")) {
        return failed(
            ErrorKind::BadResponse,
            format!(
                "HTTP {}: the answer is compressed (Content-Encoding: {encoding}), which speclens neither asks for nor decodes; turn compression off for this client on the server or proxy",
                status.as_u16()
            ),
        );
    }
    if !status.is_success() {
        let body = body.bytes();
        let message = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| {
                v["error"]["message"]
                    .as_str()
                    .or(v["detail"].as_str())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
        return failed(ErrorKind::HttpStatus, format!("HTTP {}: {message}", status.as_u16()));
    }
    let mut ex = if target.stream {
        if let Some(error) = not_a_stream(body.bytes(), content_type.as_deref(), cut.is_some()) {
            return failed(ErrorKind::BadResponse, error);
        }
        parse_stream(&body, sent, target.endpoint)
    } else {
        parse_whole(&body, sent, target.endpoint)
    };
    if let Some(cut) = cut {
        // A body cut by the deadline is a timeout, whatever the half-read body looks like (the
        // other transport files it so too).
        if ex.error.is_none() || cut.0 == ErrorKind::Timeout {
            ex.error = Some(cut);
        }
    }
    if ex.error.is_none() {
        ex.e2el_ms = Some(ms(ended - sent));
        ex.http = trace.map(|t| http_trace(&t, &body));
    }
    ex
}

/// AIPerf's HTTP phases of an exchange, in ms from the call: the connection's and the body's
/// reads (their kernel receive times).
fn http_trace(t: &WireTrace, body: &Arrivals) -> HttpTrace {
    let from_call = |at: Instant| ms(at.saturating_duration_since(t.called));
    HttpTrace {
        dns_lookup_ms: ms(t.dns),
        connecting_ms: ms(t.connecting),
        written_ms: from_call(t.written),
        first_read_ms: body.stamps().first().map(|at| from_call(*at)),
        last_read_ms: body.last().map(from_call),
        chunks_received: body.stamps().len() as u64,
        bytes_sent: t.bytes_sent,
        bytes_received: body.bytes().len() as u64,
        reused: t.reused,
    }
}

/// Why a complete answer to a stream request is not a stream at all (an HTML page from a proxy
/// or a login wall, a JSON body), or `None` when it holds SSE events or was cut (a cut stream
/// is `stream_cut`). A stream with a wrong `Content-Type` but real events is still read.
fn not_a_stream(body: &[u8], content_type: Option<&str>, cut: bool) -> Option<String> {
    const SSE_FIELDS: [&str; 5] = ["data:", "event:", "id:", "retry:", ":"];
    // The first bytes decide: a stream is told by its bytes (ASCII whitespace and a byte-order
    // mark skipped), without decoding the answer's head (this runs for every response).
    let mut head = &body[..body.len().min(4096)];
    loop {
        let trimmed = head.trim_ascii_start();
        let trimmed = trimmed.strip_prefix("\u{feff}".as_bytes()).unwrap_or(trimmed);
        if trimmed.len() == head.len() {
            break;
        }
        head = trimmed;
    }
    if cut || head.is_empty() || SSE_FIELDS.iter().any(|f| head.starts_with(f.as_bytes())) {
        return None;
    }
    // Otherwise the head is decoded (other whitespace skipped too) to decide and to quote it.
    let text = String::from_utf8_lossy(&body[..body.len().min(4096)]);
    let start = text.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    if start.is_empty() || SSE_FIELDS.iter().any(|f| start.starts_with(f)) {
        return None;
    }
    Some(format!(
        "a stream was asked for but the answer is not an SSE stream ({}): {}",
        content_type.unwrap_or("no Content-Type"),
        answer_head(start)
    ))
}

/// The start of an answer for an error message, its whitespace runs as single spaces.
fn answer_head(text: &str) -> String {
    let mut head = String::new();
    for word in text.split_whitespace() {
        if head.len() + word.len() > 120 {
            if head.is_empty() {
                head.extend(word.chars().take(120));
            }
            head.push('…');
            break;
        }
        if !head.is_empty() {
            head.push(' ');
        }
        head.push_str(word);
    }
    head
}

fn failed(kind: ErrorKind, message: String) -> Exchange {
    Exchange {
        error: Some((kind, message)),
        ..Exchange::default()
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The largest token count a response's `usage` may give: no context holds 2³² tokens, and
/// below it a run's sums cannot wrap.
const MAX_USAGE_TOKENS: u64 = 1 << 32;

/// Keep a `usage`'s counts (the last one seen wins); a count above 2^32 is a bad response.
fn note_counts(ex: &mut Exchange, usage: SkimUsage) {
    for (key, value, slot) in [
        ("completion_tokens", usage.completion_tokens, &mut ex.completion_tokens),
        ("prompt_tokens", usage.prompt_tokens, &mut ex.prompt_tokens),
        ("total_tokens", usage.total_tokens, &mut ex.total_tokens),
    ] {
        match value {
            Some(t) if t > MAX_USAGE_TOKENS => {
                ex.error.get_or_insert((
                    ErrorKind::BadResponse,
                    format!("usage.{key} = {t} is no token count (above 2^32)"),
                ));
            }
            Some(t) => *slot = Some(t),
            None => {}
        }
    }
}

fn finish_scan(ex: &mut Exchange, scan: PayloadScan) {
    ex.server = scan.server_timings();
    match scan.finish() {
        PayloadOutcome::Record(r) => ex.spec = Some(r),
        PayloadOutcome::Partial(p) => ex.spec_partial = Some(p),
        PayloadOutcome::NoStats => {}
        PayloadOutcome::Rejected(r) => ex.spec_rejected = Some(format!("{}: {r}", r.kind())),
    }
}

fn parse_stream(body: &Arrivals, sent: Instant, endpoint: EndpointKind) -> Exchange {
    let mut ex = Exchange::default();
    let mut scan = PayloadScan::new();
    let mut last_content: Option<Instant> = None;
    let mut done = false;
    // Tokens per content chunk, while every one carried the usage so far.
    let mut chunks = super::chunk_counts::ChunkCounts::default();
    // Each event is read as it is framed (none is kept), stamped with the arrival of the chunk
    // that completed it.
    let trailing = speclens_shared::request::sse::for_each_event(body.bytes(), body.ends(), |index, data| {
        let at = body.stamps()[index];
        if data.trim() == "[DONE]" {
            done = true;
            return true;
        }
        // An event with a lone surrogate escape is read again with it replaced.
        let repaired;
        let event = match read_event(data, endpoint) {
            Ok(e) => e,
            Err(e) => match speclens_shared::request::sse::without_lone_surrogates(data) {
                Some(fixed) => {
                    repaired = fixed;
                    match read_event(&repaired, endpoint) {
                        Ok(e) => e,
                        Err(e) => {
                            ex.error = Some((ErrorKind::BadResponse, e));
                            return false;
                        }
                    }
                }
                None => {
                    ex.error = Some((ErrorKind::BadResponse, e));
                    return false;
                }
            },
        };
        let completion_tokens = event.usage.and_then(|u| u.completion_tokens);
        if event.several {
            chunks.several_choices();
        }
        if !event.text.is_empty() {
            ex.generated_text.push_str(&event.text);
            match last_content {
                None => ex.ttft_ms = Some(ms(at - sent)),
                Some(prev) => ex.itl_ms.push(ms(at - prev)),
            }
            last_content = Some(at);
            chunks.content(completion_tokens);
        } else {
            chunks.other(completion_tokens);
        }
        if let Some(usage) = event.usage {
            note_counts(&mut ex, usage);
        }
        if let Some(whole) = event.whole {
            scan.push(&whole);
        }
        true
    });
    if ex.error.is_some() {
        return ex;
    }
    if !done {
        ex.error = Some((
            ErrorKind::StreamCut,
            if trailing {
                "the stream ended inside an event".into()
            } else {
                "the stream ended without [DONE]".into()
            },
        ));
        return ex;
    }
    if ex.ttft_ms.is_none() {
        ex.error = Some((ErrorKind::BadResponse, "the stream carried no generated text".into()));
        return ex;
    }
    ex.chunk_tokens = chunks.finish(ex.completion_tokens);
    finish_scan(&mut ex, scan);
    ex
}

fn parse_whole(received: &Arrivals, sent: Instant, endpoint: EndpointKind) -> Exchange {
    let mut ex = Exchange::default();
    let body = received.bytes();
    let parsed = serde_json::from_slice::<Value>(body).or_else(|e| {
        // A lone surrogate escape is replaced, not fatal.
        std::str::from_utf8(body)
            .ok()
            .and_then(speclens_shared::request::sse::without_lone_surrogates)
            .ok_or(e)
            .and_then(|fixed| serde_json::from_str(&fixed))
    });
    let v = match parsed {
        Ok(v) => v,
        Err(e) => {
            ex.error = Some((ErrorKind::BadResponse, format!("the response is not JSON: {e}")));
            return ex;
        }
    };
    ex.generated_text = content(&v, endpoint, false);
    // Without a stream the first token arrives with the whole answer.
    ex.ttft_ms = received.last().map(|at| ms(at - sent));
    if let Some(usage) = usage_of(&v) {
        note_counts(&mut ex, usage);
    }
    let mut scan = PayloadScan::new();
    scan.push(&v);
    finish_scan(&mut ex, scan);
    ex
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSE events of the received chunks, each stamped with the arrival of the chunk that
    /// completed it.
    fn sse_events(chunks: &[(Instant, Bytes)]) -> (Vec<(Instant, String)>, bool) {
        let bytes: Vec<&[u8]> = chunks.iter().map(|(_, b)| b.as_ref()).collect();
        let (events, trailing) = speclens_shared::request::sse::events(&bytes);
        (
            events.into_iter().map(|(i, data)| (chunks[i].0, data)).collect(),
            trailing,
        )
    }

    /// The chunks as the transports keep them.
    fn arrived(chunks: &[(Instant, Bytes)]) -> Arrivals {
        let mut body = Arrivals::new(std::sync::Arc::new(super::super::wire::Budget::new(1 << 30)).charge());
        for (at, bytes) in chunks {
            assert!(body.push(*at, bytes));
        }
        body
    }

    fn at(base: Instant, ms: u64, text: &str) -> (Instant, Bytes) {
        (base + Duration::from_millis(ms), Bytes::from(text.to_string()))
    }

    /// A usage count no context can hold fails the response instead of wrapping a run's sums.
    #[test]
    fn a_usage_count_past_any_context_is_a_bad_response() {
        let mut ex = Exchange::default();
        let usage_in = |v: serde_json::Value| usage_of(&v).expect("a usage object");
        note_counts(
            &mut ex,
            usage_in(serde_json::json!({"usage": {"prompt_tokens": 12, "completion_tokens": 5}})),
        );
        assert_eq!(
            (ex.prompt_tokens, ex.completion_tokens, ex.error.is_none()),
            (Some(12), Some(5), true)
        );
        let huge = u64::MAX - 2;
        note_counts(&mut ex, usage_in(serde_json::json!({"usage": {"prompt_tokens": huge}})));
        let (kind, message) = ex.error.expect("a bad response");
        assert_eq!(kind, ErrorKind::BadResponse);
        assert!(
            message.contains("usage.prompt_tokens = 18446744073709551613 is no token count"),
            "{message}"
        );
        assert_eq!(ex.prompt_tokens, Some(12), "the huge count is not taken");
    }

    #[test]
    fn only_an_answer_that_cannot_be_a_stream_is_called_one() {
        let t = Instant::now();
        let html = [at(t, 1, "\n<!DOCTYPE html>\n<html>\n  <body>Sign in</body></html>")];
        assert_eq!(
            not_a_stream(arrived(&html).bytes(), Some("text/html"), false).unwrap(),
            "a stream was asked for but the answer is not an SSE stream (text/html): <!DOCTYPE html> <html> <body>Sign in</body></html>"
        );
        assert!(
            not_a_stream(arrived(&html).bytes(), None, true).is_none(),
            "a cut answer is a cut stream"
        );
        for stream in [
            "\u{feff}data: {}\n\n",
            "\r\n: keep-alive\n\n",
            "event: x\ndata: 1\n\n",
            "",
        ] {
            assert!(not_a_stream(stream.as_bytes(), None, false).is_none(), "{stream:?}");
        }
        let word = "x".repeat(500);
        assert_eq!(answer_head(&word), format!("{}…", "x".repeat(120)));
    }

    #[test]
    fn server_text_loses_our_secrets_and_its_control_characters() {
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::CONTENT_TYPE, "application/json".parse().unwrap());
        headers.insert(reqwest::header::AUTHORIZATION, "Bearer sk-live-1234".parse().unwrap());
        headers.insert("x-tenant", "acme-secret".parse().unwrap());
        let text = "HTTP 401: bad key sk-live-1234 for acme-secret\u{1b}]0;pwned\u{7}\u{1b}[2J";
        assert_eq!(
            clean_server_text(text, &headers),
            "HTTP 401: bad key [redacted] for [redacted]\\u{1b}]0;pwned\\u{7}\\u{1b}[2J"
        );
    }

    #[test]
    fn sse_events_split_across_chunks_take_the_completing_chunk_time() {
        let t = Instant::now();
        let chunks = [
            at(t, 10, "data: {\"a\":1}\n\ndata: {\"b\""),
            at(t, 20, ":2}\r\n\r\n: comment\n\ndata: [DONE]\n\n"),
        ];
        let (events, trailing) = sse_events(&chunks);
        assert!(!trailing);
        let got: Vec<(u64, &str)> = events
            .iter()
            .map(|(i, d)| ((*i - t).as_millis() as u64, d.as_str()))
            .collect();
        assert_eq!(got, vec![(10, "{\"a\":1}"), (20, "{\"b\":2}"), (20, "[DONE]")]);
    }

    #[test]
    fn stream_timing_counts_content_chunks_only() {
        let t = Instant::now();
        let role = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
        let chunks = [
            at(t, 5, role),
            at(t, 50, "data: {\"choices\":[{\"delta\":{\"content\":\" a b\"}}]}\n\n"),
            at(t, 60, "data: {\"choices\":[{\"delta\":{\"content\":\" c\"}}]}\n\n"),
            at(
                t,
                75,
                "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
            ),
            at(
                t,
                76,
                "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n",
            ),
        ];
        let ex = parse_stream(&arrived(&chunks), t, EndpointKind::Chat);
        assert_eq!(ex.error, None);
        assert_eq!(ex.ttft_ms, Some(50.0));
        assert_eq!(ex.itl_ms, vec![10.0]);
        assert_eq!(
            (ex.prompt_tokens, ex.completion_tokens, ex.generated_text.as_str()),
            (Some(3), Some(3), " a b c")
        );
        let cut = parse_stream(&arrived(&chunks[..3]), t, EndpointKind::Chat);
        assert_eq!(cut.error.unwrap().0, ErrorKind::StreamCut);
        let garbage = [at(t, 1, "data: {not json\n\n")];
        assert_eq!(
            parse_stream(&arrived(&garbage), t, EndpointKind::Chat).error.unwrap().0,
            ErrorKind::BadResponse
        );
    }

    #[test]
    fn odd_event_shapes_are_read_as_before_and_errors_still_fail() {
        let t = Instant::now();
        let done = "data: [DONE]\n\n";
        let ev = |ms: u64, json: &str| at(t, ms, &format!("data: {json}\n\n"));
        let chunks = [
            ev(1, "null"),
            ev(2, r#"{"choices":[{"delta":{"content":5}}],"error":null}"#),
            ev(
                10,
                r#"{"choices":[{"delta":{"content":"a\"b"}},{"delta":{"content":" c"}}]}"#,
            ),
            ev(
                20,
                r#"{"choices":[{"delta":null},{"delta":{"content":"d"}}],"usage":{"completion_tokens":2.0}}"#,
            ),
            at(t, 21, done),
        ];
        let ex = parse_stream(&arrived(&chunks), t, EndpointKind::Chat);
        assert_eq!(ex.error, None);
        assert_eq!(ex.generated_text, "a\"b cd");
        assert_eq!((ex.ttft_ms, ex.itl_ms.clone()), (Some(10.0), vec![10.0]));
        let failing = [ev(5, r#"{"error":{"message":"overloaded"}}"#), at(t, 6, done)];
        let (kind, message) = parse_stream(&arrived(&failing), t, EndpointKind::Chat).error.unwrap();
        assert_eq!(kind, ErrorKind::BadResponse);
        assert!(message.contains("overloaded"), "{message}");
    }

    /// The usage so far in each chunk counts its tokens (a reasoning chunk's join the next
    /// content chunk); a second choice's chunks (`n` > 1) make the counts unknowable.
    #[test]
    fn each_chunk_s_tokens_come_from_its_usage_and_a_second_choice_drops_them() {
        let t = Instant::now();
        let ev = |ms: u64, json: &str| at(t, ms, &format!("data: {json}\n\n"));
        let chunk = |ms: u64, index: u32, delta: &str, so_far: u64| {
            ev(
                ms,
                &format!(
                    r#"{{"choices":[{{"index":{index},"delta":{delta}}}],"usage":{{"completion_tokens":{so_far}}}}}"#
                ),
            )
        };
        let stream = |second: bool| {
            let mut chunks = vec![
                chunk(1, 0, r#"{"role":"assistant","content":""}"#, 0),
                chunk(10, 0, r#"{"content":"a"}"#, 1),
                chunk(20, 0, r#"{"reasoning_content":"hm"}"#, 3),
                chunk(30, 0, r#"{"content":"bcd"}"#, 4),
            ];
            // A second choice whose usage happens to rise with the first's: only its index
            // tells it apart.
            if second {
                chunks.push(chunk(31, 1, r#"{"content":"x"}"#, 5));
            }
            let total = if second { 5 } else { 4 };
            chunks.push(ev(
                40,
                &format!(r#"{{"choices":[],"usage":{{"completion_tokens":{total}}}}}"#),
            ));
            chunks.push(at(t, 41, "data: [DONE]\n\n"));
            parse_stream(&arrived(&chunks), t, EndpointKind::Chat)
        };
        let one = stream(false);
        assert_eq!(
            (one.error, one.chunk_tokens, one.completion_tokens),
            (None, vec![1, 3], Some(4))
        );
        assert!(stream(true).chunk_tokens.is_empty());
    }
}
