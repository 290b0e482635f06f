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

/// The candidate steps SGLang's adaptive config gives at batch size `b`: the tier of the largest
/// integer key at or below `b` (`None` below the first key).
pub fn sglang_tier_at(config: &serde_json::Value, b: u64) -> Option<Vec<u32>> {
    let tiers = config.as_object()?;
    let key = tiers
        .keys()
        .filter_map(|k| k.parse::<u64>().ok())
        .filter(|k| *k <= b)
        .max()?;
    let steps = tiers.get(&key.to_string())?.get("candidate_steps")?.as_array()?;
    steps
        .iter()
        .map(|s| s.as_u64().and_then(|v| u32::try_from(v).ok()))
        .collect()
}

/// TensorRT-LLM's dynamic draft length from a schedule, in the newer form of
/// `draft_len_schedule` (`get_draft_len_for_batch_size`, NVIDIA/TensorRT-LLM PR #12262): each
/// key maps the batch sizes up to it (above the previous key) to its k, and batch sizes above
/// the last key draft nothing; `max_concurrency` is the batch size above which speculation is
/// off, when the schedule turns it off at the top.
#[derive(Debug, Clone, PartialEq)]
pub struct TrtllmSchedule {
    pub max_draft_len: u32,
    pub max_concurrency: Option<u64>,
    pub draft_len_schedule: BTreeMap<u64, u32>,
}

impl TrtllmSchedule {
    /// The schedule's ranges as TensorRT-LLM's keys; `None` when nothing is drafted anywhere.
    pub fn of(schedule: &[(u64, u64, u32)]) -> Option<TrtllmSchedule> {
        let last_on = schedule.iter().rposition(|r| r.2 > 0)?;
        let kept = &schedule[..=last_on];
        Some(TrtllmSchedule {
            max_draft_len: kept.iter().map(|r| r.2).max().unwrap_or(0),
            max_concurrency: (last_on + 1 < schedule.len()).then(|| kept[last_on].1),
            draft_len_schedule: kept.iter().map(|&(_, to, k)| (to, k)).collect(),
        })
    }

    /// The schedule floored at k = 1, for TensorRT-LLM's one-engine drafters (MTP, one-model
    /// EAGLE-3, DFlash): no entry resolves to 0 and no `max_concurrency`, because such a drafter
    /// skips its forward there and its state goes stale, so acceptance collapses once
    /// speculation resumes (NVIDIA/TensorRT-LLM #16888, open). The last key is the schedule's
    /// end, so every batch drafts at least one token; the load above the cut goes to a plain
    /// server instead. `None` when nothing is drafted anywhere.
    pub fn floored(schedule: &[(u64, u64, u32)]) -> Option<TrtllmSchedule> {
        if !schedule.iter().any(|r| r.2 > 0) {
            return None;
        }
        let mut keys: BTreeMap<u64, u32> = BTreeMap::new();
        let mut last: Option<(u64, u32)> = None;
        for &(_, to, k) in schedule {
            let k = k.max(1);
            // A run of one k keeps its last key only.
            if let Some((previous, _)) = last.filter(|l| l.1 == k) {
                keys.remove(&previous);
            }
            keys.insert(to, k);
            last = Some((to, k));
        }
        Some(TrtllmSchedule {
            max_draft_len: keys.values().copied().max().unwrap_or(1),
            max_concurrency: None,
            draft_len_schedule: keys,
        })
    }

    /// The k this schedule gives at batch size `b`, read as the newer TensorRT-LLM reads it.
    pub fn k_at(&self, b: u64) -> u32 {
        if self.max_concurrency.is_some_and(|m| b > m) {
            return 0;
        }
        self.draft_len_schedule.range(b..).next().map_or(0, |(_, k)| *k)
    }

    /// The `speculative_config` keys for `--extra_llm_api_options` (YAML flow style).
    pub fn yaml(&self) -> String {
        let schedule: Vec<String> = self
            .draft_len_schedule
            .iter()
            .map(|(b, k)| format!("{b}: {k}"))
            .collect();
        let max_concurrency = self
            .max_concurrency
            .map_or(String::new(), |m| format!(", max_concurrency: {m}"));
        format!(
            "speculative_config: {{max_draft_len: {}{max_concurrency}, draft_len_schedule: {{{}}}}}",
            self.max_draft_len,
            schedule.join(", ")
        )
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
        assert_eq!(sglang_tier_at(&config, 1), Some(vec![1, 3]));
        assert_eq!(sglang_tier_at(&config, 24), Some(vec![1, 3]));
        assert_eq!(sglang_tier_at(&config, 25), Some(vec![0, 1]));
        assert_eq!(sglang_tier_at(&config, 9_999), Some(vec![0]));
        assert_eq!(sglang_tier_at(&config, 0), None);
    }

    #[test]
    fn tensorrt_llm_s_schedule_is_written_in_the_up_to_key_form() {
        let t = TrtllmSchedule::of(&SCHEDULE).unwrap();
        assert_eq!(t.max_concurrency, Some(50));
        assert_eq!(t.draft_len_schedule, [(24, 3), (50, 1)].into_iter().collect());
        assert_eq!(
            t.yaml(),
            "speculative_config: {max_draft_len: 3, max_concurrency: 50, draft_len_schedule: {24: 3, 50: 1}}"
        );
        // Read the newer way it gives the schedule's k at every batch size.
        for b in 1..=200 {
            assert_eq!(t.k_at(b), vllm_k_at(&SCHEDULE, b), "batch size {b}");
        }
        // Speculation on at every load: no max_concurrency, the last key the schedule's end.
        let always = TrtllmSchedule::of(&[(1, 8, 3), (9, 65_536, 1)]).unwrap();
        assert_eq!((always.max_concurrency, always.k_at(65_536)), (None, 1));
        assert_eq!(TrtllmSchedule::of(&[(1, 65_536, 0)]), None);
    }

    /// For a one-engine drafter: no entry resolves to 0 and no max_concurrency; the schedule's
    /// k where it drafts, at least 1 everywhere (above the cut too: that load is routed).
    #[test]
    fn tensorrt_llm_s_one_engine_schedule_never_reaches_zero() {
        let t = TrtllmSchedule::floored(&SCHEDULE).unwrap();
        assert_eq!(t.max_concurrency, None);
        assert!(
            !t.yaml().contains("max_concurrency") && !t.yaml().contains(": 0"),
            "{}",
            t.yaml()
        );
        assert_eq!(
            t.yaml(),
            "speculative_config: {max_draft_len: 3, draft_len_schedule: {24: 3, 65536: 1}}"
        );
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
