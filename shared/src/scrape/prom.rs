//! A small, strict parser for the Prometheus text exposition format (version 0.0.4).
//!
//! Why not a crate: `prometheus-parse` matches samples with the regex `^(\w+)(\{[^}]+\})?…`,
//! which rejects metric names holding `:` (every `vllm:` metric) and cuts label values at `}`,
//! and it brings `regex`, `chrono` and `lazy_static` into the wasm bundle; the other crates are
//! unfinished (`openmetrics` does not parse labels yet). This parser is one pass over the text,
//! allocates nothing for samples the caller does not look at, reports the line of every error,
//! and never panics (property-tested here, fuzzed by `scripts/fuzz.sh`).
//!
//! Accepted: `# HELP` / `# TYPE` / other comment lines, blank lines, `\r\n` line ends, a
//! leading byte-order mark, labels with escaped values (`\\`, `\"`, `\n`) and a trailing comma,
//! Go-style floats (`6.491797e+06`, `+Inf`, `NaN`) and an optional integer timestamp.

use std::borrow::Cow;

use crate::error::Error;

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// Metric name, e.g. `vllm:spec_decode_num_drafts_total`.
    pub name: &'a str,
    /// The validated text between `{` and `}` (empty when the sample has no labels).
    raw_labels: &'a str,
    /// The sample value as written (may be NaN or ±Inf: the caller decides what that means).
    pub value: f64,
    /// Optional trailing timestamp in milliseconds since the Unix epoch.
    pub timestamp_ms: Option<i64>,
    /// 1-based line number, for error messages.
    pub line: usize,
}

impl<'a> Sample<'a> {
    /// The sample's labels in the order written, values unescaped.
    pub fn labels(&self) -> Labels<'a> {
        Labels {
            rest: self.raw_labels.as_bytes(),
            text: self.raw_labels,
            pos: 0,
        }
    }

    /// The value of one label, if present.
    pub fn label(&self, name: &str) -> Option<Cow<'a, str>> {
        self.labels().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// Iterator over the labels of a validated sample.
pub struct Labels<'a> {
    text: &'a str,
    rest: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Labels<'a> {
    type Item = (&'a str, Cow<'a, str>);

    fn next(&mut self) -> Option<Self::Item> {
        // The text was validated by `parse_labels`, so a failure here cannot happen; the
        // iterator simply ends if it did.
        let mut cur = Cursor {
            text: self.text,
            bytes: self.rest,
            pos: self.pos,
        };
        cur.skip_ws();
        if cur.at_end() {
            return None;
        }
        let name = cur.label_name().ok()?;
        cur.skip_ws();
        cur.expect(b'=').ok()?;
        cur.skip_ws();
        let value = cur.quoted().ok()?;
        cur.skip_ws();
        if cur.peek() == Some(b',') {
            cur.pos += 1;
        }
        self.pos = cur.pos;
        Some((name, value))
    }
}

/// Iterator over the samples of an exposition; yields an error for each malformed line.
pub struct Samples<'a> {
    lines: std::str::Split<'a, char>,
    line_no: usize,
}

/// Parse `text` lazily into samples, skipping comments and blank lines.
pub fn samples(text: &str) -> Samples<'_> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Samples {
        lines: text.split('\n'),
        line_no: 0,
    }
}

impl<'a> Iterator for Samples<'a> {
    type Item = Result<Sample<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        for raw in self.lines.by_ref() {
            self.line_no += 1;
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let trimmed = line.trim_start_matches([' ', '\t']);
            if trimmed.is_empty() {
                continue;
            }
            if let Some(comment) = trimmed.strip_prefix('#') {
                match check_comment(comment) {
                    Ok(()) => continue,
                    Err(message) => return Some(Err(self.error(message))),
                }
            }
            return Some(parse_sample(trimmed, self.line_no).map_err(|m| self.error(m)));
        }
        None
    }
}

impl Samples<'_> {
    fn error(&self, message: String) -> Error {
        Error::Exposition {
            line: self.line_no,
            message,
        }
    }
}

/// `# TYPE` lines must name a metric and a known type; other comments are free text.
fn check_comment(comment: &str) -> Result<(), String> {
    let mut words = comment.split_ascii_whitespace();
    if words.next() != Some("TYPE") {
        return Ok(());
    }
    let (Some(name), Some(kind)) = (words.next(), words.next()) else {
        return Err("# TYPE line needs a metric name and a type".into());
    };
    if !is_metric_name(name) {
        return Err(format!("invalid metric name {name:?} in # TYPE line"));
    }
    match kind {
        "counter" | "gauge" | "histogram" | "summary" | "untyped" | "unknown" | "info" | "stateset"
        | "gaugehistogram" => Ok(()),
        other => Err(format!("unknown metric type {other:?} in # TYPE line")),
    }
}

fn is_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_' | b':'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

fn parse_sample(line: &str, line_no: usize) -> Result<Sample<'_>, String> {
    let mut cur = Cursor {
        text: line,
        bytes: line.as_bytes(),
        pos: 0,
    };
    let name = cur.metric_name()?;
    let after_name = cur.pos;
    cur.skip_ws();
    let mut raw_labels = "";
    let mut separated = cur.pos > after_name;
    if cur.peek() == Some(b'{') {
        cur.pos += 1;
        let start = cur.pos;
        cur.parse_labels()?;
        raw_labels = &line[start..cur.pos - 1];
        let after_labels = cur.pos;
        cur.skip_ws();
        separated = cur.pos > after_labels;
    }
    if !separated && !cur.at_end() {
        return Err(format!("expected a space before the value of {name}"));
    }
    let value_text = cur.word();
    if value_text.is_empty() {
        return Err(format!("missing value for {name}"));
    }
    // Rust's float syntax covers Go's `strconv.ParseFloat` forms that Prometheus writes
    // (`15420.0`, `6.491797e+06`, `+Inf`, `NaN`).
    let value = value_text
        .parse::<f64>()
        .ok()
        .ok_or_else(|| format!("invalid value {value_text:?} for {name}"))?;
    cur.skip_ws();
    let mut timestamp_ms = None;
    if !cur.at_end() {
        let ts_text = cur.word();
        timestamp_ms = Some(
            ts_text
                .parse::<i64>()
                .map_err(|_| format!("invalid timestamp {ts_text:?} for {name}"))?,
        );
        cur.skip_ws();
        if !cur.at_end() {
            return Err(format!("unexpected text after the sample of {name}"));
        }
    }
    Ok(Sample {
        name,
        raw_labels,
        value,
        timestamp_ms,
        line: line_no,
    })
}

/// A byte cursor over one line. All slicing happens at ASCII boundaries, so it never splits a
/// UTF-8 character.
struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, want: u8) -> Result<(), String> {
        match self.peek() {
            Some(b) if b == want => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(format!("expected '{}' but found '{}'", want as char, b as char)),
            None => Err(format!("expected '{}' but the line ended", want as char)),
        }
    }

    /// The next run of non-whitespace characters.
    fn word(&mut self) -> &'a str {
        let start = self.pos;
        while matches!(self.peek(), Some(b) if b != b' ' && b != b'\t') {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    fn identifier(&mut self, allow_colon: bool) -> &'a str {
        let start = self.pos;
        while let Some(b) = self.peek() {
            let ok = b.is_ascii_alphanumeric() || b == b'_' || (allow_colon && b == b':');
            let first_ok = !b.is_ascii_digit() || self.pos > start;
            if !(ok && first_ok) {
                break;
            }
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    fn metric_name(&mut self) -> Result<&'a str, String> {
        let name = self.identifier(true);
        if name.is_empty() {
            return Err(match self.peek() {
                Some(b) if b.is_ascii() => format!("expected a metric name, found '{}'", b as char),
                _ => "expected a metric name".into(),
            });
        }
        Ok(name)
    }

    fn label_name(&mut self) -> Result<&'a str, String> {
        let name = self.identifier(false);
        if name.is_empty() {
            return Err("expected a label name".into());
        }
        Ok(name)
    }

    /// A double-quoted label value; borrowed unless it holds escapes.
    fn quoted(&mut self) -> Result<Cow<'a, str>, String> {
        self.expect(b'"')?;
        let start = self.pos;
        let mut owned: Option<String> = None;
        let mut chunk_start = start;
        loop {
            match self.peek() {
                None => return Err("unterminated label value".into()),
                Some(b'"') => {
                    let tail = &self.text[chunk_start..self.pos];
                    self.pos += 1;
                    return Ok(match owned {
                        None => Cow::Borrowed(&self.text[start..self.pos - 1]),
                        Some(mut s) => {
                            s.push_str(tail);
                            Cow::Owned(s)
                        }
                    });
                }
                Some(b'\\') => {
                    let s = owned.get_or_insert_with(String::new);
                    s.push_str(&self.text[chunk_start..self.pos]);
                    let unescaped = match self.bytes.get(self.pos + 1) {
                        Some(b'\\') => '\\',
                        Some(b'"') => '"',
                        Some(b'n') => '\n',
                        Some(&b) if b.is_ascii() => {
                            return Err(format!("invalid escape '\\{}' in label value", b as char))
                        }
                        _ => return Err("invalid escape in label value".into()),
                    };
                    s.push(unescaped);
                    self.pos += 2;
                    chunk_start = self.pos;
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// Validate `name="value", …}` up to and including the closing brace.
    fn parse_labels(&mut self) -> Result<(), String> {
        loop {
            self.skip_ws();
            if self.peek() == Some(b'}') {
                self.pos += 1;
                return Ok(());
            }
            self.label_name()?;
            self.skip_ws();
            self.expect(b'=')?;
            self.skip_ws();
            self.quoted()?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b) if b.is_ascii() => {
                    return Err(format!("expected ',' or '}}' after a label, found '{}'", b as char))
                }
                _ => return Err("expected ',' or '}' after a label".into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Sample<'_> {
        let mut it = samples(text);
        let s = it.next().expect("a sample").expect("valid");
        assert!(it.next().is_none());
        s
    }

    #[test]
    fn parses_names_labels_values_and_timestamps() {
        let s = one("vllm:x_total{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} 6.491797e+06 1700000000000\r\n");
        assert_eq!(s.name, "vllm:x_total");
        assert_eq!(s.value, 6_491_797.0);
        assert_eq!(s.timestamp_ms, Some(1_700_000_000_000));
        let labels: Vec<_> = s.labels().collect();
        assert_eq!(
            labels,
            vec![("engine", "0".into()), ("model_name", "Qwen/Qwen3-8B".into())]
        );
    }

    #[test]
    fn unescapes_label_values_with_braces_commas_and_quotes() {
        let s = one(r#"m{a="x}, \"y\" \\ z\nw",b="2",} 1"#);
        assert_eq!(s.label("a").unwrap(), "x}, \"y\" \\ z\nw");
        assert_eq!(s.label("b").unwrap(), "2");
        assert!(matches!(s.label("b").unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn skips_comments_blank_lines_and_bom() {
        let text = "\u{feff}# HELP m help text { anything\n# TYPE m counter\n\n  \nm 1\n# EOF\n";
        assert_eq!(samples(text).count(), 1);
    }

    #[test]
    fn special_values_parse_for_the_caller_to_judge() {
        assert!(one("m NaN").value.is_nan());
        assert_eq!(one("m +Inf").value, f64::INFINITY);
        assert_eq!(one("m -Inf").value, f64::NEG_INFINITY);
        assert_eq!(one("m 7.71e4").value, 77_100.0);
    }

    #[test]
    fn malformed_lines_report_their_line_number() {
        let cases = [
            ("ok 1\nm{a=\"1\" 2", 2, "expected ','"),
            ("m{a=1} 2", 1, "expected '\"'"),
            ("m{a=\"1} 2", 1, "unterminated"),
            ("m", 1, "missing value"),
            ("m abc", 1, "invalid value"),
            ("m 1 2 3", 1, "unexpected text"),
            ("m 1 1.5", 1, "invalid timestamp"),
            ("9m 1", 1, "expected a metric name"),
            ("m{a=\"\\t\"} 1", 1, "invalid escape"),
            ("# TYPE m bogus", 1, "unknown metric type"),
            ("m{1a=\"x\"} 1", 1, "expected a label name"),
            ("m{a=\"x\"}1", 1, "expected a space"),
        ];
        for (text, line, needle) in cases {
            let err = samples(text)
                .find_map(Result::err)
                .unwrap_or_else(|| panic!("{text:?} parsed"));
            let Error::Exposition { line: got, message } = &err else {
                panic!("{err:?}")
            };
            assert_eq!(*got, line, "{text:?}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in ".{0,300}") {
            for s in samples(&text).flatten() {
                let _ = s.labels().count();
            }
        }

        #[test]
        fn never_panics_on_exposition_shaped_text(
            text in r#"([a-z_:]{1,8}(\{([a-z]{1,3}="([^"\\]|\\["n\\x]){0,6}",?){0,3}\})? ?[-+0-9.eEInfNa]{0,8}( -?[0-9]{0,4})?\r?\n|# .{0,10}\n){0,8}"#
        ) {
            for s in samples(&text).flatten() {
                let labels: Vec<_> = s.labels().collect();
                proptest::prop_assert!(labels.len() <= 3);
            }
        }
    }
}
