//! The what-if page in real headless Chromium, served by the real `speclens serve`: a user
//! changes α and k, the chart redraws (proved by reading canvas pixels), the URL carries the
//! state, and opening that URL again shows the same what-if.

use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::Value;

use crate::common::browser::{open_browser, start_chromedriver, text_of, value_of};
use crate::common::{wait_for, Speclens};
use speclens_shared::model::whatif::WhatIf;

/// What the chart canvas holds now: draw count, inked pixels, pixels in the selected-curve
/// colour (Okabe–Ito reddish purple), and a hash of every pixel.
const CANVAS_PROBE: &str = r#"
const c = document.getElementById('speedup-chart');
if (!c || !c.width || !c.dataset.draws) return null;
const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
let ink = 0, purple = 0, hash = 0;
for (let i = 0; i < d.length; i += 4) {
  const r = d[i], g = d[i + 1], b = d[i + 2];
  if (r < 245 || g < 245 || b < 245) ink++;
  if (Math.abs(r - 0xcc) < 16 && Math.abs(g - 0x79) < 16 && Math.abs(b - 0xa7) < 16) purple++;
  hash = (Math.imul(hash, 31) + r + 7 * g + 13 * b) >>> 0;
}
return {draws: Number(c.dataset.draws), ink, purple, hash, pixels: d.length / 4};
"#;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Canvas {
    pub(crate) draws: u64,
    pub(crate) ink: u64,
    pub(crate) purple: u64,
    pub(crate) hash: u64,
    pub(crate) pixels: u64,
}

pub(crate) async fn probe(client: &Client) -> Option<Canvas> {
    let v: Value = client.execute(CANVAS_PROBE, vec![]).await.ok()?;
    let n = |k: &str| v.get(k).and_then(Value::as_u64);
    Some(Canvas {
        draws: n("draws")?,
        ink: n("ink")?,
        purple: n("purple")?,
        hash: n("hash")?,
        pixels: n("pixels")?,
    })
}

/// Wait until the chart has been drawn after `previous` and differs from it.
pub(crate) async fn redrawn(client: &Client, previous: Option<Canvas>) -> Canvas {
    wait_for("the chart to redraw", Duration::from_secs(20), || async {
        probe(client)
            .await
            .filter(|c| previous.is_none_or(|p| c.draws > p.draws && c.hash != p.hash))
    })
    .await
}

/// Type into an input as a user does.
async fn type_into(client: &Client, css: &str, text: &str) {
    let input = client.find(Locator::Css(css)).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys(text).await.unwrap();
}

#[tokio::test]
async fn what_if_chart_redraws_on_input_and_the_url_reproduces_it() {
    let dist = crate::common::built_web_dir();
    let server = Speclens::start(&["serve", "--port", "0", "--web-dir", dist.to_str().unwrap()]);
    let driver = start_chromedriver().await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, profile.path()).await;

    client
        .goto(&format!("{}#whatif?alpha=0.4&k=1", server.url()))
        .await
        .unwrap();
    let first = redrawn(&client, None).await;
    assert!(
        first.ink * 50 > first.pixels,
        "the chart has axes, labels and curves: {first:?}"
    );
    assert!(
        first.purple > 200,
        "the selected S(B) curve is drawn in its colour: {first:?}"
    );
    assert_eq!(text_of(&client, "#tile-e .tile-value").await, "1.400");
    assert_eq!(text_of(&client, "#tile-s1 .tile-value").await, "1.40×");
    assert_eq!(text_of(&client, "#tile-bstar .tile-value").await, "206.5");

    type_into(&client, "#alpha", "0.8").await;
    let after_alpha = redrawn(&client, Some(first)).await;
    type_into(&client, "#k", "3").await;
    wait_for("E at α = 0.8, k = 3", Duration::from_secs(20), || async {
        (text_of(&client, "#tile-e .tile-value").await == "2.952").then_some(())
    })
    .await;
    let after_k = redrawn(&client, Some(after_alpha)).await;
    assert_eq!(text_of(&client, "#tile-bstar .tile-value").await, "217.7");

    // A context moves the B* curve: the KV each step reads keeps the plain step
    // bandwidth-bound longer (the shared model's value, and the chart redrawn); back to none.
    type_into(&client, "#ctx", "300").await;
    let at_context = WhatIf::from_fragment("#whatif?alpha=0.8&k=3&ctx=300").0;
    let want = format!("{:.1}", at_context.selected_row().break_even_batch);
    assert_ne!(want, "217.7");
    wait_for("B* at 300 tokens of context", Duration::from_secs(20), || async {
        (text_of(&client, "#tile-bstar .tile-value").await == want).then_some(())
    })
    .await;
    let with_context = redrawn(&client, Some(after_k)).await;
    assert!(client.current_url().await.unwrap().as_str().contains("ctx=300"));
    type_into(&client, "#ctx", "0").await;
    wait_for("B* without context again", Duration::from_secs(20), || async {
        (text_of(&client, "#tile-bstar .tile-value").await == "217.7").then_some(())
    })
    .await;
    let after_k = redrawn(&client, Some(with_context)).await;

    // Out-of-range typed values get the same notice a bad link value gets, and change nothing.
    type_into(&client, "#k", "40").await;
    let notice = wait_for("the notice for k = 40", Duration::from_secs(20), || async {
        Some(text_of(&client, "#notice-k").await).filter(|t| !t.is_empty())
    })
    .await;
    assert!(
        notice.contains("k must be a whole number from 1 to 16") && notice.contains("The model keeps 3"),
        "{notice}"
    );
    type_into(&client, "#alpha", "1.5").await;
    let notice = wait_for("the notice for α = 1.5", Duration::from_secs(20), || async {
        Some(text_of(&client, "#notice-alpha").await).filter(|t| !t.is_empty())
    })
    .await;
    assert!(notice.contains("α must be a number in [0, 1]"), "{notice}");
    assert_eq!(
        text_of(&client, "#tile-e .tile-value").await,
        "2.952",
        "nothing changed"
    );
    let bad_link = WhatIf::from_fragment("#whatif?k=40").1;
    assert!(
        bad_link[0].contains("k must be a whole number from 1 to 16"),
        "the same words: {bad_link:?}"
    );
    type_into(&client, "#k", "3").await;
    type_into(&client, "#alpha", "0.8").await;
    wait_for("the notices to clear", Duration::from_secs(20), || async {
        let gone: Value = client
            .execute("return document.querySelectorAll('.input-notice').length === 0", vec![])
            .await
            .ok()?;
        gone.as_bool().filter(|g| *g)
    })
    .await;

    let url = client.current_url().await.unwrap().to_string();
    assert!(
        url.contains("alpha=0.8") && url.contains("k=3"),
        "the URL carries the state: {url}"
    );

    // Open the copied link afresh: same inputs, same figures, same pixels.
    client.goto("about:blank").await.unwrap();
    client.goto(&url).await.unwrap();
    let reopened = redrawn(&client, None).await;
    assert_eq!(value_of(&client, "#alpha").await, "0.8");
    assert_eq!(value_of(&client, "#k").await, "3");
    assert_eq!(text_of(&client, "#tile-e .tile-value").await, "2.952");
    assert_eq!(
        (reopened.hash, reopened.ink, reopened.purple),
        (after_k.hash, after_k.ink, after_k.purple)
    );

    client.close().await.unwrap();
}
