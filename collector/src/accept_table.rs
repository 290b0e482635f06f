//! The acceptance table of groups (an accept matrix's categories, a run's served models) as
//! the console prints it: a row per group with its interval and per-position rates, and the
//! group × draft-position matrix.

use comfy_table::{presets, CellAlignment, Table};
use speclens_shared::results::accept::{AcceptMatrix, CategoryAcceptance, PositionMatrix};

/// The acceptance table of `rows`, each a group named by `group` (`category`, or `model` for
/// the served names of a run): a row per group, then (for categories) the pooled figure, then
/// the group × position matrix.
pub fn render(rows: &[CategoryAcceptance], group: &str) -> String {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    table.set_header(vec![
        group,
        "path",
        "requests",
        "acceptance length (± 95 %)",
        "acceptance rate %",
        "per-position rates",
    ]);
    for r in rows {
        table.add_row(vec![
            r.category.clone(),
            r.path.clone(),
            r.requests.to_string(),
            r.length_text(),
            format!("{:.2}", r.acceptance_rate),
            r.positions_text(),
        ]);
    }
    for i in 2..5 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let pooled = match group {
        "category" => AcceptMatrix::pooled_line(rows).map_or(String::new(), |l| format!("{l}\n")),
        _ => String::new(),
    };
    let matrix = PositionMatrix::of(rows).map_or(String::new(), |m| render_matrix(&m, group));
    format!("{table}\n{pooled}{matrix}")
}

/// The category × position matrix: a row per category and the pooled row, a column per draft
/// position (0-based, as vLLM's `position` label), each cell the unconditional rate.
fn render_matrix(matrix: &PositionMatrix, group: &str) -> String {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    let mut header = vec![group.to_string(), "requests".to_string()];
    header.extend(matrix.positions.iter().map(|p| format!("position {p}")));
    table.set_header(header);
    for row in matrix.all_rows() {
        let mut cells = vec![row.category.clone(), row.requests.to_string()];
        cells.extend(row.rates.iter().map(|r| r.map_or("—".into(), |v| format!("{v:.3}"))));
        table.add_row(cells);
    }
    for i in 1..matrix.positions.len() + 2 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("Acceptance rate by {group} and draft position (accepted at the position ÷ verify steps):\n{table}\n")
}
