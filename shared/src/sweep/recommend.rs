//! A sweep's recommendation: the best draft length k for each range of load (what the arms
//! measured, with the model's per-position extension beside it), the load above which
//! speculation should be off, and the engine settings that say so (vLLM's
//! `--speculative-config` with its per-batch-size schedule, SGLang's draft flags and adaptive
//! tiers, TensorRT-LLM's draft-length schedule), each line naming the measurement it comes from,
//! how sure it is, and what on the server would stop it taking effect.

use serde::{Deserialize, Serialize};

pub use super::adaptive::AdaptivePick;
use super::adaptive::ZeroKTax;
use super::arms::{ArmSweep, Arms};
use super::cuts::{place_cuts, CutPlacement};
use super::levels::Axis;
use super::schedules::{vllm_schedule_warnings, ServerFacts};
pub use super::schedules::{ModelSchedule, SCHEDULE_END};
use crate::engine::Engine;
use crate::model::speedup::Costs;

/// What measured best at one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelPick {
    pub level: f64,
    /// The arm that measured best (`None`: plain beat every arm).
    pub arm: Option<String>,
    /// Its draft length (0 for plain; `None`: the arm measured no acceptance).
    pub k: Option<u32>,
    /// Its ratio to plain (1 for plain) and the repeats' bounds of it.
    pub ratio: f64,
    pub bounds: (f64, f64),
    /// The arms (or `plain`) whose interval overlaps the pick's: the pick is within their noise.
    pub tied: Vec<String>,
    /// The model's best k at this batch size from the per-position rates (0: off), on a
    /// concurrency axis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_k: Option<u32>,
    /// The k recommended here: the measured best arm's, or (a sweep of one speculative arm) a
    /// shorter draft of it where the model's extension of its per-position rates prefers one.
    pub recommended_k: Option<u32>,
    /// Whether `recommended_k` comes from the model's extension (not measured).
    #[serde(default)]
    pub from_model: bool,
}

/// One range of load and its draft length (0: speculation off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangePick {
    pub from: f64,
    /// `None`: up to and beyond the sweep's highest level.
    pub to: Option<f64>,
    pub k: Option<u32>,
    pub arm: Option<String>,
    /// Every level inside was a pick without ties.
    pub sure: bool,
    /// The k is the model's extension of the arm's per-position rates, not a measured arm.
    #[serde(default)]
    pub from_model: bool,
}

impl RangePick {
    /// Whether `level` lies in this range (its ends included).
    pub fn contains(&self, level: f64) -> bool {
        level >= self.from && self.to.is_none_or(|to| level <= to)
    }
}

/// What an engine line sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// One k for every batch (k = 0: serve without speculation).
    Fixed,
    /// k by batch size, from the measured ranges.
    Schedule,
    /// The model's best k by batch size, not measured at every k: to try as an adaptive arm.
    ModelSchedule,
    /// The engine's own adaptive choice among candidate k (SGLang's tiers).
    Adaptive,
    /// No line could be written; the basis says why.
    Unwritten,
}

/// Which engines' config lines the console prints: the one the servers reported (or vLLM's
/// when none did), or all of them (`--engine-lines all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineLines {
    Only(Engine),
    All,
}

impl EngineLines {
    pub fn shows(self, engine: Engine) -> bool {
        match self {
            EngineLines::Only(e) => e == engine,
            EngineLines::All => true,
        }
    }
}

/// One engine's setting line and what it rests on. In `sweep.json` the engine and kind are one
/// label (`vLLM`, `vLLM (model's schedule)`, `SGLang`, `SGLang (adaptive)`, `TensorRT-LLM`), as
/// every speclens before this type wrote them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "SettingFile", try_from = "SettingFile")]
pub struct Setting {
    pub engine: Engine,
    pub kind: SettingKind,
    pub line: String,
    pub basis: String,
    /// What on the server would stop the line taking effect.
    pub warnings: Vec<String>,
}

impl Setting {
    /// The engine's name, with the kind where the engine has more than one line of it.
    pub fn label(&self) -> String {
        match self.kind {
            SettingKind::ModelSchedule => format!("{} (model's schedule)", self.engine.display_name()),
            SettingKind::Adaptive => format!("{} (adaptive)", self.engine.display_name()),
            _ => self.engine.display_name().to_string(),
        }
    }
}

/// A [`Setting`] as `sweep.json` holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SettingFile {
    engine: String,
    line: String,
    basis: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

impl From<Setting> for SettingFile {
    fn from(s: Setting) -> SettingFile {
        SettingFile {
            engine: s.label(),
            line: s.line,
            basis: s.basis,
            warnings: s.warnings,
        }
    }
}

impl TryFrom<SettingFile> for Setting {
    type Error = String;

    /// The label's engine and kind; a vLLM or TensorRT-LLM line without a suffix is a schedule
    /// when it sets one (vLLM's `num_speculative_tokens_per_batch_size`, TensorRT-LLM's
    /// `draft_len_schedule`), else one k.
    fn try_from(f: SettingFile) -> Result<Setting, String> {
        let (name, suffix) = match f.engine.split_once(" (") {
            Some((name, rest)) => (name, Some(rest.trim_end_matches(')'))),
            None => (f.engine.as_str(), None),
        };
        let engine = [Engine::Vllm, Engine::Sglang, Engine::Trtllm, Engine::LlamaCpp]
            .into_iter()
            .find(|e| e.display_name() == name)
            .ok_or_else(|| format!("a recommendation's setting names an unknown engine {:?}", f.engine))?;
        let kind = match suffix {
            Some("model's schedule") => SettingKind::ModelSchedule,
            Some("adaptive") => SettingKind::Adaptive,
            Some(other) => return Err(format!("a recommendation's setting has an unknown kind {other:?}")),
            None if f.line.is_empty() => SettingKind::Unwritten,
            None if f.line.contains("num_speculative_tokens_per_batch_size")
                || f.line.contains("draft_len_schedule") =>
            {
                SettingKind::Schedule
            }
            None => SettingKind::Fixed,
        };
        Ok(Setting {
            engine,
            kind,
            line: f.line,
            basis: f.basis,
            warnings: f.warnings,
        })
    }
}

/// The recommendation of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub axis: Axis,
    pub levels: Vec<LevelPick>,
    pub ranges: Vec<RangePick>,
    /// The level above which speculation should be off, the interval the repeats allow, and
    /// the arm whose crossing it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_off: Option<CutOff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelSchedule>,
    pub settings: Vec<Setting>,
    /// The ranges where an adaptive arm (a server running a schedule) was ahead of or tied
    /// with the best fixed choice at every level measured: its schedule is the one to run there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adaptive: Vec<AdaptivePick>,
    /// What k = 0 costs against plain where speculation is off, per adaptive arm that measured it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zero_k: Vec<ZeroKTax>,
    /// The concurrencies the user runs at (`--operating-concurrency`), and the cuts that sat
    /// near one: where each went ([`super::cuts::CUT_RULE`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operating_concurrency: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<CutPlacement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutOff {
    pub level: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    pub arm: String,
    /// Plain is over-saturated at the cut-off (its throughput flat, its latency growing): the
    /// cut-off rests on a saturated point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plain_over_saturated_from: Option<f64>,
}

impl Recommendation {
    /// The recommendation from a sweep's arms; `speculative_config` is the arms' servers' own
    /// vLLM `--speculative-config` (its other keys are kept in the line printed), `facts` what
    /// is known of those servers, `operating` the concurrencies the user runs at.
    pub fn of(
        arms: &Arms,
        axis: Axis,
        costs: Costs,
        speculative_config: Option<&serde_json::Value>,
        facts: &ServerFacts,
        operating: &[u64],
    ) -> Option<Recommendation> {
        let judgements = &arms.adaptive;
        let fixed = fixed_arms(arms);
        let arms = &fixed;
        if arms.arms.is_empty() {
            return None;
        }
        // The model extends the arm with the most positions measured.
        let longest = arms
            .arms
            .iter()
            .filter(|a| !a.per_position_acceptance_rates.is_empty())
            .fold(None, |best: Option<&ArmSweep>, a| match best {
                Some(b) if b.per_position_acceptance_rates.len() >= a.per_position_acceptance_rates.len() => Some(b),
                _ => Some(a),
            });
        let model = longest.and_then(|a| ModelSchedule::from_rates(&a.name, &a.per_position_acceptance_rates, costs));
        let picks: Vec<LevelPick> = arms
            .levels()
            .iter()
            .filter_map(|&level| pick_at(arms, level, model.as_ref().filter(|_| axis.is_concurrency())))
            .collect();
        let mut ranges = ranges_of(arms, &picks, costs);
        let cuts = if axis.is_concurrency() {
            let measured: Vec<f64> = picks.iter().map(|p| p.level).collect();
            let mut spans: Vec<_> = ranges.iter().map(|r| (r.from, r.to, r.k.unwrap_or(0))).collect();
            let cuts = place_cuts(&mut spans, &measured, operating);
            ranges
                .iter_mut()
                .zip(spans)
                .for_each(|(r, s)| (r.from, r.to) = (s.0, s.1));
            cuts
        } else {
            Vec::new()
        };
        let cut_off = cut_off_of(arms, &picks);
        let mut rec = Recommendation {
            axis,
            levels: picks,
            ranges,
            cut_off,
            model,
            settings: Vec::new(),
            adaptive: Vec::new(),
            zero_k: Vec::new(),
            operating_concurrency: operating.to_vec(),
            cuts,
        };
        // A level belongs to the range of its own pick (two ranges may share a boundary level).
        let spans: Vec<(f64, Option<f64>)> = rec.ranges.iter().map(|r| (r.from, r.to)).collect();
        let own = |i: usize, level: f64| {
            let r = &rec.ranges[i];
            (rec.levels.iter()).any(|p| p.level == level && p.arm == r.arm && p.recommended_k == r.k)
        };
        rec.adaptive = AdaptivePick::of(&spans, own, judgements);
        rec.zero_k = judgements
            .iter()
            .filter_map(|j| ZeroKTax::of(j, |l| rec.off_at(l)))
            .collect();
        rec.settings = rec.settings_lines(speculative_config);
        rec.settings.extend(rec.model_schedule_line(speculative_config));
        for vllm in rec.settings.iter_mut().filter(|s| {
            s.engine == Engine::Vllm && matches!(s.kind, SettingKind::Schedule | SettingKind::ModelSchedule)
        }) {
            vllm.warnings = vllm_schedule_warnings(facts);
        }
        rec.settings.extend(rec.schedule_lines(arms));
        Some(rec)
    }

    /// The ranges as vLLM's inclusive batch-size schedule (concurrency sweeps).
    pub fn batch_schedule(&self) -> Vec<(u64, u64, u32)> {
        let mut out: Vec<(u64, u64, u32)> = Vec::new();
        for (i, r) in self.ranges.iter().enumerate() {
            let from = if i == 0 { 1 } else { out.last().map_or(1, |l| l.1 + 1) };
            let to = match (self.ranges.get(i + 1), r.to) {
                (Some(_), Some(to)) => (to.floor() as u64).max(from),
                _ => SCHEDULE_END,
            };
            let k = r.k.unwrap_or(0);
            match out.last_mut() {
                Some(l) if l.2 == k => l.1 = to,
                _ => out.push((from, to, k)),
            }
        }
        out
    }

    /// The k of a pick's name (`plain`: 0).
    pub(super) fn k_of(&self, name: &str) -> Option<u32> {
        if name == "plain" {
            return Some(0);
        }
        self.levels
            .iter()
            .find(|l| l.arm.as_deref() == Some(name))
            .and_then(|l| l.k)
    }
}

/// The pick at one level: the arm with the highest ratio and the arms (and plain) within its
/// noise, or plain when no arm beats it; `model` is the model's schedule beside it (concurrency
/// sweeps only).
fn pick_at(arms: &Arms, level: f64, model: Option<&ModelSchedule>) -> Option<LevelPick> {
    let scored: Vec<(&ArmSweep, f64, (f64, f64))> = arms
        .arms
        .iter()
        .filter_map(|a| a.ratio_at(level).map(|(r, b)| (a, r, b)))
        .collect();
    let (best, ratio, bounds) = scored.iter().copied().max_by(|x, y| x.1.total_cmp(&y.1))?;
    let model_k = model.map(|m| m.k_at(level));
    if ratio <= 1.0 {
        // Plain wins; tied with every arm whose best case reaches 1.
        let tied = scored
            .iter()
            .filter(|s| s.2 .1 > 1.0)
            .map(|s| s.0.name.clone())
            .collect();
        return Some(LevelPick {
            level,
            arm: None,
            k: Some(0),
            ratio: 1.0,
            bounds: (1.0, 1.0),
            tied,
            model_k,
            recommended_k: Some(0),
            from_model: false,
        });
    }
    let mut tied: Vec<String> = scored
        .iter()
        .filter(|s| s.0.name != best.name && s.2 .1 >= bounds.0)
        .map(|s| s.0.name.clone())
        .collect();
    if bounds.0 <= 1.0 {
        tied.push("plain".into());
    }
    // What was measured decides: the model's k at this level (`model_k`) is said
    // beside it, never put in its place (an unmeasured k is no recommendation).
    Some(LevelPick {
        level,
        arm: Some(best.name.clone()),
        k: best.k,
        ratio,
        bounds,
        tied,
        model_k,
        recommended_k: best.k,
        from_model: false,
    })
}

/// The fixed-k arms: an adaptive arm runs a schedule, not one k, so it is judged against the
/// picks (`Arms::adaptive`), never one of them.
fn fixed_arms(arms: &Arms) -> Arms {
    Arms {
        arms: arms.arms.iter().filter(|a| !a.adaptive).cloned().collect(),
        base_saturation: arms.base_saturation,
        ..Arms::default()
    }
}

/// Consecutive picks of the same arm, each range ending where the next arm's interpolated
/// ratio overtakes it (the midpoint when one of the two was not measured at both levels).
fn ranges_of(arms: &Arms, picks: &[LevelPick], costs: Costs) -> Vec<RangePick> {
    let mut ranges: Vec<RangePick> = Vec::new();
    for (i, p) in picks.iter().enumerate() {
        match ranges.last_mut() {
            Some(r) if r.arm == p.arm && r.k == p.recommended_k => r.sure &= p.tied.is_empty(),
            _ => {
                if let (Some(prev), Some(r)) = (i.checked_sub(1).map(|j| &picks[j]), ranges.last_mut()) {
                    r.to = Some(boundary(arms, prev, p, costs));
                }
                ranges.push(RangePick {
                    from: p.level,
                    to: None,
                    k: p.recommended_k,
                    arm: p.arm.clone(),
                    sure: p.tied.is_empty(),
                    from_model: p.from_model,
                });
            }
        }
    }
    // Each later range starts just after the one before it ends.
    for i in 1..ranges.len() {
        if let Some(to) = ranges[i - 1].to {
            ranges[i].from = ranges[i].from.min(to);
        }
    }
    ranges
}

/// Where the pick at `b` overtakes the pick at `a`: the level where the ratio of their ratios
/// to plain falls through 1 between the two levels.
fn boundary(arms: &Arms, a: &LevelPick, b: &LevelPick, costs: Costs) -> f64 {
    // The same arm at two draft lengths of its model: where that model's k changes.
    if a.arm.is_some() && a.arm == b.arm {
        let arm = arms.arms.iter().find(|x| Some(&x.name) == a.arm.as_ref());
        let end = arm
            .and_then(|x| ModelSchedule::from_rates(&x.name, &x.per_position_acceptance_rates, costs))
            .and_then(|m| {
                let at = a.level.round().max(1.0) as u64;
                m.ranges.iter().find(|r| (r.0..=r.1).contains(&at)).map(|r| r.1 as f64)
            });
        return match end {
            Some(e) if e >= a.level && e < b.level => e,
            _ => 0.5 * (a.level + b.level),
        };
    }
    let ratio = |pick: &LevelPick, level: f64| -> Option<f64> {
        match &pick.arm {
            None => Some(1.0),
            Some(name) => arms
                .arms
                .iter()
                .find(|x| &x.name == name)
                .and_then(|x| x.ratio_at(level))
                .map(|s| s.0),
        }
    };
    let at = |level: f64| Some(ratio(a, level)? / ratio(b, level)?);
    match (at(a.level), at(b.level)) {
        (Some(ra), Some(rb)) if ra > 1.0 && rb <= 1.0 && ra > rb => {
            a.level + (b.level - a.level) * (ra - 1.0) / (ra - rb)
        }
        _ => 0.5 * (a.level + b.level),
    }
}

/// The level above which no arm beats plain: when the last pick is plain, the crossing of the
/// arm picked last before it (with its interval).
fn cut_off_of(arms: &Arms, picks: &[LevelPick]) -> Option<CutOff> {
    if picks.last()?.arm.is_some() {
        return None;
    }
    let last_arm = picks.iter().rev().find_map(|p| p.arm.clone())?;
    let arm = arms.arm(&last_arm)?;
    let level = arm.table.crossing?;
    Some(CutOff {
        level,
        interval: arm.table.crossing_interval,
        arm: last_arm,
        plain_over_saturated_from: arms.base_saturation.over_saturated_from.filter(|o| level >= *o),
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::sweep::AdaptiveArm;
    #[test]
    fn a_setting_is_one_label_in_the_file_and_its_engine_and_kind_in_memory() {
        for (label, line, engine, kind) in [
            (
                "vLLM",
                r#"--speculative-config '{"num_speculative_tokens":3}'"#,
                Engine::Vllm,
                SettingKind::Fixed,
            ),
            (
                "vLLM",
                r#"--speculative-config '{"num_speculative_tokens":3,"num_speculative_tokens_per_batch_size":[[1,8,3],[9,65536,1]]}'"#,
                Engine::Vllm,
                SettingKind::Schedule,
            ),
            ("vLLM", "", Engine::Vllm, SettingKind::Unwritten),
            (
                "vLLM (model's schedule)",
                "--speculative-config '{}'",
                Engine::Vllm,
                SettingKind::ModelSchedule,
            ),
            (
                "SGLang",
                "--speculative-num-steps 3",
                Engine::Sglang,
                SettingKind::Fixed,
            ),
            (
                "SGLang (adaptive)",
                "--speculative-adaptive",
                Engine::Sglang,
                SettingKind::Adaptive,
            ),
            (
                "TensorRT-LLM",
                "draft_len_schedule: {8: 3}",
                Engine::Trtllm,
                SettingKind::Schedule,
            ),
        ] {
            let quoted = |s: &str| serde_json::to_string(s).unwrap();
            let text = format!(r#"{{"engine":{},"line":{},"basis":"b"}}"#, quoted(label), quoted(line));
            let setting: Setting = serde_json::from_str(&text).unwrap();
            assert_eq!((setting.engine, setting.kind), (engine, kind), "{label}: {line}");
            assert_eq!(
                serde_json::to_string(&setting).unwrap(),
                text,
                "written back byte for byte"
            );
        }
        let unknown = serde_json::from_str::<Setting>(r#"{"engine": "vLLN", "line": "", "basis": ""}"#);
        assert!(unknown.unwrap_err().to_string().contains("unknown engine \"vLLN\""));
    }
    use crate::model::speedup::best_k;
    use crate::results::run_result::RunResult;
    use crate::sweep::adaptive::Verdict;
    use crate::sweep::arms::NamedPoint;
    use crate::sweep::{Level, SweepFile};

    /// Concurrency points of `(arm, level, result)` triples, unrepeated.
    pub(in crate::sweep) fn named<'a>(results: &'a [(&'a str, u64, RunResult)]) -> Vec<NamedPoint<'a>> {
        results
            .iter()
            .map(|(arm, c, r)| NamedPoint {
                arm,
                level: Level::Concurrency(*c),
                result: r,
                spread: None,
                category_tpot_ms: None,
            })
            .collect()
    }

    /// A point's result: output tok/s, and acceptance at `rates` (k = their count) when given.
    fn run(tokens: f64, rates: &[f64]) -> RunResult {
        let mut r = RunResult {
            steady_output_throughput: Some(tokens),
            ..RunResult::default()
        };
        r.output_throughput = Some(tokens);
        if !rates.is_empty() {
            let drafts = 1000u64;
            r.spec_decode_acceptance_length = Some(1.0 + rates.iter().sum::<f64>());
            r.spec_decode_per_position_acceptance_rates = Some(rates.to_vec());
            r.spec_decode_num_drafts = Some(drafts);
            r.spec_decode_draft_tokens = Some(drafts * rates.len() as u64);
            r.spec_decode_accepted_tokens = Some((rates.iter().sum::<f64>() * drafts as f64) as u64);
        }
        r
    }

    #[test]
    fn one_arm_above_plain_everywhere_is_recommended_everywhere_measured() {
        // A k = 3 server at 1.3× plain up to concurrency 128, with rates whose model prefers a
        // shorter k at high load: the measured k holds every range and every engine line; the
        // model's k stays on its own labelled line.
        let rates = [0.8, 0.5, 0.2];
        let costs = Costs {
            draft_cost: 0.0,
            ridge_tokens: 74.0,
        };
        let results: Vec<(&str, u64, RunResult)> = [1u64, 16, 64, 128]
            .iter()
            .flat_map(|c| {
                [
                    ("spec", *c, run(130.0 * *c as f64, &rates)),
                    ("base", *c, run(100.0 * *c as f64, &[])),
                ]
            })
            .collect();
        let points = named(&results);
        let t = SweepFile::of_arms(&points, costs, None, &[], &[]);
        let rec = t.recommendation.as_ref().unwrap();
        let model = rec.model.as_ref().expect("the model's schedule from the arm's rates");
        assert!(
            model.ranges.iter().any(|(_, _, k)| *k != 3),
            "the model prefers another k somewhere: {:?}",
            model.ranges
        );
        assert!(
            rec.levels.iter().all(|l| l.recommended_k == Some(3) && !l.from_model),
            "{:?}",
            rec.levels
        );
        assert_eq!(rec.ranges.len(), 1, "{:?}", rec.ranges);
        assert_eq!((rec.ranges[0].k, rec.ranges[0].from_model), (Some(3), false));
        // The model's schedule is a line of its own, labelled as not measured at every k.
        let (model_line, measured): (Vec<&Setting>, Vec<&Setting>) =
            rec.settings.iter().partition(|s| s.kind == SettingKind::ModelSchedule);
        let [model_line] = model_line.as_slice() else {
            panic!("one model line: {:?}", rec.settings)
        };
        assert!(model_line.line.contains("[[1,20,3],[21,31,2]"), "{model_line:?}");
        assert!(model_line.basis.contains("not measured at every k"), "{model_line:?}");
        for s in measured {
            for k in [0, 1, 2, 4] {
                assert!(
                    !s.line.contains(&format!("\"num_speculative_tokens\":{k}")) && !s.line.contains(&format!(",{k}]")),
                    "{s:?} ships an unmeasured k = {k}"
                );
            }
        }
        let text = rec.render();
        assert!(text.contains("k = 3 (arm spec)"), "{text}");
        assert!(!text.contains("not measured: an arm"), "{text}");
        assert!(text.contains("Model (per-position rates of spec"), "{text}");
    }

    /// Arms k3 (rates 0.8, 0.6, 0.45) and k1 (0.8) against plain, output tok/s by concurrency:
    /// k3 best at 1 and 8, k1 at 32, plain at 64.
    pub(in crate::sweep) fn two_arm_results() -> Vec<(&'static str, u64, RunResult)> {
        let data = [
            (1, 300.0, 200.0, 100.0),
            (8, 2000.0, 1500.0, 800.0),
            (32, 3000.0, 3600.0, 3000.0),
            (64, 3000.0, 3400.0, 4000.0),
        ];
        data.iter()
            .flat_map(|(c, k3, k1, plain)| {
                [
                    ("k3", *c, run(*k3, &[0.8, 0.6, 0.45])),
                    ("k1", *c, run(*k1, &[0.8])),
                    ("base", *c, run(*plain, &[])),
                ]
            })
            .collect()
    }

    #[test]
    fn two_arms_give_ranges_a_cut_off_and_a_vllm_schedule() {
        let results = two_arm_results();
        let points = named(&results);
        let config = serde_json::json!({"method": "eagle3", "num_speculative_tokens": 5});
        let t = SweepFile::of_arms(&points, Costs::H100_FREE_DRAFTS, Some(&config), &[], &[]);
        let rec = t.recommendation.as_ref().unwrap();
        let picks: Vec<Option<&str>> = rec.levels.iter().map(|l| l.arm.as_deref()).collect();
        assert_eq!(picks, [Some("k3"), Some("k3"), Some("k1"), None]);
        // k3 ÷ k1 falls through 1 between 8 (1.333) and 32 (0.833): 8 + 24 · 0.333 / 0.5 = 24.
        assert_eq!(
            rec.batch_schedule(),
            vec![(1, 24, 3), (25, 50, 1), (51, SCHEDULE_END, 0)]
        );
        let cut = rec.cut_off.as_ref().unwrap();
        // k1 ÷ plain: 1.2 at 32, 0.85 at 64: 32 + 32 · 0.2 / 0.35 = 50.3.
        assert!((cut.level - (32.0 + 32.0 * 0.2 / 0.35)).abs() < 1e-9, "{}", cut.level);
        assert_eq!(cut.arm, "k1");
        let vllm = &rec.settings[0];
        assert_eq!(
            vllm.line,
            r#"--speculative-config '{"method":"eagle3","num_speculative_tokens":3,"num_speculative_tokens_per_batch_size":[[1,24,3],[25,50,1],[51,65536,0]]}'"#
        );
        assert!(
            vllm.basis.contains("off above k1's measured crossing B* = 50.3"),
            "{}",
            vllm.basis
        );
        assert!(rec.settings[1].line.starts_with("--speculative-num-steps 3 "));
        assert!(vllm.warnings.is_empty(), "eagle3 on one engine: {:?}", vllm.warnings);
        // The same ranges as SGLang's tiers and TensorRT-LLM's schedule, each checked by reading
        // it back the way the engine does.
        let sglang = rec.settings.iter().find(|s| s.kind == SettingKind::Adaptive).unwrap();
        let json = sglang.line.split_once("# adaptive.json: ").unwrap().1;
        let tiers: serde_json::Value = serde_json::from_str(json).unwrap();
        for (b, k) in [(1, 3), (24, 3), (25, 1), (50, 1), (51, 0), (4096, 0)] {
            let (_, steps) = super::super::schedules::sglang_tier_at(&tiers, b, &[]).unwrap();
            assert!(steps.contains(&k), "batch {b}: {steps:?} lacks k = {k}");
        }
        let trtllm = rec.settings.iter().find(|s| s.engine == Engine::Trtllm).unwrap();
        assert_eq!(
            trtllm.line,
            "speculative_config: {max_draft_len: 3, draft_len_schedule: {24: 3, 65536: 1}}"
        );
        assert!(trtllm.basis.contains("up to each key"), "{}", trtllm.basis);
        // Floored for a one-engine drafter (the method unknown here): the load past the cut is
        // routed, and the two-model form beside it.
        assert!(
            trtllm
                .basis
                .contains("concurrency 51 and above: route to a plain server")
                && trtllm.basis.contains("Written for a one-engine drafter")
                && trtllm
                    .basis
                    .contains("{max_draft_len: 3, draft_len_schedule: {24: 3, 50: 1}}"),
            "{}",
            trtllm.basis
        );
        assert!(trtllm.warnings[0].contains("#16888"), "{:?}", trtllm.warnings);
        assert!(trtllm.warnings[1].contains("SpeculationGate"), "{:?}", trtllm.warnings);
        let text = t.render();
        assert!(text.contains("concurrency 1–24: k = 3 (arm k3)"), "{text}");
        assert!(text.contains("      warning: a SpeculationGate"), "{text}");
        assert!(text.contains("concurrency 51 and above: speculation off"), "{text}");
        assert!(rec
            .summary()
            .starts_with("Recommended: k = 3 (k3) at concurrency 1–24; k = 1 (k1) at concurrency 25–50"));
    }

    #[test]
    fn overlapping_repeats_are_ties_and_plain_everywhere_turns_speculation_off() {
        let rates = [0.5];
        let (a, b, plain) = (run(1100.0, &rates), run(1080.0, &[0.5, 0.2]), run(1000.0, &[]));
        let points = [
            NamedPoint {
                arm: "a",
                level: Level::Concurrency(4),
                result: &a,
                spread: Some((1050.0, 1150.0)),
                category_tpot_ms: None,
            },
            NamedPoint {
                arm: "b",
                level: Level::Concurrency(4),
                result: &b,
                spread: Some((1060.0, 1120.0)),
                category_tpot_ms: None,
            },
            NamedPoint {
                arm: "base",
                level: Level::Concurrency(4),
                result: &plain,
                spread: Some((990.0, 1010.0)),
                category_tpot_ms: None,
            },
        ];
        let t = SweepFile::of_arms(&points, Costs::H100_FREE_DRAFTS, None, &[], &[]);
        let pick = &t.recommendation.as_ref().unwrap().levels[0];
        assert_eq!(pick.arm.as_deref(), Some("a"));
        // b's best case (1120 / 990) reaches a's worst (1050 / 1010); a's worst is above 1.
        assert_eq!(pick.tied, vec!["b".to_string()]);
        assert!(!t.recommendation.as_ref().unwrap().ranges[0].sure);
        let loses = run(900.0, &rates);
        let points = [
            NamedPoint {
                arm: "a",
                level: Level::Concurrency(4),
                result: &loses,
                spread: None,
                category_tpot_ms: None,
            },
            NamedPoint {
                arm: "base",
                level: Level::Concurrency(4),
                result: &plain,
                spread: None,
                category_tpot_ms: None,
            },
        ];
        let t = SweepFile::of_arms(&points, Costs::H100_FREE_DRAFTS, None, &[], &[]);
        let rec = t.recommendation.unwrap();
        assert_eq!(
            rec.settings[0].line,
            "(no --speculative-config: serve without speculation)"
        );
    }

    #[test]
    fn the_model_schedule_is_the_best_k_at_every_batch() {
        let rates = [0.8, 0.6, 0.45, 0.3];
        let costs = Costs {
            draft_cost: 0.05,
            ridge_tokens: 64.0,
        };
        let m = ModelSchedule::from_rates("a", &rates, costs).unwrap();
        for b in [1.0, 5.0, 12.0, 13.0, 20.0, 30.0, 40.0, 60.0, 200.0] {
            let want = best_k(&rates, costs, b).filter(|c| c.speedup > 1.0).map_or(0, |c| c.k);
            assert_eq!(m.k_at(b), want, "batch {b}");
        }
        // Ranges cover 1..=SCHEDULE_END without gaps, ending off.
        assert_eq!(m.ranges[0].0, 1);
        for w in m.ranges.windows(2) {
            assert_eq!(w[0].1 + 1, w[1].0);
        }
        assert_eq!(m.ranges.last().unwrap(), &(m.ranges.last().unwrap().0, SCHEDULE_END, 0));
        let off = m.off_above.unwrap();
        assert!(m.k_at(off.ceil() - 1.0) > 0 && m.k_at(off.ceil() + 1.0) == 0, "{off}");
    }

    #[test]
    fn an_adaptive_arm_is_judged_against_the_best_fixed_choice_and_never_picked() {
        // k3 wins at 1, k1 at 64, plain at 128; the schedule's server ("sched") measures the
        // best ratio at 1 of all, yet is never picked: it is judged level by level instead.
        let mut results: Vec<(&str, u64, RunResult)> = Vec::new();
        for (c, k3, k1, sched) in [
            (1u64, 1.30, 1.10, 1.35),
            (64, 0.90, 1.05, 1.04),
            (128, 0.80, 0.95, 0.99),
        ] {
            let plain = 100.0 * c as f64;
            results.push(("k3", c, run(plain * k3, &[0.8, 0.5, 0.2])));
            results.push(("sched", c, run(plain * sched, &[0.8, 0.5, 0.2])));
            results.push(("k1", c, run(plain * k1, &[0.8])));
            results.push(("base", c, run(plain, &[])));
        }
        let mut points = named(&results);
        // The schedule's repeats at 64 span k1's ratio: a tie there.
        for p in points
            .iter_mut()
            .filter(|p| p.arm == "sched" && p.level == Level::Concurrency(64))
        {
            p.spread = Some((6400.0 * 1.0, 6400.0 * 1.1));
        }
        let t = SweepFile::of_arms(
            &points,
            Costs::H100_FREE_DRAFTS,
            None,
            &[AdaptiveArm::named("sched")],
            &[],
        );
        let rec = t.recommendation.as_ref().unwrap();
        assert!(
            rec.levels
                .iter()
                .all(|l| l.arm.as_deref() != Some("sched") && !l.tied.contains(&"sched".to_string())),
            "{:?}",
            rec.levels
        );
        let picked: Vec<Option<&str>> = rec.levels.iter().map(|l| l.arm.as_deref()).collect();
        assert_eq!(picked, [Some("k3"), Some("k1"), None]);
        assert_eq!(
            t.head().rows[0].ratio().map(|r| (r * 100.0).round()),
            Some(130.0),
            "k3 heads, not the schedule"
        );
        let [j] = t.arms.adaptive.as_slice() else {
            panic!("one judgement: {:?}", t.arms.adaptive)
        };
        let verdicts: Vec<(f64, Option<&str>, Verdict)> = j
            .levels
            .iter()
            .map(|l| (l.level, l.best_fixed.as_deref(), l.verdict))
            .collect();
        assert_eq!(
            verdicts,
            [
                (1.0, Some("k3"), Verdict::Ahead),
                (64.0, Some("k1"), Verdict::Tied),
                (128.0, None, Verdict::Behind)
            ]
        );
        assert_eq!(j.tally(), (1, 1, 1));
        // The schedule held up (ahead, behind nowhere) in k3's range only: the recommendation
        // says to run it there, and nowhere else.
        let picks: Vec<(&str, f64, usize, usize)> = rec
            .adaptive
            .iter()
            .map(|a| (a.arm.as_str(), a.from, a.ahead, a.tied))
            .collect();
        assert_eq!(picks, [("sched", 1.0, 1, 0)], "{:?}", rec.ranges);
        let text = t.render();
        assert!(
            text.contains("the schedule of adaptive arm sched held up at every level measured there (ahead of the best fixed choice at 1 level, tied at 0 levels, behind at none): run that schedule there rather than a fixed k"),
            "{text}"
        );
        assert!(
            text.contains("sched: a schedule of k up to 3, acceptance length 2.50 (counts only steps that drafted)"),
            "{text}"
        );
        assert!(
            text.contains(
                "the schedule of sched is ahead of the best fixed choice at 1, tied at 1 and behind at 1 of 3 levels"
            ),
            "{text}"
        );
        assert!(text.contains("against plain 1.000: behind"), "{text}");
        // The mark survives sweep.json.
        let back: SweepFile = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        assert!(back.arms.arms.iter().any(|a| a.name == "sched" && a.adaptive));
    }

    #[test]
    fn a_crossing_past_plain_s_over_saturation_is_labelled_and_so_is_the_cut_off() {
        // Plain flattens at 8 (its knee) and queues from 16 on (latency doubling each level);
        // the arm falls through 1.0 between 16 and 32, where plain is already over-saturated.
        let mut results: Vec<(&str, u64, RunResult)> = Vec::new();
        for (c, spec, plain, latency_ms) in [
            (1u64, 200.0, 100.0, 100.0),
            (8, 1200.0, 800.0, 100.0),
            (16, 1000.0, 800.0, 200.0),
            (32, 700.0, 800.0, 400.0),
        ] {
            let mut s = run(spec, &[0.8, 0.5, 0.2]);
            s.median_e2el_ms = Some(latency_ms);
            let mut b = run(plain, &[]);
            b.median_e2el_ms = Some(latency_ms);
            results.push(("spec", c, s));
            results.push(("base", c, b));
        }
        let t = SweepFile::of_arms(&named(&results), Costs::H100_FREE_DRAFTS, None, &[], &[]);
        assert_eq!(t.arms.base_saturation.knee, Some(8.0));
        assert_eq!(t.arms.base_saturation.over_saturated_from, Some(16.0));
        let crossing = t.arms.arms[0].table.crossing.unwrap();
        assert!(crossing > 16.0, "{crossing}");
        let [line] = t.arms.saturated_crossings().try_into().unwrap();
        assert!(
            line.starts_with("spec's crossing 26.7 sits at or past plain's over-saturation (from 16)"),
            "{line}"
        );
        let rec = t.recommendation.as_ref().unwrap();
        assert_eq!(rec.cut_off.as_ref().unwrap().plain_over_saturated_from, Some(16.0));
        let text = t.render();
        assert!(text.contains("plain: knee 8, over-saturated from 16"), "{text}");
        assert!(text.contains("Warning: spec's crossing 26.7 sits at or past"), "{text}");
        assert!(
            text.contains("the cut-off rests on a saturated point: plain is over-saturated from concurrency 16"),
            "{text}"
        );
    }
}
