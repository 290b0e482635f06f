//! `speclens serve` as a user runs it: the real binary on 127.0.0.1 port 0 serving a web folder,
//! content types, compression, no path traversal, only loopback names as Host without a token
//! (no DNS rebinding), and the access token off loopback.

use std::io::{Read, Write};
use std::net::TcpStream;

use crate::common::{run_speclens, Speclens};

/// A web folder with the kinds of files Trunk writes, and a secret beside it.
fn web_dir() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let web = root.path().join("dist");
    std::fs::create_dir(&web).unwrap();
    std::fs::write(
        web.join("index.html"),
        "<!DOCTYPE html><html><head><script type=\"module\">import init from '/app.js'; await init();</script>\
         <script src=\"/app.js\"></script></head><body>speclens test page</body></html>",
    )
    .unwrap();
    std::fs::write(web.join("app.js"), "export default function init() {}\n".repeat(20)).unwrap();
    std::fs::write(web.join("app_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(root.path().join("secret.txt"), "TOP-SECRET").unwrap();
    root
}

fn raw_get(url: &str, path: &str) -> String {
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[tokio::test]
async fn serves_the_web_folder_on_loopback_with_types_and_compression() {
    let root = web_dir();
    let dist = root.path().join("dist");
    let server = Speclens::start(&["serve", "--port", "0", "--web-dir", dist.to_str().unwrap()]);
    let url = server.url();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(!url.contains("token"), "no token needed on loopback");

    let client = reqwest::Client::new();
    let index = client.get(&url).send().await.unwrap();
    assert_eq!(index.status(), 200);
    assert!(index.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert_eq!(index.headers()["x-content-type-options"], "nosniff");
    // A full policy: scripts from the server and the page's inline start-up script by its hash
    // (sha256 of `import init from '/app.js'; await init();`), the WebSocket under the name asked.
    let csp = index.headers()["content-security-policy"].to_str().unwrap().to_string();
    let port = url.trim_end_matches('/').rsplit(':').next().unwrap();
    for part in [
        "default-src 'self'",
        "script-src 'self' 'sha256-KlG4CKAhEwOaotkp3rUpdbFezrNrqW7nWrxT35mBelw=' 'wasm-unsafe-eval'",
        "frame-ancestors 'none'",
        "object-src 'none'",
        &format!("connect-src 'self' ws://127.0.0.1:{port} wss://127.0.0.1:{port} blob:"),
    ] {
        assert!(csp.contains(part), "{part} in {csp}");
    }
    assert_eq!(csp.matches("sha256-").count(), 1, "{csp}");
    assert_eq!(index.headers()["x-frame-options"], "DENY");
    assert!(index.text().await.unwrap().contains("speclens test page"));

    let wasm = client.get(format!("{url}app_bg.wasm")).send().await.unwrap();
    assert_eq!(wasm.headers()["content-type"], "application/wasm");

    let js = client
        .get(format!("{url}app.js"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(js.status(), 200);
    assert_eq!(js.headers()["content-encoding"], "gzip");
    assert_eq!(
        js.headers()["content-security-policy"],
        "default-src 'none'; frame-ancestors 'none'",
        "no document: it may load nothing"
    );

    // A rebuilt page (new start-up script) is served under its own hash at once.
    std::fs::write(
        dist.join("index.html"),
        "<html><head><script type=\"module\">await import('/app.js');</script></head></html>",
    )
    .unwrap();
    let rebuilt = client.get(&url).send().await.unwrap();
    let csp = rebuilt.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(!csp.contains("KlG4CKAhEwOaotkp3rUpdbFezrNrqW7nWrxT35mBelw="), "{csp}");
    assert_eq!(csp.matches("sha256-").count(), 1, "{csp}");

    let missing = client.get(format!("{url}nope.js")).send().await.unwrap();
    assert_eq!(missing.status(), 404);

    // DNS rebinding: a page whose name now resolves to 127.0.0.1 asks with its own name as Host;
    // without a token only loopback names are answered (pages, API and WebSocket alike).
    let port = url.trim_start_matches("http://127.0.0.1:").trim_end_matches('/');
    for path in ["/", "/api/runs", "/ws"] {
        let (status, body) = get_with_host(&url, path, &format!("rebind.example:{port}")).await;
        assert_eq!(status, 403, "{path}");
        assert!(body.contains("answers only to 127.0.0.1, localhost or [::1]"), "{body}");
    }
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        assert_eq!(get_with_host(&url, "/", &host).await.0, 200, "{host}");
    }
}

/// GET `path` from the server at `url` with `host` as the Host header.
async fn get_with_host(url: &str, path: &str, host: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(format!("{}{path}", url.trim_end_matches('/')))
        .header("host", host)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[test]
fn no_path_traversal_out_of_the_web_folder() {
    let root = web_dir();
    let dist = root.path().join("dist");
    let server = Speclens::start(&["serve", "--port", "0", "--web-dir", dist.to_str().unwrap()]);
    let url = server.url();
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/dist/../../secret.txt",
        "/.%2e/secret.txt",
    ] {
        let response = raw_get(&url, path);
        assert!(
            !response.contains("TOP-SECRET"),
            "{path} escaped the web folder:\n{response}"
        );
        let status = response.split(' ').nth(1).unwrap_or("");
        assert!(status == "404" || status == "400", "{path}: {status}");
    }
}

#[tokio::test]
async fn a_non_loopback_bind_requires_the_generated_token() {
    let root = web_dir();
    let dist = root.path().join("dist");
    let server = Speclens::start(&[
        "serve",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--web-dir",
        dist.to_str().unwrap(),
    ]);
    let url = server.url();
    let (base, token) = url.split_once("/?token=").expect("the printed URL carries the token");
    assert_eq!(token.len(), 32);
    // Reach it through loopback only.
    let port = base.rsplit(':').next().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();

    let denied = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(denied.status(), 401);
    assert!(denied.text().await.unwrap().contains("access token"));
    let wrong = client
        .get(format!("{base}/?token=0123456789abcdef0123456789abcdef"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    // The token URL sets the cookie and sends the page on to the address without the token.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let opened = no_redirects
        .get(format!("{base}/?token={token}&view=runs"))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 303);
    assert_eq!(opened.headers()["location"], "/?view=runs");
    // Never to another site: `//host/x` in a Location is a network-path reference.
    let elsewhere = no_redirects
        .get(format!("{base}//evil.example/x?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 303);
    assert_eq!(elsewhere.headers()["location"], "/evil.example/x");
    let cookie = opened.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let cookie_pair = cookie.split(';').next().unwrap();
    let with_cookie = client
        .get(format!("{base}/app.js"))
        .header("cookie", cookie_pair)
        .send()
        .await
        .unwrap();
    assert_eq!(with_cookie.status(), 200);
    let page = client
        .get(format!("{base}/?view=runs"))
        .header("cookie", cookie_pair)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let with_bearer = client
        .get(format!("{base}/app.js"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(with_bearer.status(), 200);
}

#[test]
fn weak_tokens_and_missing_assets_are_clear_errors() {
    let root = web_dir();
    let dist = root.path().join("dist");
    let (code, _, err) = run_speclens(&[
        "serve",
        "--port",
        "0",
        "--token",
        "short",
        "--web-dir",
        dist.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "a usage error");
    assert!(err.contains("access token must be at least 16 characters"), "{err}");
    let (code, _, err) = run_speclens(&[
        "serve",
        "--port",
        "0",
        "--web-dir",
        root.path().join("nowhere").to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("dashboard assets not found") && err.contains("index.html"),
        "{err}"
    );
}

#[tokio::test]
async fn the_websocket_and_the_run_api_need_the_token_too() {
    let root = web_dir();
    let dist = root.path().join("dist");
    let results = root.path().join("results");
    std::fs::create_dir_all(results.join("20261129-run-a")).unwrap();
    std::fs::write(
        results.join("20261129-run-a/result.json"),
        r#"{"label": "run-a", "date": "2026-11-29T10:00:00Z", "completed": 12, "output_throughput": 99.5}"#,
    )
    .unwrap();
    let server = Speclens::start(&[
        "serve",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--web-dir",
        dist.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
    ]);
    let url = server.url();
    let (base, token) = url.split_once("/?token=").unwrap();
    let port = base.rsplit(':').next().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let upgrade = |c: &reqwest::Client| {
        c.get(format!("{base}/ws"))
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
    };
    assert_eq!(upgrade(&client).send().await.unwrap().status(), 401);
    assert_eq!(upgrade(&client).bearer_auth(token).send().await.unwrap().status(), 101);
    assert_eq!(
        client.get(format!("{base}/api/runs")).send().await.unwrap().status(),
        401
    );
    let runs: serde_json::Value = client
        .get(format!("{base}/api/runs"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs["runs"][0]["id"], "20261129-run-a");
    assert_eq!(runs["runs"][0]["completed"], 12);
    let one = client
        .get(format!("{base}/api/runs/20261129-run-a"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), 200);
}

#[test]
fn the_run_api_refuses_paths_out_of_the_results_folder() {
    let root = web_dir();
    let dist = root.path().join("dist");
    let results = root.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    std::fs::write(root.path().join("result.json"), "TOP-SECRET").unwrap();
    let server = Speclens::serve_results(&dist, &results);
    let url = server.url();
    for path in [
        "/api/runs/..",
        "/api/runs/%2e%2e",
        "/api/runs/../results",
        "/api/runs/a/../..",
        "/api/runs/.%2e/",
    ] {
        let response = raw_get(&url, path);
        assert!(!response.contains("TOP-SECRET"), "{path}:\n{response}");
        let status = response.split(' ').nth(1).unwrap_or("");
        assert!(status == "400" || status == "404", "{path}: {status}");
    }
    // Symlinks that lead out of the results folder: a run folder, a result file, an accept run.
    std::os::unix::fs::symlink(root.path(), results.join("outside")).unwrap();
    std::fs::create_dir(results.join("linked")).unwrap();
    std::os::unix::fs::symlink(root.path().join("result.json"), results.join("linked/result.json")).unwrap();
    for path in [
        "/api/runs/outside",
        "/api/runs/linked",
        "/api/sweeps/outside",
        "/api/accept/outside",
    ] {
        let response = raw_get(&url, path);
        assert!(!response.contains("TOP-SECRET"), "{path}:\n{response}");
        assert_eq!(response.split(' ').nth(1), Some("404"), "{path}:\n{response}");
    }
}

#[tokio::test]
async fn serves_the_dashboard_built_into_the_binary_without_a_web_dir() {
    crate::common::built_web_dir();
    let empty = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(crate::common::speclens_bin())
        .args(["serve", "--port", "0"])
        .current_dir(empty.path())
        .env_remove("SPECLENS_WEB_DIR")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("speclens dashboard: ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let index = reqwest::get(&url).await.unwrap().text().await.unwrap();
    let wasm = index
        .split('"')
        .find(|s| s.ends_with("_bg.wasm"))
        .expect("index.html names the wasm bundle");
    let response = reqwest::get(format!("{url}{}", wasm.trim_start_matches('/')))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/wasm");
    assert_eq!(reqwest::get(format!("{url}nope.js")).await.unwrap().status(), 404);
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn idle_connections_cannot_exhaust_the_server() {
    let root = web_dir();
    let dist = root.path().join("dist");
    // Under a 1,024-file limit, 1,100 connections that never send a byte.
    let server = Speclens::start_with_file_limit(&["serve", "--port", "0", "--web-dir", dist.to_str().unwrap()], 1024);
    let url = server.url();
    let host = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let idle: Vec<TcpStream> = (0..1100).map(|_| TcpStream::connect(&host).unwrap()).collect();
    // The page is still served: idle connections are closed after the header-read timeout and
    // the cap keeps the server's files from running out meanwhile.
    let page = reqwest::Client::new()
        .get(&url)
        .timeout(std::time::Duration::from_secs(60))
        .send()
        .await
        .expect("the page is served while idle connections are open");
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("speclens test page"));
    // The first idle connection was closed by the server (end of stream, or a reset).
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut byte = [0u8; 1];
    match first.read(&mut byte) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("an idle connection stayed open: {other:?}"),
    }
}

/// Open a WebSocket to `host`'s `/ws` by hand: the handshake's status line (101, or 503 when
/// the dashboard has no WebSocket slot left), and the stream.
fn ws_handshake(host: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
        head.push(byte[0]);
    }
    (String::from_utf8_lossy(&head).trim().to_string(), stream)
}

/// #33 item 4: WebSockets count against the connection cap and hold at most half of it, so under
/// a 200-file limit 120 held WebSockets neither use up the process's files nor keep the page
/// from being served; a client message far over the size limit closes its connection at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_websockets_are_capped_and_the_page_is_still_served() {
    let root = web_dir();
    let dist = root.path().join("dist");
    let server = Speclens::start_with_file_limit(&["serve", "--port", "0", "--web-dir", dist.to_str().unwrap()], 200);
    let url = server.url();
    let host = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let mut held = Vec::new();
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..120 {
        let (status, stream) = ws_handshake(&host);
        if status.contains(" 101 ") {
            opened += 1;
            held.push(stream);
        } else {
            assert!(status.contains(" 503 "), "{status}");
            refused += 1;
        }
    }
    // The cap is 150 connections (three quarters of 200), WebSockets at most 75 of them.
    assert_eq!((opened, refused), (75, 45));
    let page = reqwest::Client::new()
        .get(&url)
        .timeout(std::time::Duration::from_secs(30))
        .send()
        .await
        .expect("the page is served with every WebSocket slot held");
    assert_eq!(page.status(), 200);
    // A masked binary frame that announces 1 MiB: refused before its payload is read.
    let mut big = held.pop().unwrap();
    let mut frame = vec![0x82u8, 0xFF];
    frame.extend_from_slice(&(1u64 << 20).to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4]);
    big.write_all(&frame).unwrap();
    big.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let mut rest = Vec::new();
    match big.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the oversized message's connection stayed open: {e}"),
    }
    // Its slot is free again (given back as its task ends): one more WebSocket opens.
    let mut status = String::new();
    for _ in 0..20 {
        let (line, again) = ws_handshake(&host);
        status = line;
        if status.contains(" 101 ") {
            held.push(again);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(status.contains(" 101 "), "{status}");
}

/// #33 item 4: a WebSocket client that starts a frame and never finishes it is closed (it cannot
/// answer the dashboard's pings behind its half-sent frame), and its slot is given back: the
/// unfinished message is not held for as long as the client likes.
#[test]
fn an_unfinished_websocket_message_is_closed_on_time() {
    let root = web_dir();
    let dist = root.path().join("dist");
    let server = Speclens::start(&["serve", "--port", "0", "--web-dir", dist.to_str().unwrap()]);
    let url = server.url();
    let host = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let (status, mut stream) = ws_handshake(&host);
    assert!(status.contains(" 101 "), "{status}");
    // A masked binary frame that announces 1,000 bytes, of which 10 are sent.
    let mut frame = vec![0x82u8, 0xFE];
    frame.extend_from_slice(&1000u16.to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4]);
    frame.extend_from_slice(&[0; 10]);
    stream.write_all(&frame).unwrap();
    let started = std::time::Instant::now();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(40)))
        .unwrap();
    let mut rest = Vec::new();
    match stream.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!(
            "the unfinished message's connection stayed open {:?}: {e}",
            started.elapsed()
        ),
    }
    let closed_after = started.elapsed();
    assert!(
        closed_after < std::time::Duration::from_secs(30),
        "closed after {closed_after:?}"
    );
    // The pings it could not answer came first (opcode 0x89, no payload).
    assert!(rest.windows(2).any(|w| w == [0x89, 0x00]), "{rest:?}");
}
