//! Bounds on what a file costs once decoded, not only on its bytes: parquet datasets (a value
//! over the item cap, a dictionary value expanded in every row, a file the parquet reader panics
//! on) and result files whose per-request lists would be held many times their size as a tree.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use crate::common::{fixture, run_speclens_within, speclens_peak_rss_kb, Speclens};

/// A parquet file of one text column `prompt` holding `values` (snappy-compressed, through a
/// dictionary or not), in one row group.
fn write_prompts_parquet(path: &Path, values: &[ByteArray], dictionary: bool) {
    let schema = parse_message_type("message rows { REQUIRED BYTE_ARRAY prompt (UTF8); }").unwrap();
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_dictionary_enabled(dictionary)
        // Room for a large value in the dictionary (the default 1 MiB falls back to plain pages).
        .set_dictionary_page_size_limit(4 << 20)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(properties)).unwrap();
    let mut group = writer.next_row_group().unwrap();
    while let Some(mut column) = group.next_column().unwrap() {
        column.typed::<ByteArrayType>().write_batch(values, None, None).unwrap();
        column.close().unwrap();
    }
    group.close().unwrap();
    writer.close().unwrap();
}

/// `speclens bench` of `path` as a Hugging Face dataset against `url`, with `extra` flags.
fn bench_hf_args<'a>(url: &'a str, path: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "bench",
        "--url",
        url,
        "--quiet",
        "--no-scrape",
        "--num-prompts",
        "2",
        "--dataset",
        "hf",
        "--dataset-path",
        path,
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    args
}

/// #63 item 5: a parquet value over the 16 MiB item cap is refused from the file's own sizes
/// before a page is decoded; a dictionary value repeated across rows stops at the dataset budget
/// once expanded; a file the parquet reader panics on is an error naming it (exit 2, not 101).
#[test]
fn parquet_rows_are_held_to_the_item_cap_and_the_dataset_budget() {
    let sim = Speclens::instant_spec_sim("0.7", &[]);
    let url = sim.url();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let out = out.to_str().unwrap();

    // One 200 MiB value: a 10 MB file.
    let huge = dir.path().join("huge.parquet");
    write_prompts_parquet(&huge, &[ByteArray::from(vec![b'x'; 200 << 20])], false);
    let huge = huge.to_str().unwrap();
    let (peak_kb, code) = speclens_peak_rss_kb(&bench_hf_args(&url, huge, out, &[]), Duration::from_secs(120));
    assert_eq!(code, 2, "a 200 MiB value is refused");
    assert!(peak_kb < 100 * 1024, "a 200 MiB parquet value: peak RSS {peak_kb} kB");
    let (code, _, err) = run_speclens_within(&bench_hf_args(&url, huge, out, &[]), Duration::from_secs(60));
    assert!(
        code == 2
            && err.contains(
                "column \"prompt\" decodes to 200.0 MiB for 1 row, a value over the 16 MiB one item may hold"
            ),
        "exit {code}: {err}"
    );

    // One 40 MiB value among three empty rows: under 16 MiB a row on average, so the metadata
    // passes it; its row is refused once decoded.
    let padded = dir.path().join("padded.parquet");
    let mut rows = vec![ByteArray::from(vec![b'z'; 40 << 20])];
    rows.extend((0..3).map(|_| ByteArray::from(Vec::new())));
    write_prompts_parquet(&padded, &rows, false);
    let padded = padded.to_str().unwrap();
    let (code, _, err) = run_speclens_within(&bench_hf_args(&url, padded, out, &[]), Duration::from_secs(60));
    assert!(
        code == 2 && err.contains("row 1: 40.0 MiB decoded, over the 16 MiB one item may hold"),
        "exit {code}: {err}"
    );

    // 100 rows sharing one 1 MiB dictionary value: 100 MiB once expanded, past a 16 MiB budget.
    let shared = dir.path().join("shared.parquet");
    let value = ByteArray::from(vec![b'y'; 1 << 20]);
    write_prompts_parquet(&shared, &vec![value; 100], true);
    assert!(std::fs::metadata(&shared).unwrap().len() < 1 << 20);
    let shared = shared.to_str().unwrap();
    let (code, _, err) = run_speclens_within(
        &bench_hf_args(&url, shared, out, &["--max-dataset-mib", "16"]),
        Duration::from_secs(60),
    );
    assert!(
        code == 2 && err.contains("row 17: its rows decode past the 16 MiB --max-dataset-mib allows"),
        "exit {code}: {err}"
    );
    // Within the budget it reads: the same file and 128 MiB.
    let (code, _, err) = run_speclens_within(
        &bench_hf_args(&url, shared, out, &["--max-dataset-mib", "128"]),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");

    // Corrupt files the parquet reader panics on (made by mutating bytes; tests/fixtures/README.md).
    for (name, panic) in [
        ("dictionary", "Decoder for dict should have been set"),
        ("column_range", "column start and length should not be negative"),
    ] {
        let corrupt = fixture(&format!("made_parquet_reader_panics_{name}.parquet"));
        let corrupt = corrupt.to_str().unwrap();
        let (code, _, err) = run_speclens_within(&bench_hf_args(&url, corrupt, out, &[]), Duration::from_secs(60));
        assert!(
            code == 2
                && err.contains(&format!("the parquet reader failed on it (a corrupt file): {panic}"))
                && !err.contains("panicked at"),
            "exit {code}: {err}"
        );
    }
}

/// #63 item 6: a `vllm bench serve` result file of about 67 MB (per-request ITLs and texts for
/// 60,000 requests) is read in a small multiple of its size: the lists no reader uses are
/// skipped unread, the ones folded (TTFTs, the server's timings) kept.
#[test]
fn a_large_result_file_costs_a_small_multiple_of_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("results/vllm-run");
    std::fs::create_dir_all(&run).unwrap();
    let path = run.join("result.json");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let n = 60_000;
        write!(
            file,
            r#"{{"date": "20261207-120000", "backend": "vllm", "model_id": "m", "completed": {n}, "failed": 0,
            "duration": 600.0, "output_throughput": 1280.5, "request_throughput": 100.0,
            "total_input_tokens": 6000000, "total_output_tokens": 768000,
            "mean_ttft_ms": 20.0, "median_ttft_ms": 19.0, "p99_ttft_ms": 40.0, "mean_tpot_ms": 5.0"#
        )
        .unwrap();
        let list = |file: &mut dyn Write, key: &str, each: &dyn Fn(usize) -> String| {
            write!(file, r#", "{key}": ["#).unwrap();
            for i in 0..n {
                let sep = if i == 0 { "" } else { "," };
                write!(file, "{sep}{}", each(i)).unwrap();
            }
            write!(file, "]").unwrap();
        };
        list(&mut file, "ttfts", &|i| format!("0.0{}", 1000 + i % 9000));
        list(&mut file, "server_queue_times", &|i| format!("0.00{}", 100 + i % 900));
        list(&mut file, "server_ttfts", &|i| format!("0.01{}", 100 + i % 900));
        list(&mut file, "input_lens", &|i| format!("{}", 100 + i % 7));
        list(&mut file, "itls", &|i| {
            let gaps: Vec<String> = (0..120).map(|j| format!("0.00{}", 4000 + (i + j) % 5000)).collect();
            format!("[{}]", gaps.join(","))
        });
        list(&mut file, "generated_texts", &|i| {
            format!("\"answer {i}: the sky is blue\"")
        });
        write!(file, r#", "errors": [{}]}}"#, vec!["\"\""; n].join(",")).unwrap();
    }
    let file_kb = std::fs::metadata(&path).unwrap().len() / 1024;
    assert!((60 << 10..80 << 10).contains(&file_kb), "{file_kb} kB");
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let (peak_kb, code) = speclens_peak_rss_kb(&["read", results], Duration::from_secs(120));
    assert_eq!(code, 0);
    assert!(
        peak_kb < 3 * file_kb,
        "read of a {file_kb} kB result file: peak RSS {peak_kb} kB (over 3x its size)"
    );
    // What it reads is what the file says: its throughput and the server's own timings folded.
    let (_, out, err) = run_speclens_within(&["read", results], Duration::from_secs(120));
    assert!(out.contains("vllm-run") && out.contains("1280.5"), "{out}{err}");
    assert!(
        format!("{out}{err}").contains("TTFT split (mean of the 60000 requests the server timed)"),
        "the kept lists fold into the server's TTFT split: {out}{err}"
    );
}
