//! One two-arm table of a sweep: a speculative arm against plain (or one arm against another)
//! by concurrency (output-token throughput) or by request rate (median E2E latency), their
//! ratio and verdict, the measured crossing (B* or λ*) with its interval from the repeats, and
//! the model's prediction beside it.

use serde::{Deserialize, Serialize};

use super::levels::{throughput, Arm, Axis, Level};
use crate::model::speedup::{break_even_batch, sweep_crossing, Costs, RatioPoint, UNCHARGED_COSTS};
use crate::results::run_result::RunResult;
/// One level of the sweep; an arm that was not run (or failed) is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// The level: concurrent requests, or requests per second when `axis` is `request_rate`.
    #[serde(alias = "concurrency")]
    pub level: f64,
    #[serde(default, skip_serializing_if = "Axis::is_concurrency")]
    pub axis: Axis,
    /// Output tokens per second: the steady window's, else the whole run's (of the repeat
    /// whose compared figure is the median, when the point was run several times).
    pub spec_output_tokens_per_s: Option<f64>,
    pub base_output_tokens_per_s: Option<f64>,
    /// Median end-to-end latency of that repeat, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_median_e2el_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_median_e2el_ms: Option<f64>,
    /// The repeats' (min, max) of the compared figure (`Axis::figure`), when the point was run
    /// more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_spread: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_spread: Option<(f64, f64)>,
    /// Completed requests per second within the `--goodput` objectives (the run whose
    /// throughput counts), when they were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_goodput: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_goodput: Option<f64>,
    /// The arm's point had no steady window, so its figure is the whole run's
    /// (`levels::unsteady`): drawn hollow on every chart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spec_unsteady: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub base_unsteady: bool,
}

/// Whether a point's repeated throughputs agree well enough to stop repeating: their range
/// within `spread` (a fraction) of their median. A point whose runs measured nothing (a median
/// of 0) is settled: more runs would not change it.
pub fn repeats_settled(tokens_per_s: &[f64], spread: f64) -> bool {
    let mut values = tokens_per_s.to_vec();
    values.sort_by(f64::total_cmp);
    let (Some(lo), Some(hi)) = (values.first(), values.last()) else {
        return true;
    };
    let median = values[(values.len() - 1) / 2];
    median.is_nan() || median <= 0.0 || (hi - lo) / median <= spread
}

impl SweepRow {
    /// An empty row at `level`.
    pub fn at(level: Level) -> SweepRow {
        SweepRow {
            level: level.value(),
            axis: level.axis(),
            spec_output_tokens_per_s: None,
            base_output_tokens_per_s: None,
            spec_median_e2el_ms: None,
            base_median_e2el_ms: None,
            spec_spread: None,
            base_spread: None,
            spec_goodput: None,
            base_goodput: None,
            spec_unsteady: false,
            base_unsteady: false,
        }
    }

    /// Whether either arm's point at this level had no steady window.
    pub fn unsteady(&self) -> bool {
        self.axis.is_concurrency() && (self.spec_unsteady || self.base_unsteady)
    }

    /// spec ÷ base goodput; `None` unless both arms measured one and the plain arm's is not 0.
    pub fn goodput_ratio(&self) -> Option<f64> {
        match (self.spec_goodput, self.base_goodput) {
            (Some(s), Some(b)) if b > 0.0 => Some(s / b),
            _ => None,
        }
    }

    /// Each arm's compared figure (`Axis::figure`): (spec, base).
    pub fn figures(&self) -> (Option<f64>, Option<f64>) {
        match self.axis {
            Axis::Concurrency => (self.spec_output_tokens_per_s, self.base_output_tokens_per_s),
            Axis::RequestRate => (self.spec_median_e2el_ms, self.base_median_e2el_ms),
        }
    }

    /// How much speculation gains, above 1.0 when it pays: spec ÷ base output throughput, or
    /// base ÷ spec median E2E latency in a rate sweep.
    pub fn ratio(&self) -> Option<f64> {
        let gain = |better: f64, worse: f64| (worse > 0.0).then(|| better / worse);
        match (self.axis, self.figures()) {
            (Axis::Concurrency, (Some(s), Some(b))) => gain(s, b),
            (Axis::RequestRate, (Some(s), Some(b))) => gain(b, s),
            _ => None,
        }
    }

    /// The lowest and highest ratio the repeats allow (one arm's worst repeat over the other's
    /// best, and the other way round); the ratio itself for points run once.
    pub fn ratio_bounds(&self) -> Option<(f64, f64)> {
        let (s, b) = self.figures();
        let (s, b) = (s?, b?);
        let (s_lo, s_hi) = self.spec_spread.unwrap_or((s, s));
        let (b_lo, b_hi) = self.base_spread.unwrap_or((b, b));
        match self.axis {
            Axis::Concurrency => (b_lo > 0.0).then(|| (s_lo / b_hi, s_hi / b_lo)),
            Axis::RequestRate => (s_lo > 0.0).then(|| (b_lo / s_hi, b_hi / s_lo)),
        }
    }
}

/// The model's prediction fed with what the sweep measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub measured_e: f64,
    pub k: u32,
    /// Draft tokens per draft that the costs charge: the measured mean, or k when none was
    /// measured (`draft_tokens_measured` says which).
    pub draft_tokens: f64,
    pub draft_tokens_measured: bool,
    pub costs: Costs,
    pub break_even_batch: f64,
}

impl Prediction {
    /// `measured_draft_tokens`: draft tokens per draft as measured (None: full k-token drafts).
    pub fn new(measured_e: f64, k: u32, measured_draft_tokens: Option<f64>, costs: Costs) -> Prediction {
        let draft_tokens = measured_draft_tokens.unwrap_or(f64::from(k));
        Prediction {
            measured_e,
            k,
            draft_tokens,
            draft_tokens_measured: measured_draft_tokens.is_some(),
            costs,
            break_even_batch: break_even_batch(measured_e, draft_tokens, costs),
        }
    }

    /// How the costs' draft length was chosen, for the console.
    pub fn draft_tokens_phrase(&self) -> String {
        crate::model::speedup::draft_tokens_phrase(self.k, self.draft_tokens_measured.then_some(self.draft_tokens))
    }
}

/// One two-arm table: the compared arm's figure beside the other's at each level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairTable {
    /// What the levels are: concurrencies, or request rates.
    #[serde(default)]
    pub axis: Axis,
    pub rows: Vec<SweepRow>,
    /// Interpolated level where the ratio (`SweepRow::ratio`) falls through 1.0.
    pub crossing: Option<f64>,
    /// Where the crossing can lie given the repeats' spread: the crossing of the lowest
    /// ratios to that of the highest (only when points were repeated and both exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crossing_interval: Option<(f64, f64)>,
    pub prediction: Option<Prediction>,
    /// The `--goodput` objectives the points counted (`ttft:500 tpot:50`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_slo: Option<String>,
    /// Interpolated level where spec/base goodput falls through 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_crossing: Option<f64>,
}

/// The table of a sweep with no point (nothing to compare).
pub static EMPTY: PairTable = PairTable {
    axis: Axis::Concurrency,
    rows: Vec::new(),
    crossing: None,
    crossing_interval: None,
    prediction: None,
    goodput_slo: None,
    goodput_crossing: None,
};

/// The side of plain an arm stayed on across a sweep ([`PairTable::side`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Side {
    /// Ahead of plain at every level with a ratio, up to `top`.
    Pays { top: f64 },
    /// Behind plain (or level) at every level with a ratio, from `low`.
    Loses { low: f64 },
    /// Ahead at some levels, behind at others.
    Mixed,
    /// No level with a ratio.
    Unmeasured,
}

impl PairTable {
    /// Which side of plain the arm stayed on over the levels with a ratio: ahead at every
    /// one, behind (or level) at every one, or neither.
    pub fn side(&self) -> Side {
        let ratios: Vec<(f64, f64)> = self.rows.iter().filter_map(|r| Some((r.level, r.ratio()?))).collect();
        match (ratios.first(), ratios.last()) {
            (Some(_), Some(&(top, _))) if ratios.iter().all(|(_, x)| *x > 1.0) => Side::Pays { top },
            (Some(&(low, _)), Some(_)) if ratios.iter().all(|(_, x)| *x <= 1.0) => Side::Loses { low },
            (Some(_), Some(_)) => Side::Mixed,
            _ => Side::Unmeasured,
        }
    }

    /// Without a measured crossing, what the side the sweep stayed on says of a calibrated B*: an
    /// arm that pays at every level up to L has B* > L, so a calibrated B* below L is low by at
    /// least its shortfall; one that loses from the lowest level has B* below it.
    pub fn calibrated_bound(&self, calibrated: f64) -> String {
        match self.side() {
            Side::Pays { top } if calibrated < top => format!(
                "; measured: speculation pays at every level up to {top}, so B* > {top} and the calibrated model is at least {:.0} % low",
                (1.0 - calibrated / top) * 100.0
            ),
            Side::Loses { low } if calibrated > low => format!(
                "; measured: speculation loses from the lowest level, {low}, so B* < {low} and the calibrated model is at least {:.0} % high",
                (calibrated / low - 1.0) * 100.0
            ),
            _ => "; no measured crossing to hold it to".to_string(),
        }
    }

    /// The table of measured points. The prediction uses E pooled over every spec point
    /// (1 + Σaccepted ÷ Σdrafts: acceptance does not depend on the batch, and the pool holds
    /// far more steps than any one point), with k from the lowest-concurrency spec point that
    /// names it; that point's own E when no point counted drafts.
    /// Every point must be of one axis (the first point's); others are left out.
    pub fn from_points(points: &[(Arm, Level, &RunResult)], costs: Costs) -> PairTable {
        let axis = points.first().map_or(Axis::Concurrency, |p| p.1.axis());
        let points: Vec<&(Arm, Level, &RunResult)> = points.iter().filter(|p| p.1.axis() == axis).collect();
        let mut rows: Vec<SweepRow> = Vec::new();
        for (arm, level, result) in points.iter().copied() {
            let row = match rows.iter().position(|r| r.level == level.value()) {
                Some(i) => &mut rows[i],
                None => {
                    rows.push(SweepRow::at(*level));
                    rows.last_mut().expect("just pushed")
                }
            };
            let (tokens_per_s, e2el_ms, goodput, unsteady) = match arm {
                Arm::Spec => (
                    &mut row.spec_output_tokens_per_s,
                    &mut row.spec_median_e2el_ms,
                    &mut row.spec_goodput,
                    &mut row.spec_unsteady,
                ),
                Arm::Base => (
                    &mut row.base_output_tokens_per_s,
                    &mut row.base_median_e2el_ms,
                    &mut row.base_goodput,
                    &mut row.base_unsteady,
                ),
            };
            *tokens_per_s = throughput(result);
            *unsteady = super::levels::unsteady(result);
            *e2el_ms = result.median_e2el_ms;
            *goodput = result.request_goodput;
        }
        // Goodput compares only when every point counted it under the same objectives (points
        // kept from earlier runs may have had others, or none).
        let objectives: Vec<Option<&std::collections::BTreeMap<String, f64>>> = points
            .iter()
            .map(|(_, _, r)| {
                r.config
                    .as_ref()
                    .map(|c| &c.goodput)
                    .filter(|g| !g.is_empty() && r.request_goodput.is_some())
            })
            .collect();
        let goodput_slo = match objectives.first() {
            Some(Some(first)) if objectives.iter().all(|o| *o == Some(*first)) => Some(
                first
                    .iter()
                    .map(|(k, v)| format!("{k}:{v}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        };
        if goodput_slo.is_none() {
            for row in &mut rows {
                (row.spec_goodput, row.base_goodput) = (None, None);
            }
        }
        let mut spec: Vec<&(Arm, Level, &RunResult)> = points.iter().copied().filter(|p| p.0 == Arm::Spec).collect();
        spec.sort_by(|a, b| a.1.value().total_cmp(&b.1.value()));
        let (mut drafts, mut accepted, mut draft_tokens, mut all_draft_tokens) = (0.0, 0.0, 0.0, true);
        for (_, _, result) in &spec {
            if let Some((d, a, t)) = result.spec_counts() {
                drafts += d;
                accepted += a;
                match t {
                    Some(t) => draft_tokens += t,
                    None => all_draft_tokens = false,
                }
            }
        }
        let prediction = spec.iter().find_map(|p| p.2.measured()).map(|m| {
            match crate::figures::acceptance_length(accepted, drafts) {
                Some(e) => {
                    let per_draft = if all_draft_tokens {
                        Some(draft_tokens / drafts)
                    } else {
                        m.draft_tokens
                    };
                    Prediction::new(e, m.k, per_draft, costs)
                }
                None => Prediction::new(m.e, m.k, m.draft_tokens, costs),
            }
        });
        PairTable {
            goodput_slo,
            ..PairTable::new(rows, prediction)
        }
    }

    /// The table of `rows` (all of one axis: the first row's).
    pub fn new(mut rows: Vec<SweepRow>, prediction: Option<Prediction>) -> PairTable {
        let axis = rows.first().map_or(Axis::Concurrency, |r| r.axis);
        rows.retain(|r| r.axis == axis);
        rows.sort_by(|a, b| a.level.total_cmp(&b.level));
        let points: Vec<RatioPoint> = rows
            .iter()
            .filter_map(|r| {
                r.ratio().map(|ratio| RatioPoint {
                    concurrency: r.level,
                    ratio,
                })
            })
            .collect();
        let bounds = |pick: fn((f64, f64)) -> f64| -> Vec<RatioPoint> {
            rows.iter()
                .filter_map(|r| {
                    r.ratio_bounds().map(|b| RatioPoint {
                        concurrency: r.level,
                        ratio: pick(b),
                    })
                })
                .collect()
        };
        let repeated = rows.iter().any(|r| r.spec_spread.is_some() || r.base_spread.is_some());
        let crossing_interval = if repeated {
            sweep_crossing(&bounds(|b| b.0)).zip(sweep_crossing(&bounds(|b| b.1)))
        } else {
            None
        };
        let goodput_points: Vec<RatioPoint> = rows
            .iter()
            .filter_map(|r| {
                r.goodput_ratio().map(|ratio| RatioPoint {
                    concurrency: r.level,
                    ratio,
                })
            })
            .collect();
        PairTable {
            axis,
            crossing: sweep_crossing(&points),
            crossing_interval,
            goodput_crossing: sweep_crossing(&goodput_points),
            goodput_slo: None,
            rows,
            prediction,
        }
    }

    /// The table with each point's repeats' spread of the compared figure,
    /// `(arm, level, min, max)`.
    pub fn with_spreads(self, spreads: &[(Arm, Level, f64, f64)]) -> PairTable {
        let mut rows = self.rows;
        for (arm, level, lo, hi) in spreads {
            if let Some(row) = rows
                .iter_mut()
                .find(|r| r.axis == level.axis() && r.level == level.value())
            {
                match arm {
                    Arm::Spec => row.spec_spread = Some((*lo, *hi)),
                    Arm::Base => row.base_spread = Some((*lo, *hi)),
                }
            }
        }
        PairTable {
            goodput_slo: self.goodput_slo,
            ..PairTable::new(rows, self.prediction)
        }
    }

    /// A row's ratio and verdict as the console and the page print them.
    pub fn verdict(row: &SweepRow) -> (String, &'static str) {
        match row.ratio() {
            Some(x) if x > 1.0 => (format!("{x:.3}"), "speculation pays"),
            Some(x) => (format!("{x:.3}"), "speculation loses"),
            None => ("—".into(), "one arm missing"),
        }
    }

    /// What the table found, in order: the measured crossing, the goodput crossing (under
    /// objectives), the model's prediction and whether the measurement falls left of it.
    pub fn findings(&self) -> Vec<Finding> {
        let mut found = vec![Finding::MeasuredCrossing {
            at: self.crossing,
            interval: self.crossing_interval,
        }];
        if let Some(slo) = &self.goodput_slo {
            found.push(Finding::GoodputCrossing {
                slo: slo.clone(),
                at: self.goodput_crossing,
                plain_met_objectives: self.rows.iter().any(|r| r.goodput_ratio().is_some()),
            });
        }
        if let Some(p) = &self.prediction {
            found.push(Finding::ModelPrediction(*p));
            // A rate's crossing is not a batch size: the two do not compare directly.
            let beyond = match (self.axis, self.crossing, self.crossing_interval) {
                (Axis::RequestRate, _, _) => false,
                (_, Some(_), Some((_, hi))) => p.break_even_batch > hi,
                (_, Some(b), None) => b < p.break_even_batch * 0.95,
                (_, None, _) => false,
            };
            if beyond {
                found.push(Finding::LeftOfPrediction);
            }
        }
        found
    }

    /// The findings as the console and the sweep page print them.
    pub fn finding_lines(&self) -> Vec<String> {
        self.findings().iter().map(|f| f.text(self.axis)).collect()
    }

    /// The console text: the table by level, the goodput table (under objectives), the
    /// crossings and the prediction.
    pub fn render(&self) -> String {
        let cell = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.1}"));
        let (column, spec_head, base_head, ratio_head) = match self.axis {
            Axis::Concurrency => ("Concurrency", "spec out tok/s", "base out tok/s", "ratio"),
            Axis::RequestRate => ("Rate (req/s)", "spec E2EL p50 ms", "base E2EL p50 ms", "speedup"),
        };
        let (w0, w1, w2) = (column.len(), spec_head.len(), base_head.len());
        let mut out = format!("{column}   {spec_head}   {base_head}   {ratio_head:>6}   verdict\n");
        for r in &self.rows {
            let (ratio, verdict) = PairTable::verdict(r);
            let (spec, base) = r.figures();
            out.push_str(&format!(
                "{:>w0$}   {:>w1$}   {:>w2$}   {:>6}   {verdict}\n",
                r.level,
                cell(spec),
                cell(base),
                ratio
            ));
        }
        if let Some(slo) = &self.goodput_slo {
            let cell = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.2}"));
            out.push_str(&format!(
                "\nGoodput (completed requests/s within {slo}):\n{column}   spec req/s   base req/s    ratio\n"
            ));
            for r in &self.rows {
                out.push_str(&format!(
                    "{:>w0$}   {:>10}   {:>10}   {:>6}\n",
                    r.level,
                    cell(r.spec_goodput),
                    cell(r.base_goodput),
                    r.goodput_ratio().map_or_else(|| "—".to_string(), |x| format!("{x:.3}"))
                ));
            }
        }
        for (i, line) in self.finding_lines().iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { "" });
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// One thing a two-arm table found.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// Where spec ÷ plain crosses 1.0 (interpolated), with the repeats' interval.
    MeasuredCrossing {
        at: Option<f64>,
        interval: Option<(f64, f64)>,
    },
    /// Where the goodput ratio crosses 1.0 under the objectives `slo`.
    GoodputCrossing {
        slo: String,
        at: Option<f64>,
        /// Whether the plain arm met the objectives at any point.
        plain_met_objectives: bool,
    },
    /// The model's B* from the measured E.
    ModelPrediction(Prediction),
    /// The measured crossing lies left of the prediction: costs the model does not charge.
    LeftOfPrediction,
}

impl Finding {
    /// The finding as one line, in the sweep axis's terms.
    pub fn text(&self, axis: Axis) -> String {
        let (symbol, unit) = (axis.symbol(), axis.unit());
        match self {
            Finding::MeasuredCrossing {
                at: Some(b),
                interval: Some((lo, hi)),
            } => format!(
                "Measured crossing: {symbol} = {b:.1} {unit} (interpolated; {lo:.1}–{hi:.1} within the repeats' spread)"
            ),
            Finding::MeasuredCrossing { at: Some(b), .. } => {
                format!("Measured crossing: {symbol} = {b:.1} {unit} (interpolated)")
            }
            Finding::MeasuredCrossing { at: None, .. } => {
                "Measured crossing: no crossing inside the swept range".to_string()
            }
            Finding::GoodputCrossing { slo, at: Some(b), .. } => {
                format!("Goodput crossing ({slo}): {symbol} = {b:.1} {unit} (interpolated)")
            }
            Finding::GoodputCrossing {
                slo,
                at: None,
                plain_met_objectives: true,
            } => format!("Goodput crossing ({slo}): no crossing inside the swept range"),
            Finding::GoodputCrossing { slo, .. } => {
                format!("Goodput crossing ({slo}): the plain arm met the objectives at no point")
            }
            Finding::ModelPrediction(p) => format!(
                "Model prediction: B* = {:.1}{} from measured E = {:.3} (k = {}, {}, c = {}, ridge T* = {})",
                p.break_even_batch,
                if axis.is_concurrency() {
                    ""
                } else {
                    " concurrent requests (a batch size, not a rate)"
                },
                p.measured_e,
                p.k,
                p.draft_tokens_phrase(),
                p.costs.draft_cost,
                p.costs.ridge_tokens
            ),
            Finding::LeftOfPrediction => format!(
                "The measured crossing is left of the prediction: costs the model does not charge ({}).",
                UNCHARGED_COSTS.join("; ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a crossing the measured side bounds the calibrated error: paying at 1 and 4
    /// puts B* above 4, so a calibrated 2.4 is at least 40 % low; losing from 1 puts it below
    /// 1; a calibrated B* on the measured side says nothing.
    #[test]
    fn without_a_crossing_the_measured_side_bounds_the_calibrated_error() {
        let row = |c: u64, spec: f64| SweepRow {
            spec_output_tokens_per_s: Some(spec),
            base_output_tokens_per_s: Some(100.0),
            ..SweepRow::at(Level::Concurrency(c))
        };
        let pays = PairTable::new(vec![row(1, 180.0), row(4, 120.0)], None);
        assert_eq!(
            pays.calibrated_bound(2.4),
            "; measured: speculation pays at every level up to 4, so B* > 4 and the calibrated model is at least 40 % low"
        );
        assert_eq!(pays.calibrated_bound(6.0), "; no measured crossing to hold it to");
        let loses = PairTable::new(vec![row(2, 90.0), row(4, 80.0)], None);
        assert_eq!(
            loses.calibrated_bound(3.0),
            "; measured: speculation loses from the lowest level, 2, so B* < 2 and the calibrated model is at least 50 % high"
        );
    }

    #[test]
    fn repeats_settle_when_their_range_is_within_the_spread() {
        // Three runs within 2 % of their median: settled at 3 %, not at 1 %.
        assert!(repeats_settled(&[14_600.0, 14_750.0, 14_400.0], 0.03));
        assert!(!repeats_settled(&[14_600.0, 14_750.0, 14_400.0], 0.01));
        // One disturbed run (−10 %) keeps the point repeating.
        assert!(!repeats_settled(&[14_600.0, 13_150.0, 14_700.0], 0.03));
        // Nothing measured, or no runs: more runs would not change it.
        assert!(repeats_settled(&[0.0, 0.0, 0.0], 0.03));
        assert!(repeats_settled(&[], 0.03));
    }

    #[test]
    fn a_rate_sweep_compares_median_latency() {
        // base ÷ spec median E2E: 2.0 at 4 req/s, 0.5 at 16: crossing at 4 + 12 · 1 / 1.5 = 12.
        let rows = [(4.0, 40.0, 80.0), (16.0, 200.0, 100.0)].map(|(rate, s, b)| SweepRow {
            spec_median_e2el_ms: Some(s),
            base_median_e2el_ms: Some(b),
            spec_output_tokens_per_s: Some(1000.0),
            base_output_tokens_per_s: Some(1000.0),
            ..SweepRow::at(Level::Rate(rate))
        });
        let t = PairTable::new(rows.to_vec(), None);
        assert_eq!(t.axis, Axis::RequestRate);
        assert_eq!(t.rows[0].ratio(), Some(2.0));
        assert!((t.crossing.unwrap() - 12.0).abs() < 1e-9);
        // A slower speculative repeat lowers the ratio: the bounds swap the arms' roles.
        let spread = t.clone().with_spreads(&[(Arm::Spec, Level::Rate(4.0), 38.0, 50.0)]);
        assert_eq!(spread.rows[0].ratio_bounds(), Some((80.0 / 50.0, 80.0 / 38.0)));
        let text = t.render();
        assert!(
            text.starts_with("Rate (req/s)   spec E2EL p50 ms   base E2EL p50 ms   speedup   verdict\n"),
            "{text}"
        );
        assert!(
            text.contains("Measured crossing: λ* = 12.0 requests/s (interpolated)"),
            "{text}"
        );
        // The file names the axis and the level; a concurrency sweep's older files still read.
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["axis"], "request_rate");
        assert_eq!(json["rows"][0]["level"], 4.0);
        assert_eq!(json["rows"][0]["axis"], "request_rate");
        let old: PairTable = serde_json::from_value(serde_json::json!({
            "rows": [{"concurrency": 8.0, "spec_output_tokens_per_s": 2.0, "base_output_tokens_per_s": 1.0}],
            "crossing": null, "prediction": null
        }))
        .unwrap();
        assert_eq!(
            (old.axis, old.rows[0].level, old.rows[0].ratio()),
            (Axis::Concurrency, 8.0, Some(2.0))
        );
        assert_eq!(Level::parse_tag("r2.5"), Some(Level::Rate(2.5)));
        assert_eq!(Level::Rate(2.5).tag(), "r2.5");
    }

    #[test]
    fn crossing_and_prediction() {
        let rows =
            [(64.0, 1300.0, 1000.0), (256.0, 1800.0, 2000.0), (128.0, 1500.0, 1400.0)].map(|(c, s, b)| SweepRow {
                spec_output_tokens_per_s: Some(s),
                base_output_tokens_per_s: Some(b),
                ..SweepRow::at(Level::Concurrency(c as u64))
            });
        let pred = Prediction::new(
            2.533,
            3,
            None,
            Costs {
                draft_cost: 0.0,
                ridge_tokens: 295.0,
            },
        );
        let t = PairTable::new(rows.to_vec(), Some(pred));
        assert_eq!(t.rows[1].level, 128.0);
        let r128 = 1500.0 / 1400.0;
        let want = 128.0 + 128.0 * (r128 - 1.0) / (r128 - 0.9);
        assert!((t.crossing.unwrap() - want).abs() < 1e-9);
        let text = t.render();
        assert!(text.contains("Measured crossing: B* = "), "{text}");
        assert!(
            !text.contains("left of the prediction"),
            "181 against 186 is within 5 %: no story to tell\n{text}"
        );
        let far = Prediction::new(3.2, 3, None, pred.costs);
        assert!(far.break_even_batch > t.crossing.unwrap() / 0.95);
        let text = PairTable::new(rows.to_vec(), Some(far)).render();
        assert!(text.contains("left of the prediction"), "{text}");
        let none = PairTable::new(
            vec![SweepRow {
                spec_output_tokens_per_s: Some(2.0),
                ..SweepRow::at(Level::Concurrency(1))
            }],
            None,
        );
        assert!(none.render().contains("no crossing inside the swept range"));
    }

    /// Speculation lowers TPOT, so under a TPOT objective it can keep paying past the raw
    /// crossing: the goodput ratio gets its own crossing, from the points' `request_goodput`.
    #[test]
    fn goodput_has_its_own_ratio_and_crossing() {
        let point = |tokens: f64, goodput: f64| {
            let mut r = RunResult {
                steady_output_throughput: Some(tokens),
                request_goodput: Some(goodput),
                config: serde_json::from_value(serde_json::json!({
                    "urls": [], "endpoint": "chat", "model": "m", "stream": true, "concurrency": 1,
                    "request_rate": null, "arrival": "poisson", "burstiness": 1.0, "num_prompts": 1,
                    "duration_s": null, "warmup": 0, "seed": 0, "dataset": "synthetic",
                    "dataset_path": null, "categories": [], "input_tokens": 8, "input_tokens_stddev": 0.0,
                    "output_tokens": 8, "output_tokens_stddev": 0.0, "temperature": 0.0,
                    "metrics_endpoints": [], "scrape_interval_s": 1.0, "timeout_s": 600.0,
                    "percentiles": [99.0], "header_names": [], "api_key_set": false,
                    "goodput": {"tpot": 20.0}
                }))
                .unwrap(),
                ..RunResult::default()
            };
            r.output_throughput = Some(tokens);
            r
        };
        let (s1, b1, s2, b2, s3, b3) = (
            point(300.0, 2.0),
            point(100.0, 1.0),
            point(900.0, 6.0),
            point(1000.0, 4.0),
            point(1200.0, 2.0),
            point(2000.0, 3.0),
        );
        let costs = Costs::H100_FREE_DRAFTS;
        let t = PairTable::from_points(
            &[
                (Arm::Spec, Level::Concurrency(1), &s1),
                (Arm::Base, Level::Concurrency(1), &b1),
                (Arm::Spec, Level::Concurrency(64), &s2),
                (Arm::Base, Level::Concurrency(64), &b2),
                (Arm::Spec, Level::Concurrency(128), &s3),
                (Arm::Base, Level::Concurrency(128), &b3),
            ],
            costs,
        );
        assert_eq!(t.goodput_slo.as_deref(), Some("tpot:20"));
        // Raw: 3.0, 0.9 (crossing between 1 and 64); goodput: 2.0, 1.5, 0.667 (between 64 and 128).
        let raw = t.crossing.unwrap();
        assert!((raw - (1.0 + 63.0 * 2.0 / 2.1)).abs() < 1e-9, "{raw}");
        let good = t.goodput_crossing.unwrap();
        assert!((good - (64.0 + 64.0 * 0.5 / (1.5 - 2.0 / 3.0))).abs() < 1e-9, "{good}");
        let text = t.render();
        assert!(
            text.contains("Goodput (completed requests/s within tpot:20):"),
            "{text}"
        );
        assert!(text.contains("Goodput crossing (tpot:20): B* = 102.4"), "{text}");
        // The spreads keep the goodput figures.
        let spread = t
            .clone()
            .with_spreads(&[(Arm::Spec, Level::Concurrency(64), 800.0, 950.0)]);
        assert_eq!(
            (spread.goodput_crossing, spread.goodput_slo),
            (t.goodput_crossing, t.goodput_slo)
        );
        // A point counted under other objectives (an earlier run in the folder): no comparison.
        let mut other = b3.clone();
        if let Some(c) = other.config.as_mut() {
            c.goodput.insert("tpot".into(), 50.0);
        }
        let mixed = PairTable::from_points(
            &[
                (Arm::Spec, Level::Concurrency(1), &s1),
                (Arm::Base, Level::Concurrency(1), &b1),
                (Arm::Base, Level::Concurrency(128), &other),
            ],
            costs,
        );
        assert_eq!((mixed.goodput_slo, mixed.goodput_crossing), (None, None));
        assert!(mixed
            .rows
            .iter()
            .all(|r| r.spec_goodput.is_none() && r.base_goodput.is_none()));
    }

    #[test]
    fn the_prediction_pools_every_spec_point_s_counts() {
        let point = |drafts: u64, accepted: u64, tokens: f64| {
            let mut r = RunResult {
                spec_decode_acceptance_length: Some(1.0 + accepted as f64 / drafts as f64),
                spec_decode_per_position_acceptance_rates: Some(vec![0.8, 0.6, 0.4]),
                spec_decode_num_drafts: Some(drafts),
                spec_decode_draft_tokens: Some(drafts * 3),
                spec_decode_accepted_tokens: Some(accepted),
                steady_output_throughput: Some(tokens),
                ..RunResult::default()
            };
            r.output_throughput = Some(tokens);
            r
        };
        // A short first point (E = 3.0 from 10 drafts) and a long one (E = 2.5 from 990).
        let (low, high) = (point(10, 20, 100.0), point(990, 1485, 1000.0));
        let costs = Costs {
            draft_cost: 0.0,
            ridge_tokens: 295.0,
        };
        let t = PairTable::from_points(
            &[
                (Arm::Spec, Level::Concurrency(1), &low),
                (Arm::Spec, Level::Concurrency(64), &high),
            ],
            costs,
        );
        let p = t.prediction.unwrap();
        assert!(
            (p.measured_e - (1.0 + 1505.0 / 1000.0)).abs() < 1e-12,
            "{}",
            p.measured_e
        );
        assert_eq!(p.k, 3);
        // Without counted drafts, the lowest point's own E.
        let mut bare = low.clone();
        bare.spec_decode_num_drafts = None;
        let t = PairTable::from_points(&[(Arm::Spec, Level::Concurrency(1), &bare)], costs);
        assert_eq!(t.prediction.unwrap().measured_e, 3.0);
    }

    #[test]
    fn repeats_give_the_crossing_an_interval() {
        let rows =
            [(64.0, 1300.0, 1000.0), (128.0, 1500.0, 1400.0), (256.0, 1800.0, 2000.0)].map(|(c, s, b)| SweepRow {
                spec_output_tokens_per_s: Some(s),
                base_output_tokens_per_s: Some(b),
                ..SweepRow::at(Level::Concurrency(c as u64))
            });
        let t = PairTable::new(rows.to_vec(), None);
        assert_eq!(t.crossing_interval, None, "points run once: no interval");
        let t = t.with_spreads(&[
            (Arm::Spec, Level::Concurrency(128), 1450.0, 1550.0),
            (Arm::Base, Level::Concurrency(128), 1380.0, 1420.0),
        ]);
        let (lo, hi) = t.crossing_interval.expect("an interval");
        let b = t.crossing.unwrap();
        assert!(lo < b && b < hi, "{lo} < {b} < {hi}");
        // Lowest ratio at 128: 1450 / 1420; highest: 1550 / 1380.
        let r_lo = 1450.0 / 1420.0;
        assert!((lo - (128.0 + 128.0 * (r_lo - 1.0) / (r_lo - 0.9))).abs() < 1e-9);
        assert!(t.render().contains("within the repeats' spread"), "{}", t.render());
    }
}
