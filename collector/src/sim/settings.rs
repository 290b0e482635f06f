//! A simulated server's settings: `speclens sim`'s defaults, the prompt categories it knows and
//! the faults it can inject.

use std::net::SocketAddr;

use super::engine::{AcceptanceProfile, EngineConfig, StepModel, KV_BLOCK_TOKENS};
use super::payload::{PayloadShape, PerRequestMetrics};

/// Default acceptance when speculation is on but no profile is given.
pub const DEFAULT_ALPHA: f64 = 0.7;

/// Prompt categories the sim recognises from prompt text, with their default acceptance
/// multipliers (copy-heavy work accepts more drafts, free writing and translation fewer).
pub const DEFAULT_CATEGORY_FACTORS: [(&str, f64); 6] = [
    ("summarization", 1.15),
    ("coding", 1.05),
    ("qa", 1.0),
    ("math", 0.95),
    ("writing", 0.85),
    ("translation", 0.8),
];

/// The category of a prompt, from its words.
pub fn detect_category(prompt: &str) -> Option<&'static str> {
    let text = prompt.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if has(&["summar", "tl;dr"]) {
        Some("summarization")
    } else if has(&["translat"]) {
        Some("translation")
    } else if has(&["code", "function", "python", "program"]) {
        Some("coding")
    } else if has(&["math", "calculate", "solve", "equation"]) {
        Some("math")
    } else if has(&["write", "story", "poem", "essay"]) {
        Some("writing")
    } else if text.contains('?') {
        Some("qa")
    } else {
        None
    }
}

/// Faults injected for tests of everything downstream (all off by default).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Answer this fraction of completion requests with HTTP 500.
    pub fail_rate: f64,
    /// Reset the connection mid-stream on this fraction of requests.
    pub reset_rate: f64,
    /// End the SSE stream early (no finish chunk, no `[DONE]`) on this fraction of requests.
    pub truncate_rate: f64,
    /// Delay the first token of this fraction of requests by --stall-ms.
    pub stall_rate: f64,
    pub stall_ms: u64,
    /// Never answer this fraction of requests (the client must time out).
    pub hang_rate: f64,
    /// Answer this fraction of requests with an oversized body (--oversized-kib of padding).
    pub oversized_rate: f64,
    pub oversized_kib: u64,
    /// `/metrics` answers HTTP 503 from the start.
    pub metrics_down: bool,
    /// `/metrics` answers HTTP 503 once this many requests have finished.
    pub metrics_down_after: Option<u64>,
    /// `/metrics` answers HTTP 503 until this many requests have finished.
    pub metrics_down_until: Option<u64>,
    /// Simulate a restart (all counters back to zero) before the first request that arrives
    /// after this many have finished.
    pub reset_counters_after: Option<u64>,
    /// `(after, factor)`: every request that arrives once `after` have finished has its
    /// acceptance multiplied by `factor` (a drafter gone stale, traffic that changed mid-run).
    pub acceptance_drop: Option<(u64, f64)>,
    /// Write `/metrics` as in multiprocess mode (no `_created` gauges).
    pub multiproc_exposition: bool,
    /// Add malformed lines to `/metrics`.
    pub malformed_metrics: bool,
    /// TensorRT-LLM shape: no `/prometheus/metrics` (trtllm-serve without `return_perf_metrics`).
    pub no_perf_metrics: bool,
    /// TensorRT-LLM shape: no iteration counters or gauges there (without
    /// `enable_iter_perf_stats`).
    pub no_iter_perf_stats: bool,
    /// TensorRT-LLM shape: a build before the per-position pair (PR #12636, 2026-03).
    pub no_per_position_pair: bool,
}

/// Validated settings of one simulated server.
#[derive(Debug, Clone)]
pub struct SimSettings {
    pub addr: SocketAddr,
    pub model: String,
    pub api_key: Option<String>,
    pub engines: u32,
    pub engine: EngineConfig,
    /// The acceptance profile at temperature 0 (None on a plain server).
    pub profile: Option<AcceptanceProfile>,
    pub temperature_sensitivity: f64,
    /// Per-request acceptance spread: each request's rates scaled by a factor in
    /// [1 − spread, 1 + spread] drawn from its prompt.
    pub acceptance_spread: f64,
    pub category_factors: Vec<(String, f64)>,
    /// LoRA adapters served beside the model, each with its acceptance multiplier (a drafter
    /// trained on the base model drafts an adapter's text less well).
    pub adapters: Vec<(String, f64)>,
    pub max_model_len: u32,
    pub mean_output_tokens: u32,
    pub per_request: PerRequestMetrics,
    /// vLLM 0.33's `--enable-per-request-metrics`: the engine's timings in each response.
    pub per_request_timings: bool,
    pub payload: PayloadShape,
    /// Spec-decode counters start at this many drafts (see `EngineCounters::started_at`).
    pub counter_start: u64,
    pub faults: Faults,
}

impl SimSettings {
    /// A plain server on `addr` with `speclens sim`'s defaults: one engine, 256 sequences, a
    /// 12 ms step, an H100's ridge, real time, summary per-request stats in vLLM's shape.
    pub fn new(addr: SocketAddr, model: &str) -> SimSettings {
        SimSettings {
            addr,
            model: model.into(),
            api_key: None,
            engines: 1,
            engine: EngineConfig {
                k: 0,
                schedule: Vec::new(),
                max_num_seqs: 256,
                kv_cache_blocks: 524_288 / KV_BLOCK_TOKENS,
                step: StepModel {
                    base_step_s: 0.012,
                    ridge_tokens: 295.0,
                    draft_cost: 0.0,
                    draft_overhead_s: 0.0,
                    kv_ratio: 0.0,
                    draft_kv_share: 0.0,
                },
                time_scale: 1.0,
                zero_k_tax: 0.0,
                thrash_at_cut_s: None,
                stale_drafter: false,
                acceptance_half_life_tokens: None,
                prefix_caching: false,
                seed: 0,
            },
            profile: None,
            temperature_sensitivity: 0.15,
            acceptance_spread: 0.0,
            category_factors: DEFAULT_CATEGORY_FACTORS
                .iter()
                .map(|(n, f)| (n.to_string(), *f))
                .collect(),
            adapters: Vec::new(),
            max_model_len: 8192,
            mean_output_tokens: 256,
            per_request: PerRequestMetrics::Summary,
            per_request_timings: false,
            payload: PayloadShape::Vllm,
            counter_start: 0,
            faults: Faults::default(),
        }
    }

    /// Speculate with `profile` (its k drafts per step).
    pub fn with_profile(mut self, profile: AcceptanceProfile) -> SimSettings {
        self.engine.k = profile.k();
        self.profile = Some(profile);
        self
    }

    /// The acceptance profile for one request, lowered by temperature and scaled by category
    /// and by the adapter it names (`served`: the request's `model`).
    pub fn profile_for(&self, prompt: &str, temperature: f64, served: Option<&str>) -> Option<AcceptanceProfile> {
        let base = self.profile.as_ref()?;
        let category = detect_category(prompt)
            .and_then(|c| self.category_factors.iter().find(|(n, _)| n == c))
            .map_or(1.0, |(_, f)| *f);
        let adapter = served
            .and_then(|name| self.adapters.iter().find(|(n, _)| n == name))
            .map_or(1.0, |(_, f)| *f);
        let heat = (1.0 - self.temperature_sensitivity * temperature.max(0.0)).max(0.0);
        Some(base.scaled(category * adapter * heat * self.spread_factor(prompt)))
    }

    /// The request's own acceptance factor, uniform in [1 − spread, 1 + spread] over prompts:
    /// the same prompt always draws the same factor.
    fn spread_factor(&self, prompt: &str) -> f64 {
        if self.acceptance_spread <= 0.0 {
            return 1.0;
        }
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        prompt.hash(&mut hasher);
        let unit = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
        1.0 + self.acceptance_spread * (2.0 * unit - 1.0)
    }
}
