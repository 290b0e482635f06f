//! Hugging Face dataset files (JSONL, JSON, CSV, Parquet rows) read by column, as vLLM's `hf`
//! dataset names them.

use std::path::Path;

use super::prompt::{Columns, Prompt, Workload, PROMPT_COLUMNS};
use crate::bench::datafile::{self, Sample};
use crate::bench::tokens::TokenCounter;
use crate::error::CollectorError;

/// One row of a Hugging Face file: where it is (`row 3`, `line 3`) and its columns.
pub(super) type HfRow = (String, serde_json::Map<String, serde_json::Value>);

/// Calls `each` with every row of a Hugging Face file (parquet, a JSON array of rows or JSON
/// lines) as a JSON object, one row at a time.
pub(super) fn for_each_hf_row(
    path: &Path,
    max_bytes: u64,
    mut each: impl FnMut(HfRow) -> Result<(), CollectorError>,
) -> Result<(), CollectorError> {
    let bad = |what: String| CollectorError::InvalidArgument(format!("{}: {what}", path.display()));
    let object = |at: String, v: serde_json::Value| match v {
        serde_json::Value::Object(m) => Ok((at, m)),
        other => Err(bad(format!("{at}: not a row object but {other}"))),
    };
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet")) {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let file = datafile::open(path, max_bytes)?.into_inner().into_inner();
        let reader = SerializedFileReader::new(file).map_err(|e| bad(format!("not a parquet file: {e}")))?;
        let rows = reader
            .get_row_iter(None)
            .map_err(|e| bad(format!("cannot read its rows: {e}")))?;
        for (i, row) in rows.enumerate() {
            let row = row.map_err(|e| bad(format!("row {}: {e}", i + 1)))?;
            each(object(format!("row {}", i + 1), row.to_json_value())?)?;
        }
        return Ok(());
    }
    if datafile::holds_a_json_array(path, max_bytes)? {
        let mut i = 0;
        return datafile::for_each_array_item(path, max_bytes, "a JSON array of rows", |v: serde_json::Value| {
            i += 1;
            each(object(format!("row {i}"), v)?)
        });
    }
    datafile::for_each_line(path, max_bytes, |i, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let v = serde_json::from_str(line).map_err(|e| bad(format!("line {i}: not a JSON row: {e}")))?;
        each(object(format!("line {i}"), v)?)
    })
}

/// The prompt and category columns of a Hugging Face file, named or found in its first row.
pub(super) fn hf_columns(
    columns: &Columns,
    first: &serde_json::Map<String, serde_json::Value>,
) -> Result<(String, Option<String>), String> {
    let prompt = match &columns.prompt {
        Some(c) => c.clone(),
        None => PROMPT_COLUMNS
            .iter()
            .find(|c| first.contains_key(**c))
            .map(|c| (*c).to_string())
            .ok_or_else(|| {
                let have: Vec<&str> = first.keys().map(String::as_str).collect();
                format!("no prompt column among {PROMPT_COLUMNS:?}; its columns are {have:?}: name one with --prompt-column")
            })?,
    };
    let category = columns
        .category
        .clone()
        .or_else(|| first.contains_key("category").then(|| "category".to_string()));
    Ok((prompt, category))
}

/// A Hugging Face file's prompts through its column mapping: every row is checked, at most
/// `cap` kept (a seeded sample).
pub(super) fn from_hf(
    args: &Workload,
    path: &Path,
    columns: &Columns,
    cap: usize,
    tokens: &TokenCounter,
) -> Result<Vec<Prompt>, CollectorError> {
    let bad = |what: String| CollectorError::InvalidArgument(format!("{}: {what}", path.display()));
    let mut found: Option<(String, Option<String>)> = None;
    let mut sample = Sample::new(cap, args.seed);
    for_each_hf_row(path, args.max_dataset_bytes, |(at, row)| {
        if found.is_none() {
            found = Some(hf_columns(columns, &row).map_err(bad)?);
        }
        let Some((prompt_column, category_column)) = &found else {
            return Ok(());
        };
        let cell = |column: &str| row.get(column).filter(|v| !v.is_null());
        let mut later_turns = Vec::new();
        let text = match cell(prompt_column) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(items)) => {
                let texts: Option<Vec<&str>> = items.iter().map(serde_json::Value::as_str).collect();
                match texts.as_deref() {
                    Some([first, later @ ..]) => {
                        if args.multi_turn {
                            later_turns = later.iter().map(|t| (*t).to_string()).collect();
                        }
                        (*first).to_string()
                    }
                    _ => return Err(bad(format!("{at}: column {prompt_column:?} is not a list of texts"))),
                }
            }
            Some(other) => return Err(bad(format!("{at}: column {prompt_column:?} is not text: {other}"))),
            None => return Err(bad(format!("{at}: no column {prompt_column:?}"))),
        };
        let max_tokens = match columns.output_len.as_deref().map(|c| (c, cell(c))) {
            None => args.output_tokens,
            Some((c, Some(v))) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad(format!("{at}: column {c:?} is not a whole number of tokens: {v}")))?,
            Some((c, None)) => return Err(bad(format!("{at}: no column {c:?}"))),
        };
        let category = match category_column.as_deref().map(cell) {
            Some(Some(serde_json::Value::String(s))) => Some(s.clone()),
            Some(Some(v)) => Some(v.to_string()),
            _ => None,
        };
        if !args.categories.is_empty() && !category.as_ref().is_some_and(|c| args.categories.contains(c)) {
            return Ok(());
        }
        sample.offer(|| {
            Some(Prompt {
                input_tokens: tokens.count(&text),
                text,
                category,
                max_tokens: max_tokens.max(1),
                ignore_eos: args.ignore_eos,
                later_turns,
            })
        });
        Ok(())
    })?;
    if found.is_none() {
        return Err(bad("holds no rows".into()));
    }
    let prompts = sample.into_vec();
    if prompts.is_empty() {
        return Err(bad(format!("holds no prompts of categories {:?}", args.categories)));
    }
    Ok(prompts)
}
