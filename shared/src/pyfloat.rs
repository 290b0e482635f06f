//! Python's float text (`repr`), the form of every number in the files speclens matches that
//! Python writes (AISBench's `spec_decode_<label>.json`, vLLM's and prometheus_client's text):
//! `1e-05` and `5e-06` where Rust's shortest form is `1e-5` and `0.000005`.

use std::collections::BTreeMap;

use serde::ser::{Error as _, SerializeMap};
use serde::Serializer;
use serde_json::value::RawValue;

/// Python's `repr(float)`: shortest round-trip digits, `.0` on whole numbers, exponent form
/// from 1e16 up and below 1e-4 (`1e+16`, `1e-05`).
pub fn repr(v: f64) -> String {
    let abs = v.abs();
    if abs != 0.0 && abs.is_finite() && !(1e-4..1e16).contains(&abs) {
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let s = format!("{v:?}");
    if s.contains('.') || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

/// A finite float as a JSON number in Python's form.
fn raw(v: f64) -> Result<Box<RawValue>, String> {
    if !v.is_finite() {
        return Err(format!("{v} is not a JSON number"));
    }
    RawValue::from_string(repr(v)).map_err(|e| e.to_string())
}

/// `serialize_with` for an optional float, written as Python writes it.
pub fn option<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_some(&raw(*v).map_err(S::Error::custom)?),
        None => s.serialize_none(),
    }
}

/// `serialize_with` for a map of floats, written as Python writes them.
pub fn map<S: Serializer>(m: &BTreeMap<u32, f64>, s: S) -> Result<S::Ok, S::Error> {
    let mut out = s.serialize_map(Some(m.len()))?;
    for (k, v) in m {
        out.serialize_entry(k, &raw(*v).map_err(S::Error::custom)?)?;
    }
    out.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_python_writes_them() {
        assert_eq!(repr(1e-5), "1e-05");
        assert_eq!(repr(5e-6), "5e-06");
        assert_eq!(repr(0.0001), "0.0001");
        assert_eq!(repr(65.0), "65.0");
        assert_eq!(repr(0.0), "0.0");
        assert_eq!(repr(1e16), "1e+16");
        assert_eq!(repr(1.5e-7), "1.5e-07");
    }
}
