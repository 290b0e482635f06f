//! A neutral OpenAI-compatible mock server for side-by-side client benchmarks. It answers
//! `/v1/chat/completions` and `/v1/completions` (streaming or not) with `max_tokens` tokens
//! (one token per chunk), after a fixed time to first token and a fixed inter-token latency,
//! and `/v1/models`. Usage: `mock-openai --port 8000 --ttft-ms 50 --itl-ms 10`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

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

async fn pause(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

async fn handle(req: Request<Incoming>, timing: Timing) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    if path == "/v1/models" {
        let body = json!({"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "mock"}]});
        return Ok(full(200, "application/json", body.to_string()));
    }
    let chat = match path.as_str() {
        "/v1/chat/completions" => true,
        "/v1/completions" => false,
        "/health" => return Ok(full(200, "text/plain", String::new())),
        _ => return Ok(full(404, "application/json", r#"{"error":{"message":"not found"}}"#.into())),
    };
    let Ok(bytes) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return Ok(full(400, "application/json", r#"{"error":{"message":"bad body"}}"#.into()));
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
        pause(timing.ttft + timing.itl * (tokens as u32 - 1)).await;
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
        let object = if chat { "chat.completion.chunk" } else { "text_completion" };
        let chunk = |choice: Value| {
            Bytes::from(format!(
                "data: {}\n\n",
                json!({"id": "cmpl-mock", "object": object, "created": 0, "model": "mock", "choices": [choice]})
            ))
        };
        pause(timing.ttft).await;
        for i in 0..tokens {
            if i > 0 {
                pause(timing.itl).await;
            }
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
            let _ = http1::Builder::new().serve_connection(TokioIo::new(socket), service).await;
        });
    }
}
