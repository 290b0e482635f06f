//! A sweep's answer first: the few lines the console prints right after the last point, before
//! the tables behind them — the measured crossing with its interval, the model's one B* as a
//! check, the k by range, and the config line of the engine the servers reported.

use super::pair::Side;
use super::recommend::SettingKind;
use super::recommend_text::level_word;
use super::SweepFile;
use crate::engine::Engine;

impl SweepFile {
    /// The answer block: the measured break-even first (the arm whose crossing sets where
    /// speculation goes off, with the repeats' interval), the model's B* of that same arm as a
    /// check, the recommended k by range, and the engine line for `engine` (the one the servers
    /// reported; vLLM's when none was). Empty when no speculative arm was measured.
    pub fn answer(&self, engine: Option<Engine>) -> String {
        let fixed: Vec<_> = self.arms.arms.iter().filter(|a| !a.adaptive).collect();
        let Some(decider) = self.decider() else {
            return String::new();
        };
        let (symbol, unit) = (self.axis.symbol(), self.axis.unit());
        let interval = |i: Option<(f64, f64)>| i.map_or(String::new(), |(lo, hi)| format!(" ({lo:.1}–{hi:.1})"));
        let mut out = String::from("Answer (measured first; the model is a check; the detail follows):\n");
        let measured = match decider.table.crossing {
            Some(b) => format!(
                "speculation pays below {symbol} = {b:.1} {unit}{}, arm {}'s measured crossing; above it, serve without speculation",
                interval(decider.table.crossing_interval),
                decider.name
            ),
            None => self.no_crossing(decider.name.as_str(), &decider.table),
        };
        let others: Vec<String> = fixed
            .iter()
            .filter(|a| a.name != decider.name)
            .map(|a| match a.table.crossing {
                Some(b) => format!("{} {b:.1}{}", a.name, interval(a.table.crossing_interval)),
                None => format!("{} no crossing inside the sweep", a.name),
            })
            .collect();
        let others = if others.is_empty() {
            String::new()
        } else {
            format!(" (the other arms: {})", others.join("; "))
        };
        out.push_str(&format!("  Measured: {measured}{others}.\n"));
        if let Some(p) = &decider.table.prediction {
            out.push_str(&format!(
                "  Model (a check): {symbol} = {:.1} for arm {} from its measured E = {:.3} (k = {}, c = {}, ridge T* = {}).\n",
                p.break_even_batch, decider.name, p.measured_e, p.k, p.costs.draft_cost, p.costs.ridge_tokens
            ));
        }
        if let Some(r) = &self.recommendation {
            out.push_str(&format!("  {}\n", r.summary()));
            for (i, range) in r.ranges.iter().enumerate() {
                let instead = if range.arm.is_some() { "a fixed k" } else { "plain" };
                for a in r.adaptive_of(i) {
                    out.push_str(&format!("  Adaptive: {}.\n", a.sentence(&r.range_span(i), instead)));
                }
            }
            let wanted = engine.unwrap_or(Engine::Vllm);
            let line = r
                .settings
                .iter()
                .filter(|s| s.engine == wanted && !s.line.is_empty())
                .find(|s| matches!(s.kind, SettingKind::Schedule | SettingKind::Fixed));
            if let Some(s) = line {
                let which = if engine.is_some() {
                    "the servers' engine"
                } else {
                    "engine not reported; the others' lines below"
                };
                out.push_str(&format!("  {} ({which}): {}\n", s.label(), s.line));
            }
        }
        out
    }

    /// The arm the answer is about, the one whose figures every page leads with: the arm whose
    /// measured crossing sets where speculation goes off (the recommendation's cut-off), else
    /// the first fixed-k arm. `None` when no fixed-k arm was measured.
    pub fn decider(&self) -> Option<&super::arms::ArmSweep> {
        let mut fixed = self.arms.arms.iter().filter(|a| !a.adaptive);
        let cut_off = self.recommendation.as_ref().and_then(|r| r.cut_off.as_ref());
        cut_off
            .and_then(|c| fixed.clone().find(|a| a.name == c.arm))
            .or_else(|| fixed.next())
    }

    /// Why [`SweepFile::decider`] picked its arm, in a few words.
    pub fn decider_why(&self) -> &'static str {
        let cut_off = self.recommendation.as_ref().and_then(|r| r.cut_off.as_ref());
        match (cut_off, self.decider()) {
            (Some(c), Some(a)) if c.arm == a.name => "its crossing is where speculation goes off",
            _ => "the sweep's first fixed-k arm",
        }
    }

    /// What an arm without a measured crossing did: paid at every level, or at none.
    fn no_crossing(&self, arm: &str, table: &super::PairTable) -> String {
        let word = level_word(self.axis);
        match table.side() {
            Side::Pays { top } => {
                format!("arm {arm} pays at every {word} measured, up to {top}: the break-even lies beyond the sweep")
            }
            Side::Loses { low } => format!("arm {arm} loses at every {word} measured, from {low} up"),
            Side::Mixed => format!("arm {arm}'s ratio does not fall through 1.0 inside the sweep"),
            Side::Unmeasured => format!("arm {arm} has no {word} measured on both arms"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::recommend::tests::{named, two_arm_results};
    use crate::engine::Engine;
    use crate::model::speedup::Costs;
    use crate::sweep::SweepFile;

    /// Two arms, k = 3 best at low load and k = 1 above, plain above 50: the answer names the
    /// cut-off's crossing (k1's, 50.3), the other arm's, the model's B* of that same arm, the
    /// ranges, and the servers' engine's line only — in the order a user reads them.
    #[test]
    fn the_answer_leads_with_the_measured_crossing_and_one_engine_line() {
        let results = two_arm_results();
        let t = SweepFile::of_arms(&named(&results), Costs::H100_FREE_DRAFTS, None, &[], &[]);
        let model = t
            .arms
            .arm("k1")
            .unwrap()
            .table
            .prediction
            .as_ref()
            .unwrap()
            .break_even_batch;
        let expected = format!(
            "Answer (measured first; the model is a check; the detail follows):
  Measured: speculation pays below B* = 50.3 concurrent requests, arm k1's measured crossing; above it, serve without speculation (the other arms: k3 {:.1}).
  Model (a check): B* = {model:.1} for arm k1 from its measured E = 1.800 (k = 1, c = 0, ridge T* = 295).
  Recommended: k = 3 (k3) at concurrency 1–24; k = 1 (k1) at concurrency 25–50; speculation off from concurrency 51 up.
  SGLang (the servers' engine): --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4
",
            t.arms.arm("k3").unwrap().table.crossing.unwrap()
        );
        assert_eq!(t.answer(Some(Engine::Sglang)), expected);
        // No engine reported: vLLM's line, said to be a default.
        let unknown = t.answer(None);
        assert!(
            unknown.contains("  vLLM (engine not reported; the others' lines below): --speculative-config '{\"num_speculative_tokens\":3,")
                && !unknown.contains("SGLang"),
            "{unknown}"
        );
    }
}
