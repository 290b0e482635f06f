//! The overview: the landing view of `speclens serve`, the demo's end and every report. From the
//! newest measured run, sweep and accept folder: the measured acceptance (E, α, rate, per
//! position beside the geometric curve), the break-even (measured with its spread beside the
//! model, in one sentence), the speedup at the lowest concurrency, the best k, the sweep and
//! category charts, latency at a glance, and links into each detail view.

use leptos::prelude::*;
use speclens_shared::chart::{colors, draw_per_position, hover, CategoryBar, Positions, XFrame};
use speclens_shared::glossary::Term;
use speclens_shared::model::speedup::{Costs, KChoice};
use speclens_shared::results::accept::AcceptMatrix;
use speclens_shared::results::run_list::RunList;
use speclens_shared::results::run_result::RunResult;
use speclens_shared::sweep::{Axis, SweepFile};
use speclens_shared::view::headline::{run_whatif_link, Headline};
use speclens_shared::view::overview::{
    arm_lines, batch_text, break_even_of_headline, pick_run, positions_sentence, sources_sentence, speedup_sentence,
    AcceptanceSummary, BreakEvenSummary,
};
use speclens_shared::view::run::{run_view_from_result, RunView};
use speclens_shared::Error;

use crate::api::fetch_json;
use crate::chart::canvas::{chart_canvas, Draw, Root};
use crate::components::charts::{category_bars, CategoryChart, SweepChart};
use crate::components::figures::latency_row;

/// Everything the overview shows, fetched once.
#[derive(Clone)]
struct Loaded {
    list: RunList,
    /// The run the overview describes: its id, why it was chosen, and its result.
    run: Option<(String, String, RunResult)>,
    sweep: Option<(String, SweepFile)>,
    accept: Option<(String, AcceptMatrix)>,
}

async fn load() -> Result<Loaded, String> {
    let list = fetch_json::<RunList>("/api/runs".into()).await?;
    let sweep = match list.sweeps.first() {
        Some(id) => Some((id.clone(), fetch_json::<SweepFile>(format!("/api/sweeps/{id}")).await?)),
        None => None,
    };
    let headline = sweep.as_ref().and_then(|(_, t)| Headline::of_sweep(t));
    let picked = pick_run(
        &list.runs,
        sweep
            .as_ref()
            .zip(headline.as_ref())
            .map(|((id, _), h)| (id.as_str(), h)),
    )
    .map(|(entry, why)| (entry.id.clone(), why));
    let run = match picked {
        Some((id, why)) => Some((
            id.clone(),
            why,
            fetch_json::<RunResult>(format!("/api/runs/{id}")).await?,
        )),
        None => None,
    };
    let accept = match list.accepts.first() {
        Some(id) => Some((
            id.clone(),
            fetch_json::<AcceptMatrix>(format!("/api/accept/{id}")).await?,
        )),
        None => None,
    };
    Ok(Loaded {
        list,
        run,
        sweep,
        accept,
    })
}

/// The measured acceptance by position beside the geometric curve of the same E.
struct MeasuredPositions;

impl Draw<AcceptanceSummary> for MeasuredPositions {
    fn draw(a: &AcceptanceSummary, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        let measured = [Positions {
            label: a.positions.label.clone(),
            color: colors::ACCEPTED,
            rates: a.positions.rates.clone(),
        }];
        draw_per_position(root, &measured, a.acceptance_length, scale)
    }

    fn hover(a: &AcceptanceSummary, x: f64) -> Option<String> {
        let measured = [Positions {
            label: a.positions.label.clone(),
            color: colors::ACCEPTED,
            rates: a.positions.rates.clone(),
        }];
        hover::positions_at(&measured, a.implied_alpha, x)
    }
}

/// The overview's headline tiles: acceptance, break-even, speedup and the best k.
fn overview_tiles(
    acceptance: Option<&AcceptanceSummary>,
    break_even: Option<&BreakEvenSummary>,
    best: Option<KChoice>,
    best_loaded: Option<(f64, KChoice)>,
) -> Vec<impl IntoView> {
    let mut tiles = Vec::new();
    if let Some(a) = acceptance {
        tiles.push(tile(
            "ov-e",
            Term::AcceptanceLength,
            "Acceptance length E".into(),
            format!("{:.2}", a.acceptance_length),
        ));
        tiles.push(tile(
            "ov-alpha",
            Term::ImpliedAlpha,
            format!("Implied α (k = {})", a.k),
            format!("{:.3}", a.implied_alpha),
        ));
        if let Some(rate) = a.acceptance_rate {
            tiles.push(tile(
                "ov-rate",
                Term::AcceptanceRate,
                "Acceptance rate (%)".into(),
                format!("{rate:.1}"),
            ));
        }
    }
    if let Some(b) = break_even {
        let measured = b.measured.map_or("none in range".to_string(), batch_text);
        let (crossing_label, speedup_label) = match b.axis {
            Axis::Concurrency => ("Measured break-even B*", "Speedup at concurrency"),
            Axis::RequestRate => ("Measured break-even λ* (req/s)", "Latency speedup at req/s"),
        };
        tiles.push(tile("ov-crossing", Term::Crossing, crossing_label.into(), measured));
        if let Some(p) = b.predicted {
            tiles.push(tile(
                "ov-predicted",
                Term::ModelBreakEven,
                "Model's B*".into(),
                batch_text(p),
            ));
        }
        if let Some((c, ratio)) = b.lowest {
            tiles.push(tile(
                "ov-speedup",
                Term::Ratio,
                format!("{speedup_label} {}", batch_text(c)),
                format!("{ratio:.2}×"),
            ));
        }
    }
    if let Some(k) = best {
        tiles.push(tile(
            "ov-best-k",
            Term::BestK,
            "Best k at batch 1".into(),
            k.k.to_string(),
        ));
    }
    if let Some((b, k)) = best_loaded {
        tiles.push(tile(
            "ov-best-k-loaded",
            Term::BestK,
            format!("Best k at batch {b:.0}"),
            k.k.to_string(),
        ));
    }
    tiles
}

/// A headline tile: its label, value and the glossary's definition on hover and focus.
fn tile(id: &'static str, term: Term, label: String, value: String) -> impl IntoView {
    view! { <div class="tile" id=id title=term.definition() tabindex="0"><div class="tile-label">{label}</div><div class="tile-value">{value}</div></div> }
}

#[component]
pub fn OverviewPage() -> impl IntoView {
    let loaded = LocalResource::new(load);
    view! {
        <section class="page overview">
            <h1>"Overview"</h1>
            {move || match loaded.get() {
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" id="overview-error">"Cannot read the results: " {e}</p> }.into_any(),
                Some(Ok(data)) if data.run.is_none() && data.sweep.is_none() && data.accept.is_none() => view! {
                    <div class="empty" id="overview-empty">
                        <p>{format!("Nothing has been measured in {} yet.", data.list.results_dir)}</p>
                        <p class="hint">"Run " <code>"speclens demo"</code> " for a complete example on the embedded simulated engine, or measure a server with "
                            <code>"speclens bench --url http://127.0.0.1:8000 --out results/my-run"</code>
                            " (" <code>"speclens sweep"</code> " for the break-even, " <code>"speclens accept"</code> " by prompt category), then reload this page."</p>
                    </div>
                }.into_any(),
                Some(Ok(data)) => view! { <OverviewBody data=data/> }.into_any(),
            }}
        </section>
    }
}

/// The chosen run's latency figures (mean, median, p99) with a link to the run.
#[component]
fn LatencyGlance(r: RunView, id: String, why: String) -> impl IntoView {
    view! {
        <div>
            <h3>"Latency at a glance (ms)"</h3>
            <p class="hint" id="overview-latency-run">{format!("Run {id}: {why}.")}</p>
            <div class="table-box">
                <table class="model-table" id="overview-latency">
                    <thead><tr><th>""</th><th>"mean"</th><th>"median"</th><th>"p99"</th></tr></thead>
                    <tbody>
                        {latency_row(Term::Ttft, r.ttft_ms.clone())}
                        {latency_row(Term::Tpot, r.tpot_ms.clone())}
                        {latency_row(Term::Itl, r.itl_ms.clone())}
                        {latency_row(Term::E2el, r.e2el_ms.clone())}
                    </tbody>
                </table>
            </div>
            <p><a href=format!("#runs?open={id}")>"This run in full →"</a></p>
        </div>
    }
}

/// The model's best k from the measured per-position rates at batch 1, and near the break-even
/// (where a shorter draft can still pay where the measured k does not), on the sweep's costs.
fn best_choices(
    data: &Loaded,
    acceptance: Option<&AcceptanceSummary>,
    break_even: Option<&BreakEvenSummary>,
) -> (Option<KChoice>, Option<(f64, KChoice)>) {
    let costs = data
        .sweep
        .as_ref()
        .and_then(|(_, t)| t.head().prediction.as_ref().map(|p| p.costs))
        .unwrap_or(Costs::H100_FREE_DRAFTS);
    let best = acceptance.and_then(|a| a.best_k(costs, 1.0));
    let loaded_batch = break_even.and_then(|b| b.measured.or(b.predicted)).filter(|b| *b > 1.0);
    let best_loaded = acceptance
        .zip(loaded_batch)
        .and_then(|(a, b)| Some((b, a.best_k(costs, b)?)));
    (best, best_loaded)
}

#[component]
fn OverviewBody(data: Loaded) -> impl IntoView {
    // With a sweep, the story is about its headline arm (recommended, else first): the
    // acceptance, the break-even and the what-if link are all that arm's.
    let headline = data.sweep.as_ref().and_then(|(_, t)| Headline::of_sweep(t));
    let acceptance = match &headline {
        Some(h) => AcceptanceSummary::of_headline(h),
        None => data.run.as_ref().and_then(|(_, _, r)| AcceptanceSummary::of(r)),
    };
    let break_even = data
        .sweep
        .as_ref()
        .map(|(_, t)| break_even_of_headline(t, headline.as_ref()));
    let run_view: Option<RunView> = data.run.as_ref().map(|(_, _, r)| run_view_from_result(r));
    let (best, best_loaded) = best_choices(&data, acceptance.as_ref(), break_even.as_ref());

    let tiles = overview_tiles(acceptance.as_ref(), break_even.as_ref(), best, best_loaded);

    let bars: Option<Vec<CategoryBar>> = data.accept.as_ref().map(|(_, m)| category_bars(m));
    let acceptance_line = acceptance.as_ref().map(|a| positions_sentence(a, best, best_loaded));
    let whatif = match &headline {
        Some(h) => Some(h.whatif_link().0),
        None => run_view
            .as_ref()
            .and_then(run_whatif_link)
            .map(|(fragment, _)| fragment),
    };
    let run_id = data.run.as_ref().map(|(id, why, _)| (id.clone(), why.clone()));
    let accept_id = data.accept.as_ref().map(|(id, _)| id.clone());
    let speedup_line = break_even.as_ref().and_then(speedup_sentence);
    let arms = data
        .sweep
        .as_ref()
        .map(|(_, t)| arm_lines(t))
        .filter(|lines| !lines.is_empty());
    let recommendation = data
        .sweep
        .as_ref()
        .and_then(|(_, t)| t.recommendation.as_ref())
        .map(|r| r.summary());
    let sources = sources_sentence(
        data.run.as_ref().map(|(id, why, _)| (id.as_str(), why.as_str())),
        data.sweep.as_ref().map(|(id, _)| id.as_str()),
        data.accept.as_ref().map(|(id, _)| id.as_str()),
        headline.as_ref(),
        acceptance.is_some(),
    );
    view! {
        {sources.map(|s| view! { <p class="hint" id="overview-sources">{s}</p> })}
        <div class="tiles" id="overview-tiles">{tiles}</div>
        {break_even.as_ref().map(|b| view! { <p class="headline" id="overview-break-even">{b.sentence.clone()}</p> })}
        // With several arms the recommendation's ranges are the one sentence to act on; each
        // arm's line against plain follows as its evidence.
        {recommendation.map(|s| view! { <p class="headline" id="overview-recommendation">{s}</p> })}
        {arms.map(|lines| view! {
            <div class="findings" id="overview-arms">
                {lines.into_iter().map(|line| view! { <p>{line}</p> }).collect_view()}
            </div>
        })}
        {speedup_line.map(|s| view! { <p id="overview-speedup">{s}</p> })}
        <div class="grid2">
            {data.sweep.clone().map(|(id, table)| view! {
                <div class="chart-box"><h3>{if table.axis.is_concurrency() { "Throughput by concurrency" } else { "Latency by request rate" }}</h3>
                    {chart_canvas::<_, SweepChart>("overview-sweep", "mid-chart", "speclens-sweep".into(), Signal::stored(table.clone()))}
                    {table.unsteady_note().map(|line| view! { <p class="hint" id="overview-unsteady">{line}</p> })}
                    <p><a href=format!("#runs?sweep={id}")>"The sweep, point by point →"</a></p>
                </div>
            })}
            {acceptance.clone().zip(acceptance_line).map(|(a, line)| view! {
                <div class="chart-box"><h3>"Acceptance by draft position"</h3>
                    {chart_canvas::<_, MeasuredPositions>("overview-positions", "mid-chart", "speclens-acceptance-by-position".into(), Signal::stored(a))}
                    <p class="hint" id="overview-acceptance">{line}</p>
                </div>
            })}
        </div>
        <div class="grid2">
            {accept_id.clone().zip(bars).map(|(id, bars)| view! {
                <div class="chart-box"><h3>"Acceptance length by prompt category"</h3>
                    {chart_canvas::<_, CategoryChart>("overview-accept", "small-chart", "speclens-acceptance-by-category".into(), Signal::stored(bars))}
                    <p><a href=format!("#runs?accept={id}")>"Every category's figures →"</a></p>
                </div>
            })}
            {run_view.clone().zip(run_id.clone()).map(|(r, (id, why))| view! { <LatencyGlance r=r id=id why=why/> })}
        </div>
        <p class="links" id="overview-links">
            {whatif.map(|f| view! { <a class="pill" href=format!("#{f}")>"What-if with the measured acceptance"</a> })}
            <a class="pill" href="#runs">{format!("All {} runs", data.list.runs.len())}</a>
        </p>
    }
}
