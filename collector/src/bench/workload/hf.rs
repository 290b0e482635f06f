//! Hugging Face dataset files (JSONL, JSON, CSV, Parquet rows) read by column, as vLLM's `hf`
//! dataset names them.

use std::cell::{Cell, RefCell};
use std::path::Path;

use parquet::record::{Field, Row};

use super::prompt::{Columns, Prompt, Workload, PROMPT_COLUMNS};
use crate::bench::datafile::{self, Sample, MAX_ITEM_BYTES};
use crate::bench::tokens::TokenCounter;
use crate::error::CollectorError;
use crate::files::in_mib as mib;

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
        return for_each_parquet_row(path, max_bytes, |at, v| each(object(at, v)?));
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

/// Every row of a parquet file as a JSON value, within the dataset's limits: the file's own
/// sizes first ([`check_parquet_sizes`]), then each row at most [`MAX_ITEM_BYTES`] and all rows
/// together at most `max_bytes` (the `--max-dataset-mib` budget) as decoded, since a dictionary
/// value is expanded in every row that refers to it (10,000 rows sharing one 16 MiB value are
/// 160 GB of text). A panic inside the parquet reader on a corrupt file is an error naming the
/// file and the panic.
fn for_each_parquet_row(
    path: &Path,
    max_bytes: u64,
    mut each: impl FnMut(String, serde_json::Value) -> Result<(), CollectorError>,
) -> Result<(), CollectorError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::reader::RowIter;
    let bad = |what: String| CollectorError::InvalidArgument(format!("{}: {what}", path.display()));
    let corrupt = |panic: String| bad(format!("the parquet reader failed on it (a corrupt file): {panic}"));
    let file = datafile::open(path, max_bytes)?.into_inner().into_inner();
    // Only the parquet crate's own calls run where a panic is caught: speclens's code (`each`)
    // runs outside, so a bug of ours is never reported as a corrupt file.
    let mut rows = unwound_as_error(|| -> Result<RowIter<'static>, CollectorError> {
        let reader = SerializedFileReader::new(file).map_err(|e| bad(format!("not a parquet file: {e}")))?;
        check_parquet_sizes(reader.metadata(), max_bytes).map_err(bad)?;
        Ok(RowIter::from_file_into(Box::new(reader)))
    })
    .unwrap_or_else(|panic| Err(corrupt(panic)))?;
    let mut decoded: u64 = 0;
    for i in 1.. {
        let next = unwound_as_error(|| {
            rows.next()
                .map(|row| row.map(|row| (row_bytes(&row), row.to_json_value())))
        })
        .map_err(corrupt)?;
        let Some(row) = next else { break };
        let (size, value) = row.map_err(|e| bad(format!("row {i}: {e}")))?;
        if size > MAX_ITEM_BYTES {
            return Err(bad(format!(
                "row {i}: {:.1} MiB decoded, over the {:.0} MiB one item may hold",
                mib(size),
                mib(MAX_ITEM_BYTES)
            )));
        }
        decoded = decoded.saturating_add(size);
        if decoded > max_bytes {
            return Err(bad(format!(
                "row {i}: its rows decode past the {:.0} MiB --max-dataset-mib allows (a value shared through a dictionary is expanded in every row that refers to it)",
                mib(max_bytes)
            )));
        }
        each(format!("row {i}"), value)?;
    }
    Ok(())
}

/// A parquet file's columns as its metadata declares them, before any page is read: a column
/// whose decoded size averages over [`MAX_ITEM_BYTES`] a row in a row group holds a value too
/// large, and all columns together must decode within `max_bytes`. An average: one large value
/// among many small rows passes here and is refused once its row is decoded (the rows' check),
/// having cost at most its column's declared size.
fn check_parquet_sizes(metadata: &parquet::file::metadata::ParquetMetaData, max_bytes: u64) -> Result<(), String> {
    let mut declared: u64 = 0;
    for (g, group) in metadata.row_groups().iter().enumerate() {
        let rows = u64::try_from(group.num_rows()).unwrap_or(0).max(1);
        for column in group.columns() {
            // A negative size is a corrupt file: refused as too large.
            let size = u64::try_from(column.uncompressed_size()).unwrap_or(u64::MAX);
            if size > rows.saturating_mul(MAX_ITEM_BYTES) {
                return Err(format!(
                    "row group {}: column {} decodes to {:.1} MiB for {rows} row{}, a value over the {:.0} MiB one item may hold",
                    g + 1,
                    column.column_path(),
                    mib(size),
                    if rows == 1 { "" } else { "s" },
                    mib(MAX_ITEM_BYTES)
                ));
            }
            declared = declared.saturating_add(size);
        }
    }
    if declared > max_bytes {
        return Err(format!(
            "its columns decode to {:.1} MiB, over the {:.0} MiB --max-dataset-mib allows",
            mib(declared),
            mib(max_bytes)
        ));
    }
    Ok(())
}

/// What a parquet row holds once decoded, in bytes: its texts and byte strings at their
/// length, any other value at 8.
fn row_bytes(row: &Row) -> u64 {
    row.get_column_iter().map(|(_, field)| field_bytes(field)).sum()
}

fn field_bytes(field: &Field) -> u64 {
    match field {
        Field::Str(text) => text.len() as u64,
        Field::Bytes(bytes) => bytes.len() as u64,
        Field::Group(row) => row_bytes(row),
        Field::ListInternal(list) => list.elements().iter().map(field_bytes).sum(),
        Field::MapInternal(map) => map.entries().iter().map(|(k, v)| field_bytes(k) + field_bytes(v)).sum(),
        _ => 8,
    }
}

thread_local! {
    /// Whether this thread is inside [`unwound_as_error`], and the message of a panic there.
    static CAUGHT: (Cell<bool>, RefCell<Option<String>>) = const { (Cell::new(false), RefCell::new(None)) };
}

/// `f`'s value, or the message of a panic inside it (a library's on input it cannot read): the
/// panic is kept for the error rather than printed as a crash. Needs unwinding panics, which
/// every native profile here has (only the wasm bundle aborts).
fn unwound_as_error<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let earlier = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let caught = CAUGHT.with(|(inside, message)| {
                if inside.get() {
                    let payload = info.payload();
                    let text = payload
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| info.to_string());
                    message.borrow_mut().get_or_insert(text);
                }
                inside.get()
            });
            if !caught {
                earlier(info);
            }
        }));
    });
    CAUGHT.with(|(inside, message)| {
        inside.set(true);
        message.replace(None);
    });
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let message = CAUGHT.with(|(inside, message)| {
        inside.set(false);
        message.take()
    });
    out.map_err(|_| message.unwrap_or_else(|| "a panic".into()))
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
