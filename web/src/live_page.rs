//! The live run page: connects to the collector's WebSocket (reconnecting with capped backoff),
//! applies snapshots and deltas to the shared `LiveState`, and shows vLLM Grafana's headline
//! tiles, the acceptance and token-flow timelines, latencies and their distributions, the
//! per-request path and its acceptance distributions, acceptance by draft position for each
//! path beside the geometric curve, and why a path has no data.

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::style::RGBColor;
use speclens_shared::aggregate::Bins;
use speclens_shared::chart::{
    colors, draw_histograms, draw_per_position, draw_series_chart, HistogramPanel, Positions, Series,
};
use speclens_shared::live_state::{Applied, LiveState};
use speclens_shared::protocol::{RunStatus, RunView, ServerMessage};
use speclens_shared::run::LatencyStats;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{HtmlCanvasElement, MessageEvent, WebSocket};

use crate::canvas::draw_on;

/// Connection state shown on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Connecting,
    Open,
    Retrying,
}

fn ws_url() -> Option<String> {
    let location = window().location();
    let scheme = if location.protocol().ok()? == "https:" {
        "wss"
    } else {
        "ws"
    };
    Some(format!("{scheme}://{}/ws", location.host().ok()?))
}

/// Open the socket; on close, try again after a capped exponential backoff.
fn connect(set_live: WriteSignal<LiveState>, set_link: WriteSignal<Link>, attempt: u32, live: ReadSignal<LiveState>) {
    let Some(url) = ws_url() else { return };
    let Ok(socket) = WebSocket::new(&url) else {
        retry(set_live, set_link, attempt, live);
        return;
    };
    set_link.set(Link::Connecting);
    // Exposed for debugging and for the browser tests that cut the connection on purpose.
    let _ = js_sys::Reflect::set(&window(), &"speclensSocket".into(), &socket);
    let on_open = Closure::<dyn FnMut()>::new(move || set_link.set(Link::Open));
    socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    on_open.forget();
    let sock = socket.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        let Some(text) = e.data().as_string() else { return };
        let Ok(message) = serde_json::from_str::<ServerMessage>(&text) else {
            return;
        };
        let mut need_snapshot = false;
        set_live.update(|state| need_snapshot = state.apply(message) == Applied::NeedSnapshot);
        if need_snapshot {
            // Closing makes the server send a fresh snapshot on the next connection.
            let _ = sock.close();
        }
    });
    socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    let on_close = Closure::<dyn FnMut()>::new(move || {
        let finished = matches!(
            live.with_untracked(|l| l.run.status),
            RunStatus::Finished | RunStatus::Partial
        );
        if finished {
            set_link.set(Link::Retrying);
        }
        retry(
            set_live,
            set_link,
            if finished { attempt.max(3) } else { attempt },
            live,
        );
    });
    socket.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    on_close.forget();
}

fn retry(set_live: WriteSignal<LiveState>, set_link: WriteSignal<Link>, attempt: u32, live: ReadSignal<LiveState>) {
    set_link.set(Link::Retrying);
    let delay_ms = (250u64 << attempt.min(5)).min(5_000);
    set_timeout(
        move || connect(set_live, set_link, attempt + 1, live),
        std::time::Duration::from_millis(delay_ms),
    );
}

fn fmt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "No traffic".to_string(), |x| format!("{x:.decimals$}"))
}

fn latency_row(name: &'static str, stats: Option<LatencyStats>) -> impl IntoView {
    let cells = match stats {
        Some(s) => [s.mean, s.median, s.percentiles.get("99").copied().unwrap_or(f64::NAN)].map(|v| format!("{v:.2}")),
        None => [(); 3].map(|_| "—".to_string()),
    };
    view! { <tr><td>{name}</td><td>{cells[0].clone()}</td><td>{cells[1].clone()}</td><td>{cells[2].clone()}</td></tr> }
}

/// Redraw `canvas` whenever the run changes.
fn chart_effect(
    canvas: NodeRef<Canvas>,
    run: Signal<RunView>,
    draw: fn(&HtmlCanvasElement, &RunView) -> Result<(), String>,
) {
    Effect::new(move |_| {
        let Some(c) = canvas.get() else { return };
        run.with(|r| {
            let result = draw(&c, r);
            let draws = c
                .get_attribute("data-draws")
                .and_then(|d| d.parse::<u64>().ok())
                .unwrap_or(0)
                + 1;
            let _ = c.set_attribute("data-draws", &draws.to_string());
            let _ = c.set_attribute("data-error", &result.err().unwrap_or_default());
        });
    });
}

fn draw_acceptance(c: &HtmlCanvasElement, run: &RunView) -> Result<(), String> {
    let rate: Vec<(f64, f64)> = run
        .timeline
        .iter()
        .filter_map(|p| p.acceptance_rate.map(|r| (p.t_s, r / 100.0)))
        .collect();
    let length: Vec<(f64, f64)> = run
        .timeline
        .iter()
        .filter_map(|p| p.acceptance_length.map(|l| (p.t_s, l)))
        .collect();
    let series = [
        Series {
            label: "acceptance rate (fraction)".into(),
            color: colors::ACCEPTED,
            points: rate,
        },
        Series {
            label: "acceptance length (tokens/step)".into(),
            color: colors::SPECULATIVE,
            points: length,
        },
    ];
    draw_on(c, |root, scale| {
        draw_series_chart(root, &series, "rate · length", scale)
    })
}

fn draw_flow(c: &HtmlCanvasElement, run: &RunView) -> Result<(), String> {
    let t = &run.timeline;
    let series = [
        Series {
            label: "proposed/s".into(),
            color: colors::PROPOSED,
            points: t.iter().map(|p| (p.t_s, p.drafted_per_s)).collect(),
        },
        Series {
            label: "accepted/s".into(),
            color: colors::ACCEPTED,
            points: t.iter().map(|p| (p.t_s, p.accepted_per_s)).collect(),
        },
        Series {
            label: "rejected/s".into(),
            color: colors::REJECTED,
            points: t
                .iter()
                .map(|p| (p.t_s, (p.drafted_per_s - p.accepted_per_s).max(0.0)))
                .collect(),
        },
    ];
    draw_on(c, |root, scale| {
        draw_series_chart(root, &series, "draft tokens/s", scale)
    })
}

/// Path colours in the per-position chart: per-request first, then each scraped endpoint.
const PATH_COLORS: [RGBColor; 4] = [
    colors::ACCEPTED,
    colors::PROPOSED,
    colors::SPECULATIVE,
    colors::REJECTED,
];

fn draw_positions(c: &HtmlCanvasElement, run: &RunView) -> Result<(), String> {
    let paths = run.positions_by_path();
    let e = paths.first().map_or(1.0, |p| p.acceptance_length);
    let measured: Vec<Positions> = paths
        .into_iter()
        .zip(PATH_COLORS.iter().cycle())
        .map(|(p, color)| Positions {
            label: p.label,
            color: *color,
            rates: p.rates,
        })
        .collect();
    draw_on(c, |root, scale| draw_per_position(root, &measured, e, scale))
}

fn draw_latency_distributions(c: &HtmlCanvasElement, run: &RunView) -> Result<(), String> {
    let d = &run.distributions;
    let panels = [
        ("TTFT (ms)", d.ttft_ms.as_ref()),
        ("ITL (ms)", d.itl_ms.as_ref()),
        ("E2E latency (ms)", d.e2el_ms.as_ref()),
    ]
    .map(|(x_desc, bins)| HistogramPanel {
        x_desc,
        color: colors::PROPOSED,
        bins,
    });
    draw_on(c, |root, scale| draw_histograms(root, &panels, scale))
}

fn draw_acceptance_distributions(c: &HtmlCanvasElement, run: &RunView) -> Result<(), String> {
    let pooled = run
        .per_request
        .as_ref()
        .and_then(|s| Bins::from_counts(&s.pooled_spec_decode_acceptance_histogram));
    let panels = [
        HistogramPanel {
            x_desc: "acceptance length per request",
            color: colors::SPECULATIVE,
            bins: run.distributions.acceptance_length.as_ref(),
        },
        HistogramPanel {
            x_desc: "drafts accepted per step (pooled)",
            color: colors::ACCEPTED,
            bins: pooled.as_ref(),
        },
    ];
    draw_on(c, |root, scale| draw_histograms(root, &panels, scale))
}

/// "over N requests · M steps" under the acceptance distributions.
fn acceptance_counts(run: &RunView) -> String {
    let requests = run.distributions.acceptance_length.as_ref().map_or(0, Bins::total);
    let steps: u64 = run
        .per_request
        .as_ref()
        .map_or(0, |s| s.pooled_spec_decode_acceptance_histogram.values().sum());
    format!("{requests} requests with spec-decode steps · {steps} steps pooled")
}

/// Tiles, charts, latencies, per-request path and per-position chart of one run (live or
/// opened from the history).
#[component]
pub fn RunPanel(run: Signal<RunView>) -> impl IntoView {
    let acceptance = NodeRef::<Canvas>::new();
    let flow = NodeRef::<Canvas>::new();
    let positions = NodeRef::<Canvas>::new();
    let latency_dist = NodeRef::<Canvas>::new();
    let acceptance_dist = NodeRef::<Canvas>::new();
    chart_effect(acceptance, run, draw_acceptance);
    chart_effect(flow, run, draw_flow);
    chart_effect(positions, run, draw_positions);
    chart_effect(latency_dist, run, draw_latency_distributions);
    chart_effect(acceptance_dist, run, draw_acceptance_distributions);
    let tile = move |id: &'static str, label: &'static str, value: Box<dyn Fn() -> String + Send + Sync>| {
        view! { <div class="tile" id=id><div class="tile-label">{label}</div><div class="tile-value">{value}</div></div> }
    };
    view! {
        <div class="tiles">
            {tile("tile-acceptance-rate", "Acceptance rate (%)", Box::new(move || fmt(run.with(|r| r.tiles.acceptance_rate), 2)))}
            {tile("tile-acceptance-length", "Acceptance length", Box::new(move || fmt(run.with(|r| r.tiles.acceptance_length), 2)))}
            {tile("tile-accepted-per-s", "Accepted tokens/s", Box::new(move || fmt(run.with(|r| r.tiles.accepted_per_s), 1)))}
            {tile("tile-drafted-per-s", "Drafted tokens/s", Box::new(move || fmt(run.with(|r| r.tiles.drafted_per_s), 1)))}
            {tile("tile-drafts-per-s", "Drafts/s", Box::new(move || fmt(run.with(|r| r.tiles.drafts_per_s), 1)))}
            {tile("tile-draft-share", "Output from drafts (%)", Box::new(move || fmt(run.with(|r| r.tiles.draft_share), 1)))}
        </div>
        <div class="grid2">
            <div class="chart-box"><h3>"Acceptance over time"</h3><canvas id="live-acceptance" class="small-chart" node_ref=acceptance></canvas></div>
            <div class="chart-box"><h3>"Token flow"</h3><canvas id="live-flow" class="small-chart" node_ref=flow></canvas></div>
        </div>
        <div class="grid2">
            <div>
                <h3>"Latency (ms)"</h3>
                <table class="model-table" id="latency">
                    <thead><tr><th>""</th><th>"mean"</th><th>"median"</th><th>"p99"</th></tr></thead>
                    <tbody>
                        {move || latency_row("TTFT", run.with(|r| r.ttft_ms.clone()))}
                        {move || latency_row("ITL", run.with(|r| r.itl_ms.clone()))}
                        {move || latency_row("E2E", run.with(|r| r.e2el_ms.clone()))}
                    </tbody>
                </table>
                <p id="output-throughput">{move || format!("Output: {:.1} tokens/s", run.with(|r| r.output_tokens_per_s))}</p>
                <h3>"Per-request path"</h3>
                <div id="per-request">
                    {move || run.with(|r| match &r.per_request {
                        Some(s) => {
                            let e = s.spec_decode_token_weighted_acceptance_length.as_ref().map_or("N/A".to_string(), |d| format!("{:.3}", d.avg));
                            let rate = s.spec_decode_overall_draft_acceptance_rate.as_ref().map_or("N/A".to_string(), |d| format!("{:.2}", d.avg));
                            view! {
                                <p>"Token-weighted acceptance length: " <strong id="pr-length">{e}</strong>
                                   " · overall draft acceptance rate: " <strong id="pr-rate">{rate}</strong> " %"
                                   " · steps: " <strong id="pr-steps">{format!("{:.0}", s.total_spec_decode_steps.avg)}</strong></p>
                                <p class="hint">{s.histogram_line().unwrap_or_default()}</p>
                            }.into_any()
                        }
                        None => view! { <p class="hint">"N/A: no request carried spec-decode stats (yet)."</p> }.into_any(),
                    })}
                </div>
                {move || {
                    let rows = run.with(|r| r.acceptance_by_endpoint());
                    (!rows.is_empty()).then(|| view! {
                        <h3>"Per replica (live scrapes)"</h3>
                        <table class="model-table" id="per-replica">
                            <thead><tr><th>"endpoint"</th><th>"acceptance rate (%)"</th><th>"acceptance length"</th><th>"drafts"</th></tr></thead>
                            <tbody>
                                {rows.into_iter().map(|e| view! {
                                    <tr>
                                        <td>{e.endpoint}</td>
                                        <td>{e.acceptance_rate.map_or("—".to_string(), |v| format!("{v:.2}"))}</td>
                                        <td>{e.acceptance_length.map_or("—".to_string(), |v| format!("{v:.2}"))}</td>
                                        <td>{format!("{:.0}", e.drafts)}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    })
                }}
                <div id="not-available">
                    {move || run.with(|r| r.not_available.clone()).into_iter().map(|r| view! { <p class="warning">"N/A: " {r}</p> }).collect_view()}
                </div>
                <div id="notices">
                    {move || run.with(|r| r.notices.clone()).into_iter().map(|r| view! { <p class="notice">{r}</p> }).collect_view()}
                </div>
            </div>
            <div class="chart-box"><h3>"Acceptance by draft position"</h3><canvas id="live-positions" class="small-chart" node_ref=positions></canvas>
                <p class="hint">"A draft is accepted only if all earlier ones were, so rates fall with position; when they fall faster than the geometric curve, the best k is smaller than the geometric table suggests."</p>
            </div>
        </div>
        <div class="chart-box"><h3>"Latency distributions"</h3><canvas id="live-latency-dist" class="wide-chart" node_ref=latency_dist></canvas></div>
        <div class="chart-box"><h3>"Acceptance distributions"</h3><canvas id="live-acceptance-dist" class="wide-chart" node_ref=acceptance_dist></canvas>
            <p class="hint" id="acceptance-dist-counts">{move || run.with(acceptance_counts)}</p>
        </div>
    }
}

/// The what-if fragment seeded from a run's measured acceptance (E, k, per-position rates).
pub fn whatif_fragment(run: &RunView) -> Option<String> {
    let path = run.positions_by_path().into_iter().next()?;
    let (rates, e) = (path.rates, path.acceptance_length);
    if rates.is_empty() || e <= 1.0 {
        return None;
    }
    let list: Vec<String> = rates.iter().map(|r| format!("{r:.3}")).collect();
    // The measured draft length, when the drafts were shorter than k.
    let draft_tokens = run
        .mean_draft_tokens
        .filter(|d| *d < rates.len() as f64 - 0.005)
        .map_or(String::new(), |d| format!("&d={d:.3}"));
    Some(format!(
        "whatif?e={e:.3}&k={}{draft_tokens}&rates={}&batch=64",
        rates.len(),
        list.join(",")
    ))
}

#[component]
pub fn LivePage() -> impl IntoView {
    let (live, set_live) = signal(LiveState::default());
    let (link, set_link) = signal(Link::Connecting);
    connect(set_live, set_link, 0, live);
    let run = Signal::derive(move || live.with(|l| l.run.clone()));
    view! {
        <section class="page live">
            <h1>"Live run"</h1>
            {move || live.with(|l| l.incompatible.clone()).map(|m| view! { <div class="notice" role="alert">{m}</div> })}
            <p class="status" id="run-status">
                <span class=move || format!("link {}", match link.get() { Link::Open => "open", Link::Connecting => "connecting", Link::Retrying => "retrying" })>
                    {move || match link.get() { Link::Open => "connected", Link::Connecting => "connecting…", Link::Retrying => "reconnecting…" }}
                </span>
                {move || status_line(&run.get())}
            </p>
            {move || run.with(whatif_fragment).map(|f| view! { <p><a id="whatif-from-run" href=format!("#{f}")>"What-if with this run's measured acceptance →"</a></p> })}
            <RunPanel run=run/>
        </section>
    }
}

/// ` · label model · status · counts · elapsed`.
pub fn status_line(r: &RunView) -> String {
    let status = match r.status {
        RunStatus::Idle => "no run yet",
        RunStatus::Running => "running",
        RunStatus::Finished => "finished",
        RunStatus::Partial => "stopped early (partial)",
    };
    let total = r.progress.total.map_or(String::new(), |t| format!(" of {t}"));
    format!(
        " · {} {} · {status} · {} completed, {} failed{total} · {:.1} s",
        r.label, r.model, r.progress.completed, r.progress.failed, r.progress.elapsed_s
    )
}
