//! `speclens sweep`: the same concurrency sweep against a speculative and a plain server, one
//! `speclens bench` run per arm and point (`spec-c<N>.json`, `base-c<N>.json`, readable as
//! `vllm bench serve` results), then the ratio table, the measured crossing and the model's
//! prediction from the measured acceptance length.

use std::path::PathBuf;

use speclens_shared::model::Costs;
use speclens_shared::results::RunResult;
use speclens_shared::sweep::{Arm, SweepTable};

use crate::bench;
use crate::cli::{BenchArgs, SweepArgs};
use crate::error::CollectorError;

/// File name of one point.
pub fn point_file(arm: Arm, concurrency: u64) -> String {
    format!("{}.json", arm.point_id(concurrency))
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
        (Some(arm), Some(url), None, None) => vec![(arm.into(), url.clone())],
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
            arm.name(),
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
    let mut points: Vec<(Arm, u64, RunResult)> = Vec::new();
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
        b.label = arm.point_id(*c);
        b.out = Some(out.join(arm.point_id(*c)));
        b.quiet = true;
        let result = bench::run_with(b, Some(hub.clone())).await?.result;
        bench::report::write_atomic(&out.join(point_file(*arm, *c)), &bench::report::to_json_bytes(&result)?)?;
        let tput = result.output_throughput.unwrap_or(0.0);
        let failed = result.failed.unwrap_or(0);
        let e = result.measured().map_or(String::new(), |m| {
            format!(", acceptance length {:.2} (k = {})", m.e, m.k)
        });
        println!("  {:<4} c = {c:>4}: {tput:>10.1} output tok/s, {failed} failed{e}", arm.name());
        points.push((*arm, *c, result));
    }
    let points: Vec<(Arm, u64, &RunResult)> = points.iter().map(|(a, c, r)| (*a, *c, r)).collect();
    let table = SweepTable::from_points(
        &points,
        Costs {
            draft_cost: args.draft_cost,
            ridge_tokens: args.ridge,
        },
    );
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

fn sweep_stamp() -> String {
    crate::bench::report::default_out_dir("sweep")
        .file_name()
        .map_or_else(|| "sweep".into(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use speclens_shared::model::Measured;

    #[test]
    fn point_names() {
        assert_eq!(Arm::parse_point_name("spec-c16.json"), Some((Arm::Spec, 16)));
        assert_eq!(Arm::parse_point_name("base-c256.json"), Some((Arm::Base, 256)));
        assert_eq!(Arm::parse_point_name("result.json"), None);
        assert_eq!(Arm::parse_point_name("spec-cX.json"), None);
        assert_eq!(point_file(Arm::Base, 4), "base-c4.json");
    }

    #[test]
    fn measured_acceptance_from_either_path() {
        let read = |v: serde_json::Value| serde_json::from_value::<RunResult>(v).unwrap().measured();
        let m = read(serde_json::json!({"spec_decode_acceptance_length": 2.5, "spec_decode_per_position_acceptance_rates": [0.8, 0.5, 0.2],
            "spec_decode_num_drafts": 300, "spec_decode_draft_tokens": 778}))
        .unwrap();
        assert_eq!((m.e, m.k), (2.5, 3));
        assert_eq!(m.draft_tokens, Some(778.0 / 300.0));
        let per_request = serde_json::json!({"spec_decode": {"per_request": {
            "spec_decode_token_weighted_acceptance_length": {"unit": "ratio", "avg": 2.1},
            "spec_decode_zero_step_requests": {"unit": "requests", "avg": 0.0},
            "total_accepted_draft_tokens": {"unit": "tokens", "avg": 9.0},
            "total_draft_tokens": {"unit": "tokens", "avg": 30.0},
            "total_spec_decode_steps": {"unit": "count", "avg": 8.0},
            "pooled_spec_decode_acceptance_histogram": {"0": 3, "1": 4, "4": 1}}}});
        assert_eq!(
            read(per_request),
            Some(Measured {
                e: 2.1,
                k: 4,
                draft_tokens: Some(3.75)
            })
        );
        assert_eq!(read(serde_json::json!({})), None);
    }
}
