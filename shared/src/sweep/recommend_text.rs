//! A recommendation as the console prints it: the ranges with their k, ties, the cut-off, the
//! model's schedule beside the measured one, the engine lines; and as one sentence.

use super::adaptive::{ZeroKTax, ZERO_K_UNMEASURED};
use super::cuts::CUT_RULE;
use super::levels::Axis;
use super::recommend::{AdaptivePick, EngineLines, LevelPick, ModelSchedule, Recommendation, SCHEDULE_END};

/// What a level is called in a sentence: `concurrency 8`, `requests/s 2.5`.
pub(super) fn level_word(axis: Axis) -> &'static str {
    match axis {
        Axis::Concurrency => "concurrency",
        Axis::RequestRate => "requests/s",
    }
}

impl AdaptivePick {
    /// The console's sentence: where the schedule held up, its verdicts, and what to run.
    /// `span` names the range as the recommendation does, `instead` what it recommends there
    /// (a fixed k, or plain).
    pub fn sentence(&self, span: &str, instead: &str) -> String {
        let levels = |n: usize| {
            if n == 1 {
                "1 level".to_string()
            } else {
                format!("{n} levels")
            }
        };
        format!(
            "{span}: the schedule of adaptive arm {} held up at every level measured there (ahead of the best fixed choice at {}, tied at {}, behind at none): run that schedule there rather than {instead}",
            self.arm,
            levels(self.ahead),
            levels(self.tied)
        )
    }
}

impl Recommendation {
    /// Which measurements the ranges and the cut-off come from, and how sure each is.
    pub(super) fn basis(&self) -> String {
        let unit = level_word(self.axis);
        let mut parts: Vec<String> = self
            .ranges
            .iter()
            .map(|r| {
                let who = r.arm.clone().unwrap_or_else(|| "plain".into());
                let levels: Vec<String> = self
                    .levels
                    .iter()
                    .filter(|l| l.arm == r.arm && r.contains(l.level))
                    .map(|l| format!("{}", l.level))
                    .collect();
                let sure = if r.sure { "sure" } else { "within the repeats' noise" };
                let model = match (r.from_model, r.k) {
                    (true, Some(k)) => format!(", k = {k} from the model of its per-position rates (not measured)"),
                    _ => String::new(),
                };
                format!("{who} measured best at {} {} ({sure}){model}", unit, levels.join(", "))
            })
            .collect();
        if let Some(c) = &self.cut_off {
            let interval = c
                .interval
                .map_or(String::new(), |(lo, hi)| format!(", {lo:.1}–{hi:.1}"));
            parts.push(format!(
                "off above {}'s measured crossing {} = {:.1}{interval}",
                c.arm,
                self.axis.symbol(),
                c.level
            ));
        }
        parts.join("; ")
    }

    /// One sentence: each range's k and where speculation goes off.
    pub fn summary(&self) -> String {
        let unit = level_word(self.axis);
        let schedule = self.batch_schedule();
        let parts: Vec<String> = self
            .ranges
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let span = match (self.axis, schedule.get(i)) {
                    (Axis::Concurrency, Some((from, to, _))) if *to == SCHEDULE_END => format!("from {unit} {from} up"),
                    (Axis::Concurrency, Some((from, to, _))) if to > from => format!("at {unit} {from}–{to}"),
                    (Axis::Concurrency, Some((from, _, _))) => format!("at {unit} {from}"),
                    _ => match r.to {
                        Some(to) => format!("at {unit} {:.1}–{to:.1}", r.from),
                        None => format!("from {unit} {:.1} up", r.from),
                    },
                };
                match (&r.arm, r.k) {
                    (None, _) => format!("speculation off {span}"),
                    (Some(a), Some(k)) => format!("k = {k} ({a}) {span}"),
                    (Some(a), None) => format!("{a} {span}"),
                }
            })
            .collect();
        format!("Recommended: {}.", parts.join("; "))
    }

    /// How the console names range `i`: `concurrency 1–24` (vLLM's batch sizes) or
    /// `concurrency 25 and above`.
    pub fn range_span(&self, i: usize) -> String {
        let unit = level_word(self.axis);
        let Some(r) = self.ranges.get(i) else {
            return String::new();
        };
        match (self.axis, self.batch_schedule().get(i)) {
            (Axis::Concurrency, Some((from, to, _))) if *to == SCHEDULE_END => format!("{unit} {from} and above"),
            (Axis::Concurrency, Some((from, to, _))) if to > from => format!("{unit} {from}–{to}"),
            (Axis::Concurrency, Some((from, _, _))) => format!("{unit} {from}"),
            _ => match r.to {
                Some(to) => format!("{unit} {:.1}–{to:.1}", r.from),
                None => format!("{unit} {:.1} and above", r.from),
            },
        }
    }

    /// Whether speculation is off at `level`: it lies in a range where plain measured best.
    pub fn off_at(&self, level: f64) -> bool {
        self.ranges.iter().any(|r| r.arm.is_none() && r.contains(level))
    }

    /// The adaptive picks of range `i`.
    pub fn adaptive_of(&self, i: usize) -> impl Iterator<Item = &AdaptivePick> {
        let r = self.ranges.get(i);
        self.adaptive
            .iter()
            .filter(move |a| r.is_some_and(|r| a.from == r.from && a.to == r.to))
    }

    /// The console text, with every engine's config lines.
    pub fn render(&self) -> String {
        self.render_for(EngineLines::All)
    }

    /// The console text with the config lines of `engines` only.
    pub fn render_for(&self, engines: EngineLines) -> String {
        let unit = level_word(self.axis);
        let mut out = String::from("Recommendation:\n");
        for (i, r) in self.ranges.iter().enumerate() {
            let span = self.range_span(i);
            let what = match (&r.arm, r.k) {
                (None, _) => "speculation off (plain measured best)".to_string(),
                (Some(a), Some(k)) if r.from_model => format!(
                    "k = {k} (arm {a} measured best; the model of its per-position rates prefers k = {k}, not measured: an arm with k = {k} would confirm it)"
                ),
                (Some(a), Some(k)) => format!("k = {k} (arm {a})"),
                (Some(a), None) => format!("arm {a} (k not measured)"),
            };
            let sure = if r.sure { "" } else { ", within the repeats' noise" };
            out.push_str(&format!("  {span}: {what}{sure}\n"));
            for a in self.adaptive_of(i) {
                let instead = if r.arm.is_some() { "a fixed k" } else { "plain" };
                out.push_str(&format!("  {}\n", a.sentence(&span, instead)));
            }
            if r.arm.is_some() || self.axis != Axis::Concurrency {
                continue;
            }
            // Speculation off: what k = 0 costs on the speculative server, measured or not.
            let inside = |z: &&ZeroKTax| z.levels.iter().any(|l| r.contains(l.level));
            let measured: Vec<&ZeroKTax> = self.zero_k.iter().filter(inside).collect();
            for z in &measured {
                out.push_str(&format!("  {}\n", z.sentence(&span)));
            }
            if measured.is_empty() {
                out.push_str(&format!("  {span}: {ZERO_K_UNMEASURED}\n"));
            }
        }
        if !self.operating_concurrency.is_empty() && self.axis == Axis::Concurrency {
            let at: Vec<String> = self.operating_concurrency.iter().map(u64::to_string).collect();
            if self.cuts.is_empty() {
                out.push_str(&format!(
                    "  no cut splits the batch sizes around {unit} {} (--operating-concurrency)\n",
                    at.join(", ")
                ));
            } else {
                for c in &self.cuts {
                    out.push_str(&format!("  {}\n", c.sentence()));
                }
                out.push_str(&format!("  (cut rule: {CUT_RULE})\n"));
            }
        }
        if let Some(over) = self.cut_off.as_ref().and_then(|c| c.plain_over_saturated_from) {
            out.push_str(&format!(
                "  the cut-off rests on a saturated point: plain is over-saturated from {unit} {over} (throughput flat, latency growing), so plain's figure there is no deployment answer\n"
            ));
        }
        for l in self.levels.iter().filter(|l| !l.tied.is_empty()) {
            out.push_str(&format!(
                "  at {unit} {}: {} is within the noise of {}\n",
                l.level,
                l.arm.as_deref().unwrap_or("plain"),
                l.tied.join(", ")
            ));
        }
        if let Some(c) = &self.cut_off {
            let interval = c
                .interval
                .map_or(String::new(), |(lo, hi)| format!(" ({lo:.1}–{hi:.1})"));
            out.push_str(&format!(
                "  Speculation off above {} = {:.1}{interval} {}: no arm beats plain there ({}'s crossing)\n",
                self.axis.symbol(),
                c.level,
                self.axis.unit(),
                c.arm
            ));
        }
        if let Some(m) = &self.model {
            out.push_str(&self.render_model(m, unit));
        }
        for s in self.settings.iter().filter(|s| engines.shows(s.engine)) {
            if s.line.is_empty() {
                out.push_str(&format!("  {}: {}\n", s.label(), s.basis));
            } else {
                out.push_str(&format!("  {}: {}\n      from: {}\n", s.label(), s.line, s.basis));
            }
            for w in &s.warnings {
                out.push_str(&format!("      warning: {w}\n"));
            }
        }
        out
    }

    /// The model's lines: its schedule from the per-position rates, and where its best k agrees
    /// with the measured best.
    pub(super) fn render_model(&self, m: &ModelSchedule, unit: &str) -> String {
        let mut out = String::new();
        let rates: Vec<String> = m.rates.iter().map(|r| format!("{r:.3}")).collect();
        let ranges: Vec<String> = m
            .ranges
            .iter()
            .map(|(from, to, k)| {
                let to = if *to == SCHEDULE_END {
                    "up".to_string()
                } else {
                    to.to_string()
                };
                match k {
                    0 => format!("B {from}–{to}: off"),
                    k => format!("B {from}–{to}: k = {k}"),
                }
            })
            .collect();
        out.push_str(&format!(
            "  Model (per-position rates of {}: {}): {}\n",
            m.rates_from,
            rates.join(", "),
            ranges.join("; ")
        ));
        let checked: Vec<&LevelPick> = self
            .levels
            .iter()
            .filter(|l| l.model_k.is_some() && l.k.is_some())
            .collect();
        if !checked.is_empty() {
            // The model agrees where its k is the pick's, or that of an arm tied with it.
            let (agreeing, differing): (Vec<&LevelPick>, Vec<&LevelPick>) = checked
                .iter()
                .partition(|l| l.model_k == l.k || l.tied.iter().any(|t| self.k_of(t) == l.model_k));
            let agree = agreeing.len();
            let disagree: Vec<String> = differing
                .iter()
                .map(|l| {
                    let model_k = l.model_k.unwrap_or(0);
                    let untried = if model_k > 0 && !self.levels.iter().any(|x| x.k == Some(model_k)) {
                        format!(": no arm measured k = {model_k}, one would tell")
                    } else {
                        String::new()
                    };
                    format!(
                        "{} (model k = {model_k}, measured k = {}{untried})",
                        l.level,
                        l.k.unwrap_or(0)
                    )
                })
                .collect();
            out.push_str(&format!(
                "  The model's best k agrees with the measured best at {agree} of {} levels{}\n",
                checked.len(),
                if disagree.is_empty() {
                    String::new()
                } else {
                    format!("; not at {unit} {} (the measured arms decide)", disagree.join(", "))
                }
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-arm sweep (k3 best to the crossing at 24, k1 to 50.3, plain above) run at 24
    /// and 50: both cuts move up one batch size, and every engine's line follows.
    #[test]
    fn the_recommendation_keeps_its_cuts_from_the_operating_load() {
        use crate::model::speedup::Costs;
        use crate::sweep::recommend::tests::{named, two_arm_results};
        let results = two_arm_results();
        let t = crate::sweep::SweepFile::of_arms(&named(&results), Costs::H100_FREE_DRAFTS, None, &[], &[24, 50]);
        let rec = t.recommendation.unwrap();
        assert_eq!(
            rec.batch_schedule(),
            vec![(1, 25, 3), (26, 51, 1), (52, SCHEDULE_END, 0)]
        );
        assert_eq!(
            rec.cuts.iter().map(|c| c.placed_to).collect::<Vec<_>>(),
            [Some(25), Some(51)]
        );
        let text = rec.render();
        assert!(
            text.contains("cut moved from after batch size 24 to after 25"),
            "{text}"
        );
        assert!(
            text.contains("cut rule: each cut lies between the measured levels"),
            "{text}"
        );
        assert!(
            rec.settings
                .iter()
                .any(|s| s.line.contains("[[1,25,3],[26,51,1],[52,65536,0]]")),
            "{:?}",
            rec.settings
        );
    }
}
