//! A neutral OpenAI-compatible mock server for side-by-side client benchmarks. It answers
//! `/v1/chat/completions` and `/v1/completions` (streaming or not) with `max_tokens` tokens
//! (one token per chunk), after a fixed time to first token and a fixed inter-token latency,
//! and `/v1/models`. Chunks are scheduled on deadlines from the request's arrival (no drift),
//! and the server's own truth — when each chunk was handed to the connection — is averaged at
//! `GET /stats` (`POST /stats/reset` starts over), so a client's measured TTFT and ITL can be
//! compared with what the server did. Usage: `mock-openai --port 8000 --ttft-ms 50 --itl-ms 10`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

/// Server-side truth: sums (ns) and counts of TTFT and ITL as the server produced them.
static TTFT_NS: AtomicU64 = AtomicU64::new(0);
static TTFT_N: AtomicU64 = AtomicU64::new(0);
static ITL_NS: AtomicU64 = AtomicU64::new(0);
static ITL_N: AtomicU64 = AtomicU64::new(0);

fn stats_json() -> String {
    let mean_ms = |sum: &AtomicU64, n: &AtomicU64| {
        let n = n.load(Ordering::Relaxed);
        (n > 0).then(|| sum.load(Ordering::Relaxed) as f64 / n as f64 / 1e6)
    };
    json!({"mean_ttft_ms": mean_ms(&TTFT_NS, &TTFT_N), "ttft_count": TTFT_N.load(Ordering::Relaxed),
           "mean_itl_ms": mean_ms(&ITL_NS, &ITL_N), "itl_count": ITL_N.load(Ordering::Relaxed)})
    .to_string()
}

fn record(sum: &AtomicU64, n: &AtomicU64, d: Duration) {
    sum.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    n.fetch_add(1, Ordering::Relaxed);
}

#[derive(Clone, Copy)]
struct Timing {
    ttft: Duration,
    itl: Duration,
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn full(status: u16, content_type: &str, body: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)).boxed())
        .expect("a valid response")
}

async fn pause_until(at: Instant) {
    if at > Instant::now() {
        tokio::time::sleep_until(at).await;
    }
}

async fn handle(req: Request<Incoming>, timing: Timing) -> Result<Response<Body>, Infallible> {
    let arrived = Instant::now();
    let path = req.uri().path().to_string();
    if path == "/stats" {
        if req.method() == hyper::Method::POST {
            for a in [&TTFT_NS, &TTFT_N, &ITL_NS, &ITL_N] {
                a.store(0, Ordering::Relaxed);
            }
        }
        return Ok(full(200, "application/json", stats_json()));
    }
    if path == "/v1/models" {
        let body = json!({"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "mock"}]});
        return Ok(full(200, "application/json", body.to_string()));
    }
    let chat = match path.as_str() {
        "/v1/chat/completions" => true,
        "/v1/completions" => false,
        "/health" => return Ok(full(200, "text/plain", String::new())),
        _ => {
            return Ok(full(
                404,
                "application/json",
                r#"{"error":{"message":"not found"}}"#.into(),
            ))
        }
    };
    let Ok(bytes) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return Ok(full(
            400,
            "application/json",
            r#"{"error":{"message":"bad body"}}"#.into(),
        ));
    };
    let request: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let tokens = request["max_tokens"]
        .as_u64()
        .or(request["max_completion_tokens"].as_u64())
        .unwrap_or(128)
        .clamp(1, 1 << 20);
    let stream = request["stream"].as_bool().unwrap_or(false);
    let usage = json!({"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens});
    if !stream {
        pause_until(arrived + timing.ttft + timing.itl * (tokens as u32 - 1)).await;
        record(&TTFT_NS, &TTFT_N, arrived.elapsed());
        let text = " tok".repeat(tokens as usize);
        let choice = if chat {
            json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"})
        } else {
            json!({"index": 0, "text": text, "finish_reason": "length"})
        };
        let body = json!({"id": "cmpl-mock", "object": if chat {"chat.completion"} else {"text_completion"},
                          "created": 0, "model": "mock", "choices": [choice], "usage": usage});
        return Ok(full(200, "application/json", body.to_string()));
    }
    let include_usage = request["stream_options"]["include_usage"].as_bool().unwrap_or(false);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(16);
    tokio::spawn(async move {
        let object = if chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        };
        let chunk = |choice: Value| {
            Bytes::from(format!(
                "data: {}\n\n",
                json!({"id": "cmpl-mock", "object": object, "created": 0, "model": "mock", "choices": [choice]})
            ))
        };
        let mut last_sent: Option<Instant> = None;
        for i in 0..tokens {
            pause_until(arrived + timing.ttft + timing.itl * i as u32).await;
            let last = i + 1 == tokens;
            let finish = if last { json!("length") } else { Value::Null };
            let choice = if chat {
                json!({"index": 0, "delta": {"content": " tok"}, "finish_reason": finish})
            } else {
                json!({"index": 0, "text": " tok", "finish_reason": finish})
            };
            if tx.send(Ok(Frame::data(chunk(choice)))).await.is_err() {
                return;
            }
            let now = Instant::now();
            match last_sent {
                None => record(&TTFT_NS, &TTFT_N, now - arrived),
                Some(prev) => record(&ITL_NS, &ITL_N, now - prev),
            }
            last_sent = Some(now);
        }
        let mut tail = String::new();
        if include_usage {
            let usage_chunk = json!({"id": "cmpl-mock", "object": object, "created": 0, "model": "mock", "choices": [], "usage": usage});
            tail.push_str(&format!("data: {usage_chunk}\n\n"));
        }
        tail.push_str("data: [DONE]\n\n");
        let _ = tx.send(Ok(Frame::data(Bytes::from(tail)))).await;
    });
    let body = StreamBody::new(tokio_stream(rx)).boxed();
    Ok(Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .expect("a valid response"))
}

/// An mpsc receiver as a `Stream` of body frames.
fn tokio_stream<T>(mut rx: tokio::sync::mpsc::Receiver<T>) -> impl futures_util::Stream<Item = T> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port = arg(&args, "--port", 8000) as u16;
    let timing = Timing {
        ttft: Duration::from_millis(arg(&args, "--ttft-ms", 0)),
        itl: Duration::from_millis(arg(&args, "--itl-ms", 0)),
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("mock-openai: http://{}", listener.local_addr()?);
    loop {
        let (socket, _) = listener.accept().await?;
        let _ = socket.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(req, timing));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}
