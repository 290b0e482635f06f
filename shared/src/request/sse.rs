//! Server-sent events framing, as OpenAI-compatible servers stream completions: the received
//! chunks split into events (`\n\n` or `\r\n\r\n` ends one), each event's `data:` lines joined,
//! and each event tagged with the index of the chunk that completed it (the client stamps
//! chunks with their arrival time, so an event's time is its last byte's).

use std::borrow::Cow;

/// The events in `chunks`, as `(index of the completing chunk, data)`, and whether bytes other
/// than whitespace were left after the last complete event (a stream cut inside an event).
/// Events without a `data:` line (comments, keep-alives) are skipped. Linear in the input.
pub fn events<B: AsRef<[u8]>>(chunks: &[B]) -> (Vec<(usize, String)>, bool) {
    let mut body = Vec::new();
    let mut ends = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        body.extend_from_slice(chunk.as_ref());
        ends.push(body.len());
    }
    let mut events = Vec::new();
    let trailing = for_each_event(&body, &ends, |index, data| {
        events.push((index, data.to_string()));
        true
    });
    (events, trailing)
}

/// Hand each event of a body to `each` as it is framed: the index of the chunk that completed
/// it (the chunk whose bytes hold the separator's last byte; `ends[i]` is where chunk `i`
/// ends in `body`) and its data, borrowed from `body` unless it has several `data:` lines or
/// bytes that are not UTF-8. Nothing is copied per event and no list of events is kept: a
/// stream of millions of tiny events costs nothing per event. `each` returns `false` to stop.
/// Returns whether bytes other than whitespace were left after the last complete event.
pub fn for_each_event(body: &[u8], ends: &[usize], mut each: impl FnMut(usize, &str) -> bool) -> bool {
    let mut start = 0;
    let mut chunk = 0;
    while let Some((end, sep)) = find_event_end(&body[start..]).map(|(e, s)| (start + e, s)) {
        let last_byte = end + sep - 1;
        while chunk + 1 < ends.len() && ends[chunk] <= last_byte {
            chunk += 1;
        }
        if let Some(data) = event_data(&body[start..end]) {
            if !each(chunk, &data) {
                return false;
            }
        }
        start = end + sep;
    }
    !body[start..].iter().all(u8::is_ascii_whitespace)
}

/// One event's `data:` lines joined, or `None` when it has none; borrowed for the common event
/// of one `data:` line in UTF-8 (bytes that are not UTF-8 are replaced, lossily).
fn event_data(raw: &[u8]) -> Option<Cow<'_, str>> {
    match std::str::from_utf8(raw) {
        Ok(text) => joined_data(text),
        Err(_) => joined_data(&String::from_utf8_lossy(raw)).map(|d| Cow::Owned(d.into_owned())),
    }
}

fn joined_data(text: &str) -> Option<Cow<'_, str>> {
    // A stream may open with a byte-order mark (the SSE standard's decoder drops it).
    let text = text.trim_start_matches('\u{feff}');
    // The common event, one `data:` line, without walking its lines.
    if let Some(data) = text.strip_prefix("data:") {
        if memchr::memchr(b'\n', data.as_bytes()).is_none() {
            return Some(Cow::Borrowed(data.strip_prefix(' ').unwrap_or(data)));
        }
    }
    let data_lines = || {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:").map(|d| d.strip_prefix(' ').unwrap_or(d)))
    };
    let mut lines = data_lines();
    let first = lines.next()?;
    if lines.next().is_none() {
        return Some(Cow::Borrowed(first));
    }
    Some(Cow::Owned(data_lines().collect::<Vec<_>>().join("\n")))
}

/// End of the first event (`\n\n` or `\r\n\r\n`) and the separator's length.
fn find_event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = memchr::memchr(b'\n', buf)?;
    loop {
        if buf.get(i + 1) == Some(&b'\n') {
            return Some((i, 2));
        }
        if i >= 1 && buf[i - 1] == b'\r' && buf.get(i + 1..i + 3) == Some(b"\r\n") {
            return Some((i - 1, 4));
        }
        i += 1 + memchr::memchr(b'\n', &buf[i + 1..])?;
    }
}

/// `json` with every `\uD800`–`\uDFFF` escape that is not half of a surrogate pair written as
/// `\uFFFD` (the replacement character), or `None` when it holds no such escape. JSON parsers
/// refuse a lone surrogate (`serde_json`: "lone leading surrogate"); one bad character in one
/// event must not cost the whole response, so the event is read again with it replaced.
pub fn without_lone_surrogates(json: &str) -> Option<String> {
    let bytes = json.as_bytes();
    let unit_at = |i: usize| -> Option<u16> {
        let hex = json.get(i + 2..i + 6)?;
        (bytes.get(i) == Some(&b'\\') && bytes.get(i + 1) == Some(&b'u'))
            .then(|| u16::from_str_radix(hex, 16).ok())
            .flatten()
    };
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = unit_at(i) else {
            // Any other escape: skip its two characters (so `\\u…` is not read as an escape).
            i += 2;
            continue;
        };
        let paired = (0xD800..0xDC00).contains(&unit) && unit_at(i + 6).is_some_and(|u| (0xDC00..0xE000).contains(&u));
        if paired {
            i += 12;
        } else if (0xD800..0xE000).contains(&unit) {
            out.push_str(&json[copied..i]);
            out.push_str("\\uFFFD");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    (copied > 0).then(|| {
        out.push_str(&json[copied..]);
        out
    })
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

    #[test]
    fn lone_surrogates_are_replaced_and_pairs_and_escaped_backslashes_kept() {
        let fixed = without_lone_surrogates(r#"{"text":"a\ud800b"}"#).unwrap();
        assert_eq!(fixed, r#"{"text":"a\uFFFDb"}"#);
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["text"], "a\u{FFFD}b");
        // A trailing low half alone, and one at the very end.
        assert_eq!(
            without_lone_surrogates(r#""\udc00x\udfff""#).unwrap(),
            r#""\uFFFDx\uFFFD""#
        );
        // A pair (😀), an ordinary escape and an escaped backslash before "u" are left alone.
        assert_eq!(without_lone_surrogates(r#""\ud83d\ude00 \u00e9 \\ud800""#), None);
        // A cut escape is not a surrogate.
        assert_eq!(without_lone_surrogates(r#""\ud8"#), None);
    }
}
