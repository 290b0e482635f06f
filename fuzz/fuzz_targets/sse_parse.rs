//! Fuzz target: SSE framing never panics on any bytes, and splitting the same bytes into
//! chunks at any points gives the same events (the first byte picks the cut points).
#![no_main]

use libfuzzer_sys::fuzz_target;
use speclens_shared::request::sse::events;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, bytes)) = data.split_first() else { return };
    let whole: Vec<String> = events(&[bytes]).0.into_iter().map(|(_, d)| d).collect();
    let step = usize::from(seed % 13) + 1;
    let chunks: Vec<&[u8]> = bytes.chunks(step).collect();
    let (split, _) = events(&chunks);
    assert!(split.iter().all(|(i, _)| *i < chunks.len().max(1)));
    let split: Vec<String> = split.into_iter().map(|(_, d)| d).collect();
    assert_eq!(whole, split);
});
