//! The sweep's vocabulary: the two roles in a two-arm table, what a sweep varies (its axis) and
//! one point's load (its level), and the figure a sweep compares of a run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::run_result::RunResult;

/// The plain arm's name (its points are `base-c<N>.json`).
pub const BASE_ARM: &str = "base";

/// One measured point of a named arm: the run whose compared figure is the median, and the
/// repeats' (min, max) of that figure when the point was run more than once.
#[derive(Debug, Clone, Copy)]
pub struct NamedPoint<'a> {
    pub arm: &'a str,
    pub level: Level,
    pub result: &'a RunResult,
    pub spread: Option<(f64, f64)>,
    /// Median TPOT (ms) of the run's successful requests by prompt category, when its prompts
    /// had categories.
    pub category_tpot_ms: Option<&'a BTreeMap<String, f64>>,
}

/// The two roles in one two-arm table: the arm compared (a speculative arm, or the first of a
/// pair) and the one it is compared with (plain, or the second of a pair).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    /// The speculative server.
    Spec,
    /// The plain server.
    Base,
}

/// What a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Concurrent requests in a closed loop; the arms compare by output throughput.
    #[default]
    Concurrency,
    /// Requests per second in an open loop (Poisson arrivals); the arms compare by median
    /// end-to-end latency, since both deliver the offered load until one of them saturates.
    RequestRate,
}

impl Axis {
    pub fn is_concurrency(&self) -> bool {
        *self == Axis::Concurrency
    }

    /// The console's column head of the levels.
    pub fn column(self) -> &'static str {
        match self {
            Axis::Concurrency => "Concurrency",
            Axis::RequestRate => "Rate (req/s)",
        }
    }

    /// The unit of a level in a sentence.
    pub fn unit(self) -> &'static str {
        match self {
            Axis::Concurrency => "concurrent requests",
            Axis::RequestRate => "requests/s",
        }
    }

    /// The crossing's symbol: B* (a batch size) or λ* (an arrival rate).
    pub fn symbol(self) -> &'static str {
        match self {
            Axis::Concurrency => "B*",
            Axis::RequestRate => "λ*",
        }
    }

    /// What each arm's figure is, and its unit.
    pub fn figure(self) -> &'static str {
        match self {
            Axis::Concurrency => "output tokens/s",
            Axis::RequestRate => "median E2E latency (ms)",
        }
    }

    /// The figure a sweep compares of one run (see [`Axis`]).
    pub fn figure_of(self, result: &RunResult) -> Option<f64> {
        match self {
            Axis::Concurrency => throughput(result),
            Axis::RequestRate => result.median_e2el_ms.filter(|v| v.is_finite() && *v > 0.0),
        }
    }
}

/// One point's load: a concurrency, or a request rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    Concurrency(u64),
    /// Requests per second (finite, > 0).
    Rate(f64),
}

impl Level {
    pub fn axis(self) -> Axis {
        match self {
            Level::Concurrency(_) => Axis::Concurrency,
            Level::Rate(_) => Axis::RequestRate,
        }
    }

    pub fn value(self) -> f64 {
        match self {
            Level::Concurrency(c) => c as f64,
            Level::Rate(r) => r,
        }
    }

    /// The level in a point's name: `c16`, `r2.5`.
    pub fn tag(self) -> String {
        match self {
            Level::Concurrency(c) => format!("c{c}"),
            Level::Rate(r) => format!("r{r}"),
        }
    }

    pub fn parse_tag(tag: &str) -> Option<Level> {
        if let Some(c) = tag.strip_prefix('c') {
            return c.parse().ok().map(Level::Concurrency);
        }
        let r: f64 = tag.strip_prefix('r')?.parse().ok()?;
        (r.is_finite() && r > 0.0).then_some(Level::Rate(r))
    }
}

/// What a sweep compares of a run: output tokens per second in its steady window, else over
/// the whole run (a `vllm bench serve` file, or a run that never got steady).
pub fn throughput(result: &RunResult) -> Option<f64> {
    result.steady_output_throughput.or(result.output_throughput)
}

/// Whether a speclens point compared its whole run because it never had a steady window (all
/// ramp-up and drain): its figure is drawn hollow and the sweep says how to get one. A
/// `vllm bench serve` file has no steady window to miss.
pub fn unsteady(result: &RunResult) -> bool {
    result.speclens_version.is_some() && result.steady_output_throughput.is_none() && result.output_throughput.is_some()
}

/// What to do about points without a steady window, as every page and the console say it.
pub const STEADY_WINDOW_TIP: &str = "raise --requests-per-slot (8 or more) so each point runs past its ramp-up";
