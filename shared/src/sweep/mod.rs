//! A sweep: its speculative arms, each against plain and against each other, and the
//! recommendation drawn from them, as `sweep.json` holds it. Below it, in order of use: the
//! sweep's vocabulary (`levels`), one two-arm table (`pair`), the arms (`arms`), a schedule as
//! each engine takes it (`schedules`) and the recommendation (`recommend`).

pub mod adaptive;
mod answer;
pub mod arms;
pub mod contexts;
pub mod cuts;
mod engine_lines;
pub mod latency;
pub mod levels;
pub mod pair;
pub mod recommend;
mod recommend_text;
pub mod saturation;
pub mod schedules;
pub mod step_cost;

use serde::{Deserialize, Serialize};

use crate::model::speedup::Costs;
use crate::results::run_result::RunResult;
pub use adaptive::AdaptiveArm;
use arms::{Arms, NamedPoint};
use levels::BASE_ARM;
pub use levels::{throughput, Arm, Axis, Level};
pub use pair::{repeats_settled, Finding, PairTable, Prediction, SweepRow};
pub use recommend::EngineLines;
use recommend::Recommendation;
use schedules::{acceptance_warning, suffix_positions_note, ServerFacts};

/// The whole sweep, as `sweep.json` holds it.
///
/// Each speculative arm holds its own table against plain (`arms.arms[i].table`); the
/// headline figures are the first arm's ([`SweepFile::head`]). Only a sweep without a
/// speculative arm keeps a table of its own (`plain`, plain's figures alone), written at the
/// file's top level. Files of the earlier layout, which also wrote the first arm's table at
/// the top level, still read: that copy is dropped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "SweepFileLayout", into = "SweepFileLayout")]
pub struct SweepFile {
    /// What the levels are: concurrencies, or request rates.
    pub axis: Axis,
    /// Plain's points alone, when the sweep had no speculative arm.
    pub plain: Option<PairTable>,
    /// Every speculative arm against plain and against each other, with latency and engine
    /// load beside throughput.
    pub arms: Arms,
    /// The best k by load, the cut-off, and the engine settings.
    pub recommendation: Option<Recommendation>,
    /// What the set-up check before the sweep found and `--allow-mixed-arms` let pass (an arm
    /// given as plain that speculates, or one given as speculative that does not).
    pub warnings: Vec<String>,
    /// Points found in the folder from an earlier sweep: joined into the table, or left out
    /// because their server or workload differs from this sweep's (unless `--join-stale`).
    pub earlier_points: Vec<EarlierPoint>,
    /// A sweep over input lengths (`--input-tokens` with several): B* per context, L* per
    /// concurrency, and what moved between them. The tables above are the shortest input
    /// length's; each longer one's sweep is in a folder of its own.
    pub contexts: Option<contexts::ContextSweep>,
}

/// `sweep.json` as written: plain's table flattened at the top level when there is one.
#[derive(Serialize, Deserialize)]
struct SweepFileLayout {
    /// The file's axis, written here only without a plain table (whose own `axis` is then the
    /// top level's: one key, not two). Read, it takes the key, and gives it to the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    axis: Option<Axis>,
    /// Plain alone's table; in the earlier layout, a copy of the first arm's.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    table: Option<PairTable>,
    #[serde(flatten)]
    arms: Arms,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recommendation: Option<Recommendation>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    earlier_points: Vec<EarlierPoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    contexts: Option<contexts::ContextSweep>,
}

impl From<SweepFileLayout> for SweepFile {
    fn from(file: SweepFileLayout) -> SweepFile {
        let axis = file.axis.unwrap_or_default();
        SweepFile {
            axis,
            // With arms, the top-level table was the first arm's: each arm holds its own.
            plain: file
                .table
                .filter(|_| file.arms.arms.is_empty())
                .map(|table| PairTable { axis, ..table }),
            arms: file.arms,
            recommendation: file.recommendation,
            warnings: file.warnings,
            earlier_points: file.earlier_points,
            contexts: file.contexts,
        }
    }
}

impl From<SweepFile> for SweepFileLayout {
    fn from(file: SweepFile) -> SweepFileLayout {
        SweepFileLayout {
            axis: file.plain.is_none().then_some(file.axis),
            table: file.plain,
            arms: file.arms,
            recommendation: file.recommendation,
            warnings: file.warnings,
            earlier_points: file.earlier_points,
            contexts: file.contexts,
        }
    }
}

/// A point a sweep found in its folder rather than measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlierPoint {
    /// Its id (`spec-c16`).
    pub point: String,
    /// When the sweep that measured it started, when its file says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_started: Option<String>,
    /// How its server or workload differs from this sweep's ("model a, now b").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// Whether it is in the table.
    pub joined: bool,
}

impl EarlierPoint {
    /// "spec-c16 (sweep of 2026-12-03T10:00:00Z)" or "spec-c16 (model a, now b)".
    pub fn describe(&self) -> String {
        let when = self
            .sweep_started
            .as_deref()
            .map_or_else(|| "an earlier sweep".to_string(), |s| format!("the sweep of {s}"));
        if self.differences.is_empty() {
            format!("{} (from {when})", self.point)
        } else {
            format!("{} (from {when}: {})", self.point, self.differences.join("; "))
        }
    }
}

/// A sweep of one table and no arm list (as files written before sweeps had arms read).
impl From<PairTable> for SweepFile {
    fn from(table: PairTable) -> SweepFile {
        SweepFile {
            axis: table.axis,
            plain: Some(table),
            arms: Arms::default(),
            recommendation: None,
            warnings: Vec::new(),
            earlier_points: Vec::new(),
            contexts: None,
        }
    }
}

impl SweepFile {
    /// The arms that run a schedule, each with the schedule it was asked to run: `asked` (this
    /// sweep's `--adaptive`, its schedule as given, else the one the `earlier` sweep.json of the
    /// folder checked it against), and the arms the earlier sweep marked so among those this
    /// sweep does not `run` again (with their schedules). A schedule is never guessed: the
    /// measured and the model's lines differ, and checking a server against the one it was not
    /// given would call it broken.
    pub fn adaptive_arms(earlier: Option<&SweepFile>, asked: &[AdaptiveArm], run: &[&str]) -> Vec<AdaptiveArm> {
        let checked = |name: &str| {
            earlier
                .iter()
                .flat_map(|t| &t.arms.adaptive)
                .find(|j| j.arm == name)
                .and_then(|j| j.schedule.clone())
        };
        let mut adaptive: Vec<AdaptiveArm> = asked
            .iter()
            .map(|a| AdaptiveArm {
                name: a.name.clone(),
                schedule: a.schedule.clone().or_else(|| checked(&a.name)),
            })
            .collect();
        for arm in earlier.iter().flat_map(|t| &t.arms.arms) {
            if arm.adaptive && !run.contains(&arm.name.as_str()) && !adaptive.iter().any(|a| a.name == arm.name) {
                adaptive.push(AdaptiveArm {
                    name: arm.name.clone(),
                    schedule: checked(&arm.name),
                });
            }
        }
        adaptive
    }

    /// The sweep of named arms' points (`base` is plain): every speculative arm against plain
    /// and against each other, and the recommendation; plain's table alone when no arm is
    /// speculative. `speculative_config` is the arms' servers' vLLM `--speculative-config`,
    /// kept in the recommended line; what it and the arms' counters say against a schedule
    /// line is said beside it, and a lossy or forced acceptance among the sweep's warnings.
    /// `adaptive` names the arms whose servers run a draft-length schedule, `operating` the
    /// concurrencies the user runs at (the recommendation keeps its cuts away from them).
    pub fn of_arms(
        points: &[NamedPoint<'_>],
        costs: Costs,
        speculative_config: Option<&serde_json::Value>,
        adaptive: &[AdaptiveArm],
        operating: &[u64],
    ) -> SweepFile {
        let arms = Arms::of(points, costs, adaptive);
        let plain = arms.arms.is_empty().then(|| {
            let plain: Vec<(Arm, Level, &RunResult)> = points.iter().map(|p| (Arm::Base, p.level, p.result)).collect();
            let spreads: Vec<(Arm, Level, f64, f64)> = points
                .iter()
                .filter_map(|p| p.spread.map(|(lo, hi)| (Arm::Base, p.level, lo, hi)))
                .collect();
            PairTable::from_points(&plain, costs).with_spreads(&spreads)
        });
        let axis = arms
            .arms
            .first()
            .map(|a| a.table.axis)
            .or(plain.as_ref().map(|t| t.axis))
            .unwrap_or_default();
        let facts = ServerFacts {
            vllm_engines: points
                .iter()
                .filter_map(|p| p.result.spec_decode.as_ref())
                .flat_map(|s| &s.scrape)
                .filter_map(|e| e.result.data.as_ref()?.data_parallel_engines)
                .max(),
            // The speculative arms' vLLM servers: plain's, or another engine's, says nothing.
            vllm_version: points
                .iter()
                .filter(|p| p.arm != BASE_ARM)
                .filter_map(|p| p.result.config.as_ref())
                .filter(|c| c.engine.as_deref().is_none_or(|e| e == "vllm"))
                .find_map(|c| c.server_version.clone()),
            ..ServerFacts::default()
        }
        .with_config(speculative_config);
        SweepFile {
            axis,
            recommendation: Recommendation::of(&arms, axis, costs, speculative_config, &facts, operating),
            plain,
            arms,
            warnings: acceptance_warning(&facts)
                .into_iter()
                .chain(suffix_positions_note(&facts))
                .collect(),
            earlier_points: Vec::new(),
            contexts: None,
        }
    }

    /// The table the headline figures come from: the first fixed-k arm against plain (an
    /// adaptive arm when there is no other), or plain alone (an empty table for a sweep with
    /// no point).
    pub fn head(&self) -> &PairTable {
        self.arms
            .arms
            .iter()
            .find(|a| !a.adaptive)
            .or(self.arms.arms.first())
            .map(|a| &a.table)
            .or(self.plain.as_ref())
            .unwrap_or(&pair::EMPTY)
    }

    /// The console text: the two-arm table (or every arm's ratios when there are several),
    /// crossings and prediction, latency and engine load beside throughput, and the
    /// recommendation.
    pub fn render(&self) -> String {
        self.render_with(true, EngineLines::All)
    }

    /// The console's text. With `detail`: everything (each arm's model line, calibration,
    /// knee, latency against plain, step cost, engine load). Without: the measured tables, the
    /// recommendation and the notes. `engines` picks which engines' config lines it prints.
    pub fn render_with(&self, detail: bool, engines: EngineLines) -> String {
        let mut out = if self.arms.arms.len() > 1 {
            let mut out = self.arms.render_summary(self.axis);
            if detail {
                out.push_str(&self.arms.render_beside());
            }
            if let Some(slo) = &self.head().goodput_slo {
                out.push_str(&self.render_arms_goodput(slo));
            }
            for a in self.arms.arms.iter().filter(|_| detail) {
                if let Some(p) = a
                    .table
                    .findings()
                    .into_iter()
                    .find(|f| matches!(f, Finding::ModelPrediction(_)))
                {
                    out.push_str(&format!("  {}: {}\n", a.name, p.text(self.axis)));
                }
            }
            out
        } else {
            let mut out = self.head().render();
            // A lone adaptive arm: its judgement against plain, and its schedule's checks.
            for judgement in &self.arms.adaptive {
                out.push_str(&judgement.render(self.axis));
            }
            if detail {
                out.push_str(&self.arms.render_beside());
            }
            out
        };
        if let Some(note) = self.unsteady_note() {
            out.push_str(&format!("Note: {note}\n"));
        }
        if let Some(r) = &self.recommendation {
            out.push('\n');
            out.push_str(&r.render_for(engines));
        }
        if let Some(contexts) = &self.contexts {
            out.push_str(&contexts.render());
        }
        for line in self.earlier_notes() {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    /// One line naming the levels whose points had no steady window (drawn hollow on every
    /// chart, their figure the whole run's) and how to get one; `None` when every point had one.
    pub fn unsteady_note(&self) -> Option<String> {
        let mut levels: Vec<f64> = self
            .arms
            .arms
            .iter()
            .flat_map(|a| a.table.rows.iter())
            .filter(|r| r.unsteady())
            .map(|r| r.level)
            .collect();
        levels.sort_by(f64::total_cmp);
        levels.dedup();
        if levels.is_empty() {
            return None;
        }
        let list: Vec<String> = levels.iter().map(|l| l.to_string()).collect();
        Some(format!(
            "No steady window at concurrency {}: those points (hollow on the charts) compare the whole run, ramp-up and drain included, so their ratio and step cost are rough; {}.",
            list.join(", "),
            levels::STEADY_WINDOW_TIP
        ))
    }

    /// The points taken from an earlier sweep's files and those left out, one line each (none
    /// when every point was measured by this sweep); the console and the sweep page show them.
    pub fn earlier_notes(&self) -> Vec<String> {
        let (joined, left_out): (Vec<&EarlierPoint>, Vec<&EarlierPoint>) =
            self.earlier_points.iter().partition(|p| p.joined);
        let names = |points: &[&EarlierPoint]| points.iter().map(|p| p.describe()).collect::<Vec<_>>().join(", ");
        let mut lines = Vec::new();
        if !joined.is_empty() {
            lines.push(format!("Joined from earlier: {}", names(&joined)));
        }
        if !left_out.is_empty() {
            lines.push(format!(
                "Left out, measured against another server or workload (--join-stale pools them): {}",
                names(&left_out)
            ));
        }
        lines
    }

    /// Every arm's goodput by level beside plain's, and each arm's goodput crossing.
    fn render_arms_goodput(&self, slo: &str) -> String {
        let cell = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.2}"));
        let mut out = format!(
            "Goodput (completed requests/s within {slo}):\n{:>12}",
            self.axis.column()
        );
        for a in &self.arms.arms {
            out.push_str(&format!(" {:>12}", a.name));
        }
        out.push_str(&format!(" {:>12}\n", "plain"));
        for level in self.arms.levels() {
            out.push_str(&format!("{level:>12}"));
            let row = |t: &PairTable| t.rows.iter().find(|r| r.level == level).copied();
            for a in &self.arms.arms {
                out.push_str(&format!(" {:>12}", cell(row(&a.table).and_then(|r| r.spec_goodput))));
            }
            out.push_str(&format!(
                " {:>12}\n",
                cell(row(self.head()).and_then(|r| r.base_goodput))
            ));
        }
        for a in &self.arms.arms {
            let crossing = a.table.goodput_crossing.map_or_else(
                || "no goodput crossing in range".to_string(),
                |b| format!("goodput crossing {b:.1}"),
            );
            out.push_str(&format!("  {}: {crossing}\n", a.name));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_only_sweep_writes_its_axis_once_and_reads_back() {
        let table = PairTable {
            axis: Axis::RequestRate,
            ..pair::EMPTY.clone()
        };
        let file = SweepFile::from(table);
        let json = serde_json::to_string(&file).unwrap();
        assert_eq!(json.matches("\"axis\"").count(), 1, "{json}");
        let back: SweepFile = serde_json::from_str(&json).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.head().axis, Axis::RequestRate);
    }

    #[test]
    fn earlier_points_are_named_joined_or_left_out_with_their_differences() {
        let mut t = SweepFile::default();
        assert!(
            t.earlier_notes().is_empty(),
            "a sweep that measured every point says nothing"
        );
        t.earlier_points = vec![
            EarlierPoint {
                point: "spec-c1".into(),
                sweep_started: Some("2026-12-03T10:00:00Z".into()),
                differences: vec![],
                joined: true,
            },
            EarlierPoint {
                point: "spec-c2".into(),
                sweep_started: None,
                differences: vec!["k 3, now 5".into()],
                joined: false,
            },
        ];
        assert_eq!(
            t.earlier_notes(),
            vec![
                "Joined from earlier: spec-c1 (from the sweep of 2026-12-03T10:00:00Z)".to_string(),
                "Left out, measured against another server or workload (--join-stale pools them): spec-c2 (from an earlier sweep: k 3, now 5)".to_string(),
            ]
        );
        assert!(t.render().ends_with(&(t.earlier_notes().join("\n") + "\n")));
    }
}
