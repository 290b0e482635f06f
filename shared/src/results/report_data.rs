//! The data a static report carries: the dashboard's API answers (`/api/runs`, `/api/runs/<id>`…)
//! keyed by path, under a schema name and version the page checks before showing anything.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Names what the embedded data is.
pub const REPORT_SCHEMA: &str = "speclens.report";

/// Bumped whenever the embedded data changes shape; a page reads only its own version.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// The `id` of the `<script type="application/json">` element holding the data.
pub const REPORT_ELEMENT_ID: &str = "speclens-report";

/// A report's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportData {
    pub schema: String,
    pub schema_version: u32,
    /// The speclens that wrote it.
    pub speclens_version: String,
    /// RFC 3339 time it was written.
    pub created: String,
    /// API path → the JSON the dashboard's server answers there.
    pub responses: BTreeMap<String, Value>,
}

impl ReportData {
    pub fn new(speclens_version: &str, created: &str) -> ReportData {
        ReportData {
            schema: REPORT_SCHEMA.into(),
            schema_version: REPORT_SCHEMA_VERSION,
            speclens_version: speclens_version.into(),
            created: created.into(),
            responses: BTreeMap::new(),
        }
    }

    /// Read embedded data, refusing another schema or version with a message a reader can act
    /// on (rather than an empty page).
    pub fn parse(text: &str) -> Result<ReportData, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("this report's data cannot be read ({e})"))?;
        let schema = value.get("schema").and_then(Value::as_str).unwrap_or("");
        if schema != REPORT_SCHEMA {
            return Err(format!(
                "this file's data is not a speclens report (schema \"{schema}\", expected \"{REPORT_SCHEMA}\")"
            ));
        }
        let version = value.get("schema_version").and_then(Value::as_u64);
        let writer = value
            .get("speclens_version")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        if version != Some(u64::from(REPORT_SCHEMA_VERSION)) {
            let version = version.map_or("none".to_string(), |v| v.to_string());
            return Err(format!(
                "this report was written by speclens {writer} with report schema version {version}; this page reads version {REPORT_SCHEMA_VERSION}. Rebuild it with `speclens report` from the same runs, or open it with speclens {writer}."
            ));
        }
        serde_json::from_value(value).map_err(|e| format!("this report's data is malformed ({e})"))
    }

    /// The data as JSON safe inside `<script type="application/json">`: `<`, `>` and `&` are
    /// written as `\u003c`, `\u003e`, `\u0026`, so no string in it can close the element or open
    /// a comment (JSON reads them back unchanged).
    pub fn to_script_json(&self) -> Result<String, serde_json::Error> {
        Ok(script_safe(&serde_json::to_string(self)?))
    }
}

/// Escape `<`, `>`, `&` (and the JavaScript line separators) in serialised JSON.
pub fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_its_element_and_reads_back_unchanged() {
        let mut data = ReportData::new("0.1.0", "2026-11-29T00:00:00Z");
        let hostile = "</script><img src=x onerror=alert(1)><!-- & \u{2028}";
        data.responses
            .insert("/api/runs/x".into(), serde_json::json!({"model_id": hostile}));
        let text = data.to_script_json().unwrap();
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        let back = ReportData::parse(&text).unwrap();
        assert_eq!(back.responses["/api/runs/x"]["model_id"], hostile);
    }

    #[test]
    fn another_schema_or_version_gets_a_message() {
        let other = r#"{"schema":"speclens.report","schema_version":99,"speclens_version":"9.0.0","created":"","responses":{}}"#;
        let message = ReportData::parse(other).unwrap_err();
        assert!(
            message.contains("speclens 9.0.0") && message.contains("version 99"),
            "{message}"
        );
        assert!(ReportData::parse(r#"{"schema":"x"}"#)
            .unwrap_err()
            .contains("not a speclens report"));
        assert!(ReportData::parse("{").unwrap_err().contains("cannot be read"));
    }
}
