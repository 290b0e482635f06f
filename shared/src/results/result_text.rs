//! A result file's text read into a [`RunResult`] with memory a small multiple of the file: a key
//! the model does not name whose value is a list or an object (`vllm bench serve`'s per-request
//! `itls`, `generated_texts`, `input_lens`…) is skipped unread, but for the lists speclens folds.
//!
//! Read whole as a JSON tree first and then typed (how it was read before), a 64 MB result file
//! held about 32 times its size: every number a tree node, and the struct's flattened `extra`
//! buffering all of it again. Here the top level is split into borrowed raw values (no copy), the
//! values kept are joined into one smaller text and that text is read typed.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::run_result::RunResult;

/// The lists among the keys [`RunResult`] does not name that a result file's reading keeps:
/// `vllm bench serve`'s per-request client TTFTs and (0.33) server timings, which
/// [`RunResult::read_vllm_server_times`] folds into speclens's own distributions.
pub const KEPT_LISTS: [&str; 3] = ["ttfts", "server_queue_times", "server_ttfts"];

/// `text` as a run's result file (speclens's `result.json` or `vllm bench serve`'s): `Ok(None)`
/// when it is not a JSON object with the request counts (`completed`, `output_throughput`), an
/// error saying why when it has them but its keys do not read.
pub fn run_result_of_text(text: &str) -> Result<Option<RunResult>, String> {
    let top = match serde_json::from_str::<TopLevel<'_>>(text) {
        Ok(TopLevel(top)) => top,
        Err(e) if e.to_string().starts_with(TOO_MANY_KEYS) => return Err(e.to_string()),
        Err(_) => return Ok(None),
    };
    if !top.contains_key("completed") || !top.contains_key("output_throughput") {
        return Ok(None);
    }
    let mut kept = String::with_capacity(text.len().min(1 << 20));
    kept.push('{');
    for (key, raw) in &top {
        let nested = raw.get().trim_start().starts_with(['[', '{']);
        if nested && !KEPT_LISTS.contains(&key.as_str()) && !is_named(key) {
            continue;
        }
        if kept.len() > 1 {
            kept.push(',');
        }
        kept.push_str(&quoted(key));
        kept.push(':');
        kept.push_str(raw.get());
    }
    kept.push('}');
    drop(top);
    serde_json::from_str(&kept).map(Some).map_err(|e| e.to_string())
}

/// The most top-level keys a result file may have: speclens writes about a hundred, `vllm bench
/// serve` fewer; a file with more is refused before its keys are probed or kept.
pub const MAX_TOP_LEVEL_KEYS: usize = 4096;

const TOO_MANY_KEYS: &str = "more top-level keys than a result file has";

/// A JSON object's top-level keys and their raw values, borrowed from the text (the last of a
/// repeated key wins, as in a JSON tree), at most [`MAX_TOP_LEVEL_KEYS`] of them.
struct TopLevel<'a>(BTreeMap<String, &'a RawValue>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for TopLevel<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = TopLevel<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut top = BTreeMap::new();
                while let Some((key, raw)) = map.next_entry::<String, &'de RawValue>()? {
                    top.insert(key, raw);
                    if top.len() > MAX_TOP_LEVEL_KEYS {
                        return Err(serde::de::Error::custom(format!(
                            "{TOO_MANY_KEYS} (over {MAX_TOP_LEVEL_KEYS})"
                        )));
                    }
                }
                Ok(TopLevel(top))
            }
        }
        d.deserialize_map(Keys)
    }
}

/// `key` as a JSON string.
fn quoted(key: &str) -> String {
    serde_json::Value::from(key).to_string()
}

/// Whether [`RunResult`] names `key` as one of its fields rather than keeping it in
/// [`RunResult::extra`]: a field takes `null` or refuses it, an unnamed key lands in `extra`.
fn is_named(key: &str) -> bool {
    let probe = format!("{{{}:null}}", quoted(key));
    serde_json::from_str::<RunResult>(&probe).map_or(true, |r| !r.extra.contains_key(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_lists_are_skipped_and_named_fields_and_folded_lists_kept() {
        let text = r#"{"completed": 2, "output_throughput": 10.5, "label": "a",
            "itls": [[0.01, 0.02], [0.03]], "generated_texts": ["x", "y"], "pad": {"deep": [1, 2]},
            "ttfts": [0.1, 0.2], "server_queue_times": [0.01, null], "server_ttfts": [0.05, 0.06],
            "spec_decode_per_position_acceptance_rates": [0.8, 0.5], "p99_ttft_ms": 12.5,
            "tokenizer_id": "cl100k"}"#;
        let r = run_result_of_text(text).unwrap().unwrap();
        assert_eq!((r.completed, r.label.as_str()), (Some(2), "a"));
        assert_eq!(r.spec_decode_per_position_acceptance_rates, Some(vec![0.8, 0.5]));
        let extra: Vec<&str> = r.extra.keys().map(String::as_str).collect();
        assert_eq!(
            extra,
            [
                "p99_ttft_ms",
                "server_queue_times",
                "server_ttfts",
                "tokenizer_id",
                "ttfts"
            ]
        );
        // Read whole, the same file gives the same fields and every unnamed key besides.
        let whole: RunResult = serde_json::from_str(text).unwrap();
        let mut trimmed = whole.clone();
        trimmed
            .extra
            .retain(|k, _| !["itls", "generated_texts", "pad"].contains(&k.as_str()));
        assert_eq!(r, trimmed);
        assert_eq!(whole.extra.len(), 8);
    }

    #[test]
    fn what_is_not_a_run_result_reads_as_none_and_a_bad_field_as_an_error() {
        assert_eq!(run_result_of_text("not json"), Ok(None));
        assert_eq!(run_result_of_text("[1, 2]"), Ok(None));
        assert_eq!(run_result_of_text(r#"{"rows": []}"#), Ok(None));
        let bad = run_result_of_text(r#"{"completed": "two", "output_throughput": 1}"#).unwrap_err();
        assert!(bad.contains("invalid type"), "{bad}");
        assert!(is_named("completed") && is_named("label") && is_named("distributions"));
        // A file of more keys than any result file is refused before its keys are probed.
        let many: Vec<String> = (0..=MAX_TOP_LEVEL_KEYS).map(|i| format!("\"k{i}\": 0")).collect();
        let text = format!("{{\"completed\": 1, \"output_throughput\": 1, {}}}", many.join(","));
        let refused = run_result_of_text(&text).unwrap_err();
        assert!(
            refused.starts_with("more top-level keys than a result file has (over 4096)"),
            "{refused}"
        );
        assert!(!is_named("itls") && !is_named("p99_ttft_ms"));
    }
}
