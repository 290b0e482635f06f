//! An "adaptive" arm judged by what it does: a server running a draft-length schedule (vLLM's
//! `num_speculative_tokens_per_batch_size`, SGLang's `--speculative-adaptive`, TensorRT-LLM's
//! `draft_len_schedule`) set beside the best fixed choice at each level (a fixed-k arm or
//! plain), by the sweep's compared figure and median TPOT.
//!
//! Its acceptance length is not comparable with a fixed-k arm's: the engines count a draft only
//! when a step drafted at least one token, so the steps the schedule turns off are in no
//! count; the length stays flat while the speedup falls.

use serde::{Deserialize, Serialize};

use super::levels::{Axis, Level, NamedPoint};
use super::schedules::vllm_k_at;
use crate::results::run_result::RunResult;

/// An arm that runs a draft-length schedule, and the schedule it was asked to run (vLLM's
/// inclusive `(from, to, k)` batch-size ranges) when known: from `--adaptive NAME=SCHEDULE`,
/// else the schedule the folder's sweep recommended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveArm {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Vec<(u64, u64, u32)>>,
}

impl AdaptiveArm {
    /// An arm whose schedule is not known.
    pub fn named(name: &str) -> AdaptiveArm {
        AdaptiveArm {
            name: name.to_string(),
            schedule: None,
        }
    }
}

/// The rule that says whether a level ran the schedule, printed beside the checks.
pub const SCHEDULE_CHECK_RULE: &str = "at concurrency c the schedule asks k(c) and the server's fixed k is the schedule's largest; applied while the draft tokens per draft stay below halfway from k(c) to that largest k (a proposer may draft fewer than asked, the ramp's smaller batches draft more); where k(c) = 0, off as asked while the share of the output from steps that drafted is at most half the arm's share where it drafts";

/// Whether one level of an adaptive arm ran the schedule it was asked to run, from its
/// counters: the draft tokens per draft against the schedule's k at that concurrency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ScheduleCheck {
    /// Drafts of about the asked length.
    Applied { asked_k: u32, per_draft: f64 },
    /// Drafts of another length than asked (`per_draft`), or none where some were asked.
    NotApplied {
        asked_k: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per_draft: Option<f64>,
    },
    /// The schedule turns speculation off here and few steps drafted (those of the ramp's
    /// smaller batches): the share of the output from steps that drafted.
    OffAsAsked { drafted_share: f64 },
    /// The engine counts no draft tokens, so the length drafted cannot be read.
    Unknown { asked_k: u32 },
    /// The point has no spec-decode counts (its scrape failed, or the server exposes none).
    Unmeasured { asked_k: u32 },
}

impl ScheduleCheck {
    /// The check of one point run at concurrency `level` under `schedule`; `reference_share` is
    /// the arm's largest drafted share where the schedule drafts (1 when none was measured).
    pub fn of(schedule: &[(u64, u64, u32)], level: u64, result: &RunResult, reference_share: f64) -> ScheduleCheck {
        let asked_k = vllm_k_at(schedule, level);
        let fixed_k = schedule.iter().map(|r| r.2).max().unwrap_or(0);
        let share = match drafted(result) {
            Some(false) => 0.0,
            Some(true) => match drafted_share(result) {
                Some(share) => share,
                None => return ScheduleCheck::Unmeasured { asked_k },
            },
            None => return ScheduleCheck::Unmeasured { asked_k },
        };
        let per_draft = result
            .spec_counts()
            .and_then(|(drafts, _, tokens)| Some(tokens? / drafts));
        if asked_k == 0 {
            return if share > 0.5 * reference_share {
                ScheduleCheck::NotApplied { asked_k, per_draft }
            } else {
                ScheduleCheck::OffAsAsked { drafted_share: share }
            };
        }
        if share == 0.0 {
            return ScheduleCheck::NotApplied {
                asked_k,
                per_draft: None,
            };
        }
        match per_draft {
            None => ScheduleCheck::Unknown { asked_k },
            Some(m) if asked_k < fixed_k && m >= (f64::from(asked_k) + f64::from(fixed_k)) / 2.0 => {
                ScheduleCheck::NotApplied {
                    asked_k,
                    per_draft: Some(m),
                }
            }
            Some(m) => ScheduleCheck::Applied { asked_k, per_draft: m },
        }
    }

    /// `arm`'s points at each concurrency checked against `schedule`; the reference share is
    /// the largest share of output from drafting steps where the schedule drafts.
    pub fn of_arm(schedule: &[(u64, u64, u32)], points: &[NamedPoint<'_>], arm: &str) -> Vec<(f64, ScheduleCheck)> {
        let at = concurrency_points(points, arm);
        let reference_share = at
            .iter()
            .filter(|(c, _)| vllm_k_at(schedule, *c) > 0)
            .filter_map(|(_, r)| drafted_share(r))
            .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))))
            .unwrap_or(1.0);
        at.iter()
            .map(|(c, r)| (*c as f64, ScheduleCheck::of(schedule, *c, r, reference_share)))
            .collect()
    }

    /// Short words for the console, the file and the page.
    pub fn sentence(&self) -> String {
        match self {
            ScheduleCheck::Applied { asked_k, per_draft } => {
                format!("applied ({per_draft:.2} draft tokens per draft, {asked_k} asked)")
            }
            ScheduleCheck::NotApplied {
                asked_k,
                per_draft: Some(m),
            } => {
                format!("not applied ({m:.2} draft tokens per draft where the schedule asks {asked_k})")
            }
            ScheduleCheck::NotApplied {
                asked_k: 0,
                per_draft: None,
            } => "not applied (steps drafted where the schedule asks 0)".to_string(),
            ScheduleCheck::NotApplied {
                asked_k,
                per_draft: None,
            } => {
                format!("not applied (no drafts where the schedule asks {asked_k})")
            }
            ScheduleCheck::OffAsAsked { drafted_share } if *drafted_share <= 0.0 => {
                "speculation off as asked (no drafts)".to_string()
            }
            ScheduleCheck::OffAsAsked { drafted_share } => format!(
                "speculation off as asked ({:.0} % of the output from steps that drafted: the ramp's smaller batches)",
                drafted_share * 100.0
            ),
            ScheduleCheck::Unknown { asked_k } => {
                format!("cannot tell (the engine counts no draft tokens; the schedule asks {asked_k})")
            }
            ScheduleCheck::Unmeasured { asked_k } => format!(
                "cannot tell (no spec-decode counts for this point: its scrape failed or the server exposes none; the schedule asks {asked_k})"
            ),
        }
    }

    /// The level did not run what the schedule asks.
    pub fn failed(&self) -> bool {
        matches!(self, ScheduleCheck::NotApplied { .. })
    }
}

/// A range of the recommendation where an adaptive arm held up at every level measured: how
/// many levels it was ahead at and tied at (it was behind at none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptivePick {
    pub arm: String,
    pub from: f64,
    /// `None`: up to and beyond the sweep's highest level.
    pub to: Option<f64>,
    pub ahead: usize,
    pub tied: usize,
}

impl AdaptivePick {
    /// Per range `(from, to)` and adaptive arm: the pick when the arm was measured in the range,
    /// ahead at one level at least and behind at none; `own(i, level)` says whether a level
    /// inside range `i` belongs to it.
    pub fn of(
        spans: &[(f64, Option<f64>)],
        own: impl Fn(usize, f64) -> bool,
        judgements: &[AdaptiveJudgement],
    ) -> Vec<AdaptivePick> {
        let mut picks = Vec::new();
        for (i, &(from, to)) in spans.iter().enumerate() {
            let in_range = |level: f64| level >= from && to.is_none_or(|to| level <= to) && own(i, level);
            for j in judgements {
                let inside: Vec<Verdict> = j
                    .levels
                    .iter()
                    .filter(|l| in_range(l.level))
                    .map(|l| l.verdict)
                    .collect();
                let count = |v: Verdict| inside.iter().filter(|x| **x == v).count();
                if count(Verdict::Ahead) > 0 && count(Verdict::Behind) == 0 {
                    picks.push(AdaptivePick {
                        arm: j.arm.clone(),
                        from,
                        to,
                        ahead: count(Verdict::Ahead),
                        tied: count(Verdict::Tied),
                    });
                }
            }
        }
        picks
    }
}

/// Above this median-TPOT cost of k = 0 against plain, the range where speculation is off goes
/// to a plain server rather than running k = 0 on the speculative one.
pub const ZERO_K_ROUTE_ABOVE: f64 = 0.05;

/// Said for a range where speculation is off when no adaptive arm measured what k = 0 costs.
pub const ZERO_K_UNMEASURED: &str = "k = 0 is not a plain server and no adaptive arm measured what it costs here; vLLM #51575 and #49548 measured +6.6 % (concurrency 2) to +21.6 % (concurrency 189) median TPOT with a schedule pinned to k = 0 against the same model served without speculation (H100 NVL, vLLM 0.33: PIECEWISE CUDA graphs and the drafter's KV): route it to a plain server, or sweep the schedule as an adaptive arm (--adaptive NAME=SCHEDULE) to measure it";

/// What k = 0 on a speculative server costs against plain where the recommendation turns
/// speculation off: measured on an adaptive arm whose schedule asks k = 0 there and was
/// applied (plain measured best at those levels).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZeroKTax {
    pub arm: String,
    /// Each level: its median TPOT against plain's, less 1, and its output throughput ÷ plain.
    pub levels: Vec<ZeroKLevel>,
    /// The levels' mean TPOT cost.
    pub tpot_tax: f64,
    /// Above [`ZERO_K_ROUTE_ABOVE`]: send that load to a plain server.
    pub route: bool,
}

/// One level of a [`ZeroKTax`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ZeroKLevel {
    pub level: f64,
    pub tpot_tax: f64,
    pub ratio: f64,
}

impl ZeroKTax {
    /// The cost in judgement `j` at the levels where `off` says speculation is off and its
    /// schedule was checked off as asked; `None` where it measured none.
    pub fn of(j: &AdaptiveJudgement, off: impl Fn(f64) -> bool) -> Option<ZeroKTax> {
        let levels: Vec<ZeroKLevel> = j
            .levels
            .iter()
            .filter(|l| off(l.level) && l.best_fixed.is_none())
            .filter(|l| matches!(l.schedule, Some(ScheduleCheck::OffAsAsked { .. })))
            .filter_map(|l| {
                Some(ZeroKLevel {
                    level: l.level,
                    tpot_tax: l.median_tpot_ms? / l.best_median_tpot_ms? - 1.0,
                    ratio: l.ratio,
                })
            })
            .collect();
        if levels.is_empty() {
            return None;
        }
        let tpot_tax = levels.iter().map(|l| l.tpot_tax).sum::<f64>() / levels.len() as f64;
        Some(ZeroKTax {
            arm: j.arm.clone(),
            levels,
            tpot_tax,
            route: tpot_tax > ZERO_K_ROUTE_ABOVE,
        })
    }

    /// The console's sentence for the off range named `span` (`concurrency 9 and above`).
    pub fn sentence(&self, span: &str) -> String {
        let at: Vec<String> = self
            .levels
            .iter()
            .map(|l| format!("{} ({:+.1} %, {:.2}× plain)", l.level, l.tpot_tax * 100.0, l.ratio))
            .collect();
        let cost = format!(
            "k = 0 on the speculative server costs {:+.1} % median TPOT against plain (adaptive arm {} at {})",
            self.tpot_tax * 100.0,
            self.arm,
            at.join(", ")
        );
        let limit = ZERO_K_ROUTE_ABOVE * 100.0;
        if self.route {
            format!("{span}: {cost}: route {span} to a plain server (more than {limit:.0} %)")
        } else {
            format!("{span}: {cost}: k = 0 on the same server is fine there (within {limit:.0} %)")
        }
    }
}

/// The rule that says acceptance did not recover, printed beside the checks.
pub const RECOVERY_RULE: &str = "where the schedule asks k = 0, the steps that still drafted (the ramp-down, its batch below the cut again) accept at least half the arm's acceptance rate at its lowest level that drafts; below that, over 30 draft tokens or more, acceptance did not recover after speculation resumed";

/// Draft tokens a level's resumed steps need before their acceptance is judged.
const RECOVERY_MIN_DRAFT_TOKENS: u64 = 30;

/// A level where the schedule turns speculation off whose resumed steps accepted under half
/// the arm's low-load rate: a drafter whose state went stale while it skipped steps at k = 0
/// (TensorRT-LLM's one-engine drafters, NVIDIA/TensorRT-LLM #16888).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StaleAcceptance {
    /// The level's acceptance rate (%) and draft tokens, from the steps that drafted.
    pub rate_pct: f64,
    pub draft_tokens: u64,
    /// The arm's acceptance rate (%) at its lowest level where the schedule drafts.
    pub reference_pct: f64,
    pub reference_level: f64,
}

impl StaleAcceptance {
    /// `arm`'s levels where `schedule` asks k = 0 and acceptance did not recover
    /// ([`RECOVERY_RULE`]).
    pub fn of_arm(schedule: &[(u64, u64, u32)], points: &[NamedPoint<'_>], arm: &str) -> Vec<(f64, StaleAcceptance)> {
        let at = concurrency_points(points, arm);
        let Some((reference_level, reference_pct)) = at
            .iter()
            .filter(|(c, _)| vllm_k_at(schedule, *c) > 0)
            .filter_map(|(c, r)| Some((*c, r.spec_decode_acceptance_rate?)))
            .min_by_key(|(c, _)| *c)
        else {
            return Vec::new();
        };
        at.iter()
            .filter(|(c, _)| vllm_k_at(schedule, *c) == 0)
            .filter_map(|(c, r)| {
                let (rate_pct, draft_tokens) = (r.spec_decode_acceptance_rate?, r.spec_decode_draft_tokens?);
                (draft_tokens >= RECOVERY_MIN_DRAFT_TOKENS && rate_pct < 0.5 * reference_pct).then_some((
                    *c as f64,
                    StaleAcceptance {
                        rate_pct,
                        draft_tokens,
                        reference_pct,
                        reference_level: reference_level as f64,
                    },
                ))
            })
            .collect()
    }

    /// Short words for the console, the file and the page.
    pub fn sentence(&self) -> String {
        format!(
            "acceptance did not recover after speculation resumed ({:.1} % over the {} draft tokens of the steps that drafted again, against {:.1} % at {})",
            self.rate_pct, self.draft_tokens, self.reference_pct, self.reference_level
        )
    }
}

/// The rule that calls a level thrashing, printed beside the checks.
pub const THRASH_RULE: &str = "thrashing at a level: over its scrape intervals at steady load (the first and last dropped, the ramp and the drain), an interval drafts when the output of its drafting steps ((drafts + accepted tokens) per second) is at least half the level's mean output tokens per second and does not at a quarter or less, and the level switches between the two three times or more";

/// Switches between on and off a level needs to be thrashing.
const THRASH_SWITCHES: u32 = 3;

/// A level whose drafting switched on and off while its load held steady (per-scrape drafts/s
/// going to zero and back): a schedule's cut at the load the level ran, which vLLM keys on the
/// requests scheduled in a step, prefills included (vllm-project/vllm #49548, hypothesis H3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thrashing {
    /// Switches between drafting and not drafting.
    pub switches: u32,
    /// The steady scrape intervals they were counted over.
    pub intervals: u32,
}

impl Thrashing {
    /// The thrashing of one point, from its live scrapes (each endpoint's own; the most
    /// switches), or `None` when it held one state or had too few intervals.
    pub fn of(result: &RunResult) -> Option<Thrashing> {
        let output_per_s = result.output_throughput.filter(|t| *t > 0.0)?;
        let timeline = &result.spec_decode.as_ref()?.timeline;
        let mut endpoints: Vec<&str> = timeline.iter().map(|p| p.endpoint.as_str()).collect();
        endpoints.sort_unstable();
        endpoints.dedup();
        endpoints
            .into_iter()
            .filter_map(|endpoint| {
                let shares: Vec<f64> = timeline
                    .iter()
                    .filter(|p| p.endpoint == endpoint && p.error.is_none())
                    .map(|p| (p.drafts_per_s + p.accepted_per_s) / output_per_s)
                    .collect();
                let steady = shares.get(1..shares.len().checked_sub(1)?)?;
                let mut on: Option<bool> = None;
                let mut switches = 0;
                for &share in steady {
                    let now = if share >= 0.5 {
                        Some(true)
                    } else if share <= 0.25 {
                        Some(false)
                    } else {
                        None
                    };
                    if let Some(now) = now {
                        if on.is_some_and(|was| was != now) {
                            switches += 1;
                        }
                        on = Some(now);
                    }
                }
                (switches >= THRASH_SWITCHES).then_some(Thrashing {
                    switches,
                    intervals: steady.len() as u32,
                })
            })
            .max_by_key(|t| t.switches)
    }

    /// `arm`'s thrashing levels (its repeats' most switches at each).
    pub fn of_arm(points: &[NamedPoint<'_>], arm: &str) -> Vec<(f64, Thrashing)> {
        let mut out: Vec<(f64, Thrashing)> = Vec::new();
        for p in points.iter().filter(|p| p.arm == arm) {
            let Some(t) = Thrashing::of(p.result) else { continue };
            let level = p.level.value();
            match out.iter_mut().find(|(l, _)| *l == level) {
                Some((_, was)) if was.switches < t.switches => *was = t,
                Some(_) => {}
                None => out.push((level, t)),
            }
        }
        out
    }

    /// Short words for the console, the file and the page.
    pub fn sentence(&self) -> String {
        format!(
            "thrashing (drafting switched on and off {} times over {} scrape intervals at steady load: a cut at this load)",
            self.switches, self.intervals
        )
    }
}

/// `arm`'s points at concurrency levels, with their concurrency.
fn concurrency_points<'a>(points: &[NamedPoint<'a>], arm: &str) -> Vec<(u64, &'a RunResult)> {
    points
        .iter()
        .filter(|p| p.arm == arm)
        .filter_map(|p| match p.level {
            Level::Concurrency(c) => Some((c, p.result)),
            Level::Rate(_) => None,
        })
        .collect()
}

/// Whether a point's counters saw drafts: `Some(false)` when they counted none, `None` without
/// any spec-decode counts (a failed scrape is not "no drafts").
fn drafted(result: &RunResult) -> Option<bool> {
    if result.spec_counts().is_some() {
        return Some(true);
    }
    let window = result.spec_decode_num_drafts == Some(0);
    let requests = result
        .per_request()
        .is_some_and(|p| p.total_spec_decode_steps.avg == 0.0);
    (window || requests).then_some(false)
}

/// The share of a point's output emitted by steps that drafted: each such step of a sequence
/// emits 1 + its accepted tokens, so (drafts + accepted) ÷ output tokens, at most 1. `None`
/// without counts or output.
pub fn drafted_share(result: &RunResult) -> Option<f64> {
    let output = result.total_output_tokens? as f64;
    if output <= 0.0 {
        return None;
    }
    if result.spec_decode_num_drafts == Some(0) {
        return Some(0.0);
    }
    let (drafts, accepted, _) = result.spec_counts()?;
    // The per-request path gives means per request: scale them to the whole run.
    let per_run = if result.spec_decode_num_drafts.is_some() {
        1.0
    } else {
        result.completed? as f64
    };
    Some(((drafts + accepted) * per_run / output).min(1.0))
}

/// What an adaptive arm's acceptance length means, said wherever it is shown.
pub const ADAPTIVE_ACCEPTANCE_NOTE: &str = "counts only steps that drafted";

/// How the schedule fares against the best fixed choice at one level, the repeats' ranges
/// deciding: `Ahead` when its worst repeat beats the other's best, `Behind` the other way
/// round, `Tied` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Ahead,
    Tied,
    Behind,
}

impl Verdict {
    /// The verdict of an adaptive arm's ratio bounds against the best fixed choice's.
    pub fn of(bounds: (f64, f64), best_bounds: (f64, f64)) -> Verdict {
        if bounds.0 > best_bounds.1 {
            Verdict::Ahead
        } else if bounds.1 < best_bounds.0 {
            Verdict::Behind
        } else {
            Verdict::Tied
        }
    }

    fn word(self) -> &'static str {
        match self {
            Verdict::Ahead => "ahead",
            Verdict::Tied => "tied",
            Verdict::Behind => "behind",
        }
    }
}

/// One level of an adaptive arm against the best fixed choice there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveLevel {
    pub level: f64,
    /// The adaptive arm's ratio to plain (the sweep's compared figure) and its repeats' range.
    pub ratio: f64,
    pub bounds: (f64, f64),
    /// The fixed-k arm measured best at this level, `None` for plain (ratio 1).
    pub best_fixed: Option<String>,
    pub best_ratio: f64,
    pub best_bounds: (f64, f64),
    /// Median TPOT (ms) of the adaptive arm and of the best fixed choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_median_tpot_ms: Option<f64>,
    pub verdict: Verdict,
    /// Whether this level ran the schedule the arm was asked to run (when it is known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleCheck>,
    /// Drafting switched on and off at steady load here ([`THRASH_RULE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thrashing: Option<Thrashing>,
    /// Where the schedule asks k = 0, the steps that drafted again accepted under half the
    /// arm's low-load rate ([`RECOVERY_RULE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_acceptance: Option<StaleAcceptance>,
}

/// An adaptive arm, level by level, against the best fixed choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveJudgement {
    pub arm: String,
    /// The schedule it was asked to run, when known (each level is checked against it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Vec<(u64, u64, u32)>>,
    pub levels: Vec<AdaptiveLevel>,
}

impl AdaptiveJudgement {
    /// How many levels the schedule is ahead of, tied with and behind the best fixed choice.
    pub fn tally(&self) -> (usize, usize, usize) {
        let count = |v: Verdict| self.levels.iter().filter(|l| l.verdict == v).count();
        (count(Verdict::Ahead), count(Verdict::Tied), count(Verdict::Behind))
    }

    /// One sentence: the schedule against the best fixed choice over the levels measured.
    pub fn summary(&self) -> String {
        let (ahead, tied, behind) = self.tally();
        let mut out = format!(
            "the schedule of {} is ahead of the best fixed choice at {ahead}, tied at {tied} and behind at {behind} of {} levels",
            self.arm,
            self.levels.len()
        );
        if let Some(applied) = self.applied_sentence() {
            out.push_str("; ");
            out.push_str(&applied);
        }
        let thrashing = self.levels_where(|l| l.thrashing.is_some());
        let stale = self.levels_where(|l| l.stale_acceptance.is_some());
        if !stale.is_empty() {
            out.push_str(&format!(
                "; acceptance did not recover after speculation resumed at {}: a drafter whose state goes stale while the schedule skips it (TensorRT-LLM #16888's one-engine drafters): floor its schedule at k = 1 and route that load to a plain server",
                stale.join(", ")
            ));
        }
        if !thrashing.is_empty() {
            out.push_str(&format!(
                "; thrashing at {}: drafting switched on and off at steady load, a cut at that load (vLLM counts a step's prefills in its batch size): move the cut away from the load you run",
                thrashing.join(", ")
            ));
        }
        out
    }

    /// The levels `keep` picks, as the summary names them.
    fn levels_where(&self, keep: impl Fn(&AdaptiveLevel) -> bool) -> Vec<String> {
        self.levels
            .iter()
            .filter(|l| keep(l))
            .map(|l| l.level.to_string())
            .collect()
    }

    /// Whether the server ran the schedule: the levels it did not, or that it did at every
    /// level checked; `None` when no schedule was known.
    pub fn applied_sentence(&self) -> Option<String> {
        let checked = self.levels.iter().filter(|l| l.schedule.is_some()).count();
        if checked == 0 {
            return None;
        }
        let failed = self.levels_where(|l| l.schedule.as_ref().is_some_and(ScheduleCheck::failed));
        Some(if failed.is_empty() {
            format!("the schedule was applied at every level checked ({checked})")
        } else {
            format!(
                "the schedule was NOT applied at {} (its verdicts there are a fixed k's, not the schedule's)",
                failed.join(", ")
            )
        })
    }

    /// The console text: a line per level, then the summary.
    pub fn render(&self, axis: Axis) -> String {
        let figure = match axis {
            Axis::Concurrency => "output throughput",
            Axis::RequestRate => "median E2E latency",
        };
        let mut out = format!(
            "Adaptive arm {} (a server running a schedule), against the best fixed choice at each level by {figure} ÷ plain and median TPOT; its acceptance length {ADAPTIVE_ACCEPTANCE_NOTE}:\n",
            self.arm
        );
        let range = |(lo, hi): (f64, f64)| {
            if (hi - lo).abs() > 1e-12 {
                format!(" ({lo:.3}–{hi:.3})")
            } else {
                String::new()
            }
        };
        let tpot = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.2} ms"));
        match &self.schedule {
            Some(schedule) => {
                let ranges: Vec<String> = schedule.iter().map(|(f, t, k)| format!("[{f},{t},{k}]")).collect();
                out.push_str(&format!(
                    "  asked to run [{}]; {SCHEDULE_CHECK_RULE}; {THRASH_RULE}; {RECOVERY_RULE}\n",
                    ranges.join(",")
                ));
            }
            None => out.push_str(&format!(
                "  its schedule was not given, so whether the server applied it is not checked (--adaptive {}=SCHEDULE)\n",
                self.arm
            )),
        }
        for l in &self.levels {
            let mut check = l
                .schedule
                .as_ref()
                .map_or_else(String::new, |c| format!("; schedule {}", c.sentence()));
            if let Some(t) = &l.thrashing {
                check.push_str(&format!("; {}", t.sentence()));
            }
            if let Some(a) = &l.stale_acceptance {
                check.push_str(&format!("; {}", a.sentence()));
            }
            out.push_str(&format!(
                "  {:>10}: {:.3}{} against {} {:.3}{}: {}; median TPOT {} vs {}{check}\n",
                l.level,
                l.ratio,
                range(l.bounds),
                l.best_fixed.as_deref().unwrap_or("plain"),
                l.best_ratio,
                range(l.best_bounds),
                l.verdict.word(),
                tpot(l.median_tpot_ms),
                tpot(l.best_median_tpot_ms),
            ));
        }
        out.push_str(&format!("  {}\n", self.summary()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point whose live scrapes read these drafts/s, one interval a second.
    fn scraped(drafts_per_s: &[f64]) -> RunResult {
        let timeline = drafts_per_s
            .iter()
            .enumerate()
            .map(|(i, &d)| crate::run::progress::TimelinePoint {
                endpoint: "http://h:1/metrics".into(),
                t_s: i as f64 + 1.0,
                interval_s: 1.0,
                accepted_per_s: d * 2.0,
                drafted_per_s: d * 3.0,
                drafts_per_s: d,
                acceptance_rate: None,
                acceptance_length: None,
                per_position: Default::default(),
                error: None,
            })
            .collect();
        // 300 output tokens/s: an interval at 100 drafts/s (and 200 accepted) drafts throughout.
        RunResult {
            output_throughput: Some(300.0),
            spec_decode: Some(crate::results::run_result::SpecDecodeSection {
                timeline,
                ..Default::default()
            }),
            ..RunResult::default()
        }
    }

    #[test]
    fn acceptance_under_half_the_low_load_rate_after_k_zero_is_stale() {
        let schedule = [(1, 4, 3), (5, 65536, 0)];
        let rated = |rate: f64, tokens: u64| RunResult {
            spec_decode_acceptance_rate: Some(rate),
            spec_decode_draft_tokens: Some(tokens),
            ..RunResult::default()
        };
        let results = [rated(60.0, 600), rated(55.0, 500), rated(20.0, 90), rated(10.0, 12)];
        let points: Vec<NamedPoint<'_>> = [2, 4, 8, 16]
            .iter()
            .zip(&results)
            .map(|(c, r)| NamedPoint {
                arm: "a",
                level: Level::Concurrency(*c),
                result: r,
                spread: None,
                category_tpot_ms: None,
            })
            .collect();
        // 20 % at 8 against 60 % at 2 (the lowest level that drafts); 16's 12 tokens are too few.
        let stale = StaleAcceptance::of_arm(&schedule, &points, "a");
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert_eq!(
            (stale[0].0, stale[0].1.reference_level, stale[0].1.draft_tokens),
            (8.0, 2.0, 90)
        );
        assert!(stale[0].1.sentence().contains("20.0 % over the 90 draft tokens"));
        let healthy = [rated(60.0, 600), rated(55.0, 500), rated(45.0, 90), rated(10.0, 12)];
        let points: Vec<NamedPoint<'_>> = points
            .iter()
            .zip(&healthy)
            .map(|(p, r)| NamedPoint { result: r, ..*p })
            .collect();
        assert_eq!(StaleAcceptance::of_arm(&schedule, &points, "a"), Vec::new());
    }

    #[test]
    fn drafting_that_goes_to_zero_and_back_at_steady_load_is_thrashing() {
        // On and off every two seconds (the first and last intervals are the ramp and drain).
        let t = Thrashing::of(&scraped(&[
            10.0, 100.0, 95.0, 4.0, 0.0, 98.0, 60.0, 10.0, 3.0, 97.0, 40.0,
        ]))
        .expect("four switches");
        assert_eq!((t.switches, t.intervals), (4, 9));
        assert!(t.sentence().contains("4 times over 9 scrape intervals"));
        // Steady drafting with its noise, or off but for the drain: one state, or one switch.
        assert_eq!(
            Thrashing::of(&scraped(&[20.0, 100.0, 90.0, 110.0, 95.0, 105.0, 30.0])),
            None
        );
        // Off but for a step here and there (a batch dipping below the cut as a request ends):
        // never drafting, however much those few steps vary.
        assert_eq!(Thrashing::of(&scraped(&[9.0, 2.0, 9.0, 0.0, 8.0, 1.0, 9.0, 0.0])), None);
        assert_eq!(
            Thrashing::of(&scraped(&[50.0, 0.0, 0.0, 0.0, 0.0, 100.0, 100.0, 80.0])),
            None
        );
        // Intermediate intervals (a switch inside one) hold the state they follow.
        assert_eq!(
            Thrashing::of(&scraped(&[0.0, 100.0, 40.0, 100.0, 30.0, 100.0, 0.0])),
            None
        );
        // No live scrapes, or too few to drop the ramp and drain.
        assert_eq!(Thrashing::of(&RunResult::default()), None);
        assert_eq!(Thrashing::of(&scraped(&[100.0])), None);
    }

    /// A point with `output` tokens and the counters `(drafts, draft tokens, accepted)`
    /// (`None`: an engine that counts no draft tokens).
    fn point(output: u64, drafts: u64, draft_tokens: Option<u64>, accepted: u64) -> RunResult {
        RunResult {
            total_output_tokens: Some(output),
            spec_decode_num_drafts: Some(drafts),
            spec_decode_draft_tokens: draft_tokens,
            spec_decode_accepted_tokens: Some(accepted),
            ..RunResult::default()
        }
    }

    /// k = 3 up to batch 4, 1 up to 8, off above: what each level's counters say.
    #[test]
    fn each_level_is_checked_against_the_k_the_schedule_asks_there() {
        let schedule = [(1, 4, 3), (5, 8, 1), (9, 65536, 0)];
        // Batch 2 asks 3: 2.7 per draft (an n-gram proposer drafting short) is applied.
        let at_2 = point(1000, 400, Some(1080), 600);
        assert_eq!(
            ScheduleCheck::of(&schedule, 2, &at_2, 1.0),
            ScheduleCheck::Applied {
                asked_k: 3,
                per_draft: 2.7
            }
        );
        // Batch 8 asks 1: 1.3 per draft (the ramp's smaller batches draft 3) is applied; 2.0,
        // halfway to the fixed 3, is not.
        let ramped = point(1000, 500, Some(650), 400);
        assert!(matches!(
            ScheduleCheck::of(&schedule, 8, &ramped, 1.0),
            ScheduleCheck::Applied { asked_k: 1, .. }
        ));
        let fixed = point(1000, 400, Some(1200), 500);
        let check = ScheduleCheck::of(&schedule, 8, &fixed, 1.0);
        assert_eq!(
            check.sentence(),
            "not applied (3.00 draft tokens per draft where the schedule asks 1)"
        );
        assert!(check.failed());
        // Batch 16 asks 0: no drafts is off as asked; 10 % of the output from drafting steps
        // (the arm drafts 90 % where it drafts) too; 80 % is not.
        let none = point(1000, 0, Some(0), 0);
        assert_eq!(
            ScheduleCheck::of(&schedule, 16, &none, 0.9).sentence(),
            "speculation off as asked (no drafts)"
        );
        let few = point(1000, 40, Some(120), 60);
        assert_eq!(
            ScheduleCheck::of(&schedule, 16, &few, 0.9),
            ScheduleCheck::OffAsAsked { drafted_share: 0.1 }
        );
        let drafting = point(1000, 300, Some(900), 500);
        assert!(ScheduleCheck::of(&schedule, 16, &drafting, 0.9).failed());
        // No drafts where some are asked; an engine without draft-token counts.
        assert_eq!(
            ScheduleCheck::of(&schedule, 2, &none, 1.0).sentence(),
            "not applied (no drafts where the schedule asks 3)"
        );
        assert_eq!(
            ScheduleCheck::of(&schedule, 2, &point(1000, 400, None, 600), 1.0),
            ScheduleCheck::Unknown { asked_k: 3 }
        );
        // No counts at all (a failed scrape) is not "no drafts", at k > 0 or k = 0.
        let unscraped = RunResult {
            total_output_tokens: Some(1000),
            ..RunResult::default()
        };
        for (level, asked_k) in [(2, 3), (16, 0)] {
            let check = ScheduleCheck::of(&schedule, level, &unscraped, 1.0);
            assert_eq!(check, ScheduleCheck::Unmeasured { asked_k });
            assert!(!check.failed() && check.sentence().starts_with("cannot tell (no spec-decode counts"));
        }
    }

    #[test]
    fn the_summary_names_the_levels_the_schedule_was_not_applied_at() {
        let level = |level: f64, schedule: Option<ScheduleCheck>| AdaptiveLevel {
            level,
            ratio: 1.1,
            bounds: (1.1, 1.1),
            best_fixed: None,
            best_ratio: 1.0,
            best_bounds: (1.0, 1.0),
            median_tpot_ms: None,
            best_median_tpot_ms: None,
            verdict: Verdict::Ahead,
            schedule,
            thrashing: None,
            stale_acceptance: None,
        };
        let applied = ScheduleCheck::Applied {
            asked_k: 3,
            per_draft: 3.0,
        };
        let mut j = AdaptiveJudgement {
            arm: "sched".into(),
            schedule: Some(vec![(1, 4, 3), (5, 65536, 1)]),
            levels: vec![level(1.0, Some(applied.clone())), level(8.0, Some(applied))],
        };
        assert!(j
            .summary()
            .ends_with("; the schedule was applied at every level checked (2)"));
        j.levels[1].schedule = Some(ScheduleCheck::NotApplied {
            asked_k: 1,
            per_draft: Some(3.0),
        });
        assert!(
            j.summary().contains("the schedule was NOT applied at 8 ("),
            "{}",
            j.summary()
        );
        let text = j.render(Axis::Concurrency);
        assert!(text.contains("  asked to run [[1,4,3],[5,65536,1]]; "), "{text}");
        assert!(text.contains("schedule not applied (3.00 draft tokens per draft where the schedule asks 1)"));
        j.schedule = None;
        j.levels.iter_mut().for_each(|l| l.schedule = None);
        assert!(j
            .render(Axis::Concurrency)
            .contains("not checked (--adaptive sched=SCHEDULE)"));
    }

    /// k = 0 measured at two levels where speculation is off (16: +15 %, 24: +13 %) routes
    /// that load to a plain server; a level where a fixed arm is best, or whose schedule was
    /// not applied, is left out; +2 % keeps k = 0 on the same server.
    #[test]
    fn what_k_zero_costs_decides_where_the_off_range_runs() {
        let level = |level: f64, tpot: f64, best_fixed: Option<&str>, schedule: ScheduleCheck| AdaptiveLevel {
            level,
            ratio: 10.0 / tpot,
            bounds: (10.0 / tpot, 10.0 / tpot),
            best_fixed: best_fixed.map(str::to_string),
            best_ratio: 1.0,
            best_bounds: (1.0, 1.0),
            median_tpot_ms: Some(tpot),
            best_median_tpot_ms: Some(10.0),
            verdict: Verdict::Behind,
            schedule: Some(schedule),
            thrashing: None,
            stale_acceptance: None,
        };
        let off = ScheduleCheck::OffAsAsked { drafted_share: 0.05 };
        let drafting = ScheduleCheck::Applied {
            asked_k: 3,
            per_draft: 3.0,
        };
        let j = AdaptiveJudgement {
            arm: "sched".into(),
            schedule: Some(vec![(1, 2, 3), (3, 65536, 0)]),
            levels: vec![
                level(2.0, 6.0, Some("k3"), drafting),
                level(
                    8.0,
                    12.0,
                    None,
                    ScheduleCheck::NotApplied {
                        asked_k: 0,
                        per_draft: Some(3.0),
                    },
                ),
                level(16.0, 11.5, None, off.clone()),
                level(24.0, 11.3, None, off.clone()),
            ],
        };
        let z = ZeroKTax::of(&j, |l| l >= 6.0).unwrap();
        assert_eq!(z.levels.iter().map(|l| l.level).collect::<Vec<_>>(), [16.0, 24.0]);
        assert!((z.tpot_tax - 0.14).abs() < 1e-9 && z.route, "{z:?}");
        assert_eq!(
            z.sentence("concurrency 6 and above"),
            "concurrency 6 and above: k = 0 on the speculative server costs +14.0 % median TPOT against plain (adaptive arm sched at 16 (+15.0 %, 0.87× plain), 24 (+13.0 %, 0.88× plain)): route concurrency 6 and above to a plain server (more than 5 %)"
        );
        let cheap = AdaptiveJudgement {
            levels: vec![level(16.0, 10.2, None, off)],
            ..j.clone()
        };
        let z = ZeroKTax::of(&cheap, |_| true).unwrap();
        assert!(
            !z.route
                && z.sentence("c")
                    .ends_with("k = 0 on the same server is fine there (within 5 %)")
        );
        // Nothing measured where speculation is off: none.
        assert_eq!(ZeroKTax::of(&j, |l| l > 100.0), None);
    }
}
