//! The collector's formulas (`scrape::formulas`) written as PromQL: each figure's expression per
//! engine over that engine's counters, the names of the series the recording rules keep, the
//! engines' activity and load families the alerts read, and the implied α and geometric curve
//! of the dashboard's per-position panel, as recording rules only (PromQL cannot solve for α in
//! one expression, so bisection runs one step per rule, as the collector's `implied_alpha`).

use crate::engine::Engine;
use crate::scrape::formulas::{sources, Count, Figure, Form, Formula, Source, Term};
use crate::scrape::load::VLLM_RUNNING;
use crate::scrape::schema::{family_name, position_label};

/// The labels every recorded series keeps: one series per scrape target and model.
pub const GROUP: &str = "job, instance, model_name";

/// The label the rules add to say which engine's formula made a series.
pub const ENGINE_LABEL: &str = "serving_engine";

/// Positions the geometric curve is written for (vLLM allows more; EAGLE trees rarely pass 8).
pub const GEOMETRIC_POSITIONS: u32 = 16;

/// Bisection steps of the implied α: its error is at most 2^-(steps + 1), under 1e-5.
pub const ALPHA_STEPS: u32 = 16;

/// What every expression is scoped by: the user's label matchers and the rate window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Label matchers without braces (`job=~"vllm.*"`), or empty.
    pub matchers: String,
    /// A PromQL duration (`5m`, `30s`).
    pub window: String,
}

impl Scope {
    fn selector(&self, name: &str, extra: Option<String>) -> String {
        let mut m: Vec<String> = Vec::new();
        if !self.matchers.is_empty() {
            m.push(self.matchers.clone());
        }
        m.extend(extra);
        if m.is_empty() {
            name.to_string()
        } else {
            format!("{name}{{{}}}", m.join(", "))
        }
    }

    /// `sum by (GROUP) (rate(name{…}[window]))`.
    fn rate(&self, name: &str) -> String {
        format!(
            "sum by ({GROUP}) (rate({}[{}]))",
            self.selector(name, None),
            self.window
        )
    }
}

/// Where an engine's spec-decode counters are defined (each engine's public source).
pub fn counters_source(engine: Engine) -> &'static str {
    match engine {
        Engine::Vllm => "vLLM vllm/v1/spec_decode/metrics.py",
        Engine::Sglang => "SGLang python/sglang/srt/observability/metrics_collector.py",
        Engine::Trtllm => "TensorRT-LLM tensorrt_llm/metrics/collector.py, the per-position pair since PR #12636",
        Engine::LlamaCpp => "llama.cpp server --metrics, PR #26389",
    }
}

/// The suffix of every recorded name: `rate` and the window (`rate5m`).
pub fn suffix(window: &str) -> String {
    format!("rate{window}")
}

/// The name a figure's recording rule keeps (`speclens:spec_decode_acceptance_length:rate5m`).
pub fn recorded_name(figure: Figure, window: &str) -> String {
    format!("speclens:{}:{}", figure_key(figure), suffix(window))
}

/// The middle part of a figure's recorded name.
pub fn figure_key(figure: Figure) -> &'static str {
    match figure {
        Figure::AcceptanceRatePct => "spec_decode_acceptance_rate_percent",
        Figure::AcceptanceLength => "spec_decode_acceptance_length",
        Figure::PositionAcceptanceRate => "spec_decode_position_acceptance_rate",
        Figure::DraftsPerS => "spec_decode_drafts_per_second",
        Figure::DraftTokensPerS => "spec_decode_draft_tokens_per_second",
        Figure::AcceptedTokensPerS => "spec_decode_accepted_tokens_per_second",
    }
}

/// A counter's PromQL, summed by [`GROUP`] (and by `position` for a per-position family, from
/// TensorRT-LLM's `token_position` too, so every engine's series carry one label).
fn count_expr(engine: Engine, count: Count, scope: &Scope) -> String {
    let name = |family| format!("{}{}", engine.prefix(), family_name(engine, family));
    match count {
        Count::Total(family) => scope.rate(&name(family)),
        Count::At(family, pos) => format!(
            "sum by ({GROUP}) (rate({}[{}]))",
            scope.selector(&name(family), Some(format!("{}=\"{pos}\"", position_label(engine)))),
            scope.window
        ),
        Count::ByPosition(family) => {
            let rate = format!("rate({}[{}])", scope.selector(&name(family), None), scope.window);
            let label = position_label(engine);
            let inner = if label == "position" {
                rate
            } else {
                format!("label_replace({rate}, \"position\", \"$1\", \"{label}\", \"(.*)\")")
            };
            format!("sum by ({GROUP}, position) ({inner})")
        }
    }
}

/// `Σ sign × count` in PromQL; parenthesised when it has more than one term.
fn terms_expr(engine: Engine, terms: &[Term], scope: &Scope) -> String {
    let mut out = String::new();
    for (i, t) in terms.iter().enumerate() {
        let e = count_expr(engine, t.count, scope);
        match (i, t.negative) {
            (0, false) => out.push_str(&e),
            (0, true) => out.push_str(&format!("-{e}")),
            (_, false) => out.push_str(&format!(" + {e}")),
            (_, true) => out.push_str(&format!(" - {e}")),
        }
    }
    if terms.len() > 1 {
        format!("({out})")
    } else {
        out
    }
}

/// A formula in PromQL: its form over the rates of its counters (the rates' window cancels out
/// of every ratio, as a window's growth does in the collector); none where the denominator is 0.
pub fn formula_expr(engine: Engine, formula: &Formula, scope: &Scope) -> String {
    let n = terms_expr(engine, formula.numerator, scope);
    if formula.form == Form::PerSecond {
        return n;
    }
    let d = terms_expr(engine, formula.denominator, scope);
    let over = if formula.by_position() {
        format!("{n} / on ({GROUP}) group_left () ({d} > 0)")
    } else {
        format!("{n} / ({d} > 0)")
    };
    match formula.form {
        Form::Length => format!("1 + {over}"),
        Form::Percent => format!("100 * {over}"),
        Form::Fraction | Form::PerSecond => over,
    }
}

/// One source in PromQL: a formula, or a gauge's mean over the window (averaged over label sets
/// as the collector averages a scrape's, then over time as it averages the window's scrapes).
pub fn source_expr(engine: Engine, source: &Source, scope: &Scope) -> String {
    match source {
        Source::Counters(f) => formula_expr(engine, f, scope),
        Source::Gauge { name, scale } => {
            let mean = format!(
                "avg by ({GROUP}) (avg_over_time({}[{}]))",
                scope.selector(name, None),
                scope.window
            );
            if *scale == 1.0 {
                mean
            } else {
                format!("{scale} * {mean}")
            }
        }
    }
}

/// A figure's PromQL on an engine: its sources joined by `or`, the first that gives a value per
/// series winning as in the collector; `None` where the engine cannot give the figure.
pub fn figure_expr(engine: Engine, figure: Figure, scope: &Scope) -> Option<String> {
    let all = sources(engine, figure);
    match all {
        [] => None,
        [one] => Some(source_expr(engine, one, scope)),
        many => Some(
            many.iter()
                .map(|s| format!("({})", source_expr(engine, s, scope)))
                .collect::<Vec<_>>()
                .join(" or "),
        ),
    }
}

/// The engine families an alert reads beside the spec-decode counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Activity {
    /// Output tokens per second.
    OutputTokensPerS,
    /// Finished requests per second.
    RequestsFinishedPerS,
    /// Requests running now (a gauge).
    RequestsRunning,
}

impl Activity {
    pub const ALL: [Activity; 3] = [
        Activity::OutputTokensPerS,
        Activity::RequestsFinishedPerS,
        Activity::RequestsRunning,
    ];

    /// The recorded name (`speclens:output_tokens_per_second:rate5m`, `speclens:requests_running`).
    pub fn recorded_name(self, window: &str) -> String {
        match self {
            Activity::OutputTokensPerS => format!("speclens:output_tokens_per_second:{}", suffix(window)),
            Activity::RequestsFinishedPerS => format!("speclens:requests_finished_per_second:{}", suffix(window)),
            Activity::RequestsRunning => "speclens:requests_running".to_string(),
        }
    }

    /// The engine's family: vLLM's (`vllm/v1/metrics/loggers.py`), SGLang's
    /// (`srt/observability/metrics_collector.py`), llama.cpp's server (`tools/server/server.cpp`) and
    /// TensorRT-LLM's (`tensorrt_llm/metrics/collector.py`); `None` where it exports none.
    pub fn family(self, engine: Engine) -> Option<&'static str> {
        match (self, engine) {
            (Activity::OutputTokensPerS, Engine::Vllm) => Some("vllm:generation_tokens_total"),
            (Activity::OutputTokensPerS, Engine::Sglang) => Some("sglang:generation_tokens_total"),
            (Activity::OutputTokensPerS, Engine::LlamaCpp) => Some("llamacpp:tokens_predicted_total"),
            (Activity::RequestsFinishedPerS, Engine::Vllm) => Some("vllm:request_success_total"),
            (Activity::RequestsFinishedPerS, Engine::Sglang) => Some("sglang:num_requests_total"),
            (Activity::RequestsFinishedPerS, Engine::Trtllm) => Some("trtllm_request_success_total"),
            (Activity::RequestsRunning, Engine::Vllm) => Some(VLLM_RUNNING),
            (Activity::RequestsRunning, Engine::Sglang) => Some("sglang:num_running_reqs"),
            (Activity::RequestsRunning, Engine::LlamaCpp) => Some("llamacpp:requests_processing"),
            _ => None,
        }
    }

    /// The family's PromQL on an engine.
    pub fn expr(self, engine: Engine, scope: &Scope) -> Option<String> {
        let name = self.family(engine)?;
        Some(match self {
            Activity::RequestsRunning => format!("sum by ({GROUP}) ({})", scope.selector(name, None)),
            _ => scope.rate(name),
        })
    }
}

/// The labels the derived series (positions, α, geometric curve) match on.
const DERIVED_GROUP: &str = "job, instance, model_name, serving_engine";

/// The name of the number of positions an engine reports per series (the k of the geometric
/// curve, as the collector takes k from the per-position rates it has).
pub fn positions_name(window: &str) -> String {
    format!("speclens:spec_decode_positions:{}", suffix(window))
}

/// The name of the implied α (the `k`-aware α whose geometric curve gives the same E).
pub fn implied_alpha_name(window: &str) -> String {
    format!("speclens:spec_decode_implied_alpha:{}", suffix(window))
}

/// The name of the geometric curve α^(i+1) by `position`.
pub fn geometric_name(window: &str) -> String {
    format!("speclens:spec_decode_geometric_position_rate:{}", suffix(window))
}

/// One recording rule: the series it records, its PromQL and the labels it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    pub record: String,
    pub expr: String,
    pub labels: Vec<(String, String)>,
}

impl Recording {
    fn new(record: String, expr: String) -> Recording {
        Recording {
            record,
            expr,
            labels: Vec::new(),
        }
    }
}

/// The derived rules in evaluation order: the positions count,
/// α by bisection on [0, 1] from 0.5 (each step moves α by half the last step toward
/// E(α, k) = E, with E(α, k) = (1 − α^(k+1)) ÷ (1 − α)), and the geometric curve per position.
pub fn derived_rules(window: &str) -> Vec<Recording> {
    let positions = positions_name(window);
    let length = recorded_name(Figure::AcceptanceLength, window);
    let step_name = |i: u32| {
        if i == ALPHA_STEPS {
            implied_alpha_name(window)
        } else {
            format!("speclens:spec_decode_implied_alpha_bisect{i}:{}", suffix(window))
        }
    };
    let mut out = vec![
        Recording::new(
            positions.clone(),
            format!(
                "count by ({DERIVED_GROUP}) ({})",
                recorded_name(Figure::PositionAcceptanceRate, window)
            ),
        ),
        Recording::new(step_name(0), format!("0 * {positions} + 0.5")),
    ];
    for i in 1..=ALPHA_STEPS {
        let a = step_name(i - 1);
        let step = 0.5f64.powi(i as i32 + 1);
        out.push(Recording::new(
            step_name(i),
            format!("{a} + {step} * sgn({length} - (1 - {a} ^ ({positions} + 1)) / (1 - {a}))"),
        ));
    }
    let alpha = implied_alpha_name(window);
    for p in 0..GEOMETRIC_POSITIONS {
        out.push(Recording {
            record: geometric_name(window),
            expr: format!("{alpha} ^ {} and on ({DERIVED_GROUP}) ({positions} > {p})", p + 1),
            labels: vec![("position".to_string(), p.to_string())],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        Scope {
            matchers: "job=\"vllm\"".into(),
            window: "5m".into(),
        }
    }

    /// vLLM's own speculative-decoding dashboard (vllm-project/vllm
    /// `examples/observability/dashboards/grafana/vllm_speculative_decoding.json`, its exprs
    /// verbatim in the fixture): each figure speclens records is the dashboard's panel query with
    /// the dashboard's template variables made a scope and its sums kept per instance.
    #[test]
    fn vllms_figures_are_its_grafana_dashboards_expressions() {
        let text = include_str!("../../../tests/fixtures/real_vllm_grafana_spec_decode_panels.json");
        let json: String = text
            .lines()
            .filter(|l| !l.starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let panel = |id: u64| -> String {
            let p = doc["panels"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["id"] == id)
                .unwrap();
            p["exprs"][0].as_str().unwrap().to_string()
        };
        // The dashboard's variables as this scope, its sums per instance (speclens's group).
        let scoped = |expr: String| -> String {
            expr.replace(
                r#"{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}"#,
                r#"{job="vllm"}"#,
            )
            .replace("[$__rate_interval]", "[5m]")
            .replace("sum by (model_name) (", "sum(")
            .replace("sum by (position) (", "sum by (job, instance, model_name, position) (")
            .replace("sum(", "sum by (job, instance, model_name) (")
            .replace("on () group_left ()", "on (job, instance, model_name) group_left ()")
        };
        let ours = |figure: Figure| figure_expr(Engine::Vllm, figure, &scope()).unwrap();
        // Panels 2 and 9: mean acceptance length; 1 and 8: the draft acceptance rate (a percent
        // here, a percent unit there); 10: acceptance rate by draft position; 3, 4, 5: the rates.
        for id in [2, 9] {
            assert_eq!(ours(Figure::AcceptanceLength), scoped(panel(id)), "panel {id}");
        }
        for id in [1, 8] {
            assert_eq!(
                ours(Figure::AcceptanceRatePct),
                format!("100 * {}", scoped(panel(id))),
                "panel {id}"
            );
        }
        assert_eq!(ours(Figure::PositionAcceptanceRate), scoped(panel(10)));
        assert_eq!(ours(Figure::AcceptedTokensPerS), scoped(panel(3)));
        assert_eq!(ours(Figure::DraftTokensPerS), scoped(panel(4)));
        assert_eq!(ours(Figure::DraftsPerS), scoped(panel(5)));
    }

    #[test]
    fn other_engines_follow_their_own_counters() {
        let s = scope();
        let sglang = figure_expr(Engine::Sglang, Figure::AcceptanceLength, &s).unwrap();
        assert!(
            sglang.starts_with("(sum by (job, instance, model_name) (rate(sglang:generation_tokens_total"),
            "{sglang}"
        );
        assert!(sglang.contains(" - sum by (job, instance, model_name) (rate(sglang:num_requests_total"));
        assert_eq!(
            figure_expr(Engine::Sglang, Figure::AcceptanceRatePct, &s).unwrap(),
            "100 * avg by (job, instance, model_name) (avg_over_time(sglang:spec_accept_rate{job=\"vllm\"}[5m]))"
        );
        assert_eq!(figure_expr(Engine::Sglang, Figure::PositionAcceptanceRate, &s), None);
        let trt = figure_expr(Engine::Trtllm, Figure::AcceptanceLength, &s).unwrap();
        assert!(
            trt.contains("trtllm_spec_decode_drafted_tokens_total{job=\"vllm\", token_position=\"0\"}"),
            "{trt}"
        );
        assert!(
            trt.contains(") or (avg by"),
            "the gauges stand in without the pair: {trt}"
        );
        let trt_pos = figure_expr(Engine::Trtllm, Figure::PositionAcceptanceRate, &s).unwrap();
        assert!(trt_pos.contains("label_replace(rate(trtllm_spec_decode_accepted_tokens_total{job=\"vllm\"}[5m]), \"position\", \"$1\", \"token_position\", \"(.*)\")"), "{trt_pos}");
        let llama = figure_expr(
            Engine::LlamaCpp,
            Figure::DraftsPerS,
            &Scope {
                matchers: String::new(),
                window: "1m".into(),
            },
        );
        assert_eq!(
            llama.unwrap(),
            "sum by (job, instance, model_name) (rate(llamacpp:spec_decode_num_drafts_total[1m]))"
        );
    }

    #[test]
    fn the_bisection_rules_reach_the_collectors_alpha() {
        // Run the rules' arithmetic by hand: E = 2.5 at k = 3.
        let (e, k) = (2.5f64, 3.0f64);
        let mut a = 0.5f64;
        for i in 1..=ALPHA_STEPS {
            let g = (1.0 - a.powf(k + 1.0)) / (1.0 - a);
            a += 0.5f64.powi(i as i32 + 1) * (e - g).signum();
        }
        assert!((a - crate::model::speedup::implied_alpha(e, 3)).abs() < 2e-5, "{a}");
        let rules = derived_rules("5m");
        assert_eq!(rules.len() as u32, 2 + ALPHA_STEPS + GEOMETRIC_POSITIONS);
        // The text of the first step is that arithmetic: α + ¼·sgn(E − (1 − α^(k+1)) ÷ (1 − α)).
        assert_eq!(
            rules[2].expr,
            "speclens:spec_decode_implied_alpha_bisect0:rate5m + 0.25 * sgn(speclens:spec_decode_acceptance_length:rate5m - (1 - speclens:spec_decode_implied_alpha_bisect0:rate5m ^ (speclens:spec_decode_positions:rate5m + 1)) / (1 - speclens:spec_decode_implied_alpha_bisect0:rate5m))"
        );
        assert_eq!(rules[1].expr, "0 * speclens:spec_decode_positions:rate5m + 0.5");
        let last = rules.last().unwrap();
        assert_eq!(last.labels, vec![("position".to_string(), "15".to_string())]);
        assert!(
            last.expr
                .starts_with("speclens:spec_decode_implied_alpha:rate5m ^ 16 and on"),
            "{}",
            last.expr
        );
        assert_eq!(rules[ALPHA_STEPS as usize + 1].record, implied_alpha_name("5m"));
    }
}
