//! Headless Chromium for the browser tests: a chromedriver on a free loopback port, a browser
//! session with the flags this machine needs, and DOM helpers.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use super::wait_for;

/// A chromedriver on a free loopback port; killed when dropped.
pub struct ChromeDriver {
    child: Child,
    url: String,
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub async fn start_chromedriver() -> ChromeDriver {
    let bin = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    assert!(
        Path::new(&bin).exists(),
        "chromedriver not found at {bin}: `bash scripts/test.sh` installs Debian's chromium and chromium-driver"
    );
    let port = free_port();
    let child = Command::new(&bin)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let driver = ChromeDriver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let status = format!("{}/status", driver.url);
    wait_for("chromedriver to listen", Duration::from_secs(30), || async {
        reqwest::get(&status).await.ok().filter(|r| r.status().is_success())
    })
    .await;
    driver
}

pub async fn open_browser(driver: &ChromeDriver, profile: &Path) -> Client {
    open_browser_with(driver, profile, 1, &[]).await
}

/// A browser whose screen has `scale` device pixels per CSS pixel (2: a "retina" screen).
pub async fn open_browser_at_scale(driver: &ChromeDriver, profile: &Path, scale: u32) -> Client {
    open_browser_with(driver, profile, scale, &[]).await
}

/// A browser that can reach nothing: every host resolves to nothing and every connection goes
/// to a closed proxy port, so any request a page makes fails (and shows in the browser log).
pub async fn open_offline_browser(driver: &ChromeDriver, profile: &Path) -> Client {
    let closed = free_port();
    let proxy = format!("--proxy-server=http://127.0.0.1:{closed}");
    open_browser_with(
        driver,
        profile,
        1,
        &[
            &proxy,
            "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ],
    )
    .await
}

async fn open_browser_with(driver: &ChromeDriver, profile: &Path, scale: u32, extra_args: &[&str]) -> Client {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let mut args: Vec<String> = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--window-size=1280,1600",
    ]
    .map(String::from)
    .to_vec();
    args.push(format!("--force-device-scale-factor={scale}"));
    args.push(format!("--user-data-dir={}", profile.display()));
    args.extend(extra_args.iter().map(|a| a.to_string()));
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), json!({"binary": chromium, "args": args}));
    // The browser's console log (failed loads, refused loads) for `browser_log`.
    caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a WebDriver session in headless Chromium")
}

/// The text of the first element matching `css` (empty while it does not exist yet).
pub async fn text_of(client: &Client, css: &str) -> String {
    match client.find(Locator::Css(css)).await {
        Ok(element) => element.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The `href` of the first element matching `css` (which must exist).
pub async fn href_of(client: &Client, css: &str) -> String {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|_| panic!("{css} on the page"))
        .attr("href")
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{css} has an href"))
}

/// The break-even batch the what-if page shows, once it shows one.
pub async fn whatif_bstar(client: &Client) -> String {
    crate::common::wait_for("the what-if page's B*", std::time::Duration::from_secs(30), || async {
        Some(text_of(client, "#tile-bstar .tile-value").await).filter(|t| !t.is_empty())
    })
    .await
}

pub async fn value_of(client: &Client, css: &str) -> String {
    client
        .find(Locator::Css(css))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap_or_default()
}

/// ChromeDriver's log command (not in the W3C protocol, so not in fantoccini's API).
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        (axum::http::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

/// The browser console's entries since the last call: `(level, message)`.
pub async fn browser_log(client: &Client) -> Vec<(String, String)> {
    let entries = client.issue_cmd(BrowserLog).await.expect("the browser log");
    entries
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["level"].as_str().unwrap_or_default().to_string(),
                        e["message"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Severe browser-log entries: failed loads, refused loads (CSP), script errors.
pub async fn severe_log(client: &Client) -> Vec<String> {
    browser_log(client)
        .await
        .into_iter()
        .filter(|(level, _)| level == "SEVERE")
        .map(|(_, message)| message)
        .collect()
}

/// Inked (not white) pixels of a canvas and its draw count; `None` before it is drawn.
pub async fn canvas_ink(client: &Client, id: &str) -> Option<(u64, u64)> {
    let script = format!(
        "const c = document.getElementById('{id}'); if (!c || !c.width) return null; \
         const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let ink = 0; \
         for (let i = 0; i < d.length; i += 4) {{ if (d[i] < 245 || d[i + 1] < 245 || d[i + 2] < 245) ink++; }} \
         return [ink, Number(c.dataset.draws || 0)];"
    );
    let v: serde_json::Value = client.execute(&script, vec![]).await.ok()?;
    Some((v[0].as_u64()?, v[1].as_u64()?))
}

/// A canvas's backing store against its CSS box: `(canvas.width, box width × devicePixelRatio)`,
/// equal (to a pixel) when the chart was drawn for the size and density it is shown at, not
/// stretched.
pub async fn canvas_backing(client: &Client, id: &str) -> Option<(u64, u64)> {
    let script = format!(
        "const c = document.getElementById('{id}'); if (!c) return null; \
         return [c.width, Math.round(c.getBoundingClientRect().width * window.devicePixelRatio)];"
    );
    let v: serde_json::Value = client.execute(&script, vec![]).await.ok()?;
    Some((v[0].as_u64()?, v[1].as_u64()?))
}

/// Save what the browser shows as `<name>.png` under `target/screenshots` (every run) and, when
/// `SPECLENS_UPDATE_SCREENSHOTS` is set, under `docs/screenshots` (the README links those).
pub async fn screenshot(client: &Client, name: &str) {
    let png = client.screenshot().await.expect("a screenshot");
    let mut dirs = vec![crate::common::workspace().join("target/screenshots")];
    if std::env::var_os("SPECLENS_UPDATE_SCREENSHOTS").is_some() {
        dirs.push(crate::common::workspace().join("docs/screenshots"));
    }
    for dir in dirs {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), &png).unwrap();
    }
}

/// Make the page's viewport `width` CSS pixels wide (the window is the viewport when headless).
pub async fn set_width(client: &Client, width: u32) {
    client.set_window_size(width, 1000).await.expect("a window size");
}

/// The page's horizontal overflow in CSS pixels (0: no sideways scroll).
pub async fn sideways_overflow(client: &Client) -> i64 {
    let v: serde_json::Value = client
        .execute(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
            vec![],
        )
        .await
        .expect("the page's widths");
    v.as_i64().unwrap_or(i64::MAX)
}

/// A JSON array's strings (what a page script returned as a list of names).
fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Pairs of visible text runs on the page whose boxes overlap (by more than 2 × 2 CSS pixels),
/// each named by the start of its text: text drawn over text. Text the page does not show (a
/// closed `<details>`'s body keeps its boxes, unpainted) is left out.
pub async fn overlapping_texts(client: &Client) -> Vec<String> {
    let v: serde_json::Value = client
        .execute(
            "const boxes = []; \
             const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); \
             while (walk.nextNode()) { \
               const n = walk.currentNode; const text = n.textContent.trim(); \
               if (!text) continue; \
               const el = n.parentElement; \
               if (el && el.checkVisibility && !el.checkVisibility()) continue; \
               const range = document.createRange(); range.selectNodeContents(n); \
               for (const r of range.getClientRects()) if (r.width > 0 && r.height > 0) boxes.push([r, text.slice(0, 30)]); \
             } \
             const out = []; \
             for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) { \
               const [a, ta] = boxes[i], [b, tb] = boxes[j]; \
               const w = Math.min(a.right, b.right) - Math.max(a.left, b.left); \
               const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top); \
               if (w > 2 && h > 2) out.push(ta + ' × ' + tb); \
             } \
             return out;",
            vec![],
        )
        .await
        .expect("the page's text boxes");
    strings(&v)
}

/// Tables cut off on the page: for each table, its id when its box scrolls or it reaches past
/// the viewport's right edge.
pub async fn clipped_tables(client: &Client) -> Vec<String> {
    let v: serde_json::Value = client
        .execute(
            "return [...document.querySelectorAll('table')].filter(t => { \
               const box = t.closest('.table-box') || t.parentElement; \
               return box.scrollWidth > box.clientWidth + 1 \
                 || t.getBoundingClientRect().right > document.documentElement.clientWidth + 1; \
             }).map(t => t.id || t.className);",
            vec![],
        )
        .await
        .expect("the tables' widths");
    strings(&v)
}

/// Pixels of a canvas drawn in `rgb`. A colour is counted pixel by pixel (within 12 on every
/// channel). A grey (the plain arm's) is counted only where drawn solidly: the top-left corners
/// of 2 × 2 blocks within 3 of it, leaving out rows where such blocks span most of the width, so
/// that the axes (whose anti-aliased rows are grey too), 1 px grid lines and the edges of text
/// do not count as the series.
pub async fn canvas_colour(client: &Client, id: &str, rgb: (u8, u8, u8)) -> Option<u64> {
    let (r, g, b) = rgb;
    let grey = r == g && g == b;
    let (near, block) = if grey {
        (3, "is(x + 1, y) && is(x, y + 1) && is(x + 1, y + 1)")
    } else {
        (12, "true")
    };
    let script = format!(
        "const c = document.getElementById('{id}'); if (!c || !c.width) return null; \
         const w = c.width, h = c.height, d = c.getContext('2d').getImageData(0, 0, w, h).data; \
         const is = (x, y) => {{ if (x < 0 || y < 0 || x >= w || y >= h) return false; const i = 4 * (y * w + x); \
           return Math.abs(d[i] - {r}) <= {near} && Math.abs(d[i + 1] - {g}) <= {near} && Math.abs(d[i + 2] - {b}) <= {near}; }}; \
         let n = 0; \
         for (let y = 0; y < h; y++) {{ let row = 0; \
           for (let x = 0; x < w; x++) if (is(x, y) && {block}) row++; \
           if (!{grey} || row < 0.6 * w) n += row; }} \
         return n;"
    );
    client.execute(&script, vec![]).await.ok()?.as_u64()
}

/// More pixels of one colour than a legend swatch holds (a 2× screen's swatch is under 300):
/// the series itself is drawn, not only its key.
pub const SERIES_PIXELS: u64 = 400;

/// Wait until chart `id` holds each named series in its own colour (more than
/// [`SERIES_PIXELS`]); an axes-only chart, or one missing a series, fails naming it.
pub async fn assert_series_drawn(client: &Client, id: &str, series: &[(&str, (u8, u8, u8))]) {
    for (name, rgb) in series {
        let what = format!("{id}: the {name} series in its colour");
        crate::common::wait_for(&what, std::time::Duration::from_secs(30), || async {
            let n = canvas_colour(client, id, *rgb).await;
            n.filter(|n| *n > SERIES_PIXELS)
        })
        .await;
    }
}

/// The charts' colours (`speclens_shared::chart::colors`) as RGB triples.
pub mod rgb {
    use speclens_shared::chart::colors as c;
    pub const ACCEPTED: (u8, u8, u8) = (c::ACCEPTED.0, c::ACCEPTED.1, c::ACCEPTED.2);
    pub const PROPOSED: (u8, u8, u8) = (c::PROPOSED.0, c::PROPOSED.1, c::PROPOSED.2);
    pub const SPECULATIVE: (u8, u8, u8) = (c::SPECULATIVE.0, c::SPECULATIVE.1, c::SPECULATIVE.2);
    pub const BASE: (u8, u8, u8) = (c::BASE.0, c::BASE.1, c::BASE.2);
    pub const REJECTED: (u8, u8, u8) = (c::REJECTED.0, c::REJECTED.1, c::REJECTED.2);
}

/// The labels of crossings and of the model's B* (texts with "B*" or "k switch") on chart `id`
/// as its canvas last drew them, each with the number of coloured pixels inside its text box:
/// 0 when no curve, marker or bar is drawn over it (-1: the text had an empty box). Text is drawn in black, so its anti-aliased
/// edges are grey; a pixel whose channels differ by more than 60 is something else's.
///
/// The page's `fillText` is wrapped to record where each text went (its position, measured box
/// and the canvas transform), then the chart is redrawn by a resize event, so the boxes are
/// those of the drawing being checked, on this canvas element (a view shown again makes a new
/// canvas of the same id, whose draws count from 0 again). With `cross_out`, a line in the speculative arm's colour
/// is drawn through each label before counting (what a curve over it would look like), so a
/// test can show that the count sees it.
pub async fn label_overdraw(client: &Client, id: &str, cross_out: bool) -> Vec<(String, i64)> {
    let hook = format!(
        "if (!window.__texts) {{ window.__texts = []; \
           const fill = CanvasRenderingContext2D.prototype.fillText; \
           CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {{ \
             const m = this.measureText(text), t = this.getTransform(); \
             window.__texts.push({{canvas: this.canvas, draw: Number(this.canvas.dataset.draws || 0), text: String(text), \
               box: [x - m.actualBoundingBoxLeft, y - m.actualBoundingBoxAscent, x + m.actualBoundingBoxRight, y + m.actualBoundingBoxDescent], \
               t: [t.a, t.b, t.c, t.d, t.e, t.f]}}); \
             return fill.call(this, text, x, y, ...rest); }}; }} \
         const c = document.getElementById('{id}'); const before = Number(c.dataset.draws || 0); \
         window.__texts = window.__texts.filter(r => r.canvas.isConnected); \
         window.dispatchEvent(new Event('resize')); return before;"
    );
    let before = client
        .execute(&hook, vec![])
        .await
        .expect("the text hook")
        .as_u64()
        .unwrap_or(0);
    let draws_now = format!("return Number(document.getElementById('{id}').dataset.draws || 0);");
    wait_for(&format!("{id} redrawn"), Duration::from_secs(30), || async {
        let n = client.execute(&draws_now, vec![]).await.ok()?.as_u64()?;
        (n > before).then_some(())
    })
    .await;
    let count = format!(
        "const c = document.getElementById('{id}'); const last = Number(c.dataset.draws) - 1; \
         const ctx = c.getContext('2d'); const out = []; \
         for (const r of window.__texts.filter(r => r.canvas === c && r.draw === last)) {{ \
           if (!/B\\*|k switch/.test(r.text) || r.t[1] !== 0 || r.t[2] !== 0) continue; \
           const [x0, y0, x1, y1] = r.box; \
           const left = Math.floor(r.t[0] * x0 + r.t[4]), top = Math.floor(r.t[3] * y0 + r.t[5]); \
           const w = Math.ceil(r.t[0] * x1 + r.t[4]) - left, h = Math.ceil(r.t[3] * y1 + r.t[5]) - top; \
           if (w <= 0 || h <= 0) {{ out.push([r.text, -1]); continue; }} \
           if ({cross_out}) {{ ctx.save(); ctx.setTransform(1, 0, 0, 1, 0, 0); ctx.strokeStyle = '#cc79a7'; ctx.lineWidth = 2; \
             ctx.beginPath(); ctx.moveTo(left, top + h / 2); ctx.lineTo(left + w, top + h / 2); ctx.stroke(); ctx.restore(); }} \
           const d = ctx.getImageData(left, top, w, h).data; let n = 0; \
           for (let i = 0; i < d.length; i += 4) {{ \
             if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++; }} \
           out.push([r.text, n]); }} \
         return out;"
    );
    let v = client.execute(&count, vec![]).await.expect("the label boxes");
    v.as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| Some((r[0].as_str()?.to_string(), r[1].as_i64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Assert that chart `id` names each of `labels` (starts of its texts) and that no curve or
/// marker is drawn over any crossing or B* label ([`label_overdraw`]); `at` names the width.
pub async fn assert_labels_clear(client: &Client, id: &str, labels: &[String], at: &str) {
    let found = label_overdraw(client, id, false).await;
    for label in labels {
        assert!(
            found.iter().any(|(text, _)| text.starts_with(label.as_str())),
            "{id} at {at}: no label {label:?} among {found:?}"
        );
    }
    let over: Vec<_> = found.iter().filter(|(_, n)| *n != 0).collect();
    assert!(over.is_empty(), "{id} at {at}: drawn over: {over:?}");
}

/// Visit `fragment` of the page at `base` and wait until `ready` (a CSS selector) shows.
pub async fn visit(client: &Client, base: &str, fragment: &str, ready: &str) {
    client.goto(&format!("{base}#{fragment}")).await.unwrap();
    wait_for(&format!("{ready} on #{fragment}"), Duration::from_secs(30), || async {
        client.find(Locator::Css(ready)).await.ok().map(|_| ())
    })
    .await;
}

/// The overview's "what-if with the measured acceptance" link.
pub async fn overview_whatif_link(client: &Client) -> String {
    client
        .execute(
            "return [...document.querySelectorAll('#overview-links a')].map(a => a.getAttribute('href')).find(h => h.startsWith('#whatif?'));",
            vec![],
        )
        .await
        .unwrap()
        .as_str()
        .expect("the overview links to the what-if page")
        .to_string()
}

/// The sweep chart's label of each arm's measured crossing in `sweep.json`, with its value.
pub fn crossing_labels(sweep: &serde_json::Value) -> Vec<String> {
    sweep["arms"]
        .as_array()
        .map(|arms| {
            arms.iter()
                .filter_map(|a| {
                    Some(format!(
                        "{} measured B* = {:.1}",
                        a["name"].as_str()?,
                        a["table"]["crossing"].as_f64()?
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The what-if page's notices of link parameters it could not use (empty: it read them all).
pub async fn link_notices(client: &Client) -> serde_json::Value {
    client
        .execute(
            "return [...document.querySelectorAll('#link-notices, [id^=notice-]')].map(n => n.textContent).filter(t => t.trim());",
            vec![],
        )
        .await
        .expect("the what-if page's notices")
}

/// One model B* on every page: the what-if links of the run and live pages and the
/// navigation's What-if carry the sweep's headline and open on `bstar` (as printed, one
/// decimal), the figure beside the page links naming the sweep's ridge `ridge`.
pub async fn assert_one_model_bstar(client: &Client, base: &str, run_id: &str, bstar: &str, ridge: &str) {
    for (fragment, ready) in [
        (format!("runs?open={run_id}"), "#latency"),
        ("live".to_string(), "#run-status"),
    ] {
        visit(client, base, &fragment, ready).await;
        let beside = crate::common::wait_for("the sweep's what-if link", Duration::from_secs(30), || async {
            Some(text_of(client, "#whatif-from-run-bstar").await).filter(|t| t.contains("the sweep's"))
        })
        .await;
        assert!(
            beside.starts_with(&format!("model B* = {bstar} (the sweep's: ridge T* = {ridge},")),
            "#{fragment}: {beside}"
        );
        let link = href_of(client, "#whatif-from-run").await;
        client.goto(&format!("{base}{link}")).await.unwrap();
        assert_eq!(whatif_bstar(client).await, bstar, "#{fragment}: {link}");
        visit(client, base, &fragment, ready).await;
    }
    let nav = crate::common::wait_for("the navigation's What-if", Duration::from_secs(30), || async {
        let href = href_of(client, "#nav-whatif").await;
        href.starts_with("#whatif?").then_some(href)
    })
    .await;
    client.goto(&format!("{base}{nav}")).await.unwrap();
    assert_eq!(whatif_bstar(client).await, bstar, "the navigation's {nav}");
}

/// Tables squeezed at the window's width, each named by its id: a cell wrapped over three lines
/// (a tower), a first column off screen, or a table wider than its box that does not scroll
/// inside it.
pub async fn squeezed_tables(client: &Client) -> Vec<String> {
    let v: serde_json::Value = client
        .execute(
            "return [...document.querySelectorAll('table')].filter(t => { \
               if (!t.getClientRects().length) return false; \
               const tower = [...t.querySelectorAll('td, th')].some(c => { \
                 const s = getComputedStyle(c); \
                 const line = parseFloat(s.lineHeight) || parseFloat(s.fontSize) * 1.5; \
                 return c.getBoundingClientRect().height > 3.2 * line; }); \
               const first = t.querySelector('tr > *'); \
               const off = first && first.getBoundingClientRect().right > document.documentElement.clientWidth + 1; \
               const box = t.closest('.table-box'); \
               const stuck = box && box.scrollWidth > box.clientWidth + 1 \
                 && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX); \
               return tower || off || stuck; \
             }).map(t => t.id || t.className);",
            vec![],
        )
        .await
        .expect("the tables' cells");
    strings(&v)
}
