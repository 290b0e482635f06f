//! Fuzz target: the Prometheus text parser and the spec-decode snapshot never panic, and every
//! sample the parser accepts has labels that iterate cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for sample in speclens_shared::scrape::prom::samples(text).flatten() {
        let _ = sample.labels().count();
    }
    if let Ok(snapshot) = speclens_shared::scrape::parse_metrics(text) {
        if let Some(c) = snapshot.counters {
            let _ = speclens_shared::scrape::derive_stats(&c.total);
            let _ = c.by_label("engine");
        }
    }
});
