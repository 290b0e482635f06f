//! CI gates on a finished run (`--fail-if "acceptance_length<2.5"`): a condition on one figure
//! of `result.json`, parsed once before the run and checked after its files are saved.

use std::fmt;

use serde_json::Value;

use crate::error::Error;

/// How a gate compares the figure with its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Below,
    AtMost,
    Above,
    AtLeast,
}

impl Comparison {
    fn symbol(self) -> &'static str {
        match self {
            Comparison::Below => "<",
            Comparison::AtMost => "<=",
            Comparison::Above => ">",
            Comparison::AtLeast => ">=",
        }
    }

    fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Comparison::Below => value < threshold,
            Comparison::AtMost => value <= threshold,
            Comparison::Above => value > threshold,
            Comparison::AtLeast => value >= threshold,
        }
    }
}

/// One `--fail-if` condition: the run fails when it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// The figure as the user wrote it (`acceptance_length`, `p99_ttft_ms`).
    pub metric: String,
    pub comparison: Comparison,
    pub threshold: f64,
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.metric, self.comparison.symbol(), self.threshold)
    }
}

/// What one gate found.
#[derive(Debug, Clone, PartialEq)]
pub enum GateOutcome {
    /// The condition does not hold: the run passes this gate.
    Passed { value: f64 },
    /// The condition holds: the run fails.
    Tripped { value: f64 },
    /// The run has no such figure (not measured, or a name `result.json` does not have): a
    /// gate that cannot be checked fails, so a broken measurement never passes CI.
    Missing,
}

impl Gate {
    /// `NAME<N`, `NAME<=N`, `NAME>N` or `NAME>=N`, spaces allowed around the parts.
    pub fn parse(text: &str) -> Result<Gate, Error> {
        let bad = |why: &str| {
            Error::Gate(format!(
                "{text:?}: {why} (write it as NAME<N, NAME<=N, NAME>N or NAME>=N)"
            ))
        };
        let at = text.find(['<', '>']).ok_or_else(|| bad("no comparison"))?;
        let (metric, rest) = text.split_at(at);
        let (comparison, number) = if let Some(n) = rest.strip_prefix("<=") {
            (Comparison::AtMost, n)
        } else if let Some(n) = rest.strip_prefix(">=") {
            (Comparison::AtLeast, n)
        } else if let Some(n) = rest.strip_prefix('<') {
            (Comparison::Below, n)
        } else {
            (Comparison::Above, &rest[1..])
        };
        let metric = metric.trim();
        if metric.is_empty() || !metric.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad("the figure's name must be a result.json key"));
        }
        let threshold: f64 = number
            .trim()
            .parse()
            .map_err(|_| bad("the threshold is not a number"))?;
        if !threshold.is_finite() {
            return Err(bad("the threshold must be finite"));
        }
        Ok(Gate {
            metric: metric.to_string(),
            comparison,
            threshold,
        })
    }

    /// Check the gate against a run's `result.json` (as JSON). The name is looked up as
    /// written, then with the `spec_decode_` prefix (`acceptance_length` is
    /// `spec_decode_acceptance_length`).
    pub fn check(&self, result: &Value) -> GateOutcome {
        let value = [self.metric.clone(), format!("spec_decode_{}", self.metric)]
            .iter()
            .find_map(|key| result.get(key).and_then(Value::as_f64));
        match value {
            None => GateOutcome::Missing,
            Some(v) if self.comparison.holds(v, self.threshold) => GateOutcome::Tripped { value: v },
            Some(v) => GateOutcome::Passed { value: v },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gates_parse_and_check() {
        let g = Gate::parse("acceptance_length<2.5").unwrap();
        assert_eq!((g.comparison, g.threshold), (Comparison::Below, 2.5));
        let result = json!({"spec_decode_acceptance_length": 2.4, "p99_ttft_ms": 80.0, "completed": 10});
        assert_eq!(g.check(&result), GateOutcome::Tripped { value: 2.4 });
        assert_eq!(
            Gate::parse(" p99_ttft_ms >= 100 ").unwrap().check(&result),
            GateOutcome::Passed { value: 80.0 }
        );
        assert_eq!(
            Gate::parse("completed<=10").unwrap().check(&result),
            GateOutcome::Tripped { value: 10.0 }
        );
        assert_eq!(Gate::parse("goodput>1").unwrap().check(&result), GateOutcome::Missing);
        for bad in ["acceptance_length", "<2", "a b<2", "x<two", "x<inf", "x<"] {
            assert!(Gate::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Gate::parse("x>=1.5").unwrap().to_string(), "x>=1.5");
    }
}
