//! Run-level aggregation of per-request spec-decode records (docs/METRICS.md §2.6): AIPerf's metrics
//! with avg/min/max/percentiles/std, the derived totals, the pooled histogram, and their console
//! rows, histogram line, JSON and CSV exports.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::figures::acceptance_length_of_counts;
use crate::request::counting::PastEndTally;
use crate::request::per_request::{PartialSpecRecord, SpecRecord};
use crate::sample::Sample;

/// Percentiles exported for every per-request metric.
pub const EXPORT_PERCENTILES: [u32; 9] = [1, 5, 10, 25, 50, 75, 90, 95, 99];

/// Statistics of one per-request metric, keys in AIPerf's export order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricStats {
    pub unit: String,
    pub avg: f64,
    pub p1: f64,
    pub p5: f64,
    pub p10: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    /// Population standard deviation.
    pub std: f64,
    pub count: u64,
    pub sum: f64,
}

/// Linear-interpolation percentile of sorted values (in `sample.rs`, where samples keep them).
pub use crate::sample::percentile;

/// A distribution as equal-width bins, for charts: a few dozen numbers however many values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bins {
    /// Lower edge of the first bin.
    pub lo: f64,
    /// Width of every bin (> 0).
    pub width: f64,
    pub counts: Vec<u64>,
}

impl Bins {
    /// Bins over the finite values: ⌈√n⌉ of them, at most `max_bins`; `None` when no value is
    /// finite. Every finite value lands in exactly one bin (the top edge is inclusive).
    pub fn from_values(values: &[f64], max_bins: usize) -> Option<Bins> {
        Bins::from_counted(values.iter().map(|v| (*v, 1)), max_bins)
    }

    /// [`Bins::from_values`] of values given with their counts (`(value, count)`, e.g. the
    /// buckets of a histogram): the cost follows the distinct values, not their total count.
    pub fn from_counted<I>(values: I, max_bins: usize) -> Option<Bins>
    where
        I: Iterator<Item = (f64, u64)> + Clone,
    {
        let finite = || values.clone().filter(|(v, c)| v.is_finite() && *c > 0);
        let (lo, hi, n) = finite().fold((f64::INFINITY, f64::NEG_INFINITY, 0u64), |(lo, hi, n), (v, c)| {
            (lo.min(v), hi.max(v), n + c)
        });
        if n == 0 {
            return None;
        }
        let bins = ((n as f64).sqrt().ceil() as usize).clamp(1, max_bins.max(1));
        let span = hi - lo;
        let width = if span > 0.0 {
            span / bins as f64
        } else {
            (lo.abs() * 0.01).max(1e-9)
        };
        let mut counts = vec![0u64; bins];
        for (v, c) in finite() {
            counts[(((v - lo) / width) as usize).min(bins - 1)] += c;
        }
        Some(Bins { lo, width, counts })
    }

    /// Bins of a folded sample.
    pub fn of(sample: &Sample, max_bins: usize) -> Option<Bins> {
        Bins::from_counted(sample.counted().into_iter(), max_bins)
    }

    /// An integer histogram `{j: count}` as unit-wide bins centred on 0, 1, … max j.
    pub fn from_counts(hist: &BTreeMap<u32, u64>) -> Option<Bins> {
        let max = *hist.keys().max()?;
        let mut counts = vec![0u64; max as usize + 1];
        for (j, c) in hist {
            counts[*j as usize] += c;
        }
        Some(Bins {
            lo: -0.5,
            width: 1.0,
            counts,
        })
    }

    /// Values counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

impl MetricStats {
    /// Statistics of `values` (any order); `None` when empty.
    pub fn from_values(unit: &str, values: Vec<f64>) -> Option<MetricStats> {
        MetricStats::from_sample(unit, &Sample::of(values))
    }

    /// Statistics of a folded sample; `None` when empty.
    pub fn from_sample(unit: &str, sample: &Sample) -> Option<MetricStats> {
        let m = sample.moments()?;
        let qs = EXPORT_PERCENTILES.map(f64::from);
        let p = sample.percentiles(&qs);
        Some(MetricStats {
            unit: unit.to_string(),
            avg: m.mean,
            p1: p[0],
            p5: p[1],
            p10: p[2],
            p25: p[3],
            p50: p[4],
            p75: p[5],
            p90: p[6],
            p95: p[7],
            p99: p[8],
            min: m.min,
            max: m.max,
            std: m.std,
            count: sample.len(),
            sum: m.sum,
        })
    }

    /// The percentile fields in [`EXPORT_PERCENTILES`] order.
    pub fn percentiles(&self) -> [f64; 9] {
        [
            self.p1, self.p5, self.p10, self.p25, self.p50, self.p75, self.p90, self.p95, self.p99,
        ]
    }
}

/// A derived metric: one value and its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DerivedValue {
    pub unit: String,
    pub avg: f64,
}

/// Folds records one at a time; [`SpecAggregator::summary`] computes the run's figures.
#[derive(Debug, Clone, Default)]
pub struct SpecAggregator {
    acceptance_length: Sample,
    draft_acceptance_rate_pct: Sample,
    accepted_per_verified: Sample,
    steps: Sample,
    accepted: Sample,
    drafted: Sample,
    records: u64,
    zero_step_requests: u64,
    total_steps: u64,
    total_accepted: u64,
    total_drafted: u64,
    pooled: BTreeMap<u32, u64>,
    /// The largest k the records named.
    num_spec_tokens: Option<u32>,
    /// Released engines' partial records: TensorRT-LLM's per-request lengths, llama.cpp's
    /// per-request rates (%) and their summed accepted and drafted tokens.
    reported_length: Sample,
    partial_rate_pct: Sample,
    partial_accepted: u64,
    partial_drafted: u64,
    partial_records: u64,
    /// The engines the records came from.
    engines: std::collections::BTreeSet<Engine>,
    /// The open pull requests whose shapes some records followed.
    unmerged_prs: std::collections::BTreeSet<&'static str>,
    /// Requests counting more tokens than they emitted.
    past_end: PastEndTally,
}

/// The run's spec-decode figures, exported under AIPerf's names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecSummary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_acceptance_length: Option<MetricStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_draft_acceptance_rate: Option<MetricStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_accepted_per_verified: Option<MetricStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_steps: Option<MetricStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_accepted_draft_tokens: Option<MetricStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_draft_tokens: Option<MetricStats>,
    /// `1 + Σaccepted / Σsteps`; absent when Σsteps = 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_token_weighted_acceptance_length: Option<DerivedValue>,
    /// `Σaccepted / Σdrafted × 100`; absent when Σdrafted = 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_overall_draft_acceptance_rate: Option<DerivedValue>,
    pub spec_decode_zero_step_requests: DerivedValue,
    pub total_spec_decode_steps: DerivedValue,
    pub total_accepted_draft_tokens: DerivedValue,
    pub total_draft_tokens: DerivedValue,
    /// `{j: steps that accepted exactly j}` summed over records; counts sum to Σsteps.
    pub pooled_spec_decode_acceptance_histogram: BTreeMap<u32, u64>,
    /// TensorRT-LLM's per-request `avg_decoded_tokens_per_iter` (a length without counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode_reported_acceptance_length: Option<MetricStats>,
    /// What the figures are, where an engine gives less than vLLM (one sentence each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn derived(unit: &str, avg: f64) -> DerivedValue {
    DerivedValue {
        unit: unit.to_string(),
        avg,
    }
}

impl SpecAggregator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold in a released engine's partial record of one successful request.
    pub fn push_partial(&mut self, r: &PartialSpecRecord) {
        self.records += 1;
        self.partial_records += 1;
        self.engines.insert(r.engine);
        if let Some(length) = r.mean_acceptance_length {
            self.reported_length.push(length);
        }
        if let (Some(accepted), Some(drafted)) = (r.num_accepted_draft_tokens, r.num_draft_tokens) {
            if drafted > 0 {
                self.partial_rate_pct.push(accepted as f64 / drafted as f64 * 100.0);
            }
            self.partial_accepted = self.partial_accepted.saturating_add(accepted);
            self.partial_drafted = self.partial_drafted.saturating_add(drafted);
        }
    }

    /// Fold in the record of one successful request.
    pub fn push(&mut self, r: &SpecRecord) {
        // Only the pull requests the adapters name: a record read back from a file cannot grow
        // the set.
        if let Some(pr) = r.unmerged_pr.as_deref() {
            if let Some(known) = crate::request::per_request::UNMERGED_PRS.iter().find(|k| **k == pr) {
                self.unmerged_prs.insert(known);
            }
        }
        self.records += 1;
        self.engines.insert(r.engine);
        self.num_spec_tokens = self.num_spec_tokens.max(r.num_spec_tokens);
        self.past_end.push(r);
        if r.num_spec_steps == 0 {
            self.zero_step_requests += 1;
            return;
        }
        let steps = r.num_spec_steps as f64;
        self.acceptance_length.push(r.mean_acceptance_length);
        self.draft_acceptance_rate_pct.push(r.draft_acceptance_rate * 100.0);
        self.accepted_per_verified
            .push((r.num_accepted_draft_tokens as f64 + steps) / (r.num_draft_tokens as f64 + steps));
        self.steps.push(steps);
        self.accepted.push(r.num_accepted_draft_tokens as f64);
        self.drafted.push(r.num_draft_tokens as f64);
        self.total_steps = self.total_steps.saturating_add(r.num_spec_steps);
        self.total_accepted = self.total_accepted.saturating_add(r.num_accepted_draft_tokens);
        self.total_drafted = self.total_drafted.saturating_add(r.num_draft_tokens);
        for (j, c) in &r.acceptance_histogram {
            let slot = self.pooled.entry(*j).or_default();
            *slot = slot.saturating_add(*c);
        }
    }

    /// Records folded in so far (zero-step ones included).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The summed steps (drafts), draft tokens and accepted tokens, when any full record was
    /// folded (partial records count no steps, so they cannot be set against the counters).
    pub fn totals(&self) -> Option<crate::run::notices::SpecTotals> {
        (self.records > self.partial_records).then_some(crate::run::notices::SpecTotals {
            drafts: self.total_steps,
            draft_tokens: self.total_drafted,
            accepted_tokens: self.total_accepted,
        })
    }

    /// k as the records name it (the largest seen).
    pub fn num_spec_tokens(&self) -> Option<u32> {
        self.num_spec_tokens
    }

    /// The run's figures; `None` when no request carried stats (then nothing is printed or
    /// exported about spec decode).
    /// The per-request acceptance-length distribution (requests that took steps).
    pub fn acceptance_length_bins(&self, max_bins: usize) -> Option<Bins> {
        Bins::of(&self.acceptance_length, max_bins)
    }

    /// One sentence per engine whose figures are not vLLM's, and one per unmerged shape read.
    fn notes(&self) -> Vec<String> {
        let sglang_exact = self.unmerged_prs.contains(crate::request::per_request::SGLANG_PR34814);
        let mut notes: Vec<String> = self
            .engines
            .iter()
            .filter_map(|e| match e {
                Engine::Sglang if sglang_exact => Some("SGLang (speculative_decoding_stats): steps are its verification steps and drafted tokens the verifier's own count, its ragged width included"),
                Engine::Sglang => Some("SGLang: drafted tokens are its configured verify steps × (draft tokens − 1), not measured; requests without details count as zero-step"),
                Engine::Trtllm if !self.reported_length.is_empty() => Some("TensorRT-LLM (released): only avg_decoded_tokens_per_iter per request, a length that may count the context-phase token; no counts, so no rate"),
                Engine::LlamaCpp if !self.reported_length.is_empty() => Some("llama.cpp family with mlx-vlm's draft_rounds: a length per request, (predicted_n − 1) ÷ draft_rounds (never steps from predicted_n − draft_n_accepted), in the reported-length row; a rate where draft_n_accepted does not exceed draft_n"),
                Engine::LlamaCpp => Some("llama.cpp: timings give drafted and accepted tokens but no steps: a rate, no length"),
                _ => None,
            })
            .map(str::to_string)
            .collect();
        notes.extend(self.unmerged_prs.iter().map(|pr| {
            format!("per-request stats follow {pr}, a pull request not merged when speclens read it: its fields may change before it merges")
        }));
        notes.extend(self.past_end.warnings());
        notes
    }

    pub fn summary(&self) -> Option<SpecSummary> {
        if self.records == 0 {
            return None;
        }
        let stats = MetricStats::from_sample;
        let rates = if self.draft_acceptance_rate_pct.is_empty() {
            &self.partial_rate_pct
        } else {
            &self.draft_acceptance_rate_pct
        };
        let (accepted, drafted) = if self.total_drafted > 0 {
            (self.total_accepted, self.total_drafted)
        } else {
            (self.partial_accepted, self.partial_drafted)
        };
        Some(SpecSummary {
            spec_decode_acceptance_length: stats("ratio", &self.acceptance_length),
            spec_decode_draft_acceptance_rate: stats("%", rates),
            spec_decode_accepted_per_verified: stats("ratio", &self.accepted_per_verified),
            spec_decode_steps: stats("count", &self.steps),
            spec_decode_accepted_draft_tokens: stats("tokens", &self.accepted),
            spec_decode_draft_tokens: stats("tokens", &self.drafted),
            spec_decode_token_weighted_acceptance_length: acceptance_length_of_counts(
                self.total_accepted,
                self.total_steps,
            )
            .map(|e| derived("ratio", e)),
            spec_decode_overall_draft_acceptance_rate: (drafted > 0)
                .then(|| derived("%", accepted as f64 / drafted as f64 * 100.0)),
            spec_decode_zero_step_requests: derived("requests", self.zero_step_requests as f64),
            total_spec_decode_steps: derived("count", self.total_steps as f64),
            total_accepted_draft_tokens: derived("tokens", accepted as f64),
            total_draft_tokens: derived("tokens", drafted as f64),
            pooled_spec_decode_acceptance_histogram: self.pooled.clone(),
            spec_decode_reported_acceptance_length: stats("ratio", &self.reported_length),
            notes: self.notes(),
        })
    }
}

/// `1234567.891` → `1,234,567.89` (Python's `,.2f`).
pub fn format_thousands(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let text = format!("{:.2}", v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, "00"));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if v < 0.0 && !text.trim_start_matches(['0', '.']).is_empty() {
        "-"
    } else {
        ""
    };
    format!("{sign}{grouped}.{frac}")
}

/// Console table columns after the metric name.
pub const CONSOLE_COLUMNS: [&str; 7] = ["avg", "min", "max", "p99", "p90", "p50", "std"];

/// One console row: the label and its seven cells.
pub type ConsoleRow = (String, [String; 7]);

impl SpecSummary {
    /// The console table's rows, in AIPerf's order ("Zero-Step Requests" only when non-zero).
    pub fn console_rows(&self) -> Vec<ConsoleRow> {
        let na = || "N/A".to_string();
        let per_request = |label: &str, s: &Option<MetricStats>| -> ConsoleRow {
            let cells = match s {
                Some(s) => [s.avg, s.min, s.max, s.p99, s.p90, s.p50, s.std].map(format_thousands),
                None => [(); 7].map(|_| na()),
            };
            (label.to_string(), cells)
        };
        let derived_row = |label: &str, v: Option<f64>| -> ConsoleRow {
            let mut cells = [(); 7].map(|_| na());
            if let Some(v) = v {
                cells[0] = format_thousands(v);
            }
            (label.to_string(), cells)
        };
        let mut rows = vec![
            per_request("Acceptance Length (ratio)", &self.spec_decode_acceptance_length),
            derived_row(
                "Token-Weighted Acceptance Length (ratio)",
                self.spec_decode_token_weighted_acceptance_length
                    .as_ref()
                    .map(|d| d.avg),
            ),
            per_request("Draft Acceptance Rate (%)", &self.spec_decode_draft_acceptance_rate),
            derived_row(
                "Overall Draft Acceptance Rate (%)",
                self.spec_decode_overall_draft_acceptance_rate.as_ref().map(|d| d.avg),
            ),
            per_request("Accepted per Verified (ratio)", &self.spec_decode_accepted_per_verified),
            per_request("Spec Decode Steps (count)", &self.spec_decode_steps),
        ];
        if self.spec_decode_zero_step_requests.avg > 0.0 {
            rows.push(derived_row(
                "Zero-Step Requests (requests)",
                Some(self.spec_decode_zero_step_requests.avg),
            ));
        }
        if self.spec_decode_reported_acceptance_length.is_some() {
            rows.push(per_request(
                "Reported Decoded Tokens per Iteration (ratio)",
                &self.spec_decode_reported_acceptance_length,
            ));
        }
        rows
    }

    /// Why the table's two acceptance lengths differ, when they do at the printed precision:
    /// AIPerf's per-request mean counts each request once, the token-weighted one pools every
    /// request's drafts as a server's counters do.
    pub fn two_lengths_note(&self) -> Option<String> {
        let mean = self.spec_decode_acceptance_length.as_ref()?.avg;
        let pooled = self.spec_decode_token_weighted_acceptance_length.as_ref()?.avg;
        let (mean_text, pooled_text) = (format_thousands(mean), format_thousands(pooled));
        (mean_text != pooled_text).then(|| {
            format!(
                "Acceptance Length {mean_text} is the mean of each request's own (every request counts once); the token-weighted {pooled_text} pools every request's drafts, as the server's counters do (the acceptance length of the other sections): they differ when requests that draft more accept {}",
                if pooled < mean { "less" } else { "more" }
            )
        })
    }

    /// `  Accepted drafts per step (% of steps):  0: 25%   1: 18%` — buckets 0..=min(max j, 7),
    /// every j ≥ 8 folded into `>=8`. `None` when no step was taken.
    pub fn histogram_line(&self) -> Option<String> {
        let hist = &self.pooled_spec_decode_acceptance_histogram;
        let total: u64 = hist.values().sum();
        let max_j = *hist.keys().next_back()?;
        if total == 0 {
            return None;
        }
        let pct = |count: u64| count as f64 / total as f64 * 100.0;
        let mut buckets: Vec<String> = (0..=max_j.min(7))
            .map(|j| format!("{j}: {:.0}%", pct(hist.get(&j).copied().unwrap_or(0))))
            .collect();
        if max_j >= 8 {
            let folded: u64 = hist.range(8..).map(|(_, c)| c).sum();
            buckets.push(format!(">=8: {:.0}%", pct(folded)));
        }
        Some(format!(
            "  Accepted drafts per step (% of steps):  {}",
            buckets.join("   ")
        ))
    }

    /// AIPerf-style CSV: per-request metric rows, a blank line, then `Metric,Value` rows.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n");
        let per_request = [
            ("Acceptance Length", &self.spec_decode_acceptance_length),
            ("Draft Acceptance Rate", &self.spec_decode_draft_acceptance_rate),
            ("Accepted per Verified", &self.spec_decode_accepted_per_verified),
            ("Spec Decode Steps", &self.spec_decode_steps),
            ("Accepted Draft Tokens", &self.spec_decode_accepted_draft_tokens),
            ("Draft Tokens", &self.spec_decode_draft_tokens),
        ];
        for (name, stats) in per_request {
            let Some(s) = stats else { continue };
            let mut cells = vec![csv_label(name, &s.unit)];
            cells.extend([s.avg, s.min, s.max, s.sum].iter().map(|v| format!("{v:.2}")));
            cells.extend(s.percentiles().iter().map(|v| format!("{v:.2}")));
            cells.push(format!("{:.2}", s.std));
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out.push_str("\nMetric,Value\n");
        let derived = [
            (
                "Token-Weighted Acceptance Length",
                self.spec_decode_token_weighted_acceptance_length.as_ref(),
            ),
            (
                "Overall Draft Acceptance Rate",
                self.spec_decode_overall_draft_acceptance_rate.as_ref(),
            ),
            ("Zero-Step Requests", Some(&self.spec_decode_zero_step_requests)),
            ("Total Spec Decode Steps", Some(&self.total_spec_decode_steps)),
            ("Total Accepted Draft Tokens", Some(&self.total_accepted_draft_tokens)),
            ("Total Draft Tokens", Some(&self.total_draft_tokens)),
        ];
        for (name, value) in derived {
            let Some(d) = value else { continue };
            let v = if d.avg.fract() == 0.0 && d.unit != "ratio" && d.unit != "%" {
                format!("{}", d.avg as u64)
            } else {
                format!("{:.2}", d.avg)
            };
            out.push_str(&format!("{},{v}\n", csv_label(name, &d.unit)));
        }
        out
    }
}

/// `header (unit)`, with the unit omitted for plain counts.
fn csv_label(name: &str, unit: &str) -> String {
    if unit == "count" || unit == "requests" {
        name.to_string()
    } else {
        format!("{name} ({unit})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;

    /// A record built from per-step acceptances the way vLLM computes its fields.
    fn record(per_step: &[u64], k: u64) -> SpecRecord {
        let steps = per_step.len() as u64;
        let accepted: u64 = per_step.iter().sum();
        let drafted = k * steps;
        let mut hist = BTreeMap::new();
        for j in per_step {
            *hist.entry(*j as u32).or_default() += 1;
        }
        SpecRecord {
            engine: Engine::Vllm,
            mean_acceptance_length: acceptance_length_of_counts(accepted, steps).unwrap_or(1.0),
            draft_acceptance_rate: if drafted == 0 {
                0.0
            } else {
                accepted as f64 / drafted as f64
            },
            acceptance_histogram: hist,
            num_accepted_draft_tokens: accepted,
            num_draft_tokens: drafted,
            num_spec_steps: steps,
            num_spec_tokens: Some(k as u32),
            completion_tokens: None,
            per_step_accepted: None,
            per_step_drafted: None,
            unmerged_pr: None,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn aiperf_worked_example_one_request() {
        let mut agg = SpecAggregator::new();
        agg.push(&record(&[2, 3, 1, 4, 2, 0, 3, 3], 4));
        let s = agg.summary().unwrap();
        assert_eq!(
            s.pooled_spec_decode_acceptance_histogram,
            [(0, 1), (1, 1), (2, 2), (3, 3), (4, 1)].into_iter().collect()
        );
        assert!(close(s.spec_decode_acceptance_length.as_ref().unwrap().avg, 3.25));
        assert!(close(s.spec_decode_draft_acceptance_rate.as_ref().unwrap().avg, 56.25));
        assert!(close(s.spec_decode_accepted_per_verified.as_ref().unwrap().avg, 0.65));
        assert_eq!(s.total_spec_decode_steps.avg, 8.0);
        assert_eq!(s.total_accepted_draft_tokens.avg, 18.0);
        assert_eq!(s.total_draft_tokens.avg, 32.0);
    }

    #[test]
    fn aiperf_worked_example_two_requests() {
        let mut agg = SpecAggregator::new();
        agg.push(&record(&[2, 3, 1, 4, 2, 0, 3, 3], 4));
        agg.push(&record(&[1, 1, 0], 4));
        let s = agg.summary().unwrap();
        assert_eq!(
            s.pooled_spec_decode_acceptance_histogram,
            [(0, 2), (1, 3), (2, 2), (3, 3), (4, 1)].into_iter().collect()
        );
        assert_eq!(
            (
                s.total_spec_decode_steps.avg,
                s.total_accepted_draft_tokens.avg,
                s.total_draft_tokens.avg
            ),
            (11.0, 20.0, 44.0)
        );
        assert!(close(
            s.spec_decode_token_weighted_acceptance_length.as_ref().unwrap().avg,
            1.0 + 20.0 / 11.0
        ));
        assert!(close(
            s.spec_decode_overall_draft_acceptance_rate.as_ref().unwrap().avg,
            45.45454545454545
        ));
    }

    /// The per-request mean and the token-weighted length, named apart where they differ:
    /// (3.25 + 1.67) ÷ 2 = 2.46 against 1 + 20 ÷ 11 = 2.82 (the long request accepts more).
    #[test]
    fn the_two_acceptance_lengths_are_told_apart_where_they_differ() {
        let mut agg = SpecAggregator::new();
        agg.push(&record(&[2, 3, 1, 4, 2, 0, 3, 3], 4));
        assert_eq!(
            agg.summary().unwrap().two_lengths_note(),
            None,
            "one request: one length"
        );
        agg.push(&record(&[1, 1, 0], 4));
        assert_eq!(
            agg.summary().unwrap().two_lengths_note().unwrap(),
            "Acceptance Length 2.46 is the mean of each request's own (every request counts once); the token-weighted 2.82 pools every request's drafts, as the server's counters do (the acceptance length of the other sections): they differ when requests that draft more accept more"
        );
    }

    #[test]
    fn zero_step_requests_are_counted_not_averaged() {
        let mut agg = SpecAggregator::new();
        agg.push(&record(&[], 4));
        let s = agg.summary().unwrap();
        assert!(s.spec_decode_acceptance_length.is_none());
        assert!(s.spec_decode_token_weighted_acceptance_length.is_none());
        assert!(s.spec_decode_overall_draft_acceptance_rate.is_none());
        let rows = s.console_rows();
        assert_eq!(rows.last().unwrap().0, "Zero-Step Requests (requests)");
        assert_eq!(rows[1].1[0], "N/A");
        assert!(s.histogram_line().is_none());
        agg.push(&record(&[2, 2], 4));
        let s = agg.summary().unwrap();
        assert_eq!(s.spec_decode_acceptance_length.as_ref().unwrap().count, 1);
        assert_eq!(s.spec_decode_zero_step_requests.avg, 1.0);
    }

    #[test]
    fn nothing_when_no_record() {
        assert!(SpecAggregator::new().summary().is_none());
    }

    #[test]
    fn percentiles_interpolate_and_std_is_population() {
        let s = MetricStats::from_values("ms", vec![4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.min, s.max, s.avg), (1.0, 4.0, 2.5));
        assert!(close(s.p50, 2.5));
        assert!(close(s.p90, 3.7));
        assert!(close(s.p1, 1.03));
        assert!(close(s.std, 1.25f64.sqrt()));
        let one = MetricStats::from_values("ms", vec![7.0]).unwrap();
        assert_eq!((one.p99, one.std), (7.0, 0.0));
    }

    #[test]
    fn histogram_line_folds_large_buckets() {
        let mut agg = SpecAggregator::new();
        agg.push(&record(&[0, 0, 1, 2, 9, 10, 3, 0], 10));
        let line = agg.summary().unwrap().histogram_line().unwrap();
        assert_eq!(
            line,
            "  Accepted drafts per step (% of steps):  0: 38%   1: 12%   2: 12%   3: 12%   4: 0%   5: 0%   6: 0%   7: 0%   >=8: 25%"
        );
        let mut agg = SpecAggregator::new();
        agg.push(&record(&[0, 1, 1, 2], 2));
        assert_eq!(
            agg.summary().unwrap().histogram_line().unwrap(),
            "  Accepted drafts per step (% of steps):  0: 25%   1: 50%   2: 25%"
        );
    }

    #[test]
    fn console_and_exports_use_aiperf_names() {
        let mut agg = SpecAggregator::new();
        agg.push(&record(&[2, 3, 1, 4, 2, 0, 3, 3], 4));
        agg.push(&record(&[1, 1, 0], 4));
        let s = agg.summary().unwrap();
        let rows = s.console_rows();
        assert_eq!(rows.len(), 6);
        assert_eq!(
            rows[1],
            (
                "Token-Weighted Acceptance Length (ratio)".into(),
                ["2.82", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A"].map(String::from)
            )
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["pooled_spec_decode_acceptance_histogram"]["1"], 3);
        assert_eq!(json["spec_decode_steps"]["sum"], 11.0);
        let text = serde_json::to_string(s.spec_decode_steps.as_ref().unwrap()).unwrap();
        assert!(text.starts_with(r#"{"unit":"count","avg":5.5,"p1":"#), "{text}");
        let csv = s.to_csv();
        assert!(
            csv.starts_with("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\nAcceptance Length (ratio),")
        );
        assert!(csv.contains("\nSpec Decode Steps,5.50,3.00,8.00,11.00,"), "{csv}");
        assert!(csv.contains("\n\nMetric,Value\nToken-Weighted Acceptance Length (ratio),2.82\nOverall Draft Acceptance Rate (%),45.45\nZero-Step Requests,0\nTotal Spec Decode Steps,11\n"), "{csv}");
    }

    #[test]
    fn thousands_separator() {
        assert_eq!(format_thousands(1234567.891), "1,234,567.89");
        assert_eq!(format_thousands(12.0), "12.00");
        assert_eq!(format_thousands(-1234.5), "-1,234.50");
        assert_eq!(format_thousands(-0.001), "0.00");
    }

    #[test]
    fn bins_hold_every_finite_value_once() {
        let b = Bins::from_values(&[1.0, 2.0, 3.0, 4.0, f64::NAN, f64::INFINITY], 40).unwrap();
        assert_eq!((b.counts.len(), b.total(), b.lo, b.width), (2, 4, 1.0, 1.5));
        assert_eq!(
            b.counts,
            vec![2, 2],
            "4.0 lands in the last bin: its top edge is inclusive"
        );
        let same = Bins::from_values(&[5.0; 9], 40).unwrap();
        assert_eq!((same.counts.len(), same.total()), (3, 9));
        assert!(same.width > 0.0);
        assert_eq!(Bins::from_values(&[f64::NAN], 40), None);
        let many: Vec<f64> = (0..10_000).map(f64::from).collect();
        assert_eq!(Bins::from_values(&many, 40).unwrap().counts.len(), 40);
        let pooled = Bins::from_counts(&[(0, 4), (3, 2)].into_iter().collect()).unwrap();
        assert_eq!((pooled.lo, pooled.counts), (-0.5, vec![4, 0, 0, 2]));
    }

    proptest::proptest! {
        #[test]
        fn totals_equal_the_sum_of_inputs(requests in proptest::collection::vec(proptest::collection::vec(0u64..=5, 0..20), 1..30)) {
            let mut agg = SpecAggregator::new();
            for per_step in &requests {
                agg.push(&record(per_step, 5));
            }
            let s = agg.summary().unwrap();
            let steps: u64 = requests.iter().map(|r| r.len() as u64).sum();
            let accepted: u64 = requests.iter().flatten().sum();
            proptest::prop_assert_eq!(s.total_spec_decode_steps.avg, steps as f64);
            proptest::prop_assert_eq!(s.total_accepted_draft_tokens.avg, accepted as f64);
            proptest::prop_assert_eq!(s.total_draft_tokens.avg, 5.0 * steps as f64);
            proptest::prop_assert_eq!(s.pooled_spec_decode_acceptance_histogram.values().sum::<u64>(), steps);
            let zero = requests.iter().filter(|r| r.is_empty()).count() as f64;
            proptest::prop_assert_eq!(s.spec_decode_zero_step_requests.avg, zero);
            if let Some(st) = &s.spec_decode_steps {
                proptest::prop_assert_eq!(st.sum, steps as f64);
                proptest::prop_assert!(st.min <= st.p50 && st.p50 <= st.max);
            }
        }
    }
}
