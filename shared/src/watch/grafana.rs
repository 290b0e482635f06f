//! A Grafana dashboard (the classic JSON model, importable by file or provisioning) over the
//! recording rules' series: the fleet's acceptance, each instance's acceptance length, rate and
//! token flow, per-position acceptance beside the geometric curve of the same E, and per engine
//! the figures only its own families give (SGLang's gauges beside its counters, TensorRT-LLM's
//! per-position pair, llama.cpp's counters). Each panel's description is the glossary's
//! definition and the formula per engine, the same words as docs/METRICS.md.

use serde_json::{json, Value};

use crate::engine::Engine;
use crate::glossary::Term;
use crate::scrape::formulas::Figure;

use super::promql::{
    counters_source, figure_expr, geometric_name, implied_alpha_name, recorded_name, Scope, ENGINE_LABEL, GROUP,
};

/// The classic model's schema version (Grafana 12; Grafana 13 migrates it on load).
pub const SCHEMA_VERSION: u32 = 41;

/// The selector every query of the dashboard carries: its template variables, and the engine
/// when the dashboard is for one.
fn selector(engine: Option<Engine>) -> String {
    let mut m = vec![
        "model_name=~\"$model_name\"".to_string(),
        "instance=~\"$instance\"".to_string(),
    ];
    if let Some(e) = engine {
        m.push(format!("{ENGINE_LABEL}=\"{}\"", e.name()));
    }
    m.join(", ")
}

/// What a figure's formula says on an engine that cannot give it.
const NOT_COUNTED: &str = "not counted by this engine";

/// One query of a panel.
pub struct Target {
    pub expr: String,
    pub legend: String,
    /// Reads the engine's own families, not a recorded series (docs/GRAFANA.md lists each).
    pub raw: bool,
}

/// One panel before layout.
pub struct Panel {
    pub title: String,
    pub description: String,
    pub kind: &'static str,
    pub unit: &'static str,
    pub targets: Vec<Target>,
    /// The engine the panel is about, when it is one engine's.
    pub engine: Option<Engine>,
}

/// The figure's description: the glossary's definition, then its formula on each engine (the
/// collector's, in PromQL over a window `w`).
pub fn figure_description(figure: Figure, term: Term) -> String {
    let scope = Scope {
        matchers: String::new(),
        window: "w".into(),
    };
    let definition = match figure {
        Figure::PositionAcceptanceRate => format!(
            "Drafts whose first i + 1 tokens were all accepted ÷ drafts, by draft position i (vLLM's per-position acceptance rate). {}",
            term.definition()
        ),
        _ => term.definition().to_string(),
    };
    let mut out =
        format!("{definition}\n\nPer engine (speclens's formulas over a rate window w, docs/METRICS.md §1.6):");
    for engine in Engine::ALL {
        let line = figure_expr(engine, figure, &scope).unwrap_or_else(|| NOT_COUNTED.into());
        out.push_str(&format!("\n- {} ({}): {line}", engine.name(), counters_source(engine)));
    }
    out
}

/// Each figure with the glossary term that defines it.
pub const FIGURE_TERMS: [(Figure, Term); 6] = [
    (Figure::AcceptanceLength, Term::AcceptanceLength),
    (Figure::AcceptanceRatePct, Term::AcceptanceRate),
    (Figure::PositionAcceptanceRate, Term::DraftPosition),
    (Figure::DraftsPerS, Term::DraftsPerS),
    (Figure::DraftTokensPerS, Term::DraftedPerS),
    (Figure::AcceptedTokensPerS, Term::AcceptedPerS),
];

/// docs/METRICS.md §1.6's list: each figure's recorded name, definition and PromQL per engine
/// (a rate window `w`), the words of the panels' descriptions.
pub fn reference_markdown() -> String {
    let mut out = String::new();
    for (figure, term) in FIGURE_TERMS {
        out.push_str(&format!(
            "#### {} — `{}`\n\n",
            term.name(),
            super::promql::recorded_name(figure, "5m")
        ));
        for (i, part) in figure_description(figure, term).split("\n- ").enumerate() {
            if i == 0 {
                out.push_str(part);
                out.push('\n');
            } else {
                let (engine, expr) = part.split_once(": ").unwrap_or((part, ""));
                if expr == NOT_COUNTED {
                    out.push_str(&format!("- {engine}: {expr}\n"));
                } else {
                    out.push_str(&format!("- {engine}: `{expr}`\n"));
                }
            }
        }
        out.push('\n');
    }
    out
}

fn recorded(expr: String, legend: &str) -> Target {
    Target {
        expr,
        legend: legend.to_string(),
        raw: false,
    }
}

fn raw(expr: String, legend: &str) -> Target {
    Target {
        expr,
        legend: legend.to_string(),
        raw: true,
    }
}

const BY_INSTANCE: &str = "{{instance}} {{model_name}} ({{serving_engine}})";

/// The fleet's stats and each instance's figures, from recorded series.
fn common_panels(window: &str, engine: Option<Engine>) -> Vec<Panel> {
    let sel = selector(engine);
    let mut panels = fleet_panels(window, &sel);
    panels.extend(instance_panels(window, &sel));
    panels
}

/// A panel of one figure, defined on hover by that figure's glossary term.
fn panel(
    title: &str,
    figure: Figure,
    term: Term,
    kind: &'static str,
    unit: &'static str,
    targets: Vec<Target>,
) -> Panel {
    Panel {
        title: title.to_string(),
        description: figure_description(figure, term),
        kind,
        unit,
        targets,
        engine: None,
    }
}

/// A recorded figure's series name over `window`, restricted by the selector `sel`.
fn recorded_series(figure: Figure, window: &str, sel: &str) -> String {
    format!("{}{{{sel}}}", recorded_name(figure, window))
}

/// The fleet's four stats: E, the acceptance rate, drafts/s and accepted tokens/s.
fn fleet_panels(window: &str, sel: &str) -> Vec<Panel> {
    let r = |f: Figure| recorded_series(f, window, sel);
    let (acc, drafts, tokens) = (
        r(Figure::AcceptedTokensPerS),
        r(Figure::DraftsPerS),
        r(Figure::DraftTokensPerS),
    );
    vec![
        panel(
            "Acceptance length, fleet",
            Figure::AcceptanceLength,
            Term::AcceptanceLength,
            "stat",
            "none",
            vec![recorded(
                format!("1 + sum({acc} and on ({GROUP}, {ENGINE_LABEL}) {drafts}) / (sum({drafts}) > 0)"),
                "E",
            )],
        ),
        panel(
            "Acceptance rate (%), fleet",
            Figure::AcceptanceRatePct,
            Term::AcceptanceRate,
            "stat",
            "percent",
            vec![recorded(
                format!("100 * sum({acc} and on ({GROUP}, {ENGINE_LABEL}) {tokens}) / (sum({tokens}) > 0)"),
                "rate",
            )],
        ),
        panel(
            "Drafts/s, fleet",
            Figure::DraftsPerS,
            Term::DraftsPerS,
            "stat",
            "short",
            vec![recorded(format!("sum({drafts})"), "drafts/s")],
        ),
        panel(
            "Accepted tokens/s, fleet",
            Figure::AcceptedTokensPerS,
            Term::AcceptedPerS,
            "stat",
            "short",
            vec![recorded(format!("sum({acc})"), "accepted/s")],
        ),
    ]
}

/// Each instance's figures over time, and the per-position and implied-α panels.
fn instance_panels(window: &str, sel: &str) -> Vec<Panel> {
    let r = |f: Figure| recorded_series(f, window, sel);
    let (acc, drafts, tokens) = (
        r(Figure::AcceptedTokensPerS),
        r(Figure::DraftsPerS),
        r(Figure::DraftTokensPerS),
    );
    vec![
        panel(
            "Acceptance length by instance",
            Figure::AcceptanceLength,
            Term::AcceptanceLength,
            "timeseries",
            "none",
            vec![recorded(r(Figure::AcceptanceLength), BY_INSTANCE)],
        ),
        panel(
            "Acceptance rate (%) by instance",
            Figure::AcceptanceRatePct,
            Term::AcceptanceRate,
            "timeseries",
            "percent",
            vec![recorded(r(Figure::AcceptanceRatePct), BY_INSTANCE)],
        ),
        panel(
            "Draft tokens/s: proposed and accepted",
            Figure::DraftTokensPerS,
            Term::DraftedPerS,
            "timeseries",
            "short",
            vec![
                recorded(tokens.clone(), "proposed {{instance}} ({{serving_engine}})"),
                recorded(acc.clone(), "accepted {{instance}} ({{serving_engine}})"),
                recorded(drafts.clone(), "drafts {{instance}} ({{serving_engine}})"),
            ],
        ),
        Panel {
            title: "Acceptance by draft position, beside the geometric curve of the same E".into(),
            description: format!(
                "{}\n\nDashed: α^(i+1), the geometric curve whose E over the positions reported equals the measured E (α by bisection in the recording rules, as speclens's implied α). A measured curve under the dashed one early and over it late means later drafts are accepted more often than a constant α says.",
                figure_description(Figure::PositionAcceptanceRate, Term::DraftPosition)
            ),
            kind: "timeseries",
            unit: "percentunit",
            targets: vec![
                recorded(r(Figure::PositionAcceptanceRate), "{{instance}} position {{position}}"),
                recorded(format!("{}{{{sel}}}", geometric_name(window)), "geometric, position {{position}}"),
            ],
            engine: None,
        },
        Panel {
            title: "Implied α by instance".into(),
            description: Term::ImpliedAlpha.definition().to_string(),
            kind: "timeseries",
            unit: "none",
            targets: vec![recorded(format!("{}{{{sel}}}", implied_alpha_name(window)), BY_INSTANCE)],
            engine: None,
        },
    ]
}

/// The panels only one engine's own families give.
fn engine_panels(window: &str) -> Vec<Panel> {
    let sel = selector(None);
    let rate = |name: &str| format!("rate({name}{{{sel}}}[$__rate_interval])");
    vec![
        Panel {
            title: "SGLang: acceptance length from its counters and from its gauge".into(),
            description: "From the counters: 1 + (Δgeneration − Δrequests − Δverify) ÷ Δverify, each request's first token (prefill) left out. SGLang's own gauge sglang:spec_accept_length is its scheduler's recent iterations (and counts that token: Δgeneration ÷ Δverify).".into(),
            kind: "timeseries",
            unit: "none",
            targets: vec![
                recorded(
                    format!("{}{{{}}}", recorded_name(Figure::AcceptanceLength, window), selector(Some(Engine::Sglang))),
                    "counters {{instance}}",
                ),
                raw(format!("avg by ({GROUP}) (sglang:spec_accept_length{{{sel}}})"), "gauge {{instance}}"),
                raw(format!("avg by ({GROUP}) (sglang:spec_block_accept_length{{{sel}}})"), "DSpark block accept length {{instance}}"),
            ],
            engine: Some(Engine::Sglang),
        },
        Panel {
            title: "TensorRT-LLM: accepted ÷ drafted at each position".into(),
            description: "The per-position pair (trtllm_spec_decode_accepted_tokens_total ÷ trtllm_spec_decode_drafted_tokens_total by token_position), added as each request finishes: the rate at a position among the drafts that reached it. Where the draft length varies (draft_len_schedule, the SpeculationGate) it differs from the unconditional rate above, which counts a draft that stopped short as not accepted.".into(),
            kind: "timeseries",
            unit: "percentunit",
            targets: vec![
                raw(
                    format!(
                        "sum by ({GROUP}, token_position) ({}) / (sum by ({GROUP}, token_position) ({}) > 0)",
                        rate("trtllm_spec_decode_accepted_tokens_total"),
                        rate("trtllm_spec_decode_drafted_tokens_total")
                    ),
                    "{{instance}} position {{token_position}}",
                ),
            ],
            engine: Some(Engine::Trtllm),
        },
        Panel {
            title: "TensorRT-LLM: its acceptance-length gauge".into(),
            description: "trtllm_spec_decode_acceptance_length: the engine's own figure over its recent iterations (with enable_iter_perf_stats); the recorded length above comes from the counters when the per-position pair is there.".into(),
            kind: "timeseries",
            unit: "none",
            targets: vec![raw(format!("avg by ({GROUP}) (trtllm_spec_decode_acceptance_length{{{sel}}})"), "{{instance}}")],
            engine: Some(Engine::Trtllm),
        },
        Panel {
            title: "llama.cpp: spec-decode counters per second".into(),
            description: "llama.cpp's server (--metrics) prints vLLM's families under llamacpp:, without labels and with 6 significant digits (values from 1e6 on are rounded).".into(),
            kind: "timeseries",
            unit: "short",
            targets: ["drafts", "draft_tokens", "accepted_tokens"]
                .iter()
                .map(|f| raw(format!("sum by ({GROUP}) ({})", rate(&format!("llamacpp:spec_decode_num_{f}_total"))), &format!("{f} {{{{instance}}}}")))
                .collect(),
            engine: Some(Engine::LlamaCpp),
        },
    ]
}

/// Every panel of the dashboard for `engine` (all engines when `None`).
pub fn panels(window: &str, engine: Option<Engine>) -> Vec<Panel> {
    let mut out = common_panels(window, engine);
    out.extend(
        engine_panels(window)
            .into_iter()
            .filter(|p| engine.is_none() || p.engine == engine),
    );
    out
}

fn datasource() -> Value {
    json!({"type": "prometheus", "uid": "${datasource}"})
}

fn variable(name: &str, label: &str, query: String) -> Value {
    json!({
        "name": name, "label": label, "type": "query", "datasource": datasource(),
        "query": {"query": query, "refId": name}, "definition": query,
        "includeAll": true, "multi": true, "allValue": ".*", "refresh": 2, "sort": 1,
        "current": {}, "options": [], "hide": 0
    })
}

fn panel_json(id: usize, p: &Panel, grid: Value) -> Value {
    let targets: Vec<Value> = p
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"refId": ((b'A' + i as u8) as char).to_string(), "expr": t.expr, "legendFormat": t.legend,
                   "datasource": datasource(), "range": true})
        })
        .collect();
    // The second query of the per-position panel (the geometric curve) is drawn dashed.
    let overrides = if p.targets.len() == 2 && p.unit == "percentunit" && !p.targets[1].raw {
        json!([{"matcher": {"id": "byFrameRefID", "options": "B"},
                "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}]}])
    } else {
        json!([])
    };
    json!({
        "id": id, "type": p.kind, "title": p.title, "description": p.description,
        "datasource": datasource(), "gridPos": grid, "targets": targets,
        "fieldConfig": {"defaults": {"unit": p.unit}, "overrides": overrides},
        "options": if p.kind == "stat" { json!({"reduceOptions": {"calcs": ["lastNotNull"]}}) }
                   else { json!({"legend": {"displayMode": "table", "placement": "bottom"}}) }
    })
}

/// The dashboard JSON for `engine` (all when `None`) over the rules' series of `window`.
pub fn dashboard(window: &str, engine: Option<Engine>, written_by: &str) -> Value {
    let all = panels(window, engine);
    let (mut x, mut y) = (0u32, 0u32);
    let mut laid = Vec::new();
    for (i, p) in all.iter().enumerate() {
        let (w, h) = if p.kind == "stat" { (6, 4) } else { (12, 8) };
        if x + w > 24 {
            x = 0;
            y += if laid.last().is_some_and(|l: &Value| l["gridPos"]["h"] == 4) {
                4
            } else {
                8
            };
        }
        laid.push(panel_json(i + 1, p, json!({"x": x, "y": y, "w": w, "h": h})));
        x += w;
    }
    let drafts = recorded_name(Figure::DraftsPerS, window);
    let (uid, title) = match engine {
        Some(e) => (
            format!("speclens-spec-decode-{}", e.name()),
            format!("Speculative decoding: {} (speclens)", e.name()),
        ),
        None => (
            "speclens-spec-decode".to_string(),
            "Speculative decoding (speclens)".to_string(),
        ),
    };
    json!({
        "uid": uid, "title": title,
        "description": format!("Acceptance and draft flow from speclens's recording rules (window {window}); written by {written_by}. Load the rules first: speclens rules."),
        "tags": ["speclens", "speculative-decoding"], "schemaVersion": SCHEMA_VERSION, "version": 1,
        "editable": true, "timezone": "browser", "refresh": "30s", "graphTooltip": 1,
        "time": {"from": "now-1h", "to": "now"},
        "annotations": {"list": []},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
             "current": {}, "options": [], "hide": 0, "refresh": 1, "regex": ""},
            variable("model_name", "Model", format!("label_values({drafts}, model_name)")),
            variable("instance", "Instance", format!("label_values({drafts}{{model_name=~\"$model_name\"}}, instance)")),
        ]},
        "panels": laid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_md_holds_the_panels_formulas() {
        // docs/METRICS.md §1.6 between its markers is this text; SPECLENS_UPDATE_SNAPSHOTS=1
        // writes it there and still fails (as every snapshot does), so a run with the variable
        // set never passes over a difference.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/METRICS.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let (start, end) = (
            "<!-- formulas: generated by speclens_shared::watch::grafana::reference_markdown -->\n",
            "<!-- end of formulas -->",
        );
        let from = doc.find(start).expect("the start marker in docs/METRICS.md") + start.len();
        let to = doc[from..].find(end).expect("the end marker") + from;
        let want = reference_markdown();
        if doc[from..to] != want && std::env::var_os("SPECLENS_UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(path, format!("{}{want}{}", &doc[..from], &doc[to..])).unwrap();
            panic!("docs/METRICS.md §1.6 rewritten with the formulas the rules write: run again to check it");
        }
        assert_eq!(
            &doc[from..to],
            want,
            "docs/METRICS.md §1.6 is not the formulas the rules write"
        );
    }

    #[test]
    fn panels_read_recorded_series_or_say_they_are_raw() {
        let d = dashboard("5m", None, "test");
        assert_eq!(d["schemaVersion"], SCHEMA_VERSION);
        let laid = d["panels"].as_array().unwrap();
        assert_eq!(laid.len(), panels("5m", None).len());
        for p in panels("5m", None) {
            for t in &p.targets {
                assert_eq!(t.raw, !t.expr.contains("speclens:"), "{}: {}", p.title, t.expr);
            }
            assert!(!p.description.is_empty());
        }
        let one = dashboard("5m", Some(Engine::Sglang), "test");
        let titles: Vec<&str> = one["panels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["title"].as_str().unwrap())
            .collect();
        assert!(titles.iter().any(|t| t.starts_with("SGLang")));
        assert!(!titles.iter().any(|t| t.starts_with("TensorRT-LLM")));
        // Each grid cell stays inside Grafana's 24 columns.
        for p in one["panels"].as_array().unwrap() {
            assert!(p["gridPos"]["x"].as_u64().unwrap() + p["gridPos"]["w"].as_u64().unwrap() <= 24);
        }
    }
}
