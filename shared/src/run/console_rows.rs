//! The rows of `vllm bench serve`'s console summary: its centred section headers and its
//! 40-column labels, shared by the summary and the sections speclens prints after it.

use std::fmt::Write;

/// A section header: `title` centred in 50 columns of `fill`, as vLLM prints it.
pub(crate) fn header(out: &mut String, title: &str, fill: char) {
    let _ = writeln!(out, "{}", center(title, fill, 50));
}

/// Python's `"{s:{c}^{n}}".format(...)`: centred, extra fill on the right.
fn center(s: &str, fill: char, width: usize) -> String {
    let len = s.chars().count();
    if len >= width {
        return s.to_string();
    }
    let left = (width - len) / 2;
    let right = width - len - left;
    format!("{}{s}{}", fill.to_string().repeat(left), fill.to_string().repeat(right))
}

/// A row: the label in 40 columns, then the value.
pub(crate) fn row(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{label:<40} {:<10}", value.to_string());
}

/// A row of a number with two decimals.
pub(crate) fn row_f(out: &mut String, label: &str, value: f64) {
    let _ = writeln!(out, "{label:<40} {:<10.2}", value);
}
