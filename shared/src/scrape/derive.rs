//! A window's figures from its counters' delta: the delta itself (a counter that went down means
//! the server restarted inside the window), and per engine the acceptance rate, length and
//! per-position rates with a note wherever a figure is not a counter delta.

use crate::engine::Engine;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::counters::{CounterSet, SpecConfig, SpecCounters};
use super::formulas::{
    sources, Figure, Source, SGLANG_ACCEPTED, SGLANG_LENGTH, TRTLLM_PAIR_LENGTH, TRTLLM_PAIR_POSITION,
    TRTLLM_PAIR_RATE, VLLM_LENGTH, VLLM_POSITION, VLLM_RATE,
};
use super::gauges::GaugeMeans;
use super::schema::{Family, DRAFTS, DRAFT_TOKENS};
use crate::error::Error;
pub use crate::error::NO_ACTIVITY;
use crate::request::counting::flat_positions_warning;

/// Derived stats of one window, as AISBench's `data` and `vllm bench serve`'s `spec_decode_*`.
///
/// vLLM's and llama.cpp's counters measure every field; so does TensorRT-LLM's per-position
/// pair (without it, `num_drafts` is null and the length comes from its gauges); SGLang has no
/// draft-token counter (`draft_tokens` null, the rate from its gauge). `notes` says where such a
/// figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeData {
    /// Verify steps (SGLang: `spec_verify_calls_total`); null where the engine counts none.
    pub num_drafts: Option<u64>,
    /// Null where the engine counts none.
    pub draft_tokens: Option<u64>,
    pub accepted_tokens: u64,
    /// Percent (bonus token excluded); null when the counters cannot give one.
    #[serde(serialize_with = "crate::pyfloat::option")]
    pub acceptance_rate: Option<f64>,
    /// Tokens per verify step, bonus included; 0.0 when there were no drafts (AISBench).
    #[serde(serialize_with = "crate::pyfloat::option")]
    pub acceptance_length: Option<f64>,
    /// Fraction of drafts whose first `i + 1` tokens were all accepted, by position `i`.
    #[serde(serialize_with = "crate::pyfloat::map")]
    pub per_position_acceptance_rates: BTreeMap<u32, f64>,
    /// Where a figure comes from when it is not a counter delta, and why one is missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The speculative config the engine exports (TensorRT-LLM's info gauge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_config: Option<SpecConfig>,
    /// vLLM's data-parallel engines, when its counters carry more than one `engine` label
    /// (a per-batch-size schedule is off there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_parallel_engines: Option<u32>,
}

impl SpecDecodeData {
    /// The acceptance rate (%) with two decimals, or `N/A`.
    pub fn rate_text(&self) -> String {
        self.acceptance_rate
            .map_or_else(|| "N/A".to_string(), |v| format!("{v:.2}"))
    }

    /// The acceptance length with two decimals, or `N/A`.
    pub fn length_text(&self) -> String {
        self.acceptance_length
            .map_or_else(|| "N/A".to_string(), |v| format!("{v:.2}"))
    }
}

/// A scrape's own stats since the server started: its counters as a delta from zero, its
/// gauges as they are now.
pub fn derive_since_start(c: &CounterSet) -> Result<SpecDecodeData, Error> {
    derive(c.schema(), &c.total, &WindowFacts::of(c))
}

/// What a window's figures depend on besides the counters' delta.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowFacts {
    /// The engine gauges averaged over the window.
    pub gauges: GaugeMeans,
    /// llama.cpp's largest counter value, when it was printed rounded.
    pub rounded_max: Option<u64>,
    /// Counter families the server lacks.
    pub missing: Vec<String>,
    /// The speculative config the engine exports, from the window's last scrape.
    pub spec_config: Option<SpecConfig>,
    /// The distinct `engine` labels of the window's last scrape (vLLM's data-parallel engines).
    pub engines: u32,
    /// TensorRT-LLM's per-position pair standing at 0 in the window's last scrape while its
    /// iteration counter rose: the counting check's warning.
    pub flat_positions: Option<String>,
}

impl WindowFacts {
    /// The facts of one scrape.
    pub fn of(c: &CounterSet) -> WindowFacts {
        WindowFacts {
            gauges: GaugeMeans::over([&c.gauges]),
            rounded_max: c.rounded_max,
            missing: c.missing.clone(),
            spec_config: c.spec_config.clone(),
            engines: c.engines(),
            flat_positions: flat_positions(c),
        }
    }

    /// The facts of a window between two scrapes, with its gauges.
    pub fn between(before: &CounterSet, after: &CounterSet, gauges: &GaugeMeans) -> WindowFacts {
        let mut missing = after.missing.clone();
        missing.extend(before.missing.iter().filter(|m| !after.missing.contains(m)).cloned());
        WindowFacts {
            gauges: gauges.clone(),
            rounded_max: after.rounded_max.max(before.rounded_max),
            missing,
            spec_config: after.spec_config.clone().or_else(|| before.spec_config.clone()),
            engines: after.engines(),
            flat_positions: flat_positions(after),
        }
    }

    fn lacks(&self, family: &str) -> Option<&String> {
        self.missing.iter().find(|m| m.ends_with(family))
    }
}

/// The per-position check of a TensorRT-LLM scrape, on its totals since the server started (a
/// window's per-position delta is 0 whenever no request finished in it, the pair being added
/// as each request finishes).
pub fn flat_positions(c: &CounterSet) -> Option<String> {
    let t = &c.total;
    c.prefix
        .starts_with("trtllm")
        .then(|| flat_positions_warning(&t.drafted_per_pos, &t.accepted_per_pos, t.num_draft_tokens))
        .flatten()
}

/// Derive the window's stats from a delta of vLLM's (or llama.cpp's) counters, or the reason
/// there are none.
pub fn derive_stats(delta: &SpecCounters) -> Result<SpecDecodeData, Error> {
    derive(Engine::Vllm, delta, &WindowFacts::default())
}

/// Derive the window's stats of any engine from its counters' delta and the facts around it.
pub fn derive(schema: Engine, delta: &SpecCounters, facts: &WindowFacts) -> Result<SpecDecodeData, Error> {
    match schema {
        Engine::Vllm | Engine::LlamaCpp => derive_vllm(delta, facts),
        Engine::Trtllm => derive_trtllm(delta, facts),
        Engine::Sglang => derive_sglang(delta, &facts.gauges),
    }
}

fn derive_vllm(delta: &SpecCounters, facts: &WindowFacts) -> Result<SpecDecodeData, Error> {
    let no_drafts = facts.lacks(DRAFTS);
    let no_draft_tokens = facts.lacks(DRAFT_TOKENS);
    let active = match no_draft_tokens {
        None => delta.num_draft_tokens > 0,
        Some(_) => delta.num_drafts > 0 || delta.num_accepted_tokens > 0,
    };
    if !active {
        return Err(Error::NoActivity);
    }
    let rounded_max = facts.rounded_max;
    let mut notes = Vec::new();
    let mut acceptance_rate = VLLM_RATE.eval(delta).filter(|_| no_draft_tokens.is_none());
    // AISBench writes 0.0 for the length of a window without drafts.
    let acceptance_length = VLLM_LENGTH.eval(delta).unwrap_or(0.0);
    let mut per_position_acceptance_rates = VLLM_POSITION.eval_by_position(delta);
    if let Some(largest) = rounded_max {
        // A value v ≥ 1e6 printed with 6 significant digits is off by up to half its last digit.
        let digits = (largest as f64).log10().floor() as i32;
        let error = 10f64.powi(digits - 5) / 2.0;
        notes.push(format!(
            "llama.cpp prints its counters with 6 significant digits: values from 1e6 on are rounded (here up to ±{error:.0}), so each delta is uncertain by up to ±{:.0} tokens",
            2.0 * error
        ));
        let before = per_position_acceptance_rates.len();
        per_position_acceptance_rates.retain(|_, r| *r <= 1.0);
        if per_position_acceptance_rates.len() < before {
            notes.push("per-position rates above 1 (an artefact of the rounding) are left out".into());
        }
        if acceptance_rate.is_some_and(|r| r > 100.0) {
            acceptance_rate = None;
            notes.push("the acceptance rate came out above 100 % from rounded counters and is left out".into());
        }
    } else if no_draft_tokens.is_none() && delta.num_accepted_tokens > delta.num_draft_tokens {
        return Err(Error::AcceptedAboveDrafted {
            accepted: delta.num_accepted_tokens,
            drafted: delta.num_draft_tokens,
        });
    }
    let mut acceptance_length = Some(acceptance_length);
    if let Some(name) = no_draft_tokens {
        notes.push(format!(
            "{name} is not on the server: no draft-token total and no acceptance rate"
        ));
    }
    if let Some(name) = no_drafts {
        notes.push(format!(
            "{name} is not on the server: no drafts, no acceptance length, no per-position rates"
        ));
        acceptance_length = None;
        per_position_acceptance_rates.clear();
    }
    Ok(SpecDecodeData {
        num_drafts: no_drafts.is_none().then_some(delta.num_drafts),
        draft_tokens: no_draft_tokens.is_none().then_some(delta.num_draft_tokens),
        accepted_tokens: delta.num_accepted_tokens,
        acceptance_rate,
        acceptance_length,
        per_position_acceptance_rates,
        notes,
        spec_config: None,
        data_parallel_engines: (facts.engines > 1).then_some(facts.engines),
    })
}

fn derive_trtllm(delta: &SpecCounters, facts: &WindowFacts) -> Result<SpecDecodeData, Error> {
    let mut data = match delta.drafted_per_pos.get(&0) {
        Some(&drafts) if drafts > 0 => trtllm_from_positions(delta, drafts, &facts.gauges)?,
        _ => trtllm_from_iterations(delta, facts)?,
    };
    if let Some(config) = &facts.spec_config {
        data.notes.push(format!(
            "speculative config (trtllm_speculative_config_info): {}",
            config.describe()
        ));
        data.spec_config = Some(config.clone());
    }
    Ok(data)
}

/// TensorRT-LLM's window from its per-position pair, added when each request finishes: drafts
/// are the steps that drafted position 0, the length 1 + Σ accepted ÷ drafts, and each
/// position's rate accepted ÷ drafts, vLLM's definitions.
fn trtllm_from_positions(delta: &SpecCounters, drafts: u64, gauges: &GaugeMeans) -> Result<SpecDecodeData, Error> {
    let drafted = TRTLLM_PAIR_RATE.denominator_count(delta);
    let accepted = TRTLLM_PAIR_RATE.numerator_count(delta);
    if accepted > drafted {
        return Err(Error::AcceptedAboveDrafted { accepted, drafted });
    }
    let positions = super::formulas::positions(delta);
    let at = |map: &BTreeMap<u32, u64>, pos: u32| map.get(&pos).copied().unwrap_or(0);
    let per_position_acceptance_rates = TRTLLM_PAIR_POSITION.eval_by_position(delta);
    let mut notes = vec![format!(
        "from TensorRT-LLM's per-position pair (trtllm_spec_decode_drafted_tokens_total and trtllm_spec_decode_accepted_tokens_total by token_position), added as each request finishes: drafts = Δ drafted at position 0, length = 1 + Σ Δ accepted ÷ drafts"
    )];
    if delta.num_draft_tokens > 0 {
        let rate = VLLM_RATE.eval(delta);
        notes.push(format!(
            "the iteration counters (every step, requests still running included) give an acceptance rate of {}",
            rate.map_or_else(|| "N/A".to_string(), |r| format!("{r:.2} %"))
        ));
    }
    let last = positions.iter().next_back().copied().unwrap_or(0);
    let short = at(&delta.drafted_per_pos, last);
    if short < drafts {
        let conditional: Vec<String> = positions
            .iter()
            .filter(|p| at(&delta.drafted_per_pos, **p) > 0)
            .map(|p| {
                let rate = at(&delta.accepted_per_pos, *p) as f64 / at(&delta.drafted_per_pos, *p) as f64;
                format!("{p}: {rate:.4}")
            })
            .collect();
        notes.push(format!(
            "the draft length varied: {short} of {drafts} drafts reached position {last}; a draft that stopped short counts as not accepted there (as vLLM's rates do); accepted ÷ drafted at each position: {{{}}}",
            conditional.join(", ")
        ));
    }
    if let Some(v) = gauges.get("trtllm_spec_decode_acceptance_length") {
        notes.push(format!(
            "TensorRT-LLM's own gauge gives {v:.2} ({})",
            gauges.described("trtllm_spec_decode_acceptance_length")
        ));
    }
    Ok(SpecDecodeData {
        num_drafts: Some(drafts),
        draft_tokens: Some(drafted),
        accepted_tokens: accepted,
        acceptance_rate: TRTLLM_PAIR_RATE.eval(delta),
        acceptance_length: TRTLLM_PAIR_LENGTH.eval(delta),
        per_position_acceptance_rates,
        notes,
        spec_config: None,
        data_parallel_engines: None,
    })
}

/// TensorRT-LLM's window from its iteration counters alone (a release without the per-position
/// pair): the rate from the counters, the length from its gauges, no drafts.
fn trtllm_from_iterations(delta: &SpecCounters, facts: &WindowFacts) -> Result<SpecDecodeData, Error> {
    let gauges = &facts.gauges;
    if delta.num_draft_tokens == 0 {
        return Err(Error::NoActivity);
    }
    if delta.num_accepted_tokens > delta.num_draft_tokens {
        return Err(Error::AcceptedAboveDrafted {
            accepted: delta.num_accepted_tokens,
            drafted: delta.num_draft_tokens,
        });
    }
    let mut notes = vec![facts.flat_positions.clone().unwrap_or_else(|| {
        "TensorRT-LLM exported no per-position pair (trtllm_spec_decode_drafted_tokens_total by token_position, in its releases since 2026-03): no drafts, no per-position rates, and the length comes from its gauges"
            .to_string()
    })];
    // The length's sources after the pair: TensorRT-LLM's gauges, in order.
    let length = sources(Engine::Trtllm, Figure::AcceptanceLength)
        .iter()
        .find_map(|source| match source {
            Source::Gauge { name, .. } => source.eval(delta, gauges).map(|v| (*name, v)),
            Source::Counters(_) => None,
        });
    let acceptance_length = match length {
        Some((name, v)) => {
            notes.push(format!("acceptance length: {}", gauges.described(name)));
            Some(v)
        }
        None => {
            notes.push(
                "acceptance length: no trtllm_spec_decode_acceptance_length gauge was scraped in the window".into(),
            );
            None
        }
    };
    Ok(SpecDecodeData {
        num_drafts: None,
        draft_tokens: Some(delta.num_draft_tokens),
        accepted_tokens: delta.num_accepted_tokens,
        acceptance_rate: VLLM_RATE.eval(delta),
        acceptance_length,
        per_position_acceptance_rates: BTreeMap::new(),
        notes,
        spec_config: None,
        data_parallel_engines: None,
    })
}

fn derive_sglang(delta: &SpecCounters, gauges: &GaugeMeans) -> Result<SpecDecodeData, Error> {
    let verify = delta.num_drafts;
    if verify == 0 {
        return Err(Error::NoActivity);
    }
    let generation = delta.generation_tokens.unwrap_or(0);
    let requests = delta.requests.unwrap_or(0);
    // Every request's first token comes from prefill; each verify step gives accepted + 1.
    if generation < requests.saturating_add(verify) {
        return Err(Error::GeneratedBelowSteps {
            generated: generation,
            requests,
            verify,
        });
    }
    let accepted = super::formulas::signed_count(SGLANG_ACCEPTED, delta);
    let mut notes = vec![
        format!(
            "acceptance length = (Δ sglang:generation_tokens_total − Δ sglang:num_requests_total) / Δ sglang:spec_verify_calls_total; SGLang's own convention (Δgeneration / Δverify, the first token counted) gives {:.2}",
            generation as f64 / verify as f64
        ),
        "SGLang counts no draft tokens: no draft-token total and no per-position rates".to_string(),
    ];
    let acceptance_rate = match gauges.get("sglang:spec_accept_rate") {
        Some(rate) => {
            notes.push(format!(
                "acceptance rate: {}",
                gauges.described("sglang:spec_accept_rate")
            ));
            Some(rate * 100.0)
        }
        None => {
            notes.push("acceptance rate: no sglang:spec_accept_rate gauge was scraped in the window".into());
            None
        }
    };
    for (name, what) in [
        ("sglang:spec_cap_length", "DSpark's draft cap"),
        ("sglang:spec_block_accept_length", "DSpark's accepted length per block"),
    ] {
        if let Some(v) = gauges.get(name) {
            notes.push(format!("{what}: {v:.2} ({})", gauges.described(name)));
        }
    }
    Ok(SpecDecodeData {
        num_drafts: Some(verify),
        draft_tokens: None,
        accepted_tokens: accepted,
        acceptance_rate,
        acceptance_length: SGLANG_LENGTH.eval(delta),
        per_position_acceptance_rates: BTreeMap::new(),
        notes,
        spec_config: None,
        data_parallel_engines: None,
    })
}

/// The counters' growth between two snapshots of the same server, or the reason it cannot be
/// trusted: a counter that went down (or a label set that vanished) means the server restarted
/// inside the window, and the figure would be wrong.
pub fn window_delta(before: &CounterSet, after: &CounterSet) -> Result<SpecCounters, Error> {
    if before.prefix != after.prefix {
        return Err(Error::EngineChanged {
            before: before.prefix.clone(),
            after: after.prefix.clone(),
        });
    }
    for (key, b) in &before.series {
        let Some(a) = after.series.get(key) else {
            return Err(Error::SeriesVanished {
                counter: before.counter_name(Family::Drafts, key),
            });
        };
        let went_down_at = |family: Family, b: &BTreeMap<u32, u64>, a: &BTreeMap<u32, u64>| {
            b.iter()
                .filter_map(|(pos, bv)| a.get(pos).map(|av| (*pos, *bv, *av)))
                .find(|(_, bv, av)| av < bv)
                .map(|(pos, bv, av)| (before.position_name(family, key, pos), bv, av))
        };
        let went_down = scalars(b, a)
            .into_iter()
            .find(|(_, bv, av)| av < bv)
            .map(|(family, bv, av)| (before.counter_name(family, key), bv, av))
            .or_else(|| went_down_at(Family::PerPos, &b.accepted_per_pos, &a.accepted_per_pos))
            .or_else(|| went_down_at(Family::DraftedPerPos, &b.drafted_per_pos, &a.drafted_per_pos));
        if let Some((counter, before, after)) = went_down {
            return Err(Error::CounterWentDown { counter, before, after });
        }
    }
    let (b, a) = (&before.total, &after.total);
    let grown = |bv: Option<u64>, av: Option<u64>| av.map(|av| av.saturating_sub(bv.unwrap_or(0)));
    let delta = SpecCounters {
        num_drafts: a.num_drafts.saturating_sub(b.num_drafts),
        num_draft_tokens: a.num_draft_tokens.saturating_sub(b.num_draft_tokens),
        num_accepted_tokens: a.num_accepted_tokens.saturating_sub(b.num_accepted_tokens),
        accepted_per_pos: grown_by_position(&b.accepted_per_pos, &a.accepted_per_pos),
        drafted_per_pos: grown_by_position(&b.drafted_per_pos, &a.drafted_per_pos),
        generation_tokens: grown(b.generation_tokens, a.generation_tokens),
        requests: grown(b.requests, a.requests),
    };
    Ok(delta)
}

/// Per-position growth over the union of both scrapes' positions: a position missing after
/// keeps its value before (no growth), one missing before starts from zero (series that
/// appear on their first increment, as TensorRT-LLM's do).
fn grown_by_position(b: &BTreeMap<u32, u64>, a: &BTreeMap<u32, u64>) -> BTreeMap<u32, u64> {
    let positions: BTreeSet<u32> = b.keys().chain(a.keys()).copied().collect();
    positions
        .into_iter()
        .map(|pos| {
            let bv = b.get(&pos).copied().unwrap_or(0);
            let av = a.get(&pos).copied().unwrap_or(bv);
            (pos, av.saturating_sub(bv))
        })
        .collect()
}

/// The scalar counters of one series before and after, by family (the SGLang-only ones when
/// present).
fn scalars(b: &SpecCounters, a: &SpecCounters) -> Vec<(Family, u64, u64)> {
    let mut out = vec![
        (Family::Drafts, b.num_drafts, a.num_drafts),
        (Family::DraftTokens, b.num_draft_tokens, a.num_draft_tokens),
        (Family::Accepted, b.num_accepted_tokens, a.num_accepted_tokens),
    ];
    if let (Some(bv), Some(av)) = (b.generation_tokens, a.generation_tokens) {
        out.push((Family::Generation, bv, av));
    }
    if let (Some(bv), Some(av)) = (b.requests, a.requests) {
        out.push((Family::Requests, bv, av));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scrape::testing::{counters, single};

    #[test]
    fn aisbench_delta_example() {
        let before = single(counters(100, 500, 300, &[100, 90, 75, 50, 30]));
        let after = single(counters(15520, 77600, 50415, &[15520, 13968, 11640, 7760, 4656]));
        let delta = window_delta(&before, &after).unwrap();
        let d = derive_stats(&delta).unwrap();
        assert_eq!(
            (d.num_drafts, d.draft_tokens, d.accepted_tokens),
            (Some(15420), Some(77100), 50115)
        );
        assert!((d.acceptance_rate.unwrap() - 65.0).abs() < 1e-12);
        assert!((d.acceptance_length.unwrap() - 4.25).abs() < 1e-12);
        let want = [1.0, 0.9, 0.75, 0.5, 0.3];
        for (i, w) in want.iter().enumerate() {
            assert!((d.per_position_acceptance_rates[&(i as u32)] - w).abs() < 1e-12);
        }
    }

    #[test]
    fn aisbench_documentation_example() {
        let d = derive_stats(&counters(163, 815, 809, &[])).unwrap();
        assert_eq!(format!("{:.2}", d.acceptance_rate.unwrap()), "99.26");
        assert_eq!(format!("{:.2}", d.acceptance_length.unwrap()), "5.96");
    }

    #[test]
    fn no_draft_tokens_is_na_and_no_drafts_gives_zero_length() {
        assert_eq!(derive_stats(&counters(0, 0, 0, &[0])).unwrap_err(), Error::NoActivity);
        assert_eq!(Error::NoActivity.to_string(), NO_ACTIVITY);
        let d = derive_stats(&counters(0, 10, 4, &[3])).unwrap();
        assert_eq!(d.acceptance_length, Some(0.0));
        assert!(d.per_position_acceptance_rates.is_empty());
    }

    #[test]
    fn per_position_uses_union_and_before_value_for_missing_after() {
        let before = single(counters(10, 30, 10, &[8, 2]));
        let mut after_c = counters(20, 60, 25, &[16]);
        after_c.accepted_per_pos.insert(2, 5);
        let after = single(after_c);
        let delta = window_delta(&before, &after).unwrap();
        assert_eq!(delta.accepted_per_pos, [(0, 8), (1, 0), (2, 5)].into_iter().collect());
    }

    #[test]
    fn reset_in_one_engine_is_caught_even_when_the_sum_grows() {
        let mut before = single(counters(100, 300, 200, &[]));
        before.series.insert("engine=\"1\"".into(), counters(50, 150, 100, &[]));
        let mut after = single(counters(400, 1200, 800, &[]));
        after.series.insert("engine=\"1\"".into(), counters(5, 15, 10, &[]));
        assert!(window_delta(&before, &after)
            .unwrap_err()
            .to_string()
            .contains("engine=\"1\""));
    }

    #[test]
    fn small_rates_are_written_as_python_writes_them() {
        let d = derive_stats(&counters(100_000, 300_000, 3, &[1, 0])).unwrap();
        let json = serde_json::to_string(&d).unwrap();
        assert!(
            json.contains(r#""per_position_acceptance_rates":{"0":1e-05,"1":0.0}"#),
            "{json}"
        );
        let back: SpecDecodeData = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
    }
}
