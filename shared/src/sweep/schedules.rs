//! A k-by-batch-size schedule as each engine takes it: vLLM's
//! `num_speculative_tokens_per_batch_size` (checked against vLLM's own rules), SGLang's
//! `--speculative-adaptive-config` tiers and TensorRT-LLM's `max_concurrency` and
//! `draft_len_schedule`; the model's schedule from an arm's per-position rates; and why a line
//! would not take effect on a given server.
//!
//! A schedule here is a list of inclusive batch-size ranges `(from, to, k)`, k = 0 meaning
//! speculation off, as [`super::recommend::Recommendation::batch_schedule`] writes it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::model::speedup::{expected_tokens_per_position, speedup, Costs};

/// The proposer methods for which vLLM 0.33 keeps a per-batch-size schedule on its V1 model
/// runner (`_maybe_disable_dynamic_sd_for_v1` disables it for the others).
pub const VLLM_SCHEDULE_METHODS: [&str; 6] = ["ngram", "eagle", "eagle3", "mtp", "draft_model", "dflash"];

/// Check a schedule against vLLM's rules for `num_speculative_tokens_per_batch_size`
/// (`config/speculative.py`): ranges inclusive, the first starting at 1, none overlapping, each
/// k at most `num_speculative_tokens` (vLLM would clamp a larger one: a line that does not say
/// what it does). vLLM lets a gap carry the previous k; a line speclens writes has no gap, so
/// a gap is refused too.
pub fn check_vllm_schedule(schedule: &[(u64, u64, u32)], num_speculative_tokens: u32) -> Result<(), Error> {
    let fail = |message: String| Err(Error::Schedule(message));
    let Some(first) = schedule.first() else {
        return fail("an empty schedule".into());
    };
    if first.0 != 1 {
        return fail(format!("the first range starts at batch size {}, not 1", first.0));
    }
    for (i, &(from, to, k)) in schedule.iter().enumerate() {
        if to < from {
            return fail(format!("range {from}–{to} ends before it starts"));
        }
        if k > num_speculative_tokens {
            return fail(format!(
                "k = {k} in range {from}–{to} is above num_speculative_tokens = {num_speculative_tokens}"
            ));
        }
        if let Some(&(_, prev_to, _)) = i.checked_sub(1).and_then(|p| schedule.get(p)) {
            if from <= prev_to {
                return fail(format!("range {from}–{to} overlaps the one ending at {prev_to}"));
            }
            if from > prev_to + 1 {
                return fail(format!("batch sizes {}–{} are in no range", prev_to + 1, from - 1));
            }
        }
    }
    Ok(())
}

/// A vLLM schedule as its JSON `[[from, to, k], …]`, checked by vLLM's rules with its largest
/// k as `num_speculative_tokens`.
pub fn parse_vllm_schedule(text: &str) -> Result<Vec<(u64, u64, u32)>, Error> {
    let schedule: Vec<(u64, u64, u32)> =
        serde_json::from_str(text).map_err(|e| Error::Schedule(format!("takes [[from, to, k], …] in JSON: {e}")))?;
    let largest = schedule.iter().map(|r| r.2).max().unwrap_or(0);
    check_vllm_schedule(&schedule, largest)?;
    Ok(schedule)
}

/// The k a vLLM schedule gives at batch size `b` (0 outside every range).
pub fn vllm_k_at(schedule: &[(u64, u64, u32)], b: u64) -> u32 {
    schedule
        .iter()
        .find(|(from, to, _)| (*from..=*to).contains(&b))
        .map_or(0, |r| r.2)
}

/// SGLang's `--speculative-adaptive-config` JSON: one tier per range, keyed by the range's
/// first batch size (SGLang takes the tier of the largest key at or below the batch size), each
/// with its candidate step counts (0 = speculation off), sorted and without repeats. With EAGLE
/// and top-k 1, a step count is the draft length k.
pub fn sglang_adaptive_config(tiers: &[(u64, Vec<u32>)]) -> serde_json::Value {
    let mut sorted: Vec<&(u64, Vec<u32>)> = tiers.iter().collect();
    sorted.sort_by_key(|t| t.0);
    let mut out = serde_json::Map::new();
    for (from, steps) in sorted {
        let mut steps = steps.clone();
        steps.sort_unstable();
        steps.dedup();
        out.insert(from.to_string(), serde_json::json!({ "candidate_steps": steps }));
    }
    serde_json::Value::Object(out)
}

/// The tier SGLang's adaptive config routes batch size `b` to, as its key and candidate steps:
/// `b` padded up to the smallest captured CUDA-graph batch size at or above it (when
/// `cuda_graph_bs` names one), then the tier of the largest key at or below that, the first
/// tier below the first key (sgl-project/sglang `adaptive_step_router.py`,
/// `batch_size_key_for_batch`). Keys are digit strings; any other key is no tier. `None` for a
/// config with no tier or a tier without its steps.
pub fn sglang_tier_at(config: &serde_json::Value, b: u64, cuda_graph_bs: &[u64]) -> Option<(u64, Vec<u32>)> {
    let tiers: Vec<(u64, &serde_json::Value)> = config
        .as_object()?
        .iter()
        .filter(|(k, _)| !k.is_empty() && k.bytes().all(|c| c.is_ascii_digit()))
        .filter_map(|(k, tier)| Some((k.parse::<u64>().ok()?, tier)))
        .collect();
    let padded = cuda_graph_bs.iter().copied().filter(|g| *g >= b).min().unwrap_or(b);
    let (key, tier) = tiers
        .iter()
        .filter(|(k, _)| *k <= padded)
        .max_by_key(|(k, _)| *k)
        .or_else(|| tiers.iter().min_by_key(|(k, _)| *k))?;
    let mut steps: Vec<u32> = tier
        .get("candidate_steps")?
        .as_array()?
        .iter()
        .map(|s| s.as_u64().and_then(|v| u32::try_from(v).ok()))
        .collect::<Option<_>>()?;
    steps.sort_unstable();
    steps.dedup();
    Some((*key, steps))
}

/// TensorRT-LLM's dynamic draft length from a schedule, in the newer form of
/// `draft_len_schedule` (`get_draft_len_for_batch_size`, NVIDIA/TensorRT-LLM PR #10860): each
/// key maps the batch sizes up to it (above the previous key) to its k, floored at the engine's
/// minimum (`min_draft_len`: 0 for a two-model drafter, 1 for a one-engine one), and batch sizes
/// above the last key draft that minimum. Written as the engine's config takes it
/// (`llm_args.py`, `DecodingBaseConfig`): the smallest key's k is `max_draft_len` and no k is
/// above it, and no `max_concurrency` beside the schedule (the two exclude each other: the last
/// key already ends speculation above it).
#[derive(Debug, Clone, PartialEq)]
pub struct TrtllmSchedule {
    pub max_draft_len: u32,
    pub draft_len_schedule: BTreeMap<u64, u32>,
    /// The engine's floor on every looked-up k (its `min_draft_len`).
    pub min_draft_len: u32,
    /// Keys whose k was lowered to `max_draft_len` (the smallest key's), as (key, k asked):
    /// the engine refuses a schedule with a k above its first.
    pub capped: Vec<(u64, u32)>,
}

impl TrtllmSchedule {
    /// The schedule's ranges as TensorRT-LLM's keys for a two-model drafter (a separate draft
    /// model: speculation off above the last key); `None` when nothing is drafted anywhere, or
    /// when the first range drafts nothing (the engine takes the first key's k as
    /// `max_draft_len`, so such a schedule would draft nothing at all).
    pub fn of(schedule: &[(u64, u64, u32)]) -> Option<TrtllmSchedule> {
        let last_on = schedule.iter().rposition(|r| r.2 > 0)?;
        let t = TrtllmSchedule::keyed(schedule[..=last_on].iter().map(|&(_, to, k)| (to, k)), 0);
        (t.max_draft_len > 0).then_some(t)
    }

    /// The schedule floored at k = 1, for TensorRT-LLM's one-engine drafters (MTP, one-model
    /// EAGLE-3, DFlash): no entry resolves to 0, because such a drafter skips its forward there
    /// and its state goes stale, so acceptance collapses once speculation resumes
    /// (NVIDIA/TensorRT-LLM #16888). The last key is the schedule's end, so every batch drafts
    /// at least one token; the load above the cut goes to a plain server instead. `None` when
    /// nothing is drafted anywhere.
    pub fn floored(schedule: &[(u64, u64, u32)]) -> Option<TrtllmSchedule> {
        if !schedule.iter().any(|r| r.2 > 0) {
            return None;
        }
        Some(TrtllmSchedule::keyed(
            schedule.iter().map(|&(_, to, k)| (to, k.max(1))),
            1,
        ))
    }

    /// Keys (a range's last batch size, its k) in order, a run of one k kept at its last key,
    /// each k capped at the first's.
    fn keyed(keys: impl Iterator<Item = (u64, u32)>, min_draft_len: u32) -> TrtllmSchedule {
        let mut draft_len_schedule: BTreeMap<u64, u32> = BTreeMap::new();
        let mut capped = Vec::new();
        let mut first: Option<u32> = None;
        let mut last: Option<(u64, u32)> = None;
        for (to, asked) in keys {
            let cap = *first.get_or_insert(asked);
            let k = asked.min(cap);
            if k < asked {
                capped.push((to, asked));
            }
            // A run of one k keeps its last key only.
            if let Some((previous, _)) = last.filter(|l| l.1 == k) {
                draft_len_schedule.remove(&previous);
            }
            draft_len_schedule.insert(to, k);
            last = Some((to, k));
        }
        TrtllmSchedule {
            max_draft_len: first.unwrap_or(0),
            draft_len_schedule,
            min_draft_len,
            capped,
        }
    }

    /// The k this schedule gives at batch size `b`, read as the newer TensorRT-LLM reads it
    /// (`get_draft_len_for_batch_size`).
    pub fn k_at(&self, b: u64) -> u32 {
        self.draft_len_schedule
            .range(b..)
            .next()
            .map_or(self.min_draft_len, |(_, k)| (*k).max(self.min_draft_len))
    }

    /// Why TensorRT-LLM's config would refuse this schedule (`llm_args.py`,
    /// `validate_draft_len_schedule_and_sort`): a key below 1, a smallest key whose k is not
    /// `max_draft_len`, a k above it. `None` when it takes it.
    pub fn refusal(&self) -> Option<String> {
        if let Some(key) = self.draft_len_schedule.keys().find(|k| **k < 1) {
            return Some(format!(
                "draft_len_schedule: batch size threshold must be >= 1, got {key}"
            ));
        }
        let (smallest, k) = self.draft_len_schedule.iter().next()?;
        if *k != self.max_draft_len {
            return Some(format!(
                "draft_len_schedule[{smallest}] must equal max_draft_len because it is the smallest batch-size key"
            ));
        }
        self.draft_len_schedule
            .iter()
            .find(|(_, k)| **k > self.max_draft_len)
            .map(|(b, k)| {
                format!("draft_len_schedule: all draft lengths must be <= max_draft_len, got {k} for batch size {b}")
            })
    }

    /// The `speculative_config` keys for `--extra_llm_api_options` (YAML flow style).
    pub fn yaml(&self) -> String {
        let schedule: Vec<String> = self
            .draft_len_schedule
            .iter()
            .map(|(b, k)| format!("{b}: {k}"))
            .collect();
        format!(
            "speculative_config: {{max_draft_len: {}, draft_len_schedule: {{{}}}}}",
            self.max_draft_len,
            schedule.join(", ")
        )
    }

    /// What the capping changed, for the line's warnings; `None` when nothing was capped.
    pub fn capped_note(&self) -> Option<String> {
        if self.capped.is_empty() {
            return None;
        }
        let keys: Vec<String> = self.capped.iter().map(|(b, k)| format!("k = {k} up to {b}")).collect();
        Some(format!(
            "lowered to k = {} ({}): TensorRT-LLM takes the smallest key's k as max_draft_len and refuses a larger one after it",
            self.max_draft_len,
            keys.join(", ")
        ))
    }
}

/// What a server's own settings and metrics say about whether a schedule line takes effect.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerFacts {
    /// vLLM's data-parallel engines (distinct `engine` labels on its counters).
    pub vllm_engines: Option<u32>,
    /// The proposer method of the arms' `--speculative-config` (vLLM).
    pub vllm_method: Option<String>,
    /// `rejection_sample_method` of that config (`fly` is lossy, `synthetic` forced).
    pub rejection_sample_method: Option<String>,
    /// The version the servers report (vLLM's `/version`: `0.32.0+cpu`), when they do.
    pub vllm_version: Option<String>,
    /// The method is a plugin's `custom_method` (vLLM 0.34 on, which has no methods' filter).
    pub vllm_custom_method: bool,
}

/// The major and minor of a version text (`0.34.0`, `0.32.0+cpu`, `v0.33.1rc2`).
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version
        .trim()
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Why a vLLM schedule line would not take effect on these servers (empty: nothing known
/// against it).
pub fn vllm_schedule_warnings(facts: &ServerFacts) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(n) = facts.vllm_engines.filter(|n| *n > 1) {
        out.push(format!(
            "schedule ignored under data parallelism: the server's counters carry {n} engines, and vLLM turns num_speculative_tokens_per_batch_size off with more than one data-parallel engine (a warning in its log only)"
        ));
    }
    // vLLM 0.34 removed the old GPU model runner, and with it the methods' filter: only a
    // server that reports an earlier version (or none) can drop the schedule for its method.
    let version = facts.vllm_version.as_deref().and_then(major_minor);
    let filtered = !facts.vllm_custom_method && version.is_none_or(|v| v < (0, 34));
    if let (Some(method), true) = (&facts.vllm_method, filtered) {
        if !VLLM_SCHEDULE_METHODS.contains(&method.to_ascii_lowercase().as_str()) {
            let on = match (version, &facts.vllm_version) {
                (Some(_), Some(v)) => format!("the servers report vLLM {v}, and vLLM up to 0.33"),
                (None, Some(v)) => format!("the servers report version {v:?}, which is no vLLM release number, and vLLM up to 0.33 (not 0.34, which removed that runner)"),
                (_, None) => "the servers report no version, and vLLM up to 0.33 (not 0.34, which removed that runner)".into(),
            };
            out.push(format!(
                "schedule ignored for method {method}: {on} keeps a per-batch-size schedule on its V1 model runner only for {}",
                VLLM_SCHEDULE_METHODS.join(", ")
            ));
        }
    }
    out
}

/// What the arms' per-position rates are on vLLM 0.34 with suffix decoding, which there always
/// drafts `num_speculative_tokens` (0.33's drafted fewer when its suffix tree had less).
pub fn suffix_positions_note(facts: &ServerFacts) -> Option<String> {
    let method = facts.vllm_method.as_deref()?;
    let version = facts.vllm_version.as_deref().and_then(major_minor)?;
    (method.eq_ignore_ascii_case("suffix") && version >= (0, 34)).then(|| {
        format!(
            "suffix decoding on vLLM {} always drafts num_speculative_tokens: its per-position rates are a fixed k's, not comparable with vLLM 0.33's, whose suffix drafts varied in length",
            facts.vllm_version.as_deref().unwrap_or_default()
        )
    })
}

/// Why an acceptance measured with this config is not comparable to lossless speculation.
pub fn acceptance_warning(facts: &ServerFacts) -> Option<String> {
    match facts.rejection_sample_method.as_deref() {
        Some("fly") => Some(
            "rejection_sample_method \"fly\" accepts drafts lossily (entropy-gated): its acceptance is not comparable to lossless speculation, and the output differs from the target model's".into(),
        ),
        Some("synthetic") => Some(
            "rejection_sample_method \"synthetic\" forces acceptance at configured rates: its acceptance measures the configuration, not the proposer".into(),
        ),
        _ => None,
    }
}

impl ServerFacts {
    /// The facts a vLLM `--speculative-config` gives (method, rejection sampling).
    pub fn with_config(mut self, config: Option<&serde_json::Value>) -> ServerFacts {
        let text = |key: &str| {
            config
                .and_then(|c| c.get(key))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        // vLLM 0.34's plugin proposers name themselves in `custom_method`.
        self.vllm_custom_method = text("custom_method").is_some();
        self.vllm_method = text("custom_method").or_else(|| text("method"));
        self.rejection_sample_method = text("rejection_sample_method");
        self
    }
}

/// The largest batch size a vLLM schedule's last range reaches (vLLM caps it at
/// `--max-num-seqs`).
pub const SCHEDULE_END: u64 = 65_536;

/// The model's schedule from one arm's per-position rates: inclusive batch ranges and their k.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSchedule {
    pub rates_from: String,
    pub rates: Vec<f64>,
    /// `(from, to, k)` over batch sizes, k = 0 where no k pays.
    pub ranges: Vec<(u64, u64, u32)>,
    /// The batch size above which no k pays (the largest break-even of any k), when one does.
    pub off_above: Option<f64>,
}

impl ModelSchedule {
    /// The best k at batch size `b` (0: off).
    pub fn k_at(&self, b: f64) -> u32 {
        let b = b.round().max(1.0) as u64;
        self.ranges
            .iter()
            .find(|(from, to, _)| (*from..=*to).contains(&b))
            .map_or(0, |r| r.2)
    }

    /// The best k for every batch size from `rates` (unconditional per-position rates).
    pub fn from_rates(rates_from: &str, rates: &[f64], costs: Costs) -> Option<ModelSchedule> {
        if rates.is_empty() {
            return None;
        }
        let best = |b: f64| -> u32 {
            let mut pick = (0u32, 1.0f64);
            for k in 1..=rates.len() as u32 {
                let s = speedup(expected_tokens_per_position(rates, k), f64::from(k), costs, b);
                if s > pick.1 {
                    pick = (k, s);
                }
            }
            pick.0
        };
        // Beyond the largest break-even no k pays again (S only falls with B).
        let off_above = (1..=rates.len() as u32)
            .map(|k| {
                let e = expected_tokens_per_position(rates, k);
                costs.ridge_tokens * (e - f64::from(k) * costs.draft_cost) / (f64::from(k) + 1.0)
            })
            .filter(|b| *b >= 1.0)
            .reduce(f64::max);
        let last = off_above.map_or(1, |b| (b.ceil() as u64 + 1).min(SCHEDULE_END));
        let mut ranges: Vec<(u64, u64, u32)> = Vec::new();
        for b in 1..=last {
            let k = best(b as f64);
            match ranges.last_mut() {
                Some(r) if r.2 == k => r.1 = b,
                _ => ranges.push((b, b, k)),
            }
        }
        if let Some(r) = ranges.last_mut() {
            r.1 = SCHEDULE_END;
        }
        Some(ModelSchedule {
            rates_from: rates_from.to_string(),
            rates: rates.to_vec(),
            ranges,
            off_above,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEDULE: [(u64, u64, u32); 3] = [(1, 24, 3), (25, 50, 1), (51, 65_536, 0)];

    #[test]
    fn a_vllm_schedule_is_checked_against_vllm_s_rules() {
        assert_eq!(check_vllm_schedule(&SCHEDULE, 3), Ok(()));
        let refused = |s: &[(u64, u64, u32)], k: u32| check_vllm_schedule(s, k).unwrap_err().to_string();
        assert!(refused(&[], 3).contains("empty"));
        assert!(refused(&[(2, 10, 3)], 3).contains("starts at batch size 2, not 1"));
        assert!(refused(&[(1, 10, 3), (10, 20, 1)], 3).contains("overlaps"));
        assert!(refused(&[(1, 10, 3), (12, 20, 1)], 3).contains("batch sizes 11–11 are in no range"));
        assert!(refused(&[(1, 10, 4)], 3).contains("above num_speculative_tokens = 3"));
        assert!(refused(&[(1, 0, 1)], 3).contains("ends before it starts"));
        // Dense: every batch size up to the end has exactly one k.
        for b in 1..=200 {
            let covering = SCHEDULE.iter().filter(|(f, t, _)| (*f..=*t).contains(&b)).count();
            assert_eq!(covering, 1, "batch size {b}");
        }
        assert_eq!(
            (
                vllm_k_at(&SCHEDULE, 24),
                vllm_k_at(&SCHEDULE, 25),
                vllm_k_at(&SCHEDULE, 51)
            ),
            (3, 1, 0)
        );
    }

    #[test]
    fn sglang_tiers_are_sorted_and_looked_up_by_floor() {
        let config = sglang_adaptive_config(&[(25, vec![1, 0]), (1, vec![3, 1, 3]), (51, vec![0])]);
        assert_eq!(
            config.to_string(),
            r#"{"1":{"candidate_steps":[1,3]},"25":{"candidate_steps":[0,1]},"51":{"candidate_steps":[0]}}"#
        );
        let at = |b: u64, graphs: &[u64]| sglang_tier_at(&config, b, graphs).map(|t| t.1);
        assert_eq!(at(1, &[]), Some(vec![1, 3]));
        assert_eq!(at(24, &[]), Some(vec![1, 3]));
        assert_eq!(at(25, &[]), Some(vec![0, 1]));
        assert_eq!(at(9_999, &[]), Some(vec![0]));
        // Below the first key: the first tier, as SGLang clamps it.
        assert_eq!(at(0, &[]), Some(vec![1, 3]));
        // Padded to the next captured CUDA-graph size first: 49 runs as 56, past the key 51.
        assert_eq!(at(49, &[48, 56]), Some(vec![0]));
        assert_eq!(at(49, &[]), Some(vec![0, 1]));
        // Keys SGLang does not read as batch sizes are no tiers.
        let odd = serde_json::json!({"+5": {"candidate_steps": [9]}, "007": {"candidate_steps": [2]}});
        assert_eq!(sglang_tier_at(&odd, 5, &[]), Some((7, vec![2])));
        assert_eq!(sglang_tier_at(&odd, 8, &[]), Some((7, vec![2])));
    }

    /// A JSON fixture of the project's, without its leading `//` source lines.
    fn engine_cases(name: &str, text: &str) -> Vec<serde_json::Value> {
        let json: String = text
            .lines()
            .filter(|l| !l.starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        doc["cases"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no cases"))
            .clone()
    }

    /// SGLang's own test cases and documented examples (sgl-project/sglang): each batch size
    /// routed to the tier the engine routes it to, with and without CUDA-graph padding.
    #[test]
    fn sglang_s_own_cases_route_to_the_same_tier() {
        let cases = engine_cases(
            "real_sglang_adaptive_tier_cases.json",
            include_str!("../../../tests/fixtures/real_sglang_adaptive_tier_cases.json"),
        );
        assert!(cases.len() >= 10, "{} cases", cases.len());
        for case in &cases {
            let graphs: Vec<u64> = case["cuda_graph_bs"]
                .as_array()
                .map(|g| g.iter().filter_map(serde_json::Value::as_u64).collect())
                .unwrap_or_default();
            let b = case["batch_size"].as_u64().unwrap();
            let want = (
                case["expected"]["key"].as_u64().unwrap(),
                serde_json::from_value::<Vec<u32>>(case["expected"]["candidate_steps"].clone()).unwrap(),
            );
            assert_eq!(sglang_tier_at(&case["config"], b, &graphs), Some(want), "{case}");
        }
    }

    /// TensorRT-LLM's own test cases (NVIDIA/TensorRT-LLM): each batch size's draft length as
    /// `get_draft_len_for_batch_size` gives it, for two-model (floor 0) and one-engine (floor 1)
    /// drafters.
    #[test]
    fn tensorrt_llm_s_own_cases_give_the_same_draft_length() {
        let cases = engine_cases(
            "real_trtllm_draft_len_schedule_cases.json",
            include_str!("../../../tests/fixtures/real_trtllm_draft_len_schedule_cases.json"),
        );
        assert!(cases.len() >= 20, "{} cases", cases.len());
        for case in &cases {
            let schedule: BTreeMap<u64, u32> = case["schedule"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.parse().unwrap(), u32::try_from(v.as_u64().unwrap()).unwrap()))
                .collect();
            let t = TrtllmSchedule {
                // Not read by the lookup when a schedule is given (some cases leave it out).
                max_draft_len: 0,
                draft_len_schedule: schedule,
                min_draft_len: u32::try_from(case["min_draft_len"].as_u64().unwrap()).unwrap(),
                capped: Vec::new(),
            };
            let b = case["batch_size"].as_u64().unwrap();
            assert_eq!(
                u64::from(t.k_at(b)),
                case["expected_draft_len"].as_u64().unwrap(),
                "{case}"
            );
        }
    }

    #[test]
    fn tensorrt_llm_s_schedule_is_written_in_the_up_to_key_form() {
        let t = TrtllmSchedule::of(&SCHEDULE).unwrap();
        assert_eq!(t.draft_len_schedule, [(24, 3), (50, 1)].into_iter().collect());
        // No max_concurrency beside the schedule: TensorRT-LLM refuses the two together.
        assert_eq!(
            t.yaml(),
            "speculative_config: {max_draft_len: 3, draft_len_schedule: {24: 3, 50: 1}}"
        );
        assert_eq!(t.refusal(), None);
        // Read the newer way it gives the schedule's k at every batch size.
        for b in 1..=200 {
            assert_eq!(t.k_at(b), vllm_k_at(&SCHEDULE, b), "batch size {b}");
        }
        // Speculation on at every load: the last key the schedule's end.
        let always = TrtllmSchedule::of(&[(1, 8, 3), (9, 65_536, 1)]).unwrap();
        assert_eq!(always.k_at(65_536), 1);
        assert_eq!(TrtllmSchedule::of(&[(1, 65_536, 0)]), None);
        // A k above the first's is lowered to it (the engine takes the first as max_draft_len
        // and refuses a larger one), and the line says so.
        let rising = TrtllmSchedule::of(&[(1, 8, 2), (9, 32, 4), (33, 65_536, 0)]).unwrap();
        assert_eq!(
            rising.yaml(),
            "speculative_config: {max_draft_len: 2, draft_len_schedule: {32: 2}}"
        );
        assert_eq!(rising.refusal(), None);
        assert!(
            rising.capped_note().unwrap().contains("k = 4 up to 32"),
            "{:?}",
            rising.capped_note()
        );
        // What the engine refuses, named as its validator names it.
        let mut refused = rising.clone();
        refused.draft_len_schedule.insert(4, 1);
        assert!(refused
            .refusal()
            .unwrap()
            .contains("draft_len_schedule[4] must equal max_draft_len"));
    }

    /// For a one-engine drafter: no entry resolves to 0 and no max_concurrency; the schedule's
    /// k where it drafts, at least 1 everywhere (above the cut too: that load is routed).
    #[test]
    fn tensorrt_llm_s_one_engine_schedule_never_reaches_zero() {
        let t = TrtllmSchedule::floored(&SCHEDULE).unwrap();
        assert!(
            !t.yaml().contains("max_concurrency") && !t.yaml().contains(": 0"),
            "{}",
            t.yaml()
        );
        assert_eq!(
            t.yaml(),
            "speculative_config: {max_draft_len: 3, draft_len_schedule: {24: 3, 65536: 1}}"
        );
        assert_eq!(t.refusal(), None);
        for b in 1..=200 {
            assert_eq!(t.k_at(b), vllm_k_at(&SCHEDULE, b).max(1), "batch size {b}");
        }
        // A 0 inside the schedule is floored too; nothing drafted anywhere writes nothing.
        let inside = TrtllmSchedule::floored(&[(1, 8, 3), (9, 16, 0), (17, 65_536, 2)]).unwrap();
        assert_eq!(
            inside.draft_len_schedule,
            [(8, 3), (16, 1), (65_536, 2)].into_iter().collect()
        );
        assert_eq!(TrtllmSchedule::floored(&[(1, 65_536, 0)]), None);
    }

    #[test]
    fn each_reason_a_schedule_would_not_take_effect_is_named() {
        let dp = ServerFacts {
            vllm_engines: Some(2),
            ..ServerFacts::default()
        };
        let w = vllm_schedule_warnings(&dp);
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("schedule ignored under data parallelism"), "{w:?}");
        let config = serde_json::json!({"method": "suffix", "rejection_sample_method": "fly"});
        let facts = ServerFacts::default().with_config(Some(&config));
        assert!(vllm_schedule_warnings(&facts)[0].contains("schedule ignored for method suffix"));
        assert!(acceptance_warning(&facts)
            .unwrap()
            .contains("not comparable to lossless"));
        // vLLM 0.34 keeps the schedule for every method; a version it cannot read keeps the warning.
        for (version, warned) in [
            ("0.34.0", false),
            ("0.35.1+cpu", false),
            ("0.33.1", true),
            ("dev", true),
        ] {
            let facts = ServerFacts {
                vllm_version: Some(version.into()),
                ..facts.clone()
            };
            assert_eq!(!vllm_schedule_warnings(&facts).is_empty(), warned, "{version}");
        }
        assert_eq!(major_minor("v0.33.1rc2"), Some((0, 33)));
        // Suffix decoding's per-position rates are a fixed k's from 0.34 on.
        let on = |version: &str| ServerFacts {
            vllm_version: Some(version.into()),
            ..facts.clone()
        };
        assert!(suffix_positions_note(&on("0.34.0")).unwrap().contains("a fixed k's"));
        assert_eq!(suffix_positions_note(&on("0.33.1")), None);
        assert_eq!(suffix_positions_note(&facts), None, "no version reported");
        let plugin = ServerFacts::default().with_config(Some(
            &serde_json::json!({"method": "custom", "custom_method": "my_proposer"}),
        ));
        assert_eq!(plugin.vllm_method.as_deref(), Some("my_proposer"));
        assert!(
            vllm_schedule_warnings(&plugin).is_empty(),
            "a plugin runs on 0.34 or later"
        );
        let eagle = ServerFacts::default().with_config(Some(&serde_json::json!({"method": "EAGLE3"})));
        assert!(vllm_schedule_warnings(&eagle).is_empty());
        assert_eq!(acceptance_warning(&eagle), None);
    }
}
