//! `speclens accept`: mean acceptance length (and rate, per-position rates) per workload
//! category at a fixed model and k. On the per-request path one run yields every category; a
//! server without per-request stats is measured by scrape, one run per category (the scrape is
//! server-wide). Arrivals are open-loop and slow by default, so batch size does not confound E.

use std::path::{Path, PathBuf};

use speclens_shared::results::accept::{ci95, CategoryAcceptance, PositionMatrix};
use speclens_shared::results::run_result::RunResult;

use crate::bench;
use crate::bench::workload::Dataset;
use crate::error::CollectorError;
use crate::live::LiveHub;
use crate::session::Session;

/// Per-category figures from the records (streamed from a run's `records.jsonl`) carrying
/// per-request stats.
pub fn by_category(records: &Path, run: &str) -> Result<Vec<CategoryAcceptance>, CollectorError> {
    crate::results_folder::history::acceptance_by(records, run, |r| r.category.as_deref())
        .map_err(CollectorError::Output)
}

/// The scrape path's figures of one run, for one category.
fn from_scrape(category: &str, result: &RunResult, run: &str) -> Option<CategoryAcceptance> {
    let per_pos = result.spec_decode_per_position_acceptance_rates.as_ref()?;
    Some(CategoryAcceptance {
        category: category.to_string(),
        path: "scrape".into(),
        requests: result.completed.unwrap_or(0),
        acceptance_length: result.spec_decode_acceptance_length?,
        acceptance_rate: result.spec_decode_acceptance_rate?,
        per_position_acceptance_rates: per_pos.iter().enumerate().map(|(i, v)| (i as u32, *v)).collect(),
        num_spec_steps: result.spec_decode_num_drafts?,
        accepted_tokens: result.spec_decode_accepted_tokens?,
        draft_tokens: result.spec_decode_draft_tokens?,
        acceptance_length_ci95: result
            .per_request()
            .and_then(|p| p.spec_decode_acceptance_length.as_ref())
            .and_then(|l| ci95(l.count, Some(l.std))),
        run: run.to_string(),
    })
}

/// An accept matrix: acceptance per prompt category, at an open-loop rate well below saturation.
#[derive(Clone)]
pub struct Plan {
    /// Categories to measure (empty: every category in the dataset).
    pub categories: Vec<String>,
    pub requests_per_category: u64,
    /// The runs' settings: the server, the dataset, the rate, the scrapes (their prompts,
    /// labels and folders are set per run).
    pub run: bench::Plan,
    /// Results folder (None: `speclens-results/<time>-accept/`).
    pub out: Option<PathBuf>,
    /// Serve the live dashboard on this port while the runs go.
    pub dashboard_port: Option<u16>,
    /// Group by the served model each request named (a base model and its adapters, sent in
    /// turn) instead of by category.
    pub by_model: bool,
}

impl Plan {
    /// The bench run of `category`'s prompts (`count` of them, drawn from the dataset).
    fn category_run(&self, category: &str, count: u64) -> bench::Plan {
        let mut run = self.run.clone();
        run.workload.categories = vec![category.to_string()];
        run.load.prompts = count;
        run
    }

    /// A bench run of exactly the prompts in `file`, into `out`.
    fn file_run(&self, out: PathBuf, file: &Path, count: u64) -> bench::Plan {
        let mut run = self.run.clone();
        run.workload.dataset = Dataset::Jsonl(file.to_path_buf());
        run.workload.categories.clear();
        run.load.prompts = count;
        if let Some(name) = out.file_name() {
            run.output.label = format!("accept-{}", name.to_string_lossy());
        }
        run.output.dir = Some(out);
        run.output.print = false;
        run
    }

    /// What does not hold together, before anything is sent.
    pub fn check(&self) -> Result<(), CollectorError> {
        if self.requests_per_category == 0 {
            return Err(CollectorError::InvalidArgument(
                "--requests-per-category must be ≥ 1".into(),
            ));
        }
        if self.by_model && self.run.target.models.len() < 2 {
            return Err(CollectorError::InvalidArgument(
                "--by-model compares served models: name two or more with --model (a base model and its adapters)"
                    .into(),
            ));
        }
        self.run.check()
    }

    fn url(&self) -> &str {
        self.run.target.urls.first().map_or("", String::as_str)
    }
}

/// `speclens accept`: returns the rows it measured.
pub async fn run(plan: Plan) -> Result<Vec<CategoryAcceptance>, CollectorError> {
    run_with(plan, None).await
}

/// An accept run feeding `hub` (a dashboard another command serves) when given.
pub async fn run_with(args: Plan, hub: Option<LiveHub>) -> Result<Vec<CategoryAcceptance>, CollectorError> {
    args.check()?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| crate::results_folder::write::default_out_dir("accept"));
    std::fs::create_dir_all(&out)
        .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", out.display())))?;
    let _lock = crate::results_folder::write::lock_dir(&out)?;
    let categories = if args.categories.is_empty() {
        dataset_categories(&args)?
    } else {
        args.categories.clone()
    };
    crate::statusln!(
        "Acceptance by category at {} req/s open loop: {} × {} requests → {}",
        args.run.load.request_rate.unwrap_or(f64::INFINITY),
        categories.len(),
        args.requests_per_category,
        crate::net::redact_url(args.url())
    );
    let mut session = Session::new(hub, args.dashboard_port);
    session.serve(args.dashboard_port, out.clone()).await?;
    let hub = &session.hub;
    // Exactly N prompts per category, written as the runs' workload.
    let plan = plan_workload(&args, &categories)?;
    for note in &plan.notes {
        crate::statusln!("  {note}");
    }
    // One request first: does the server return per-request stats?
    let probe = bench::run_with(
        args.file_run(
            out.join("probe"),
            &write_workload(&out, "probe", &plan.prompts[..1])?,
            1,
        ),
        Some(hub.clone()),
    )
    .await?;
    let per_request = probe.tally.with_full_stats > 0;
    let label_of = category_labels(&categories);
    let rows = if per_request {
        // One run over every category: the per-request path splits it by category.
        let file = write_workload(&out, "all-categories", &plan.prompts)?;
        let run = bench::run_with(
            args.file_run(out.join("all-categories"), &file, plan.prompts.len() as u64),
            Some(hub.clone()),
        )
        .await?;
        let records = run.dir.join(crate::results_folder::history::RECORDS);
        if args.by_model {
            crate::results_folder::history::acceptance_by(&records, "all-categories", |r| r.model.as_deref())
                .map_err(CollectorError::Output)?
        } else {
            let rows = by_category(&records, "all-categories")?;
            for category in categories.iter().filter(|c| !rows.iter().any(|r| &r.category == *c)) {
                crate::statusln!(
                    "  {category}: no drafts in its {} requests, so no acceptance to report (no file)",
                    args.requests_per_category
                );
            }
            rows
        }
    } else if args.by_model {
        return Err(CollectorError::Server(
            "the server returned no per-request stats: its counters are server-wide, so acceptance cannot be split by served model (turn the stats on, see `speclens probe`)".into(),
        ));
    } else {
        crate::statusln!("The server returned no per-request stats: measuring by scrape, one run per category.");
        by_scrape(&args, &plan, &categories, hub, &out).await?
    };
    for row in &rows {
        let path = out.join(format!("accept-{}.json", label_of(&row.category)));
        crate::results_folder::write::write_atomic(&path, &crate::results_folder::write::to_json_bytes(row)?)?;
    }
    if let Some(matrix) = PositionMatrix::of(&rows) {
        use speclens_shared::results::accept::{POSITION_MATRIX_CSV, POSITION_MATRIX_JSON};
        let write = crate::results_folder::write::write_atomic;
        write(
            &out.join(POSITION_MATRIX_JSON),
            &crate::results_folder::write::to_json_bytes(&matrix)?,
        )?;
        write(&out.join(POSITION_MATRIX_CSV), matrix.csv().as_bytes())?;
    }
    crate::console::status(&crate::accept_table::render(
        &rows,
        if args.by_model { "model" } else { "category" },
    ));
    for warning in speclens_shared::results::warnings::category_warnings(&rows) {
        crate::statusln!("Note: {warning}");
    }
    crate::statusln!("Results: {}", out.display());
    session.close("the acceptance runs").await?;
    Ok(rows)
}

/// One run per category, each measured by the server's counters before and after it.
async fn by_scrape(
    args: &Plan,
    plan: &WorkloadPlan,
    categories: &[String],
    hub: &LiveHub,
    out: &Path,
) -> Result<Vec<CategoryAcceptance>, CollectorError> {
    let label_of = category_labels(categories);
    let mut rows = Vec::new();
    for category in categories {
        let name = format!("category-{}", label_of(category));
        let prompts: Vec<_> = plan
            .prompts
            .iter()
            .filter(|p| p.category.as_deref() == Some(category))
            .cloned()
            .collect();
        let file = write_workload(out, &name, &prompts)?;
        let run = bench::run_with(
            args.file_run(out.join(&name), &file, prompts.len() as u64),
            Some(hub.clone()),
        )
        .await?;
        match from_scrape(category, &run.result, &name) {
            Some(row) => rows.push(row),
            None => crate::statusln!(
                "  {category}: no spec-decode figures ({})",
                run.result.not_available().join("; ")
            ),
        }
    }
    Ok(rows)
}

/// The accept runs' prompts: exactly `--requests-per-category` of each category.
struct WorkloadPlan {
    prompts: Vec<bench::workload::Prompt>,
    /// One line per category that has fewer prompts than requests (they are reused).
    notes: Vec<String>,
}

/// Write `prompts` as a JSONL workload (`<name>.workload.jsonl` in `out`): the file a bench run
/// of exactly these prompts reads.
fn write_workload(out: &Path, name: &str, prompts: &[bench::workload::Prompt]) -> Result<PathBuf, CollectorError> {
    let mut text = String::new();
    for p in prompts {
        let line = serde_json::json!({"prompt": p.text, "category": p.category, "max_tokens": p.max_tokens});
        text.push_str(&line.to_string());
        text.push('\n');
    }
    let path = out.join(format!("{name}.workload.jsonl"));
    crate::results_folder::write::write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// Each category's prompts shuffled by the seed and cycled to exactly N (so a category with
/// fewer than N prompts reuses them, each in turn), every category present.
fn plan_workload(args: &Plan, categories: &[String]) -> Result<WorkloadPlan, CollectorError> {
    let n = args.requests_per_category;
    if n == 0 {
        return Err(CollectorError::InvalidArgument(
            "--requests-per-category must be ≥ 1".into(),
        ));
    }
    let tokens = bench::tokens::TokenCounter::new();
    let mut prompts = Vec::new();
    let mut notes = Vec::new();
    for category in categories {
        let run = args.category_run(category, n);
        let chosen = bench::workload::load(&run.workload, n as usize, &tokens)?;
        let unique: std::collections::BTreeSet<&str> = chosen.iter().map(|p| p.text.as_str()).collect();
        if (unique.len() as u64) < n {
            notes.push(format!(
                "{category}: {} distinct prompt{} for {n} requests, drawn with replacement (each reused in turn, in a seeded order)",
                unique.len(),
                if unique.len() == 1 { "" } else { "s" }
            ));
        }
        prompts.extend(chosen);
    }
    Ok(WorkloadPlan { prompts, notes })
}

/// One file label a category, unique and bounded, for its folder and its file (a category not
/// in the list gets its plain label).
fn category_labels(categories: &[String]) -> impl Fn(&String) -> String + '_ {
    let labels: std::collections::BTreeMap<&String, String> = categories
        .iter()
        .zip(speclens_shared::file_label::unique_file_labels(categories))
        .collect();
    move |category| {
        labels
            .get(category)
            .cloned()
            .unwrap_or_else(|| speclens_shared::file_label::result_file_label(category))
    }
}

/// Every category named in the dataset file.
fn dataset_categories(args: &Plan) -> Result<Vec<String>, CollectorError> {
    let path = args.run.workload.dataset.path().unwrap_or(Path::new(""));
    let mut cats = std::collections::BTreeSet::new();
    crate::bench::datafile::for_each_line(path, args.run.workload.max_dataset_bytes, |_, line| {
        if let Some(category) = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v["category"].as_str().map(str::to_string))
        {
            cats.insert(category);
        }
        Ok(())
    })?;
    let cats: Vec<String> = cats.into_iter().collect();
    if cats.is_empty() {
        return Err(CollectorError::InvalidArgument(format!(
            "{} names no categories",
            path.display()
        )));
    }
    Ok(cats)
}
