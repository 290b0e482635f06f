//! `speclens report`: a static report of runs, sweeps and accept matrices. One HTML file holds
//! the web app (JS glue inline, the wasm gzipped and base64'd), its styles and the data, under a
//! content security policy that forbids every outside load; `--dir` writes the same for a
//! static web host with the app's files beside `index.html`.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;
use speclens_shared::results::report_data::{ReportData, REPORT_ELEMENT_ID};

use crate::error::CollectorError;
use crate::results_folder::history;
use crate::results_folder::write::write_atomic;
use crate::serve::{resolve_web_dir, WebAssets};
use speclens_shared::model::speedup::Costs;
use speclens_shared::results::accept::AcceptMatrix;
use speclens_shared::results::run_list::{RunList, RunListEntry};
use speclens_shared::results::run_result::RunResult;
use speclens_shared::sweep::SweepFile;

/// The data gathered from the inputs: the dashboard's API answers, keyed by path.
struct Collector {
    data: ReportData,
    runs: Vec<RunListEntry>,
    sweeps: Vec<String>,
    accepts: Vec<String>,
    ids: BTreeSet<String>,
    skipped: Vec<String>,
    /// Whether ids are prefixed by their input folder's name (several inputs), or relative to
    /// the one input folder, as the dashboard serving that folder names them.
    prefixed: bool,
}

/// A path segment as an id: plain characters only (the page puts ids in URLs).
fn clean_id(name: &str) -> String {
    let id: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if id.is_empty() || id.chars().all(|c| c == '.') {
        "run".into()
    } else {
        id
    }
}

/// A folder's own name, also for `.` and `..`.
fn folder_name(path: &Path) -> String {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    clean_id(
        &absolute
            .file_name()
            .map_or("results".into(), |n| n.to_string_lossy().into_owned()),
    )
}

/// The id of `id` (a folder path under the input folder `base`): `base/id` when prefixed, else
/// `id` alone; `base` for the input folder itself.
fn join_id(prefixed: bool, base: &str, id: &str) -> String {
    match (prefixed, id.is_empty()) {
        (_, true) => base.to_string(),
        (true, false) => format!("{base}/{id}"),
        (false, false) => id.to_string(),
    }
}

fn to_value(v: &impl serde::Serialize) -> Result<Value, CollectorError> {
    serde_json::to_value(v).map_err(|e| CollectorError::Output(format!("cannot serialise the report data: {e}")))
}

impl Collector {
    fn new(prefixed: bool) -> Collector {
        let created = time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .unwrap_or_else(|_| time::OffsetDateTime::now_utc())
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Collector {
            data: ReportData::new(env!("CARGO_PKG_VERSION"), &created),
            runs: Vec::new(),
            sweeps: Vec::new(),
            accepts: Vec::new(),
            ids: BTreeSet::new(),
            skipped: Vec::new(),
            prefixed,
        }
    }

    /// `id`, or `id-2`, `id-3`… when an earlier input took it.
    fn unique(&mut self, kind: &str, id: &str) -> String {
        let mut candidate = id.to_string();
        let mut n = 1;
        while self.ids.contains(&format!("{kind}:{candidate}")) {
            n += 1;
            candidate = format!("{id}-{n}");
        }
        self.ids.insert(format!("{kind}:{candidate}"));
        candidate
    }

    fn add_run(&mut self, id: &str, result: &RunResult) -> Result<(), CollectorError> {
        let id = self.unique("run", id);
        self.runs.push(RunListEntry::new(&id, result));
        self.data.responses.insert(format!("/api/runs/{id}"), to_value(result)?);
        Ok(())
    }

    fn add_sweep(&mut self, id: &str, sweep: &SweepFile) -> Result<(), CollectorError> {
        let id = self.unique("sweep", id);
        self.data
            .responses
            .insert(format!("/api/sweeps/{id}"), to_value(sweep)?);
        self.sweeps.push(id);
        Ok(())
    }

    fn add_accept(&mut self, id: &str, matrix: &AcceptMatrix) -> Result<(), CollectorError> {
        let id = self.unique("accept", id);
        self.data
            .responses
            .insert(format!("/api/accept/{id}"), to_value(matrix)?);
        self.accepts.push(id);
        Ok(())
    }

    /// A sweep file, or a note of why it was skipped.
    fn read_sweep(&mut self, path: &Path) -> Option<SweepFile> {
        history::read_json(path).map_err(|why| self.skipped.push(why)).ok()
    }

    /// A run's `result.json`, or a note of why it was skipped.
    fn read_run(&mut self, path: &Path) -> Option<RunResult> {
        match history::read_result(path) {
            Ok(Some(result)) => Some(result),
            Ok(None) => {
                self.skipped.push(format!("{} (not a result file)", path.display()));
                None
            }
            Err(why) => {
                self.skipped.push(why);
                None
            }
        }
    }

    /// One input: a result file, or a folder holding runs, sweeps or accept matrices (itself
    /// or up to three levels down).
    fn add_input(&mut self, path: &Path) -> Result<(), CollectorError> {
        if path.is_file() {
            return self.add_file(path);
        }
        if !path.is_dir() {
            return Err(CollectorError::InvalidArgument(format!(
                "{} does not exist",
                path.display()
            )));
        }
        let base = folder_name(path);
        let prefixed = self.prefixed;
        let before = self.data.responses.len();
        let nested = |marker| {
            let mut found = vec![(String::new(), path.to_path_buf())];
            found.retain(|(_, p)| history::holds(p, marker));
            found.extend(history::find_folders(path, 3, marker));
            found
                .into_iter()
                .map(|(id, p)| (join_id(prefixed, &base, &id), p))
                .collect::<Vec<_>>()
        };
        let mut runs: Vec<(String, PathBuf)> = history::run_file(path)
            .map(|file| (String::new(), file))
            .into_iter()
            .chain(history::run_folders(path, 3))
            .collect();
        runs.iter_mut().for_each(|(id, _)| *id = join_id(prefixed, &base, id));
        for (id, file) in runs {
            if let Some(result) = self.read_run(&file) {
                self.add_run(&id, &result)?;
            }
        }
        for (id, folder) in nested("sweep.json") {
            if let Some(sweep) = self.read_sweep(&folder.join("sweep.json")) {
                self.add_sweep(&id, &sweep)?;
            }
        }
        for (id, folder) in nested("accept-*") {
            if let Some((matrix, skipped)) = history::accept_files(&folder) {
                self.skipped.extend(skipped);
                self.add_accept(&id, &matrix)?;
            }
        }
        // Result files side by side (`vllm bench serve --save-result` files, sweep points):
        // each a run, and a sweep when both arms are there and no sweep.json says it already.
        let found = crate::commands::read::result_files(path)?;
        // Run folders' `result.json` were read (and named when bad) above.
        self.skipped.extend(
            found
                .skipped
                .into_iter()
                .filter(|(name, _)| !name.contains('/'))
                .map(|(_, why)| why),
        );
        let loose: Vec<(String, RunResult)> = found
            .files
            .into_iter()
            // The folder's own result (`result.json`, or the records a run left without one)
            // was added above as its run.
            .filter(|(name, _)| {
                !name.contains('/')
                    && name != "result.json"
                    && name != "sweep.json"
                    && !history::is_records(std::path::Path::new(name))
            })
            .collect();
        if !history::holds(path, "sweep.json") {
            if let Some(table) = crate::commands::read::sweep_of(&loose, Costs::H100_FREE_DRAFTS) {
                self.add_sweep(&base, &table)?;
            }
        }
        for (name, result) in &loose {
            let stem = name.strip_suffix(".json").unwrap_or(name);
            self.add_run(&join_id(prefixed, &base, &clean_id(stem)), result)?;
        }
        if self.data.responses.len() == before {
            return Err(CollectorError::InvalidArgument(format!(
                "{} holds no run (result.json), sweep (sweep.json) or accept results (accept-*.json)",
                path.display()
            )));
        }
        Ok(())
    }

    /// A result file given by name: its id is its folder's name (`…/<run>/result.json`) or its
    /// own stem.
    fn add_file(&mut self, path: &Path) -> Result<(), CollectorError> {
        let result = history::read_result(path)
            .map_err(CollectorError::InvalidArgument)?
            .ok_or_else(|| {
                CollectorError::InvalidArgument(format!(
                    "{} is not a result file (a JSON object from speclens or `vllm bench serve`)",
                    path.display()
                ))
            })?;
        let stem = path
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy().into_owned());
        let id = match (stem.as_str(), path.parent()) {
            ("result", Some(parent)) => folder_name(parent),
            _ => clean_id(&stem),
        };
        self.add_run(&id, &result)
    }

    fn finish(mut self) -> Result<(ReportData, Vec<String>), CollectorError> {
        let list = RunList::new("this report", self.runs, self.sweeps, self.accepts);
        self.data.responses.insert("/api/runs".into(), to_value(&list)?);
        Ok((self.data, self.skipped))
    }
}

/// Text for HTML (element content and quoted attributes).
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The built app's parts a report needs.
struct AppFiles {
    glue_js: String,
    wasm: Vec<u8>,
    css: String,
    favicon_svg: Option<Vec<u8>>,
}

fn app_files(assets: &WebAssets) -> Result<AppFiles, CollectorError> {
    let files = assets.files()?;
    let find = |pred: &dyn Fn(&str) -> bool| files.iter().find(|(n, _)| pred(n)).map(|(_, b)| b.clone());
    let missing = |what: &str| CollectorError::Output(format!("the dashboard build ({assets}) has no {what}"));
    let text = |bytes: Vec<u8>, what: &str| {
        String::from_utf8(bytes).map_err(|_| CollectorError::Output(format!("{what} of the dashboard is not UTF-8")))
    };
    Ok(AppFiles {
        glue_js: text(
            find(&|n| n.starts_with("speclens-web") && n.ends_with(".js")).ok_or_else(|| missing("JS glue"))?,
            "the JS glue",
        )?,
        wasm: find(&|n| n.ends_with("_bg.wasm")).ok_or_else(|| missing("wasm module"))?,
        css: text(
            find(&|n| n.ends_with(".css")).ok_or_else(|| missing("style sheet"))?,
            "the style sheet",
        )?,
        favicon_svg: find(&|n| n.ends_with(".svg")),
    })
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>, CollectorError> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder
        .write_all(bytes)
        .and_then(|_| encoder.finish())
        .map_err(|e| CollectorError::Output(format!("cannot compress the wasm module: {e}")))
}

/// Refuse content that would end its inline element early.
fn inline_safe<'a>(content: &'a str, closing: &str, what: &str) -> Result<&'a str, CollectorError> {
    if content.to_ascii_lowercase().contains(closing) {
        return Err(CollectorError::Output(format!(
            "{what} of the dashboard contains {closing}: it cannot be inlined"
        )));
    }
    Ok(content)
}

/// Where the app's code comes from.
enum Layout<'a> {
    /// Everything inline: the wasm as gzip + base64 in a data block.
    SingleFile { wasm_gz_base64: &'a str },
    /// `assets/` beside `index.html`.
    Folder,
}

/// The report page.
fn page(title: &str, app: &AppFiles, data_json: &str, layout: &Layout) -> Result<String, CollectorError> {
    let css = inline_safe(&app.css, "</style", "the style sheet")?;
    let (module, wasm_block, sources) = match layout {
        Layout::SingleFile { wasm_gz_base64 } => {
            let glue = inline_safe(&app.glue_js, "</script", "the JS glue")?;
            // The glue's own `export`s are harmless in an inline module; its init takes the bytes.
            let module = format!(
                "{glue}\n\
                 const packed = Uint8Array.from(atob(document.getElementById('speclens-wasm').textContent.trim()), (c) => c.charCodeAt(0));\n\
                 const wasmBytes = await new Response(new Blob([packed]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();\n\
                 await __wbg_init({{ module_or_path: wasmBytes }});\n"
            );
            let block = format!(
                "<script type=\"application/octet-stream\" id=\"speclens-wasm\">{wasm_gz_base64}</script>\n"
            );
            (module, block, "")
        }
        Layout::Folder => (
            "import init from './assets/speclens-web.js';\nawait init({ module_or_path: './assets/speclens-web_bg.wasm' });\n"
                .to_string(),
            String::new(),
            " 'self'",
        ),
    };
    let csp = format!(
        "default-src 'none'; script-src{sources} {} 'wasm-unsafe-eval'; connect-src{sources}; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'",
        crate::serve::script_hash(&module)
    );
    let icon = app.favicon_svg.as_ref().map_or(String::new(), |svg| {
        format!(
            "<link rel=\"icon\" href=\"data:image/svg+xml;base64,{}\"/>\n",
            base64::engine::general_purpose::STANDARD.encode(svg)
        )
    });
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>{title}</title>\n{icon}<style>\n{css}\n</style>\n\
         <script type=\"application/json\" id=\"{REPORT_ELEMENT_ID}\">{data_json}</script>\n\
         {wasm_block}<script type=\"module\">{module}</script>\n</head>\n<body></body>\n</html>\n",
        title = escape_html(title),
    ))
}

/// Where a report goes.
#[derive(Debug, Clone)]
pub enum Destination {
    /// One self-contained HTML file.
    File(std::path::PathBuf),
    /// A folder for a static web host: `index.html` and `assets/`.
    Folder(std::path::PathBuf),
}

/// A report to write.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Run folders, result files, sweep or accept folders, or results folders holding them.
    pub inputs: Vec<std::path::PathBuf>,
    pub destination: Destination,
    pub title: String,
}

/// `speclens report`.
pub fn run(args: Plan, web_dir: Option<std::path::PathBuf>) -> Result<(), CollectorError> {
    let assets = resolve_web_dir(web_dir)?;
    crate::console::print(&format!("{}\n", write(&args, &assets)?))
}

/// Write the report `args` ask for with the app in `assets`; returns the "Report: …" line.
pub fn write(args: &Plan, assets: &WebAssets) -> Result<String, CollectorError> {
    // One folder: ids relative to it, as `speclens serve` of that folder names them, so a link
    // taken from the dashboard opens the same run here. Several: each prefixed by its name.
    let mut collector = Collector::new(args.inputs.len() > 1);
    for input in &args.inputs {
        collector.add_input(input)?;
    }
    let (data, skipped) = collector.finish()?;
    for s in &skipped {
        eprintln!("speclens report: skipped {s}");
    }
    let runs = data.responses.keys().filter(|k| k.starts_with("/api/runs/")).count();
    let sweeps = data.responses.keys().filter(|k| k.starts_with("/api/sweeps/")).count();
    let accepts = data.responses.keys().filter(|k| k.starts_with("/api/accept/")).count();
    let data_json = data
        .to_script_json()
        .map_err(|e| CollectorError::Output(format!("cannot serialise the report data: {e}")))?;
    let app = app_files(assets)?;
    let written = match &args.destination {
        Destination::File(output) => {
            let packed = base64::engine::general_purpose::STANDARD.encode(gzip(&app.wasm)?);
            let html = page(
                &args.title,
                &app,
                &data_json,
                &Layout::SingleFile {
                    wasm_gz_base64: &packed,
                },
            )?;
            write_atomic(output, html.as_bytes())?;
            output.clone()
        }
        Destination::Folder(dir) => {
            let assets = dir.join("assets");
            std::fs::create_dir_all(&assets)
                .map_err(|e| CollectorError::Output(format!("cannot create {}: {e}", assets.display())))?;
            write_atomic(&assets.join("speclens-web.js"), app.glue_js.as_bytes())?;
            write_atomic(&assets.join("speclens-web_bg.wasm"), &app.wasm)?;
            let html = page(&args.title, &app, &data_json, &Layout::Folder)?;
            // index.html last: the folder is complete once it exists.
            let index = dir.join("index.html");
            write_atomic(&index, html.as_bytes())?;
            index
        }
    };
    let size_kb = std::fs::metadata(&written).map_or(0, |m| m.len()) / 1024;
    Ok(format!(
        "Report: {} ({runs} runs, {sweeps} sweeps, {accepts} accept matrices; {size_kb} KB)",
        written.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_and_html_is_escaped() {
        assert_eq!(clean_id("run 1/<x>"), "run-1--x-");
        assert_eq!(clean_id(".."), "run");
        assert_eq!(
            escape_html(r#"<img src=x onerror="alert(1)">&'"#),
            "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn the_policy_allows_exactly_the_inline_module() {
        let app = AppFiles {
            glue_js: "export function f() {}\nasync function __wbg_init() {}".into(),
            wasm: vec![0, 97, 115, 109],
            css: "body { color: black }".into(),
            favicon_svg: None,
        };
        let html = page("t", &app, "{}", &Layout::SingleFile { wasm_gz_base64: "AAAA" }).unwrap();
        let module = html
            .split("<script type=\"module\">")
            .nth(1)
            .unwrap()
            .split("</script>")
            .next()
            .unwrap();
        assert!(html.contains(&crate::serve::script_hash(module)));
        assert!(html.contains("default-src 'none'"));
        let bad = AppFiles {
            glue_js: "'</SCRIPT>'".into(),
            ..app
        };
        assert!(page("t", &bad, "{}", &Layout::SingleFile { wasm_gz_base64: "" }).is_err());
    }
}
