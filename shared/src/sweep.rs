//! The break-even sweep's table: both arms' output-token throughput by concurrency, their ratio
//! and verdict, the measured crossing B*, and the model's prediction beside it.

use serde::{Deserialize, Serialize};

use crate::model::{break_even_batch, sweep_crossing, Costs, RatioPoint, UNCHARGED_COSTS};
use crate::results::RunResult;

/// The two arms of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    /// The speculative server.
    Spec,
    /// The plain server.
    Base,
}

impl Arm {
    pub fn name(self) -> &'static str {
        match self {
            Arm::Spec => "spec",
            Arm::Base => "base",
        }
    }

    /// The run id of one point (`spec-c16`), also its folder and file stem.
    pub fn point_id(self, concurrency: u64) -> String {
        format!("{}-c{concurrency}", self.name())
    }

    /// Arm and concurrency of a `spec-c<N>.json` / `base-c<N>.json` name.
    pub fn parse_point_name(name: &str) -> Option<(Arm, u64)> {
        let stem = name.strip_suffix(".json")?;
        let (arm, c) = if let Some(c) = stem.strip_prefix("spec-c") {
            (Arm::Spec, c)
        } else {
            (Arm::Base, stem.strip_prefix("base-c")?)
        };
        c.parse().ok().map(|c| (arm, c))
    }
}

/// One concurrency of the sweep; an arm that was not run (or failed) is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    pub concurrency: f64,
    /// Output tokens per second: the steady window's, else the whole run's; the median of the
    /// repeats when the point was run several times.
    pub spec_output_tokens_per_s: Option<f64>,
    pub base_output_tokens_per_s: Option<f64>,
    /// The repeats' (min, max), when the point was run more than once.
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
}

/// What a sweep compares of a run: output tokens per second in its steady window, else over
/// the whole run (a `vllm bench serve` file, or a run that never got steady).
pub fn throughput(result: &RunResult) -> Option<f64> {
    result.steady_output_throughput.or(result.output_throughput)
}

impl SweepRow {
    /// An empty row at `concurrency`.
    pub fn at(concurrency: f64) -> SweepRow {
        SweepRow {
            concurrency,
            spec_output_tokens_per_s: None,
            base_output_tokens_per_s: None,
            spec_spread: None,
            base_spread: None,
            spec_goodput: None,
            base_goodput: None,
        }
    }

    /// spec ÷ base goodput; `None` unless both arms measured one and the plain arm's is not 0.
    pub fn goodput_ratio(&self) -> Option<f64> {
        match (self.spec_goodput, self.base_goodput) {
            (Some(s), Some(b)) if b > 0.0 => Some(s / b),
            _ => None,
        }
    }

    /// spec ÷ base output throughput.
    pub fn ratio(&self) -> Option<f64> {
        match (self.spec_output_tokens_per_s, self.base_output_tokens_per_s) {
            (Some(s), Some(b)) if b > 0.0 => Some(s / b),
            _ => None,
        }
    }

    /// The lowest and highest ratio the repeats allow (spec's worst over base's best, and the
    /// other way round); the ratio itself for points run once.
    pub fn ratio_bounds(&self) -> Option<(f64, f64)> {
        let (s, b) = (self.spec_output_tokens_per_s?, self.base_output_tokens_per_s?);
        let (s_lo, s_hi) = self.spec_spread.unwrap_or((s, s));
        let (b_lo, b_hi) = self.base_spread.unwrap_or((b, b));
        (b_lo > 0.0).then(|| (s_lo / b_hi, s_hi / b_lo))
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
        crate::model::draft_tokens_phrase(self.k, self.draft_tokens_measured.then_some(self.draft_tokens))
    }
}

/// The whole sweep result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepTable {
    pub rows: Vec<SweepRow>,
    /// Interpolated concurrency where spec/base falls through 1.0.
    pub crossing: Option<f64>,
    /// Where the crossing can lie given the repeats' spread: the crossing of the lowest
    /// ratios to that of the highest (only when points were repeated and both exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crossing_interval: Option<(f64, f64)>,
    pub prediction: Option<Prediction>,
    /// The `--goodput` objectives the points counted (`ttft:500 tpot:50`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_slo: Option<String>,
    /// Interpolated concurrency where spec/base goodput falls through 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_crossing: Option<f64>,
}

impl SweepTable {
    /// The table of measured points. The prediction uses E pooled over every spec point
    /// (1 + Σaccepted ÷ Σdrafts: acceptance does not depend on the batch, and the pool holds
    /// far more steps than any one point), with k from the lowest-concurrency spec point that
    /// names it; that point's own E when no point counted drafts.
    pub fn from_points(points: &[(Arm, u64, &RunResult)], costs: Costs) -> SweepTable {
        let mut rows: Vec<SweepRow> = Vec::new();
        for (arm, c, result) in points {
            let row = match rows.iter().position(|r| r.concurrency == *c as f64) {
                Some(i) => &mut rows[i],
                None => {
                    rows.push(SweepRow::at(*c as f64));
                    rows.last_mut().expect("just pushed")
                }
            };
            match arm {
                Arm::Spec => {
                    row.spec_output_tokens_per_s = throughput(result);
                    row.spec_goodput = result.request_goodput;
                }
                Arm::Base => {
                    row.base_output_tokens_per_s = throughput(result);
                    row.base_goodput = result.request_goodput;
                }
            }
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
        let mut spec: Vec<&(Arm, u64, &RunResult)> = points.iter().filter(|p| p.0 == Arm::Spec).collect();
        spec.sort_by_key(|p| p.1);
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
            if drafts > 0.0 {
                let per_draft = if all_draft_tokens {
                    Some(draft_tokens / drafts)
                } else {
                    m.draft_tokens
                };
                Prediction::new(1.0 + accepted / drafts, m.k, per_draft, costs)
            } else {
                Prediction::new(m.e, m.k, m.draft_tokens, costs)
            }
        });
        SweepTable {
            goodput_slo,
            ..SweepTable::new(rows, prediction)
        }
    }

    pub fn new(mut rows: Vec<SweepRow>, prediction: Option<Prediction>) -> SweepTable {
        rows.sort_by(|a, b| a.concurrency.total_cmp(&b.concurrency));
        let points: Vec<RatioPoint> = rows
            .iter()
            .filter_map(|r| {
                r.ratio().map(|ratio| RatioPoint {
                    concurrency: r.concurrency,
                    ratio,
                })
            })
            .collect();
        let bounds = |pick: fn((f64, f64)) -> f64| -> Vec<RatioPoint> {
            rows.iter()
                .filter_map(|r| {
                    r.ratio_bounds().map(|b| RatioPoint {
                        concurrency: r.concurrency,
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
                    concurrency: r.concurrency,
                    ratio,
                })
            })
            .collect();
        SweepTable {
            crossing: sweep_crossing(&points),
            crossing_interval,
            goodput_crossing: sweep_crossing(&goodput_points),
            goodput_slo: None,
            rows,
            prediction,
        }
    }

    /// The table with each point's repeats' spread, `(arm, concurrency, min, max)`.
    pub fn with_spreads(self, spreads: &[(Arm, u64, f64, f64)]) -> SweepTable {
        let mut rows = self.rows;
        for (arm, c, lo, hi) in spreads {
            if let Some(row) = rows.iter_mut().find(|r| r.concurrency == *c as f64) {
                match arm {
                    Arm::Spec => row.spec_spread = Some((*lo, *hi)),
                    Arm::Base => row.base_spread = Some((*lo, *hi)),
                }
            }
        }
        SweepTable {
            goodput_slo: self.goodput_slo,
            ..SweepTable::new(rows, self.prediction)
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

    /// The lines under the table: the measured crossing, the model's prediction, and why they
    /// differ when the prediction lies outside what the measurement allows (its interval from
    /// the repeats, else 5 %).
    pub fn findings(&self) -> Vec<String> {
        let mut lines = vec![match (self.crossing, self.crossing_interval) {
            (Some(b), Some((lo, hi))) => format!(
                "Measured crossing: B* = {b:.1} concurrent requests (interpolated; {lo:.1}–{hi:.1} within the repeats' spread)"
            ),
            (Some(b), None) => format!("Measured crossing: B* = {b:.1} concurrent requests (interpolated)"),
            (None, _) => "Measured crossing: no crossing inside the swept range".to_string(),
        }];
        if let Some(slo) = &self.goodput_slo {
            let any = self.rows.iter().any(|r| r.goodput_ratio().is_some());
            lines.push(match self.goodput_crossing {
                Some(b) => format!("Goodput crossing ({slo}): B* = {b:.1} concurrent requests (interpolated)"),
                None if any => format!("Goodput crossing ({slo}): no crossing inside the swept range"),
                None => format!("Goodput crossing ({slo}): the plain arm met the objectives at no point"),
            });
        }
        if let Some(p) = &self.prediction {
            lines.push(format!(
                "Model prediction: B* = {:.1} from measured E = {:.3} (k = {}, {}, c = {}, ridge T* = {})",
                p.break_even_batch,
                p.measured_e,
                p.k,
                p.draft_tokens_phrase(),
                p.costs.draft_cost,
                p.costs.ridge_tokens
            ));
            let beyond = match (self.crossing, self.crossing_interval) {
                (Some(_), Some((_, hi))) => p.break_even_batch > hi,
                (Some(b), None) => b < p.break_even_batch * 0.95,
                (None, _) => false,
            };
            if beyond {
                lines.push(format!(
                    "The measured crossing is left of the prediction: costs the model does not charge ({}).",
                    UNCHARGED_COSTS.join("; ")
                ));
            }
        }
        lines
    }

    /// The console table, crossing and prediction.
    pub fn render(&self) -> String {
        let cell = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.1}"));
        let mut out = String::from("Concurrency   spec out tok/s   base out tok/s    ratio   verdict\n");
        for r in &self.rows {
            let (ratio, verdict) = SweepTable::verdict(r);
            out.push_str(&format!(
                "{:>11}   {:>14}   {:>14}   {:>6}   {verdict}\n",
                r.concurrency,
                cell(r.spec_output_tokens_per_s),
                cell(r.base_output_tokens_per_s),
                ratio
            ));
        }
        if let Some(slo) = &self.goodput_slo {
            let cell = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.2}"));
            out.push_str(&format!(
                "\nGoodput (completed requests/s within {slo}):\nConcurrency   spec req/s   base req/s    ratio\n"
            ));
            for r in &self.rows {
                out.push_str(&format!(
                    "{:>11}   {:>10}   {:>10}   {:>6}\n",
                    r.concurrency,
                    cell(r.spec_goodput),
                    cell(r.base_goodput),
                    r.goodput_ratio().map_or_else(|| "—".to_string(), |x| format!("{x:.3}"))
                ));
            }
        }
        for (i, line) in self.findings().iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { "" });
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossing_and_prediction() {
        let rows =
            [(64.0, 1300.0, 1000.0), (256.0, 1800.0, 2000.0), (128.0, 1500.0, 1400.0)].map(|(c, s, b)| SweepRow {
                spec_output_tokens_per_s: Some(s),
                base_output_tokens_per_s: Some(b),
                ..SweepRow::at(c)
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
        let t = SweepTable::new(rows.to_vec(), Some(pred));
        assert_eq!(t.rows[1].concurrency, 128.0);
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
        let text = SweepTable::new(rows.to_vec(), Some(far)).render();
        assert!(text.contains("left of the prediction"), "{text}");
        let none = SweepTable::new(
            vec![SweepRow {
                spec_output_tokens_per_s: Some(2.0),
                ..SweepRow::at(1.0)
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
        let t = SweepTable::from_points(
            &[
                (Arm::Spec, 1, &s1),
                (Arm::Base, 1, &b1),
                (Arm::Spec, 64, &s2),
                (Arm::Base, 64, &b2),
                (Arm::Spec, 128, &s3),
                (Arm::Base, 128, &b3),
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
        let spread = t.clone().with_spreads(&[(Arm::Spec, 64, 800.0, 950.0)]);
        assert_eq!(
            (spread.goodput_crossing, spread.goodput_slo),
            (t.goodput_crossing, t.goodput_slo)
        );
        // A point counted under other objectives (an earlier run in the folder): no comparison.
        let mut other = b3.clone();
        if let Some(c) = other.config.as_mut() {
            c.goodput.insert("tpot".into(), 50.0);
        }
        let mixed = SweepTable::from_points(
            &[(Arm::Spec, 1, &s1), (Arm::Base, 1, &b1), (Arm::Base, 128, &other)],
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
        let t = SweepTable::from_points(&[(Arm::Spec, 1, &low), (Arm::Spec, 64, &high)], costs);
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
        let t = SweepTable::from_points(&[(Arm::Spec, 1, &bare)], costs);
        assert_eq!(t.prediction.unwrap().measured_e, 3.0);
    }

    #[test]
    fn repeats_give_the_crossing_an_interval() {
        let rows =
            [(64.0, 1300.0, 1000.0), (128.0, 1500.0, 1400.0), (256.0, 1800.0, 2000.0)].map(|(c, s, b)| SweepRow {
                spec_output_tokens_per_s: Some(s),
                base_output_tokens_per_s: Some(b),
                ..SweepRow::at(c)
            });
        let t = SweepTable::new(rows.to_vec(), None);
        assert_eq!(t.crossing_interval, None, "points run once: no interval");
        let t = t.with_spreads(&[(Arm::Spec, 128, 1450.0, 1550.0), (Arm::Base, 128, 1380.0, 1420.0)]);
        let (lo, hi) = t.crossing_interval.expect("an interval");
        let b = t.crossing.unwrap();
        assert!(lo < b && b < hi, "{lo} < {b} < {hi}");
        // Lowest ratio at 128: 1450 / 1420; highest: 1550 / 1380.
        let r_lo = 1450.0 / 1420.0;
        assert!((lo - (128.0 + 128.0 * (r_lo - 1.0) / (r_lo - 0.9))).abs() < 1e-9);
        assert!(t.render().contains("within the repeats' spread"), "{}", t.render());
    }
}
