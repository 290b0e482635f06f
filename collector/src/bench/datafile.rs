//! Reading a dataset file without holding it whole: a regular file under a size limit, read
//! line by line or item by item from a JSON array (each line or item at most
//! [`MAX_ITEM_BYTES`]), and sampled into a seeded, bounded set of the prompts a run sends.

use std::cell::Cell;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::de::{DeserializeOwned, SeqAccess, Visitor};
use serde::Deserializer as _;

use crate::error::CollectorError;

/// The largest dataset file read unless `--max-dataset-mib` says otherwise (ShareGPT's is
/// about 650 MB).
pub const DEFAULT_MAX_DATASET_BYTES: u64 = 4 << 30;

/// The longest line (or JSON array item) of a dataset: a prompt of a million tokens is about
/// 4 MiB of text.
pub const MAX_ITEM_BYTES: u64 = 16 << 20;

fn bad(path: &Path, what: impl std::fmt::Display) -> CollectorError {
    CollectorError::InvalidArgument(format!("dataset {}: {what}", path.display()))
}

/// The dataset file opened for reading, the one bounded way ([`crate::files`]): a regular
/// file (a FIFO would hang the read, `/dev/zero` never ends) of at most `max_bytes`, read no
/// further than that; the error says which rule it broke.
pub fn open(path: &Path, max_bytes: u64) -> Result<BufReader<std::io::Take<File>>, CollectorError> {
    let (file, _) = crate::files::open(path, crate::files::Kind::Dataset(max_bytes)).map_err(|why| bad(path, why))?;
    Ok(BufReader::with_capacity(1 << 16, file.take(max_bytes)))
}

/// Calls `each` with every line of the file (its number from 1, and its text with the line
/// end), read one at a time; a line over [`MAX_ITEM_BYTES`] or not UTF-8 is an error naming it.
pub fn for_each_line(
    path: &Path,
    max_bytes: u64,
    each: impl FnMut(usize, &str) -> Result<(), CollectorError>,
) -> Result<(), CollectorError> {
    let kind = crate::files::Kind::Dataset(max_bytes);
    crate::files::for_each_line(path, kind, MAX_ITEM_BYTES, |why| bad(path, why), each)
}

/// Whether the file's first character after white space is `[` (a JSON array, not JSON lines).
pub fn holds_a_json_array(path: &Path, max_bytes: u64) -> Result<bool, CollectorError> {
    let mut reader = open(path, max_bytes)?;
    loop {
        let buf = reader.fill_buf().map_err(|e| bad(path, format!("cannot read: {e}")))?;
        let Some(&first) = buf.iter().find(|b| !b.is_ascii_whitespace()) else {
            if buf.is_empty() {
                return Ok(false);
            }
            let all = buf.len();
            reader.consume(all);
            continue;
        };
        return Ok(first == b'[');
    }
}

/// A reader that fails once more than the budget it shares is read (reset before each item).
struct Budgeted<R> {
    inner: R,
    left: Rc<Cell<u64>>,
}

impl<R: Read> Read for Budgeted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left.get();
        if left == 0 {
            return Err(std::io::Error::other("item over budget"));
        }
        let take = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..take])?;
        self.left.set(left - read as u64);
        Ok(read)
    }
}

/// Calls `each` with every item of the JSON array the file holds, parsed one at a time (the
/// array is never held whole); an item over [`MAX_ITEM_BYTES`] is an error. `shape` says what
/// the file should be, for the error when it is not.
pub fn for_each_array_item<T: DeserializeOwned>(
    path: &Path,
    max_bytes: u64,
    shape: &str,
    mut each: impl FnMut(T) -> Result<(), CollectorError>,
) -> Result<(), CollectorError> {
    struct Items<'a, T, F> {
        each: &'a mut F,
        left: Rc<Cell<u64>>,
        stopped: &'a mut Option<CollectorError>,
        item: std::marker::PhantomData<T>,
    }
    impl<'de, T: DeserializeOwned, F: FnMut(T) -> Result<(), CollectorError>> Visitor<'de> for Items<'_, T, F> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            loop {
                self.left.set(MAX_ITEM_BYTES);
                let Some(item) = seq.next_element::<T>()? else {
                    return Ok(());
                };
                if let Err(e) = (self.each)(item) {
                    *self.stopped = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
            }
        }
    }
    let left = Rc::new(Cell::new(MAX_ITEM_BYTES));
    let reader = Budgeted {
        inner: open(path, max_bytes)?,
        left: left.clone(),
    };
    let mut stopped = None;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let parsed = de
        .deserialize_seq(Items {
            each: &mut each,
            left: left.clone(),
            stopped: &mut stopped,
            item: std::marker::PhantomData,
        })
        .and_then(|()| de.end());
    if let Some(e) = stopped {
        return Err(e);
    }
    parsed.map_err(|e| {
        if e.is_io() && left.get() == 0 {
            bad(
                path,
                format!(
                    "an item ending past line {} is over {} MiB, the most one item may hold",
                    e.line(),
                    MAX_ITEM_BYTES >> 20
                ),
            )
        } else {
            CollectorError::InvalidArgument(format!("{}: not {shape}: {e}", path.display()))
        }
    })
}

/// A uniform random sample of at most `cap` items, seeded, drawn as the items stream by: each
/// item gets a random key and the `cap` smallest keys are kept. An item that cannot be kept is
/// never built (nor its text tokenized).
pub struct Sample<T> {
    cap: usize,
    rng: SmallRng,
    kept: BinaryHeap<Keyed<T>>,
}

struct Keyed<T>(u64, T);

impl<T> PartialEq for Keyed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<T> Eq for Keyed<T> {}
impl<T> PartialOrd for Keyed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Keyed<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<T> Sample<T> {
    pub fn new(cap: usize, seed: u64) -> Sample<T> {
        Sample {
            cap: cap.max(1),
            rng: SmallRng::seed_from_u64(seed),
            kept: BinaryHeap::new(),
        }
    }

    /// Offers the next item: `build` runs only when the item's key would keep it, and may
    /// still leave it out (`None`).
    pub fn offer(&mut self, build: impl FnOnce() -> Option<T>) {
        let key = self.rng.random::<u64>();
        let room = self.kept.len() < self.cap || self.kept.peek().is_some_and(|max| key < max.0);
        let Some(item) = room.then(build).flatten() else {
            return;
        };
        if self.kept.len() == self.cap {
            self.kept.pop();
        }
        self.kept.push(Keyed(key, item));
    }

    /// The kept items in the order of their keys (a seeded shuffle).
    pub fn into_vec(self) -> Vec<T> {
        self.kept.into_sorted_vec().into_iter().map(|k| k.1).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_of(n: u32, cap: usize, seed: u64) -> Vec<u32> {
        let mut s = Sample::new(cap, seed);
        for i in 0..n {
            s.offer(|| Some(i));
        }
        s.into_vec()
    }

    #[test]
    fn a_sample_keeps_everything_when_it_fits_and_is_seeded_and_uniform_when_not() {
        let mut all = sample_of(10, 100, 7);
        assert_ne!(all, (0..10).collect::<Vec<_>>(), "shuffled");
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(sample_of(1000, 5, 7), sample_of(1000, 5, 7));
        assert_ne!(sample_of(1000, 5, 7), sample_of(1000, 5, 8));
        // Each of 10 items lands in a sample of 3 about 3/10 of the time over 2,000 seeds.
        let mut hits = [0u32; 10];
        for seed in 0..2000 {
            for i in sample_of(10, 3, seed) {
                hits[i as usize] += 1;
            }
        }
        assert!(hits.iter().all(|&h| (500..700).contains(&h)), "{hits:?}");
    }

    #[test]
    fn lines_and_array_items_are_read_one_at_a_time_within_their_limits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, "a\nb\r\n\nc").unwrap();
        let mut lines = Vec::new();
        for_each_line(&path, 1 << 20, |n, l| {
            lines.push((n, l.to_string()));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            lines,
            [
                (1, "a\n".into()),
                (2, "b\r\n".into()),
                (3, "\n".into()),
                (4, "c".into())
            ]
        );
        std::fs::write(dir.path().join("big"), vec![b'\n'; 3 << 19]).unwrap();
        let err = for_each_line(&dir.path().join("big"), 1 << 20, |_, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("1.5 MiB, over the 1 MiB"), "{err}");
        std::fs::write(&path, " \n [1, 2,\n 3] ").unwrap();
        assert!(holds_a_json_array(&path, 1 << 20).unwrap());
        let mut items = Vec::new();
        for_each_array_item::<u32>(&path, 1 << 20, "numbers", |i| {
            items.push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(items, [1, 2, 3]);
        std::fs::write(&path, "[1, \"x\"]").unwrap();
        let err = for_each_array_item::<u32>(&path, 1 << 20, "numbers", |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not numbers") && err.contains("line 1"), "{err}");
        std::fs::write(&path, "[1] 2").unwrap();
        assert!(for_each_array_item::<u32>(&path, 1 << 20, "numbers", |_| Ok(())).is_err());
    }

    #[test]
    fn an_item_or_line_over_the_limit_is_refused_by_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        let long = "x".repeat(MAX_ITEM_BYTES as usize + 10);
        std::fs::write(&path, format!("[\"a\",\n\"{long}\"]")).unwrap();
        let err = for_each_array_item::<String>(&path, 1 << 30, "texts", |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("past line 2 is over 16 MiB"), "{err}");
        std::fs::write(&path, format!("short\n{long}\n")).unwrap();
        let err = for_each_line(&path, 1 << 30, |_, _| Ok(())).unwrap_err().to_string();
        assert!(err.contains("line 2 is over 16 MiB"), "{err}");
    }
}
