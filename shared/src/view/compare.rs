//! Two runs compared figure by figure (the runs page's compare view): each figure's name,
//! definition, reading and which way is better, and the signed difference, relative change and
//! better run of a pair.

use crate::glossary::Term;
use crate::results::run_result::RunResult;

/// Which way a figure of the comparison is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Neither way (a count of requests).
    Neither,
}

/// A figure of the comparison table: its name, its definition, how to read it from a run, its
/// decimals and which way is better.
pub type Figure = (&'static str, Option<Term>, fn(&RunResult) -> Option<f64>, usize, Better);

pub const FIGURES: [Figure; 9] = [
    (
        "completed requests",
        None,
        |r| r.completed.map(|c| c as f64),
        0,
        Better::Neither,
    ),
    (
        "failed requests",
        None,
        |r| r.failed.map(|c| c as f64),
        0,
        Better::Lower,
    ),
    (
        "output tokens/s (steady window)",
        Some(Term::OutputSteady),
        |r| r.steady_output_throughput,
        1,
        Better::Higher,
    ),
    (
        "output tokens/s (whole run)",
        Some(Term::OutputWholeRun),
        |r| r.output_throughput,
        1,
        Better::Higher,
    ),
    ("mean TTFT (ms)", Some(Term::Ttft), |r| r.mean_ttft_ms, 2, Better::Lower),
    (
        "mean TPOT (ms)",
        Some(Term::Tpot),
        |r| r.mean_tpot_ms.filter(|_| r.streamed()),
        2,
        Better::Lower,
    ),
    (
        "mean ITL (ms)",
        Some(Term::Itl),
        |r| r.mean_itl_ms.filter(|_| r.streamed()),
        2,
        Better::Neither,
    ),
    (
        "acceptance rate (%)",
        Some(Term::AcceptanceRate),
        |r| r.spec_decode_acceptance_rate,
        2,
        Better::Higher,
    ),
    (
        "acceptance length",
        Some(Term::AcceptanceLength),
        |r| r.spec_decode_acceptance_length,
        3,
        Better::Higher,
    ),
];

/// `second − first` with its sign, the relative change, and which run is better by the figure
/// (so a faster run reads as better whichever way its number moved).
pub fn difference(
    first: Option<f64>,
    second: Option<f64>,
    decimals: usize,
    better: Better,
    names: (&str, &str),
) -> (String, String, String) {
    match (first, second) {
        (Some(p), Some(q)) => {
            let winner = match better {
                _ if p == q => "same".to_string(),
                Better::Neither => "—".to_string(),
                Better::Higher => if q > p { names.1 } else { names.0 }.to_string(),
                Better::Lower => if q < p { names.1 } else { names.0 }.to_string(),
            };
            let change = if p != 0.0 {
                format!("{:+.1} %", (q / p - 1.0) * 100.0)
            } else {
                "—".into()
            };
            (format!("{:+.decimals$}", q - p), change, winner)
        }
        _ => ("—".into(), "—".into(), "—".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(completed: u64, failed: u64, ttft_ms: f64, tpot_ms: f64, stream: bool) -> RunResult {
        let mut r = RunResult {
            completed: Some(completed),
            failed: Some(failed),
            mean_ttft_ms: Some(ttft_ms),
            mean_tpot_ms: Some(tpot_ms),
            ..RunResult::default()
        };
        if !stream {
            r.config = Some(crate::results::run_result::RunConfig {
                stream: false,
                ..Default::default()
            });
        }
        r
    }

    fn figure(label: &str) -> &'static Figure {
        FIGURES.iter().find(|f| f.0 == label).unwrap()
    }

    #[test]
    fn lower_latency_and_fewer_failures_win_whichever_way_the_number_moved() {
        let (x, y) = (run(30, 2, 20.0, 5.0, true), run(30, 0, 25.0, 4.0, true));
        let pick = |label: &str| {
            let (_, _, value, decimals, better) = figure(label);
            difference(value(&x), value(&y), *decimals, *better, ("a", "b"))
        };
        assert_eq!(pick("failed requests"), ("-2".into(), "-100.0 %".into(), "b".into()));
        assert_eq!(pick("mean TTFT (ms)"), ("+5.00".into(), "+25.0 %".into(), "a".into()));
        assert_eq!(pick("mean TPOT (ms)"), ("-1.00".into(), "-20.0 %".into(), "b".into()));
        // A count of requests has no better side; equal figures are "same".
        assert_eq!(
            pick("completed requests"),
            ("+0".into(), "+0.0 %".into(), "same".into())
        );
    }

    #[test]
    fn higher_throughput_wins_and_itl_has_no_better_side() {
        assert_eq!(
            difference(Some(100.0), Some(150.0), 1, Better::Higher, ("a", "b")),
            ("+50.0".into(), "+50.0 %".into(), "b".into())
        );
        assert_eq!(figure("mean ITL (ms)").4, Better::Neither);
        assert_eq!(
            difference(Some(10.0), Some(30.0), 2, Better::Neither, ("a", "b")).2,
            "—".to_string()
        );
        // From zero there is no relative change; a missing figure is a dash everywhere.
        assert_eq!(difference(Some(0.0), Some(3.0), 0, Better::Lower, ("a", "b")).1, "—");
        assert_eq!(
            difference(None, Some(3.0), 0, Better::Lower, ("a", "b")),
            ("—".into(), "—".into(), "—".into())
        );
    }

    #[test]
    fn tpot_and_itl_of_an_unstreamed_run_are_not_compared() {
        let r = run(10, 0, 20.0, 5.0, false);
        assert_eq!((figure("mean TPOT (ms)").2)(&r), None);
        assert_eq!((figure("mean TTFT (ms)").2)(&r), Some(20.0));
    }
}
