//! The simulated engine's `/metrics` text, written as vLLM's Prometheus client writes it:
//! HELP/TYPE lines, sorted labels, `_created` gauges after each counter family (omitted in
//! multiprocess mode), and the client's float formatting (`15420.0`, `6.491797e+06`).

use std::fmt::Write;

use super::engine::EngineCounters;

/// Python prometheus_client's `floatToGoString`: Python's `repr`, switched to Go's exponent
/// form for values ≥ 1e6 (`6.491797e+06`, `5e+06`).
pub fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let s = python_repr(v);
    if let Some(dot) = s.find('.') {
        if v > 0.0 && dot > 6 && !s.contains('e') {
            let (int, frac) = s.split_at(dot);
            let digits = format!("{}{}", &int[1..], &frac[1..]);
            let mantissa = format!("{}.{}", &int[..1], digits);
            let mantissa = mantissa.trim_end_matches(['0', '.']);
            return format!("{mantissa}e+0{}", dot - 1);
        }
    }
    s
}

/// Python's `repr(float)`: shortest round-trip digits, `.0` on whole numbers, exponent form
/// from 1e16 up and below 1e-4 (`1e+16`, `1e-05`).
fn python_repr(v: f64) -> String {
    let abs = v.abs();
    if abs != 0.0 && !(1e-4..1e16).contains(&abs) {
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let s = format!("{v:?}");
    if s.contains('.') || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

/// What the text should look like.
#[derive(Debug, Clone)]
pub struct ExpositionOptions {
    pub model_name: String,
    /// Spec-decode families exist only on a speculative server.
    pub speculative: bool,
    /// Multiprocess mode: no `_created` gauges.
    pub multiprocess: bool,
}

fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

struct Family<'a> {
    name: &'a str,
    help: &'a str,
    /// (sorted label text, value, created) per series.
    series: Vec<(String, f64, f64)>,
}

fn write_counter(out: &mut String, family: &Family<'_>, multiprocess: bool) {
    let base = family.name.strip_suffix("_total").unwrap_or(family.name);
    let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
    let _ = writeln!(out, "# TYPE {} counter", family.name);
    for (labels, value, _) in &family.series {
        let _ = writeln!(out, "{}{{{labels}}} {}", family.name, go_float(*value));
    }
    if multiprocess {
        return;
    }
    let created = format!("{base}_created");
    let _ = writeln!(out, "# HELP {created} {}", family.help);
    let _ = writeln!(out, "# TYPE {created} gauge");
    for (labels, _, created_at) in &family.series {
        let _ = writeln!(out, "{created}{{{labels}}} {}", go_float(*created_at));
    }
}

fn write_gauge(out: &mut String, name: &str, help: &str, series: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    for (labels, value) in series {
        let _ = writeln!(out, "{name}{{{labels}}} {}", go_float(*value));
    }
}

/// Render every engine's counters (one label set per engine).
pub fn render(engines: &[EngineCounters], opts: &ExpositionOptions) -> String {
    let model = escape_label(&opts.model_name);
    let labels = |engine: usize| format!("engine=\"{engine}\",model_name=\"{model}\"");
    let series = |f: &dyn Fn(&EngineCounters) -> u64| -> Vec<(String, f64, f64)> {
        engines
            .iter()
            .enumerate()
            .map(|(i, c)| (labels(i), f(c) as f64, c.created_unix_s))
            .collect()
    };
    let mut out = String::with_capacity(4096);
    write_gauge(
        &mut out,
        "vllm:num_requests_running",
        "Number of requests in model execution batches.",
        &engines
            .iter()
            .enumerate()
            .map(|(i, c)| (labels(i), c.running as f64))
            .collect::<Vec<_>>(),
    );
    write_gauge(
        &mut out,
        "vllm:num_requests_waiting",
        "Number of requests waiting to be processed.",
        &engines
            .iter()
            .enumerate()
            .map(|(i, c)| (labels(i), c.waiting as f64))
            .collect::<Vec<_>>(),
    );
    let counters = [
        (
            "vllm:prompt_tokens_total",
            "Number of prefill tokens processed.",
            series(&|c| c.prompt_tokens),
        ),
        (
            "vllm:generation_tokens_total",
            "Number of generation tokens processed.",
            series(&|c| c.generation_tokens),
        ),
    ];
    for (name, help, series) in counters {
        write_counter(&mut out, &Family { name, help, series }, opts.multiprocess);
    }
    let mut success = Vec::new();
    for (i, c) in engines.iter().enumerate() {
        for (reason, value) in [
            ("abort", c.success_abort),
            ("length", c.success_length),
            ("stop", c.success_stop),
        ] {
            success.push((
                format!("engine=\"{i}\",finished_reason=\"{reason}\",model_name=\"{model}\""),
                value as f64,
                c.created_unix_s,
            ));
        }
    }
    write_counter(
        &mut out,
        &Family {
            name: "vllm:request_success_total",
            help: "Count of successfully processed requests.",
            series: success,
        },
        opts.multiprocess,
    );
    if !opts.speculative {
        return out;
    }
    let spec = [
        (
            "vllm:spec_decode_num_drafts_total",
            "Number of spec decoding drafts.",
            series(&|c| c.num_drafts),
        ),
        (
            "vllm:spec_decode_num_draft_tokens_total",
            "Number of draft tokens.",
            series(&|c| c.num_draft_tokens),
        ),
        (
            "vllm:spec_decode_num_accepted_tokens_total",
            "Number of accepted tokens.",
            series(&|c| c.num_accepted_tokens),
        ),
    ];
    for (name, help, series) in spec {
        write_counter(&mut out, &Family { name, help, series }, opts.multiprocess);
    }
    let mut per_pos = Vec::new();
    for (i, c) in engines.iter().enumerate() {
        for (pos, v) in c.accepted_per_pos.iter().enumerate() {
            per_pos.push((format!("{},position=\"{pos}\"", labels(i)), *v as f64, c.created_unix_s));
        }
    }
    write_counter(
        &mut out,
        &Family {
            name: "vllm:spec_decode_num_accepted_tokens_per_pos_total",
            help: "Accepted tokens per draft position.",
            series: per_pos,
        },
        opts.multiprocess,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_the_prometheus_client_writes_them() {
        assert_eq!(go_float(15420.0), "15420.0");
        assert_eq!(go_float(6_491_797.0), "6.491797e+06");
        assert_eq!(go_float(5_000_000.0), "5e+06");
        assert_eq!(go_float(12_983_594.0), "1.2983594e+07");
        assert_eq!(go_float(999_999.0), "999999.0");
        assert_eq!(go_float(1_795_942_811.510_813_5), "1.7959428115108135e+09");
        assert_eq!(go_float(0.0), "0.0");
        assert_eq!(go_float(3.09), "3.09");
        assert_eq!(go_float(1e-5), "1e-05");
        assert_eq!(go_float(f64::INFINITY), "+Inf");
    }

    #[test]
    fn rendered_text_matches_the_reference_layout() {
        let mut c = EngineCounters::new(3, 1_795_942_811.510_813_5);
        c.num_drafts = 800;
        c.num_draft_tokens = 2400;
        c.num_accepted_tokens = 1500;
        c.accepted_per_pos = vec![600, 500, 400];
        let opts = ExpositionOptions {
            model_name: "Qwen/Qwen3-8B".into(),
            speculative: true,
            multiprocess: false,
        };
        let text = render(&[c.clone()], &opts);
        let reference = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/generated_vllm_dp2.prom"
        ))
        .unwrap();
        for line in [
            "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} 800.0",
            "# TYPE vllm:spec_decode_num_drafts_created gauge",
            "vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} 1.7959428115108135e+09",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"Qwen/Qwen3-8B\",position=\"2\"} 400.0",
        ] {
            assert!(reference.contains(line), "the reference holds {line}");
            assert!(text.contains(line), "the sim writes {line}");
        }
        let multi = render(
            &[c.clone()],
            &ExpositionOptions {
                multiprocess: true,
                ..opts.clone()
            },
        );
        assert!(!multi.contains("_created"));
        let base = render(
            &[c],
            &ExpositionOptions {
                speculative: false,
                ..opts
            },
        );
        assert!(!base.contains("spec_decode"));
        assert!(base.contains("vllm:generation_tokens_total{"));
    }
}
