//! `speclens serve`: the dashboard's HTTP server. Static files of the built web app, served
//! without path traversal (tower-http `ServeDir`), with the right types and compression.
//! Binds 127.0.0.1 by default; any other address requires an access token, checked on every
//! request (`?token=` once, then a cookie, or `Authorization: Bearer`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use base64::Engine as _;
use serde_json::json;
use sha2::Digest as _;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, oneshot};
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;

use crate::error::CollectorError;
use crate::live::LiveHub;
use crate::results_folder::history;

const TOKEN_COOKIE: &str = "speclens_token";

/// Validated settings of the dashboard server.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    pub addr: SocketAddr,
    /// Required on every request when set.
    pub token: Option<String>,
    pub web_dir: WebAssets,
    /// Page state appended to the printed URL.
    pub fragment: Option<String>,
    /// Where past runs are listed from (`/api/runs`).
    pub results_dir: PathBuf,
}

impl ServeSettings {
    /// Find the assets and require (or generate) a token off loopback.
    pub fn new(
        addr: SocketAddr,
        token: Option<String>,
        web_dir: Option<PathBuf>,
        results_dir: PathBuf,
    ) -> Result<ServeSettings, CollectorError> {
        let web_dir = resolve_web_dir(web_dir)?;
        let token = match token {
            Some(t) if is_strong_token(&t) => Some(t),
            Some(_) => return Err(CollectorError::WeakToken),
            None if addr.ip().is_loopback() => None,
            None => Some(generate_token()?),
        };
        Ok(ServeSettings {
            addr,
            token,
            web_dir,
            fragment: None,
            results_dir,
        })
    }
}

fn is_strong_token(token: &str) -> bool {
    token.len() >= 16
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// 32 hex characters from the OS random source.
fn generate_token() -> Result<String, CollectorError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| CollectorError::Token(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The web app's files, embedded at build time (release builds made after `trunk build`; debug
/// builds read them from `web/dist` at run time). One binary is then the whole product.
#[derive(rust_embed::RustEmbed)]
#[folder = "../web/dist"]
#[allow_missing = true]
struct EmbeddedAssets;

/// Where the dashboard's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebAssets {
    /// A folder on disk (`--web-dir`).
    Dir(PathBuf),
    /// Inside the binary.
    Embedded,
}

impl WebAssets {
    /// The built app's files (name, bytes), from the folder or the binary.
    pub fn files(&self) -> Result<Vec<(String, Vec<u8>)>, CollectorError> {
        match self {
            WebAssets::Embedded => Ok(EmbeddedAssets::iter()
                .filter_map(|name| Some((name.to_string(), EmbeddedAssets::get(&name)?.data.into_owned())))
                .collect()),
            WebAssets::Dir(dir) => {
                let read_error =
                    |e: std::io::Error| CollectorError::Output(format!("cannot read {}: {e}", dir.display()));
                let mut files = Vec::new();
                for entry in std::fs::read_dir(dir).map_err(read_error)?.flatten() {
                    if entry.path().is_file() {
                        let bytes = std::fs::read(entry.path()).map_err(read_error)?;
                        files.push((entry.file_name().to_string_lossy().into_owned(), bytes));
                    }
                }
                Ok(files)
            }
        }
    }
}

impl std::fmt::Display for WebAssets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WebAssets::Dir(dir) => write!(f, "{}", dir.display()),
            WebAssets::Embedded => f.write_str("the dashboard built into this binary"),
        }
    }
}

/// The dashboard's files: `--web-dir`, else the ones built into the binary, else `web/dist`
/// under the current folder.
pub fn resolve_web_dir(explicit: Option<PathBuf>) -> Result<WebAssets, CollectorError> {
    if let Some(dir) = explicit {
        return if dir.join("index.html").is_file() {
            Ok(WebAssets::Dir(dir))
        } else {
            Err(CollectorError::WebAssetsMissing { dir })
        };
    }
    if EmbeddedAssets::get("index.html").is_some() {
        return Ok(WebAssets::Embedded);
    }
    let local = PathBuf::from("web/dist");
    if local.join("index.html").is_file() {
        Ok(WebAssets::Dir(local))
    } else {
        Err(CollectorError::WebAssetsMissing { dir: local })
    }
}

/// Serve a file built into the binary (`/` is `index.html`); unknown paths are 404.
async fn embedded_file(uri: axum::http::Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path.to_string()
    };
    match EmbeddedAssets::get(&path) {
        Some(file) => {
            let mime = file.metadata.mimetype().to_string();
            ([(header::CONTENT_TYPE, mime)], file.data.into_owned()).into_response()
        }
        None => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

/// The URL a user opens (with the token when one is required).
pub fn dashboard_url(addr: SocketAddr, token: Option<&str>) -> String {
    match token {
        Some(t) => format!("http://{addr}/?token={t}"),
        None => format!("http://{addr}/"),
    }
}

/// What the dashboard's handlers share.
struct AppState {
    hub: LiveHub,
    results_dir: PathBuf,
    /// The connection slots ([`crate::net::connection_cap`]): an HTTP connection holds one while it is
    /// served, and a WebSocket holds one of its own for as long as it is open (hyper lets go of
    /// an upgraded connection, so without it held WebSockets would use up the process's files).
    slots: Arc<tokio::sync::Semaphore>,
    /// WebSockets open at once: at most half of the slots, so pages and the API are still
    /// served with every WebSocket slot held.
    ws_slots: Arc<tokio::sync::Semaphore>,
    /// The run list, parsed once per result file version.
    index: history::RunIndex,
}

/// The largest WebSocket message or frame a dashboard client may send: its messages are a few
/// bytes (it only listens), so anything larger is refused instead of buffered.
const MAX_WS_MESSAGE_BYTES: usize = 64 << 10;

/// The dashboard's routes: the live WebSocket, the run history API, and the web app's files.
fn router(settings: &ServeSettings, hub: LiveHub, slots: Arc<tokio::sync::Semaphore>) -> Router {
    let state = Arc::new(AppState {
        hub,
        results_dir: settings.results_dir.clone(),
        ws_slots: Arc::new(tokio::sync::Semaphore::new(slots.available_permits() / 2)),
        slots,
        index: history::RunIndex::default(),
    });
    let api = Router::new()
        .route("/ws", get(ws_upgrade))
        .route("/api/runs", get(list_runs))
        .route("/api/runs/{*id}", get(one_run))
        .route("/api/sweeps/{*id}", get(one_sweep))
        .route("/api/accept/{*id}", get(one_accept))
        .with_state(state);
    let mut app = match &settings.web_dir {
        WebAssets::Dir(dir) => api.fallback_service(ServeDir::new(dir).append_index_html_on_directories(true)),
        WebAssets::Embedded => api.fallback(embedded_file),
    };
    match &settings.token {
        Some(token) => app = app.layer(middleware::from_fn_with_state(Arc::new(token.clone()), require_token)),
        // Without a token only a loopback name may be asked for: a web page whose name was
        // rebound to 127.0.0.1 (DNS rebinding) sends its own name as Host and is refused.
        None => app = app.layer(middleware::from_fn(require_loopback_host)),
    }
    let policy = Arc::new(match &settings.web_dir {
        WebAssets::Dir(dir) => PagePolicy::Dir(dir.join("index.html")),
        WebAssets::Embedded => PagePolicy::Fixed(page_policy(
            &EmbeddedAssets::get("index.html")
                .map(|f| String::from_utf8_lossy(&f.data).into_owned())
                .unwrap_or_default(),
        )),
    });
    app.layer(CompressionLayer::new())
        .layer(middleware::from_fn_with_state(policy, security_headers))
}

/// Where the page's Content-Security-Policy comes from: the page built into the binary never
/// changes; a page served from a folder is read again for each page request, so a rebuild
/// (new file names in its start-up script) is served under its own hash.
enum PagePolicy {
    Fixed(String),
    Dir(PathBuf),
}

impl PagePolicy {
    async fn current(&self) -> String {
        match self {
            PagePolicy::Fixed(policy) => policy.clone(),
            PagePolicy::Dir(index) => page_policy(&tokio::fs::read_to_string(index).await.unwrap_or_default()),
        }
    }
}

/// A page's Content-Security-Policy, without `connect-src` (it names the host each request
/// asked for): scripts only from this server, plus the page's own inline scripts by their
/// hashes (Trunk writes a start-up script), WebAssembly, nothing framing it.
fn page_policy(index_html: &str) -> String {
    // Browsers hash a script's text after the parser turned CR LF and CR into LF.
    let page = index_html.replace("\r\n", "\n").replace('\r', "\n");
    let hashes: String = inline_scripts(&page)
        .into_iter()
        .map(|s| format!(" {}", script_hash(s)))
        .collect();
    format!(
        "default-src 'self'; script-src 'self'{hashes} 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

/// A script's CSP source expression: `'sha256-…'` of its exact text.
pub(crate) fn script_hash(script: &str) -> String {
    let digest = sha2::Sha256::digest(script.as_bytes());
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest))
}

/// The text of each `<script>` element without a `src` in a page.
fn inline_scripts(html: &str) -> Vec<&str> {
    let mut scripts = Vec::new();
    let mut rest = html;
    while let Some(open) = rest.find("<script") {
        let after = &rest[open..];
        let Some(tag_end) = after.find('>') else { break };
        let tag = &after[..tag_end];
        let body = &after[tag_end + 1..];
        let Some(close) = body.find("</script") else { break };
        if !tag.contains(" src=") {
            scripts.push(&body[..close]);
        }
        rest = &body[close..];
    }
    scripts
}

/// `connect-src` for a request: this server, its WebSocket under the host name asked for (a
/// name or IPv4 address with its port, host characters only; browsers that read CSP level 3
/// let `'self'` cover the WebSocket too), and blob URLs of the page's own downloads.
fn connect_policy(host: Option<&HeaderValue>) -> String {
    let host = host
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b)));
    match host {
        Some(h) => format!("connect-src 'self' ws://{h} wss://{h} blob:"),
        None => "connect-src 'self' blob:".to_string(),
    }
}

/// A dashboard serving in the background.
pub struct Dashboard {
    /// The URL to open (token and page state included).
    pub url: String,
    shutdown: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Dashboard {
    pub async fn stop(mut self) -> Result<(), CollectorError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.await {
            Ok(r) => r.map_err(CollectorError::Serve),
            Err(e) => Err(CollectorError::Serve(std::io::Error::other(e))),
        }
    }
}

/// Bind and serve in the background; prints nothing.
pub async fn start(settings: &ServeSettings, hub: LiveHub) -> Result<Dashboard, CollectorError> {
    let (listener, addr) = crate::net::bind(settings.addr).await?;
    let mut url = dashboard_url(addr, settings.token.as_deref());
    if let Some(fragment) = &settings.fragment {
        url.push('#');
        url.push_str(fragment);
    }
    let slots = Arc::new(tokio::sync::Semaphore::new(crate::net::connection_cap()));
    let app = router(settings, hub, slots.clone());
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(serve_bounded(listener, app, slots, rx));
    tracing::info!(%addr, assets = %settings.web_dir, "dashboard listening");
    Ok(Dashboard {
        url,
        shutdown: Some(tx),
        task,
    })
}

/// How long a client may take to send a request's head, from its connection (or its previous
/// response) on; an idle or half-sent connection is closed after it.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve `app` on `listener` until `stop`: HTTP/1.1 with upgrades (the live WebSocket), a
/// header-read timeout on every connection and a cap on connections at once.
async fn serve_bounded(
    listener: TcpListener,
    app: Router,
    slots: Arc<tokio::sync::Semaphore>,
    mut stop: oneshot::Receiver<()>,
) -> std::io::Result<()> {
    // One warning per run of failed accepts (out of files), not one every 50 ms.
    let mut warned = false;
    loop {
        let permit = tokio::select! {
            _ = &mut stop => return Ok(()),
            permit = slots.clone().acquire_owned() => permit.map_err(std::io::Error::other)?,
        };
        let tcp = tokio::select! {
            _ = &mut stop => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    warned = false;
                    tcp
                }
                // Out of files or a connection reset before it was taken: try again shortly.
                Err(e) => {
                    if !warned {
                        tracing::warn!(error = %e, "dashboard accept failed (retrying every 50 ms; said once)");
                        warned = true;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _slot = permit;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                .with_upgrades();
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "dashboard connection ended");
            }
        });
    }
}

/// `speclens serve`: bind, print the URL on stdout, serve until Ctrl-C.
pub async fn run(settings: ServeSettings) -> Result<(), CollectorError> {
    let dashboard = start(&settings, LiveHub::new(64)).await?;
    crate::outln!("speclens dashboard: {}", dashboard.url)?;
    eprintln!("serving {} — press Ctrl-C to stop", settings.web_dir);
    let _ = crate::net::stop_signal().await;
    dashboard.stop().await
}

async fn ws_upgrade(
    ws: WebSocketUpgrade,
    headers: axum::http::HeaderMap,
    State(app): State<Arc<AppState>>,
) -> Response {
    // A page from another origin may not read the run: browsers send the page's Origin.
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
        if origin.split_once("://").map(|(_, h)| h) != Some(host) {
            return (StatusCode::FORBIDDEN, "speclens: cross-origin WebSocket refused\n").into_response();
        }
    }
    let (Ok(ws_slot), Ok(slot)) = (
        app.ws_slots.clone().try_acquire_owned(),
        app.slots.clone().try_acquire_owned(),
    ) else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "speclens: too many live dashboards open; close one and reload\n",
        )
            .into_response();
    };
    let hub = app.hub.clone();
    ws.max_message_size(MAX_WS_MESSAGE_BYTES)
        .max_frame_size(MAX_WS_MESSAGE_BYTES)
        .on_upgrade(move |socket| async move {
            let _slots = (ws_slot, slot);
            ws_client(socket, hub).await
        })
}

/// How often the dashboard pings each WebSocket client (browsers answer at once, in the
/// background too).
const WS_PING_EVERY: Duration = Duration::from_secs(5);

/// A WebSocket client not heard from (no pong, no message) for this long is closed: a dead
/// peer, or one that began a frame and stopped (a pong cannot pass a half-sent frame), gives
/// its slot back.
const WS_SILENT_AFTER: Duration = Duration::from_secs(15);

/// One dashboard client: hello and snapshot, then the broadcast deltas; a client that lags
/// behind the bounded queue gets a fresh snapshot instead. Pinged every [`WS_PING_EVERY`] and
/// closed when silent for [`WS_SILENT_AFTER`].
async fn ws_client(mut socket: WebSocket, hub: LiveHub) {
    let Some((mut rx, first)) = hub.join().await else {
        return;
    };
    for text in first {
        if socket.send(Message::Text(text)).await.is_err() {
            return;
        }
    }
    let mut heard = tokio::time::Instant::now();
    let mut ping = tokio::time::interval_at(heard + WS_PING_EVERY, WS_PING_EVERY);
    loop {
        tokio::select! {
            _ = ping.tick() => {
                if heard.elapsed() >= WS_SILENT_AFTER {
                    tracing::debug!("closing a dashboard WebSocket silent for {:?}", heard.elapsed());
                    return;
                }
                if socket.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
            message = rx.recv() => {
                let texts = match message {
                    Ok(text) => vec![text],
                    Err(broadcast::error::RecvError::Lagged(_)) => hub.snapshot().await,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                for text in texts {
                    if socket.send(Message::Text(text)).await.is_err() {
                        return;
                    }
                }
            }
            incoming = socket.recv() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => heard = tokio::time::Instant::now(),
            },
        }
    }
}

fn not_found(what: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"error": format!("no such {what}")})),
    )
        .into_response()
}

fn bad_id(what: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"error": format!("not a {what} id")})),
    )
        .into_response()
}

/// A JSON file of the folder `id` as the response body, unchanged; read off the async runtime,
/// and only when it really lies inside the results folder (a symlink out of it is not found).
async fn json_file(results_dir: &Path, id: &str, file: &'static str, what: &str) -> Response {
    let Some(folder) = history::run_folder(results_dir, id) else {
        return bad_id(what);
    };
    let results_dir = results_dir.to_path_buf();
    let read = tokio::task::spawn_blocking(move || {
        let path = history::inside(&results_dir, &folder.join(file))?;
        history::read_bounded(&path)
            .map_err(|why| tracing::warn!("{}: {why}", path.display()))
            .ok()
    });
    match read.await {
        Ok(Some(text)) => ([(header::CONTENT_TYPE, "application/json")], text).into_response(),
        _ => not_found(what),
    }
}

async fn list_runs(State(app): State<Arc<AppState>>) -> Response {
    let state = app.clone();
    match tokio::task::spawn_blocking(move || state.index.list(&state.results_dir)).await {
        Ok(list) => axum::Json(list).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn one_run(State(app): State<Arc<AppState>>, UrlPath(id): UrlPath<String>) -> Response {
    let Some(folder) = history::run_folder(&app.results_dir, &id) else {
        return bad_id("run");
    };
    if folder.join("result.json").exists() {
        return json_file(&app.results_dir, &id, "result.json", "run").await;
    }
    // A run killed before it saved its result: its records, read as a partial result.
    let results_dir = app.results_dir.clone();
    let read = tokio::task::spawn_blocking(move || {
        let path = history::inside(&results_dir, &history::run_file(&folder)?)?;
        history::read_result(&path)
            .map_err(|why| tracing::warn!("{why}"))
            .ok()
            .flatten()
    });
    match read.await {
        Ok(Some(result)) => axum::Json(result).into_response(),
        _ => not_found("run"),
    }
}

async fn one_sweep(State(app): State<Arc<AppState>>, UrlPath(id): UrlPath<String>) -> Response {
    json_file(&app.results_dir, &id, "sweep.json", "sweep").await
}

async fn one_accept(State(app): State<Arc<AppState>>, UrlPath(id): UrlPath<String>) -> Response {
    let Some(folder) = history::run_folder(&app.results_dir, &id) else {
        return bad_id("accept");
    };
    let results_dir = app.results_dir.clone();
    let read = tokio::task::spawn_blocking(move || history::accept_body(&history::inside(&results_dir, &folder)?));
    match read.await {
        Ok(Some(body)) => axum::Json(body).into_response(),
        _ => not_found("accept run"),
    }
}

fn presented_tokens(req: &Request) -> (Option<String>, Vec<String>) {
    let from_query = req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|pair| pair.strip_prefix("token=").map(str::to_string))
    });
    let mut others = Vec::new();
    if let Some(auth) = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        if let Some(t) = auth.strip_prefix("Bearer ") {
            others.push(t.trim().to_string());
        }
    }
    for cookies in req.headers().get_all(header::COOKIE) {
        let Ok(cookies) = cookies.to_str() else { continue };
        for c in cookies.split(';') {
            if let Some(t) = c.trim().strip_prefix(TOKEN_COOKIE).and_then(|r| r.strip_prefix('=')) {
                others.push(t.to_string());
            }
        }
    }
    (from_query, others)
}

async fn require_token(State(token): State<Arc<String>>, req: Request, next: Next) -> Response {
    let (from_query, others) = presented_tokens(&req);
    let query_ok = from_query
        .as_deref()
        .is_some_and(|t| crate::net::same_secret(t, &token));
    if !query_ok && !others.iter().any(|t| crate::net::same_secret(t, &token)) {
        return (
            StatusCode::UNAUTHORIZED,
            "speclens: this dashboard needs its access token: open the URL printed by `speclens serve` (it ends in ?token=…)\n",
        )
            .into_response();
    }
    // A page opened with `?token=` is sent on to the same address without it, the cookie set:
    // the token does not stay in the address bar, the history or a copied link. (The API and
    // the WebSocket answer as they are.)
    let path = req.uri().path().to_string();
    let page = req.method() == axum::http::Method::GET && path != "/ws" && !path.starts_with("/api/");
    let mut response = if query_ok && page {
        let rest: Vec<&str> = req
            .uri()
            .query()
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty() && !pair.starts_with("token="))
            .collect();
        // One leading slash: `//host/x` or `/\host/x` in a Location is another site to a
        // browser (a network-path reference), so the page stays on this server.
        let path = format!("/{}", path.trim_start_matches(['/', '\\']));
        let location = if rest.is_empty() {
            path
        } else {
            format!("{path}?{}", rest.join("&"))
        };
        (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
    } else {
        next.run(req).await
    };
    if query_ok {
        let cookie = format!("{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// Whether a `Host` header names this machine's loopback (`127.0.0.1`, `localhost`, `[::1]`,
/// with or without a port).
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().map(|ip| format!("[{ip}]")).unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default().to_string(),
    };
    let name = name.to_ascii_lowercase();
    name == "localhost" || name == "[::1]" || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

async fn require_loopback_host(req: Request, next: Next) -> Response {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if host.is_some_and(is_loopback_host) {
        return next.run(req).await;
    }
    (
        StatusCode::FORBIDDEN,
        "This dashboard answers only to 127.0.0.1, localhost or [::1] (the Host header named another \
         name). To reach it under another name, serve it with an access token (--token).\n",
    )
        .into_response()
}

async fn security_headers(State(policy): State<Arc<PagePolicy>>, req: Request, next: Next) -> Response {
    let connect = connect_policy(req.headers().get(header::HOST));
    let mut response = next.run(req).await;
    let is_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"text/html"));
    // Pages get the page's policy; anything else (data, scripts, the wasm) is no document and
    // may load nothing.
    let csp = if is_page {
        format!("{}; {connect}", policy.current().await)
    } else {
        "default-src 'none'; frame-ancestors 'none'".to_string()
    };
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // Host characters and fixed text always make a valid value; were it not, the strictest.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(&csp).unwrap_or(HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'")),
    );
    // No other site may frame the dashboard (clickjacking), in older browsers too.
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_scripts_are_found_and_script_files_are_not() {
        let page = "<head><script type=\"module\">a();</script><script src=\"/x.js\"></script>\
                    <script>b()</script><body><p>no script</p></body>";
        assert_eq!(inline_scripts(page), ["a();", "b()"]);
        assert!(inline_scripts("<script>never closed").is_empty());
        // CR LF is hashed as the browser sees it, LF.
        assert_eq!(
            page_policy("<script>a;\r\nb;</script>"),
            page_policy("<script>a;\nb;</script>")
        );
        assert_eq!(
            connect_policy(Some(&HeaderValue::from_static("127.0.0.1:8321"))),
            "connect-src 'self' ws://127.0.0.1:8321 wss://127.0.0.1:8321 blob:"
        );
        // A Host that could add directives is left out, as is an IPv6 literal.
        assert_eq!(
            connect_policy(Some(&HeaderValue::from_static("[::1]:8321"))),
            "connect-src 'self' blob:"
        );
        assert_eq!(
            connect_policy(Some(&HeaderValue::from_static("a; script-src *"))),
            "connect-src 'self' blob:"
        );
    }

    #[test]
    fn only_loopback_names_pass_without_a_token() {
        for host in [
            "127.0.0.1:8321",
            "127.0.0.1",
            "localhost:80",
            "LOCALHOST",
            "[::1]:8321",
            "[::1]",
            "127.1.2.3:5",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:8321",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "[::2]:1",
            "",
            "10.0.0.1",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn tokens() {
        let t = generate_token().unwrap();
        assert_eq!(t.len(), 32);
        assert!(is_strong_token(&t));
        assert!(!is_strong_token("short"));
        assert!(!is_strong_token("has spaces in it, too long"));
    }

    #[test]
    fn urls() {
        let addr: SocketAddr = "[::1]:8080".parse().unwrap();
        assert_eq!(dashboard_url(addr, None), "http://[::1]:8080/");
        assert_eq!(
            dashboard_url("0.0.0.0:1".parse().unwrap(), Some("t")),
            "http://0.0.0.0:1/?token=t"
        );
    }
}
