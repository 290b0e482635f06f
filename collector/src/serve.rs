//! `speclens serve`: the dashboard's HTTP server. Static files of the built web app, served
//! without path traversal (tower-http `ServeDir`), with the right types and compression.
//! Binds 127.0.0.1 by default; any other address requires an access token, checked on every
//! request (`?token=` once, then a cookie, or `Authorization: Bearer`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;

use crate::cli::ServeArgs;
use crate::error::CollectorError;

const TOKEN_COOKIE: &str = "speclens_token";

/// Validated settings of the dashboard server.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    pub addr: SocketAddr,
    /// Required on every request when set.
    pub token: Option<String>,
    pub web_dir: PathBuf,
    /// Page state appended to the printed URL.
    pub fragment: Option<String>,
}

impl ServeSettings {
    /// Validate the flags: find the assets, require (or generate) a token off loopback.
    pub fn from_args(args: ServeArgs) -> Result<ServeSettings, CollectorError> {
        let web_dir = resolve_web_dir(args.web_dir)?;
        let token = match args.token {
            Some(t) if is_strong_token(&t) => Some(t),
            Some(_) => return Err(CollectorError::WeakToken),
            None if args.host.is_loopback() => None,
            None => Some(generate_token()?),
        };
        Ok(ServeSettings {
            addr: SocketAddr::new(args.host, args.port),
            token,
            web_dir,
            fragment: args.fragment,
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

/// The built dashboard: `--web-dir`, else `web/dist` under the current folder, else the
/// workspace's `web/dist` this binary was built from.
pub fn resolve_web_dir(explicit: Option<PathBuf>) -> Result<PathBuf, CollectorError> {
    let candidates: Vec<PathBuf> = match explicit {
        Some(dir) => vec![dir],
        None => vec![
            PathBuf::from("web/dist"),
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/dist"),
        ],
    };
    candidates
        .iter()
        .find(|dir| dir.join("index.html").is_file())
        .cloned()
        .ok_or_else(|| CollectorError::WebAssetsMissing {
            dir: candidates[0].clone(),
        })
}

/// The URL a user opens (with the token when one is required).
pub fn dashboard_url(addr: SocketAddr, token: Option<&str>) -> String {
    match token {
        Some(t) => format!("http://{addr}/?token={t}"),
        None => format!("http://{addr}/"),
    }
}

/// The dashboard's routes.
pub fn router(settings: &ServeSettings) -> Router {
    let files = ServeDir::new(&settings.web_dir).append_index_html_on_directories(true);
    let mut app = Router::new().fallback_service(files);
    if let Some(token) = &settings.token {
        app = app.layer(middleware::from_fn_with_state(Arc::new(token.clone()), require_token));
    }
    app.layer(CompressionLayer::new())
        .layer(middleware::from_fn(security_headers))
}

/// Bind, print the URL on stdout, serve until Ctrl-C.
pub async fn run(args: ServeArgs) -> Result<(), CollectorError> {
    let settings = ServeSettings::from_args(args)?;
    let (listener, addr) = crate::net::bind(settings.addr).await?;
    let mut url = dashboard_url(addr, settings.token.as_deref());
    if let Some(fragment) = &settings.fragment {
        url.push('#');
        url.push_str(fragment);
    }
    println!("speclens dashboard: {url}");
    eprintln!("serving {} — press Ctrl-C to stop", settings.web_dir.display());
    tracing::info!(%addr, dir = %settings.web_dir.display(), "dashboard listening");
    axum::serve(listener, router(&settings))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(CollectorError::Serve)
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
    let mut response = next.run(req).await;
    if query_ok {
        let cookie = format!("{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

async fn security_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

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
