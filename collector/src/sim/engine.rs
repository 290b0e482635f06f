//! The simulated engine: continuous batching with speculative decoding. One scheduler task per
//! engine (data-parallel rank) advances every running sequence one step per iteration; each
//! decode step proposes k drafts, accepts j of them by the configured acceptance profile and
//! emits j + 1 tokens. The Prometheus counters and each request's own stats are updated from
//! the same events, so their sums agree exactly. Step time follows the roofline model of
//! docs/MODEL.md, scaled by `time_scale` (0 = no delay).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::prefix_cache::PrefixCache;

/// Per-position acceptance: the conditional probability that draft i is accepted given that
/// drafts 0..i were.
#[derive(Debug, Clone, PartialEq)]
pub struct AcceptanceProfile {
    conditional: Vec<f64>,
}

impl AcceptanceProfile {
    /// From unconditional per-position rates p_0 ≥ p_1 ≥ … (as vLLM's per-position counters
    /// report them and its synthetic acceptance option takes them).
    pub fn from_rates(rates: &[f64]) -> Result<AcceptanceProfile, String> {
        let mut conditional = Vec::with_capacity(rates.len());
        let mut prev = 1.0;
        for (i, &p) in rates.iter().enumerate() {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!(
                    "acceptance rate at position {} must be in [0, 1], got {p}",
                    i + 1
                ));
            }
            if p > prev + 1e-12 {
                return Err(format!(
                    "per-position acceptance rates cannot increase (position {} has {p} after {prev}): a draft is accepted only if all earlier ones were",
                    i + 1
                ));
            }
            conditional.push(if prev > 0.0 { (p / prev).min(1.0) } else { 0.0 });
            prev = p;
        }
        Ok(AcceptanceProfile { conditional })
    }

    /// No speculation (k = 0).
    pub fn none() -> AcceptanceProfile {
        AcceptanceProfile {
            conditional: Vec::new(),
        }
    }

    /// Geometric: every draft accepted with probability α given the earlier ones were.
    pub fn geometric(alpha: f64, k: u32) -> Result<AcceptanceProfile, String> {
        if !(0.0..=1.0).contains(&alpha) {
            return Err(format!("α must be in [0, 1], got {alpha}"));
        }
        Ok(AcceptanceProfile {
            conditional: vec![alpha; k as usize],
        })
    }

    /// Unconditional per-position rates this profile implies.
    pub fn rates(&self) -> Vec<f64> {
        let mut p = 1.0;
        self.conditional
            .iter()
            .map(|q| {
                p *= q;
                p
            })
            .collect()
    }

    /// Number of drafts (k).
    pub fn k(&self) -> u32 {
        self.conditional.len() as u32
    }

    /// The profile with every conditional rate scaled by `factor` (capped at 1).
    pub fn scaled(&self, factor: f64) -> AcceptanceProfile {
        AcceptanceProfile {
            conditional: self.conditional.iter().map(|q| (q * factor).clamp(0.0, 1.0)).collect(),
        }
    }

    /// Draw how many of the first `k` drafts one step accepts, each conditional rate scaled by
    /// `factor` (the decay with context; 1 without).
    fn sample(&self, k: u32, factor: f64, rng: &mut SmallRng) -> u32 {
        let mut j = 0;
        for q in self.conditional.iter().take(k as usize) {
            if rng.random::<f64>() < (q * factor).min(1.0) {
                j += 1;
            } else {
                break;
            }
        }
        j
    }
}

/// Step time under the roofline model: bandwidth-bound until the step's token positions pass
/// the ridge, plus the proposer's cost c per draft step and extra per-draft costs the model
/// does not charge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepModel {
    /// A decode step's time at small batch (bandwidth-bound), in seconds.
    pub base_step_s: f64,
    /// Roofline ridge T* in token positions.
    pub ridge_tokens: f64,
    /// Draft cost fraction c of a target step, per draft token.
    pub draft_cost: f64,
    /// Extra time per draft token per sequence (KV slots, sampler sort…), in seconds.
    pub draft_overhead_s: f64,
    /// KV bytes per context token ÷ weight bytes: what reading the decoding sequences' KV cache
    /// adds to a step, in bandwidth-bound steps per token held (0: the KV read is free).
    pub kv_ratio: f64,
    /// The share of the target's KV a draft pass reads (the drafter's own cache).
    pub draft_kv_share: f64,
}

impl StepModel {
    /// Seconds for one step with `decode_seqs` decoding sequences proposing `k` drafts each,
    /// holding `kv_tokens` tokens of context between them, and `prefill_tokens` prompt tokens
    /// being prefilled: the roofline of docs/MODEL.md with the KV read ("Break-even in batch
    /// and context"), a plain and a verify step reading the same KV.
    pub fn step_seconds(&self, decode_seqs: usize, k: u32, prefill_tokens: u64, kv_tokens: u64) -> f64 {
        let b = decode_seqs as f64;
        let kf = f64::from(k);
        let t = self.ridge_tokens;
        let kv = kv_tokens as f64 * self.kv_ratio;
        let positions = b * (kf + 1.0) + prefill_tokens as f64;
        let plain = (b + prefill_tokens as f64) / t;
        let target = (positions / t).max(1.0 + kv);
        let c = self.draft_cost;
        let draft = kf * (c + self.draft_kv_share * kv).max(c * plain);
        self.base_step_s * (target + draft) + self.draft_overhead_s * b * kf
    }
}

/// A request's own spec-decode stats, built from the same events as the counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeqStats {
    pub steps: u64,
    pub accepted: u64,
    pub drafted: u64,
    /// Dense, index j = steps that accepted exactly j (length k + 1).
    pub histogram: Vec<u64>,
    pub per_step_accepted: Vec<u64>,
    pub per_step_drafted: Vec<u64>,
    /// The engine's own timings of the sequence (vLLM 0.33's per-request metrics), in ms: from
    /// its submission to its admission into the batch, to its first token, and from its first
    /// token to its last.
    pub queue_ms: f64,
    pub ttft_ms: f64,
    pub generation_ms: f64,
}

/// Why a sequence stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Length,
    Stop,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Length => "length",
            FinishReason::Stop => "stop",
        }
    }
}

/// What the engine tells a request's handler.
#[derive(Debug, Clone, PartialEq)]
pub enum SeqEvent {
    /// `count` new tokens for choice `index`, starting at token position `first`.
    Tokens { index: u32, first: u32, count: u32 },
    /// Choice `index` is done after `tokens` tokens in all. A stream's last tokens ride this
    /// event (`last`: first position and count), so they go out in the chunk that carries the
    /// finish reason, as vLLM sends them.
    Finished {
        index: u32,
        reason: FinishReason,
        last: Option<(u32, u32)>,
        /// Boxed: the event queue's slots stay small.
        stats: Box<SeqStats>,
        tokens: u32,
    },
}

/// One choice of a request to run.
#[derive(Debug, Clone)]
pub struct SeqSpec {
    pub index: u32,
    pub prompt_tokens: u64,
    pub max_tokens: u32,
    /// Where the sequence would emit EOS (None with `ignore_eos`).
    pub eos_at: Option<u32>,
    pub profile: AcceptanceProfile,
    /// The chained hashes of the prompt's full KV blocks (empty without prefix caching).
    pub prompt_blocks: Arc<[u64]>,
}

/// A request submitted to an engine: its choices run together.
#[derive(Debug)]
pub struct Submission {
    pub seqs: Vec<SeqSpec>,
    pub events: mpsc::Sender<SeqEvent>,
    /// Streamed: every step's tokens are sent as they come. A whole response needs only the
    /// end, and not waking its handler each step keeps the sim's CPU per step low.
    pub stream: bool,
    /// When the server received it (the engine's timings start here).
    pub arrived: Instant,
}

/// Cumulative counters of one engine, as its `/metrics` exposes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineCounters {
    pub num_drafts: u64,
    pub num_draft_tokens: u64,
    pub num_accepted_tokens: u64,
    /// Length k; every position exists from start-up.
    pub accepted_per_pos: Vec<u64>,
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub success_length: u64,
    pub success_stop: u64,
    pub success_abort: u64,
    pub running: u64,
    pub waiting: u64,
    /// KV-cache blocks the running sequences hold, of `kv_cache_blocks`.
    pub kv_blocks_used: u64,
    pub kv_blocks_total: u64,
    /// Sequences preempted (their KV freed, recomputed when readmitted).
    pub preemptions: u64,
    /// Prompt tokens looked up in the prefix cache, and those found (vLLM's
    /// `prefix_cache_queries` and `prefix_cache_hits`).
    pub prefix_cache_queries: u64,
    pub prefix_cache_hits: u64,
    /// SGLang's counters, added when a sequence finishes: its verify steps, its output tokens
    /// and one request (each choice is one request to SGLang).
    pub verify_calls_finished: u64,
    pub generation_finished: u64,
    pub requests_finished: u64,
    /// The part of SGLang's counters from streamed requests (SGLang 0.5.23 labels its
    /// generation, prompt and request counters `is_streaming`).
    pub generation_finished_streaming: u64,
    pub requests_finished_streaming: u64,
    pub prompt_tokens_streaming: u64,
    /// TensorRT-LLM's per-position pair, added when a sequence finishes: draft tokens proposed
    /// and accepted at each position (length k; a position's series appears once it is
    /// non-zero, as TensorRT-LLM creates them).
    pub drafted_per_pos_finished: Vec<u64>,
    pub accepted_per_pos_finished: Vec<u64>,
    /// Unix time the counters were created (reset by a simulated restart).
    pub created_unix_s: f64,
}

impl EngineCounters {
    pub fn new(k: u32, created_unix_s: f64) -> EngineCounters {
        EngineCounters {
            accepted_per_pos: vec![0; k as usize],
            drafted_per_pos_finished: vec![0; k as usize],
            accepted_per_pos_finished: vec![0; k as usize],
            created_unix_s,
            ..EngineCounters::default()
        }
    }
}

impl EngineCounters {
    /// The counters of a server that has already verified `drafts` drafts of k tokens, each
    /// position accepted half as often as the one before.
    pub fn start_at(&mut self, drafts: u64) {
        let k = self.accepted_per_pos.len() as u64;
        if drafts == 0 || k == 0 {
            return;
        }
        self.num_drafts = drafts;
        self.num_draft_tokens = drafts * k;
        for (i, slot) in self.accepted_per_pos.iter_mut().enumerate() {
            *slot = drafts >> (i + 1).min(63);
        }
        self.num_accepted_tokens = self.accepted_per_pos.iter().sum();
        self.verify_calls_finished = drafts;
        self.generation_finished = drafts + self.num_accepted_tokens;
        self.drafted_per_pos_finished.iter_mut().for_each(|slot| *slot = drafts);
        self.accepted_per_pos_finished.clone_from(&self.accepted_per_pos);
    }
}

/// State shared between an engine's scheduler and the HTTP side.
#[derive(Debug)]
pub struct EngineShared {
    counters: Mutex<EngineCounters>,
}

impl EngineShared {
    pub fn new(k: u32, created_unix_s: f64) -> EngineShared {
        EngineShared {
            counters: Mutex::new(EngineCounters::new(k, created_unix_s)),
        }
    }

    /// The counters (a poisoned lock still holds valid numbers: every update is a few adds).
    pub fn counters(&self) -> MutexGuard<'_, EngineCounters> {
        self.counters.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub k: u32,
    /// vLLM's `num_speculative_tokens_per_batch_size` as inclusive ranges `(from, to, k)`
    /// (empty: k at every batch size).
    pub schedule: Vec<(u64, u64, u32)>,
    pub max_num_seqs: usize,
    /// KV-cache capacity in blocks of [`KV_BLOCK_TOKENS`] tokens.
    pub kv_cache_blocks: u64,
    pub step: StepModel,
    /// Multiplies every step time; 0 runs without delay.
    pub time_scale: f64,
    /// A step the schedule runs at k = 0 on a speculative server costs this fraction more than
    /// a plain server's step.
    pub zero_k_tax: f64,
    /// A fault: at a cut's first batch size (where the schedule turns speculation off just
    /// above a range that drafts), k alternates every this many seconds between off and the
    /// range below's k — a schedule thrashing at the load it runs, seen at scrape granularity.
    pub thrash_at_cut_s: Option<f64>,
    /// A fault: a sequence that runs a step at k = 0 (its drafter skips the step) accepts at a
    /// quarter of its rates for the rest of its life once speculation resumes, as TensorRT-LLM's
    /// one-engine drafters do (NVIDIA/TensorRT-LLM #16888).
    pub stale_drafter: bool,
    /// Acceptance halves every this many tokens a sequence holds (prompt and output): every
    /// conditional rate is scaled by 2^(−tokens ÷ half-life). None: acceptance does not depend
    /// on context.
    pub acceptance_half_life_tokens: Option<f64>,
    /// vLLM's automatic prefix caching (on by default in V1; the sim's only when asked): a
    /// prompt's leading blocks already cached are not prefilled again.
    pub prefix_caching: bool,
    pub seed: u64,
}

impl EngineConfig {
    /// The draft length of a step that schedules `scheduled` sequences `elapsed_s` after the
    /// engine started: the schedule's k for that batch size (vLLM indexes it by the requests
    /// scheduled in the step), at most k; at a cut, alternating under `thrash_at_cut_s`.
    pub fn step_k(&self, scheduled: usize, elapsed_s: f64) -> u32 {
        use speclens_shared::sweep::schedules::vllm_k_at;
        if self.schedule.is_empty() {
            return self.k;
        }
        let b = scheduled as u64;
        let k = vllm_k_at(&self.schedule, b);
        let below = vllm_k_at(&self.schedule, b.saturating_sub(1));
        match self.thrash_at_cut_s {
            Some(period) if k == 0 && b > 1 && below > 0 && (elapsed_s / period) as u64 % 2 == 1 => below.min(self.k),
            _ => k.min(self.k),
        }
    }
}

pub use super::prefix_cache::KV_BLOCK_TOKENS;

/// Blocks a sequence holds: its prompt, what it generated, and the k lookahead slots its drafts
/// are verified in (vLLM reserves them for every running sequence).
fn kv_blocks(seq: &Seq, k: u32) -> u64 {
    (seq.spec.prompt_tokens + u64::from(seq.generated) + u64::from(k)).div_ceil(KV_BLOCK_TOKENS)
}

/// Blocks a new sequence needs to be admitted (its prompt, one token and the lookahead).
fn admit_blocks(spec: &SeqSpec, k: u32) -> u64 {
    (spec.prompt_tokens + 1 + u64::from(k)).div_ceil(KV_BLOCK_TOKENS)
}

/// Events queued for one request before its tokens are coalesced: a client that does not read
/// its stream holds this many events (and one merged token range), not one per step.
pub const EVENTS_QUEUED: usize = 64;

/// Hooks from the engine back to the server (simulated restarts).
pub trait FinishHook: Send + Sync {
    /// Called once per finished request (all its choices done).
    fn request_finished(&self);
}

struct Seq {
    spec: SeqSpec,
    generated: u32,
    prefilled: bool,
    stats: SeqStats,
    events: mpsc::Sender<SeqEvent>,
    stream: bool,
    /// Tokens generated but not yet sent, as `(first, count)`: the request's queue was full
    /// (its client is not reading), so they go out merged with the next ones.
    unsent: Option<(u32, u32)>,
    /// Shared by the choices of one request: how many are still running.
    open_choices: Arc<AtomicU64>,
    /// Tokens to recompute at its next prefill after a preemption (what it had generated).
    recompute: u64,
    /// Prompt tokens its next prefill computes (what the prefix cache did not hold); None
    /// until the cache is looked up at admission.
    prompt_uncached: Option<u64>,
    arrived: Instant,
    /// When its first token came out (prefill's end).
    first_token_at: Option<Instant>,
    /// Its drafter skipped a step at k = 0 under `stale_drafter`: it accepts at
    /// [`STALE_ACCEPTANCE`] of its rates for the rest of its life.
    stale: bool,
}

/// What a stale drafter's acceptance falls to, as a fraction of its rates.
const STALE_ACCEPTANCE: f64 = 0.25;

/// Run one engine's scheduler until its submission channel closes.
pub async fn run_engine(
    config: EngineConfig,
    shared: Arc<EngineShared>,
    mut submissions: mpsc::UnboundedReceiver<Submission>,
    hook: Arc<dyn FinishHook>,
) {
    let mut rng = SmallRng::seed_from_u64(config.seed);
    let mut waiting: VecDeque<Submission> = VecDeque::new();
    let mut preempted: VecDeque<Seq> = VecDeque::new();
    let mut running: Vec<Seq> = Vec::new();
    let started = Instant::now();
    let mut deadline = started;
    let mut prefix_cache = config.prefix_caching.then(|| PrefixCache::new(config.kv_cache_blocks));
    loop {
        if running.is_empty() && waiting.is_empty() && preempted.is_empty() {
            match submissions.recv().await {
                Some(s) => waiting.push_back(s),
                None => return,
            }
            deadline = Instant::now();
        }
        while let Ok(s) = submissions.try_recv() {
            waiting.push_back(s);
        }
        admit(&config, &mut running, &mut waiting, &mut preempted);
        {
            let mut c = shared.counters();
            note_batch(&mut c, &running, &waiting, &preempted, &config);
        }

        if let Some(cache) = prefix_cache.as_mut() {
            look_up_prefixes(&mut running, cache, &shared);
        }
        let decode = running.iter().filter(|s| s.prefilled).count();
        let prefill: u64 = running
            .iter()
            .filter(|s| !s.prefilled)
            .map(|s| s.prompt_uncached.unwrap_or(s.spec.prompt_tokens) + s.recompute)
            .sum();
        let step_k = config.step_k(running.len(), started.elapsed().as_secs_f64());
        let kv_tokens: u64 = running
            .iter()
            .filter(|s| s.prefilled)
            .map(|s| s.spec.prompt_tokens + u64::from(s.generated))
            .sum();
        let zero_k = if config.k > 0 && step_k == 0 {
            1.0 + config.zero_k_tax
        } else {
            1.0
        };
        let step_s = config.step.step_seconds(decode, step_k, prefill, kv_tokens) * config.time_scale * zero_k;
        if step_s > 0.0 {
            deadline += Duration::from_secs_f64(step_s);
            let now = Instant::now();
            if deadline + Duration::from_secs(1) < now {
                deadline = now; // fell far behind (machine stalled): do not burst to catch up
            }
            tokio::time::sleep_until(deadline).await;
        } else {
            tokio::task::yield_now().await;
        }

        let mut finished_requests = 0;
        if config.stale_drafter && config.k > 0 && step_k == 0 {
            for seq in running.iter_mut().filter(|s| s.prefilled) {
                seq.stale = true;
            }
        }
        {
            let mut c = shared.counters();
            running.retain_mut(|seq| {
                let keep = advance(seq, step_k, config.acceptance_half_life_tokens, &mut rng, &mut c);
                if !keep && seq.open_choices.fetch_sub(1, Ordering::AcqRel) == 1 {
                    finished_requests += 1;
                }
                keep
            });
            // Sequences that grew past the cache: the newest gives its blocks back and is
            // recomputed later (vLLM's recompute preemption), until the rest fit.
            let mut used: u64 = running.iter().map(|s| kv_blocks(s, config.k)).sum();
            while used > config.kv_cache_blocks && running.len() > 1 {
                let Some(mut seq) = running.pop() else { break };
                used -= kv_blocks(&seq, config.k);
                seq.prefilled = false;
                seq.recompute = u64::from(seq.generated);
                seq.prompt_uncached = None;
                c.preemptions += 1;
                preempted.push_front(seq);
            }
        }
        {
            // The gauges follow the batch after the step too (an idle engine shows 0).
            let mut c = shared.counters();
            note_batch(&mut c, &running, &waiting, &preempted, &config);
        }
        for _ in 0..finished_requests {
            hook.request_finished();
        }
    }
}

/// The prefix cache's answer for every sequence admitted since the last step (new, or back
/// from preemption): the prompt tokens its prefill computes; the queries and hits counted
/// (the counters locked only when a sequence was looked up).
fn look_up_prefixes(running: &mut [Seq], cache: &mut PrefixCache, shared: &EngineShared) {
    let (mut queries, mut hits) = (0, 0);
    for seq in running
        .iter_mut()
        .filter(|s| !s.prefilled && s.prompt_uncached.is_none())
    {
        let prompt = seq.spec.prompt_tokens;
        let hit = cache.hit_tokens(&seq.spec.prompt_blocks, prompt);
        queries += prompt;
        hits += hit;
        seq.prompt_uncached = Some(prompt - hit);
    }
    if queries > 0 {
        let mut c = shared.counters();
        c.prefix_cache_queries += queries;
        c.prefix_cache_hits += hits;
    }
}

/// Fill the batch: preempted sequences first (vLLM requeues them at the front), then whole
/// requests while their choices fit, in sequences and in KV blocks. A lone request always runs.
fn admit(
    config: &EngineConfig,
    running: &mut Vec<Seq>,
    waiting: &mut VecDeque<Submission>,
    preempted: &mut VecDeque<Seq>,
) {
    // Preempted sequences come back first, as vLLM requeues them at the front.
    let mut used: u64 = running.iter().map(|s| kv_blocks(s, config.k)).sum();
    while let Some(next) = preempted.front() {
        let need = kv_blocks(next, config.k);
        if !running.is_empty() && (running.len() >= config.max_num_seqs || used + need > config.kv_cache_blocks) {
            break;
        }
        let Some(seq) = preempted.pop_front() else { break };
        used += need;
        running.push(seq);
    }
    // Admit whole requests while their choices fit, in sequences and in KV blocks.
    while let Some(next) = waiting.front() {
        let need: u64 = next.seqs.iter().map(|s| admit_blocks(s, config.k)).sum();
        let full = running.len() + next.seqs.len() > config.max_num_seqs || used + need > config.kv_cache_blocks;
        if !preempted.is_empty() || (full && !running.is_empty()) {
            break;
        }
        let Some(sub) = waiting.pop_front() else { break };
        used += need;
        let open = Arc::new(AtomicU64::new(sub.seqs.len() as u64));
        let queue_ms = ms_since(sub.arrived);
        for spec in sub.seqs {
            let k = spec.profile.k() as usize;
            running.push(Seq {
                stats: SeqStats {
                    histogram: vec![0; k + 1],
                    queue_ms,
                    ..SeqStats::default()
                },
                spec,
                generated: 0,
                prefilled: false,
                events: sub.events.clone(),
                stream: sub.stream,
                unsent: None,
                open_choices: open.clone(),
                recompute: 0,
                prompt_uncached: None,
                arrived: sub.arrived,
                first_token_at: None,
                stale: false,
            });
        }
    }
}

/// The batch gauges: running and waiting sequences, and the KV blocks held.
fn note_batch(
    c: &mut EngineCounters,
    running: &[Seq],
    waiting: &VecDeque<Submission>,
    preempted: &VecDeque<Seq>,
    config: &EngineConfig,
) {
    c.running = running.len() as u64;
    c.waiting = waiting.iter().map(|s| s.seqs.len() as u64).sum::<u64>() + preempted.len() as u64;
    c.kv_blocks_used = running.iter().map(|s| kv_blocks(s, config.k)).sum();
    c.kv_blocks_total = config.kv_cache_blocks;
}

/// One speculative step of a sequence drafting `k`: the drafts it accepts (acceptance decayed
/// by the context it holds when a half-life is set), counted on the engine and the request.
fn draft_step(seq: &mut Seq, k: u32, half_life: Option<f64>, rng: &mut SmallRng, c: &mut EngineCounters) -> u32 {
    let held = (seq.spec.prompt_tokens + u64::from(seq.generated)) as f64;
    let stale = if seq.stale { STALE_ACCEPTANCE } else { 1.0 };
    let factor = half_life.map_or(1.0, |h| (-held / h).exp2()) * stale;
    let j = seq.spec.profile.sample(k, factor, rng);
    c.num_drafts += 1;
    c.num_draft_tokens += u64::from(k);
    c.num_accepted_tokens += u64::from(j);
    for pos in 0..j as usize {
        c.accepted_per_pos[pos] += 1;
    }
    let s = &mut seq.stats;
    s.steps += 1;
    s.accepted += u64::from(j);
    s.drafted += u64::from(k);
    s.histogram[j as usize] += 1;
    s.per_step_accepted.push(u64::from(j));
    s.per_step_drafted.push(u64::from(k));
    j
}

/// One step of one sequence, drafting up to `step_k` tokens (none: a plain step, no draft
/// counted, as vLLM counts a schedule's k = 0); false when it is done (finished or its client
/// went away).
fn advance(seq: &mut Seq, step_k: u32, half_life: Option<f64>, rng: &mut SmallRng, c: &mut EngineCounters) -> bool {
    let limit = seq
        .spec
        .eos_at
        .map_or(seq.spec.max_tokens, |e| e.min(seq.spec.max_tokens));
    let first = seq.generated;
    let emitted = if !seq.prefilled {
        // Prefill produces the first token; no speculation on this step.
        seq.prefilled = true;
        if seq.recompute == 0 {
            c.prompt_tokens += seq.spec.prompt_tokens;
            if seq.stream {
                c.prompt_tokens_streaming += seq.spec.prompt_tokens;
            }
        }
        seq.recompute = 0;
        if seq.first_token_at.is_none() {
            let now = Instant::now();
            seq.first_token_at = Some(now);
            seq.stats.ttft_ms = ms_between(seq.arrived, now);
        }
        1
    } else if let k @ 1.. = seq.spec.profile.k().min(step_k) {
        draft_step(seq, k, half_life, rng, c) + 1
    } else {
        1
    };
    let emitted = emitted.min(limit - first);
    seq.generated += emitted;
    c.generation_tokens += u64::from(emitted);
    let index = seq.spec.index;
    let finishing = seq.generated >= limit;
    let gone = if seq.stream {
        let (first, count) = match seq.unsent.take() {
            Some((from, held)) => (from, held + emitted),
            None => (first, emitted),
        };
        if finishing {
            // Sent with the finish, below.
            seq.unsent = Some((first, count));
            seq.events.is_closed()
        } else {
            match seq.events.try_send(SeqEvent::Tokens { index, first, count }) {
                Ok(()) => false,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    seq.unsent = Some((first, count));
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => true,
            }
        }
    } else {
        seq.events.is_closed()
    };
    if gone {
        c.success_abort += 1;
        finish_counts(seq, c);
        return false;
    }
    if !finishing {
        return true;
    }
    let reason = if seq
        .spec
        .eos_at
        .is_some_and(|e| e <= seq.spec.max_tokens && seq.generated == e)
    {
        c.success_stop += 1;
        FinishReason::Stop
    } else {
        c.success_length += 1;
        FinishReason::Length
    };
    seq.stats.generation_ms = seq.first_token_at.map_or(0.0, ms_since);
    finish_counts(seq, c);
    let finished = SeqEvent::Finished {
        index,
        reason,
        last: seq.unsent.take(),
        tokens: seq.generated,
        stats: Box::new(std::mem::take(&mut seq.stats)),
    };
    deliver_last(&seq.events, finished);
    false
}

/// Send a finished choice's last event: at once when its queue has room, else from a task of
/// its own that waits for the client to read (the engine never waits on one client).
fn deliver_last(events: &mpsc::Sender<SeqEvent>, finished: SeqEvent) {
    if let Err(mpsc::error::TrySendError::Full(finished)) = events.try_send(finished) {
        let events = events.clone();
        tokio::spawn(async move {
            let _ = events.send(finished).await;
        });
    }
}

/// Milliseconds from `earlier` to now.
fn ms_since(earlier: Instant) -> f64 {
    ms_between(earlier, Instant::now())
}

fn ms_between(earlier: Instant, later: Instant) -> f64 {
    later.saturating_duration_since(earlier).as_secs_f64() * 1e3
}

/// What SGLang and TensorRT-LLM add to their counters when a request finishes.
fn finish_counts(seq: &Seq, c: &mut EngineCounters) {
    c.verify_calls_finished += seq.stats.steps;
    c.generation_finished += u64::from(seq.generated);
    c.requests_finished += 1;
    if seq.stream {
        c.generation_finished_streaming += u64::from(seq.generated);
        c.requests_finished_streaming += 1;
    }
    let s = &seq.stats;
    for (&drafted, &accepted) in s.per_step_drafted.iter().zip(&s.per_step_accepted) {
        for (pos, slot) in c.drafted_per_pos_finished.iter_mut().enumerate() {
            *slot += u64::from((pos as u64) < drafted);
        }
        for (pos, slot) in c.accepted_per_pos_finished.iter_mut().enumerate() {
            *slot += u64::from((pos as u64) < accepted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_convert_between_rates_and_conditionals() {
        let p = AcceptanceProfile::from_rates(&[0.8, 0.6, 0.3]).unwrap();
        let rates = p.rates();
        for (got, want) in rates.iter().zip([0.8, 0.6, 0.3]) {
            assert!((got - want).abs() < 1e-12);
        }
        assert!(AcceptanceProfile::from_rates(&[0.5, 0.7]).is_err());
        assert!(AcceptanceProfile::from_rates(&[1.5]).is_err());
        let g = AcceptanceProfile::geometric(0.5, 3).unwrap();
        assert_eq!(g.rates(), vec![0.5, 0.25, 0.125]);
        assert_eq!(g.scaled(4.0).rates(), vec![1.0, 1.0, 1.0]);
    }

    #[test]
    fn sampling_converges_to_the_rates() {
        let p = AcceptanceProfile::from_rates(&[0.8, 0.5, 0.2]).unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        let n = 200_000;
        let mut at_least = [0u64; 3];
        for _ in 0..n {
            let j = p.sample(p.k(), 1.0, &mut rng);
            for slot in at_least.iter_mut().take(j as usize) {
                *slot += 1;
            }
        }
        for (count, want) in at_least.iter().zip([0.8, 0.5, 0.2]) {
            assert!((*count as f64 / n as f64 - want).abs() < 0.01, "{count} vs {want}");
        }
    }

    #[test]
    fn step_time_follows_the_roofline() {
        let m = StepModel {
            base_step_s: 0.01,
            ridge_tokens: 100.0,
            draft_cost: 0.0,
            draft_overhead_s: 0.0,
            kv_ratio: 0.0,
            draft_kv_share: 0.0,
        };
        assert_eq!(m.step_seconds(1, 3, 0, 5_000), 0.01);
        assert_eq!(m.step_seconds(25, 3, 0, 0), 0.01);
        assert!((m.step_seconds(50, 3, 0, 0) - 0.02).abs() < 1e-12);
        assert!((m.step_seconds(200, 0, 0, 0) - 0.02).abs() < 1e-12);
        let c = StepModel {
            draft_cost: 0.1,
            draft_overhead_s: 1e-5,
            ..m
        };
        assert!((c.step_seconds(1, 3, 0, 0) - (0.01 * 1.3 + 3e-5)).abs() < 1e-12);
    }

    /// The sim's steps are the context model's (shared::model::context, roofline form): the
    /// same KV read for a plain and a verify step, the drafter its share.
    #[test]
    fn step_time_charges_the_kv_read_as_the_context_model_does() {
        use speclens_shared::model::context::StepCosts;
        use speclens_shared::model::speedup::Costs;
        let m = StepModel {
            base_step_s: 0.01,
            ridge_tokens: 100.0,
            draft_cost: 0.05,
            draft_overhead_s: 0.0,
            kv_ratio: 1e-4,
            draft_kv_share: 0.2,
        };
        let model = StepCosts::Roofline {
            costs: Costs {
                draft_cost: 0.05,
                ridge_tokens: 100.0,
            },
            kv_ratio: 1e-4,
            draft_kv_share: 0.2,
        };
        for (b, l) in [(1usize, 0u64), (1, 2_000), (16, 1_000), (64, 500), (200, 4_000)] {
            let kv = b as u64 * l;
            let plain = m.step_seconds(b, 0, 0, kv) / 0.01;
            let spec = m.step_seconds(b, 3, 0, kv) / 0.01;
            assert!(
                (plain - model.plain_step(b as f64, l as f64)).abs() < 1e-9,
                "plain at {b}, {l}"
            );
            assert!(
                (spec - model.spec_step(b as f64, l as f64, 3.0)).abs() < 1e-9,
                "spec at {b}, {l}"
            );
        }
    }

    #[test]
    fn acceptance_halves_every_half_life_of_context() {
        let p = AcceptanceProfile::geometric(0.8, 1).unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        let n = 200_000;
        let rate =
            |factor: f64, rng: &mut SmallRng| (0..n).map(|_| p.sample(1, factor, rng)).sum::<u32>() as f64 / n as f64;
        // A sequence holding one half-life of tokens accepts at half the rate.
        let (fresh, halved) = (rate(1.0, &mut rng), rate((-1000.0f64 / 1000.0).exp2(), &mut rng));
        assert!(
            (fresh - 0.8).abs() < 0.01 && (halved - 0.4).abs() < 0.01,
            "{fresh} {halved}"
        );
    }
}
