//! The charts of results the pages share: the sweep, its step cost, the tail and the
//! categories of an accept folder.

use speclens_shared::chart::{
    context_at, draw_category_chart, draw_context_chart, draw_context_cost_chart, draw_step_cost_chart,
    draw_sweep_chart, draw_tail_scatter, hover, step_cost_at, tail_at, CategoryBar, XFrame,
};
use speclens_shared::results::accept::AcceptMatrix;
use speclens_shared::run::tail::TailAttribution;
use speclens_shared::sweep::SweepFile;
use speclens_shared::Error;

use crate::chart::canvas::{Draw, Root};

/// The sweep: both arms' throughput by concurrency (or latency by rate), their ratio, the
/// crossing and the model's.
pub struct SweepChart;

impl Draw<SweepFile> for SweepChart {
    fn draw(t: &SweepFile, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_sweep_chart(root, t, scale)
    }

    fn hover(t: &SweepFile, level: f64) -> Option<String> {
        hover::sweep_at(t, level)
    }
}

/// The acceptance length each arm measured beside the one its load needs, by concurrency.
pub struct StepCostChart;

impl Draw<SweepFile> for StepCostChart {
    fn draw(t: &SweepFile, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_step_cost_chart(root, t, scale)
    }

    fn hover(t: &SweepFile, level: f64) -> Option<String> {
        step_cost_at(t, level)
    }
}

/// B* against the input length: measured per length, the model's B*(L) beside it.
pub struct ContextChart;

impl Draw<SweepFile> for ContextChart {
    fn draw(t: &SweepFile, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_context_chart(root, t, scale)
    }

    fn hover(t: &SweepFile, tokens: f64) -> Option<String> {
        context_at(t, tokens)
    }
}

/// The acceptance length and the step cost against the input length: which one moved.
pub struct ContextCostChart;

impl Draw<SweepFile> for ContextCostChart {
    fn draw(t: &SweepFile, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_context_cost_chart(root, t, scale)
    }

    fn hover(t: &SweepFile, tokens: f64) -> Option<String> {
        context_at(t, tokens)
    }
}

/// Each request's acceptance length against its E2E latency.
pub struct TailChart;

impl Draw<TailAttribution> for TailChart {
    fn draw(t: &TailAttribution, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_tail_scatter(root, t, scale)
    }

    fn hover(t: &TailAttribution, e: f64) -> Option<String> {
        tail_at(t, e)
    }
}

/// Acceptance length by prompt category, highest first.
pub struct CategoryChart;

impl Draw<Vec<CategoryBar>> for CategoryChart {
    fn draw(bars: &Vec<CategoryBar>, root: &Root, scale: f64) -> Result<Option<XFrame>, Error> {
        draw_category_chart(root, bars, scale)
    }

    fn hover(bars: &Vec<CategoryBar>, x: f64) -> Option<String> {
        hover::category_at(bars, x)
    }
}

/// One bar per category of an accept run.
pub fn category_bars(matrix: &AcceptMatrix) -> Vec<CategoryBar> {
    matrix
        .categories
        .iter()
        .map(|c| CategoryBar {
            category: c.category.clone(),
            acceptance_length: c.acceptance_length,
            requests: c.requests,
        })
        .collect()
}
