//! `speclens check --baseline OLD NEW`: a run (`result.json`) or a sweep (`sweep.json`) against a
//! stored one, figure by figure with the noise both allow; exits 3 when a chosen figure got
//! worse beyond it (or the new one lacks it), so a CI job can gate on acceptance.

use std::path::{Path, PathBuf};

use speclens_shared::check::regress::{self, Comparison, FigureKind, Verdict};
use speclens_shared::results::result_text::run_result_of_text;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::sweep::SweepFile;

use crate::error::CollectorError;

/// What `speclens check` compares.
#[derive(Debug, Clone)]
pub struct Plan {
    pub baseline: PathBuf,
    pub new: PathBuf,
    /// The figures that can fail the check (all by default).
    pub figures: Vec<FigureKind>,
    /// Standard errors of the difference a figure may fall before it counts as worse.
    pub sigmas: f64,
    /// Compare a content-invalid run's acceptance with a valid run's anyway.
    pub mixed_content: bool,
}

/// A measurement on disk: a run or a sweep.
enum Stored {
    Run(Box<RunResult>),
    Sweep(Box<SweepFile>),
}

impl Stored {
    fn kind(&self) -> &'static str {
        match self {
            Stored::Run(_) => "a run",
            Stored::Sweep(_) => "a sweep",
        }
    }
}

/// Read a run folder, a sweep folder, or one of their files.
fn load(path: &Path) -> Result<Stored, CollectorError> {
    let fail = |why: String| CollectorError::Output(format!("{}: {why}", path.display()));
    let file = if path.is_dir() {
        ["sweep.json", "result.json"]
            .iter()
            .map(|name| path.join(name))
            .find(|p| p.is_file())
            .ok_or_else(|| fail("holds neither sweep.json nor result.json".into()))?
    } else {
        path.to_path_buf()
    };
    let text = crate::files::read_text(&file, crate::files::Kind::Result)
        .map_err(|why| fail(format!("{}: {why}", file.display())))?;
    // Which kind it is from its top-level keys alone (nothing kept), then read typed.
    #[derive(serde::Deserialize)]
    struct Probe {
        rows: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe =
        serde_json::from_str(&text).map_err(|e| fail(format!("{} is not a JSON object: {e}", file.display())))?;
    if probe.rows.is_some() {
        let table: SweepFile =
            serde_json::from_str(&text).map_err(|e| fail(format!("{} is not a sweep: {e}", file.display())))?;
        return Ok(Stored::Sweep(Box::new(table)));
    }
    let result: RunResult = run_result_of_text(&text)
        .map_err(|e| fail(format!("{} is not a run result: {e}", file.display())))?
        .ok_or_else(|| {
            fail(format!(
                "{} is not a run result: it has no completed and output_throughput",
                file.display()
            ))
        })?;
    result.check_version().map_err(fail)?;
    Ok(Stored::Run(Box::new(result)))
}

/// Which of two runs is content-invalid for acceptance when the other is valid (both invalid,
/// for whatever reasons, measure alike-meaningless text and compare).
fn mixed_content(baseline: &Stored, new: &Stored) -> Option<String> {
    let (Stored::Run(old), Stored::Run(new)) = (baseline, new) else {
        return None;
    };
    let (old_marks, new_marks) = (old.content_invalid(), new.content_invalid());
    let (which, marks) = match (old_marks.is_empty(), new_marks.is_empty()) {
        (true, false) => ("the new run", new_marks),
        (false, true) => ("the baseline", old_marks),
        _ => return None,
    };
    let reasons: Vec<&str> = marks.iter().map(|m| m.phrase()).collect();
    Some(format!(
        "{which} is content-invalid for acceptance ({}) and the other is not",
        reasons.join(", ")
    ))
}

/// The comparisons of two stored measurements of the same kind.
fn compare(baseline: &Stored, new: &Stored, sigmas: f64) -> Result<Vec<Comparison>, CollectorError> {
    let all = match (baseline, new) {
        (Stored::Run(o), Stored::Run(n)) => regress::compare_runs(o, n, sigmas),
        (Stored::Sweep(o), Stored::Sweep(n)) => regress::compare_sweeps(o, n, sigmas),
        (o, n) => {
            return Err(CollectorError::InvalidArgument(format!(
                "the baseline is {} and the new measurement {}: compare a run with a run, a sweep with a sweep",
                o.kind(),
                n.kind()
            )))
        }
    };
    Ok(regress::of_baseline(all))
}

/// `speclens check`.
pub fn run(plan: &Plan) -> Result<(), CollectorError> {
    if !(plan.sigmas.is_finite() && plan.sigmas > 0.0) {
        return Err(CollectorError::InvalidArgument(
            "--sigmas must be a finite number > 0".into(),
        ));
    }
    let (baseline, new) = (load(&plan.baseline)?, load(&plan.new)?);
    let mixed = mixed_content(&baseline, &new);
    if let (Some(why), false) = (&mixed, plan.mixed_content) {
        return Err(CollectorError::InvalidArgument(format!(
            "{why}: their acceptance measures different text, so it is not compared (--mixed-content compares it anyway)"
        )));
    }
    let comparisons = compare(&baseline, &new, plan.sigmas)?;
    if comparisons.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} has no figure to check against (no acceptance, ratio or crossing)",
            plan.baseline.display()
        )));
    }
    crate::console::print(&format!(
        "speclens check: {} against the baseline {}\n\n{}",
        plan.new.display(),
        plan.baseline.display(),
        regress::render(&comparisons)
    ))?;
    if let Some(why) = mixed {
        crate::console::print(&format!("\nCompared with --mixed-content although {why}.\n"))?;
    }
    for kind in regress::unchecked(&plan.figures, &comparisons) {
        let source = match (kind, &baseline) {
            (FigureKind::Speedup | FigureKind::Crossing, Stored::Run(_)) => {
                " (a run has none: speedups and crossings come from sweeps)"
            }
            _ => "",
        };
        crate::console::print(&format!(
            "\nNot checked: {} was chosen with --figure, but the baseline {} has no such figure{source}.\n",
            kind.name(),
            plan.baseline.display()
        ))?;
    }
    if !comparisons.iter().any(|c| plan.figures.contains(&c.kind)) {
        return Err(CollectorError::InvalidArgument(format!(
            "nothing to compare: the baseline {} has none of the figures chosen with --figure",
            plan.baseline.display()
        )));
    }
    let failed: Vec<&Comparison> = comparisons
        .iter()
        .filter(|c| {
            plan.figures.contains(&c.kind)
                && matches!(c.verdict, Verdict::Worse | Verdict::Missing | Verdict::Uncomparable)
        })
        .collect();
    if failed.is_empty() {
        crate::console::print("\nNo checked figure got worse beyond its noise.\n")?;
        return Ok(());
    }
    let (unjudged, worse): (Vec<&Comparison>, Vec<&Comparison>) =
        failed.into_iter().partition(|c| c.verdict == Verdict::Uncomparable);
    let mut reasons = Vec::new();
    if !worse.is_empty() {
        let names: Vec<String> = worse
            .iter()
            .map(|c| match (c.baseline, c.new) {
                (Some(o), Some(n)) => format!("{} {o:.4} → {n:.4}", c.figure),
                _ => format!("{} missing", c.figure),
            })
            .collect();
        reasons.push(format!(
            "worse than the baseline beyond the noise: {}",
            names.join("; ")
        ));
    }
    if !unjudged.is_empty() {
        let names: Vec<String> = unjudged.iter().map(|c| format!("{} ({})", c.figure, c.basis)).collect();
        reasons.push(format!("cannot be compared: {}", names.join("; ")));
    }
    Err(CollectorError::GateTripped(reasons.join("; and ")))
}
