//! How a run's workload biases the acceptance it measures: random-token prompts, `ignore_eos`,
//! sampling above the proposers' greedy drafting, and prompt categories with too few requests
//! for their interval. One sentence each, for the console and `result.json`.

use crate::results::run_result::RunConfig;

use crate::results::accept::CategoryAcceptance;

/// The relative half-width of a category's 95 % interval above which it has too few requests.
pub const CATEGORY_INTERVAL_MAX: f64 = 0.05;

/// Why a run's acceptance may not stand for real traffic, from how it was made: random-token
/// prompts, `ignore_eos`, sampling above greedy drafting. One sentence each, console order.
pub fn workload_warnings(config: &RunConfig, speculates: bool) -> Vec<String> {
    let mut out = Vec::new();
    if !speculates {
        return out;
    }
    if config.dataset == "synthetic" {
        out.push(
            "Workload: random-token prompts do not stand for real traffic (a proposer finds little to predict in the prompt, while the model's continuation of noise can be repetitive and easy to draft): SPEED-Bench's authors found random-token inputs overestimate speculative throughput by about 23 % (arXiv 2604.09557). Measure on SPEED-Bench, the reference workload (--dataset speed-bench), on your own traffic or on a real dataset (--dataset sharegpt, hf, jsonl, spec-bench)".into(),
        );
    }
    if config.ignore_eos {
        out.push(
            "Workload: ignore_eos made every output run to max_tokens, past where the model would stop; the text after that point is often repetitive and easy to draft, so acceptance is biased high".into(),
        );
    }
    if config.temperature > 0.0 {
        out.push(format!(
            "Workload: temperature {} samples where the proposers draft greedily (EAGLE and n-gram propose their argmax), so fewer drafts are accepted than at temperature 0; compare acceptance only between runs at the same temperature",
            config.temperature
        ));
    }
    out
}

/// Categories whose acceptance length has too wide an interval for the requests they had: a
/// 95 % half-width above [`CATEGORY_INTERVAL_MAX`] of the mean, or fewer than two requests.
pub fn category_warnings(rows: &[CategoryAcceptance]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| match r.acceptance_length_ci95 {
            None if r.requests < 2 => Some(format!(
                "Category {}: {} request{} carried stats: too few for an interval",
                r.category,
                r.requests,
                if r.requests == 1 { "" } else { "s" }
            )),
            Some(h) if h > CATEGORY_INTERVAL_MAX * r.acceptance_length => {
                // n scales with (h / target)²: the requests a ±5 % interval needs.
                let needed = (r.requests as f64 * (h / (CATEGORY_INTERVAL_MAX * r.acceptance_length)).powi(2)).ceil();
                Some(format!(
                    "Category {}: {} requests give acceptance length {:.2} ± {h:.2} (95 %): too few for its interval (about {needed} for ±{:.0} %)",
                    r.category,
                    r.requests,
                    r.acceptance_length,
                    CATEGORY_INTERVAL_MAX * 100.0
                ))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dataset: &str, ignore_eos: bool, temperature: f64) -> RunConfig {
        let mut c: RunConfig = serde_json::from_value(serde_json::json!({
            "urls": [], "endpoint": "chat", "model": "m", "stream": true, "concurrency": 1,
            "request_rate": null, "arrival": "poisson", "burstiness": 1.0, "num_prompts": 1,
            "duration_s": null, "warmup": 0, "seed": 0, "dataset": dataset,
            "dataset_path": null, "categories": [], "input_tokens": 8, "input_tokens_stddev": 0.0,
            "output_tokens": 8, "output_tokens_stddev": 0.0, "temperature": temperature,
            "metrics_endpoints": [], "scrape_interval_s": 1.0, "timeout_s": 600.0,
            "percentiles": [99.0], "header_names": [], "api_key_set": false
        }))
        .unwrap();
        c.ignore_eos = ignore_eos;
        c
    }

    #[test]
    fn each_workload_bias_is_named() {
        let random = workload_warnings(&config("synthetic", true, 0.0), true);
        assert_eq!(random.len(), 2, "{random:?}");
        assert!(random[0].contains("random-token prompts do not stand for real traffic"));
        assert!(random[0].contains("--dataset speed-bench"));
        assert!(random[1].contains("ignore_eos"));
        let hot = workload_warnings(&config("sharegpt", false, 0.8), true);
        assert_eq!(hot.len(), 1);
        assert!(hot[0].contains("temperature 0.8"), "{hot:?}");
        assert!(workload_warnings(&config("sharegpt", false, 0.0), true).is_empty());
        // A plain server has no acceptance to bias.
        assert!(workload_warnings(&config("synthetic", true, 1.0), false).is_empty());
    }

    #[test]
    fn a_category_with_too_few_requests_for_its_interval_is_named() {
        let row = |name: &str, requests: u64, ci: Option<f64>| CategoryAcceptance {
            category: name.into(),
            path: "per_request".into(),
            requests,
            acceptance_length: 2.0,
            acceptance_rate: 50.0,
            per_position_acceptance_rates: Default::default(),
            num_spec_steps: 10,
            accepted_tokens: 10,
            draft_tokens: 20,
            acceptance_length_ci95: ci,
            run: "r".into(),
        };
        let w = category_warnings(&[
            row("code", 4, Some(0.4)),
            row("chat", 200, Some(0.05)),
            row("math", 1, None),
        ]);
        assert_eq!(w.len(), 2, "{w:?}");
        // ±0.4 on 2.0 is 20 %: 4 · (0.4 / 0.1)² = 64 requests for ±5 %.
        assert!(w[0].starts_with("Category code: 4 requests give acceptance length 2.00 ± 0.40 (95 %): too few for its interval (about 64 for ±5 %)"), "{}", w[0]);
        assert!(w[1].contains("math: 1 request carried stats"), "{}", w[1]);
    }
}
