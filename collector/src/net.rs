//! Small helpers shared by the collector's servers and clients: binding, secrets compared in
//! constant time, errors with their causes, bodies read up to a limit, and the signals that stop
//! a command.

use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::error::{CollectorError, Signal};

/// Bind `addr` and return the listener with the address it really got (port 0 resolved).
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), CollectorError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| CollectorError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(CollectorError::Serve)?;
    Ok((listener, local))
}

/// Every HTTP client of the collector starts here: redirects are followed only within one
/// origin (scheme, host and port), and no `Referer` is sent. reqwest drops `Authorization` on a
/// cross-host redirect, but not an `X-Api-Key` or `api-key` given with `--header`, nor the
/// prompt body: a redirect to another host is refused with a message naming where it pointed.
pub fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .referer(false)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let next = attempt.url();
            let same_origin = attempt.previous().last().is_some_and(|from| {
                from.scheme() == next.scheme()
                    && from.host_str() == next.host_str()
                    && from.port_or_known_default() == next.port_or_known_default()
            });
            if !same_origin {
                let shown = format!(
                    "{}://{}{}",
                    next.scheme(),
                    next.host_str().unwrap_or_default(),
                    next.port().map(|p| format!(":{p}")).unwrap_or_default()
                );
                attempt.error(format!(
                    "the server redirected to {shown}, another origin; speclens does not send your headers or prompts there (give that address as the URL if you trust it)"
                ))
            } else if attempt.previous().len() > 10 {
                attempt.error("more than 10 redirects")
            } else {
                attempt.follow()
            }
        }))
}

/// Connections a server of ours (the dashboard, the sim) serves at once: three quarters of the
/// open-file limit (the rest is for files and the runs), at most 4,096. Past it, new
/// connections wait in the listen backlog until one closes (the dashboard also refuses a
/// WebSocket upgrade, 503), so idle connections cannot exhaust the process's files.
pub fn connection_cap() -> usize {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::resource::{getrlimit, Resource};
        if let Ok((soft, _)) = getrlimit(Resource::RLIMIT_NOFILE) {
            return usize::try_from(soft / 4 * 3).unwrap_or(4096).clamp(16, 4096);
        }
    }
    768
}

/// A listener for `axum::serve` that holds one of `slots` for each connection it hands out, for
/// as long as the connection lives: past the cap, accepting waits until one closes.
pub struct CappedListener<L> {
    pub inner: L,
    pub slots: std::sync::Arc<tokio::sync::Semaphore>,
}

impl<L: axum::serve::Listener> axum::serve::Listener for CappedListener<L> {
    type Io = Held<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // The semaphore is never closed, so the permit always comes.
        let permit = self.slots.clone().acquire_owned().await.ok();
        let (io, addr) = self.inner.accept().await;
        (Held { io, _slot: permit }, addr)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection holding its slot of a [`CappedListener`].
pub struct Held<T> {
    io: T,
    _slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Held<T> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Held<T> {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// Compare secrets in constant time, so a token cannot be guessed byte by byte from timings.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// An error with its chain of sources, `: `-separated.
pub fn describe(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A reqwest error with its causes ("Connection refused") and without its URL (which may hold
/// a password or a key; callers name the redacted URL themselves).
pub fn describe_http(e: reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_decode() {
        "the body does not decode"
    } else if e.is_body() {
        "reading the body failed"
    } else {
        "the request failed"
    };
    let e = e.without_url();
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    if causes.is_empty() {
        format!("{what}: {e}")
    } else {
        format!("{what}: {}", causes.join(": "))
    }
}

/// What to do about a failed connection whose [`describe_http`] text shows a TLS failure: an
/// untrusted certificate (give its CA, or skip the check), or https:// to a port that speaks
/// plain HTTP. `None` when it is not TLS's doing.
pub fn connect_hint(described: &str) -> Option<&'static str> {
    let text = described.to_ascii_lowercase();
    if text.contains("invalidcontenttype") || text.contains("corrupt message") || text.contains("wrong version number")
    {
        Some("TLS failed: the server speaks plain HTTP there, use http://")
    } else if text.contains("certificate") || text.contains("unknownissuer") || text.contains("causedasendentity") {
        Some("TLS failed: the server's certificate is not trusted; trust its CA with --ca-cert FILE, or skip the check with --insecure")
    } else {
        None
    }
}

/// The most a `/metrics` text may hold (a 64-engine vLLM's is about 1 MB).
pub const MAX_METRICS_BYTES: usize = 32 << 20;

/// The most a Prometheus query answer or a model list may hold.
pub const MAX_API_BYTES: usize = 64 << 20;

/// Read a response's body, stopping with an error once it passes `limit` bytes, so a server
/// that answers without end costs at most `limit` of memory (reqwest's `bytes()` reads it all).
pub async fn read_limited(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::with_capacity(response.content_length().map_or(0, |n| n.min(limit as u64) as usize));
    while let Some(chunk) = response.chunk().await.map_err(describe_http)? {
        if body.len() + chunk.len() > limit {
            return Err(format!(
                "the answer passed {} MiB and was not read further",
                limit >> 20
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// [`read_limited`] as text (invalid UTF-8 replaced, as reqwest's `text()` does).
pub async fn read_text_limited(response: reqwest::Response, limit: usize) -> Result<String, String> {
    let body = read_limited(response, limit).await?;
    Ok(match String::from_utf8(body) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The first SIGINT (Ctrl-C) or SIGTERM. Once a command listens for SIGTERM it no longer ends
/// the process by itself, so every wait for "stop" in the collector goes through here.
pub async fn stop_signal() -> Signal {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            return tokio::select! {
                _ = interrupt => Signal::Interrupt,
                _ = terminate.recv() => Signal::Terminate,
            };
        }
    }
    interrupt.await;
    Signal::Interrupt
}

/// A URL fit for files and logs: user, password and query removed (they may hold secrets).
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.has_host() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        // Not a URL with a host: keep what follows the last `@` (user and password go) and drop
        // the query.
        _ => {
            let no_query = url.split('?').next().unwrap_or_default();
            match (no_query.find("://"), no_query.rfind('@')) {
                (Some(scheme), Some(at)) if at > scheme => {
                    format!("{}{}", &no_query[..scheme + 3], &no_query[at + 1..])
                }
                (_, Some(at)) => no_query[at + 1..].to_string(),
                _ => no_query.to_string(),
            }
        }
    }
}

/// A server's base URL without a trailing `/` or `/v1` (OpenAI clients often include it).
pub fn server_base(url: &str) -> &str {
    let url = url.trim_end_matches('/');
    url.strip_suffix("/v1").unwrap_or(url)
}

/// The version the server at `base` reports: vLLM's `/version`, else llama.cpp's `/props`
/// build; `None` when neither answers within 3 s (a version is a label, never a failure).
pub async fn server_version(
    client: &reqwest::Client,
    headers: &reqwest::header::HeaderMap,
    base: &str,
) -> Option<String> {
    let get = |path: &'static str| async move {
        let response = client
            .get(format!("{base}{path}"))
            .headers(headers.clone())
            .timeout(std::time::Duration::from_secs(3))
            .send()
            .await
            .ok()
            .filter(|r| r.status().is_success())?;
        let bytes = read_limited(response, 1 << 20).await.ok()?;
        serde_json::from_slice::<serde_json::Value>(&bytes).ok()
    };
    if let Some(v) = get("/version")
        .await
        .and_then(|v| v["version"].as_str().map(str::to_string))
    {
        return Some(v);
    }
    get("/props")
        .await
        .and_then(|v| v["build_info"].as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
