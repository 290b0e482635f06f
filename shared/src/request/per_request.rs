//! Per-request path (docs/METRICS.md §2): adapters that find the spec-decode stats an engine returns
//! with each response (vLLM, TensorRT-LLM's pending PR #19311, SGLang's `spec_tokens_details` and
//! its pending PR #34814's `speculative_decoding_stats`), chosen by the payload's shape, validated
//! and normalised into one record per request; and the partial figures the released engines give
//! (TensorRT-LLM's `avg_decoded_tokens_per_iter`, a length; llama.cpp's `timings.draft_n` /
//! `draft_n_accepted`, a rate; with mlx-vlm's `draft_rounds`, a length too).
//!
//! Feed every parsed response body or stream chunk to a [`PayloadScan`], then call
//! [`PayloadScan::finish`]. A payload that breaks a rule gives a [`Rejection`] (counted by the
//! caller), never an error that stops a run.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::engine::Engine;
use crate::figures::acceptance_length_of_counts;
pub use crate::request::http_trace::ServerTimings;

/// The open pull request TensorRT-LLM's per-choice stats follow.
pub const TRTLLM_PR19311: &str = "NVIDIA/TensorRT-LLM#19311";
/// The open pull request SGLang's `speculative_decoding_stats` follow.
pub const SGLANG_PR34814: &str = "sgl-project/sglang#34814";
/// Every open pull request a shape read here follows.
pub const UNMERGED_PRS: [&str; 2] = [TRTLLM_PR19311, SGLANG_PR34814];

/// Where in a response an engine's per-request stats sit, and so which names they use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// vLLM: `metrics.speculative_decoding` at the root.
    Vllm,
    /// TensorRT-LLM's PR #19311: `choices[i].speculative_decoding`.
    Trtllm,
    /// SGLang as released: `sglext.spec_tokens_details` (an object, or a list with n > 1).
    SglangDetails,
    /// SGLang's PR #34814 (open): `sglext.speculative_decoding_stats`, one object per choice.
    SglangStats,
}

impl Shape {
    /// The open pull request the shape follows, if it is not released.
    const fn unmerged_pr(self) -> Option<&'static str> {
        match self {
            Shape::Trtllm => Some(TRTLLM_PR19311),
            Shape::SglangStats => Some(SGLANG_PR34814),
            Shape::Vllm | Shape::SglangDetails => None,
        }
    }

    /// Its place in per-shape tallies.
    const fn index(self) -> usize {
        match self {
            Shape::Vllm => 0,
            Shape::Trtllm => 1,
            Shape::SglangDetails => 2,
            Shape::SglangStats => 3,
        }
    }

    const fn engine(self) -> Engine {
        match self {
            Shape::Vllm => Engine::Vllm,
            Shape::Trtllm => Engine::Trtllm,
            Shape::SglangDetails | Shape::SglangStats => Engine::Sglang,
        }
    }
}

/// What a released engine returns per request when it is less than a full record:
/// TensorRT-LLM's `avg_decoded_tokens_per_iter` (a length, no counts) or llama.cpp's `timings`
/// (drafted and accepted tokens, no steps: a rate, no length; mlx-vlm's `draft_rounds` adds the
/// steps, so a length: (predicted_n − 1) ÷ draft_rounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialSpecRecord {
    pub engine: Engine,
    /// Tokens per decoding iteration as the engine reports it (TensorRT-LLM; may count the
    /// context-phase token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_acceptance_length: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_accepted_draft_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_draft_tokens: Option<u64>,
}

impl SpecRecord {
    /// The record of a request that never verified a draft (SGLang sends no details then).
    pub fn zero_steps(engine: Engine) -> SpecRecord {
        SpecRecord {
            engine,
            mean_acceptance_length: 1.0,
            draft_acceptance_rate: 0.0,
            acceptance_histogram: BTreeMap::new(),
            num_accepted_draft_tokens: 0,
            num_draft_tokens: 0,
            num_spec_steps: 0,
            num_spec_tokens: None,
            completion_tokens: None,
            per_step_accepted: None,
            per_step_drafted: None,
            unmerged_pr: None,
        }
    }
}

/// The normalised per-request spec-decode record (docs/METRICS.md §2.4).
///
/// For SGLang, `num_spec_steps` = `spec_verify_ct`, accepted = correct drafts, drafted = proposed
/// drafts, and the length and rate are recomputed from those (SGLang's own length counts the
/// prefill token and its rate has another denominator).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecRecord {
    pub engine: Engine,
    /// Tokens per verify step, bonus included (1.0 with no steps).
    pub mean_acceptance_length: f64,
    /// Accepted / drafted, a fraction.
    pub draft_acceptance_rate: f64,
    /// Sparse `{j: steps that accepted exactly j drafts}`, zero buckets dropped.
    pub acceptance_histogram: BTreeMap<u32, u64>,
    pub num_accepted_draft_tokens: u64,
    pub num_draft_tokens: u64,
    pub num_spec_steps: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_spec_tokens: Option<u32>,
    /// From the last non-empty `usage` of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_step_accepted: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_step_drafted: Option<Vec<u64>>,
    /// The open pull request whose shape the stats follow (`sgl-project/sglang#34814`,
    /// `NVIDIA/TensorRT-LLM#19311`): they may change before it merges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmerged_pr: Option<String>,
}

/// Why a payload gave no record. [`Rejection::kind`] is the stable key the run counts by.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejection {
    /// One chunk holds stats in the places of two engines.
    AmbiguousShape(Vec<Engine>),
    /// Stats in more than one chunk or choice of one response.
    MultipleCarriers(usize),
    MissingField {
        engine: Engine,
        field: &'static str,
    },
    WrongType {
        engine: Engine,
        field: &'static str,
        expected: &'static str,
    },
    HistogramLength {
        engine: Engine,
        len: usize,
        num_spec_tokens: u32,
    },
    HistogramSteps {
        engine: Engine,
        histogram_sum: u64,
        steps: u64,
    },
    HistogramAccepted {
        engine: Engine,
        weighted_sum: u64,
        accepted: u64,
    },
    AcceptedExceedsDrafted {
        engine: Engine,
        accepted: u64,
        drafted: u64,
    },
    PerStep {
        engine: Engine,
        problem: String,
    },
}

impl Rejection {
    /// Short stable key for counting rejections by reason.
    pub fn kind(&self) -> &'static str {
        match self {
            Rejection::AmbiguousShape(_) => "ambiguous_shape",
            Rejection::MultipleCarriers(_) => "multiple_carriers",
            Rejection::MissingField { .. } => "missing_field",
            Rejection::WrongType { .. } => "wrong_type",
            Rejection::HistogramLength { .. } => "histogram_length",
            Rejection::HistogramSteps { .. } => "histogram_steps_mismatch",
            Rejection::HistogramAccepted { .. } => "histogram_accepted_mismatch",
            Rejection::AcceptedExceedsDrafted { .. } => "accepted_exceeds_drafted",
            Rejection::PerStep { .. } => "per_step_arrays",
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::AmbiguousShape(kinds) => {
                let names: Vec<_> = kinds.iter().map(|k| k.name()).collect();
                write!(f, "payload matches several engine shapes ({})", names.join(", "))
            }
            Rejection::MultipleCarriers(n) => write!(f, "spec decode stats found in {n} places of one response"),
            Rejection::MissingField { engine, field } => write!(f, "{}: missing field {field}", engine.name()),
            Rejection::WrongType {
                engine,
                field,
                expected,
            } => {
                write!(f, "{}: field {field} is not {expected}", engine.name())
            }
            Rejection::HistogramLength {
                engine,
                len,
                num_spec_tokens,
            } => write!(
                f,
                "{}: acceptance_histogram has {len} buckets, expected num_spec_tokens + 1 = {}",
                engine.name(),
                u64::from(*num_spec_tokens) + 1
            ),
            Rejection::HistogramSteps {
                engine,
                histogram_sum,
                steps,
            } => write!(
                f,
                "{}: acceptance_histogram sums to {histogram_sum} but there were {steps} steps",
                engine.name()
            ),
            Rejection::HistogramAccepted {
                engine,
                weighted_sum,
                accepted,
            } => write!(
                f,
                "{}: acceptance_histogram implies {weighted_sum} accepted tokens, payload says {accepted}",
                engine.name()
            ),
            Rejection::AcceptedExceedsDrafted {
                engine,
                accepted,
                drafted,
            } => {
                write!(
                    f,
                    "{}: {accepted} accepted tokens exceed {drafted} drafted",
                    engine.name()
                )
            }
            Rejection::PerStep { engine, problem } => write!(f, "{}: {problem}", engine.name()),
        }
    }
}

/// What one response yielded.
#[derive(Debug, Clone, PartialEq)]
pub enum PayloadOutcome {
    Record(SpecRecord),
    /// Only a released engine's partial figures were there.
    Partial(PartialSpecRecord),
    /// The response carried no spec-decode stats (a plain server, n>1, nothing drafted).
    NoStats,
    Rejected(Rejection),
}

/// Per-choice stats objects (SGLang PR #34814) one response may carry: past it, the response
/// is rejected as one with stats in too many places.
const MAX_KEPT_CHOICES: usize = 256;

/// Folds the chunks of one response (or its single body) one at a time.
#[derive(Debug, Default)]
pub struct PayloadScan {
    /// Each place stats were found: the engine and its objects (several for SGLang's n > 1
    /// list, one otherwise).
    carriers: Vec<(Shape, Vec<Map<String, Value>>)>,
    /// By shape, the objects kept and the places found but not kept: a second carrier of a shape
    /// only makes the response a rejection, so it is counted, never held (a server that repeats
    /// its stats in every chunk costs nothing per chunk).
    held: [(usize, usize); 4],
    ambiguous: Option<Vec<Engine>>,
    completion_tokens: Option<u64>,
    /// TensorRT-LLM's `avg_decoded_tokens_per_iter`, one per choice that had it.
    decoded_per_iter: Vec<f64>,
    /// llama.cpp's `timings` draft counts (the last chunk that had them), and mlx-vlm's
    /// `draft_rounds` with the `predicted_n` beside it when it sent them.
    llamacpp_drafts: Option<(u64, u64)>,
    llamacpp_rounds: Option<(u64, u64)>,
    /// A partial figure that is not the type it should be.
    partial_rejected: Option<Rejection>,
    /// The server's own timings (vLLM 0.33).
    server: ServerTimings,
}

impl PayloadScan {
    pub fn new() -> Self {
        Self::default()
    }

    /// The server's own timings the response carried, if any.
    pub fn server_timings(&self) -> Option<ServerTimings> {
        (!self.server.is_empty()).then_some(self.server)
    }

    /// Look at one parsed chunk (or the whole non-streaming body).
    pub fn push(&mut self, chunk: &Value) {
        let Some(root) = chunk.as_object() else { return };
        if let Some(usage) = root.get("usage").and_then(Value::as_object) {
            if let Some(tokens) = usage.get("completion_tokens").and_then(Value::as_u64) {
                self.completion_tokens = Some(tokens);
            }
        }
        if let Some(metrics) = root.get("metrics").and_then(Value::as_object) {
            self.server.note(metrics);
        }
        let mut found: Vec<(Shape, Vec<&Map<String, Value>>)> = Vec::new();
        if let Some(stats) = root
            .get("metrics")
            .and_then(|m| m.get("speculative_decoding"))
            .and_then(Value::as_object)
        {
            found.push((Shape::Vllm, vec![stats]));
        }
        if let Some(choices) = root.get("choices").and_then(Value::as_array) {
            for choice in choices {
                if let Some(stats) = choice.get("speculative_decoding").and_then(Value::as_object) {
                    found.push((Shape::Trtllm, vec![stats]));
                }
                self.note_decoded_per_iter(choice.get("avg_decoded_tokens_per_iter"));
            }
        }
        if let Some(sglext) = root.get("sglext") {
            // The exact counts of PR #34814 when the server sends them, else the released details.
            let (shape, field, value) = match sglext.get("speculative_decoding_stats") {
                Some(v) if !v.is_null() => (Shape::SglangStats, "speculative_decoding_stats", Some(v)),
                _ => (
                    Shape::SglangDetails,
                    "spec_tokens_details",
                    sglext.get("spec_tokens_details"),
                ),
            };
            self.note_sglang(&mut found, shape, field, value);
        }
        if let Some(timings) = root.get("timings").and_then(Value::as_object) {
            self.note_llamacpp(timings);
        }
        let mut kinds: Vec<Engine> = found.iter().map(|(shape, _)| shape.engine()).collect();
        kinds.dedup();
        if kinds.len() > 1 {
            self.ambiguous.get_or_insert(kinds);
        }
        for (shape, maps) in found {
            let (kept, unkept) = &mut self.held[shape.index()];
            // PR #34814's entries ride each choice's finishing chunk: one per choice is kept.
            if *kept == 0 || (shape == Shape::SglangStats && *kept + maps.len() <= MAX_KEPT_CHOICES) {
                *kept += maps.len();
                self.carriers.push((shape, maps.into_iter().cloned().collect()));
            } else {
                *unkept += 1;
            }
        }
    }

    /// SGLang's object (n = 1) or list (one entry per choice that verified).
    fn note_sglang<'a>(
        &mut self,
        found: &mut Vec<(Shape, Vec<&'a Map<String, Value>>)>,
        shape: Shape,
        field: &'static str,
        value: Option<&'a Value>,
    ) {
        match value {
            Some(Value::Object(stats)) => found.push((shape, vec![stats])),
            Some(Value::Array(list)) => {
                let objects: Vec<&Map<String, Value>> = list.iter().filter_map(Value::as_object).collect();
                if objects.len() == list.len() && !objects.is_empty() {
                    found.push((shape, objects));
                } else if !list.is_empty() {
                    self.partial_rejected.get_or_insert(Rejection::WrongType {
                        engine: Engine::Sglang,
                        field,
                        expected: "an object or a list of objects",
                    });
                }
            }
            _ => {}
        }
    }

    fn note_decoded_per_iter(&mut self, value: Option<&Value>) {
        match value {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= 1.0 => self.decoded_per_iter.push(x),
                _ => {
                    self.partial_rejected.get_or_insert(Rejection::WrongType {
                        engine: Engine::Trtllm,
                        field: "avg_decoded_tokens_per_iter",
                        expected: "a number ≥ 1",
                    });
                }
            },
        }
    }

    fn note_llamacpp(&mut self, timings: &Map<String, Value>) {
        // Only when something was drafted does llama.cpp add the two fields.
        if !(timings.contains_key("draft_n") && timings.contains_key("draft_n_accepted")) {
            return;
        }
        let f = Fields {
            engine: Engine::LlamaCpp,
            map: timings,
        };
        // mlx-vlm's `draft_rounds` (steps) with `predicted_n`: a length, and its accepted count
        // may exceed what it drafted (mlx-vlm PR #2324), so the rate is left out then.
        if timings.contains_key("draft_rounds") {
            match (f.count("draft_rounds"), f.count("predicted_n")) {
                (Ok(rounds), Ok(predicted)) => self.llamacpp_rounds = Some((rounds, predicted)),
                (Err(e), _) | (_, Err(e)) => {
                    self.partial_rejected.get_or_insert(e);
                    return;
                }
            }
        }
        match (f.count("draft_n"), f.count("draft_n_accepted")) {
            (Ok(d), Ok(a)) if a <= d || self.llamacpp_rounds.is_some() => self.llamacpp_drafts = Some((d, a)),
            (Ok(d), Ok(a)) => {
                self.partial_rejected.get_or_insert(Rejection::AcceptedExceedsDrafted {
                    engine: Engine::LlamaCpp,
                    accepted: a,
                    drafted: d,
                });
            }
            (Err(e), _) | (_, Err(e)) => {
                self.partial_rejected.get_or_insert(e);
            }
        }
    }

    /// The response's record, or why there is none.
    pub fn finish(mut self) -> PayloadOutcome {
        if let Some(kinds) = self.ambiguous {
            return PayloadOutcome::Rejected(Rejection::AmbiguousShape(kinds));
        }
        // PR #34814's entries ride each choice's finishing chunk: one list of them all. Its
        // exact counts win over the released details a stream sends in a chunk of their own,
        // as they do within one chunk.
        let mut carriers = std::mem::take(&mut self.carriers);
        if carriers.iter().any(|(shape, _)| *shape == Shape::SglangStats) {
            carriers.retain(|(shape, _)| *shape != Shape::SglangDetails);
        }
        if carriers.len() > 1 && carriers.iter().all(|(shape, _)| *shape == Shape::SglangStats) {
            let all = carriers.drain(..).flat_map(|(_, maps)| maps).collect();
            carriers.push((Shape::SglangStats, all));
        }
        let unkept: usize = carriers.iter().map(|(shape, _)| self.held[shape.index()].1).sum();
        match carriers.len() + unkept {
            0 => self.partial(),
            1 => {
                let (shape, stats) = &carriers[0];
                let records: Result<Vec<SpecRecord>, Rejection> = stats
                    .iter()
                    .map(|map| adapt(*shape, map, self.completion_tokens))
                    .collect();
                match records {
                    Ok(records) => PayloadOutcome::Record(combine(records)),
                    Err(rejection) => PayloadOutcome::Rejected(rejection),
                }
            }
            n => PayloadOutcome::Rejected(Rejection::MultipleCarriers(n)),
        }
    }

    /// A released engine's partial figures, when there are any.
    fn partial(self) -> PayloadOutcome {
        if let Some(rejection) = self.partial_rejected {
            return PayloadOutcome::Rejected(rejection);
        }
        if let Some((drafted, accepted)) = self.llamacpp_drafts {
            // mlx-vlm's rounds give a length from what was emitted: the first token comes from
            // the prompt's pass, each round emits the rest; never steps from predicted_n.
            let length = self
                .llamacpp_rounds
                .filter(|(rounds, predicted)| *rounds > 0 && *predicted > 0)
                .map(|(rounds, predicted)| (predicted - 1) as f64 / rounds as f64);
            let counts_hold = accepted <= drafted;
            return PayloadOutcome::Partial(PartialSpecRecord {
                engine: Engine::LlamaCpp,
                mean_acceptance_length: length,
                num_accepted_draft_tokens: counts_hold.then_some(accepted),
                num_draft_tokens: counts_hold.then_some(drafted),
            });
        }
        if !self.decoded_per_iter.is_empty() {
            let n = self.decoded_per_iter.len() as f64;
            return PayloadOutcome::Partial(PartialSpecRecord {
                engine: Engine::Trtllm,
                mean_acceptance_length: Some(self.decoded_per_iter.iter().sum::<f64>() / n),
                num_accepted_draft_tokens: None,
                num_draft_tokens: None,
            });
        }
        PayloadOutcome::NoStats
    }
}

/// One record for a response whose choices each had one (SGLang's n > 1 list): the counts and
/// histograms summed, the length and rate recomputed from the sums.
fn combine(mut records: Vec<SpecRecord>) -> SpecRecord {
    if records.len() == 1 {
        return records.remove(0);
    }
    let mut all = records.remove(0);
    all.per_step_accepted = None;
    all.per_step_drafted = None;
    for r in records {
        all.num_accepted_draft_tokens += r.num_accepted_draft_tokens;
        all.num_draft_tokens += r.num_draft_tokens;
        all.num_spec_steps += r.num_spec_steps;
        for (j, c) in r.acceptance_histogram {
            *all.acceptance_histogram.entry(j).or_default() += c;
        }
        all.num_spec_tokens = all.num_spec_tokens.max(r.num_spec_tokens);
    }
    all.mean_acceptance_length =
        acceptance_length_of_counts(all.num_accepted_draft_tokens, all.num_spec_steps).unwrap_or(1.0);
    all.draft_acceptance_rate = ratio_or(all.num_accepted_draft_tokens, all.num_draft_tokens, 0.0);
    all
}

/// Convenience for a non-streaming response body.
pub fn adapt_response(body: &Value) -> PayloadOutcome {
    let mut scan = PayloadScan::new();
    scan.push(body);
    scan.finish()
}

struct Fields<'a> {
    engine: Engine,
    map: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn get(&self, field: &'static str) -> Result<&Value, Rejection> {
        match self.map.get(field) {
            None | Some(Value::Null) => Err(Rejection::MissingField {
                engine: self.engine,
                field,
            }),
            Some(v) => Ok(v),
        }
    }

    fn missing(&self, field: &'static str) -> Rejection {
        Rejection::MissingField {
            engine: self.engine,
            field,
        }
    }

    fn wrong(&self, field: &'static str, expected: &'static str) -> Rejection {
        Rejection::WrongType {
            engine: self.engine,
            field,
            expected,
        }
    }

    fn count(&self, field: &'static str) -> Result<u64, Rejection> {
        self.get(field)?
            .as_u64()
            .ok_or_else(|| self.wrong(field, "a non-negative integer"))
    }

    fn float(&self, field: &'static str) -> Result<f64, Rejection> {
        match self.get(field)?.as_f64() {
            Some(v) if v.is_finite() => Ok(v),
            _ => Err(self.wrong(field, "a finite number")),
        }
    }

    fn optional_k(&self, field: &'static str) -> Result<Option<u32>, Rejection> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|k| u32::try_from(k).ok())
                .map(Some)
                .ok_or_else(|| self.wrong(field, "a non-negative integer")),
        }
    }

    fn counts(&self, field: &'static str) -> Result<Vec<u64>, Rejection> {
        let list = self.get(field)?.as_array().ok_or_else(|| self.wrong(field, "a list"))?;
        list.iter()
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| self.wrong(field, "a list of non-negative integers"))
            })
            .collect()
    }

    fn optional_counts(&self, field: &'static str) -> Result<Option<Vec<u64>>, Rejection> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.counts(field).map(Some),
        }
    }
}

fn ratio_or(num: u64, den: u64, empty: f64) -> f64 {
    if den == 0 {
        empty
    } else {
        num as f64 / den as f64
    }
}

/// One engine's stats as read, before the checks that they hold together.
struct Raw {
    length: f64,
    rate: f64,
    /// Steps that accepted exactly j drafts, by j (`None`: the shape sends none).
    hist: Option<Vec<u64>>,
    accepted: u64,
    drafted: u64,
    steps: u64,
    k: Option<u32>,
    per_step: Option<(Vec<u64>, Vec<u64>)>,
}

/// Validate one engine's stats object into a record.
fn adapt(shape: Shape, map: &Map<String, Value>, completion_tokens: Option<u64>) -> Result<SpecRecord, Rejection> {
    let engine = shape.engine();
    let raw = read_fields(shape, &Fields { engine, map })?;
    check_consistency(engine, &raw)?;
    let Raw {
        length,
        rate,
        hist,
        accepted,
        drafted,
        steps,
        k,
        per_step,
    } = raw;
    let (per_step_accepted, per_step_drafted) = match per_step {
        Some((a, d)) => (Some(a), Some(d)),
        None => (None, None),
    };
    Ok(SpecRecord {
        engine,
        mean_acceptance_length: length,
        draft_acceptance_rate: rate,
        acceptance_histogram: hist
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(j, c)| (j as u32, *c))
            .collect(),
        num_accepted_draft_tokens: accepted,
        num_draft_tokens: drafted,
        num_spec_steps: steps,
        num_spec_tokens: k,
        completion_tokens,
        per_step_accepted,
        per_step_drafted,
        unmerged_pr: shape.unmerged_pr().map(str::to_string),
    })
}

/// The engine's fields, by its names.
fn read_fields(shape: Shape, f: &Fields<'_>) -> Result<Raw, Rejection> {
    match shape {
        Shape::Vllm => read_vllm(f),
        Shape::Trtllm => {
            let accepted = f.count("total_accepted_draft_tokens")?;
            let steps = f.count("num_spec_steps")?;
            Ok(Raw {
                length: acceptance_length_of_counts(accepted, steps).unwrap_or(1.0),
                rate: f.float("acceptance_rate")?,
                hist: Some(f.counts("acceptance_histogram")?),
                accepted,
                drafted: f.count("total_draft_tokens")?,
                steps,
                k: f.optional_k("num_spec_tokens")?,
                per_step: None,
            })
        }
        Shape::SglangDetails => {
            let accepted = f.count("spec_num_correct_drafts")?;
            let drafted = f.count("spec_num_proposed_drafts")?;
            let steps = f.count("spec_verify_ct")?;
            Ok(Raw {
                length: acceptance_length_of_counts(accepted, steps).unwrap_or(1.0),
                rate: ratio_or(accepted, drafted, 0.0),
                hist: Some(f.counts("spec_correct_drafts_histogram")?),
                accepted,
                drafted,
                steps,
                k: None,
                per_step: None,
            })
        }
        Shape::SglangStats => read_sglang_stats(f),
    }
}

fn read_vllm(f: &Fields<'_>) -> Result<Raw, Rejection> {
    let engine = f.engine;
    let per_step = match (
        f.optional_counts("per_step_accepted")?,
        f.optional_counts("per_step_drafted")?,
    ) {
        (None, None) => None,
        (Some(a), Some(d)) => Some((a, d)),
        (Some(_), None) => {
            return Err(Rejection::MissingField {
                engine,
                field: "per_step_drafted",
            })
        }
        (None, Some(_)) => {
            return Err(Rejection::MissingField {
                engine,
                field: "per_step_accepted",
            })
        }
    };
    Ok(Raw {
        length: f.float("mean_acceptance_length")?,
        rate: f.float("draft_acceptance_rate")?,
        hist: Some(f.counts("acceptance_histogram")?),
        accepted: f.count("num_accepted_draft_tokens")?,
        drafted: f.count("num_draft_tokens")?,
        steps: f.count("num_spec_steps")?,
        k: f.optional_k("num_spec_tokens")?,
        per_step,
    })
}

/// SGLang's PR #34814: exact counts of what the verifier drafted (its ragged width included)
/// and accepted; `detailed` adds each step's verify and accept lengths, both counting the
/// step's root or bonus token, so a step drafted `verify − 1` and accepted `accept − 1`, and
/// the histogram follows from them. `summary` names no histogram speclens reads.
fn read_sglang_stats(f: &Fields<'_>) -> Result<Raw, Rejection> {
    let accepted = f.count("num_accepted_draft_tokens")?;
    let drafted = f.count("num_verified_draft_tokens")?;
    let steps = f.count("num_verification_steps")?;
    let per_step = match (
        f.optional_counts("accept_lengths")?,
        f.optional_counts("verify_lengths")?,
    ) {
        (None, None) => None,
        (Some(accept), Some(verify)) => {
            let less_one = |list: Vec<u64>, field: &'static str| {
                list.iter()
                    .map(|l| l.checked_sub(1))
                    .collect::<Option<Vec<u64>>>()
                    .ok_or(f.wrong(field, "lengths of at least 1 (they count the step's own token)"))
            };
            Some((less_one(accept, "accept_lengths")?, less_one(verify, "verify_lengths")?))
        }
        (Some(_), None) => return Err(f.missing("verify_lengths")),
        (None, Some(_)) => return Err(f.missing("accept_lengths")),
    };
    // The lists are the source of the histogram here: they are checked against the counts first.
    if let Some((acc, dra)) = &per_step {
        check_per_step(acc, dra, steps, accepted, drafted).map_err(|problem| Rejection::PerStep {
            engine: f.engine,
            problem,
        })?;
    }
    let hist = per_step.as_ref().map(|(accepted_per_step, _)| {
        let mut hist = vec![0u64; accepted_per_step.iter().max().map_or(1, |m| *m as usize + 1)];
        for a in accepted_per_step {
            hist[*a as usize] += 1;
        }
        hist
    });
    Ok(Raw {
        length: acceptance_length_of_counts(accepted, steps).unwrap_or(1.0),
        rate: ratio_or(accepted, drafted, 0.0),
        hist,
        accepted,
        drafted,
        steps,
        k: None,
        per_step,
    })
}

/// The histogram, the totals and the per-step lists must tell the same story.
fn check_consistency(engine: Engine, raw: &Raw) -> Result<(), Rejection> {
    let Raw {
        hist,
        accepted,
        drafted,
        steps,
        k,
        per_step,
        ..
    } = raw;
    let (accepted, drafted, steps) = (*accepted, *drafted, *steps);
    if let Some(hist) = hist {
        check_histogram(engine, hist, *k, accepted, steps)?;
    }
    if accepted > drafted {
        return Err(Rejection::AcceptedExceedsDrafted {
            engine,
            accepted,
            drafted,
        });
    }
    if let Some((acc, dra)) = per_step {
        check_per_step(acc, dra, steps, accepted, drafted).map_err(|problem| Rejection::PerStep { engine, problem })?;
    }
    Ok(())
}

/// The histogram has k + 1 buckets (when k is known), one count per step and the accepted
/// tokens as its weighted sum.
fn check_histogram(engine: Engine, hist: &[u64], k: Option<u32>, accepted: u64, steps: u64) -> Result<(), Rejection> {
    if let Some(k) = k {
        if hist.len() != k as usize + 1 {
            return Err(Rejection::HistogramLength {
                engine,
                len: hist.len(),
                num_spec_tokens: k,
            });
        }
    }
    let histogram_sum = hist.iter().try_fold(0u64, |acc, c| acc.checked_add(*c));
    if histogram_sum != Some(steps) {
        return Err(Rejection::HistogramSteps {
            engine,
            histogram_sum: histogram_sum.unwrap_or(u64::MAX),
            steps,
        });
    }
    let weighted_sum = hist.iter().enumerate().try_fold(0u64, |acc, (j, c)| {
        (j as u64).checked_mul(*c).and_then(|x| acc.checked_add(x))
    });
    if weighted_sum != Some(accepted) {
        return Err(Rejection::HistogramAccepted {
            engine,
            weighted_sum: weighted_sum.unwrap_or(u64::MAX),
            accepted,
        });
    }
    Ok(())
}

fn check_per_step(accepted: &[u64], drafted: &[u64], steps: u64, total_acc: u64, total_dra: u64) -> Result<(), String> {
    for (name, list) in [("per_step_accepted", accepted), ("per_step_drafted", drafted)] {
        if list.len() as u64 != steps {
            return Err(format!("{name} has {} entries for {steps} steps", list.len()));
        }
    }
    let sum = |l: &[u64]| l.iter().try_fold(0u64, |a, x| a.checked_add(*x));
    if sum(accepted) != Some(total_acc) {
        return Err(format!("per_step_accepted does not sum to {total_acc}"));
    }
    if sum(drafted) != Some(total_dra) {
        return Err(format!("per_step_drafted does not sum to {total_dra}"));
    }
    if let Some(i) = accepted.iter().zip(drafted).position(|(a, d)| a > d) {
        return Err(format!("step {i} accepted {} of {} drafted", accepted[i], drafted[i]));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(body: Value) -> SpecRecord {
        match adapt_response(&body) {
            PayloadOutcome::Record(r) => r,
            other => panic!("{other:?}"),
        }
    }

    fn rejected(body: Value) -> Rejection {
        match adapt_response(&body) {
            PayloadOutcome::Rejected(r) => r,
            other => panic!("{other:?}"),
        }
    }

    fn vllm(stats: Value) -> Value {
        json!({"choices": [], "usage": {"completion_tokens": 53}, "metrics": {"speculative_decoding": stats}})
    }

    fn aiperf_example() -> Value {
        // AIPerf worked example: steps accepting [2,3,1,4,2,0,3,3] with k=4.
        json!({
            "mean_acceptance_length": 3.25, "draft_acceptance_rate": 0.5625,
            "acceptance_histogram": [1, 1, 2, 3, 1], "num_spec_steps": 8,
            "num_accepted_draft_tokens": 18, "num_draft_tokens": 32, "num_spec_tokens": 4,
            "per_step_accepted": [2, 3, 1, 4, 2, 0, 3, 3], "per_step_drafted": [4, 4, 4, 4, 4, 4, 4, 4]
        })
    }

    #[test]
    fn vllm_detailed_payload_becomes_a_record() {
        let r = record(vllm(aiperf_example()));
        assert_eq!(r.engine, Engine::Vllm);
        assert_eq!(
            r.acceptance_histogram,
            [(0, 1), (1, 1), (2, 2), (3, 3), (4, 1)].into_iter().collect()
        );
        assert_eq!(
            (r.num_spec_steps, r.num_accepted_draft_tokens, r.num_draft_tokens),
            (8, 18, 32)
        );
        assert_eq!(r.completion_tokens, Some(53));
        assert_eq!(r.per_step_accepted.as_deref(), Some(&[2, 3, 1, 4, 2, 0, 3, 3][..]));
        let line = serde_json::to_string(&r).unwrap();
        assert!(
            line.contains(r#""acceptance_histogram":{"0":1,"1":1,"2":2,"3":3,"4":1}"#),
            "{line}"
        );
    }

    #[test]
    fn streaming_stats_ride_the_usage_chunk_and_the_last_usage_counts() {
        let mut scan = PayloadScan::new();
        scan.push(&json!({"choices": [{"delta": {"content": "hi"}}], "usage": null}));
        scan.push(&json!({"choices": [{"delta": {}, "finish_reason": "length"}]}));
        scan.push(&json!({"choices": [], "usage": {"completion_tokens": 9},
            "metrics": {"speculative_decoding": {"mean_acceptance_length": 1.0, "draft_acceptance_rate": 0.0,
            "acceptance_histogram": [0, 0], "num_spec_steps": 0, "num_accepted_draft_tokens": 0,
            "num_draft_tokens": 0, "num_spec_tokens": 1}}}));
        let PayloadOutcome::Record(r) = scan.finish() else {
            panic!()
        };
        assert_eq!(r.num_spec_steps, 0);
        assert!(r.acceptance_histogram.is_empty());
        assert_eq!(r.completion_tokens, Some(9));
    }

    #[test]
    fn trtllm_choice_payload_derives_length() {
        let r = record(
            json!({"choices": [{"index": 0, "finish_reason": "stop", "speculative_decoding": {
            "acceptance_rate": 0.5, "total_accepted_draft_tokens": 30, "total_draft_tokens": 60,
            "num_spec_steps": 20, "acceptance_histogram": [8, 0, 6, 6], "num_spec_tokens": 3}}]}),
        );
        assert_eq!(r.engine, Engine::Trtllm);
        assert_eq!(r.mean_acceptance_length, 2.5);
        assert_eq!(r.draft_acceptance_rate, 0.5);
        let r = record(json!({"choices": [{"speculative_decoding": {
            "acceptance_rate": 0.5, "total_accepted_draft_tokens": 3, "total_draft_tokens": 6,
            "num_spec_steps": 2, "acceptance_histogram": [0, 1, 1], "num_spec_tokens": null}}]}));
        assert_eq!(r.num_spec_tokens, None);
    }

    #[test]
    fn sglang_payload_is_normalised() {
        let r = record(json!({"sglext": {"spec_tokens_details": {
            "spec_accept_rate": 0.41, "spec_accept_length": 3.09, "spec_num_correct_drafts": 12,
            "spec_num_proposed_drafts": 30, "spec_verify_ct": 10, "spec_correct_drafts_histogram": [4, 3, 1, 1, 1]}}}));
        assert_eq!(r.engine, Engine::Sglang);
        assert_eq!(r.mean_acceptance_length, 2.2);
        assert_eq!(r.draft_acceptance_rate, 0.4);
    }

    #[test]
    fn sglang_pr34814_counts_are_exact_and_its_lengths_give_steps_and_histogram() {
        // Three verify steps of widths 5, 4 and 5 (ragged), accepting 3, 0 and 2 drafts.
        let detailed = json!({"index": 0, "mode": "detailed", "num_verification_steps": 3,
            "num_verified_draft_tokens": 11, "num_accepted_draft_tokens": 5, "draft_acceptance_rate": 5.0 / 11.0,
            "mean_accept_length": 1.0 + 5.0 / 3.0, "verify_lengths": [5, 4, 5], "accept_lengths": [4, 1, 3]});
        // Its own details beside it are left for the exact counts.
        let r = record(json!({"sglext": {"speculative_decoding_stats": [detailed.clone()],
            "spec_tokens_details": {"spec_num_correct_drafts": 1}}}));
        assert_eq!(r.engine, Engine::Sglang);
        assert_eq!(
            (r.num_spec_steps, r.num_draft_tokens, r.num_accepted_draft_tokens),
            (3, 11, 5)
        );
        assert_eq!(r.mean_acceptance_length, 1.0 + 5.0 / 3.0);
        assert_eq!(r.draft_acceptance_rate, 5.0 / 11.0);
        assert_eq!(r.per_step_drafted, Some(vec![4, 3, 4]));
        assert_eq!(r.per_step_accepted, Some(vec![3, 0, 2]));
        assert_eq!(r.acceptance_histogram, [(0, 1), (2, 1), (3, 1)].into_iter().collect());
        assert_eq!(r.unmerged_pr.as_deref(), Some("sgl-project/sglang#34814"));
        // summary: counts only, no histogram invented.
        let mut summary = detailed.clone();
        for field in ["verify_lengths", "accept_lengths"] {
            summary.as_object_mut().unwrap().remove(field);
        }
        summary["mode"] = json!("summary");
        let r = record(json!({"sglext": {"speculative_decoding_stats": summary}}));
        assert_eq!((r.num_spec_steps, r.num_draft_tokens), (3, 11));
        assert!(r.acceptance_histogram.is_empty() && r.per_step_accepted.is_none());
        // Streamed, each choice's entry rides its own finishing chunk: one record of both.
        let mut scan = PayloadScan::new();
        let mut second = detailed.clone();
        second["index"] = json!(1);
        scan.push(&json!({"choices": [{"index": 0, "finish_reason": "length"}], "sglext": {"speculative_decoding_stats": [detailed.clone()]}}));
        scan.push(&json!({"choices": [{"index": 1, "finish_reason": "length"}], "sglext": {"speculative_decoding_stats": [second]}}));
        // ... and the released details (asked for by detection) come in a chunk of their own:
        // the exact counts are read, not both.
        scan.push(&json!({"choices": [], "sglext": {"spec_tokens_details": [
            {"spec_verify_ct": 3, "spec_accept_token_num": 5, "spec_draft_token_num": 12},
            {"spec_verify_ct": 3, "spec_accept_token_num": 5, "spec_draft_token_num": 12}]}}));
        let PayloadOutcome::Record(both) = scan.finish() else {
            panic!("one record")
        };
        assert_eq!((both.num_spec_steps, both.num_draft_tokens), (6, 22));
        // Lengths that disagree with the counts, or a zero length, are rejected.
        let mut wrong = detailed.clone();
        wrong["accept_lengths"] = json!([4, 1, 4]);
        assert_eq!(
            rejected(json!({"sglext": {"speculative_decoding_stats": wrong}})).kind(),
            "per_step_arrays"
        );
        let mut zero = detailed;
        zero["verify_lengths"] = json!([5, 0, 5]);
        assert_eq!(
            rejected(json!({"sglext": {"speculative_decoding_stats": zero}})).kind(),
            "wrong_type"
        );
    }

    #[test]
    fn mlx_vlm_draft_rounds_give_a_length_and_never_steps_from_predicted_n() {
        let partial = |timings: Value| match adapt_response(&json!({ "timings": timings })) {
            PayloadOutcome::Partial(p) => p,
            other => panic!("{other:?}"),
        };
        // 41 tokens: the first from the prompt's pass, 40 in 16 rounds.
        let p = partial(json!({"predicted_n": 41, "draft_n": 64, "draft_n_accepted": 30, "draft_rounds": 16}));
        assert_eq!(p.mean_acceptance_length, Some(2.5));
        assert_eq!((p.num_accepted_draft_tokens, p.num_draft_tokens), (Some(30), Some(64)));
        // mlx-vlm PR #2324: accepted may exceed what the counts can hold; the length stays.
        let p = partial(json!({"predicted_n": 9, "draft_n": 6, "draft_n_accepted": 12, "draft_rounds": 4}));
        assert_eq!(p.mean_acceptance_length, Some(2.0));
        assert_eq!(p.num_accepted_draft_tokens, None);
        // llama.cpp proper: no rounds, no length; accepted above drafted is still rejected.
        assert_eq!(
            partial(json!({"predicted_n": 9, "draft_n": 6, "draft_n_accepted": 3})).mean_acceptance_length,
            None
        );
        assert_eq!(
            rejected(json!({"timings": {"predicted_n": 9, "draft_n": 6, "draft_n_accepted": 7}})).kind(),
            "accepted_exceeds_drafted"
        );
        assert_eq!(
            rejected(json!({"timings": {"predicted_n": 9, "draft_n": 6, "draft_n_accepted": 3, "draft_rounds": "4"}}))
                .kind(),
            "wrong_type"
        );
    }

    #[test]
    fn no_stats_when_absent_or_null() {
        assert_eq!(
            adapt_response(&json!({"choices": [{"message": {}}]})),
            PayloadOutcome::NoStats
        );
        assert_eq!(
            adapt_response(&json!({"metrics": {"speculative_decoding": null}})),
            PayloadOutcome::NoStats
        );
        assert_eq!(adapt_response(&json!([1, 2])), PayloadOutcome::NoStats);
    }

    #[test]
    fn ambiguous_and_repeated_carriers_are_rejected() {
        let mut both = vllm(aiperf_example());
        both["choices"] = json!([{"speculative_decoding": {}}]);
        assert_eq!(rejected(both).kind(), "ambiguous_shape");
        let mut scan = PayloadScan::new();
        scan.push(&vllm(aiperf_example()));
        scan.push(&vllm(aiperf_example()));
        assert_eq!(scan.finish(), PayloadOutcome::Rejected(Rejection::MultipleCarriers(2)));
    }

    /// A server that repeats its stats in every chunk: one object is held, the rest counted,
    /// and the response is rejected for its many carriers.
    #[test]
    fn stats_repeated_in_every_chunk_are_counted_not_held() {
        let chunk = json!({"choices": [], "metrics": {"speculative_decoding": {"num_spec_steps": 1,
            "num_accepted_draft_tokens": 1, "num_draft_tokens": 3, "num_spec_tokens": 3,
            "acceptance_histogram": [0, 1, 0, 0], "mean_acceptance_length": 2.0, "draft_acceptance_rate": 0.33}}});
        let mut scan = PayloadScan::new();
        for _ in 0..10_000 {
            scan.push(&chunk);
        }
        assert_eq!(scan.carriers.len(), 1, "one object held");
        assert_eq!(
            scan.finish(),
            PayloadOutcome::Rejected(Rejection::MultipleCarriers(10_000))
        );
    }

    #[test]
    fn every_validation_rule_rejects() {
        let cases: Vec<(&str, Value, &str)> = vec![
            ("acceptance_histogram", json!([1, 1, 2, 3, true]), "wrong_type"),
            ("acceptance_histogram", json!([1, 1, 2, 3, 1.0]), "wrong_type"),
            ("acceptance_histogram", json!([1, 1, 2, 3, "1"]), "wrong_type"),
            ("acceptance_histogram", json!([1, 1, 2, -3, 1]), "wrong_type"),
            ("acceptance_histogram", json!({"0": 1}), "wrong_type"),
            ("acceptance_histogram", json!([1, 1, 2, 4]), "histogram_length"),
            (
                "acceptance_histogram",
                json!([1, 1, 2, 3, 2]),
                "histogram_steps_mismatch",
            ),
            ("num_accepted_draft_tokens", json!(17), "histogram_accepted_mismatch"),
            ("num_draft_tokens", json!(10), "accepted_exceeds_drafted"),
            ("per_step_accepted", json!([2, 3, 1, 4, 2, 0, 3]), "per_step_arrays"),
            ("per_step_drafted", json!([4, 4, 4, 4, 4, 4, 4, 5]), "per_step_arrays"),
            ("per_step_accepted", json!([2, 3, 1, 4, 2, 0, 1, 5]), "per_step_arrays"),
            ("mean_acceptance_length", json!("3.25"), "wrong_type"),
            ("num_spec_steps", json!(8.0), "wrong_type"),
            ("num_spec_steps", Value::Null, "missing_field"),
        ];
        for (field, value, kind) in cases {
            let mut stats = aiperf_example();
            stats[field] = value.clone();
            let r = rejected(vllm(stats));
            assert_eq!(r.kind(), kind, "{field} = {value}: {r}");
        }
        let mut stats = aiperf_example();
        stats.as_object_mut().unwrap().remove("per_step_drafted");
        assert_eq!(rejected(vllm(stats)).kind(), "missing_field");
        // per_step_accepted[i] > per_step_drafted[i] with correct sums.
        let mut stats = aiperf_example();
        stats["per_step_drafted"] = json!([1, 4, 4, 4, 4, 4, 4, 7]);
        let r = rejected(vllm(stats));
        assert!(r.to_string().contains("step 0 accepted 2 of 1"), "{r}");
    }
}
