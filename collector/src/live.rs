//! The live hub between running benchmarks and their dashboards: one task owns the run's view
//! and receives typed events on a bounded channel (sends, records, scrape points, findings).
//! A few times per second it turns what changed into one delta, serialised once and broadcast
//! to every WebSocket client; a client that connects, reconnects or lags gets a fresh snapshot
//! instead of an unbounded queue. Latencies are kept in histograms, so a tick's cost does not
//! grow with the run's requests and tokens (only the scrape timeline, one point per endpoint per
//! interval, and the per-request summary grow).

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;
use hdrhistogram::Histogram;
use speclens_shared::figures::{acceptance_length, acceptance_rate_pct};
use speclens_shared::results::run_result::RunResult;
use speclens_shared::run::aggregate::{Bins, SpecAggregator};
use speclens_shared::run::record::{percentile_name, LatencyStats, RequestRecord};
use speclens_shared::sweep::SweepFile;
use speclens_shared::view::protocol::{ServerMessage, PROTOCOL_VERSION};
use speclens_shared::view::run::run_view_from_result;
use speclens_shared::view::run::{
    draft_share_pct, Distributions, PreviousRun, RunStatus, RunView, Tiles, TimelinePoint, MAX_BINS,
};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;

/// How often deltas go out.
pub const TICK: Duration = Duration::from_millis(250);

/// Events a run may queue before its sender waits for the hub.
const EVENT_QUEUE: usize = 4096;

/// Where a live scrape point comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// A server's own `/metrics`.
    Direct,
    /// A Prometheus API (the same servers, seen through the fleet's store).
    Prometheus,
}

/// What a run tells the hub.
enum Event {
    Start {
        label: String,
        model: String,
        total: Option<u64>,
    },
    Sent,
    Record(Box<RequestRecord>),
    Point(Source, TimelinePoint),
    /// The run ended: its saved result as the clients will show it.
    Finish(Box<RunView>),
    /// The command has measured all it will.
    SessionOver,
    /// The sweep's table so far (`done` false) or as saved (`done` true).
    Sweep(bool, Box<SweepFile>),
    /// A new client: its subscription and the hello and snapshot it starts from.
    Join(oneshot::Sender<(broadcast::Receiver<Utf8Bytes>, Vec<Utf8Bytes>)>),
    /// Hello and snapshot again (a lagging client).
    Snapshot(oneshot::Sender<Vec<Utf8Bytes>>),
    Current(oneshot::Sender<RunView>),
}

/// The handle runs and WebSocket handlers hold; cloning it is cheap.
#[derive(Clone)]
pub struct LiveHub {
    /// The hub task's queue; `None` for a detached hub, which no page can watch.
    events: Option<mpsc::Sender<Event>>,
}

/// Latencies in milliseconds, kept as microsecond histograms (3 significant digits).
struct Latency(Histogram<u64>);

impl Latency {
    fn new() -> Latency {
        Latency(Histogram::new(3).expect("3 significant digits is a valid histogram"))
    }

    fn record(&mut self, ms: f64) {
        if ms.is_finite() && ms >= 0.0 {
            let _ = self.0.record((ms * 1e3).round() as u64);
        }
    }

    fn stats(&self) -> Option<LatencyStats> {
        let h = &self.0;
        (!h.is_empty()).then(|| LatencyStats {
            mean: h.mean() / 1e3,
            median: h.value_at_quantile(0.5) as f64 / 1e3,
            std: h.stdev() / 1e3,
            percentiles: BTreeMap::from([(percentile_name(99.0), h.value_at_quantile(0.99) as f64 / 1e3)]),
        })
    }

    fn bins(&self) -> Option<Bins> {
        let recorded = self
            .0
            .iter_recorded()
            .map(|v| (v.value_iterated_to() as f64 / 1e3, v.count_at_value()));
        Bins::from_counted(recorded.collect::<Vec<_>>().into_iter(), MAX_BINS)
    }
}

/// Raw accumulations the view is computed from.
struct Accumulated {
    ttft_ms: Latency,
    itl_ms: Latency,
    tpot_ms: Latency,
    e2el_ms: Latency,
    output_tokens: u64,
    spec: SpecAggregator,
    /// The latest scrape interval of each endpoint, by source.
    latest: BTreeMap<(Source, String), TimelinePoint>,
}

impl Accumulated {
    fn new() -> Accumulated {
        Accumulated {
            ttft_ms: Latency::new(),
            itl_ms: Latency::new(),
            tpot_ms: Latency::new(),
            e2el_ms: Latency::new(),
            output_tokens: 0,
            spec: SpecAggregator::new(),
            latest: BTreeMap::new(),
        }
    }
}

/// The hub task's state: only it reads or writes this.
struct Hub {
    view: RunView,
    acc: Accumulated,
    seq: u64,
    last_sent: RunView,
    dirty: bool,
    started: Option<Instant>,
    session_over: bool,
    /// The sweep's last table, serialised once: sent to every client and to each new one.
    sweep: Option<Utf8Bytes>,
    tx: broadcast::Sender<Utf8Bytes>,
}

/// One serialisation per message, shared by every client (`Utf8Bytes` clones are cheap).
fn to_text(message: &ServerMessage) -> Utf8Bytes {
    Utf8Bytes::from(serde_json::to_string(message).unwrap_or_else(|_| "{}".into()))
}

impl LiveHub {
    /// Start the hub task; `capacity` bounds each client's queue (a slower client gets a
    /// snapshot). The task ends when the last handle is dropped.
    pub fn new(capacity: usize) -> LiveHub {
        let (tx, _) = broadcast::channel(capacity.max(2));
        let (events, rx) = mpsc::channel(EVENT_QUEUE);
        let hub = Hub {
            view: RunView::idle(),
            acc: Accumulated::new(),
            seq: 0,
            last_sent: RunView::idle(),
            dirty: false,
            started: None,
            session_over: false,
            sweep: None,
            tx,
        };
        tokio::spawn(hub.run(rx));
        LiveHub { events: Some(events) }
    }

    /// A hub no page watches (a command without a dashboard): runs feed it as any other, and
    /// what they send is dropped at once, so a run spends no CPU on a view nobody reads.
    pub fn detached() -> LiveHub {
        LiveHub { events: None }
    }

    /// Whether a hub task receives what is sent (not [`LiveHub::detached`]).
    pub fn attached(&self) -> bool {
        self.events.is_some()
    }

    async fn send(&self, event: Event) {
        // The task lives as long as a handle does; a send can fail only at shutdown.
        if let Some(events) = &self.events {
            let _ = events.send(event).await;
        }
    }

    /// A new run begins: everything from the previous one is dropped.
    pub async fn start_run(&self, label: &str, model: &str, total: Option<u64>) {
        self.send(Event::Start {
            label: label.into(),
            model: model.into(),
            total,
        })
        .await;
    }

    pub async fn note_sent(&self) {
        self.send(Event::Sent).await;
    }

    /// One finished request of the measured window.
    pub async fn note_record(&self, record: &RequestRecord) {
        if self.attached() {
            self.send(Event::Record(Box::new(record.clone()))).await;
        }
    }

    /// One live-scrape point.
    pub async fn note_point(&self, source: Source, point: TimelinePoint) {
        self.send(Event::Point(source, point)).await;
    }

    /// The run ended and its result is saved: from now on the clients show the saved result
    /// (`run_view_from_result`), whole-run figures equal to `result.json`'s, instead of the
    /// last scrape interval.
    pub async fn finish(&self, result: &RunResult) {
        if self.attached() {
            self.send(Event::Finish(Box::new(run_view_from_result(result)))).await;
        }
    }

    /// A sweep's table: after each point the points so far (`done` false), at its end the saved
    /// table (`done` true). The page shows its ratios, B* and recommendation as they come.
    pub async fn sweep(&self, done: bool, table: &SweepFile) {
        if self.attached() {
            self.send(Event::Sweep(done, Box::new(table.clone()))).await;
        }
    }

    /// The command feeding this hub has measured all it will (the demo's end): pages that
    /// watched it move on to the overview, and later visitors are told so.
    pub async fn end_session(&self) {
        self.send(Event::SessionOver).await;
    }

    async fn ask<T>(&self, event: impl FnOnce(oneshot::Sender<T>) -> Event) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.send(event(tx)).await;
        rx.await.ok()
    }

    /// Subscribe, then the hello and snapshot a new client starts from.
    pub async fn join(&self) -> Option<(broadcast::Receiver<Utf8Bytes>, Vec<Utf8Bytes>)> {
        self.ask(Event::Join).await
    }

    /// Hello + a snapshot of the last state sent (its sequence number included).
    pub async fn snapshot(&self) -> Vec<Utf8Bytes> {
        self.ask(Event::Snapshot).await.unwrap_or_default()
    }

    /// The view as the clients last received it.
    pub async fn current(&self) -> RunView {
        self.ask(Event::Current).await.unwrap_or_else(RunView::idle)
    }
}

impl Hub {
    async fn run(mut self, mut events: mpsc::Receiver<Event>) {
        let mut ticker = tokio::time::interval(TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => self.apply(event),
                    None => return,
                },
                _ = ticker.tick() => self.tick(),
            }
        }
    }

    fn apply(&mut self, event: Event) {
        match event {
            Event::Start { label, model, total } => self.start(label, model, total),
            Event::Sent => {
                self.view.progress.sent += 1;
                self.dirty = true;
            }
            Event::Record(r) => self.record(&r),
            Event::Point(source, p) => {
                if p.error.is_none() {
                    self.acc.latest.insert((source, p.endpoint.clone()), p.clone());
                }
                self.view.timeline.push(p);
                self.dirty = true;
            }
            Event::Finish(view) => self.finish(*view),
            Event::SessionOver => {
                self.session_over = true;
                let _ = self.tx.send(to_text(&ServerMessage::SessionOver));
            }
            Event::Sweep(done, table) => {
                let text = to_text(&ServerMessage::Sweep { done, table });
                self.sweep = Some(text.clone());
                let _ = self.tx.send(text);
            }
            Event::Join(reply) => {
                let rx = self.tx.subscribe();
                // Bring the view up to date (ticks skip the work while nobody watches), as a
                // delta every earlier client receives too.
                if self.dirty {
                    self.send_delta();
                }
                let _ = reply.send((rx, self.snapshot()));
            }
            Event::Snapshot(reply) => {
                let _ = reply.send(self.snapshot());
            }
            Event::Current(reply) => {
                let _ = reply.send(self.last_sent.clone());
            }
        }
    }

    fn start(&mut self, label: String, model: String, total: Option<u64>) {
        // A finished run's tiles stand, named, until the new run's first interval (a sweep's
        // points follow each other: the page shows the last point's figures, not blanks).
        let previous = match self.view.status {
            RunStatus::Finished | RunStatus::Partial => Some(PreviousRun {
                label: self.view.label.clone(),
                tiles: self.view.tiles.clone(),
            }),
            _ => self.view.previous.take(),
        };
        self.view = RunView::idle();
        self.view.previous = previous;
        self.view.label = label;
        self.view.model = model;
        self.view.status = RunStatus::Running;
        self.view.progress.total = total;
        self.acc = Accumulated::new();
        self.started = Some(Instant::now());
        self.dirty = true;
        // Clients rebuild from a snapshot: a new run is not a delta of the old one.
        self.seq += 1;
        let snapshot = ServerMessage::Snapshot {
            seq: self.seq,
            run: Box::new(self.view.clone()),
        };
        self.last_sent = self.view.clone();
        let _ = self.tx.send(to_text(&snapshot));
    }

    fn record(&mut self, r: &RequestRecord) {
        if r.success {
            self.view.progress.completed += 1;
            self.acc.output_tokens += r.output_tokens;
            r.ttft_ms.into_iter().for_each(|v| self.acc.ttft_ms.record(v));
            r.e2el_ms.into_iter().for_each(|v| self.acc.e2el_ms.record(v));
            r.itl_ms.iter().for_each(|v| self.acc.itl_ms.record(*v));
            r.tpot_ms().into_iter().for_each(|v| self.acc.tpot_ms.record(v));
            if let Some(spec) = &r.spec_decode_acceptance {
                self.acc.spec.push(spec);
            }
        } else {
            self.view.progress.failed += 1;
        }
        self.dirty = true;
    }

    fn elapsed_s(&self) -> f64 {
        self.started.map_or(0.0, |s| s.elapsed().as_secs_f64())
    }

    fn refresh(&mut self, elapsed_s: f64) {
        let acc = &self.acc;
        let view = &mut self.view;
        view.progress.elapsed_s = elapsed_s;
        view.ttft_ms = acc.ttft_ms.stats();
        view.itl_ms = acc.itl_ms.stats();
        view.tpot_ms = acc.tpot_ms.stats();
        view.e2el_ms = acc.e2el_ms.stats();
        view.distributions = Distributions {
            ttft_ms: acc.ttft_ms.bins(),
            itl_ms: acc.itl_ms.bins(),
            e2el_ms: acc.e2el_ms.bins(),
            acceptance_length: acc.spec.acceptance_length_bins(MAX_BINS),
        };
        view.per_request = acc.spec.summary();
        view.output_tokens_per_s = if elapsed_s > 0.0 {
            acc.output_tokens as f64 / elapsed_s
        } else {
            0.0
        };
        view.tiles = tiles(&acc.latest);
    }

    /// Send what changed since the last tick; without a dashboard watching, the run pays
    /// nothing for the views (they are rebuilt for the next client's snapshot).
    fn tick(&mut self) {
        if self.dirty && self.tx.receiver_count() > 0 && self.view.status == RunStatus::Running {
            self.send_delta();
        }
    }

    fn send_delta(&mut self) {
        if self.view.status == RunStatus::Running {
            self.refresh(self.elapsed_s());
        }
        let delta = self.view.delta_since(&self.last_sent);
        self.seq += 1;
        let message = ServerMessage::Delta {
            seq: self.seq,
            delta: Box::new(delta),
        };
        self.last_sent = self.view.clone();
        self.dirty = false;
        let _ = self.tx.send(to_text(&message));
    }

    fn finish(&mut self, view: RunView) {
        self.view = view;
        self.seq += 1;
        let message = ServerMessage::Finished {
            seq: self.seq,
            run: Box::new(self.view.clone()),
        };
        self.last_sent = self.view.clone();
        self.dirty = false;
        let _ = self.tx.send(to_text(&message));
    }

    fn snapshot(&self) -> Vec<Utf8Bytes> {
        let hello = ServerMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            speclens_version: env!("CARGO_PKG_VERSION").into(),
        };
        let run = Box::new(self.last_sent.clone());
        let snapshot = match self.last_sent.status {
            RunStatus::Finished | RunStatus::Partial => ServerMessage::Finished { seq: self.seq, run },
            _ => ServerMessage::Snapshot { seq: self.seq, run },
        };
        let mut messages = vec![to_text(&hello), to_text(&snapshot)];
        messages.extend(self.sweep.clone());
        if self.session_over {
            messages.push(to_text(&ServerMessage::SessionOver));
        }
        messages
    }
}

/// Headline tiles of a running run: the latest interval of each endpoint (the page labels them
/// so). The Prometheus path sees the same servers as the direct scrapes: it counts only when it
/// is the only source.
fn tiles(latest: &BTreeMap<(Source, String), TimelinePoint>) -> Tiles {
    let direct = latest.keys().any(|(source, _)| *source == Source::Direct);
    let counted = || {
        latest
            .iter()
            .filter(move |((source, _), _)| !direct || *source == Source::Direct)
            .map(|(_, p)| p)
    };
    let accepted: f64 = counted().map(|p| p.accepted_per_s).sum();
    let drafted: f64 = counted().map(|p| p.drafted_per_s).sum();
    let drafts: f64 = counted().map(|p| p.drafts_per_s).sum();
    if drafted <= 0.0 {
        return Tiles::default();
    }
    Tiles {
        acceptance_rate: acceptance_rate_pct(accepted, drafted),
        acceptance_length: acceptance_length(accepted, drafts),
        accepted_per_s: Some(accepted),
        drafted_per_s: Some(drafted),
        drafts_per_s: Some(drafts),
        draft_share: draft_share_pct(accepted, drafts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use speclens_shared::view::live_state::{Applied, LiveState};

    fn point(endpoint: &str, accepted: f64, drafted: f64, drafts: f64) -> TimelinePoint {
        TimelinePoint {
            endpoint: endpoint.into(),
            t_s: 1.0,
            interval_s: 1.0,
            accepted_per_s: accepted,
            drafted_per_s: drafted,
            drafts_per_s: drafts,
            acceptance_rate: None,
            acceptance_length: None,
            per_position: Default::default(),
            error: None,
        }
    }

    #[test]
    fn tiles_sum_the_latest_interval_of_each_endpoint() {
        let mut latest = BTreeMap::new();
        for p in [
            point("a", 1.0, 1.0, 1.0),
            point("a", 30.0, 60.0, 20.0),
            point("b", 10.0, 20.0, 5.0),
        ] {
            latest.insert((Source::Direct, p.endpoint.clone()), p);
        }
        latest.insert((Source::Prometheus, "prometheus/a".into()), point("x", 99.0, 99.0, 9.0));
        let t = tiles(&latest);
        assert_eq!(t.acceptance_rate, Some(50.0));
        assert_eq!(t.acceptance_length, Some(1.0 + 40.0 / 25.0));
        assert_eq!(
            t.draft_share,
            Some(40.0 / 65.0 * 100.0),
            "accepted / (accepted + drafts) of one interval"
        );
        assert_eq!(tiles(&BTreeMap::new()), Tiles::default(), "no traffic");
        let only_prometheus = BTreeMap::from([((Source::Prometheus, "p".to_string()), point("p", 3.0, 6.0, 2.0))]);
        assert_eq!(tiles(&only_prometheus).acceptance_rate, Some(50.0));
    }

    #[test]
    fn latency_histograms_keep_three_digits() {
        let mut l = Latency::new();
        (1..=1000).for_each(|v| l.record(f64::from(v)));
        let s = l.stats().unwrap();
        assert!(
            (s.mean - 500.5).abs() < 0.5 && (s.percentiles["99"] - 990.0).abs() < 1.0,
            "{s:?}"
        );
        assert_eq!(l.bins().unwrap().total(), 1000);
    }

    // Paused time: the hub's ticks come in order at virtual instants, however busy the machine.
    #[tokio::test(start_paused = true)]
    async fn clients_rebuild_the_run_from_snapshot_and_deltas() {
        let hub = LiveHub::new(8);
        hub.start_run("r", "m", Some(3)).await;
        let (mut rx, hello) = hub.join().await.unwrap();
        let mut client = LiveState::default();
        for text in hello {
            client.apply(serde_json::from_str(text.as_str()).unwrap());
        }
        hub.note_sent().await;
        hub.note_point(Source::Direct, point("a", 3.0, 6.0, 2.0)).await;
        tokio::time::sleep(TICK * 3).await;
        let mut saved = RunResult::new("9", "d", "r");
        saved.spec_decode_accepted_tokens = Some(90);
        saved.spec_decode_draft_tokens = Some(120);
        saved.spec_decode_num_drafts = Some(40);
        saved.spec_decode_acceptance_rate = Some(75.0);
        hub.finish(&saved).await;
        let current = hub.current().await;
        while let Ok(text) = rx.try_recv() {
            assert_ne!(
                client.apply(serde_json::from_str(text.as_str()).unwrap()),
                Applied::NeedSnapshot
            );
        }
        assert_eq!(client.run, current);
        assert_eq!(client.run.status, RunStatus::Finished);
        assert_eq!(client.run, run_view_from_result(&saved));
        assert_eq!(
            client.run.tiles.acceptance_rate,
            Some(75.0),
            "the finished run shows the saved whole-run figures, not the last interval's 50 %"
        );
        assert_eq!(client.run.tiles.draft_share, Some(90.0 / 130.0 * 100.0));

        // The next run (a sweep's next point) shows the finished run's tiles, named, until its
        // own first interval; then its own.
        hub.start_run("r2", "m", Some(3)).await;
        let next = hub.current().await;
        let rate = |t: &Tiles| t.acceptance_rate;
        assert_eq!(next.tiles.acceptance_rate, None);
        assert_eq!(next.tile_or_previous(rate), (Some(75.0), Some("r")));
        hub.note_point(Source::Direct, point("a", 3.0, 6.0, 2.0)).await;
        tokio::time::sleep(TICK * 3).await;
        let own = hub.current().await;
        assert_eq!(own.tile_or_previous(rate), (Some(50.0), None));
    }
}
