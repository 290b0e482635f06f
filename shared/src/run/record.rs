//! Request-level benchmark results (docs/FORMATS.md, as `vllm bench serve`): the per-request
//! record, the run's latency and throughput metrics and their console layout (the result file's
//! keys are in `results`).

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::request::http_trace::HttpTrace;
use crate::request::per_request::{PartialSpecRecord, ServerTimings, SpecRecord};
use crate::run::aggregate::SpecAggregator;
use crate::run::console_rows::{header, row, row_f};
use crate::run::goodput::{RequestLatency, Slo};
pub use crate::run::latency_stats::{percentile_name, LatencyStats};
use crate::run::tail::{TailAttribution, TailTally};
use crate::sample::Sample;
use crate::scrape::SpecDecodeData;

/// How a request failed, for counting by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server answered with a non-success HTTP status.
    HttpStatus,
    /// No connection could be made.
    Connect,
    /// The request took longer than its timeout.
    Timeout,
    /// The body broke off, or a stream ended without its finish.
    StreamCut,
    /// The body was not the JSON / SSE an OpenAI-compatible server sends.
    BadResponse,
    /// Stopped by the user (Ctrl-C) before it finished.
    Cancelled,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::BadResponse => "bad_response",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

/// One sent request, as written to `records.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Sequence number in sending order (0-based, warm-up included).
    pub request_id: u64,
    /// Base URL of the server it went to.
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The served name it asked for, when the run sent to several (`--model a,b`: a base
    /// model and its adapters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Warm-up requests are excluded from every figure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// The turn (0-based) of a multi-turn conversation, whose turns share `request_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Send time, milliseconds after the run started.
    pub start_ms: f64,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
    /// Gaps between consecutive content-bearing chunks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub itl_ms: Vec<f64>,
    /// Tokens in each content-bearing chunk (the first, then one per `itl_ms` gap), when every
    /// chunk carried the usage so far (`continuous_usage_stats`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunk_tokens: Vec<u32>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode_acceptance: Option<SpecRecord>,
    /// A released engine's partial per-request figures (TensorRT-LLM's length, llama.cpp's
    /// draft counts), when that is all the response had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode_partial: Option<PartialSpecRecord>,
    /// Why the request's spec-decode payload was rejected, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode_rejected: Option<String>,
    /// The server's `usage` beside speclens's own counts, when a successful response had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageRecord>,
    /// The server's own timings of the request, when the response carried them (vLLM 0.33's
    /// `--enable-per-request-metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timings: Option<ServerTimings>,
    /// When the request was due, on the run's clock: the moment the sender let it go, its
    /// scheduled time come and a slot free (AIPerf's credit, stamped when it is issued).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit_ms: Option<f64>,
    /// When the exchange ended, on the run's clock: the response's last bytes, or the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_ms: Option<f64>,
    /// The `max_tokens` the request asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The transport's timings of the exchange (speclens's own HTTP/1.1 transport only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTrace>,
}

impl RequestRecord {
    /// When the exchange ended, on the run's clock (for a record of an older speclens, its send
    /// plus its latency, or the send when it failed).
    pub fn ended_ms(&self) -> f64 {
        self.end_ms
            .filter(|e| e.is_finite() && *e >= self.start_ms)
            .unwrap_or_else(|| self.start_ms + self.e2el_ms.filter(|e| *e > 0.0).unwrap_or(0.0))
    }

    /// When the first token came, on the run's clock: counted back from the end by the time
    /// after it (the end is stamped on arrival; the send time before the connection was taken).
    pub fn first_token_ms(&self) -> Option<f64> {
        let ttft = self.ttft_ms.filter(|t| t.is_finite() && *t >= 0.0)?;
        let after = self.e2el_ms.filter(|e| e.is_finite() && *e >= ttft).map(|e| e - ttft);
        Some(match (self.end_ms, after) {
            (Some(_), Some(after)) => (self.ended_ms() - after).max(self.start_ms),
            _ => self.start_ms + ttft,
        })
    }

    /// AIPerf's request latency (`request_latency`): from the send to the last chunk with
    /// content, where AIPerf ends it, not to the stream's last message as vLLM's E2E latency
    /// does (a usage chunk and `[DONE]` can come after it); the end for a response that came
    /// whole.
    pub fn aiperf_latency_ms(&self) -> Option<f64> {
        let e2el = self.e2el_ms?;
        Some(match self.ttft_ms {
            Some(ttft) => (ttft + self.itl_ms.iter().sum::<f64>()).min(e2el),
            None => e2el,
        })
    }

    /// What the per-token ITL, tokens per chunk and interactivity need of this record.
    pub fn chunked(&self) -> crate::run::chunks::ChunkedRequest<'_> {
        crate::run::chunks::ChunkedRequest {
            ttft_ms: self.ttft_ms,
            latency_ms: self.aiperf_latency_ms(),
            itl_ms: &self.itl_ms,
            chunk_tokens: &self.chunk_tokens,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
        }
    }

    /// AIPerf's inter-token latency: (its request latency − TTFT) ÷ (output tokens − 1); none
    /// with a single token.
    pub fn aiperf_itl_ms(&self) -> Option<f64> {
        let (ttft, latency) = (self.ttft_ms?, self.aiperf_latency_ms()?);
        (self.output_tokens > 1).then(|| (latency - ttft) / (self.output_tokens - 1) as f64)
    }

    /// Time per output token after the first, (E2E − TTFT) ÷ (output tokens − 1): none for a
    /// request without both times or with a single token (vLLM leaves those out of TPOT).
    pub fn tpot_ms(&self) -> Option<f64> {
        let (t, e) = (self.ttft_ms?, self.e2el_ms?);
        (self.output_tokens > 1).then(|| RequestLatency::of(t, e, self.output_tokens).tpot_ms)
    }
}

/// What a response's `usage` reported, beside speclens's own count of the same prompt and
/// generated text (the cl100k_base tokenizer): AIPerf's `usage_*` figures and their
/// discrepancy from the client's count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// speclens's count of the prompt's text and of the generated text.
    pub client_prompt_tokens: u64,
    pub client_completion_tokens: u64,
}

/// A usage count's distance from the client's, as AIPerf's `usage_*_diff_pct`:
/// |usage − client| ÷ client × 100; none when the client counted nothing.
pub fn usage_diff_pct(usage: u64, client: u64) -> Option<f64> {
    (client > 0).then(|| (usage as f64 - client as f64).abs() / client as f64 * 100.0)
}

/// Above this many percent a request's usage counts as a discrepancy (AIPerf's default
/// `AIPERF_METRICS_USAGE_PCT_DIFF_THRESHOLD`).
pub const USAGE_DISCREPANCY_PCT: f64 = 10.0;

/// AIPerf's usage figures over the requests whose responses reported `usage`.
#[derive(Debug, Clone, Default)]
pub struct UsageTally {
    pub prompt_tokens: Sample,
    pub completion_tokens: Sample,
    pub total_tokens: Sample,
    pub prompt_diff_pct: Sample,
    pub completion_diff_pct: Sample,
    /// Requests whose prompt or completion usage is more than [`USAGE_DISCREPANCY_PCT`] away
    /// from the client's count.
    pub discrepancies: u64,
}

impl UsageTally {
    fn push(&mut self, u: &UsageRecord) {
        let prompt_diff = u.prompt_tokens.and_then(|t| usage_diff_pct(t, u.client_prompt_tokens));
        let completion_diff = u
            .completion_tokens
            .and_then(|t| usage_diff_pct(t, u.client_completion_tokens));
        for (count, all) in [
            (u.prompt_tokens, &mut self.prompt_tokens),
            (u.completion_tokens, &mut self.completion_tokens),
            (u.total_tokens, &mut self.total_tokens),
        ] {
            if let Some(count) = count {
                all.push(count as f64);
            }
        }
        if let Some(pct) = prompt_diff {
            self.prompt_diff_pct.push(pct);
        }
        if let Some(pct) = completion_diff {
            self.completion_diff_pct.push(pct);
        }
        // As AIPerf decides: the prompt's diff first, then the completion's; a record without
        // the one it reaches counts for nothing.
        let off = |pct: f64| pct > USAGE_DISCREPANCY_PCT;
        let discrepancy = match (prompt_diff, completion_diff) {
            (Some(p), _) if off(p) => true,
            (Some(_), Some(c)) => off(c),
            _ => false,
        };
        self.discrepancies += u64::from(discrepancy);
    }
}

/// The run's request-level figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    pub duration_s: f64,
    pub completed: u64,
    pub failed: u64,
    pub max_concurrency: Option<u64>,
    pub request_rate: Option<f64>,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub request_throughput: f64,
    pub output_throughput: f64,
    pub total_token_throughput: f64,
    /// Completed requests per second that met every `--goodput` objective (none asked: `None`).
    pub request_goodput: Option<f64>,
    /// How many completed requests met them.
    pub good_requests: Option<u64>,
    /// Most requests in flight at once.
    pub max_concurrent_requests: u64,
    pub ttft: Option<LatencyStats>,
    pub tpot: Option<LatencyStats>,
    pub itl: Option<LatencyStats>,
    pub e2el: Option<LatencyStats>,
    /// The server's own timings, of the requests whose responses carried them (vLLM 0.33's
    /// `--enable-per-request-metrics`): its queue time, its TTFT, and the client's TTFT less the
    /// server's (network and client).
    #[serde(default)]
    pub server: ServerSplit,
    /// Per-request acceptance against latency, when requests carried their acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<TailAttribution>,
    /// Latency that speculation does not distort: per-token ITL, tokens per chunk, E2E
    /// normalized interactivity.
    #[serde(default)]
    pub chunks: crate::run::chunks::ChunkFigures,
}

/// TTFT split by where it was spent, from the requests that carried the server's timings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSplit {
    /// Requests whose response carried the server's TTFT.
    pub requests: u64,
    pub queue_time: Option<LatencyStats>,
    pub time_to_first_token: Option<LatencyStats>,
    pub ttft_outside_server: Option<LatencyStats>,
}

/// The definition shown on hover beside the TTFT split.
pub const TTFT_SPLIT_DEFINITION: &str = "The client's time to first token, averaged over the requests whose response carried the server's own timings (vLLM 0.33's --enable-per-request-metrics): queue_time_ms (waiting before the scheduler took the request), then the server's time_to_first_token_ms (from the scheduler taking it to its first token: prefill and the first step), then what the server did not see (network, HTTP and the client). Means, so the three parts add up to the mean TTFT of those requests.";

/// The mean TTFT of the requests the server timed, split by where it was spent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TtftSplit {
    pub requests: u64,
    pub queue_ms: f64,
    /// The server's TTFT, which starts after the queue: prefill and the first step.
    pub in_server_ms: f64,
    pub outside_server_ms: f64,
}

impl TtftSplit {
    /// From the three means (queue, the server's TTFT, TTFT outside the server).
    pub fn of_means(requests: u64, queue_ms: f64, server_ttft_ms: f64, outside_server_ms: f64) -> Option<TtftSplit> {
        let finite = [queue_ms, server_ttft_ms, outside_server_ms]
            .iter()
            .all(|v| v.is_finite());
        (requests > 0 && finite).then_some(TtftSplit {
            requests,
            queue_ms,
            in_server_ms: server_ttft_ms,
            outside_server_ms,
        })
    }

    /// From a run's server split (the tally's, before it is written).
    pub fn of_split(split: &ServerSplit) -> Option<TtftSplit> {
        TtftSplit::of_means(
            split.requests,
            split.queue_time.as_ref()?.mean,
            split.time_to_first_token.as_ref()?.mean,
            split.ttft_outside_server.as_ref()?.mean,
        )
    }

    /// The one line the console and the run page print.
    pub fn sentence(&self) -> String {
        format!(
            "TTFT split (mean of the {} requests the server timed): {:.2} ms = {:.2} ms queued + {:.2} ms in the server to the first token + {:.2} ms outside the server (network and client)",
            self.requests,
            self.queue_ms + self.in_server_ms + self.outside_server_ms,
            self.queue_ms,
            self.in_server_ms,
            self.outside_server_ms
        )
    }
}

/// The measured window's records folded one at a time as they finish (warm-up ones left out):
/// every figure a run reports, in memory that does not grow with the run (each distribution
/// is a [`Sample`]; the records themselves go to `records.jsonl`).
#[derive(Debug, Clone, Default)]
pub struct RunTally {
    /// Requests of the window, failed ones included.
    pub requests: u64,
    pub completed: u64,
    pub failed: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of successful requests.
    pub ttft_ms: Sample,
    pub tpot_ms: Sample,
    pub itl_ms: Sample,
    pub e2el_ms: Sample,
    pub input_lens: Sample,
    pub output_lens: Sample,
    /// AIPerf's streaming figures: the gap from the first content chunk to the second (time to
    /// second token), and output tokens per second each user saw (1 ÷ its inter-token latency).
    pub ttst_ms: Sample,
    pub tokens_per_s_per_user: Sample,
    /// AIPerf's request latency and inter-token latency, which end at the last content chunk
    /// ([`RequestRecord::aiperf_latency_ms`]), where vLLM's E2E latency and TPOT end at the
    /// stream's last message.
    pub aiperf_latency_ms: Sample,
    pub aiperf_itl_ms: Sample,
    /// AIPerf's benchmark duration's ends, over successful requests: the first send and the
    /// last send plus its request latency (ms on the run's clock).
    pub aiperf_span_ms: Option<(f64, f64)>,
    /// The input lengths of the failed requests (AIPerf's `error_isl`).
    pub error_isl: Sample,
    /// Output token counts of requests that produced any (AIPerf's `output_token_count`).
    pub output_counts: Sample,
    /// AIPerf's `decode_duration` (request latency − TTFT, streamed), its
    /// `e2e_output_token_throughput` (output tokens ÷ request latency) and its
    /// `prefill_throughput_per_user` (input tokens ÷ TTFT, streamed), per request.
    pub decode_ms: Sample,
    pub e2e_output_tokens_per_s: Sample,
    pub prefill_tokens_per_s_per_user: Sample,
    /// AIPerf's coordinated-omission-aware figures, failed requests included: from when a
    /// request was due to its send, and to its end.
    pub credit_to_start_ms: Sample,
    pub effective_latency_ms: Sample,
    /// AIPerf's output length against the `max_tokens` asked for: the signed difference in
    /// percent, and how many differ by more than 5 % (at most 50 tokens).
    pub osl_mismatch_pct: Sample,
    pub osl_mismatches: u64,
    /// The transport's `http_req_*` figures, in [`crate::request::http_trace::HTTP_NAMES`] order.
    pub http: [Sample; 14],
    /// The server's own queue time and TTFT, and the client's TTFT less the server's, of the
    /// requests whose responses carried them.
    pub server_queue_ms: Sample,
    pub server_ttft_ms: Sample,
    pub ttft_outside_server_ms: Sample,
    /// The server's usage counts of the requests that reported them, and their distance from
    /// speclens's own counts (AIPerf's `usage_*`).
    pub usage: UsageTally,
    /// Failures by kind: how many and the first one's message.
    pub failures: BTreeMap<ErrorKind, (u64, String)>,
    /// The first failure's message, in the order they finished.
    pub first_error: Option<String>,
    /// Successful requests that carried per-request spec-decode stats (full or partial).
    pub with_stats: u64,
    /// Successful requests that carried a full per-request record (not one SGLang's absence
    /// stands for, nor a released engine's partial one).
    pub with_full_stats: u64,
    /// The per-request spec-decode path.
    pub spec: SpecAggregator,
    /// The per-token ITL, tokens per chunk and E2E normalized interactivity.
    pub chunks: crate::run::chunks::ChunkTally,
    /// Each request's acceptance length against its latency (who pays in the tail).
    pub tail: TailTally,
    /// Per-request payloads rejected, by reason.
    pub rejected: BTreeMap<String, u64>,
    /// The engine whose successful requests without details took no step (SGLang leaves the
    /// details out of a request that never verified).
    absent_means_zero_steps: Option<Engine>,
    /// The `--goodput` objectives, and how many completed requests met them.
    slo: Option<Slo>,
    good: u64,
}

/// AIPerf's `decode_duration` of a streamed request: its request latency − TTFT (ms).
pub fn aiperf_decode_ms(r: &RequestRecord) -> Option<f64> {
    let (t, e) = (r.ttft_ms?, r.aiperf_latency_ms()?);
    (e >= t).then_some(e - t)
}

/// AIPerf's `e2e_output_token_throughput`: output tokens ÷ its request latency (tokens/s per
/// user); none for a zero latency.
pub fn aiperf_e2e_output_tokens_per_s(r: &RequestRecord) -> Option<f64> {
    let e = r.aiperf_latency_ms().filter(|e| *e > 0.0)?;
    Some(r.output_tokens as f64 / (e / 1e3))
}

/// AIPerf's `prefill_throughput_per_user` of a streamed request: input tokens ÷ TTFT (tokens/s
/// per user); none for a zero TTFT.
pub fn aiperf_prefill_tokens_per_s(r: &RequestRecord) -> Option<f64> {
    let t = r.ttft_ms.filter(|t| *t > 0.0)?;
    Some(r.input_tokens as f64 / (t / 1e3))
}

/// AIPerf's `osl_mismatch_diff_pct`: (output tokens − `max_tokens`) ÷ `max_tokens` in percent,
/// signed; none without a `max_tokens` or with 0.
pub fn osl_mismatch_pct(r: &RequestRecord) -> Option<f64> {
    let asked = r.max_tokens.filter(|m| *m > 0)? as f64;
    Some((r.output_tokens as f64 - asked) / asked * 100.0)
}

/// AIPerf's mismatch: the output length off the `max_tokens` asked for by more than 5 % of it,
/// at most 50 tokens (its `AIPERF_METRICS_OSL_MISMATCH_*` defaults).
pub fn osl_mismatched(r: &RequestRecord) -> bool {
    r.max_tokens.is_some_and(|asked| {
        let off = (r.output_tokens as f64 - asked as f64).abs();
        off > (asked as f64 * 5.0 / 100.0).min(50.0)
    })
}

impl RunTally {
    pub fn new(absent_means_zero_steps: Option<Engine>) -> RunTally {
        RunTally {
            absent_means_zero_steps,
            ..RunTally::default()
        }
    }

    /// The tally counting the requests that meet `slo` (`--goodput`) too.
    pub fn with_goodput(self, slo: Option<Slo>) -> RunTally {
        RunTally { slo, ..self }
    }

    /// Fold in one finished request (a warm-up one counts for nothing).
    pub fn push(&mut self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        self.requests += 1;
        self.push_transport(r);
        if !r.success {
            self.failed += 1;
            self.error_isl.push(r.input_tokens as f64);
            if let (Some(kind), Some(message)) = (r.error_kind, &r.error) {
                self.failures.entry(kind).or_insert_with(|| (0, message.clone())).0 += 1;
            }
            if self.first_error.is_none() {
                self.first_error = r.error.clone();
            }
            return;
        }
        self.completed += 1;
        self.input_tokens += r.input_tokens;
        self.output_tokens += r.output_tokens;
        self.input_lens.push(r.input_tokens as f64);
        self.output_lens.push(r.output_tokens as f64);
        if r.output_tokens > 0 {
            self.output_counts.push(r.output_tokens as f64);
        }
        if let Some(t) = r.ttft_ms {
            self.ttft_ms.push(t);
        }
        if let Some(server) = &r.server_timings {
            self.push_server(server, r.ttft_ms);
        }
        self.chunks.push(&r.chunked());
        for (sample, value) in [
            (&mut self.decode_ms, aiperf_decode_ms(r)),
            (&mut self.e2e_output_tokens_per_s, aiperf_e2e_output_tokens_per_s(r)),
            (&mut self.prefill_tokens_per_s_per_user, aiperf_prefill_tokens_per_s(r)),
        ] {
            if let Some(v) = value {
                sample.push(v);
            }
        }
        let tpot_ms = r.tpot_ms();
        if let Some(tpot_ms) = tpot_ms {
            self.tpot_ms.push(tpot_ms);
        }
        if let Some(itl_ms) = r.aiperf_itl_ms() {
            self.aiperf_itl_ms.push(itl_ms);
            if itl_ms > 0.0 {
                self.tokens_per_s_per_user.push(1e3 / itl_ms);
            }
        }
        if let Some(latency) = r.aiperf_latency_ms() {
            self.aiperf_latency_ms.push(latency);
            let (first, last) = self.aiperf_span_ms.unwrap_or((r.start_ms, r.start_ms + latency));
            self.aiperf_span_ms = Some((first.min(r.start_ms), last.max(r.start_ms + latency)));
        }
        if let Some(gap) = r.itl_ms.first() {
            self.ttst_ms.push(*gap);
        }
        if let Some(u) = &r.usage {
            self.usage.push(u);
        }
        r.itl_ms.iter().for_each(|gap| self.itl_ms.push(*gap));
        if let Some(e) = r.e2el_ms {
            self.e2el_ms.push(e);
        }
        if let (Some(slo), Some(t), Some(e)) = (&self.slo, r.ttft_ms, r.e2el_ms) {
            if slo.met_by(RequestLatency::of(t, e, r.output_tokens)) {
                self.good += 1;
            }
        }
        if r.spec_decode_acceptance.is_some() || r.spec_decode_partial.is_some() {
            self.with_stats += 1;
        }
        // A request's own acceptance length: a full record's (when it took a step) or the
        // length a partial one reports.
        let length = match (&r.spec_decode_acceptance, &r.spec_decode_partial) {
            (Some(rec), _) => Some(rec.mean_acceptance_length).filter(|_| rec.num_spec_steps > 0),
            (None, Some(partial)) => partial.mean_acceptance_length,
            (None, None) => None,
        };
        if let (Some(length), Some(e2el)) = (length, r.e2el_ms) {
            self.tail.push(length, e2el, tpot_ms);
        }
        if let Some(rec) = &r.spec_decode_acceptance {
            self.with_full_stats += 1;
            self.spec.push(rec);
        } else if let Some(partial) = &r.spec_decode_partial {
            self.spec.push_partial(partial);
        } else if let (Some(engine), None) = (self.absent_means_zero_steps, &r.spec_decode_rejected) {
            self.spec.push(&SpecRecord::zero_steps(engine));
        }
        if let Some(reason) = &r.spec_decode_rejected {
            *self
                .rejected
                .entry(reason.split(':').next().unwrap_or(reason).to_string())
                .or_default() += 1;
        }
    }

    /// When the request was due (of every request), and for a successful one its length against
    /// its `max_tokens` and its HTTP timings.
    fn push_transport(&mut self, r: &RequestRecord) {
        if let Some(credit) = r.credit_ms {
            self.credit_to_start_ms.push((r.start_ms - credit).max(0.0));
            self.effective_latency_ms.push((r.ended_ms() - credit).max(0.0));
        }
        if !r.success {
            return;
        }
        if let Some(trace) = &r.http {
            for (sample, value) in self.http.iter_mut().zip(trace.values()) {
                if let Some(v) = value {
                    sample.push(v);
                }
            }
        }
        if let Some(pct) = osl_mismatch_pct(r) {
            self.osl_mismatch_pct.push(pct);
            self.osl_mismatches += u64::from(osl_mismatched(r));
        }
    }

    /// Fold in the server's own timings of one successful request, beside the client's TTFT:
    /// only a request with all three (queue, server TTFT, client TTFT), so the three means are
    /// of the same requests and add up.
    pub fn push_server(&mut self, server: &ServerTimings, client_ttft_ms: Option<f64>) {
        let (Some(queue), Some(ttft), Some(client)) =
            (server.queue_time_ms, server.time_to_first_token_ms, client_ttft_ms)
        else {
            return;
        };
        self.server_queue_ms.push(queue);
        self.server_ttft_ms.push(ttft);
        self.ttft_outside_server_ms.push(client - queue - ttft);
    }

    /// The server's own timings of the requests that carried them, as distributions.
    pub fn server_split(&self, percentiles: &[f64]) -> ServerSplit {
        let stats = |s: &Sample| LatencyStats::from_sample(s, percentiles);
        ServerSplit {
            requests: self.server_ttft_ms.len(),
            queue_time: stats(&self.server_queue_ms),
            time_to_first_token: stats(&self.server_ttft_ms),
            ttft_outside_server: stats(&self.ttft_outside_server_ms),
        }
    }

    /// `vllm bench serve`'s figures of the window.
    pub fn metrics(
        &self,
        duration_s: f64,
        max_concurrency: Option<u64>,
        request_rate: Option<f64>,
        max_concurrent_requests: u64,
        percentiles: &[f64],
    ) -> RunMetrics {
        let per_s = |v: f64| if duration_s > 0.0 { v / duration_s } else { 0.0 };
        let stats = |s: &Sample| LatencyStats::from_sample(s, percentiles);
        RunMetrics {
            duration_s,
            completed: self.completed,
            failed: self.failed,
            max_concurrency,
            request_rate,
            total_input_tokens: self.input_tokens,
            total_output_tokens: self.output_tokens,
            request_throughput: per_s(self.completed as f64),
            output_throughput: per_s(self.output_tokens as f64),
            total_token_throughput: per_s((self.input_tokens + self.output_tokens) as f64),
            request_goodput: self.slo.map(|_| per_s(self.good as f64)),
            good_requests: self.slo.map(|_| self.good),
            max_concurrent_requests,
            ttft: stats(&self.ttft_ms),
            tpot: stats(&self.tpot_ms),
            itl: stats(&self.itl_ms),
            e2el: stats(&self.e2el_ms),
            server: self.server_split(percentiles),
            tail: self.tail.attribution(),
            chunks: self.chunks.figures(percentiles),
        }
    }
}

/// What the summary's "Speculative Decoding" section holds.
#[derive(Debug, Clone, Copy)]
pub enum SpecSection<'a> {
    /// The scrape path's window: vLLM's rows.
    Measured(&'a SpecDecodeData),
    /// No window: the section stays, one line says why (`not measured: …`).
    NotMeasured(&'a str),
}

/// The one line a run against a server that shows no speculation prints: what was seen and
/// the flag that turns it on in each engine.
pub const NO_SPECULATION_HINT: &str = "The server shows no speculative decoding (no spec-decode \
counters in /metrics, no per-request stats in its answers): vLLM turns it on with \
--speculative-config, SGLang with --speculative-algorithm, TensorRT-LLM with speculative_config \
in its --extra_llm_api_options file.";

/// The `vllm bench serve` console summary, with its "Speculative Decoding" section: vLLM's rows
/// when the scrape path measured a window, else one line saying why not.
pub fn vllm_summary(m: &RunMetrics, spec: SpecSection<'_>) -> String {
    let mut out = String::new();
    header(&mut out, " Serving Benchmark Result ", '=');
    row(&mut out, "Successful requests:", m.completed);
    row(&mut out, "Failed requests:", m.failed);
    if let Some(c) = m.max_concurrency {
        row(&mut out, "Maximum request concurrency:", c);
    }
    if let Some(rate) = m.request_rate {
        row_f(&mut out, "Request rate configured (RPS):", rate);
    }
    row_f(&mut out, "Benchmark duration (s):", m.duration_s);
    row(&mut out, "Total input tokens:", m.total_input_tokens);
    row(&mut out, "Total generated tokens:", m.total_output_tokens);
    row_f(&mut out, "Request throughput (req/s):", m.request_throughput);
    if let Some(goodput) = m.request_goodput {
        row_f(&mut out, "Request goodput (req/s):", goodput);
    }
    row_f(&mut out, "Output token throughput (tok/s):", m.output_throughput);
    row(&mut out, "Peak concurrent requests:", m.max_concurrent_requests);
    row_f(&mut out, "Total token throughput (tok/s):", m.total_token_throughput);
    let sections = [
        ("Time to First Token", "TTFT", &m.ttft),
        ("Time per Output Token (excl. 1st token)", "TPOT", &m.tpot),
        ("Inter-token Latency", "ITL", &m.itl),
        ("End-to-end Latency", "E2EL", &m.e2el),
    ];
    for (title, short, stats) in sections {
        let Some(s) = stats else { continue };
        header(&mut out, title, '-');
        row_f(&mut out, &format!("Mean {short} (ms):"), s.mean);
        row_f(&mut out, &format!("Median {short} (ms):"), s.median);
        for (p, v) in &s.percentiles {
            row_f(&mut out, &format!("P{p} {short} (ms):"), *v);
        }
    }
    header(&mut out, "Speculative Decoding", '-');
    let d = match spec {
        SpecSection::NotMeasured(reason) => {
            let _ = writeln!(out, "not measured: {reason}");
            None
        }
        SpecSection::Measured(d) => Some(d),
    };
    if let Some(d) = d {
        // A figure the engine does not count reads N/A (the notes say why).
        let count = |v: Option<u64>| v.map_or_else(|| "N/A".to_string(), |v| v.to_string());
        row(&mut out, "Acceptance rate (%):", d.rate_text());
        row(&mut out, "Acceptance length:", d.length_text());
        row(&mut out, "Drafts:", count(d.num_drafts));
        row(&mut out, "Draft tokens:", count(d.draft_tokens));
        row(&mut out, "Accepted tokens:", d.accepted_tokens);
        let _ = writeln!(out, "Per-position acceptance (%):");
        for (pos, rate) in &d.per_position_acceptance_rates {
            row_f(&mut out, &format!("  Position {pos}:"), rate * 100.0);
        }
    }
    let _ = writeln!(out, "{}", "=".repeat(50));
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn speculative_section_matches_vllm_byte_for_byte() {
        // tests/fixtures/real_vllm_bench_serve_spec_section_pr48892.txt, MTP k=1.
        let data = SpecDecodeData {
            num_drafts: Some(26407),
            draft_tokens: Some(26407),
            accepted_tokens: 22021,
            acceptance_rate: Some(22021.0 / 26407.0 * 100.0),
            acceptance_length: Some(1.0 + 22021.0 / 26407.0),
            per_position_acceptance_rates: [(0, 22021.0 / 26407.0)].into_iter().collect(),
            notes: Vec::new(),
            spec_config: None,
            data_parallel_engines: None,
        };
        let m = RunTally::default().metrics(1.0, None, None, 0, &[99.0]);
        let text = vllm_summary(&m, SpecSection::Measured(&data));
        let fixture = include_str!("../../../tests/fixtures/real_vllm_bench_serve_spec_section_pr48892.txt");
        let start = fixture.find("---------------Speculative Decoding").unwrap();
        let end = start
            + fixture[start..]
                .find("==================================================")
                .unwrap();
        let want = format!("{}{}\n", &fixture[start..end], "=".repeat(50));
        assert!(text.ends_with(&want), "{text}");
        assert!(text.starts_with("============ Serving Benchmark Result ============\n"));
    }

    /// A successful measured request of 10 input tokens (for the tests of every module).
    pub(crate) fn record(ttft: f64, e2el: f64, itl: Vec<f64>, tokens: u64) -> RequestRecord {
        RequestRecord {
            request_id: 0,
            url: "u".into(),
            category: None,
            warmup: false,
            start_ms: 0.0,
            success: true,
            ttft_ms: Some(ttft),
            e2el_ms: Some(e2el),
            itl_ms: itl,
            input_tokens: 10,
            output_tokens: tokens,
            ..RequestRecord::default()
        }
    }

    /// AIPerf's requested-length figures and its coordinated-omission-aware latencies, worked
    /// by hand.
    #[test]
    fn due_times_and_requested_lengths_follow_aiperf() {
        let asked = |output: u64, max_tokens: u64| RequestRecord {
            max_tokens: Some(max_tokens),
            ..record(1.0, 50.0, vec![], output)
        };
        // 90 of 100: −10 %, off by 10 > min(5, 50).
        assert_eq!(osl_mismatch_pct(&asked(90, 100)), Some(-10.0));
        assert!(osl_mismatched(&asked(90, 100)));
        // 96 of 100: off by 4, within 5 %.
        assert!(!osl_mismatched(&asked(96, 100)));
        // 1960 of 2000: 2 % off, but 40 tokens is within the 50-token cap; 1940 is not.
        assert!(!osl_mismatched(&asked(1960, 2000)) && osl_mismatched(&asked(1940, 2000)));
        assert_eq!(osl_mismatch_pct(&asked(5, 0)), None);
        let mut tally = RunTally::default();
        // Due at 100 ms, sent at 130 ms, answered 50 ms later: 30 ms late, 80 ms effective.
        tally.push(&RequestRecord {
            start_ms: 130.0,
            credit_ms: Some(100.0),
            ..asked(90, 100)
        });
        // A failed request counts too: due at 10, sent at 12, failed at 40 (no latency).
        tally.push(&RequestRecord {
            start_ms: 12.0,
            credit_ms: Some(10.0),
            end_ms: Some(40.0),
            success: false,
            e2el_ms: None,
            ..RequestRecord::default()
        });
        let late = tally.credit_to_start_ms.moments().unwrap();
        let effective = tally.effective_latency_ms.moments().unwrap();
        assert_eq!((late.sum, late.max), (32.0, 30.0));
        assert_eq!((effective.min, effective.max), (30.0, 80.0));
        assert_eq!((tally.osl_mismatch_pct.len(), tally.osl_mismatches), (1, 1));
    }

    #[test]
    fn metrics_follow_vllm_definitions() {
        let mut failed = record(0.0, 0.0, vec![], 0);
        failed.success = false;
        let records = [
            record(50.0, 140.0, vec![30.0, 30.0, 30.0], 4),
            record(70.0, 70.0, vec![], 1),
            failed,
        ];
        let mut tally = RunTally::default();
        records.iter().for_each(|r| tally.push(r));
        let m = tally.metrics(2.0, Some(8), None, 2, &[99.0]);
        assert_eq!(
            (m.completed, m.failed, m.total_output_tokens, m.total_input_tokens),
            (2, 1, 5, 20)
        );
        assert_eq!(m.request_throughput, 1.0);
        assert_eq!(m.output_throughput, 2.5);
        assert_eq!(m.ttft.as_ref().unwrap().mean, 60.0);
        let tpot = m.tpot.as_ref().unwrap();
        assert_eq!(
            (tpot.mean, tpot.std),
            (30.0, 0.0),
            "TPOT only for requests with more than one token"
        );
        assert_eq!(m.itl.as_ref().unwrap().percentiles["99"], 30.0);
        let mut r = crate::results::run_result::RunResult::default();
        r.set_metrics(&m);
        let keys = serde_json::to_value(&r).unwrap();
        assert_eq!(keys["mean_ttft_ms"], 60.0);
        assert_eq!(keys["p99_itl_ms"], 30.0);
        assert_eq!(keys["request_rate"], "inf");
        assert_eq!(percentile_name(99.9), "99.9");
    }
}
