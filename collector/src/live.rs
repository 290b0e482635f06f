//! The live hub between a running benchmark and its dashboards. The run folds its records and
//! scrape points into the hub (cheap appends); a ticker turns the state into one delta a few
//! times per second, serialised once and broadcast to every WebSocket client. A client that
//! connects, reconnects or lags gets a fresh snapshot instead of an unbounded queue.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;

use speclens_shared::aggregate::SpecAggregator;
use speclens_shared::notices::Notices;
use speclens_shared::protocol::{
    Distributions, RunStatus, RunView, ServerMessage, Tiles, TimelinePoint, PROTOCOL_VERSION,
};
use speclens_shared::run::{LatencyStats, RequestRecord};
use tokio::sync::broadcast;

/// How often deltas go out.
pub const TICK: Duration = Duration::from_millis(250);

/// Raw accumulations the views are computed from.
#[derive(Default)]
struct Accumulated {
    ttft_ms: Vec<f64>,
    itl_ms: Vec<f64>,
    e2el_ms: Vec<f64>,
    output_tokens: u64,
    spec: SpecAggregator,
}

struct HubState {
    view: RunView,
    acc: Accumulated,
    seq: u64,
    last_sent: RunView,
    dirty: bool,
}

/// Shared between the run, the ticker and the WebSocket handlers.
pub struct LiveHub {
    state: Mutex<HubState>,
    tx: broadcast::Sender<Utf8Bytes>,
}

/// One serialisation per message, shared by every client (`Utf8Bytes` clones are cheap).
fn to_text(message: &ServerMessage) -> Utf8Bytes {
    Utf8Bytes::from(serde_json::to_string(message).unwrap_or_else(|_| "{}".into()))
}

impl LiveHub {
    /// An idle hub; `capacity` bounds each client's queue (a slower client gets a snapshot).
    pub fn new(capacity: usize) -> Arc<LiveHub> {
        let (tx, _) = broadcast::channel(capacity.max(2));
        Arc::new(LiveHub {
            state: Mutex::new(HubState {
                view: RunView::idle(),
                acc: Accumulated::default(),
                seq: 0,
                last_sent: RunView::idle(),
                dirty: false,
            }),
            tx,
        })
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new run begins: everything from the previous one is dropped.
    pub fn start_run(&self, label: &str, model: &str, total: Option<u64>) {
        let mut s = self.lock();
        s.view = RunView::idle();
        s.view.label = label.to_string();
        s.view.model = model.to_string();
        s.view.status = RunStatus::Running;
        s.view.progress.total = total;
        s.acc = Accumulated::default();
        s.dirty = true;
        // Clients rebuild from a snapshot: a new run is not a delta of the old one.
        s.seq += 1;
        let snapshot = ServerMessage::Snapshot {
            seq: s.seq,
            run: Box::new(s.view.clone()),
        };
        s.last_sent = s.view.clone();
        let _ = self.tx.send(to_text(&snapshot));
    }

    pub fn note_sent(&self) {
        let mut s = self.lock();
        s.view.progress.sent += 1;
        s.dirty = true;
    }

    /// Fold one finished request of the measured window.
    pub fn note_record(&self, r: &RequestRecord) {
        let mut s = self.lock();
        if r.success {
            s.view.progress.completed += 1;
            s.acc.output_tokens += r.output_tokens;
            s.acc.ttft_ms.extend(r.ttft_ms);
            s.acc.e2el_ms.extend(r.e2el_ms);
            s.acc.itl_ms.extend_from_slice(&r.itl_ms);
            if let Some(spec) = &r.spec_decode_acceptance {
                s.acc.spec.push(spec);
            }
        } else {
            s.view.progress.failed += 1;
        }
        s.dirty = true;
    }

    /// Append one live-scrape point; the tiles follow the latest interval of every endpoint.
    pub fn note_point(&self, p: TimelinePoint) {
        let mut s = self.lock();
        s.view.timeline.push(p);
        s.dirty = true;
    }

    /// Why a path has no data, and what the finished run noticed about its paths.
    pub fn set_findings(&self, not_available: Vec<String>, notices: &Notices) {
        let mut s = self.lock();
        s.view.not_available = not_available;
        s.view.notices = notices.messages.clone();
        s.view.mean_draft_tokens = notices.draft_length.map(|d| d.mean_draft_tokens);
        s.dirty = true;
    }

    fn refresh(s: &mut HubState, elapsed_s: f64) {
        s.view.progress.elapsed_s = elapsed_s;
        s.view.ttft_ms = LatencyStats::from_values(s.acc.ttft_ms.clone(), &[99.0]);
        s.view.itl_ms = LatencyStats::from_values(s.acc.itl_ms.clone(), &[99.0]);
        s.view.e2el_ms = LatencyStats::from_values(s.acc.e2el_ms.clone(), &[99.0]);
        let acc = &s.acc;
        s.view.distributions = Distributions::from_values(&acc.ttft_ms, &acc.itl_ms, &acc.e2el_ms, &acc.spec);
        s.view.per_request = s.acc.spec.summary();
        s.view.output_tokens_per_s = if elapsed_s > 0.0 {
            s.acc.output_tokens as f64 / elapsed_s
        } else {
            0.0
        };
        s.view.tiles = tiles(&s.view.timeline, s.view.output_tokens_per_s);
    }

    /// Send what changed since the last tick (nothing when nothing changed).
    pub fn tick(&self, elapsed_s: f64) {
        // Without a dashboard watching, the run pays nothing for the views (they are rebuilt
        // in full for the next client's snapshot).
        if self.tx.receiver_count() == 0 {
            return;
        }
        let mut s = self.lock();
        if s.dirty {
            self.send_delta(&mut s, elapsed_s);
        }
    }

    fn send_delta(&self, s: &mut HubState, elapsed_s: f64) {
        Self::refresh(s, elapsed_s);
        let delta = s.view.delta_since(&s.last_sent);
        s.seq += 1;
        let message = ServerMessage::Delta {
            seq: s.seq,
            delta: Box::new(delta),
        };
        s.last_sent = s.view.clone();
        s.dirty = false;
        let _ = self.tx.send(to_text(&message));
    }

    /// The run ended (`partial` when stopped early).
    pub fn finish(&self, elapsed_s: f64, partial: bool) {
        let mut s = self.lock();
        Self::refresh(&mut s, elapsed_s);
        s.view.status = if partial {
            RunStatus::Partial
        } else {
            RunStatus::Finished
        };
        s.seq += 1;
        let message = ServerMessage::Finished {
            seq: s.seq,
            run: Box::new(s.view.clone()),
        };
        s.last_sent = s.view.clone();
        s.dirty = false;
        let _ = self.tx.send(to_text(&message));
    }

    /// Subscribe, then the hello and snapshot a new client starts from.
    pub fn join(&self, elapsed_s: Option<f64>) -> (broadcast::Receiver<Utf8Bytes>, Vec<Utf8Bytes>) {
        let rx = self.tx.subscribe();
        {
            // Bring the views up to date (ticks skip the work while nobody watches), as a
            // delta every earlier client receives too.
            let mut s = self.lock();
            if s.dirty {
                let elapsed = elapsed_s.unwrap_or(s.view.progress.elapsed_s);
                self.send_delta(&mut s, elapsed);
            }
        }
        (rx, self.snapshot())
    }

    /// Hello + a snapshot of the last state sent (its sequence number included).
    pub fn snapshot(&self) -> Vec<Utf8Bytes> {
        let s = self.lock();
        let hello = ServerMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            speclens_version: env!("CARGO_PKG_VERSION").into(),
        };
        let run = Box::new(s.last_sent.clone());
        let snapshot = match s.last_sent.status {
            RunStatus::Finished | RunStatus::Partial => ServerMessage::Finished { seq: s.seq, run },
            _ => ServerMessage::Snapshot { seq: s.seq, run },
        };
        vec![to_text(&hello), to_text(&snapshot)]
    }

    /// The view as the clients last received it.
    pub fn current(&self) -> RunView {
        self.lock().last_sent.clone()
    }
}

/// Headline tiles from the latest interval of each endpoint.
fn tiles(timeline: &[TimelinePoint], output_tokens_per_s: f64) -> Tiles {
    let mut latest: Vec<&TimelinePoint> = Vec::new();
    for p in timeline.iter().rev() {
        if p.error.is_none() && !latest.iter().any(|q| q.endpoint == p.endpoint) {
            latest.push(p);
        }
    }
    // The Prometheus path sees the same servers as the direct scrapes: count it only alone.
    let from_prometheus = |p: &&TimelinePoint| p.endpoint.starts_with(crate::bench::prometheus::LABEL);
    if latest.iter().any(|p| !from_prometheus(p)) {
        latest.retain(|p| !from_prometheus(p));
    }
    let accepted: f64 = latest.iter().map(|p| p.accepted_per_s).sum();
    let drafted: f64 = latest.iter().map(|p| p.drafted_per_s).sum();
    let drafts: f64 = latest.iter().map(|p| p.drafts_per_s).sum();
    if drafted <= 0.0 {
        return Tiles::default();
    }
    Tiles {
        acceptance_rate: Some(accepted / drafted * 100.0),
        acceptance_length: (drafts > 0.0).then(|| 1.0 + accepted / drafts),
        accepted_per_s: Some(accepted),
        drafted_per_s: Some(drafted),
        drafts_per_s: Some(drafts),
        draft_share: (output_tokens_per_s > 0.0).then(|| (accepted / output_tokens_per_s * 100.0).min(100.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use speclens_shared::protocol::{Applied, LiveState};

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
        let t = tiles(
            &[
                point("a", 1.0, 1.0, 1.0),
                point("a", 30.0, 60.0, 20.0),
                point("b", 10.0, 20.0, 5.0),
            ],
            80.0,
        );
        assert_eq!(t.acceptance_rate, Some(50.0));
        assert_eq!(t.acceptance_length, Some(1.0 + 40.0 / 25.0));
        assert_eq!(t.draft_share, Some(50.0));
        assert_eq!(tiles(&[], 10.0), Tiles::default(), "no traffic");
    }

    #[test]
    fn clients_rebuild_the_run_from_snapshot_and_deltas() {
        let hub = LiveHub::new(8);
        hub.start_run("r", "m", Some(3));
        let (mut rx, hello) = hub.join(None);
        let mut client = LiveState::default();
        for text in hello {
            client.apply(serde_json::from_str(text.as_str()).unwrap());
        }
        hub.note_sent();
        hub.note_point(point("a", 3.0, 6.0, 2.0));
        hub.tick(1.0);
        hub.tick(1.5); // nothing changed: nothing sent
        hub.finish(2.0, false);
        while let Ok(text) = rx.try_recv() {
            assert_ne!(
                client.apply(serde_json::from_str(text.as_str()).unwrap()),
                Applied::NeedSnapshot
            );
        }
        assert_eq!(client.run, hub.current());
        assert_eq!(client.run.status, RunStatus::Finished);
        assert_eq!(client.run.timeline.len(), 1);
    }
}
