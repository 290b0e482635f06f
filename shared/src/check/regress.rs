//! Regression checks (`speclens check --baseline OLD NEW`): a run or sweep against a stored one,
//! figure by figure, each with the noise both measurements allow (per-request spread or
//! draft counts for acceptance, the repeats' range for sweep ratios and crossings), and a
//! verdict: worse only when a figure fell beyond that noise.

use serde::{Deserialize, Serialize};

use crate::results::run_result::RunResult;
use crate::sweep::{PairTable, SweepFile};

/// The relative tolerance where a figure has no interval (points run once): the same 5 % the
/// sweep's findings use.
pub const NO_INTERVAL_TOLERANCE: f64 = 0.05;

/// What a figure is, for `--figure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    AcceptanceLength,
    PerPosition,
    /// A sweep's speculative ÷ plain ratio at one level.
    Speedup,
    /// A sweep's crossing (B* or λ*).
    Crossing,
}

impl FigureKind {
    pub const ALL: [FigureKind; 4] = [
        FigureKind::AcceptanceLength,
        FigureKind::PerPosition,
        FigureKind::Speedup,
        FigureKind::Crossing,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FigureKind::AcceptanceLength => "acceptance_length",
            FigureKind::PerPosition => "per_position",
            FigureKind::Speedup => "speedup",
            FigureKind::Crossing => "crossing",
        }
    }

    pub fn parse(text: &str) -> Option<FigureKind> {
        FigureKind::ALL.into_iter().find(|k| k.name() == text)
    }
}

/// How a figure moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within the noise.
    Same,
    Better,
    Worse,
    /// The new run lacks a figure the baseline has (a check that cannot pass).
    Missing,
    /// Both have it, but it cannot be judged: a value or its noise is not a finite number, or
    /// a rate lies outside [0, 1] (a check that cannot pass either; `basis` says why).
    Uncomparable,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Same => "within noise",
            Verdict::Better => "better",
            Verdict::Worse => "WORSE",
            Verdict::Missing => "missing",
            Verdict::Uncomparable => "CANNOT COMPARE",
        }
    }
}

/// One figure of the baseline beside the new one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub kind: FigureKind,
    /// `acceptance_length`, `per_position[2]`, `speedup k3 @ 64`, `crossing k3`.
    pub figure: String,
    pub baseline: Option<f64>,
    pub new: Option<f64>,
    /// How far the new figure may fall below the baseline before it counts as worse (and rise
    /// before better): `sigmas` standard errors of the difference, or the repeats' ranges.
    pub noise: Option<f64>,
    /// What the noise rests on.
    pub basis: String,
    pub verdict: Verdict,
}

/// A figure and its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Estimate {
    value: f64,
    se: f64,
}

/// The variance of the tokens accepted per draft, from unconditional per-position rates:
/// P(accepted ≥ i) = p_i, so E[j] = Σp_i and E[j²] = Σ(2i − 1)p_i.
fn accepted_per_draft_variance(rates: &[f64]) -> f64 {
    let mean: f64 = rates.iter().sum();
    let second: f64 = rates.iter().enumerate().map(|(i, p)| (2.0 * i as f64 + 1.0) * p).sum();
    (second - mean * mean).max(0.0)
}

/// A run's acceptance length with its standard error, and the design effect that scales the
/// draft-count errors of its per-position rates (drafts of one request are not independent:
/// the per-request spread says how far from independent they are).
fn acceptance_of(r: &RunResult) -> Option<(Estimate, f64, String)> {
    let m = r.measured()?;
    let drafts = r.spec_counts().map(|c| c.0);
    let rates = r.spec_decode_per_position_acceptance_rates.clone().unwrap_or_default();
    let binomial = drafts
        .filter(|d| *d > 0.0 && !rates.is_empty())
        .map(|d| (accepted_per_draft_variance(&rates) / d).sqrt());
    let per_request = r
        .per_request()
        .and_then(|p| p.spec_decode_acceptance_length.as_ref())
        .filter(|s| s.count >= 2)
        .map(|s| s.std / (s.count as f64 - 1.0).sqrt());
    let (se, deff, basis) = match (per_request, binomial) {
        (Some(req), Some(bin)) if bin > 0.0 => (
            req.max(bin),
            (req / bin).powi(2).max(1.0),
            "per-request spread".to_string(),
        ),
        (Some(req), _) => (req, 1.0, "per-request spread".to_string()),
        (None, Some(bin)) => (bin, 1.0, "draft counts".to_string()),
        (None, None) => return None,
    };
    Some((Estimate { value: m.e, se }, deff, basis))
}

/// The verdict of `new` against `baseline` with a tolerance `noise` (higher is better).
fn judge(baseline: f64, new: f64, noise: f64) -> Verdict {
    if new < baseline - noise {
        Verdict::Worse
    } else if new > baseline + noise {
        Verdict::Better
    } else {
        Verdict::Same
    }
}

/// Why two values and their noise cannot be judged, if they cannot: a value or the noise is not
/// finite (no drafts to weigh a rate by gives an infinite one), or a rate is outside [0, 1].
fn uncomparable(kind: FigureKind, old: f64, new: f64, noise: f64) -> Option<String> {
    if !(old.is_finite() && new.is_finite()) {
        Some(format!("a value is not a number: {old} against {new}"))
    } else if kind == FigureKind::PerPosition && ![old, new].iter().all(|r| (0.0..=1.0).contains(r)) {
        Some(format!("a rate outside [0, 1]: {old} against {new}"))
    } else if !noise.is_finite() {
        Some(format!("its noise is {noise} (nothing to weigh it by)"))
    } else {
        None
    }
}

/// The comparison of a figure both sides have, unless [`uncomparable`] says it cannot be judged.
fn judged(
    kind: FigureKind,
    figure: String,
    old: f64,
    new: f64,
    noise: f64,
    basis: String,
    verdict: Verdict,
) -> Comparison {
    let (basis, verdict) = match uncomparable(kind, old, new, noise) {
        Some(reason) => (reason, Verdict::Uncomparable),
        None => (basis, verdict),
    };
    Comparison {
        kind,
        figure,
        baseline: Some(old),
        new: Some(new),
        noise: Some(noise),
        basis,
        verdict,
    }
}

/// One figure from two estimates.
fn compare_estimates(
    kind: FigureKind,
    figure: String,
    old: Option<Estimate>,
    new: Option<Estimate>,
    sigmas: f64,
    basis: &str,
) -> Comparison {
    match (old, new) {
        (Some(o), Some(n)) => {
            let noise = sigmas * (o.se * o.se + n.se * n.se).sqrt();
            let verdict = judge(o.value, n.value, noise);
            judged(
                kind,
                figure,
                o.value,
                n.value,
                noise,
                format!("{sigmas}σ of {basis}"),
                verdict,
            )
        }
        (o, n) => Comparison {
            kind,
            figure,
            baseline: o.map(|e| e.value),
            new: n.map(|e| e.value),
            noise: None,
            basis: "one side lacks it".into(),
            verdict: Verdict::Missing,
        },
    }
}

/// Acceptance length and per-position rates of two runs.
pub fn compare_runs(old: &RunResult, new: &RunResult, sigmas: f64) -> Vec<Comparison> {
    let (a, b) = (acceptance_of(old), acceptance_of(new));
    let basis = match (&a, &b) {
        (Some((_, _, x)), Some((_, _, y))) if x == y => x.clone(),
        _ => "per-request spread or draft counts".into(),
    };
    let mut out = vec![compare_estimates(
        FigureKind::AcceptanceLength,
        "acceptance_length".into(),
        a.as_ref().map(|x| x.0),
        b.as_ref().map(|x| x.0),
        sigmas,
        &basis,
    )];
    out.extend(compare_positions(
        old,
        new,
        a.map_or(1.0, |x| x.1),
        b.map_or(1.0, |x| x.1),
        sigmas,
    ));
    out
}

/// Each position's rate, its error from the draft count scaled by the run's design effect.
fn compare_positions(old: &RunResult, new: &RunResult, deff_old: f64, deff_new: f64, sigmas: f64) -> Vec<Comparison> {
    let positions = |r: &RunResult, deff: f64| -> Vec<Estimate> {
        let drafts = r.spec_counts().map_or(0.0, |c| c.0);
        r.spec_decode_per_position_acceptance_rates
            .iter()
            .flatten()
            .map(|p| Estimate {
                value: *p,
                se: if drafts > 0.0 {
                    (p * (1.0 - p) * deff / drafts).sqrt()
                } else {
                    f64::INFINITY
                },
            })
            .collect()
    };
    let (o, n) = (positions(old, deff_old), positions(new, deff_new));
    (0..o.len().max(n.len()))
        .map(|i| {
            compare_estimates(
                FigureKind::PerPosition,
                format!("per_position[{}]", i + 1),
                o.get(i).copied(),
                n.get(i).copied(),
                sigmas,
                "draft counts",
            )
        })
        .collect()
}

/// An interval comparison: worse when the new interval lies wholly below the old one; a
/// figure without an interval gets [`NO_INTERVAL_TOLERANCE`].
fn compare_intervals(
    kind: FigureKind,
    figure: String,
    old: Option<(f64, Option<(f64, f64)>)>,
    new: Option<(f64, Option<(f64, f64)>)>,
    higher_is_better: bool,
) -> Comparison {
    let (Some((o, o_iv)), Some((n, n_iv))) = (old, new) else {
        return Comparison {
            kind,
            figure,
            baseline: old.map(|x| x.0),
            new: new.map(|x| x.0),
            noise: None,
            basis: "one side lacks it".into(),
            verdict: Verdict::Missing,
        };
    };
    let (verdict, noise, basis) = match (o_iv, n_iv) {
        (Some((o_lo, o_hi)), Some((n_lo, n_hi))) => {
            let verdict = if n_hi < o_lo {
                Verdict::Worse
            } else if n_lo > o_hi {
                Verdict::Better
            } else {
                Verdict::Same
            };
            let verdict = if higher_is_better { verdict } else { flip(verdict) };
            (
                verdict,
                (o_hi - o_lo).max(n_hi - n_lo) / 2.0,
                "the repeats' ranges".to_string(),
            )
        }
        _ => {
            let noise = o.abs() * NO_INTERVAL_TOLERANCE;
            let verdict = judge(o, n, noise);
            let verdict = if higher_is_better { verdict } else { flip(verdict) };
            (verdict, noise, "5 % (no repeats' range)".to_string())
        }
    };
    judged(kind, figure, o, n, noise, basis, verdict)
}

fn flip(v: Verdict) -> Verdict {
    match v {
        Verdict::Worse => Verdict::Better,
        Verdict::Better => Verdict::Worse,
        other => other,
    }
}

/// Two sweeps, arm by arm (matched by name): acceptance length and per-position rates pooled
/// over the arm's points, the ratio to plain at each level both measured, and the crossing.
pub fn compare_sweeps(old: &SweepFile, new: &SweepFile, sigmas: f64) -> Vec<Comparison> {
    let mut out = Vec::new();
    for arm in &old.arms.arms {
        let theirs = new.arms.arm(&arm.name);
        let name = &arm.name;
        let pooled = |a: &crate::sweep::arms::ArmSweep| -> Option<(Estimate, Vec<Estimate>)> {
            let e = a.acceptance_length?;
            let d = a.drafts.filter(|d| *d > 0.0)?;
            let rates = &a.per_position_acceptance_rates;
            let se = (accepted_per_draft_variance(rates) / d).sqrt();
            let positions = rates
                .iter()
                .map(|p| Estimate {
                    value: *p,
                    se: (p * (1.0 - p) / d).sqrt(),
                })
                .collect();
            Some((Estimate { value: e, se }, positions))
        };
        let (o, n) = (pooled(arm), theirs.and_then(pooled));
        out.push(compare_estimates(
            FigureKind::AcceptanceLength,
            format!("acceptance_length {name}"),
            o.as_ref().map(|x| x.0),
            n.as_ref().map(|x| x.0),
            sigmas,
            "draft counts",
        ));
        let (op, np) = (o.map(|x| x.1).unwrap_or_default(), n.map(|x| x.1).unwrap_or_default());
        for i in 0..op.len().max(np.len()) {
            out.push(compare_estimates(
                FigureKind::PerPosition,
                format!("per_position[{}] {name}", i + 1),
                op.get(i).copied(),
                np.get(i).copied(),
                sigmas,
                "draft counts",
            ));
        }
        for row in &arm.table.rows {
            let theirs_row = theirs.and_then(|a| a.table.rows.iter().find(|r| r.level == row.level));
            let with_bounds = |r: &crate::sweep::SweepRow| {
                let spread = r.spec_spread.is_some() || r.base_spread.is_some();
                r.ratio().map(|x| (x, r.ratio_bounds().filter(|_| spread)))
            };
            out.push(compare_intervals(
                FigureKind::Speedup,
                format!("speedup {name} @ {}", row.level),
                with_bounds(row),
                theirs_row.and_then(with_bounds),
                true,
            ));
        }
        let crossing = |t: &PairTable| t.crossing.map(|b| (b, t.crossing_interval));
        out.push(compare_intervals(
            FigureKind::Crossing,
            format!("crossing {name}"),
            crossing(&arm.table),
            theirs.and_then(|a| crossing(&a.table)),
            // A crossing further out means speculation pays to a higher load.
            true,
        ));
    }
    out
}

/// The comparisons of the figures the baseline has (a figure it lacks has nothing to hold the
/// new run to).
pub fn of_baseline(comparisons: Vec<Comparison>) -> Vec<Comparison> {
    comparisons.into_iter().filter(|c| c.baseline.is_some()).collect()
}

/// The chosen figures the comparisons hold none of (the baseline lacks them): each is named on
/// the console, never passed in silence.
pub fn unchecked(chosen: &[FigureKind], comparisons: &[Comparison]) -> Vec<FigureKind> {
    chosen
        .iter()
        .copied()
        .filter(|k| !comparisons.iter().any(|c| c.kind == *k))
        .collect()
}

/// The console table of the comparisons.
pub fn render(comparisons: &[Comparison]) -> String {
    let num = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.4}"));
    let width = comparisons.iter().map(|c| c.figure.len()).max().unwrap_or(6).max(6);
    let mut out = format!(
        "{:<width$}  {:>10}  {:>10}  {:>9}  {:>10}  verdict\n",
        "figure", "baseline", "new", "change", "noise"
    );
    for c in comparisons {
        let change = match (c.baseline, c.new) {
            (Some(o), Some(n)) if o != 0.0 => format!("{:+.1} %", (n - o) / o * 100.0),
            _ => "—".into(),
        };
        let noise = c.noise.map_or_else(|| "—".to_string(), |v| format!("±{v:.4}"));
        out.push_str(&format!(
            "{:<width$}  {:>10}  {:>10}  {change:>9}  {noise:>10}  {} ({})\n",
            c.figure,
            num(c.baseline),
            num(c.new),
            c.verdict.word(),
            c.basis
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_that_cannot_be_judged_say_why_instead_of_within_noise() {
        let est = |value, se| Some(Estimate { value, se });
        let kind = FigureKind::PerPosition;
        let c = |o, n| compare_estimates(kind, "per_position[1]".into(), o, n, 3.0, "draft counts");
        let infinite = c(est(0.7, f64::INFINITY), est(0.7, 0.01));
        assert_eq!(infinite.verdict, Verdict::Uncomparable);
        assert!(infinite.basis.contains("noise is inf"), "{}", infinite.basis);
        assert_eq!(c(est(f64::NAN, 0.01), est(0.7, 0.01)).verdict, Verdict::Uncomparable);
        let out_of_range = c(est(1.4, 0.01), est(1.4, 0.01));
        assert_eq!(out_of_range.verdict, Verdict::Uncomparable);
        assert!(out_of_range.basis.contains("outside [0, 1]"), "{}", out_of_range.basis);
        assert_eq!(c(est(0.7, 0.01), est(0.7, 0.01)).verdict, Verdict::Same);
        // Lengths above 1 are lengths, not rates.
        let length = compare_estimates(
            FigureKind::AcceptanceLength,
            "acceptance_length".into(),
            est(2.5, 0.01),
            est(2.5, 0.01),
            3.0,
            "x",
        );
        assert_eq!(length.verdict, Verdict::Same);
    }

    #[test]
    fn a_chosen_figure_without_a_comparison_is_unchecked() {
        let both = compare_runs(&run(2.5, &[0.7, 0.5], 1000), &run(2.5, &[0.7, 0.5], 1000), 3.0);
        assert!(both.iter().any(|c| c.kind == FigureKind::AcceptanceLength));
        assert_eq!(
            unchecked(&[FigureKind::Crossing, FigureKind::AcceptanceLength], &both),
            vec![FigureKind::Crossing]
        );
        assert!(unchecked(&[FigureKind::AcceptanceLength], &both).is_empty());
    }

    fn run(e: f64, rates: &[f64], drafts: u64) -> RunResult {
        let accepted = (rates.iter().sum::<f64>() * drafts as f64).round() as u64;
        RunResult {
            spec_decode_acceptance_length: Some(e),
            spec_decode_per_position_acceptance_rates: Some(rates.to_vec()),
            spec_decode_num_drafts: Some(drafts),
            spec_decode_draft_tokens: Some(drafts * rates.len() as u64),
            spec_decode_accepted_tokens: Some(accepted),
            ..RunResult::default()
        }
    }

    #[test]
    fn the_variance_of_accepted_tokens_per_draft_from_position_rates() {
        // k = 1: a Bernoulli(p) count, variance p(1 − p).
        assert!((accepted_per_draft_variance(&[0.7]) - 0.21).abs() < 1e-12);
        // Geometric α = 0.5, k = 2: P(0) = 0.5, P(1) = 0.25, P(2) = 0.25 → mean 0.75, E[j²] 1.25.
        assert!((accepted_per_draft_variance(&[0.5, 0.25]) - (1.25 - 0.5625)).abs() < 1e-12);
    }

    #[test]
    fn a_rerun_is_within_noise_and_lower_acceptance_is_worse() {
        let old = run(2.19, &[0.7, 0.49], 4000);
        let rerun = run(2.17, &[0.69, 0.48], 4000);
        let lower = run(1.75, &[0.5, 0.25], 4000);
        let same = compare_runs(&old, &rerun, 3.0);
        assert!(same.iter().all(|c| c.verdict == Verdict::Same), "{}", render(&same));
        let worse = compare_runs(&old, &lower, 3.0);
        assert!(worse.iter().all(|c| c.verdict == Verdict::Worse), "{}", render(&worse));
        assert_eq!(worse.len(), 3);
        assert!(render(&worse).contains("acceptance_length"));
        // Both ways round: the lowered run's baseline makes the original better.
        assert!(compare_runs(&lower, &old, 3.0)
            .iter()
            .all(|c| c.verdict == Verdict::Better));
        // A run without acceptance figures: missing, never a silent pass or fail.
        let bare = compare_runs(&old, &RunResult::default(), 3.0);
        assert_eq!(bare[0].verdict, Verdict::Missing);
    }

    #[test]
    fn intervals_decide_where_repeats_give_them() {
        let c = |o, n| compare_intervals(FigureKind::Crossing, "x".into(), o, n, true).verdict;
        assert_eq!(
            c(Some((100.0, Some((95.0, 105.0)))), Some((90.0, Some((88.0, 96.0))))),
            Verdict::Same
        );
        assert_eq!(
            c(Some((100.0, Some((95.0, 105.0)))), Some((90.0, Some((88.0, 94.0))))),
            Verdict::Worse
        );
        // No intervals: 5 %.
        assert_eq!(c(Some((100.0, None)), Some((96.0, None))), Verdict::Same);
        assert_eq!(c(Some((100.0, None)), Some((94.0, None))), Verdict::Worse);
        assert_eq!(c(None, Some((94.0, None))), Verdict::Missing);
    }
}
