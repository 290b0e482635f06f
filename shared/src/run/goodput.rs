//! Goodput: completed requests per second that met every service-level objective, as
//! `vllm bench serve --goodput ttft:500 tpot:50 e2el:2000` and AIPerf's `--goodput` define it
//! (docs/METRICS.md §6). A request is good when each figure with an objective is at most it;
//! a request of one output token has TPOT 0 here, as vLLM counts it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The objectives, in milliseconds; a `None` is not checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
}

/// One request's figures that an objective can name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestLatency {
    pub ttft_ms: f64,
    /// (E2E − TTFT) ÷ (output tokens − 1); 0 for a request of one token (vLLM's rule).
    pub tpot_ms: f64,
    pub e2el_ms: f64,
}

impl Slo {
    /// `vllm bench serve`'s `KEY:VALUE` pairs (`ttft`, `tpot`, `e2el`), or AIPerf's metric tags
    /// for the same figures (`time_to_first_token`, `inter_token_latency` — AIPerf's per-request
    /// ITL is vLLM's TPOT — and `request_latency`); each item may hold several pairs separated by
    /// spaces, as AIPerf's one quoted argument does.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Slo, Error> {
        let mut slo = Slo::default();
        for pair in items.iter().flat_map(|s| s.as_ref().split_whitespace()) {
            let bad = |why: &str| Error::Goodput(format!("{pair:?}: {why}"));
            let (name, value) = pair
                .split_once(':')
                .ok_or_else(|| bad("write objectives as KEY:VALUE, the value in milliseconds"))?;
            let value: f64 = value
                .parse()
                .map_err(|_| bad("the value must be a number of milliseconds"))?;
            if !(value.is_finite() && value >= 0.0) {
                return Err(bad("the value must be a finite number of milliseconds ≥ 0"));
            }
            let slot = match name {
                "ttft" | "time_to_first_token" => &mut slo.ttft_ms,
                "tpot" | "inter_token_latency" => &mut slo.tpot_ms,
                "e2el" | "request_latency" => &mut slo.e2el_ms,
                _ => {
                    return Err(bad(
                        "the objective must be one of ttft, tpot, e2el (or AIPerf's time_to_first_token, \
                         inter_token_latency, request_latency)",
                    ))
                }
            };
            if slot.replace(value).is_some() {
                return Err(bad("this objective is given twice"));
            }
        }
        if slo.is_empty() {
            return Err(Error::Goodput("give at least one objective, e.g. ttft:500".into()));
        }
        Ok(slo)
    }

    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2el_ms.is_none()
    }

    /// Whether a successful request met every objective (at most each value).
    pub fn met_by(&self, r: RequestLatency) -> bool {
        [
            (self.ttft_ms, r.ttft_ms),
            (self.tpot_ms, r.tpot_ms),
            (self.e2el_ms, r.e2el_ms),
        ]
        .iter()
        .all(|(slo, value)| slo.is_none_or(|slo| *value <= slo))
    }

    /// The objectives by vLLM's names, as `result.json`'s config records them.
    pub fn by_name(&self) -> BTreeMap<String, f64> {
        [("ttft", self.ttft_ms), ("tpot", self.tpot_ms), ("e2el", self.e2el_ms)]
            .into_iter()
            .filter_map(|(name, v)| Some((name.to_string(), v?)))
            .collect()
    }
}

impl fmt::Display for Slo {
    /// `ttft:500 tpot:50`, as the flag takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self.by_name().iter().map(|(k, v)| format!("{k}:{v}")).collect();
        f.write_str(&pairs.join(" "))
    }
}

impl RequestLatency {
    /// The figures of a successful request with `output_tokens` tokens.
    pub fn of(ttft_ms: f64, e2el_ms: f64, output_tokens: u64) -> RequestLatency {
        let tpot_ms = if output_tokens > 1 {
            (e2el_ms - ttft_ms) / (output_tokens - 1) as f64
        } else {
            0.0
        };
        RequestLatency {
            ttft_ms,
            tpot_ms,
            e2el_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_and_aiperf_names_parse_to_the_same_objectives() {
        let vllm = Slo::parse(&["ttft:500", "tpot:50"]).unwrap();
        let aiperf = Slo::parse(&["time_to_first_token:500 inter_token_latency:50"]).unwrap();
        assert_eq!(vllm, aiperf);
        assert_eq!(vllm.to_string(), "tpot:50 ttft:500");
        assert_eq!(Slo::parse(&["e2el:1500.5"]).unwrap().e2el_ms, Some(1500.5));
    }

    #[test]
    fn malformed_objectives_are_named() {
        for (arg, says) in [
            ("ttft=500", "KEY:VALUE"),
            ("ttft:fast", "number of milliseconds"),
            ("ttft:-1", "≥ 0"),
            ("ttft:inf", "finite"),
            ("itl:5", "one of ttft, tpot, e2el"),
            ("ttft:1 ttft:2", "twice"),
            ("", "at least one"),
        ] {
            let err = Slo::parse(&[arg]).unwrap_err().to_string();
            assert!(err.contains(says), "{arg}: {err}");
        }
    }

    #[test]
    fn a_request_is_good_when_every_figure_is_at_most_its_objective() {
        let slo = Slo::parse(&["ttft:100 tpot:10"]).unwrap();
        // TPOT = (130 − 100) ÷ 3 = 10: exactly at the objective is good, as in vLLM (slo ≥ value).
        assert!(slo.met_by(RequestLatency::of(100.0, 130.0, 4)));
        assert!(!slo.met_by(RequestLatency::of(100.1, 130.0, 4)));
        assert!(!slo.met_by(RequestLatency::of(50.0, 140.0, 4)));
        // One token: TPOT is 0, whatever the E2E latency.
        assert!(slo.met_by(RequestLatency::of(90.0, 5000.0, 1)));
        assert!(Slo::parse(&["e2el:1000"])
            .unwrap()
            .met_by(RequestLatency::of(900.0, 1000.0, 2)));
    }
}
