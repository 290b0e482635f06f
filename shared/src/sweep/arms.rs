//! Several speculative arms in one sweep: each arm against plain (its ratio and crossing with
//! their intervals), each pair of arms against each other, spec-minus-plain latency, the engine's
//! own load gauges per arm, the highest load each arm sustains within the goodput objectives, and
//! the recommendation drawn from them (see [`super::recommend`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::adaptive::{
    AdaptiveArm, AdaptiveJudgement, AdaptiveLevel, ScheduleCheck, StaleAcceptance, Thrashing, Verdict,
    ADAPTIVE_ACCEPTANCE_NOTE,
};
use super::levels::{throughput, Arm, Axis, Level};
use super::pair::PairTable;
use super::saturation::Saturation;
use super::step_cost::StepCostRow;
use crate::model::calibrate::RooflineFit;
pub use crate::model::calibrate::{CalibratedPrediction, CALIBRATION_MIN_REQUESTS, CALIBRATION_RULE};
use crate::model::speedup::Costs;
use crate::results::run_result::{EngineLoad, RunResult};

use super::latency::{latency_rows, render_latency};
pub use super::latency::{LatencyPair, LatencyRow};
pub use super::levels::{NamedPoint, BASE_ARM};

/// The share of requests within every `--goodput` objective that counts as sustaining a load:
/// DistServe's 90 % SLO attainment.
pub const SLO_ATTAINMENT: f64 = 0.9;

/// The latency families compared between an arm and plain.
pub const LATENCY_FAMILIES: [&str; 4] = ["tpot", "ttft", "itl", "e2el"];

/// One prompt category's speedup by level: plain ÷ arm median TPOT (per-request decode speed;
/// output throughput of a mixed batch does not divide by category), and where it falls
/// through 1.0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategorySpeedup {
    pub category: String,
    /// `(level, plain ÷ arm median TPOT)`, ascending.
    pub ratios: Vec<(f64, f64)>,
    pub crossing: Option<f64>,
}

/// Whether `name` can name a speculative arm: letters, digits, `.`, `_` and `-`, not `base`.
pub fn valid_arm_name(name: &str) -> bool {
    !name.is_empty()
        && name != BASE_ARM
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The run id of one point (`eagle3-k3-c16`, `base-r2.5`), also its folder and file stem.
pub fn point_id(arm: &str, level: Level) -> String {
    format!("{arm}-{}", level.tag())
}

/// Arm name and level of an `<arm>-c<N>.json` / `<arm>-r<rate>.json` file name.
pub fn parse_point_name(name: &str) -> Option<(String, Level)> {
    let stem = name.strip_suffix(".json")?;
    let (arm, tag) = stem.rsplit_once('-')?;
    let level = Level::parse_tag(tag)?;
    (arm == BASE_ARM || valid_arm_name(arm)).then(|| (arm.to_string(), level))
}

/// The engine's own load at one level, for an arm and for plain (what drafts cost that the
/// model does not charge: KV blocks, preemptions, queueing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineRow {
    pub level: f64,
    pub spec: Option<EngineLoad>,
    pub base: Option<EngineLoad>,
}

/// One speculative arm of a sweep against plain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSweep {
    pub name: String,
    /// A server running a draft-length schedule (`--adaptive`): judged against the best fixed
    /// choice per level, never picked for a k (see [`super::adaptive`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
    /// The draft length its acceptance figures name (`None`: nothing measured); an adaptive
    /// arm's is its schedule's largest.
    pub k: Option<u32>,
    /// Acceptance length pooled over the arm's points (1 + Σaccepted ÷ Σdrafts); an adaptive
    /// arm's counts only steps that drafted.
    pub acceptance_length: Option<f64>,
    /// The drafts it pools (the regression check's noise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<f64>,
    /// Per-position acceptance rates, each point's weighted by its drafts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_position_acceptance_rates: Vec<f64>,
    /// The arm against plain, as a two-arm sweep's table (its ratio, crossing and prediction).
    pub table: PairTable,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<LatencyRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine: Vec<EngineRow>,
    /// Speedup and break-even by prompt category, when the prompts had categories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_category: Vec<CategorySpeedup>,
    /// What a speculative step costs in plain steps at each concurrency, and the acceptance
    /// length that load needs (see [`super::step_cost`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_cost: Vec<StepCostRow>,
    /// Its throughput's knee and over-saturation against load (see [`super::saturation`]).
    #[serde(default, skip_serializing_if = "Saturation::is_empty")]
    pub saturation: Saturation,
    /// B* predicted from plain's curve alone (the roofline fitted to it) and this arm's E at
    /// its lowest level: what could be known before the speculative sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated: Option<CalibratedPrediction>,
    /// The highest level at which at least [`SLO_ATTAINMENT`] of its requests met every
    /// `--goodput` objective (when they were given and some level did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained_within_slo: Option<f64>,
}

/// Two speculative arms against each other: `first` in the table's spec columns, `second` in
/// its base columns; the ratio is first ÷ second, its crossing where `second` starts to win.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairSweep {
    pub first: String,
    pub second: String,
    pub table: PairTable,
}

/// Every arm of a multi-arm sweep, their pairs, and plain's sustained load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Arms {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arms: Vec<ArmSweep>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairSweep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_sustained_within_slo: Option<f64>,
    /// Each adaptive arm against the best fixed choice per level.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adaptive: Vec<AdaptiveJudgement>,
    /// Plain's knee and over-saturation.
    #[serde(default, skip_serializing_if = "Saturation::is_empty")]
    pub base_saturation: Saturation,
}

impl ArmSweep {
    /// The overview's step-cost sentence: the highest level whose points both had a steady
    /// window (the highest measured when none did).
    pub fn step_cost_sentence(&self) -> Option<String> {
        let row = self
            .step_cost
            .iter()
            .rev()
            .find(|r| r.steady)
            .or(self.step_cost.last())?;
        Some(row.sentence(&self.name))
    }

    /// The arm's ratio to plain at `level` and the bounds its repeats allow (the ratio itself
    /// for points run once).
    pub fn ratio_at(&self, level: f64) -> Option<(f64, (f64, f64))> {
        let row = self.table.rows.iter().find(|r| r.level == level)?;
        let ratio = row.ratio()?;
        Some((ratio, row.ratio_bounds().unwrap_or((ratio, ratio))))
    }
}

/// The speculative arms' names in the order their points first appear.
pub fn arm_names<'a>(points: &[NamedPoint<'a>]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for p in points {
        if p.arm != BASE_ARM && !names.contains(&p.arm) {
            names.push(p.arm);
        }
    }
    names
}

/// A two-arm table of `first` (as spec) against `second` (as base) from named points.
fn two_arm_table(points: &[NamedPoint<'_>], first: &str, second: &str, costs: Costs) -> PairTable {
    let role = |name: &str| {
        if name == first {
            Some(Arm::Spec)
        } else if name == second {
            Some(Arm::Base)
        } else {
            None
        }
    };
    let chosen: Vec<(Arm, Level, &RunResult)> = points
        .iter()
        .filter_map(|p| Some((role(p.arm)?, p.level, p.result)))
        .collect();
    let spreads: Vec<(Arm, Level, f64, f64)> = points
        .iter()
        .filter_map(|p| {
            let (lo, hi) = p.spread?;
            Some((role(p.arm)?, p.level, lo, hi))
        })
        .collect();
    PairTable::from_points(&chosen, costs).with_spreads(&spreads)
}

/// The highest level at which `arm`'s runs met every objective for [`SLO_ATTAINMENT`] of their
/// requests.
fn sustained(points: &[NamedPoint<'_>], arm: &str) -> Option<f64> {
    points
        .iter()
        .filter(|p| p.arm == arm)
        .filter(|p| {
            let r = p.result;
            match (r.good_requests, r.completed) {
                (Some(good), Some(done)) if done > 0 => good as f64 / done as f64 >= SLO_ATTAINMENT,
                _ => false,
            }
        })
        .map(|p| p.level.value())
        .reduce(f64::max)
}

/// The engine gauges of `arm` and plain by level, where either exported them.
fn engine_rows(points: &[NamedPoint<'_>], arm: &str) -> Vec<EngineRow> {
    let mut levels: Vec<Level> = points.iter().filter(|p| p.arm == arm).map(|p| p.level).collect();
    levels.sort_by(|a, b| a.value().total_cmp(&b.value()));
    levels
        .into_iter()
        .filter_map(|level| {
            let load = |name: &str| {
                points
                    .iter()
                    .find(|p| p.arm == name && p.level == level)
                    .and_then(|p| p.result.engine_load.clone())
            };
            let (spec, base) = (load(arm), load(BASE_ARM));
            (spec.is_some() || base.is_some()).then_some(EngineRow {
                level: level.value(),
                spec,
                base,
            })
        })
        .collect()
}

/// Each category's plain ÷ `arm` median TPOT by level, and its crossing.
fn category_rows(points: &[NamedPoint<'_>], arm: &str) -> Vec<CategorySpeedup> {
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in points.iter().filter(|p| p.arm == arm) {
        let (Some(mine), Some(plain)) = (
            p.category_tpot_ms,
            points
                .iter()
                .find(|b| b.arm == BASE_ARM && b.level == p.level)
                .and_then(|b| b.category_tpot_ms),
        ) else {
            continue;
        };
        for (category, tpot) in mine {
            if let Some(base) = plain.get(category).filter(|_| *tpot > 0.0) {
                by.entry(category.clone())
                    .or_default()
                    .push((p.level.value(), base / tpot));
            }
        }
    }
    by.into_iter()
        .map(|(category, mut ratios)| {
            ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
            let points: Vec<crate::model::speedup::RatioPoint> = ratios
                .iter()
                .map(|(level, ratio)| crate::model::speedup::RatioPoint {
                    concurrency: *level,
                    ratio: *ratio,
                })
                .collect();
            CategorySpeedup {
                category,
                crossing: crate::model::speedup::sweep_crossing(&points),
                ratios,
            }
        })
        .collect()
}

/// Median TPOT of `arm` (or of plain, `spec == false`) at `level`, from its latency rows.
fn tpot_at(arm: &ArmSweep, level: f64, spec: bool) -> Option<f64> {
    let pair = arm
        .latency
        .iter()
        .find(|r| r.level == level)?
        .figures
        .get("median_tpot_ms")?;
    Some(if spec { pair.spec_ms } else { pair.base_ms })
}

/// Every adaptive arm of `arms` against its fixed-k arms and plain, at each level both measured
/// (plain always counts as a fixed choice, with ratio 1), and each concurrency checked against
/// the schedule the arm was asked to run, when `asked` names it.
fn adaptive_judgements(arms: &[ArmSweep], points: &[NamedPoint<'_>], asked: &[AdaptiveArm]) -> Vec<AdaptiveJudgement> {
    let fixed: Vec<&ArmSweep> = arms.iter().filter(|a| !a.adaptive).collect();
    arms.iter()
        .filter(|a| a.adaptive)
        .map(|adaptive| {
            let schedule = asked
                .iter()
                .find(|a| a.name == adaptive.name)
                .and_then(|a| a.schedule.clone());
            let checks = schedule
                .as_deref()
                .map(|s| ScheduleCheck::of_arm(s, points, &adaptive.name))
                .unwrap_or_default();
            let thrashing = Thrashing::of_arm(points, &adaptive.name);
            let stale = schedule
                .as_deref()
                .map(|s| StaleAcceptance::of_arm(s, points, &adaptive.name))
                .unwrap_or_default();
            let levels = adaptive
                .table
                .rows
                .iter()
                .filter_map(|row| {
                    let level = row.level;
                    let (ratio, bounds) = adaptive.ratio_at(level)?;
                    let best = fixed
                        .iter()
                        .filter_map(|f| f.ratio_at(level).map(|(r, b)| (*f, r, b)))
                        .filter(|(_, r, _)| *r > 1.0)
                        .max_by(|x, y| x.1.total_cmp(&y.1));
                    let (best_fixed, best_ratio, best_bounds, best_median_tpot_ms) = match best {
                        Some((f, r, b)) => (Some(f.name.clone()), r, b, tpot_at(f, level, true)),
                        None => (None, 1.0, (1.0, 1.0), tpot_at(adaptive, level, false)),
                    };
                    let verdict = Verdict::of(bounds, best_bounds);
                    Some(AdaptiveLevel {
                        level,
                        ratio,
                        bounds,
                        best_fixed,
                        best_ratio,
                        best_bounds,
                        median_tpot_ms: tpot_at(adaptive, level, true),
                        best_median_tpot_ms,
                        verdict,
                        schedule: at_level(&checks, level),
                        thrashing: at_level(&thrashing, level),
                        stale_acceptance: at_level(&stale, level),
                    })
                })
                .collect();
            AdaptiveJudgement {
                arm: adaptive.name.clone(),
                schedule,
                levels,
            }
        })
        .collect()
}

/// What a per-level list holds for `level`.
fn at_level<T: Clone>(found: &[(f64, T)], level: f64) -> Option<T> {
    found.iter().find(|(l, _)| *l == level).map(|(_, t)| t.clone())
}

/// `arm`'s knee and over-saturation, from its points' output throughput and median E2E latency.
fn saturation_of(points: &[NamedPoint<'_>], arm: &str) -> Saturation {
    let curve: Vec<(f64, f64, f64)> = points
        .iter()
        .filter(|p| p.arm == arm)
        .filter_map(|p| Some((p.level.value(), throughput(p.result)?, p.result.median_e2el_ms?)))
        .collect();
    Saturation::of(&curve)
}

/// The roofline fitted to plain's concurrency curve, fed with `arm`'s E pooled over its lowest
/// levels until they hold [`CALIBRATION_MIN_REQUESTS`] requests (or over all of them).
fn calibrated_of(points: &[NamedPoint<'_>], arm: &str, costs: Costs) -> Option<CalibratedPrediction> {
    let plain: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.arm == BASE_ARM && p.level.axis().is_concurrency())
        .filter_map(|p| Some((p.level.value(), throughput(p.result)?)))
        .collect();
    let fit = RooflineFit::of(&plain)?;
    let mut mine: Vec<(f64, &RunResult)> = points
        .iter()
        .filter(|p| p.arm == arm && p.level.axis().is_concurrency())
        .map(|p| (p.level.value(), p.result))
        .collect();
    mine.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut drafts, mut accepted, mut draft_tokens, mut requests) = (0.0, 0.0, 0.0, 0);
    let mut levels = Vec::new();
    for (level, result) in mine {
        let (Some((d, a, _)), Some((_, per_draft))) = (result.spec_counts(), super::step_cost::acceptance(result))
        else {
            continue;
        };
        drafts += d;
        accepted += a;
        draft_tokens += per_draft * d;
        requests += result.completed.unwrap_or(0);
        levels.push(level);
        if requests >= CALIBRATION_MIN_REQUESTS {
            break;
        }
    }
    let e = crate::figures::acceptance_length(accepted, drafts)?;
    let d = draft_tokens / drafts;
    let (from, to) = (*levels.first()?, *levels.last()?);
    Some(CalibratedPrediction {
        break_even_batch: fit.break_even(e, d, costs.draft_cost),
        fit,
        acceptance_length: e,
        draft_tokens: d,
        at_level: to,
        from_level: (from < to).then_some(from),
        draft_cost: costs.draft_cost,
        requests,
    })
}

/// Acceptance length pooled over `arm`'s points, and its per-position rates weighted by drafts.
fn pooled_acceptance(points: &[NamedPoint<'_>], arm: &str) -> (Option<u32>, Option<f64>, Option<f64>, Vec<f64>) {
    let mine: Vec<&RunResult> = points.iter().filter(|p| p.arm == arm).map(|p| p.result).collect();
    let k = mine.iter().find_map(|r| r.measured()).map(|m| m.k);
    let (mut drafts, mut accepted) = (0.0, 0.0);
    let mut weighted: Vec<f64> = Vec::new();
    let mut weight = 0.0;
    for r in &mine {
        let Some((d, a, _)) = r.spec_counts() else { continue };
        drafts += d;
        accepted += a;
        if let Some(rates) = &r.spec_decode_per_position_acceptance_rates {
            if weighted.is_empty() {
                weighted = vec![0.0; rates.len()];
            }
            if rates.len() == weighted.len() {
                for (w, p) in weighted.iter_mut().zip(rates) {
                    *w += p * d;
                }
                weight += d;
            }
        }
    }
    let e = crate::figures::acceptance_length(accepted, drafts)
        .or_else(|| mine.iter().find_map(|r| r.measured()).map(|m| m.e));
    let rates = if weight > 0.0 {
        weighted.iter().map(|w| w / weight).collect()
    } else {
        mine.iter()
            .find_map(|r| r.spec_decode_per_position_acceptance_rates.clone())
            .unwrap_or_default()
    };
    (k, e, (drafts > 0.0).then_some(drafts), rates)
}

impl Arms {
    /// The speculative arm named `name`, if the sweep has one.
    pub fn arm(&self, name: &str) -> Option<&ArmSweep> {
        self.arms.iter().find(|a| a.name == name)
    }

    /// Every level any arm measured, ascending.
    pub fn levels(&self) -> Vec<f64> {
        let mut levels: Vec<f64> = self
            .arms
            .iter()
            .flat_map(|a| a.table.rows.iter().map(|r| r.level))
            .collect();
        levels.sort_by(f64::total_cmp);
        levels.dedup();
        levels
    }

    /// Every speculative arm against plain, and every pair of them; the arms named in
    /// `adaptive` run a schedule and are judged against the others.
    pub fn of(points: &[NamedPoint<'_>], costs: Costs, adaptive: &[AdaptiveArm]) -> Arms {
        let names = arm_names(points);
        let arms: Vec<ArmSweep> = names
            .iter()
            .map(|name| {
                let (k, acceptance_length, drafts, per_position_acceptance_rates) = pooled_acceptance(points, name);
                ArmSweep {
                    name: name.to_string(),
                    adaptive: adaptive.iter().any(|a| a.name == *name),
                    k,
                    acceptance_length,
                    drafts,
                    per_position_acceptance_rates,
                    table: two_arm_table(points, name, BASE_ARM, costs),
                    latency: latency_rows(points, name),
                    engine: engine_rows(points, name),
                    by_category: category_rows(points, name),
                    step_cost: super::step_cost::rows(points, name, costs),
                    saturation: saturation_of(points, name),
                    calibrated: calibrated_of(points, name, costs),
                    sustained_within_slo: sustained(points, name),
                }
            })
            .collect();
        let mut pairs = Vec::new();
        for (i, first) in names.iter().enumerate() {
            for second in &names[i + 1..] {
                let mut table = two_arm_table(points, first, second, costs);
                table.prediction = None;
                pairs.push(PairSweep {
                    first: first.to_string(),
                    second: second.to_string(),
                    table,
                });
            }
        }
        Arms {
            adaptive: adaptive_judgements(&arms, points, adaptive),
            arms,
            pairs,
            base_sustained_within_slo: sustained(points, BASE_ARM),
            base_saturation: saturation_of(points, BASE_ARM),
        }
    }

    /// The console text: each arm's ratio to plain by level, their crossings, the pairs'
    /// crossings, latency beside throughput, the engine's load and the loads sustained.
    pub fn render(&self, axis: Axis) -> String {
        let mut out = self.render_summary(axis);
        if !self.arms.is_empty() {
            out.push_str(&self.render_beside());
        }
        out
    }

    /// The measured tables only: each arm's ratio to plain by level, its k, acceptance and
    /// crossing, the arms against each other, and the adaptive arms' verdicts (the detail
    /// beside them, [`Arms::render_beside`], left out).
    pub fn render_summary(&self, axis: Axis) -> String {
        let mut out = String::new();
        if self.arms.is_empty() {
            return out;
        }
        let ratio_name = match axis {
            Axis::Concurrency => "output throughput ÷ plain",
            Axis::RequestRate => "plain ÷ arm median E2E latency",
        };
        out.push_str(&format!("Arms against plain ({ratio_name}; the repeats' range):\n"));
        let column = axis.column();
        let width = |name: &str| name.len().max(20);
        out.push_str(&format!("{column:>12}"));
        for a in &self.arms {
            out.push_str(&format!("   {:>w$}", a.name, w = width(&a.name)));
        }
        out.push('\n');
        for level in self.levels() {
            out.push_str(&format!("{level:>12}"));
            for a in &self.arms {
                let row = a.table.rows.iter().find(|r| r.level == level);
                let cell = match row.and_then(|r| Some((r.ratio()?, r.ratio_bounds()))) {
                    Some((x, Some((lo, hi)))) if (hi - lo).abs() > 1e-12 => format!("{x:.3} ({lo:.3}–{hi:.3})"),
                    Some((x, _)) => format!("{x:.3}"),
                    None => "—".into(),
                };
                out.push_str(&format!("   {cell:>w$}", w = width(&a.name)));
            }
            out.push('\n');
        }
        let symbol = axis.symbol();
        for a in &self.arms {
            let k = match (a.k, a.adaptive) {
                (None, _) => "k not measured".into(),
                (Some(k), false) => format!("k = {k}"),
                (Some(k), true) => format!("a schedule of k up to {k}"),
            };
            let counts = if a.adaptive {
                format!(" ({ADAPTIVE_ACCEPTANCE_NOTE})")
            } else {
                String::new()
            };
            let e = a
                .acceptance_length
                .map_or_else(String::new, |e| format!(", acceptance length {e:.2}{counts}"));
            let rates = if a.per_position_acceptance_rates.is_empty() {
                String::new()
            } else {
                let r: Vec<String> = a
                    .per_position_acceptance_rates
                    .iter()
                    .map(|p| format!("{p:.2}"))
                    .collect();
                format!(", per position {}", r.join(" "))
            };
            out.push_str(&format!(
                "  {}: {k}{e}{rates}; {}\n",
                a.name,
                crossing_text(&a.table, symbol, axis.unit(), "plain")
            ));
        }
        for p in &self.pairs {
            out.push_str(&format!(
                "  {} ÷ {}: {}\n",
                p.first,
                p.second,
                crossing_text(&p.table, "crossing", axis.unit(), &p.second)
            ));
        }
        for judgement in &self.adaptive {
            out.push_str(&judgement.render(axis));
        }
        out
    }

    /// Each arm whose crossing sits at or past plain's over-saturation: a sentence saying the
    /// crossing rests on a saturated plain arm.
    pub fn saturated_crossings(&self) -> Vec<String> {
        let Some(over) = self.base_saturation.over_saturated_from else {
            return Vec::new();
        };
        self.arms
            .iter()
            .filter_map(|a| {
                let b = a.table.crossing.filter(|b| *b >= over)?;
                Some(format!(
                    "{}'s crossing {b:.1} sits at or past plain's over-saturation (from {over}): plain's throughput is flat and its latency growing there, so the crossing is no deployment answer",
                    a.name
                ))
            })
            .collect()
    }

    /// Each arm's calibrated prediction, labelled as what could be known before the sweep, beside
    /// its measured crossing (or, without one, the bound the measured side puts on its error),
    /// a line each; a prediction failing [`CALIBRATION_RULE`] is named withheld with the reason
    /// and no figure.
    fn render_calibrated(&self) -> String {
        let mut out = String::new();
        for a in &self.arms {
            let Some(c) = &a.calibrated else { continue };
            if let Some(why) = c.withheld_because() {
                out.push_str(&format!(
                    "  {}: Calibrated prediction withheld: {why} ({CALIBRATION_RULE})\n",
                    a.name
                ));
                continue;
            }
            let measured = match a.table.crossing {
                Some(b) => format!(
                    "; measured B* = {b:.1}, the calibrated model off by {:+.0} %",
                    (c.break_even_batch / b - 1.0) * 100.0
                ),
                None => a.table.calibrated_bound(c.break_even_batch),
            };
            let levels = match c.from_level {
                Some(from) => format!("{from}–{}", c.at_level),
                None => format!("{}", c.at_level),
            };
            out.push_str(&format!(
                "  {}: {} at concurrency {levels} ({} requests){measured}\n",
                a.name,
                c.fit.sentence(c.acceptance_length, c.draft_tokens, c.draft_cost),
                c.requests,
            ));
        }
        out
    }

    /// The knee and over-saturation of every arm and plain, one line (empty when none found).
    fn render_saturation(&self) -> String {
        let mut parts: Vec<String> = self
            .arms
            .iter()
            .filter(|a| !a.saturation.is_empty())
            .map(|a| format!("{}: {}", a.name, a.saturation.phrase()))
            .collect();
        if !self.base_saturation.is_empty() {
            parts.push(format!("plain: {}", self.base_saturation.phrase()));
        }
        let mut out = if parts.is_empty() {
            String::new()
        } else {
            format!(
                "Knee and over-saturation (throughput against load; over-saturated: under 5 % more throughput for over 20 % more median E2E latency): {}\n",
                parts.join("; ")
            )
        };
        for line in self.saturated_crossings() {
            out.push_str(&format!("Warning: {line}\n"));
        }
        out
    }

    /// Everything beside the ratios, as the console prints it: the sections of
    /// [`Arms::detail_sections`] one after another.
    pub fn render_beside(&self) -> String {
        self.detail_sections().into_iter().map(|(_, text)| text).collect()
    }

    /// The detail beside the ratios, one titled section each (empty ones left out): the
    /// calibrated predictions, knee and over-saturation, prompt categories, latency against
    /// plain, each arm's step cost, engine load, and the load sustained within the goodput
    /// objectives. The console prints them in turn; the sweep page gives each its own
    /// collapsible section.
    pub fn detail_sections(&self) -> Vec<(&'static str, String)> {
        let step_cost: String = self
            .arms
            .iter()
            .filter(|a| !a.step_cost.is_empty())
            .map(|a| super::step_cost::render(&a.name, &a.step_cost, a.table.prediction.as_ref().map(|p| p.costs)))
            .collect();
        let sections = [
            ("Calibrated prediction (before the sweep)", self.render_calibrated()),
            ("Knee and over-saturation", self.render_saturation()),
            ("By prompt category", self.render_categories()),
            ("Latency against plain", render_latency(self.latency_rows())),
            ("Step cost", step_cost),
            ("Engine load", self.render_engine()),
            ("Load sustained within the goodput objectives", self.render_sustained()),
        ];
        sections.into_iter().filter(|(_, text)| !text.is_empty()).collect()
    }

    /// The highest load each arm and plain sustained within the `--goodput` objectives, one
    /// line (empty without objectives).
    fn render_sustained(&self) -> String {
        let mut out = String::new();
        if self.arms.iter().any(|a| a.sustained_within_slo.is_some()) || self.base_sustained_within_slo.is_some() {
            out.push_str(&format!(
                "Highest load sustained within the goodput objectives (≥ {:.0} % of requests): ",
                SLO_ATTAINMENT * 100.0
            ));
            let part = |v: Option<f64>| v.map_or_else(|| "none".to_string(), |v| format!("{v}"));
            let mut parts: Vec<String> = self
                .arms
                .iter()
                .map(|a| format!("{} {}", a.name, part(a.sustained_within_slo)))
                .collect();
            parts.push(format!("plain {}", part(self.base_sustained_within_slo)));
            out.push_str(&parts.join(", "));
            out.push('\n');
        }
        out
    }

    fn render_categories(&self) -> String {
        let mut out = String::new();
        for a in self.arms.iter().filter(|a| !a.by_category.is_empty()) {
            out.push_str(&format!(
                "By prompt category, {} (plain ÷ arm median TPOT by level; crossing):\n",
                a.name
            ));
            for c in &a.by_category {
                let cells: Vec<String> = c.ratios.iter().map(|(l, x)| format!("{l}: {x:.3}")).collect();
                let crossing = c
                    .crossing
                    .map_or_else(|| "no crossing".to_string(), |b| format!("crossing {b:.1}"));
                out.push_str(&format!("  {:<16} {}; {crossing}\n", c.category, cells.join(", ")));
            }
        }
        out
    }

    /// Each arm's name and latency rows.
    fn latency_rows(&self) -> impl Iterator<Item = (&str, &[LatencyRow])> + Clone {
        self.arms.iter().map(|a| (a.name.as_str(), a.latency.as_slice()))
    }

    /// Where an arm's median TPOT improves on plain's while its p99 E2E latency regresses.
    pub fn tail_regressions(&self) -> Vec<String> {
        super::latency::tail_regressions(self.latency_rows())
    }

    fn render_engine(&self) -> String {
        let mut out = String::new();
        for a in self.arms.iter().filter(|a| !a.engine.is_empty()) {
            out.push_str(&format!(
                "Engine load, {} | plain (KV-cache usage mean/max %, preemptions, running, waiting):\n",
                a.name
            ));
            for row in &a.engine {
                let text = |l: &Option<EngineLoad>| l.as_ref().map_or_else(|| "—".to_string(), EngineLoad::summary);
                out.push_str(&format!(
                    "{:>12}   {} | {}\n",
                    row.level,
                    text(&row.spec),
                    text(&row.base)
                ));
            }
        }
        out
    }
}

/// One table's crossing, with its interval, in a sentence fragment.
fn crossing_text(table: &PairTable, symbol: &str, unit: &str, other: &str) -> String {
    match (table.crossing, table.crossing_interval) {
        (Some(b), Some((lo, hi))) => format!("{symbol} = {b:.1} {unit} ({lo:.1}–{hi:.1}), {other} better above"),
        (Some(b), None) => format!("{symbol} = {b:.1} {unit}, {other} better above"),
        (None, _) => {
            let ratios: Vec<f64> = table.rows.iter().filter_map(|r| r.ratio()).collect();
            if ratios.is_empty() {
                format!("no level measured beside {other}")
            } else if ratios.iter().all(|r| *r > 1.0) {
                format!("better than {other} at every level")
            } else if ratios.iter().all(|r| *r <= 1.0) {
                format!("{other} better at every level")
            } else {
                "no crossing inside the swept range".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_median_gain_with_a_p99_loss_is_named() {
        let pair = |spec_ms: f64, base_ms: f64| LatencyPair { spec_ms, base_ms };
        let row = |level: f64, median: LatencyPair, p99: LatencyPair| LatencyRow {
            level,
            figures: [("median_tpot_ms".to_string(), median), ("p99_e2el_ms".to_string(), p99)]
                .into_iter()
                .collect(),
        };
        let arms = Arms {
            arms: vec![ArmSweep {
                name: "spec".into(),
                adaptive: false,
                k: Some(3),
                acceptance_length: Some(2.5),
                drafts: None,
                per_position_acceptance_rates: Vec::new(),
                table: super::super::pair::EMPTY.clone(),
                latency: vec![
                    // Both better at 4; the median better and the p99 worse at 16.
                    row(4.0, pair(10.0, 14.0), pair(500.0, 600.0)),
                    row(16.0, pair(12.0, 14.5), pair(900.0, 794.0)),
                ],
                engine: Vec::new(),
                by_category: Vec::new(),
                step_cost: Vec::new(),
                saturation: Saturation::default(),
                calibrated: None,
                sustained_within_slo: None,
            }],
            ..Arms::default()
        };
        assert_eq!(
            arms.tail_regressions(),
            ["spec at 16: the median TPOT improves on plain (-2.50 ms) while the p99 E2E latency regresses (+106.00 ms): the slowest requests pay for the median's gain"]
        );
        assert!(arms
            .render_beside()
            .contains("Note: spec at 16: the median TPOT improves"));
    }
}
