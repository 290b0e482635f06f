//! `speclens sweep`: the same concurrency sweep against a speculative and a plain server, one
//! `speclens bench` run per arm and point (`spec-c<N>.json`, `base-c<N>.json`, readable as
//! `vllm bench serve` results), then the ratio table, the measured crossing and the model's
//! prediction from the measured acceptance length.

use std::path::{Path, PathBuf};

use serde_json::Value;
use speclens_shared::model::{Costs, Measured};
use speclens_shared::sweep::{Prediction, SweepRow, SweepTable};

use crate::bench;
use crate::cli::{Arm, BenchArgs, SweepArgs};
use crate::error::CollectorError;

/// The measured acceptance of a spec-arm result, as the model takes it: E, k and the draft tokens
/// per draft when the result has both counts (scrape path first, then the per-request path).
/// Reads `vllm bench serve` result files too.
pub fn measured_spec(result: &Value) -> Option<Measured> {
    let ratio = |num: Option<f64>, den: Option<f64>| match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    };
    let scrape_e = result["spec_decode_acceptance_length"].as_f64();
    let scrape_k = result["spec_decode_per_position_acceptance_rates"]
        .as_array()
        .map(|a| a.len() as u32);
    if let (Some(e), Some(k)) = (scrape_e, scrape_k) {
        if e > 0.0 && k > 0 {
            return Some(Measured {
                e,
                k,
                draft_tokens: ratio(
                    result["spec_decode_draft_tokens"].as_f64(),
                    result["spec_decode_num_drafts"].as_f64(),
                ),
            });
        }
    }
    let per_request = &result["spec_decode"]["per_request"];
    let e = per_request["spec_decode_token_weighted_acceptance_length"]["avg"].as_f64()?;
    let k = per_request["pooled_spec_decode_acceptance_histogram"]
        .as_object()?
        .keys()
        .filter_map(|j| j.parse::<u32>().ok())
        .max()?;
    Some(Measured {
        e,
        k: result["spec_decode_num_spec_tokens"]
            .as_u64()
            .map_or(k, |named| named as u32),
        draft_tokens: ratio(
            per_request["total_draft_tokens"]["avg"].as_f64(),
            per_request["total_spec_decode_steps"]["avg"].as_f64(),
        ),
    })
}

/// File name of one point.
pub fn point_file(arm: Arm, concurrency: u64) -> String {
    match arm {
        Arm::Spec => format!("spec-c{concurrency}.json"),
        Arm::Base => format!("base-c{concurrency}.json"),
    }
}

fn read_json(path: &Path) -> Result<Value, CollectorError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CollectorError::Output(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| CollectorError::Output(format!("{} is not JSON: {e}", path.display())))
}

/// `speclens sweep`.
pub async fn run(args: SweepArgs) -> Result<(), CollectorError> {
    run_with(args, None).await
}

/// A sweep feeding `hub` (a dashboard another command serves) when given.
pub async fn run_with(
    args: SweepArgs,
    hub: Option<std::sync::Arc<crate::live::LiveHub>>,
) -> Result<(), CollectorError> {
    let invalid = |m: &str| CollectorError::InvalidArgument(m.to_string());
    let arms: Vec<(Arm, String)> = match (&args.arm, &args.url, &args.spec_url, &args.base_url) {
        (Some(arm), Some(url), None, None) => vec![(*arm, url.clone())],
        (None, None, Some(spec), Some(base)) => vec![(Arm::Spec, spec.clone()), (Arm::Base, base.clone())],
        _ => return Err(invalid("give --spec-url and --base-url, or --arm spec|base with --url")),
    };
    if args.concurrency.is_empty() || args.concurrency.contains(&0) {
        return Err(invalid("--concurrency takes levels ≥ 1"));
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("speclens-results").join(sweep_stamp()));
    let plan: Vec<(Arm, &str, u64, u64)> = arms
        .iter()
        .flat_map(|(arm, url)| {
            args.concurrency.iter().map(move |c| {
                (
                    *arm,
                    url.as_str(),
                    *c,
                    (c * args.requests_per_slot).max(args.min_requests),
                )
            })
        })
        .collect();
    println!("Sweep plan ({} runs) into {}:", plan.len(), out.display());
    for (arm, url, c, n) in &plan {
        println!(
            "  {:<4} concurrency {c:>4}: {n:>5} requests → {url}  ({})",
            arm_name(*arm),
            point_file(*arm, *c)
        );
    }
    if args.dry_run {
        println!("--dry-run: nothing was sent.");
        return Ok(());
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out.display())))?;
    let external = hub.is_some();
    let hub = hub.unwrap_or_else(|| crate::live::LiveHub::new(64));
    let dashboard = if args.dashboard && !external {
        Some(bench::live_dashboard(args.dashboard_port, out.clone(), &hub).await?)
    } else {
        None
    };
    for (arm, url, c, n) in &plan {
        let mut b = BenchArgs::defaults();
        b.urls = vec![url.to_string()];
        b.endpoint = args.endpoint;
        b.model = args.model.clone();
        b.api_key = args.api_key.clone();
        b.concurrency = Some(*c);
        b.num_prompts = *n;
        b.input_tokens = args.input_tokens;
        b.output_tokens = args.output_tokens;
        b.timeout = args.timeout;
        b.no_stream = args.no_stream;
        b.prometheus = args.prometheus.clone();
        b.label = format!("{}-c{c}", arm_name(*arm));
        b.out = Some(out.join(format!("{}-c{c}", arm_name(*arm))));
        b.quiet = true;
        let dir = bench::run_with(b, Some(hub.clone())).await?;
        let result = read_json(&dir.join("result.json"))?;
        bench::report::write_atomic(&out.join(point_file(*arm, *c)), &bench::report::to_json_bytes(&result)?)?;
        let tput = result["output_throughput"].as_f64().unwrap_or(0.0);
        let failed = result["failed"].as_u64().unwrap_or(0);
        let e = measured_spec(&result).map_or(String::new(), |m| {
            format!(", acceptance length {:.2} (k = {})", m.e, m.k)
        });
        println!(
            "  {:<4} c = {c:>4}: {tput:>10.1} output tok/s, {failed} failed{e}",
            arm_name(*arm)
        );
    }
    let table = table_from_dir(
        &out,
        Costs {
            draft_cost: args.draft_cost,
            ridge_tokens: args.ridge,
        },
    )?;
    bench::report::write_atomic(&out.join("sweep.json"), &bench::report::to_json_bytes(&table)?)?;
    println!();
    print!("{}", table.render());
    println!("Results: {}", out.display());
    if let Some(d) = dashboard {
        eprintln!("The dashboard keeps serving at {} — press Ctrl-C to quit.", d.url);
        let _ = tokio::signal::ctrl_c().await;
        d.stop().await?;
    }
    Ok(())
}

fn arm_name(arm: Arm) -> &'static str {
    match arm {
        Arm::Spec => "spec",
        Arm::Base => "base",
    }
}

fn sweep_stamp() -> String {
    crate::bench::report::default_out_dir("sweep")
        .file_name()
        .map_or_else(|| "sweep".into(), |n| n.to_string_lossy().into_owned())
}

/// Concurrency of a `spec-c<N>.json` / `base-c<N>.json` name.
pub fn parse_point_name(name: &str) -> Option<(Arm, u64)> {
    let stem = name.strip_suffix(".json")?;
    let (arm, c) = if let Some(c) = stem.strip_prefix("spec-c") {
        (Arm::Spec, c)
    } else {
        (Arm::Base, stem.strip_prefix("base-c")?)
    };
    c.parse().ok().map(|c| (arm, c))
}

/// The sweep table of every `spec-c<N>.json` / `base-c<N>.json` in `dir`; the prediction uses
/// the measured E of the lowest-concurrency spec point.
pub fn table_from_dir(dir: &Path, costs: Costs) -> Result<SweepTable, CollectorError> {
    let mut rows: Vec<SweepRow> = Vec::new();
    let mut spec_points: Vec<(u64, Value)> = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| CollectorError::Output(format!("cannot read {}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((arm, c)) = parse_point_name(&name) else {
            continue;
        };
        let result = read_json(&entry.path())?;
        let tput = result["output_throughput"].as_f64();
        let row = match rows.iter_mut().find(|r| r.concurrency == c as f64) {
            Some(r) => r,
            None => {
                rows.push(SweepRow {
                    concurrency: c as f64,
                    spec_output_tokens_per_s: None,
                    base_output_tokens_per_s: None,
                });
                rows.last_mut().expect("just pushed")
            }
        };
        match arm {
            Arm::Spec => {
                row.spec_output_tokens_per_s = tput;
                spec_points.push((c, result));
            }
            Arm::Base => row.base_output_tokens_per_s = tput,
        }
    }
    spec_points.sort_by_key(|(c, _)| *c);
    let prediction = spec_points
        .iter()
        .find_map(|(_, r)| measured_spec(r))
        .map(|m| Prediction::new(m.e, m.k, m.draft_tokens, costs));
    Ok(SweepTable::new(rows, prediction))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_names() {
        assert_eq!(parse_point_name("spec-c16.json"), Some((Arm::Spec, 16)));
        assert_eq!(parse_point_name("base-c256.json"), Some((Arm::Base, 256)));
        assert_eq!(parse_point_name("result.json"), None);
        assert_eq!(parse_point_name("spec-cX.json"), None);
        assert_eq!(point_file(Arm::Base, 4), "base-c4.json");
    }

    #[test]
    fn measured_acceptance_from_either_path() {
        let scrape = serde_json::json!({"spec_decode_acceptance_length": 2.5, "spec_decode_per_position_acceptance_rates": [0.8, 0.5, 0.2],
            "spec_decode_num_drafts": 300, "spec_decode_draft_tokens": 778});
        let m = measured_spec(&scrape).unwrap();
        assert_eq!((m.e, m.k), (2.5, 3));
        assert_eq!(m.draft_tokens, Some(778.0 / 300.0));
        let per_request = serde_json::json!({"spec_decode": {"per_request": {
            "spec_decode_token_weighted_acceptance_length": {"unit": "ratio", "avg": 2.1},
            "total_draft_tokens": {"unit": "tokens", "avg": 30.0},
            "total_spec_decode_steps": {"unit": "count", "avg": 8.0},
            "pooled_spec_decode_acceptance_histogram": {"0": 3, "1": 4, "4": 1}}}});
        assert_eq!(
            measured_spec(&per_request),
            Some(Measured {
                e: 2.1,
                k: 4,
                draft_tokens: Some(3.75)
            })
        );
        assert_eq!(measured_spec(&serde_json::json!({})), None);
    }
}
