//! The headline of a sweep, computed once: which speculative arm the story is about and why,
//! its pooled acceptance, its measured crossing, the model's B* for that arm (with the ridge,
//! draft cost and draft length the sweep used) and the what-if state that reproduces that B*.
//! The console's closing lines and every "what-if with the measured acceptance" link render
//! this one value, so they cannot disagree.

use crate::model::speedup::Proposer;
use crate::model::whatif::{Acceptance, Gpu, WhatIf, MAX_BATCH};
use crate::sweep::arms::ArmSweep;
use crate::sweep::{Prediction, SweepFile};
use crate::view::run::RunView;

/// What a sweep's story is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// The speculative arm's name.
    pub arm: String,
    /// Why this arm: its crossing is the cut-off, or it is the first fixed-k arm.
    pub why: String,
    /// The arm's acceptance pooled over its points.
    pub acceptance_length: f64,
    /// Its per-position rates (unconditional, position 1 first).
    pub per_position_acceptance_rates: Vec<f64>,
    /// Where the arm's throughput ratio to plain falls through 1.0, and the repeats' interval.
    pub measured_crossing: Option<f64>,
    pub crossing_interval: Option<(f64, f64)>,
    /// The model fed with this arm's acceptance and the sweep's costs.
    pub prediction: Prediction,
    /// The lowest level the arm is recommended at (else the sweep's lowest): the batch size at
    /// which the what-if page picks its best k.
    pub level: f64,
}

impl Headline {
    /// The headline of `table`: the arm its answer is about ([`SweepFile::decider`], whose
    /// crossing sets where speculation goes off), so the console's answer, the overview and
    /// every what-if link name one arm and one model B*; `None` when that arm has no
    /// prediction. The what-if opens at the first level the arm measured in its recommended
    /// range.
    pub fn of_sweep(table: &SweepFile) -> Option<Headline> {
        let arm: &ArmSweep = table.decider()?;
        let prediction = arm.table.prediction?;
        let recommended_from = table.recommendation.as_ref().and_then(|r| {
            r.ranges
                .iter()
                .filter(|range| !range.from_model)
                .find(|range| range.arm.as_deref() == Some(arm.name.as_str()))
                .map(|range| range.from)
        });
        // The first level the arm measured inside its recommended range (the run the overview
        // describes is that point), else the sweep's lowest.
        let measured = |from: f64| arm.table.rows.iter().map(|r| r.level).find(|l| *l >= from);
        let recommended_from = recommended_from.map(|from| measured(from).unwrap_or(from));
        let lowest = table.head().rows.first().map_or(1.0, |r| r.level);
        Some(Headline {
            arm: arm.name.clone(),
            why: table.decider_why().to_string(),
            acceptance_length: arm.acceptance_length.unwrap_or(prediction.measured_e),
            per_position_acceptance_rates: arm.per_position_acceptance_rates.clone(),
            measured_crossing: arm.table.crossing,
            crossing_interval: arm.table.crossing_interval,
            prediction,
            level: recommended_from.unwrap_or(lowest),
        })
    }

    /// The what-if state with every parameter the model needs: the measured E and k, the
    /// measured draft length, the sweep's draft cost and ridge, the rates and the batch.
    pub fn whatif(&self) -> WhatIf {
        let p = &self.prediction;
        WhatIf {
            acceptance: Acceptance::MeasuredE(p.measured_e),
            k: p.k,
            proposer: if p.costs.draft_cost == 0.0 {
                Proposer::Ngram
            } else {
                Proposer::Custom(p.costs.draft_cost)
            },
            gpu: Gpu::Ridge(p.costs.ridge_tokens),
            position_rates: self.per_position_acceptance_rates.clone(),
            batch: (self.level.round().max(1.0) as u32).min(MAX_BATCH),
            draft_tokens: p.draft_tokens_measured.then_some(p.draft_tokens),
            ..WhatIf::default()
        }
    }

    /// The page's fragment (without `#`) and the break-even batch the page shows for it: the
    /// fragment read back as the page reads it, so the printed figure is the page's.
    pub fn whatif_link(&self) -> (String, f64) {
        let fragment = self.whatif().to_fragment();
        let (page, _) = WhatIf::from_fragment(&fragment);
        (fragment, page.selected_row().break_even_batch)
    }

    /// The console's line for the link: the arm, why, and the model's B* beside the measured.
    pub fn sentence(&self) -> String {
        let (_, model_b) = self.whatif_link();
        let measured = match (self.measured_crossing, self.crossing_interval) {
            (Some(b), Some((lo, hi))) => format!("measured B* = {b:.1} ({lo:.1}–{hi:.1})"),
            (Some(b), None) => format!("measured B* = {b:.1}"),
            (None, _) => "no measured crossing".to_string(),
        };
        format!(
            "arm {} ({}): E = {:.3}, k = {}, model B* = {model_b:.1} (ridge T* = {}, c = {}), {measured}",
            self.arm,
            self.why,
            self.prediction.measured_e,
            self.prediction.k,
            self.prediction.costs.ridge_tokens,
            self.prediction.costs.draft_cost
        )
    }
}

/// The what-if link seeded from one run's measured acceptance (E, k, the measured draft length
/// when drafts were shorter than k, and the first path's per-position rates) on the page's
/// stated defaults (an H100's ridge, drafts free as an n-gram proposer's): the link the run and
/// live pages give, and the model B* the page opens on. `None` without rates or with E ≤ 1.
pub fn run_whatif_link(run: &RunView) -> Option<(String, f64)> {
    let path = run.positions_by_path().into_iter().next()?;
    let (rates, e) = (path.rates, path.acceptance_length);
    if rates.is_empty() || e <= 1.0 {
        return None;
    }
    let round3 = |v: f64| (v * 1e3).round() / 1e3;
    let k = rates.len() as u32;
    let state = WhatIf {
        acceptance: Acceptance::MeasuredE(round3(e)),
        k,
        draft_tokens: run.mean_draft_tokens.filter(|d| *d < f64::from(k) - 0.005).map(round3),
        position_rates: rates.into_iter().map(round3).collect(),
        batch: 64,
        ..WhatIf::default()
    };
    let fragment = state.to_fragment();
    let (page, _) = WhatIf::from_fragment(&fragment);
    Some((fragment, page.selected_row().break_even_batch))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::speedup::Costs;
    use crate::sweep::PairTable;

    /// Two speculative arms (k = 3 first, then k = 1) with the demo's costs and no rows.
    pub(crate) fn two_arm_table() -> SweepFile {
        let costs = Costs {
            draft_cost: 0.05,
            ridge_tokens: 74.0,
        };
        let mut table = SweepFile::default();
        table.arms.arms = vec![
            arm("spec", 2.886, 3, &[0.82, 0.62, 0.45], costs),
            arm("spec-k1", 1.82, 1, &[0.82], costs),
        ];
        table
    }

    fn arm(name: &str, e: f64, k: u32, rates: &[f64], costs: Costs) -> ArmSweep {
        ArmSweep {
            adaptive: false,
            name: name.into(),
            k: Some(k),
            acceptance_length: Some(e),
            drafts: Some(1000.0),
            per_position_acceptance_rates: rates.to_vec(),
            table: PairTable {
                crossing: Some(56.9),
                ..PairTable::new(Vec::new(), Some(Prediction::new(e, k, Some(2.9), costs)))
            },
            latency: Vec::new(),
            engine: Vec::new(),
            by_category: Vec::new(),
            step_cost: Vec::new(),
            saturation: Default::default(),
            calibrated: None,
            sustained_within_slo: None,
        }
    }

    #[test]
    fn the_link_reproduces_the_model_b_star_of_the_arm_it_names() {
        let table = two_arm_table();
        let h = Headline::of_sweep(&table).unwrap();
        assert_eq!(h.arm, "spec");
        let (fragment, b) = h.whatif_link();
        // Every parameter is in the link: nothing falls back to the page's defaults.
        for part in [
            "e=2.886",
            "k=3",
            "d=2.9",
            "proposer=custom",
            "c=0.05",
            "gpu=custom",
            "ridge=74",
            "rates=0.82,0.62,0.45",
            "batch=1",
        ] {
            assert!(fragment.contains(part), "{part} in {fragment}");
        }
        assert!(
            (b - h.prediction.break_even_batch).abs() < 1e-9,
            "{b} against {}",
            h.prediction.break_even_batch
        );
        let (page, errors) = WhatIf::from_fragment(&fragment);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(page, h.whatif());
        assert!(h.sentence().contains(&format!("model B* = {b:.1}")), "{}", h.sentence());
        assert!(h.sentence().contains("measured B* = 56.9"), "{}", h.sentence());
    }
}
