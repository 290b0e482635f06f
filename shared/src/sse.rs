//! Server-sent events framing, as OpenAI-compatible servers stream completions: the received
//! chunks split into events (`\n\n` or `\r\n\r\n` ends one), each event's `data:` lines joined,
//! and each event tagged with the index of the chunk that completed it (the client stamps
//! chunks with their arrival time, so an event's time is its last byte's).

/// The events in `chunks`, as `(index of the completing chunk, data)`, and whether bytes other
/// than whitespace were left after the last complete event (a stream cut inside an event).
/// Events without a `data:` line (comments, keep-alives) are skipped. Linear in the input.
pub fn events<B: AsRef<[u8]>>(chunks: &[B]) -> (Vec<(usize, String)>, bool) {
    let mut events = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    for (index, chunk) in chunks.iter().enumerate() {
        // Resume the separator search just before the new bytes (a separator may straddle).
        let mut from = pending.len().saturating_sub(3);
        pending.extend_from_slice(chunk.as_ref());
        let mut start = 0;
        while let Some((end, sep)) = find_event_end(&pending[from..]).map(|(e, s)| (from + e, s)) {
            push_event(&pending[start..end], index, &mut events);
            start = end + sep;
            from = start;
        }
        pending.drain(..start);
    }
    let trailing = !pending.iter().all(u8::is_ascii_whitespace);
    (events, trailing)
}

fn push_event(raw: &[u8], index: usize, events: &mut Vec<(usize, String)>) {
    let text = String::from_utf8_lossy(raw);
    // A stream may open with a byte-order mark (the SSE standard's decoder drops it).
    let data: Vec<&str> = text
        .trim_start_matches('\u{feff}')
        .lines()
        .filter_map(|l| l.strip_prefix("data:").map(|d| d.strip_prefix(' ').unwrap_or(d)))
        .collect();
    if !data.is_empty() {
        events.push((index, data.join("\n")));
    }
}

/// End of the first event (`\n\n` or `\r\n\r\n`) and the separator's length.
fn find_event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let i = buf.iter().position(|b| *b == b'\n')?;
    let mut i = i;
    loop {
        if buf.get(i + 1) == Some(&b'\n') {
            return Some((i, 2));
        }
        if i >= 1 && buf[i - 1] == b'\r' && buf.get(i + 1..i + 3) == Some(b"\r\n") {
            return Some((i - 1, 4));
        }
        i += 1 + buf[i + 1..].iter().position(|b| *b == b'\n')?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_take_the_completing_chunk() {
        let chunks = [
            "data: {\"a\":1}\n\ndata: {\"b\"",
            ":2}\r\n\r\n: comment\n\ndata: [DONE]\n\n",
        ];
        let (events, trailing) = events(&chunks);
        assert!(!trailing);
        let got: Vec<(usize, &str)> = events.iter().map(|(i, d)| (*i, d.as_str())).collect();
        assert_eq!(got, vec![(0, "{\"a\":1}"), (1, "{\"b\":2}"), (1, "[DONE]")]);
    }

    #[test]
    fn separators_straddling_chunks_and_cut_streams() {
        let (e, trailing) = events(&["data: x\r\n\r", "\ndata: y\n", "\n", "data: z"]);
        assert_eq!(e, vec![(1, "x".to_string()), (2, "y".to_string())]);
        assert!(trailing, "a cut inside the last event");
        let (e, _) = events(&["data: a\ndata: b\n\n"]);
        assert_eq!(e, vec![(0, "a\nb".to_string())]);
        assert_eq!(events::<&[u8]>(&[]), (vec![], false));
        let (e, _) = events(&["\u{feff}data: first\n\n"]);
        assert_eq!(e, vec![(0, "first".to_string())], "a leading byte-order mark");
    }

    proptest::proptest! {
        /// However the bytes are split into chunks, the events are the same.
        #[test]
        fn chunking_does_not_change_the_events(text in "(data: [a-z{}:\"]{0,6}\r?\n\r?\n?|: c\n\n|\n){0,12}", cuts in proptest::collection::vec(0usize..64, 0..6)) {
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut last = 0;
            for p in points {
                chunks.push(&bytes[last..p]);
                last = p;
            }
            chunks.push(&bytes[last..]);
            let whole: Vec<String> = events(&[bytes]).0.into_iter().map(|(_, d)| d).collect();
            let split: Vec<String> = events(&chunks).0.into_iter().map(|(_, d)| d).collect();
            proptest::prop_assert_eq!(whole, split);
        }
    }
}
