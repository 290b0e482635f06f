//! `speclens sweep`: the same concurrency sweep against a speculative and a plain server,
//! `--repeats` `speclens bench` runs per arm and point (the median's result is
//! `spec-c<N>.json` / `base-c<N>.json`, readable as `vllm bench serve` results), then the ratio
//! table of steady-state throughputs with the repeats' spread, the measured crossing with its
//! interval, and the model's prediction from the measured acceptance length.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use speclens_shared::model::Costs;
use speclens_shared::results::RunResult;
use speclens_shared::sweep::{throughput, Arm, SweepTable};

use crate::bench;
use crate::error::{CollectorError, Signal};
use crate::live::LiveHub;

/// File name of one point.
pub fn point_file(arm: Arm, concurrency: u64) -> String {
    format!("{}.json", arm.point_id(concurrency))
}

/// A sweep: the same closed-loop run at each concurrency, against each arm.
#[derive(Clone)]
pub struct Plan {
    /// The arms and their servers' base URLs.
    pub arms: Vec<(Arm, String)>,
    /// Concurrency levels.
    pub levels: Vec<u64>,
    /// Requests per concurrency slot at each point, and at least `min_requests`.
    pub requests_per_slot: u64,
    pub min_requests: u64,
    /// Runs per point; the median counts, the others give its spread.
    pub repeats: u32,
    /// Every point's run: target settings, workload, scrape and percentiles (its servers,
    /// load, label and folder are set per point).
    pub point: bench::Plan,
    /// The model's costs for the prediction.
    pub costs: Costs,
    /// Results folder (None: `speclens-results/<time>-sweep/`).
    pub out: Option<PathBuf>,
    /// Print the points and run nothing.
    pub dry_run: bool,
    /// Serve the live dashboard on this port while the sweep runs.
    pub dashboard_port: Option<u16>,
}

/// One point of a sweep.
struct Point<'a> {
    arm: Arm,
    url: &'a str,
    concurrency: u64,
    requests: u64,
}

impl Plan {
    pub fn check(&self) -> Result<(), CollectorError> {
        let invalid = |m: &str| Err(CollectorError::InvalidArgument(m.into()));
        if self.levels.is_empty() || self.levels.contains(&0) {
            return invalid("--concurrency takes levels ≥ 1");
        }
        if self.requests_per_slot == 0 && self.min_requests == 0 {
            return invalid("--requests-per-slot or --min-requests must be at least 1");
        }
        if self.repeats == 0 {
            return invalid("--repeats must be at least 1");
        }
        let c = &self.costs;
        if !(c.draft_cost.is_finite() && c.draft_cost >= 0.0 && c.ridge_tokens.is_finite() && c.ridge_tokens > 0.0) {
            return invalid("--draft-cost must be a finite number ≥ 0 and --ridge one > 0");
        }
        // Every point's run: the same settings, checked once before anything is sent.
        self.point.check_settings()
    }

    fn points(&self) -> Vec<Point<'_>> {
        self.arms
            .iter()
            .flat_map(|(arm, url)| {
                self.levels.iter().map(move |c| Point {
                    arm: *arm,
                    url,
                    concurrency: *c,
                    requests: (c * self.requests_per_slot).max(self.min_requests),
                })
            })
            .collect()
    }

    /// The bench run of one point's `repeat` (1-based). The metrics URLs given belong to the
    /// speculative arm.
    fn point_plan(&self, point: &Point<'_>, repeat: u32, out: &std::path::Path) -> bench::Plan {
        let mut plan = self.point.clone();
        plan.target.urls = vec![point.url.to_string()];
        plan.load = bench::plan::Load {
            concurrency: Some(point.concurrency),
            prompts: point.requests,
            ..bench::plan::Load::closed_loop(None, 0)
        };
        plan.load.warmup = self.point.load.warmup;
        plan.load.drain = self.point.load.drain;
        if point.arm != Arm::Spec {
            plan.scrape.metrics_urls.clear();
        }
        let id = point.arm.point_id(point.concurrency);
        plan.output.label = id.clone();
        plan.output.dir = Some(if self.repeats == 1 {
            out.join(id)
        } else {
            out.join(format!("{id}-r{repeat}"))
        });
        plan.output.print = false;
        plan.dashboard_port = None;
        plan
    }
}

/// `speclens sweep`.
pub async fn run(plan: Plan) -> Result<(), CollectorError> {
    run_with(plan, None).await
}

/// A sweep feeding `hub` (a dashboard another command serves) when given.
pub async fn run_with(plan: Plan, hub: Option<LiveHub>) -> Result<(), CollectorError> {
    plan.check()?;
    let out = plan
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("speclens-results").join(sweep_stamp()));
    let points = plan.points();
    let mut text = format!("Sweep plan ({} runs) into {}:\n", points.len(), out.display());
    for p in &points {
        text.push_str(&format!(
            "  {:<4} concurrency {:>4}: {:>5} requests → {}  ({})\n",
            p.arm.name(),
            p.concurrency,
            p.requests,
            crate::bench::redact_url(p.url),
            point_file(p.arm, p.concurrency)
        ));
    }
    crate::console::status(&text);
    if plan.dry_run {
        crate::console::status("--dry-run: nothing was sent.\n");
        return Ok(());
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out.display())))?;
    let external = hub.is_some();
    let hub = hub.unwrap_or_else(|| LiveHub::new(64));
    let dashboard = match plan.dashboard_port {
        Some(port) if !external => Some(bench::live_dashboard(port, out.clone(), &hub).await?),
        _ => None,
    };
    let mut results: Vec<(Arm, u64, RunResult)> = Vec::new();
    let mut spreads: Vec<(Arm, u64, f64, f64)> = Vec::new();
    let mut stopped = None;
    // A signal between two points (no run listening) stops the sweep before the next one.
    let caught: Arc<OnceLock<Signal>> = Arc::default();
    let watcher = tokio::spawn({
        let caught = caught.clone();
        async move {
            let _ = caught.set(crate::net::stop_signal().await);
        }
    });
    'points: for p in &points {
        let mut repeats: Vec<(PathBuf, RunResult)> = Vec::new();
        for repeat in 1..=plan.repeats {
            if let Some(signal) = caught.get() {
                stopped = Some(*signal);
                break 'points;
            }
            let run = bench::run_with(plan.point_plan(p, repeat, &out), Some(hub.clone())).await?;
            // A stopped point is left out: the sweep ends with the points it finished.
            if let Some(signal) = run.interrupted {
                stopped = Some(signal);
                break 'points;
            }
            repeats.push((run.dir, run.result));
        }
        let (dir, result, spread) = median_run(repeats);
        // The median's folder is the point's (`spec-c16/`, as with one repeat); the others
        // keep their `-r<N>` names.
        let point_dir = out.join(p.arm.point_id(p.concurrency));
        if dir != point_dir {
            if point_dir.exists() {
                std::fs::remove_dir_all(&point_dir)
                    .map_err(|e| CollectorError::Output(format!("cannot replace {}: {e}", point_dir.display())))?;
            }
            std::fs::rename(&dir, &point_dir)
                .map_err(|e| CollectorError::Output(format!("cannot rename {}: {e}", dir.display())))?;
        }
        if let Some((lo, hi)) = spread {
            spreads.push((p.arm, p.concurrency, lo, hi));
        }
        let file = out.join(point_file(p.arm, p.concurrency));
        bench::output::write_atomic(&file, &bench::output::to_json_bytes(&result)?)?;
        let e = result.measured().map_or(String::new(), |m| {
            format!(", acceptance length {:.2} (k = {})", m.e, m.k)
        });
        let spread = spread.map_or(String::new(), |(lo, hi)| {
            format!(" (median of {}: {lo:.1}–{hi:.1})", plan.repeats)
        });
        crate::console::status(&format!(
            "  {:<4} c = {:>4}: {:>10.1} output tok/s{spread}, {} failed{e}\n",
            p.arm.name(),
            p.concurrency,
            throughput(&result).unwrap_or(0.0),
            result.failed.unwrap_or(0),
        ));
        results.push((p.arm, p.concurrency, result));
    }
    watcher.abort();
    // Points this folder holds from earlier runs (`--arm spec`, then `--arm base`) join the table.
    let earlier = earlier_points(&out, &results)?;
    if !earlier.is_empty() {
        let names: Vec<String> = earlier.iter().map(|(a, c, _)| a.point_id(*c)).collect();
        crate::console::status(&format!(
            "  with points measured earlier in {}: {}\n",
            out.display(),
            names.join(", ")
        ));
    }
    let measured: Vec<(Arm, u64, &RunResult)> = results.iter().chain(&earlier).map(|(a, c, r)| (*a, *c, r)).collect();
    let table = SweepTable::from_points(&measured, plan.costs).with_spreads(&spreads);
    bench::output::write_atomic(&out.join("sweep.json"), &bench::output::to_json_bytes(&table)?)?;
    crate::console::status(&format!("\n{}Results: {}\n", table.render(), out.display()));
    if let Some(signal) = stopped {
        return Err(CollectorError::Interrupted {
            message: format!(
                "stopped by {}: the sweep's finished points and their table are saved in {}",
                signal.name(),
                out.display()
            ),
            signal,
        });
    }
    if let Some(d) = dashboard {
        eprintln!("The dashboard keeps serving at {} — press Ctrl-C to quit.", d.url);
        let _ = crate::net::stop_signal().await;
        d.stop().await?;
    }
    Ok(())
}

/// The repeat of median throughput (a run that happened, never an average) with its folder,
/// and the repeats' (min, max) when there were several.
fn median_run(mut repeats: Vec<(PathBuf, RunResult)>) -> (PathBuf, RunResult, Option<(f64, f64)>) {
    let of = |r: &RunResult| throughput(r).unwrap_or(0.0);
    repeats.sort_by(|a, b| of(&a.1).total_cmp(&of(&b.1)));
    let spread = (repeats.len() > 1).then(|| (of(&repeats[0].1), of(&repeats[repeats.len() - 1].1)));
    let middle = (repeats.len() - 1) / 2;
    let (dir, result) = repeats.swap_remove(middle);
    (dir, result, spread)
}

/// The point files in `out` that this run did not measure again.
fn earlier_points(
    out: &std::path::Path,
    ran: &[(Arm, u64, RunResult)],
) -> Result<Vec<(Arm, u64, RunResult)>, CollectorError> {
    let found = crate::read::result_files(out)?;
    for (_, why) in &found.skipped {
        eprintln!("speclens sweep: skipped {why}");
    }
    Ok(found
        .files
        .into_iter()
        .filter_map(|(name, result)| {
            let (arm, c) = Arm::parse_point_name(&name)?;
            (!ran.iter().any(|(a, rc, _)| (*a, *rc) == (arm, c))).then_some((arm, c, result))
        })
        .collect())
}

fn sweep_stamp() -> String {
    crate::bench::output::default_out_dir("sweep")
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
