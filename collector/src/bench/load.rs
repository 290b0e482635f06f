//! The load phase: a dispatcher sends the prompts on schedule (concurrency limit, request rate
//! with Poisson/gamma/constant gaps, a count or a deadline), each request is timed by
//! [`client`](super::client), and one fold measures the responses as they finish, writes
//! `records.jsonl` and feeds the live hub. Ctrl-C stops sending and drains what is in flight
//! (bounded); what did not finish is recorded as cancelled.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Gamma};
use speclens_shared::run::record::{ErrorKind, RequestRecord, RunTally, UsageRecord};
use speclens_shared::run::steady::SteadyScan;
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::client::{self, exchange, Target};
use super::plan::{Arrival, Load, Stop};
use super::tokens::TokenCounter;
use super::workload::{Conversation, Feed};
use crate::error::CollectorError;
use crate::live::LiveHub;
use axum::body::Bytes;

/// Messages from the dispatcher and the request tasks to the fold.
enum Event {
    Sent(Pending),
    /// A request ended: its response as received, measured by the fold (not by the task).
    Done(Box<Finished>),
    /// A turn of a conversation ended, measured by its task (the next turn needs its answer).
    Measured(Box<(Pending, client::Exchange)>),
}

/// A request sent and not finished yet.
#[derive(Clone)]
struct Pending {
    id: u64,
    /// The turn of a multi-turn conversation (its turns share `id`).
    turn: Option<u32>,
    target: usize,
    category: Option<String>,
    /// The served name it asked for, when the run sends to several.
    model: Option<std::sync::Arc<str>>,
    start_ms: f64,
    /// When it was due (see [`RequestRecord::credit_ms`]).
    credit_ms: f64,
    /// When the exchange ended (set by the task that ran it).
    end_ms: Option<f64>,
    /// Input length known before sending (the server's usage replaces it).
    input_tokens: u64,
    max_tokens: Option<u64>,
}

/// A finished request before measuring.
struct Finished {
    sent: Pending,
    outcome: client::Outcome,
}

/// Gap before each request, in seconds (0 without a rate).
pub struct Schedule {
    rng: SmallRng,
    rate: Option<f64>,
    arrival: Arrival,
    burstiness: f64,
    /// A trace's send offsets (seconds from the first) and the next request's index.
    fixed: Option<(std::sync::Arc<[f64]>, usize)>,
}

impl Schedule {
    pub fn new(load: &Load, seed: u64, with_rate: bool) -> Schedule {
        Schedule {
            rng: SmallRng::seed_from_u64(seed ^ 0x5eed),
            rate: load.request_rate.filter(|_| with_rate),
            arrival: load.arrival,
            burstiness: load.burstiness,
            fixed: load.fixed_offsets_s.clone().filter(|_| with_rate).map(|o| (o, 0)),
        }
    }

    pub fn next_gap_s(&mut self) -> f64 {
        if let Some((offsets, next)) = &mut self.fixed {
            // The gap to the recorded offset: the sender adds gaps to the phase's start, so a
            // late send never delays the ones after it.
            let at = |i: usize| offsets.get(i).copied().unwrap_or(0.0);
            let gap = if *next == 0 {
                at(0)
            } else {
                (at(*next) - at(*next - 1)).max(0.0)
            };
            *next += 1;
            return gap;
        }
        let Some(rate) = self.rate.filter(|r| r.is_finite()) else {
            return 0.0;
        };
        match self.arrival {
            Arrival::Constant => 1.0 / rate,
            Arrival::Poisson if (self.burstiness - 1.0).abs() < 1e-12 => {
                Exp::new(rate).map_or(1.0 / rate, |d| d.sample(&mut self.rng))
            }
            Arrival::Poisson => Gamma::new(self.burstiness, 1.0 / (rate * self.burstiness))
                .map_or(1.0 / rate, |d| d.sample(&mut self.rng)),
        }
    }
}

/// What every request task of a run shares.
pub struct Shared {
    pub client: reqwest::Client,
    pub hub: LiveHub,
    pub tokens: TokenCounter,
    pub targets: Vec<Target>,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    /// When the latest response finished arriving: the run's end, whatever measuring of the
    /// received responses is still queued behind it.
    last_done: Mutex<Option<Instant>>,
}

impl Shared {
    pub fn new(client: reqwest::Client, hub: LiveHub, tokens: TokenCounter, targets: Vec<Target>) -> Shared {
        Shared {
            client,
            hub,
            tokens,
            targets,
            in_flight: AtomicU64::new(0),
            max_in_flight: AtomicU64::new(0),
            last_done: Mutex::new(None),
        }
    }

    fn note_done(&self, at: Instant) {
        let mut last = self.last_done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *last = Some(last.map_or(at, |l| l.max(at)));
    }

    pub fn last_done(&self) -> Option<Instant> {
        *self.last_done.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Most requests in flight at once so far.
    pub fn max_in_flight(&self) -> u64 {
        self.max_in_flight.load(Ordering::Acquire)
    }
}

/// One phase's requests: the warm-up or the measured window.
pub struct Phase {
    pub feed: Feed,
    /// Requests to send (a duration-bound window sends until its deadline instead).
    pub count: u64,
    /// Request id of the first prompt.
    pub first_id: u64,
    pub warmup: bool,
}

/// What one phase produced (its records went to the file and the tally).
pub struct PhaseOutcome {
    /// Stopped by Ctrl-C before every request finished.
    pub partial: bool,
}

/// Events (sends and finished responses) waiting for the fold at most: when measuring and
/// writing records falls this far behind, sending waits for it, so a client that cannot keep
/// up shows as a slower run, not as memory that grows with the run.
const EVENTS_AHEAD: usize = 4096;

/// Events the fold takes from its channel at once, at most.
const FOLD_BATCH: usize = 64;

/// Everything a phase runs with; the same for the warm-up and the window.
pub struct Runner<'a> {
    pub shared: &'a Arc<Shared>,
    pub load: &'a Load,
    pub seed: u64,
    /// The run's clock: `start_ms` of every record counts from here.
    pub started: Instant,
    pub records_out: &'a mut RecordSink,
    /// Where every finished record is folded.
    pub tally: &'a mut RunTally,
    /// A closed loop's steady-window scan, fed every record as it is folded.
    pub steady: Option<&'a mut SteadyScan>,
    pub progress: &'a ProgressBar,
    pub cancel: &'a mut watch::Receiver<bool>,
}

impl Runner<'_> {
    /// Send the phase's prompts, write and fold their records; stops early on cancel.
    pub async fn run(&mut self, phase: Phase) -> Result<PhaseOutcome, CollectorError> {
        let (tx, mut rx) = mpsc::channel::<Event>(EVENTS_AHEAD);
        let dispatch = tokio::spawn(dispatch(self.dispatch_plan(&phase), tx, self.cancel.clone()));
        let mut pending: HashMap<(u64, u32), Pending> = HashMap::new();
        let mut partial = false;
        let mut drain_deadline: Option<Instant> = None;
        // Events that queued while the fold worked are taken together: one wake and one
        // select for the lot, not one each.
        let mut batch: Vec<Event> = Vec::with_capacity(FOLD_BATCH);
        loop {
            let taken = match drain_deadline {
                // Draining: until the deadline, or a second signal.
                Some(deadline) => tokio::select! {
                    n = tokio::time::timeout_at(deadline, rx.recv_many(&mut batch, FOLD_BATCH)) => match n {
                        Ok(n) => n,
                        Err(_) => break,
                    },
                    _ = self.cancel.changed() => break,
                },
                None => tokio::select! {
                    n = rx.recv_many(&mut batch, FOLD_BATCH) => n,
                    _ = self.cancel.changed() => {
                        partial = true;
                        drain_deadline = Some(Instant::now() + self.load.drain);
                        continue;
                    }
                },
            };
            if taken == 0 {
                break;
            }
            for event in batch.drain(..) {
                self.fold(event, &mut pending, phase.warmup).await?;
            }
        }
        // Abandon what did not finish in the drain window (only after Ctrl-C).
        if let Ok(mut tasks) = dispatch.await {
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
        while let Ok(event) = rx.try_recv() {
            self.fold(event, &mut pending, phase.warmup).await?;
        }
        self.abandon(pending, phase.warmup)?;
        Ok(PhaseOutcome { partial })
    }

    fn dispatch_plan(&self, phase: &Phase) -> Dispatch {
        let deadline = match (phase.warmup, self.load.stop) {
            (false, Stop::Until(d)) => Some(d),
            _ => None,
        };
        Dispatch {
            shared: self.shared.clone(),
            feed: phase.feed.clone(),
            count: phase.count,
            first_id: phase.first_id,
            schedule: Schedule::new(self.load, self.seed, !phase.warmup),
            limit: Arc::new(Semaphore::new(
                self.load.concurrency.map_or(Semaphore::MAX_PERMITS, |c| c as usize),
            )),
            deadline,
            started: self.started,
        }
    }

    /// Record as cancelled what was sent and never finished.
    fn abandon(&mut self, pending: HashMap<(u64, u32), Pending>, warmup: bool) -> Result<(), CollectorError> {
        let mut abandoned: Vec<Pending> = pending.into_values().collect();
        abandoned.sort_by_key(|p| (p.id, p.turn));
        let now_ms = ms_after(self.started, Instant::now());
        for mut sent in abandoned {
            sent.end_ms = Some(now_ms);
            let ex = client::Exchange {
                error: Some((ErrorKind::Cancelled, "stopped by the user before it finished".into())),
                ..client::Exchange::default()
            };
            let record = to_record(
                &sent,
                &self.shared.targets[sent.target],
                warmup,
                ex,
                &self.shared.tokens,
            );
            self.records_out.write(&record);
            self.push(&record);
        }
        Ok(())
    }

    /// Fold one event: remember a send, or measure, write and fold a finished record (the
    /// live hub sees the measured window only).
    async fn fold(
        &mut self,
        event: Event,
        pending: &mut HashMap<(u64, u32), Pending>,
        warmup: bool,
    ) -> Result<(), CollectorError> {
        let (sent, ex) = match event {
            Event::Sent(sent) => {
                if !warmup {
                    self.shared.hub.note_sent().await;
                }
                // A conversation's later turn is one more request than the bar was told of.
                if sent.turn.is_some_and(|t| t > 0) {
                    self.progress.inc_length(1);
                }
                pending.insert((sent.id, sent.turn.unwrap_or(0)), sent);
                return Ok(());
            }
            Event::Done(finished) => {
                let Finished { sent, outcome } = *finished;
                let ex = client::measure(&self.shared.targets[sent.target], outcome);
                (sent, ex)
            }
            Event::Measured(measured) => *measured,
        };
        let target = &self.shared.targets[sent.target];
        let record = to_record(&sent, target, warmup, ex, &self.shared.tokens);
        pending.remove(&(sent.id, sent.turn.unwrap_or(0)));
        self.records_out.write(&record);
        if !warmup {
            self.shared.hub.note_record(&record).await;
        }
        self.progress.inc(1);
        self.push(&record);
        Ok(())
    }

    fn push(&mut self, record: &RequestRecord) {
        self.tally.push(record);
        if let Some(scan) = self.steady.as_deref_mut() {
            scan.observe(record);
        }
    }
}

/// What the dispatcher task owns.
struct Dispatch {
    shared: Arc<Shared>,
    feed: Feed,
    count: u64,
    first_id: u64,
    schedule: Schedule,
    limit: Arc<Semaphore>,
    /// The window ends here (a duration-bound run), else after every prompt once.
    deadline: Option<Duration>,
    started: Instant,
}

/// Send every request of the phase on schedule (or until the deadline), one task each; returns
/// the tasks still running when it stops.
async fn dispatch(mut d: Dispatch, tx: mpsc::Sender<Event>, mut cancel: watch::Receiver<bool>) -> JoinSet<()> {
    let phase_start = Instant::now();
    let mut tasks = JoinSet::new();
    let count = if d.deadline.is_some() { u64::MAX } else { d.count };
    // Duration-bound runs stop at the deadline, by schedule and by the clock (a run without a
    // rate has every send scheduled at the start).
    let ended = |at: Instant| d.deadline.is_some_and(|limit| at > phase_start + limit);
    let mut next_at = phase_start;
    for i in 0..count {
        if *cancel.borrow() {
            break;
        }
        next_at += Duration::try_from_secs_f64(d.schedule.next_gap_s()).unwrap_or(Duration::MAX / 4);
        if ended(next_at) || ended(Instant::now()) {
            break;
        }
        // Finished tasks leave the set as the run goes, so long runs do not grow it.
        while tasks.try_join_next().is_some() {}
        tokio::select! {
            _ = tokio::time::sleep_until(next_at) => {}
            _ = cancel.changed() => break,
        }
        let permit = tokio::select! {
            p = d.limit.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = cancel.changed() => break,
        };
        if *cancel.borrow() || ended(Instant::now()) {
            break;
        }
        // Due now: its scheduled time came and a slot is free (AIPerf stamps its credit here).
        let due = Instant::now();
        let Some(ready) = d.feed.get(i).await else { break };
        // A slot for the send's event first: the fold may be behind (the channel full), and
        // the send is stamped once nothing but the request itself stands before it; a stop
        // must not wait for the fold.
        let slot = tokio::select! {
            slot = tx.reserve() => match slot { Ok(slot) => slot, Err(_) => break },
            _ = cancel.wait_for(|stop| *stop) => break,
        };
        let id = d.first_id + i;
        let sent = Pending {
            id,
            turn: ready.conversation.is_some().then_some(0),
            target: (id % d.shared.targets.len() as u64) as usize,
            category: ready.category.clone(),
            model: ready.model.clone(),
            start_ms: ms_after(d.started, Instant::now()),
            credit_ms: ms_after(d.started, due),
            end_ms: None,
            input_tokens: ready.input_tokens,
            max_tokens: ready.max_tokens,
        };
        let task_sent = Pending {
            category: ready.category,
            model: ready.model,
            ..sent
        };
        slot.send(Event::Sent(sent));
        let (body, shared, tx) = (ready.body, d.shared.clone(), tx.clone());
        let (conversation, stop, started) = (ready.conversation, cancel.clone(), d.started);
        tasks.spawn(async move {
            let now = shared.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
            shared.max_in_flight.fetch_max(now, Ordering::AcqRel);
            if let Some(conversation) = conversation {
                converse(&shared, &conversation, task_sent, body, &tx, &stop, started).await;
                shared.in_flight.fetch_sub(1, Ordering::AcqRel);
                drop(permit);
                return;
            }
            let outcome = exchange(&shared.client, &shared.targets[task_sent.target], body).await;
            // The response's arrival, not when this task is next scheduled: on a busy machine
            // the two are far apart, and the run's duration ends here.
            let ended = outcome.as_ref().map_or_else(|_| Instant::now(), |r| r.last_arrival());
            shared.note_done(ended);
            shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            drop(permit);
            let sent = Pending {
                end_ms: Some(ms_after(started, ended)),
                ..task_sent
            };
            let _ = tx.send(Event::Done(Box::new(Finished { sent, outcome }))).await;
        });
    }
    tasks
}

/// Send a conversation's turns one after another in its slot, each with the earlier turns and
/// their answers (measured here: the next turn needs the answer's text). A failed turn ends the
/// conversation, and so does a stop: the turns not sent are not recorded.
async fn converse(
    shared: &Shared,
    conversation: &Conversation,
    first: Pending,
    first_body: Bytes,
    tx: &mpsc::Sender<Event>,
    stop: &watch::Receiver<bool>,
    started: Instant,
) {
    let target = &shared.targets[first.target];
    let mut answers: Vec<String> = Vec::with_capacity(conversation.user_turns.len());
    let (mut sent, mut body) = (first, first_body);
    for turn in 0..conversation.user_turns.len() {
        if turn > 0 {
            if *stop.borrow() {
                return;
            }
            body = conversation.body(turn, &answers);
            // A later turn is due when the answer before it came.
            let now_ms = ms_after(started, Instant::now());
            sent = Pending {
                turn: Some(turn as u32),
                input_tokens: conversation.input_tokens(turn, &answers, &shared.tokens),
                start_ms: now_ms,
                credit_ms: now_ms,
                end_ms: None,
                ..sent
            };
            if tx.send(Event::Sent(sent.clone())).await.is_err() {
                return;
            }
        }
        let outcome = exchange(&shared.client, target, body.clone()).await;
        let ended = outcome.as_ref().map_or_else(|_| Instant::now(), |r| r.last_arrival());
        shared.note_done(ended);
        sent.end_ms = Some(ms_after(started, ended));
        let ex = client::measure(target, outcome);
        let failed = ex.error.is_some();
        answers.push(ex.generated_text.clone());
        if tx.send(Event::Measured(Box::new((sent.clone(), ex)))).await.is_err() || failed {
            return;
        }
    }
}

/// Milliseconds from `started` to `at`, on the records' clock.
pub fn ms_after(started: Instant, at: Instant) -> f64 {
    at.saturating_duration_since(started).as_secs_f64() * 1e3
}

/// `records.jsonl` as the run writes it. A write that fails (a full disk) is remembered and ends
/// the writing, not the run: every record is still folded into the figures in memory, and the
/// end of the run says what the file holds.
pub struct RecordSink {
    path: PathBuf,
    out: Option<BufWriter<std::fs::File>>,
    failure: Option<String>,
    /// Records handed to the sink, written or not.
    offered: u64,
}

/// What the records file holds when the sink could not write all of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordsCut {
    /// Why writing stopped, with the file's path.
    pub why: String,
    /// Complete records in the file.
    pub complete: u64,
    /// Records the run produced.
    pub total: u64,
}

impl RecordSink {
    pub fn create(path: &Path) -> Result<RecordSink, CollectorError> {
        let file = crate::results_folder::write::create_fresh(path)
            .map_err(|e| CollectorError::Output(format!("cannot write {}: {e}", path.display())))?;
        Ok(RecordSink {
            path: path.to_path_buf(),
            out: Some(BufWriter::new(file)),
            failure: None,
            offered: 0,
        })
    }

    fn write(&mut self, record: &RequestRecord) {
        self.offered += 1;
        let Some(out) = self.out.as_mut() else { return };
        let written = serde_json::to_writer(&mut *out, record)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"));
        if let Err(e) = written {
            if let Some(out) = self.out.take() {
                self.fail(out, e);
            }
        }
    }

    /// Stop writing after `e`. The writer's buffer is let go unwritten (dropping it would try
    /// to flush it again).
    fn fail(&mut self, out: BufWriter<std::fs::File>, e: std::io::Error) {
        let _ = out.into_parts();
        let why = format!("cannot write {}: {e}", self.path.display());
        eprintln!("speclens: {why}; the run goes on and keeps its figures in memory");
        self.failure = Some(why);
    }

    /// Flush what is buffered; `Some` when the file does not hold every record. A cut file is
    /// shortened to its complete lines, so every line of it is a record.
    pub fn finish(mut self) -> Option<RecordsCut> {
        if let Some(mut out) = self.out.take() {
            if let Err(e) = out.flush() {
                self.fail(out, e);
            }
        }
        let why = self.failure?;
        let complete = match keep_complete_lines(&self.path) {
            Ok(lines) => lines,
            Err(e) => {
                eprintln!(
                    "speclens: cannot shorten {} to its complete records: {e}",
                    self.path.display()
                );
                0
            }
        };
        Some(RecordsCut {
            why,
            complete,
            total: self.offered,
        })
    }
}

/// Cut a file after its last newline (a line the disk cut short is dropped; shortening needs no
/// free space) and count its lines, reading it in blocks.
fn keep_complete_lines(path: &Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut file = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
    let mut block = vec![0u8; 64 * 1024];
    let (mut offset, mut lines, mut end_of_last_line) = (0u64, 0u64, 0u64);
    loop {
        let n = file.read(&mut block)?;
        if n == 0 {
            break;
        }
        for (i, byte) in block[..n].iter().enumerate() {
            if *byte == b'\n' {
                lines += 1;
                end_of_last_line = offset + i as u64 + 1;
            }
        }
        offset += n as u64;
    }
    if end_of_last_line < offset {
        file.set_len(end_of_last_line)?;
    }
    Ok(lines)
}

/// The record of one request from what its exchange measured.
fn to_record(
    sent: &Pending,
    target: &Target,
    warmup: bool,
    ex: client::Exchange,
    tokens: &TokenCounter,
) -> RequestRecord {
    let success = ex.error.is_none();
    let (error_kind, error) = match ex.error {
        Some((k, m)) => (Some(k), Some(m)),
        None => (None, None),
    };
    // The server's usage wins; without it, the tokenizer counts the text. With it, the
    // tokenizer's count stays beside it (AIPerf's usage discrepancy).
    let reported = ex.prompt_tokens.is_some() || ex.completion_tokens.is_some() || ex.total_tokens.is_some();
    let counted = success.then(|| tokens.count(&ex.generated_text));
    let output_tokens = match (success, ex.completion_tokens) {
        (false, _) => 0,
        (true, Some(t)) => t,
        (true, None) => counted.unwrap_or(0),
    };
    let usage = (success && reported).then(|| UsageRecord {
        prompt_tokens: ex.prompt_tokens,
        completion_tokens: ex.completion_tokens,
        total_tokens: ex.total_tokens,
        client_prompt_tokens: sent.input_tokens,
        client_completion_tokens: counted.unwrap_or(0),
    });
    let spec_decode_acceptance = ex.spec.map(|mut r| {
        r.completion_tokens = r.completion_tokens.or(ex.completion_tokens);
        r
    });
    RequestRecord {
        request_id: sent.id,
        turn: sent.turn,
        url: target.display_url.clone(),
        category: sent.category.clone(),
        model: sent.model.as_deref().map(str::to_string),
        warmup,
        start_ms: sent.start_ms,
        success,
        ttft_ms: ex.ttft_ms.filter(|_| success),
        e2el_ms: ex.e2el_ms,
        itl_ms: if success { ex.itl_ms } else { Vec::new() },
        chunk_tokens: if success { ex.chunk_tokens } else { Vec::new() },
        input_tokens: ex.prompt_tokens.unwrap_or(sent.input_tokens),
        output_tokens,
        error_kind,
        error,
        spec_decode_acceptance,
        spec_decode_partial: ex.spec_partial,
        spec_decode_rejected: ex.spec_rejected,
        usage,
        server_timings: ex.server.filter(|_| success),
        credit_ms: Some(sent.credit_ms),
        end_ms: sent.end_ms,
        max_tokens: sent.max_tokens,
        http: ex.http.filter(|_| success),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_records_file_keeps_its_complete_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records");
        // Two records and a third cut inside a multi-byte character, across a block boundary.
        let long = "x".repeat(70_000);
        let text = format!("{{\"a\":1}}\n{{\"b\":\"{long}\"}}\n{{\"c\":\"é");
        let bytes = text.as_bytes();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert_eq!(keep_complete_lines(&path).unwrap(), 2);
        let kept = std::fs::read_to_string(&path).unwrap();
        assert!(
            kept.ends_with("\"}\n") && kept.len() == 8 + 9 + long.len(),
            "{}",
            kept.len()
        );
        // A whole file is left as it is.
        assert_eq!(keep_complete_lines(&path).unwrap(), 2);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), kept);
    }

    fn gaps(arrival: Arrival, burstiness: f64) -> Vec<f64> {
        let load = Load {
            request_rate: Some(10.0),
            arrival,
            burstiness,
            ..Load::closed_loop(None, 1)
        };
        let mut s = Schedule::new(&load, 3, true);
        (0..20_000).map(|_| s.next_gap_s()).collect()
    }

    fn mean_and_cv(v: &[f64]) -> (f64, f64) {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn arrivals_have_the_asked_rate_and_shape() {
        let (mean, cv) = mean_and_cv(&gaps(Arrival::Poisson, 1.0));
        assert!(
            (mean - 0.1).abs() < 0.003 && (cv - 1.0).abs() < 0.03,
            "Poisson: mean {mean}, cv {cv}"
        );
        // Gamma with shape b has a coefficient of variation of 1/sqrt(b).
        let (mean, cv) = mean_and_cv(&gaps(Arrival::Poisson, 0.25));
        assert!(
            (mean - 0.1).abs() < 0.005 && (cv - 2.0).abs() < 0.1,
            "bursty: mean {mean}, cv {cv}"
        );
        assert!(gaps(Arrival::Constant, 1.0).iter().all(|g| (*g - 0.1).abs() < 1e-12));
        let mut unlimited = Schedule::new(&Load::closed_loop(None, 1), 1, true);
        assert_eq!(unlimited.next_gap_s(), 0.0);
    }
}
