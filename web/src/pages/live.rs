//! The live run page: connects to the collector's WebSocket (reconnecting with capped backoff),
//! applies snapshots and deltas to the shared `LiveState`, and shows vLLM Grafana's headline
//! tiles, the acceptance and token-flow timelines, latencies and their distributions, the
//! per-request path and its acceptance distributions, acceptance by draft position for each
//! path beside the geometric curve, and why a path has no data.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use send_wrapper::SendWrapper;
use speclens_shared::sweep::SweepFile;
use speclens_shared::view::headline::Headline;
use speclens_shared::view::live_state::{Applied, LiveState};
use speclens_shared::view::overview::break_even_of_headline;
use speclens_shared::view::protocol::ServerMessage;
use speclens_shared::view::run::RunStatus;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, WebSocket};

use crate::chart::canvas::chart_canvas;
use crate::components::charts::SweepChart;
use crate::components::figures::*;
use crate::components::run_panel::*;

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

/// The live view's one WebSocket. It reconnects with a capped backoff while the view is shown;
/// when the view is left it detaches its handlers, closes, and never reconnects, so going back
/// and forth between views leaves one socket open (the handlers are owned here, not leaked).
struct LiveSocket {
    set_live: WriteSignal<LiveState>,
    set_link: WriteSignal<Link>,
    live: ReadSignal<LiveState>,
    socket: RefCell<Option<WebSocket>>,
    handlers: RefCell<Vec<Handler>>,
    left: Cell<bool>,
}

/// A JS callback attached to the socket (kept alive while it is attached).
enum Handler {
    Event(#[allow(dead_code)] Closure<dyn FnMut()>),
    Message(#[allow(dead_code)] Closure<dyn FnMut(MessageEvent)>),
}

impl LiveSocket {
    /// Connect now; the returned handle closes the socket for good when dropped by [`leave`].
    fn start(
        set_live: WriteSignal<LiveState>,
        set_link: WriteSignal<Link>,
        live: ReadSignal<LiveState>,
    ) -> Rc<LiveSocket> {
        let me = Rc::new(LiveSocket {
            set_live,
            set_link,
            live,
            socket: RefCell::new(None),
            handlers: RefCell::new(Vec::new()),
            left: Cell::new(false),
        });
        LiveSocket::connect(&me, 0);
        me
    }

    /// Open a socket (after detaching the previous one's handlers). Called at start and from a
    /// timer, never from inside one of the socket's own handlers.
    fn connect(me: &Rc<LiveSocket>, attempt: u32) {
        if me.left.get() {
            return;
        }
        me.detach();
        let Some(url) = ws_url() else { return };
        let Ok(socket) = WebSocket::new(&url) else {
            LiveSocket::retry(me, attempt);
            return;
        };
        me.set_link.set(Link::Connecting);
        // Exposed for debugging and for the browser tests that cut the connection on purpose.
        let _ = js_sys::Reflect::set(&window(), &"speclensSocket".into(), &socket);
        let set_link = me.set_link;
        let on_open = Closure::<dyn FnMut()>::new(move || set_link.set(Link::Open));
        socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        let (set_live, sock) = (me.set_live, socket.clone());
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            let Some(text) = e.data().as_string() else { return };
            let Ok(message) = serde_json::from_str::<ServerMessage>(&text) else {
                return;
            };
            let (mut need_snapshot, mut moved_on) = (false, false);
            set_live.update(|state| {
                let was_over = state.session_over;
                need_snapshot = state.apply(message) == Applied::NeedSnapshot;
                moved_on = !was_over && state.session_over && state.seen_running;
            });
            if need_snapshot {
                // Closing makes the server send a fresh snapshot on the next connection.
                let _ = sock.close();
            }
            if moved_on {
                // The page watched the measurements to their end: show what they found.
                let _ = window().location().set_hash("overview");
            }
        });
        socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        let weak = Rc::downgrade(me);
        let on_close = Closure::<dyn FnMut()>::new(move || {
            let Some(me) = weak.upgrade() else { return };
            let finished = matches!(
                me.live.with_untracked(|l| l.run.status),
                RunStatus::Finished | RunStatus::Partial
            );
            LiveSocket::retry(&me, if finished { attempt.max(3) } else { attempt });
        });
        socket.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        *me.handlers.borrow_mut() = vec![
            Handler::Event(on_open),
            Handler::Message(on_message),
            Handler::Event(on_close),
        ];
        *me.socket.borrow_mut() = Some(socket);
    }

    fn retry(me: &Rc<LiveSocket>, attempt: u32) {
        if me.left.get() {
            return;
        }
        me.set_link.set(Link::Retrying);
        let delay_ms = (250u64 << attempt.min(5)).min(5_000);
        let weak = Rc::downgrade(me);
        set_timeout(
            move || {
                if let Some(me) = weak.upgrade() {
                    LiveSocket::connect(&me, attempt + 1);
                }
            },
            std::time::Duration::from_millis(delay_ms),
        );
    }

    /// Take the handlers off the current socket (if any) and close it.
    fn detach(&self) {
        if let Some(socket) = self.socket.borrow_mut().take() {
            socket.set_onopen(None);
            socket.set_onmessage(None);
            socket.set_onclose(None);
            let _ = socket.close();
        }
        self.handlers.borrow_mut().clear();
    }

    /// The view is gone: close for good.
    fn leave(&self) {
        self.left.set(true);
        self.detach();
    }
}

#[component]
pub fn LivePage() -> impl IntoView {
    let (live, set_live) = signal(LiveState::default());
    let (link, set_link) = signal(Link::Connecting);
    let socket = SendWrapper::new(LiveSocket::start(set_live, set_link, live));
    on_cleanup(move || socket.leave());
    let run = Signal::derive(move || live.with(|l| l.run.clone()));
    // Redrawn when a new table comes (after each point), not on every delta of the run.
    let sweep = Memo::new(move |_| live.with(|l| l.sweep.clone()));
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
            // The sweep this page follows, else the results folder's: the live sweep box and
            // this link show one model B*.
            {move || {
                let followed = sweep.with(|s| s.as_ref().and_then(|(_, t)| Headline::of_sweep(t)));
                let headline = followed.or_else(crate::api::sweep_model);
                run.with(|r| whatif_link(r, headline.as_ref()))
            }}
            {move || (run.with(|r| r.status) == RunStatus::Idle).then(|| view! {
                <div class="empty" id="live-empty">
                    <p>"No run is being measured by this server."</p>
                    <p class="hint">"This page follows a run while it goes: start one with "
                        <code>"speclens bench --url http://127.0.0.1:8000 --dashboard"</code>
                        " or " <code>"speclens demo"</code> ". Saved runs are in the "
                        <a href="#overview">"overview"</a> " and the " <a href="#runs">"run list"</a> "."</p>
                </div>
            })}
            {move || (live.with(|l| l.session_over) && run.with(|r| r.status) != RunStatus::Running).then(|| view! {
                <p class="notice" id="session-over">"The measurements are done. " <a href="#overview">"See the overview →"</a></p>
            })}
            {move || sweep.get().map(|(done, table)| view! { <LiveSweep done=done table=table/> })}
            <RunPanel run=run/>
        </section>
    }
}

/// The sweep this dashboard follows: its points so far with their ratios to plain (the chart),
/// then, when it is done, its measured B* and recommendation (the sweep's answer) and the
/// model's one B* for the same arm.
#[component]
fn LiveSweep(done: bool, table: SweepFile) -> impl IntoView {
    let headline = Headline::of_sweep(&table);
    let answer = break_even_of_headline(&table, headline.as_ref()).sentence;
    let model = headline.as_ref().map(|h| {
        let (fragment, b) = h.whatif_link();
        (fragment, format!(" arm {}: model B* = {b:.1}", h.arm))
    });
    let points = table.arms.arms.iter().map(|a| a.table.rows.len()).sum::<usize>();
    let status = if done {
        "The sweep is done: its answer, as sweep.json holds it.".to_string()
    } else {
        format!("The sweep so far: {points} levels of its arms measured against plain; the answer firms up with each point.")
    };
    view! {
        <div class="chart-box" id="live-sweep">
            <h3>{if done { "The sweep" } else { "The sweep, point by point" }}</h3>
            <p class="hint" id="live-sweep-status">{status}</p>
            <p class="headline" id="live-sweep-answer">{answer}</p>
            {table.unsteady_note().map(|line| view! { <p class="hint">{line}</p> })}
            {table.recommendation.as_ref().map(|r| view! { <p class="headline" id="live-sweep-recommendation">{r.summary()}</p> })}
            {model.map(|(fragment, beside)| view! { <p><a id="whatif-from-live-sweep" href=format!("#{fragment}")>"What-if with the sweep's measured acceptance →"</a>
                <span class="hint" id="whatif-from-live-sweep-bstar">{beside}</span></p> })}
            {chart_canvas::<_, SweepChart>("live-sweep-chart", "mid-chart", "speclens-sweep".into(), Signal::stored(table))}
        </div>
    }
}
