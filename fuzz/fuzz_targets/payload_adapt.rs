//! Fuzz target: the per-request payload adapters never panic on any JSON, and a record they
//! accept always satisfies the rules they check (histogram sums to the steps).
#![no_main]

use libfuzzer_sys::fuzz_target;
use speclens_shared::request::per_request::{adapt_response, PayloadOutcome};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    if let PayloadOutcome::Record(r) = adapt_response(&value) {
        assert_eq!(r.acceptance_histogram.values().sum::<u64>(), r.num_spec_steps);
        assert!(r.num_accepted_draft_tokens <= r.num_draft_tokens);
    }
});
