//! The overview's figures, from the newest measured run and sweep of a results folder: the
//! measured acceptance beside the geometric curve, the break-even (measured with its interval,
//! beside the model) in one sentence, the speedup at the lowest concurrency, and the best k.
//! Pure: the page (and its tests) fetch the files, this decides what they say.

use crate::model::speedup::{self as model, best_k, expected_tokens, implied_alpha, Costs, KChoice};
use crate::results::run_list::RunListEntry;
use crate::results::run_result::RunResult;
use crate::sweep::arms::point_id;
use crate::sweep::{Axis, Level, PairTable, SweepFile};
use crate::view::headline::Headline;
use crate::view::positions::PathPositions;
use crate::view::run::run_view_from_result;

/// The measured acceptance of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct AcceptanceSummary {
    /// Acceptance length E (tokens per verify step).
    pub acceptance_length: f64,
    /// Draft rate, percent (accepted ÷ drafted).
    pub acceptance_rate: Option<f64>,
    /// Draft tokens per step the rates cover.
    pub k: u32,
    /// The α whose geometric curve gives the same E at this k.
    pub implied_alpha: f64,
    /// Measured unconditional rates by position (index 0 = position 1), and which path.
    pub positions: PathPositions,
    /// The geometric curve α, α², … of the same E, for comparison.
    pub geometric: Vec<f64>,
}

impl AcceptanceSummary {
    /// From a saved run: the first path that has per-position rates (per-request, else the
    /// scrapes). `None` for a run without spec-decode data.
    pub fn of(result: &RunResult) -> Option<AcceptanceSummary> {
        let view = run_view_from_result(result);
        let positions = view.positions_by_path().into_iter().find(|p| !p.rates.is_empty())?;
        let k = positions.rates.len() as u32;
        let acceptance_length = result
            .spec_decode_acceptance_length
            .unwrap_or(positions.acceptance_length);
        if !(acceptance_length.is_finite() && acceptance_length >= 1.0) {
            return None;
        }
        let alpha = implied_alpha(acceptance_length, k);
        Some(AcceptanceSummary {
            acceptance_length,
            acceptance_rate: result.spec_decode_acceptance_rate,
            k,
            implied_alpha: alpha,
            geometric: (1..=k as i32).map(|i| alpha.powi(i)).collect(),
            positions,
        })
    }

    /// From a sweep's headline arm: its acceptance pooled over its points and its per-position
    /// rates (`None` when the arm has no rates).
    pub fn of_headline(h: &Headline) -> Option<AcceptanceSummary> {
        let rates = h.per_position_acceptance_rates.clone();
        if rates.is_empty() || !(h.acceptance_length.is_finite() && h.acceptance_length >= 1.0) {
            return None;
        }
        let k = rates.len() as u32;
        let alpha = implied_alpha(h.acceptance_length, k);
        Some(AcceptanceSummary {
            acceptance_length: h.acceptance_length,
            acceptance_rate: None,
            k,
            implied_alpha: alpha,
            geometric: (1..=k as i32).map(|i| alpha.powi(i)).collect(),
            positions: PathPositions {
                label: format!("sweep arm {}", h.arm),
                rates,
                acceptance_length: h.acceptance_length,
            },
        })
    }

    /// The best k at `batch` from the measured per-position rates (`None` without rates).
    pub fn best_k(&self, costs: Costs, batch: f64) -> Option<KChoice> {
        best_k(&self.positions.rates, costs, batch)
    }
}

/// The sweep's answer to "where does speculation stop paying?".
#[derive(Debug, Clone, PartialEq)]
pub struct BreakEvenSummary {
    /// What the sweep's levels are.
    pub axis: Axis,
    pub measured: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub predicted: Option<f64>,
    /// Concurrency and spec ÷ plain throughput at the sweep's lowest measured point.
    pub lowest: Option<(f64, f64)>,
    /// The model's speedup at that concurrency, from the measured E.
    pub lowest_predicted: Option<f64>,
    /// What it means, in one sentence.
    pub sentence: String,
}

impl BreakEvenSummary {
    /// The break-even of one two-arm table.
    pub fn of(table: &PairTable) -> BreakEvenSummary {
        let ratios: Vec<(f64, f64)> = table.rows.iter().filter_map(|r| Some((r.level, r.ratio()?))).collect();
        let lowest = ratios.first().copied();
        let prediction = table.prediction.as_ref();
        // The model's speedup is by batch size: a rate's point has none to compare.
        let lowest_predicted = prediction
            .zip(lowest)
            .filter(|_| table.axis.is_concurrency())
            .map(|(p, (c, _))| model::speedup(p.measured_e, p.draft_tokens, p.costs, c));
        let (unit, levels) = match table.axis {
            Axis::Concurrency => ("concurrent requests", "concurrency"),
            Axis::RequestRate => ("requests/s", "request rate"),
        };
        let (gains, loses, figure) = match table.axis {
            Axis::Concurrency => ("raises", "lowers", "output throughput"),
            Axis::RequestRate => ("shortens", "lengthens", "median E2E latency"),
        };
        let (gained, lost) = match table.axis {
            Axis::Concurrency => ("raised", "lowered"),
            Axis::RequestRate => ("shortened", "lengthened"),
        };
        let predicted = prediction.map(|p| p.break_even_batch);
        let model_part = match prediction {
            Some(p) => format!(
                "; the model predicted {} from the sweep's measured E = {:.2}",
                batch_text(p.break_even_batch),
                p.measured_e
            ),
            None => String::new(),
        };
        let sentence = match (table.crossing, table.crossing_interval) {
            (Some(b), interval) => {
                let spread = interval.map_or(String::new(), |(lo, hi)| {
                    format!(" ({}–{} within the repeats' spread)", batch_text(lo), batch_text(hi))
                });
                format!(
                    "Speculation {gains} {figure} below about {} {unit}{spread} and {loses} it above{model_part}: above that load, turn it off.",
                    batch_text(b)
                )
            }
            (None, _) => match (ratios.first(), ratios.last()) {
                (Some(_), Some((c_max, _))) if ratios.iter().all(|(_, r)| *r > 1.0) => format!(
                    "Speculation {gained} {figure} at every measured {levels}, up to {}: the break-even lies beyond the sweep{model_part}.",
                    batch_text(*c_max)
                ),
                (Some((c_min, _)), Some(_)) if ratios.iter().all(|(_, r)| *r <= 1.0) => format!(
                    "Speculation {lost} {figure} at every measured {levels}, from {} up{model_part}.",
                    batch_text(*c_min)
                ),
                (Some(_), Some(_)) => format!("The {figure} ratio does not fall through 1.0 inside the sweep{model_part}."),
                _ => format!("No {levels} was measured on both arms."),
            },
        };
        BreakEvenSummary {
            axis: table.axis,
            measured: table.crossing,
            interval: table.crossing_interval,
            predicted,
            lowest,
            lowest_predicted,
            sentence,
        }
    }
}

/// The break-even of a sweep's headline arm (its own table against plain), its sentence
/// naming the arm and why it is the one; the first arm's when there is no headline.
pub fn break_even_of_headline(table: &SweepFile, headline: Option<&Headline>) -> BreakEvenSummary {
    let arm = headline.and_then(|h| Some((h, table.arms.arm(&h.arm)?)));
    match arm {
        Some((h, a)) => {
            let mut summary = BreakEvenSummary::of(&a.table);
            summary.sentence = format!("Arm {} ({}): {}", h.arm, h.why, summary.sentence);
            if let Some(cost) = a.step_cost_sentence() {
                summary.sentence = format!("{} {cost}", summary.sentence);
            }
            summary
        }
        None => {
            // Several arms: the sentence is the first one's; the overview lists them all.
            let mut summary = BreakEvenSummary::of(table.head());
            if let Some(first) = table.arms.arms.first().filter(|_| table.arms.arms.len() > 1) {
                summary.sentence = format!("{} — {}", first.name, summary.sentence);
            }
            summary
        }
    }
}

/// One line per speculative arm of a multi-arm sweep: its k and acceptance, its ratio at the
/// lowest level, and where it stops paying.
pub fn arm_lines(table: &SweepFile) -> Vec<String> {
    if table.arms.arms.len() < 2 {
        return Vec::new();
    }
    let unit = table.axis.unit();
    table
        .arms
        .arms
        .iter()
        .map(|a| {
            let k = a.k.map_or_else(|| "k not measured".to_string(), |k| format!("k = {k}"));
            let e = a
                .acceptance_length
                .map_or(String::new(), |e| format!(", acceptance length {e:.2}"));
            let first = a
                .table
                .rows
                .iter()
                .find_map(|r| Some((r.level, r.ratio()?)))
                .map_or(String::new(), |(l, x)| format!("; {x:.2}× plain at {}", batch_text(l)));
            let crossing = match (a.table.crossing, a.table.crossing_interval) {
                (Some(b), Some((lo, hi))) => format!(
                    "; beats plain up to {} {unit} ({}–{})",
                    batch_text(b),
                    batch_text(lo),
                    batch_text(hi)
                ),
                (Some(b), None) => format!("; beats plain up to {} {unit}", batch_text(b)),
                (None, _) => "; no crossing with plain inside the sweep".to_string(),
            };
            format!("{} ({k}{e}){first}{crossing}", a.name)
        })
        .collect()
}

/// A batch size or concurrency as the overview writes it: whole numbers as they are, others
/// with one decimal below 20 (a crossing at 6.1 is not "6"), whole above.
pub fn batch_text(b: f64) -> String {
    if b < 20.0 && b.fract() != 0.0 {
        format!("{b:.1}")
    } else {
        format!("{b:.0}")
    }
}

/// Which saved run the overview describes, and why (runs are listed newest first): the
/// newest run the user made on its own (a bench, or a `vllm bench serve` file) with spec-decode
/// figures; else, with a sweep, the headline arm's point at the headline's level; else the
/// newest run with spec-decode figures; else the newest.
pub fn pick_run<'a>(runs: &'a [RunListEntry], sweep: Option<(&str, &Headline)>) -> Option<(&'a RunListEntry, String)> {
    let has_spec = |r: &&RunListEntry| r.spec_decode_acceptance_length.is_some();
    let own = |r: &&RunListEntry| !r.kind.starts_with("sweep") && r.kind != "accept";
    if let Some(r) = runs.iter().filter(own).find(has_spec) {
        return Some((r, "the newest run with spec-decode figures".into()));
    }
    if let Some((id, h)) = sweep {
        let tags = [Level::Concurrency(h.level as u64), Level::Rate(h.level)];
        let point = runs
            .iter()
            .find(|r| tags.iter().any(|l| r.id == format!("{id}/{}", point_id(&h.arm, *l))));
        if let Some(r) = point {
            return Some((r, format!("the sweep's arm {} at {}", h.arm, batch_text(h.level))));
        }
    }
    match runs.iter().find(has_spec) {
        Some(r) => Some((r, "the newest run with spec-decode figures".into())),
        None => runs.first().map(|r| (r, "the newest run".into())),
    }
}

/// E of the geometric curve at α and k, for the overview's "beside the geometric curve" line.
pub fn geometric_e(alpha: f64, k: u32) -> f64 {
    expected_tokens(alpha, k)
}

/// The sentence under the per-position chart: measured rates against the geometric ones of the
/// same E, and the model's best k from them.
pub fn positions_sentence(a: &AcceptanceSummary, best: Option<KChoice>, best_loaded: Option<(f64, KChoice)>) -> String {
    let measured: Vec<String> = a.positions.rates.iter().map(|r| format!("{r:.2}")).collect();
    let geometric: Vec<String> = a.geometric.iter().map(|r| format!("{r:.2}")).collect();
    format!(
        "By draft position ({}): {} measured against {} for a geometric α of the same E. {}",
        a.positions.label,
        measured.join(", "),
        geometric.join(", "),
        best.map_or(String::new(), |k| format!(
            "From these rates the model's best k at batch 1 is {} (E {:.2}, speedup {:.2}×){}, on the sweep's costs.",
            k.k,
            k.expected_tokens,
            k.speedup,
            best_loaded.map_or(String::new(), |(b, k)| format!(
                " and at batch {} it is {} (speedup {:.2}×)",
                batch_text(b),
                k.k,
                k.speedup
            ))
        ))
    )
}

/// The speedup at the sweep's lowest level, in the axis's own terms.
pub fn speedup_sentence(b: &BreakEvenSummary) -> Option<String> {
    let (c, ratio) = b.lowest?;
    Some(match b.axis {
        Axis::Concurrency => format!(
            "At concurrency {c:.0} speculation gives {ratio:.2}× the plain server's output throughput{}.",
            b.lowest_predicted
                .map_or(String::new(), |p| format!(" (the model: {p:.2}×)"))
        ),
        Axis::RequestRate => format!(
            "At {} requests/s the plain server's median E2E latency is {ratio:.2}× the speculative one's.",
            batch_text(c)
        ),
    })
}

/// Where the overview's figures come from, as one sentence: the run (its id and why it was
/// chosen), the sweep's id and the accept folder's id the page loaded.
pub fn sources_sentence(
    run: Option<(&str, &str)>,
    sweep: Option<&str>,
    accept: Option<&str>,
    headline: Option<&Headline>,
    has_acceptance: bool,
) -> Option<String> {
    let mut parts = Vec::new();
    match (headline, run, has_acceptance) {
        (Some(h), _, true) => parts.push(format!("acceptance from the sweep's arm {} ({})", h.arm, h.why)),
        (None, Some((id, why)), true) => parts.push(format!("acceptance from run {id} ({why})")),
        _ => {}
    }
    if let Some(id) = sweep {
        parts.push(format!("break-even from sweep {id}"));
    }
    if let Some(id) = accept {
        parts.push(format!("categories from {id}"));
    }
    (!parts.is_empty()).then(|| {
        let mut line = parts.join("; ");
        line[..1].make_ascii_uppercase();
        line + "."
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{Level, Prediction, SweepRow};

    fn acceptance(rates: Vec<f64>) -> AcceptanceSummary {
        AcceptanceSummary {
            acceptance_length: 2.5,
            acceptance_rate: Some(50.0),
            k: rates.len() as u32,
            implied_alpha: 0.6,
            positions: PathPositions {
                label: "per-request".into(),
                rates,
                acceptance_length: 2.5,
            },
            geometric: vec![0.6, 0.36, 0.216],
        }
    }

    #[test]
    fn the_positions_sentence_names_the_path_both_curves_and_the_best_k() {
        let a = acceptance(vec![0.8, 0.5, 0.3]);
        let one = KChoice {
            k: 3,
            expected_tokens: 2.6,
            speedup: 1.83,
        };
        let loaded = KChoice {
            k: 1,
            expected_tokens: 1.8,
            speedup: 1.02,
        };
        assert_eq!(
            positions_sentence(&a, Some(one), Some((64.0, loaded))),
            "By draft position (per-request): 0.80, 0.50, 0.30 measured against 0.60, 0.36, 0.22 for a \
             geometric α of the same E. From these rates the model's best k at batch 1 is 3 (E 2.60, speedup \
             1.83×) and at batch 64 it is 1 (speedup 1.02×), on the sweep's costs."
        );
        assert!(positions_sentence(&a, None, None).ends_with("for a geometric α of the same E. "));
    }

    #[test]
    fn the_speedup_sentence_speaks_the_axis_terms() {
        let mut b = BreakEvenSummary {
            axis: Axis::Concurrency,
            measured: None,
            interval: None,
            predicted: None,
            lowest: Some((1.0, 1.84)),
            lowest_predicted: Some(1.9),
            sentence: String::new(),
        };
        assert_eq!(
            speedup_sentence(&b).unwrap(),
            "At concurrency 1 speculation gives 1.84× the plain server's output throughput (the model: 1.90×)."
        );
        b.axis = Axis::RequestRate;
        b.lowest = Some((2.5, 1.3));
        assert_eq!(
            speedup_sentence(&b).unwrap(),
            "At 2.5 requests/s the plain server's median E2E latency is 1.30× the speculative one's."
        );
        b.lowest = None;
        assert_eq!(speedup_sentence(&b), None);
    }

    #[test]
    fn the_sources_sentence_names_each_file_the_overview_read() {
        assert_eq!(
            sources_sentence(
                Some(("bench/spec", "newest run")),
                Some("sweep"),
                Some("accept"),
                None,
                true
            )
            .unwrap(),
            "Acceptance from run bench/spec (newest run); break-even from sweep sweep; categories from accept."
        );
        // Without acceptance the run is not named; with nothing loaded there is no sentence.
        assert_eq!(
            sources_sentence(Some(("r", "why")), Some("s"), None, None, false).unwrap(),
            "Break-even from sweep s."
        );
        assert_eq!(sources_sentence(None, None, None, None, false), None);
    }

    fn row(c: f64, spec: f64, base: f64) -> SweepRow {
        SweepRow {
            spec_output_tokens_per_s: Some(spec),
            base_output_tokens_per_s: Some(base),
            ..SweepRow::at(Level::Concurrency(c as u64))
        }
    }

    #[test]
    fn a_crossing_reads_as_one_sentence_with_its_interval_and_the_model() {
        let mut rows = vec![row(1.0, 200.0, 80.0), row(64.0, 120.0, 100.0), row(128.0, 100.0, 125.0)];
        rows[1].spec_spread = Some((110.0, 130.0));
        let prediction = Prediction::new(2.5, 3, None, Costs::H100_FREE_DRAFTS);
        let t = PairTable::new(rows, Some(prediction));
        let s = BreakEvenSummary::of(&t);
        let b = t.crossing.unwrap();
        assert!(
            s.sentence.contains(&format!("below about {b:.0} concurrent requests")),
            "{}",
            s.sentence
        );
        assert!(s.sentence.contains("within the repeats' spread"), "{}", s.sentence);
        assert!(s
            .sentence
            .contains(&format!("predicted {:.0}", prediction.break_even_batch)));
        assert_eq!(s.lowest, Some((1.0, 2.5)));
        let want = model::speedup(2.5, 3.0, Costs::H100_FREE_DRAFTS, 1.0);
        assert!((s.lowest_predicted.unwrap() - want).abs() < 1e-12);
    }

    #[test]
    fn batches_keep_a_decimal_where_it_matters() {
        assert_eq!(batch_text(6.14), "6.1");
        assert_eq!(batch_text(185.5), "186");
        assert_eq!(batch_text(8.0), "8");
    }

    #[test]
    fn no_crossing_says_which_side_the_sweep_stayed_on() {
        let always = PairTable::new(vec![row(1.0, 2.0, 1.0), row(8.0, 3.0, 2.0)], None);
        assert!(BreakEvenSummary::of(&always)
            .sentence
            .contains("at every measured concurrency, up to 8"));
        let never = PairTable::new(vec![row(4.0, 1.0, 2.0), row(8.0, 1.0, 3.0)], None);
        assert!(BreakEvenSummary::of(&never)
            .sentence
            .contains("lowered output throughput at every measured concurrency, from 4 up"));
        assert_eq!(
            BreakEvenSummary::of(&PairTable::new(vec![], None)).sentence,
            "No concurrency was measured on both arms."
        );
    }

    #[test]
    fn acceptance_comes_with_the_geometric_curve_of_the_same_e() {
        let result: RunResult = serde_json::from_value(serde_json::json!({
            "spec_decode_acceptance_length": 2.0, "spec_decode_acceptance_rate": 50.0,
            "spec_decode_num_drafts": 100, "spec_decode_draft_tokens": 200, "spec_decode_accepted_tokens": 100,
            "spec_decode": {"timeline": [{"endpoint": "a", "t_s": 1.0, "interval_s": 1.0, "accepted_per_s": 100.0,
                "drafted_per_s": 200.0, "drafts_per_s": 100.0, "per_position": {"0": 0.7, "1": 0.3}}]}
        }))
        .unwrap();
        let a = AcceptanceSummary::of(&result).expect("a summary");
        assert_eq!(a.k, 2);
        assert_eq!(a.positions.rates, vec![0.7, 0.3]);
        assert!(
            (geometric_e(a.implied_alpha, 2) - 2.0).abs() < 1e-9,
            "the geometric curve has the same E"
        );
        assert!((a.geometric[1] - a.implied_alpha.powi(2)).abs() < 1e-12);
        let best = a.best_k(Costs::H100_FREE_DRAFTS, 1.0).unwrap();
        assert_eq!(
            best.k, 2,
            "free drafts at batch 1: every position that accepts anything pays"
        );
        assert!(
            AcceptanceSummary::of(&RunResult::default()).is_none(),
            "no spec-decode data"
        );
    }

    /// The overview describes the user's own run when there is one, else the headline arm's
    /// point, never just the newest sweep point.
    #[test]
    fn the_overview_run_is_the_users_own_else_the_headline_arms_point() {
        let r: RunResult =
            serde_json::from_value(serde_json::json!({"speclens_version": "x", "spec_decode_acceptance_length": 2.0}))
                .unwrap();
        let entry = |id: &str, date: &str, kind: &str| RunListEntry {
            date: Some(date.into()),
            kind: kind.into(),
            ..RunListEntry::new(id, &r)
        };
        let table = crate::view::headline::tests::two_arm_table();
        let h = Headline::of_sweep(&table).unwrap();
        let level = Level::Concurrency(h.level as u64);
        let point = format!("sw/{}", point_id(&h.arm, level));
        let mut runs = vec![
            entry("sw/spec-k1-c80", "3", "sweep spec"),
            entry(&point, "2", "sweep spec"),
            entry("accept/all", "1", "accept"),
        ];
        let (picked, why) = pick_run(&runs, Some(("sw", &h))).unwrap();
        assert_eq!(picked.id, point, "the headline arm's point, not the newest");
        assert!(why.contains(&h.arm), "{why}");
        runs.push(entry("my-bench", "0", "bench"));
        assert_eq!(pick_run(&runs, Some(("sw", &h))).unwrap().0.id, "my-bench");
        runs.pop();
        assert_eq!(
            pick_run(&runs, None).unwrap().0.id,
            "sw/spec-k1-c80",
            "no sweep: the newest with figures"
        );
    }
}
