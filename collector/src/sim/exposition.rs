//! The simulated engine's metrics, as each engine writes them: vLLM's `/metrics` (HELP/TYPE
//! lines, sorted labels, `_created` gauges after each counter family, omitted in multiprocess
//! mode, and the Python client's floats `15420.0`, `6.491797e+06`); SGLang's gauges and
//! finish-time counters; TensorRT-LLM's JSON iteration stats and its `trtllm_` Prometheus text;
//! llama.cpp's unlabelled counters printed with 6 significant digits (`1.23457e+06`).

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
    let s = speclens_shared::pyfloat::repr(v);
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

/// C's `%g`: 6 significant digits, exponent form from 1e6 up (`1.23457e+06`), as llama.cpp's
/// server prints its metrics.
pub fn c_general(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return go_float(v).trim_end_matches(".0").to_string();
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |t: &str| -> String {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{v:.*}", (5 - exp) as usize))
    }
}

/// The engine gauges of the latest interval with speculation (what SGLang's and TensorRT-LLM's
/// gauges hold: recent iterations, not a count since start).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecentGauges {
    /// Tokens per verify step, the bonus token included.
    pub acceptance_length: f64,
    /// Accepted / drafted tokens, a fraction.
    pub acceptance_rate: f64,
}

/// All engines' counters summed.
fn summed(engines: &[EngineCounters]) -> EngineCounters {
    let mut sum = EngineCounters::default();
    for c in engines {
        sum.num_drafts += c.num_drafts;
        sum.num_draft_tokens += c.num_draft_tokens;
        sum.num_accepted_tokens += c.num_accepted_tokens;
        sum.prompt_tokens += c.prompt_tokens;
        sum.generation_tokens += c.generation_tokens;
        sum.verify_calls_finished += c.verify_calls_finished;
        sum.generation_finished += c.generation_finished;
        sum.requests_finished += c.requests_finished;
        sum.generation_finished_streaming += c.generation_finished_streaming;
        sum.requests_finished_streaming += c.requests_finished_streaming;
        sum.prompt_tokens_streaming += c.prompt_tokens_streaming;
        sum.running += c.running;
        sum.waiting += c.waiting;
        sum.created_unix_s = c.created_unix_s;
        add_positions(&mut sum.accepted_per_pos, &c.accepted_per_pos);
        add_positions(&mut sum.drafted_per_pos_finished, &c.drafted_per_pos_finished);
        add_positions(&mut sum.accepted_per_pos_finished, &c.accepted_per_pos_finished);
    }
    sum
}

fn add_positions(sum: &mut Vec<u64>, more: &[u64]) {
    if sum.len() < more.len() {
        sum.resize(more.len(), 0);
    }
    for (slot, v) in sum.iter_mut().zip(more) {
        *slot += v;
    }
}

/// SGLang's `/metrics` (`--enable-metrics`, multiprocess collector: no `_created`): the
/// scheduler's spec gauges per rank and the finish-time counters.
pub fn render_sglang(
    engines: &[EngineCounters],
    opts: &ExpositionOptions,
    k: u32,
    recent: Option<RecentGauges>,
) -> String {
    let model = escape_label(&opts.model_name);
    let counter_labels = format!("engine_type=\"unified\",model_name=\"{model}\"");
    let mut out = String::with_capacity(2048);
    let sum = summed(engines);
    if opts.speculative {
        let rank = |i: usize| {
            format!("engine_type=\"unified\",model_name=\"{model}\",moe_ep_rank=\"0\",pp_rank=\"0\",tp_rank=\"{i}\"")
        };
        let per_rank = |v: f64| -> Vec<(String, f64)> { (0..engines.len()).map(|i| (rank(i), v)).collect() };
        if let Some(g) = recent {
            write_gauge(
                &mut out,
                "sglang:spec_accept_length",
                "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).",
                &per_rank(g.acceptance_length),
            );
            write_gauge(
                &mut out,
                "sglang:spec_accept_rate",
                "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch).",
                &per_rank(g.acceptance_rate),
            );
        }
        write_gauge(
            &mut out,
            "sglang:spec_num_steps",
            "Currently active speculative_num_steps.",
            &per_rank(f64::from(k)),
        );
        write_gauge(
            &mut out,
            "sglang:spec_num_draft_tokens",
            "Currently active speculative_num_draft_tokens (decouples from steps under topk>1).",
            &per_rank(f64::from(k + 1)),
        );
        let verify = Family {
            name: "sglang:spec_verify_calls_total",
            help: "Number of speculative decoding verification calls.",
            series: vec![(counter_labels, sum.verify_calls_finished as f64, sum.created_unix_s)],
        };
        write_counter(&mut out, &verify, true);
    }
    // SGLang 0.5.23 labels these `is_streaming`; a label set appears on its first increment.
    for (name, help, total, streamed) in [
        (
            "sglang:generation_tokens_total",
            "Number of generation tokens processed.",
            sum.generation_finished,
            sum.generation_finished_streaming,
        ),
        (
            "sglang:num_requests_total",
            "Number of requests processed.",
            sum.requests_finished,
            sum.requests_finished_streaming,
        ),
        (
            "sglang:prompt_tokens_total",
            "Number of prefill tokens processed.",
            sum.prompt_tokens,
            sum.prompt_tokens_streaming,
        ),
    ] {
        let series: Vec<(String, f64, f64)> = [("false", total - streamed), ("true", streamed)]
            .into_iter()
            .filter(|(_, v)| *v > 0)
            .map(|(streaming, v)| {
                (
                    format!("engine_type=\"unified\",is_streaming=\"{streaming}\",model_name=\"{model}\""),
                    v as f64,
                    sum.created_unix_s,
                )
            })
            .collect();
        if !series.is_empty() {
            write_counter(&mut out, &Family { name, help, series }, true);
        }
    }
    out
}

/// Which of TensorRT-LLM's spec-decode families a `/prometheus/metrics` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrtllmFamilies {
    /// The iteration counters and gauges (`enable_iter_perf_stats`).
    pub iteration: bool,
    /// The per-position pair added as requests finish (builds since PR #12636).
    pub per_position: bool,
}

/// TensorRT-LLM's `/prometheus/metrics` (with `return_perf_metrics`): the speculative config's
/// info gauge, the per-position pair added as requests finish (a position's series once it is
/// non-zero, as TensorRT-LLM's collector creates them), and with `enable_iter_perf_stats` the
/// two iteration counters and the length gauges.
pub fn render_trtllm(
    engines: &[EngineCounters],
    opts: &ExpositionOptions,
    families: TrtllmFamilies,
    recent: Option<RecentGauges>,
) -> String {
    let model = escape_label(&opts.model_name);
    let labels = format!("engine_type=\"pytorch\",model_name=\"{model}\"");
    let sum = summed(engines);
    let mut out = String::with_capacity(2048);
    let requests = Family {
        name: "trtllm_request_success_total",
        help: "Count of successfully processed requests.",
        series: vec![(labels.clone(), sum.requests_finished as f64, sum.created_unix_s)],
    };
    write_counter(&mut out, &requests, opts.multiprocess);
    if !opts.speculative {
        return out;
    }
    let k = sum.accepted_per_pos.len();
    write_gauge(
        &mut out,
        "trtllm_speculative_config_info",
        "Speculative decoding configuration info",
        &[(
            format!("{labels},spec_enabled=\"true\",spec_method=\"Simulated\",spec_num_tokens=\"{k}\""),
            1.0,
        )],
    );
    if families.per_position {
        write_trtllm_per_position(&mut out, &labels, &sum, opts.multiprocess);
    }
    if families.iteration {
        write_trtllm_iteration(&mut out, &labels, &sum, recent, opts.multiprocess);
    }
    out
}

/// TensorRT-LLM's per-position pair, each position's series once it is non-zero.
fn write_trtllm_per_position(out: &mut String, labels: &str, sum: &EngineCounters, multiprocess: bool) {
    for (name, help, per_pos) in [
        (
            "trtllm_spec_decode_drafted_tokens_total",
            "Total drafted tokens per speculative decoding position.",
            &sum.drafted_per_pos_finished,
        ),
        (
            "trtllm_spec_decode_accepted_tokens_total",
            "Total accepted tokens per speculative decoding position.",
            &sum.accepted_per_pos_finished,
        ),
    ] {
        let series: Vec<(String, f64, f64)> = per_pos
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0)
            .map(|(pos, v)| {
                (
                    format!("{labels},token_position=\"{pos}\""),
                    *v as f64,
                    sum.created_unix_s,
                )
            })
            .collect();
        if !series.is_empty() {
            write_counter(out, &Family { name, help, series }, multiprocess);
        }
    }
}

/// TensorRT-LLM's iteration counters and, when a recent window is known, its length gauges.
fn write_trtllm_iteration(
    out: &mut String,
    labels: &str,
    sum: &EngineCounters,
    recent: Option<RecentGauges>,
    multiprocess: bool,
) {
    for (name, help, value) in [
        (
            "trtllm_spec_decode_num_draft_tokens_total",
            "Total number of draft tokens.",
            sum.num_draft_tokens,
        ),
        (
            "trtllm_spec_decode_num_accepted_tokens_total",
            "Total number of accepted draft tokens.",
            sum.num_accepted_tokens,
        ),
    ] {
        let family = Family {
            name,
            help,
            series: vec![(labels.to_string(), value as f64, sum.created_unix_s)],
        };
        write_counter(out, &family, multiprocess);
    }
    if let Some(g) = recent {
        let one = |v: f64| vec![(labels.to_string(), v)];
        write_gauge(
            out,
            "trtllm_spec_decode_acceptance_length",
            "Acceptance length of speculative decoding.",
            &one(g.acceptance_length),
        );
        write_gauge(
            out,
            "trtllm_avg_decoded_tokens_per_iter",
            "Average decoded tokens per iteration.",
            &one(g.acceptance_length),
        );
    }
}

/// TensorRT-LLM's `/metrics`: JSON iteration stats, not Prometheus text.
pub fn render_trtllm_iteration_stats(
    engines: &[EngineCounters],
    iteration: u64,
    recent: Option<RecentGauges>,
) -> String {
    let sum = summed(engines);
    let spec = recent.map(|g| {
        serde_json::json!({"numDraftTokens": sum.num_draft_tokens, "numAcceptedTokens": sum.num_accepted_tokens,
                           "acceptanceLength": g.acceptance_length})
    });
    serde_json::json!([{
        "iter": iteration,
        "numActiveRequests": sum.running,
        "numQueuedRequests": sum.waiting,
        "specDecodingStats": spec,
    }])
    .to_string()
}

/// llama.cpp's `/metrics` (`--metrics`): unlabelled counters, C's `%g` values, the spec-decode
/// families once something was drafted.
pub fn render_llamacpp(engines: &[EngineCounters], opts: &ExpositionOptions) -> String {
    let sum = summed(engines);
    let mut out = String::with_capacity(2048);
    let mut counter = |name: &str, help: &str, samples: &[(String, u64)]| {
        let _ = writeln!(out, "# HELP llamacpp:{name} {help}");
        let _ = writeln!(out, "# TYPE llamacpp:{name} counter");
        for (labels, v) in samples {
            let _ = writeln!(out, "llamacpp:{name}{labels} {}", c_general(*v as f64));
        }
    };
    counter(
        "prompt_tokens_total",
        "Number of prompt tokens processed.",
        &[(String::new(), sum.prompt_tokens)],
    );
    counter(
        "tokens_predicted_total",
        "Number of generation tokens processed.",
        &[(String::new(), sum.generation_tokens)],
    );
    if opts.speculative && sum.num_drafts > 0 {
        counter(
            "spec_decode_num_drafts_total",
            "Number of spec decoding drafts.",
            &[(String::new(), sum.num_drafts)],
        );
        counter(
            "spec_decode_num_draft_tokens_total",
            "Number of draft tokens.",
            &[(String::new(), sum.num_draft_tokens)],
        );
        counter(
            "spec_decode_num_accepted_tokens_total",
            "Number of accepted tokens.",
            &[(String::new(), sum.num_accepted_tokens)],
        );
        let per_pos: Vec<(String, u64)> = sum
            .accepted_per_pos
            .iter()
            .enumerate()
            .map(|(pos, v)| (format!("{{position=\"{pos}\"}}"), *v))
            .collect();
        counter(
            "spec_decode_num_accepted_tokens_per_pos_total",
            "Accepted tokens per draft position.",
            &per_pos,
        );
    }
    out
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

/// A gauge family: its name, its help and its value from an engine's counters.
type Gauge<'a> = (&'a str, &'a str, &'a dyn Fn(&EngineCounters) -> f64);

/// The share of the KV cache's blocks the running sequences hold (0 for no cache).
fn kv_usage(c: &EngineCounters) -> f64 {
    if c.kv_blocks_total == 0 {
        0.0
    } else {
        c.kv_blocks_used as f64 / c.kv_blocks_total as f64
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
    let gauges: [Gauge<'_>; 3] = [
        (
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            &|c| c.running as f64,
        ),
        (
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            &|c| c.waiting as f64,
        ),
        (
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            &kv_usage,
        ),
    ];
    for (name, help, value) in gauges {
        let samples: Vec<(String, f64)> = engines.iter().enumerate().map(|(i, c)| (labels(i), value(c))).collect();
        write_gauge(&mut out, name, help, &samples);
    }
    let counters = [
        (
            "vllm:num_preemptions_total",
            "Cumulative number of preemption from the engine.",
            series(&|c| c.preemptions),
        ),
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
        (
            "vllm:prefix_cache_queries_total",
            "Prefix cache queries, in terms of number of queried tokens.",
            series(&|c| c.prefix_cache_queries),
        ),
        (
            "vllm:prefix_cache_hits_total",
            "Prefix cache hits, in terms of number of cached tokens.",
            series(&|c| c.prefix_cache_hits),
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
    fn llamacpp_values_have_six_significant_digits() {
        assert_eq!(c_general(0.0), "0");
        assert_eq!(c_general(123_456.0), "123456");
        assert_eq!(c_general(999_999.0), "999999");
        assert_eq!(c_general(1_234_567.0), "1.23457e+06");
        assert_eq!(c_general(1_000_000.0), "1e+06");
        assert_eq!(c_general(12.5), "12.5");
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
