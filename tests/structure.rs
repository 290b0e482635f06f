//! The code's shape, read from its source: no import circle between the modules of any folder
//! of `shared/`, `collector/` or `web/`, and no function over 100 lines outside tests, except the ones named below
//! with their reason and their length today (a ratchet: a named one may shrink, never grow,
//! and leaves the list once it is under the limit).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a function may be, in lines from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 100;

/// Functions allowed past the limit: (file, function, lines today, why).
const LONG_FUNCTIONS: &[(&str, &str, usize, &str)] = &[(
    "collector/src/sim/exposition.rs",
    "render",
    131,
    "a declarative table: one row per metric family the sim exposes, in vLLM's order",
)];

/// The checkout the tests read: this one, or another named by `SPECLENS_TREE` (to count an
/// older tree's floors and rooms with the same reader).
/// The longest a file may be, in lines, unless it holds one topic and is named below.
const MAX_FILE_LINES: usize = 1000;

/// Files allowed past the limit: (file, lines today, the one topic it holds). A ratchet too.
const LONG_FILES: &[(&str, usize, &str)] = &[(
    "shared/src/request/per_request.rs",
    1144,
    "one topic: the per-request spec-decode stats of every engine's payload, read and checked \
         (the shapes, the rejections and their tests, 250 lines of them)",
)];

/// The checkout the tests read: this one, or another named by `SPECLENS_TREE` (to count an
/// older tree's floors and rooms with the same reader).
fn root() -> PathBuf {
    std::env::var_os("SPECLENS_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

/// The `.rs` files under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The source with comments, strings and character literals blanked (kept as spaces, so line
/// numbers and braces outside them stay where they were), and each `#[cfg(test)]` item too.
fn code_only(source: &str) -> String {
    without_test_items(&blank_non_code(source))
}

/// `code` with every item under `#[cfg(test)]` or `#[cfg(all(test, …))]` blanked: to its `;`,
/// or through the braces it opens.
fn without_test_items(code: &str) -> String {
    let mut b = code.as_bytes().to_vec();
    let mut from = 0;
    loop {
        let next = ["#[cfg(test)]", "#[cfg(all(test,"]
            .iter()
            .filter_map(|p| code[from..].find(p).map(|at| from + at))
            .min();
        let Some(start) = next else { break };
        // The attribute ends at its closing bracket.
        let mut brackets = 0i64;
        let mut attr_end = b.len();
        for (i, &c) in b.iter().enumerate().skip(start + 2) {
            match c {
                b'[' => brackets += 1,
                b']' if brackets == 0 => {
                    attr_end = i + 1;
                    break;
                }
                b']' => brackets -= 1,
                _ => {}
            }
        }
        let mut depth = 0i64;
        let mut end = b.len();
        for (i, &c) in b.iter().enumerate().skip(attr_end) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        for c in &mut b[start..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = end;
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// The source with comments, strings and character literals blanked.
fn blank_non_code(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                    out.extend_from_slice(b"  ");
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    out.extend_from_slice(b"  ");
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            continue;
        }
        // Raw strings: r"…", r#"…"#, br"…".
        let raw_at = if rest.starts_with(b"br") {
            Some(2)
        } else if rest.starts_with(b"r") {
            Some(1)
        } else {
            None
        };
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if let (Some(skip), false) = (raw_at, ident_before) {
            let hashes = rest[skip..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(skip + hashes) == Some(&b'"') {
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let start = i + skip + hashes + 1;
                let end = b[start..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| start + p + close.len());
                for &c in &b[i..end] {
                    blank(&mut out, c);
                }
                i = end;
                continue;
            }
        }
        if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
            continue;
        }
        // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
        if b[i] == b'\'' {
            let len = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch_len = source
                    .get(i + 1..)
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                (rest.get(1 + ch_len) == Some(&b'\'')).then_some(ch_len + 2)
            };
            if let Some(len) = len {
                for &c in &b[i..i + len] {
                    blank(&mut out, c);
                }
                i += len;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Each function's name and its length in lines (the `fn` line to its closing brace).
fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let Some(at) = find_fn(line) else { continue };
        let name: String = line[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // From the `fn`, the first `{` or `;` at depth 0 of (), [] and <>: a body or none.
        let mut depth = 0i64;
        let mut open = None;
        'scan: for (m, l) in lines.iter().enumerate().skip(n) {
            let from = if m == n { at } else { 0 };
            for c in l[from..].chars() {
                match c {
                    '(' | '[' => depth += 1,
                    ')' | ']' => depth -= 1,
                    ';' if depth == 0 => break 'scan,
                    '{' if depth == 0 => {
                        open = Some(m);
                        break 'scan;
                    }
                    _ => {}
                }
            }
        }
        let Some(open) = open else { continue };
        let mut braces = 0i64;
        let mut started = false;
        'body: for (m, l) in lines.iter().enumerate().skip(open) {
            let from = if m == n { at } else { 0 };
            for c in l[from..].chars() {
                match c {
                    '{' => {
                        braces += 1;
                        started = true;
                    }
                    '}' => {
                        braces -= 1;
                        if started && braces == 0 {
                            found.push((name.clone(), n + 1, m - n + 1));
                            break 'body;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    found
}

/// Where `fn ` starts as a keyword in a line, if it does.
fn find_fn(line: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = line[from..].find("fn ") {
        let at = from + p;
        let before = line[..at].chars().next_back();
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
            let after = line[at + 3..].chars().next();
            if after.is_some_and(|c| c.is_alphabetic() || c == '_') {
                return Some(at);
            }
        }
        from = at + 3;
    }
    None
}

/// A file's module path inside its crate (`bench/load.rs` → `["bench", "load"]`,
/// `sweep/mod.rs` → `["sweep"]`, `lib.rs` → `[]`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        path.pop();
    }
    path
}

/// Every path a piece of code names from `crate::`, `super::` or `self::`, braces expanded
/// (`use crate::{a, b::{c, d}}` → `crate::a`, `crate::b::c`, `crate::b::d`), as segments.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    fn ident(c: char) -> bool {
        c.is_alphanumeric() || c == '_'
    }
    /// The paths of `text` (a path, possibly ending in a brace group) after `prefix`.
    fn expand(prefix: &[String], text: &str, out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        let mut rest = text.trim_start();
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 1;
                let mut item = String::new();
                for c in group.chars() {
                    depth += i32::from(c == '{') - i32::from(c == '}');
                    if depth == 0 || (c == ',' && depth == 1) {
                        expand(&path, &item, out);
                        item.clear();
                        if depth == 0 {
                            break;
                        }
                    } else {
                        item.push(c);
                    }
                }
                return;
            }
            let name: String = rest.chars().take_while(|&c| ident(c)).collect();
            rest = rest[name.len()..].trim_start();
            if !name.is_empty() {
                path.push(name);
            }
            match rest.strip_prefix("::") {
                Some(after) => rest = after.trim_start(),
                None => {
                    out.push(path);
                    return;
                }
            }
        }
    }
    let mut out = Vec::new();
    for root in ["crate", "super", "self"] {
        let pattern = format!("{root}::");
        let mut from = 0;
        while let Some(at) = code[from..].find(&pattern).map(|p| p + from) {
            from = at + pattern.len();
            let before = code[..at].chars().next_back();
            // Part of a longer path (`super::super::x` is read from its first `super`).
            if before.is_some_and(|c| ident(c) || c == '$' || c == ':') {
                continue;
            }
            expand(&[root.to_string()], &code[from..], &mut out);
        }
    }
    out
}

/// A path named in module `from` (`crate::a::b`, `self::c`, `super::super::d`) as a path from
/// the crate root.
fn resolve(from: &[String], named: &[String]) -> Vec<String> {
    let mut segments = named.iter().peekable();
    let mut to: Vec<String> = match segments.next().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") => from.to_vec(),
        _ => {
            let mut base = from.to_vec();
            base.pop();
            while segments.peek().is_some_and(|s| *s == "super") {
                segments.next();
                base.pop();
            }
            base
        }
    };
    to.extend(segments.cloned());
    to
}

/// For every folder of the crate (its module path; `""` for the crate root), the graph of its
/// child modules: child → the other children its code names (`crate::a::b`, `super::b`). An
/// edge between two modules is drawn in the folder where their paths part, so `bench::load`
/// naming `crate::commands::sweep::Plan` is the root's edge `bench` → `sweep`, and `sweep::arms` naming
/// `super::pair` is the `sweep` folder's edge `arms` → `pair`.
fn import_graphs(src: &Path) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let files = rust_files(src);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for module in &modules {
        if let Some((_, folder)) = module.split_last() {
            graphs
                .entry(folder.join("::"))
                .or_default()
                .entry(module.last().unwrap().clone())
                .or_default();
        }
    }
    for file in &files {
        let from = module_path(src, file);
        for named in named_paths(&code_only(&std::fs::read_to_string(file).unwrap())) {
            let to = resolve(&from, &named);
            // Where the two paths part: both continue there, each into a module of that folder.
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            let (Some(a), Some(b)) = (from.get(common), to.get(common)) else {
                continue; // a module naming its own parent or child
            };
            let folder = from[..common].join("::");
            let mut target = to[..common].to_vec();
            target.push(b.clone());
            if modules.contains(&target) {
                graphs
                    .entry(folder)
                    .or_default()
                    .entry(a.clone())
                    .or_default()
                    .insert(b.clone());
            }
        }
    }
    graphs
}

/// How many floors a graph without circles stands on: the longest chain of imports, counted in
/// modules (a module importing nothing is on floor 1).
fn floors(graph: &BTreeMap<String, BTreeSet<String>>) -> usize {
    fn floor(m: &str, graph: &BTreeMap<String, BTreeSet<String>>, seen: &mut BTreeMap<String, usize>) -> usize {
        if let Some(&f) = seen.get(m) {
            return f;
        }
        seen.insert(m.to_string(), 1); // a circle (reported elsewhere) stops here
        let f = 1 + graph
            .get(m)
            .into_iter()
            .flatten()
            .map(|next| floor(next, graph, seen))
            .max()
            .unwrap_or(0);
        seen.insert(m.to_string(), f);
        f
    }
    let mut seen = BTreeMap::new();
    graph.keys().map(|m| floor(m, graph, &mut seen)).max().unwrap_or(0)
}

/// The graph's circles: its strongly connected components of more than one module.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(m) = stack.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|m| (m, reach(m))).collect();
    let mut out: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, r) in &reaches {
        let mut component: Vec<String> = r
            .iter()
            .filter(|other| reaches.get(other).is_some_and(|back| back.contains(*m)))
            .cloned()
            .collect();
        if component.len() > 1 {
            component.sort();
            component.dedup();
            out.insert(component);
        }
    }
    out.into_iter().collect()
}

#[test]
fn the_import_reader_resolves_nested_and_relative_paths() {
    let code = "use crate::{a, b::{c, d::e}};\nuse super::super::f::G;\nfn x() { self::h::i(); }";
    let paths: Vec<String> = named_paths(code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "crate::a",
            "crate::b::c",
            "crate::b::d::e",
            "super::super::f::G",
            "self::h::i"
        ]
    );
}

#[test]
fn no_import_circle_between_the_modules_of_any_folder() {
    for krate in ["shared", "collector", "web"] {
        let src = root().join(krate).join("src");
        let graphs = import_graphs(&src);
        assert!(graphs[""].len() > 3, "{krate}: too few modules read ({graphs:?})");
        let files = rust_files(&src);
        let folders: BTreeSet<_> = files.iter().map(|f| f.parent().unwrap().to_path_buf()).collect();
        let loose = files.iter().filter(|f| f.parent() == Some(src.as_path())).count();
        eprintln!(
            "{krate}: {} floors of top-level modules, {} folders, {} files ({loose} at the root)",
            floors(&graphs[""]),
            folders.len(),
            files.len()
        );
        let found: Vec<String> = graphs
            .iter()
            .flat_map(|(folder, graph)| {
                circles(graph)
                    .into_iter()
                    .map(move |c| format!("{krate}/src/{folder}: {c:?}"))
            })
            .collect();
        assert!(
            found.is_empty(),
            "modules that import each other in a circle:\n{}",
            found.join("\n")
        );
    }
    // The sweep's layers, each importing only the ones below it (schedules, the engines'
    // forms of a schedule, imports none of them).
    let shared = import_graphs(&root().join("shared/src"));
    let sweep = &shared["sweep"];
    let edges = |m: &str| sweep[m].iter().map(String::as_str).collect::<Vec<_>>();
    assert_eq!(
        (
            edges("levels"),
            edges("pair"),
            edges("adaptive"),
            edges("step_cost"),
            edges("saturation"),
            edges("arms"),
            edges("latency"),
        ),
        (
            vec![],
            vec!["levels"],
            vec!["levels", "schedules"],
            vec!["levels"],
            vec![],
            vec!["adaptive", "latency", "levels", "pair", "saturation", "step_cost"],
            vec!["levels"],
        ),
        "{sweep:?}"
    );
}

#[test]
fn no_function_is_over_the_limit_but_the_named_ones() {
    let mut long = Vec::new();
    let mut seen = BTreeSet::new();
    for krate in ["shared", "collector", "web"] {
        for file in rust_files(&root().join(krate).join("src")) {
            let rel = file.strip_prefix(root()).unwrap().to_string_lossy().into_owned();
            let code = code_only(&std::fs::read_to_string(&file).unwrap());
            for (name, line, lines) in function_lengths(&code) {
                if lines > MAX_FUNCTION_LINES * 9 / 10 {
                    // Near or past the limit: printed with `--nocapture`, to split at a seam
                    // before the limit forces a squeeze.
                    println!("{rel}:{line} {name}: {lines} lines");
                }
                if lines <= MAX_FUNCTION_LINES {
                    continue;
                }
                match LONG_FUNCTIONS.iter().find(|(f, n, ..)| *f == rel && *n == name) {
                    Some((_, _, allowed, _)) if lines <= *allowed => {
                        seen.insert((rel.clone(), name));
                    }
                    Some((_, _, allowed, _)) => {
                        long.push(format!("{rel}:{line} {name}: {lines} lines, grew past its {allowed}"))
                    }
                    None => long.push(format!(
                        "{rel}:{line} {name}: {lines} lines (limit {MAX_FUNCTION_LINES})"
                    )),
                }
            }
        }
    }
    assert!(long.is_empty(), "functions over the limit:\n{}", long.join("\n"));
    let stale: Vec<_> = LONG_FUNCTIONS
        .iter()
        .filter(|(file, name, ..)| !seen.contains(&(file.to_string(), name.to_string())))
        .map(|(file, name, ..)| format!("{file} {name}"))
        .collect();
    assert!(
        stale.is_empty(),
        "under {MAX_FUNCTION_LINES} lines now (or gone), take them out of LONG_FUNCTIONS:\n{}",
        stale.join("\n")
    );
}

/// The scanner itself, on made source: strings, raw strings, chars and comments hold braces
/// that are not code; a lifetime is not a character.
#[test]
fn the_scanner_reads_lengths_and_imports_from_code_only() {
    let source = r##"
use crate::a::X;
// use crate::commented::Y;
fn short<'a>(s: &'a str) -> char {
    let _ = "{ not a brace";
    let _ = r#"} nor this"#;
    let _ = '{';
    /* { */
    '}'
}
fn declared(x: u8);
pub(crate) async fn longer() {
    if true {
    }
}
#[cfg(test)]
mod tests { fn ignored() {} }
fn after_tests() {
}
#[cfg(all(test, target_os = "linux"))]
mod linux_tests { fn also_ignored() { let _ = [1][0]; } }
"##;
    let code = code_only(source);
    assert!(!code.contains("commented"));
    assert!(!code.contains("ignored"));
    assert!(!code.contains("linux_tests"));
    let lengths = function_lengths(&code);
    assert_eq!(
        lengths,
        vec![
            ("short".to_string(), 4, 7),
            ("longer".to_string(), 12, 4),
            ("after_tests".to_string(), 18, 2)
        ],
        "{code}"
    );
    let graph = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
        ("d".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    assert_eq!(
        circles(&graph),
        vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]
    );
}

/// The names a module's own file defines at any depth (functions, types, constants, statics,
/// traits, macros and inline modules): what a child reaching into its parent would import.
fn defined_names(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for keyword in [
        "fn",
        "struct",
        "enum",
        "const",
        "static",
        "type",
        "trait",
        "macro_rules!",
        "mod",
    ] {
        let pattern = format!("{keyword} ");
        let mut from = 0;
        while let Some(at) = code[from..].find(&pattern).map(|p| p + from) {
            from = at + pattern.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = code[from..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // `mod x;` declares a child, which is a module of its own, not the parent's item.
            let declared_child = keyword == "mod" && code[from + name.len()..].trim_start().starts_with(';');
            if !name.is_empty() && !declared_child {
                names.insert(name);
            }
        }
    }
    names
}

/// Whether `code` names `child::…` as a relative path (`child::x`, `self::child::x`), not as
/// the tail of a longer path (`other::child::x`).
fn names_child(code: &str, child: &str) -> bool {
    let pattern = format!("{child}::");
    let mut from = 0;
    while let Some(at) = code[from..].find(&pattern).map(|p| p + from) {
        from = at + pattern.len();
        let before = &code[..at];
        let direct = !before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
        if direct || before.ends_with("self::") && !before.ends_with("::self::") {
            return true;
        }
    }
    false
}

/// Every parent module and child that import each other: the child names an item the parent's
/// own file defines (`super::helper`, `crate::bench::Stage`), and the parent names the child
/// (`child::run()`, `pub use child::X`). A folder's `mod.rs` (or the crate root) then is both
/// the conductor and a shelf its children take from; the fix is a module of its own for what
/// they share.
fn parent_child_loops(src: &Path) -> Vec<String> {
    let files = rust_files(src);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let code: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| (module_path(src, f), code_only(&std::fs::read_to_string(f).unwrap())))
        .collect();
    let mut loops = Vec::new();
    for (child, child_code) in &code {
        let Some((name, parent)) = child.split_last() else {
            continue;
        };
        let Some(parent_code) = code.get(parent) else { continue };
        let parent_items = defined_names(parent_code);
        let parent_names_child = names_child(parent_code, name)
            || named_paths(parent_code)
                .iter()
                .any(|p| p.first().is_some_and(|s| s == "crate") && p[1..].starts_with(child));
        if !parent_names_child {
            continue;
        }
        let mut taken = BTreeSet::new();
        for named in named_paths(child_code) {
            let to = resolve(child, &named);
            let Some(item) = to.get(parent.len()) else { continue };
            let mut as_module = parent.to_vec();
            as_module.push(item.clone());
            if to.starts_with(parent) && !modules.contains(&as_module) && parent_items.contains(item) {
                taken.insert(item.clone());
            }
        }
        if !taken.is_empty() {
            loops.push(format!(
                "{}/src: {} takes {taken:?} from its parent, which names it back",
                src.parent().unwrap().file_name().unwrap().to_string_lossy(),
                child.join("::")
            ));
        }
    }
    loops
}

#[test]
fn no_child_module_takes_from_the_parent_that_names_it() {
    let mut found = Vec::new();
    for krate in ["shared", "collector", "web"] {
        found.extend(parent_child_loops(&root().join(krate).join("src")));
    }
    assert!(
        found.is_empty(),
        "parent and child modules that import each other:\n{}",
        found.join("\n")
    );
}

/// The shared crate's stages, bottom up (the leaves first, all on one floor): a module may
/// import only from a stage below its own (leaves from other leaves, without a circle).
const SHARED_STAGES: &[&[&str]] = &[
    &[
        "capped",
        "engine",
        "error",
        "figures",
        "file_label",
        "glossary",
        "pyfloat",
        "sample",
    ],
    &["request"],
    &["scrape"],
    &["run"],
    &["model"],
    &["results"],
    &["sweep"],
    &["check"],
    &["view"],
    &["chart"],
    &["watch"],
];

#[test]
fn no_shared_module_imports_from_a_stage_above_its_own() {
    let graphs = import_graphs(&root().join("shared/src"));
    let floor = |m: &str| SHARED_STAGES.iter().position(|stage| stage.contains(&m));
    let listed: BTreeSet<&str> = SHARED_STAGES.iter().flat_map(|s| s.iter().copied()).collect();
    let modules: BTreeSet<&str> = graphs[""].keys().map(String::as_str).filter(|m| *m != "lib").collect();
    assert_eq!(
        modules, listed,
        "every top-level module of shared/src is on one floor of SHARED_STAGES"
    );
    let mut upward = Vec::new();
    for (from, targets) in &graphs[""] {
        for to in targets {
            let (Some(a), Some(b)) = (floor(from), floor(to)) else {
                continue;
            };
            if b > a || (b == a && a > 0) {
                upward.push(format!("{from} (floor {a}) imports {to} (floor {b})"));
            }
        }
    }
    assert!(upward.is_empty(), "imports back up:\n{}", upward.join("\n"));
}

/// The map in docs/DESIGN.md: a row per source folder of each crate, naming every `.rs` file in
/// it, and no row for a folder that is gone.
#[test]
fn the_design_map_lists_every_source_folder_and_its_files() {
    let design = std::fs::read_to_string(root().join("docs/DESIGN.md")).unwrap();
    let map = &design[design
        .find("## The map")
        .expect("docs/DESIGN.md has a section \"The map\"")..];
    let map = &map[..map[3..].find("\n## ").map_or(map.len(), |end| end + 3)];
    let mut rows: BTreeMap<String, String> = BTreeMap::new();
    for line in map.lines().filter(|l| l.starts_with("| `")) {
        let folder = line[3..].split('`').next().unwrap().to_string();
        rows.insert(folder, line.to_string());
    }
    let mut problems = Vec::new();
    let mut folders = BTreeSet::new();
    for krate in ["shared", "collector", "web"] {
        let src = root().join(krate).join("src");
        let mut by_folder: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for file in rust_files(&src) {
            let rel = file.strip_prefix(root()).unwrap();
            let folder = format!("{}/", rel.parent().unwrap().display());
            by_folder
                .entry(folder)
                .or_default()
                .push(file.file_name().unwrap().to_string_lossy().into_owned());
        }
        for (folder, files) in by_folder {
            folders.insert(folder.clone());
            let Some(row) = rows.get(&folder) else {
                problems.push(format!("{folder} has no row"));
                continue;
            };
            for f in files {
                if !row.contains(&format!("`{f}`")) {
                    problems.push(format!("{folder}'s row does not name `{f}`"));
                }
            }
        }
    }
    for folder in rows.keys() {
        if !folders.contains(folder) {
            problems.push(format!("the map names {folder}, which holds no source file"));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/DESIGN.md's map and the tree differ:\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_file_is_over_the_limit_but_the_named_ones() {
    let mut long = Vec::new();
    let mut seen = BTreeSet::new();
    for krate in ["shared", "collector", "web"] {
        for file in rust_files(&root().join(krate).join("src")) {
            let rel = file.strip_prefix(root()).unwrap().to_string_lossy().into_owned();
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines <= MAX_FILE_LINES {
                continue;
            }
            match LONG_FILES.iter().find(|(f, ..)| *f == rel) {
                Some((_, allowed, _)) if lines <= *allowed => {
                    seen.insert(rel);
                }
                Some((_, allowed, _)) => long.push(format!("{rel}: {lines} lines, grew past its {allowed}")),
                None => long.push(format!(
                    "{rel}: {lines} lines (limit {MAX_FILE_LINES}): split it by topic"
                )),
            }
        }
    }
    assert!(long.is_empty(), "files over the limit:\n{}", long.join("\n"));
    let stale: Vec<_> = LONG_FILES
        .iter()
        .filter(|(f, ..)| !seen.contains(*f))
        .map(|(f, ..)| *f)
        .collect();
    assert!(
        stale.is_empty(),
        "under {MAX_FILE_LINES} lines now (or gone), take them out of LONG_FILES: {stale:?}"
    );
}

/// Every test file is part of the one test binary: a `tests/*.rs` missing from `tests/tests.rs`
/// would never build nor run, and the suite would shrink without a sound.
#[test]
fn every_test_file_is_declared_in_the_test_binary() {
    let tests = root().join("tests");
    let declared = std::fs::read_to_string(tests.join("tests.rs")).unwrap();
    let modules: BTreeSet<String> = declared
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';').map(str::to_string))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let is_module =
            (path.extension().is_some_and(|e| e == "rs") && stem != "tests") || path.join("mod.rs").is_file();
        if is_module && !modules.contains(stem) {
            missing.push(stem.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "test files not declared in tests/tests.rs: {missing:?}"
    );
    assert!(modules.len() >= 20, "{modules:?}");
}
