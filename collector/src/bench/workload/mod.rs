//! Workloads: the prompts a run sends (synthetic with vLLM's `random` ranges and shared prefix,
//! Spec-Bench `question.jsonl`, ShareGPT JSON, vLLM's `sonnet` lines, plain JSONL as vLLM's
//! `custom` dataset), and their request bodies, serialised before the run so nothing is built on
//! the timing path.

mod feed;
mod file;
mod hf;
mod prompt;
mod sharegpt;
mod sonnet;
mod synthetic;

use std::sync::Arc;

use feed::generate;
pub use feed::{body, BodyOptions, BodySettings, Conversation, Feed, Ready, BUILT_AHEAD};
use file::from_file;
use prompt::invalid_workload;
pub use prompt::{speed_bench_split_name, Columns, Dataset, Prompt, Workload, PROMPT_COLUMNS};
use sonnet::from_sonnet;
use synthetic::Synthetic;
use tokio::sync::mpsc;

use crate::bench::tokens::TokenCounter;
use crate::error::CollectorError;

/// The prompts of a run: `count` of them (a dataset file's are a seeded sample of at most
/// `count`, cycled when the file holds fewer).
pub fn load(args: &Workload, count: usize, tokens: &TokenCounter) -> Result<Vec<Prompt>, CollectorError> {
    if !args.categories.is_empty() && matches!(args.dataset, Dataset::Synthetic | Dataset::Sonnet(_)) {
        return invalid_workload("--category takes a spec-bench, speed-bench or jsonl dataset");
    }
    if let Dataset::Sonnet(path) = &args.dataset {
        // Every sonnet prompt is drawn on its own, as vLLM does: no pool to cycle.
        return from_sonnet(args, path, count, tokens);
    }
    match args.dataset.path() {
        None => Ok(Synthetic::new(args).take(count).collect()),
        Some(path) => {
            let pool = from_file(args, path, count, tokens)?;
            Ok((0..count).map(|i| pool[i % pool.len()].clone()).collect())
        }
    }
}

/// The warm-up's and the window's requests: `warmup` then `window` prompts, the window's
/// cycled without end when `cycle` (a duration-bound run). Everything is built now when it is
/// a dataset file or at most [`BUILT_AHEAD`] synthetic prompts; otherwise a thread generates
/// them, and this returns once it has [`BUILT_AHEAD`] ready.
pub async fn feeds(
    args: &Workload,
    warmup: usize,
    window: usize,
    cycle: bool,
    settings: BodySettings,
    tokens: TokenCounter,
) -> Result<(Feed, Feed), CollectorError> {
    let built = |pool: Vec<Ready>| {
        let pool: Arc<[Ready]> = pool.into();
        (
            Feed::Built {
                pool: pool.clone(),
                offset: 0,
                len: warmup,
            },
            Feed::Built {
                pool,
                offset: warmup,
                len: window,
            },
        )
    };
    let opts = settings.options();
    if let Some(path) = args.dataset.path() {
        let count = (warmup + window).max(1);
        let pool = match &args.dataset {
            Dataset::Sonnet(_) => load(args, count, &tokens)?,
            _ => from_file(args, path, count, &tokens)?,
        };
        return Ok(built(
            pool.iter().enumerate().map(|(i, p)| Ready::of(p, &opts, i)).collect(),
        ));
    }
    if warmup + window <= BUILT_AHEAD {
        return Ok(built(
            Synthetic::new(args)
                .take(warmup + window)
                .enumerate()
                .map(|(i, p)| Ready::of(&p, &opts, i))
                .collect(),
        ));
    }
    let (tx, rx) = mpsc::channel(BUILT_AHEAD);
    let (primed_tx, primed) = tokio::sync::oneshot::channel();
    let args = args.clone();
    std::thread::Builder::new()
        .name("speclens-prompts".into())
        .spawn(move || generate(&args, warmup, window, cycle, &settings, &tx, primed_tx))
        .map_err(|e| CollectorError::InvalidArgument(format!("cannot start the prompt generator: {e}")))?;
    // The first BUILT_AHEAD are ready before the first send (or the generator stopped).
    let _ = primed.await;
    let feed = Feed::Generated(Arc::new(tokio::sync::Mutex::new(rx)));
    Ok((feed.clone(), feed))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use axum::body::Bytes;

    use super::feed::*;
    use super::sonnet::SONNET_BASE;
    use super::synthetic::*;
    use super::*;
    use crate::bench::answer::EndpointKind;

    fn args(extra: &[&str]) -> Workload {
        let mut argv = vec!["speclens", "bench"];
        argv.extend_from_slice(extra);
        crate::cli::bench_plan_of(&argv).unwrap().workload
    }

    #[test]
    fn synthetic_prompts_have_the_asked_lengths_and_differ() {
        let t = TokenCounter::new();
        let a = args(&["--input-tokens", "50", "--output-tokens", "20"]);
        let p = load(&a, 3, &t).unwrap();
        assert!(p
            .iter()
            .all(|p| t.count(&p.text) == 50 && p.input_tokens == 50 && p.max_tokens == 20 && p.ignore_eos));
        let short = load(&args(&["--input-tokens", "3"]), 2000, &t).unwrap();
        assert!(
            short.iter().all(|p| p.input_tokens == t.count(&p.text)),
            "counts are exact"
        );
        assert_ne!(p[0].text, p[1].text);
        let spread = args(&["--input-tokens", "50", "--input-tokens-stddev", "10"]);
        let lens: Vec<u64> = load(&spread, 50, &t).unwrap().iter().map(|p| p.input_tokens).collect();
        assert!(lens.iter().any(|l| *l != 50) && lens.iter().all(|l| *l >= 1));
        assert_eq!(
            load(&spread, 5, &t).unwrap(),
            load(&spread, 5, &t).unwrap(),
            "the seed makes it reproducible"
        );
    }

    #[tokio::test]
    async fn a_long_run_generated_as_it_goes_sends_what_a_short_one_builds_first() {
        let t = TokenCounter::new();
        let a = args(&[
            "--input-tokens",
            "3",
            "--output-tokens",
            "4",
            "--output-tokens-stddev",
            "2",
        ]);
        let settings = BodySettings {
            endpoint: EndpointKind::Completions,
            models: vec!["m".into()],
            stream: true,
            temperature: 0.0,
            sglang_spec_details: false,
            continuous_usage_stats: false,
        };
        let (warm, window) = (2, BUILT_AHEAD + 10);
        let want: Vec<Bytes> = load(&a, warm + window, &t)
            .unwrap()
            .iter()
            .map(|p| body(p, &settings.options()))
            .collect();
        for cycle in [false, true] {
            let (warm_feed, window_feed) = feeds(&a, warm, window, cycle, settings.clone(), t).await.unwrap();
            assert!(
                matches!(window_feed, Feed::Generated(_)),
                "past BUILT_AHEAD it is generated"
            );
            let mut got = Vec::new();
            for j in 0..warm {
                got.push(warm_feed.get(j as u64).await.unwrap().body);
            }
            for j in 0..window {
                got.push(window_feed.get(j as u64).await.unwrap().body);
            }
            assert!(got == want, "cycle={cycle}: the same requests in the same order");
            if cycle {
                // A duration-bound window starts its prompts over.
                let again = window_feed.get(window as u64).await.unwrap().body;
                assert_eq!(again, want[warm]);
            }
        }
        // A short run is built before it starts.
        let (_, short) = feeds(&a, 0, 10, false, settings, t).await.unwrap();
        assert!(matches!(short, Feed::Built { .. }));
        assert_eq!(short.get(3).await.unwrap().body, want[3]);
    }

    #[test]
    fn synthetic_counts_match_the_tokenizer_at_every_number_length() {
        // The count is arithmetic (digit groups + one token a word); the tokenizer is the truth.
        let t = TokenCounter::new();
        let (prefix, prefix_tokens) = shared_prefix(7);
        assert_eq!(t.count(&prefix), prefix_tokens + 1, "the trailing space is a token");
        for i in [0, 7, 42, 999, 1000, 54_321, 999_999, 1_000_000, 123_456_789] {
            for target in [1, 2, 3, 4, 5, 17, 128] {
                let (text, count) = synthetic_text(i, target);
                assert_eq!(count, t.count(&text), "prompt {i}, {target} tokens: {text}");
                assert!(count == target || text == i.to_string(), "{text}");
                let joined = format!("{prefix}{text}");
                assert_eq!(prefix_tokens + 1 + count, t.count(&joined), "{joined}");
            }
        }
    }

    #[test]
    fn random_ranges_and_a_shared_prefix_as_vllm_draws_them() {
        let t = TokenCounter::new();
        let a = args(&[
            "--input-tokens",
            "20",
            "--output-tokens",
            "10",
            "--range-ratio",
            "0.5",
            "--prefix-tokens",
            "16",
        ]);
        let prompts = load(&a, 300, &t).unwrap();
        let (prefix, prefix_tokens) = shared_prefix(16);
        assert_eq!(prefix_tokens, 16);
        // Own lengths uniform over [10, 30], outputs over [5, 15], each end reached.
        let own: Vec<u64> = prompts.iter().map(|p| t.count(&p.text[prefix.len()..])).collect();
        let outs: Vec<u32> = prompts.iter().map(|p| p.max_tokens).collect();
        assert_eq!((own.iter().min(), own.iter().max()), (Some(&10), Some(&30)), "{own:?}");
        assert_eq!(
            (outs.iter().min(), outs.iter().max()),
            (Some(&5), Some(&15)),
            "{outs:?}"
        );
        for p in &prompts {
            assert!(p.text.starts_with(&prefix), "{}", p.text);
            assert_eq!(p.input_tokens, t.count(&p.text));
        }
        // The same seed, the same prompts; a ratio outside vLLM's [0, 1), or beside a stddev,
        // is refused before anything is sent.
        assert_eq!(load(&a, 300, &t).unwrap(), prompts);
        for bad in [
            &["--range-ratio", "1"][..],
            &["--range-ratio", "0.2", "--input-tokens-stddev", "3"],
        ] {
            let argv: Vec<&str> = ["speclens", "bench"].iter().chain(bad).copied().collect();
            let e = crate::cli::bench_plan_of(&argv).err().expect("refused").to_string();
            assert!(e.contains("--range-ratio"), "{e}");
        }
    }

    #[test]
    fn sonnet_prompts_open_with_the_prefix_lines_and_fit_the_input_length() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/made_sonnet.txt");
        let t = TokenCounter::new();
        let a = args(&[
            "--dataset",
            "sonnet",
            "--dataset-path",
            fixture,
            "--input-tokens",
            "120",
            "--output-tokens",
            "30",
            "--prefix-tokens",
            "40",
        ]);
        let prompts = load(&a, 20, &t).unwrap();
        assert_eq!(prompts.len(), 20);
        // The opening line and the poem's first lines (about 40 tokens of them) in every prompt.
        let poem = std::fs::read_to_string(fixture).unwrap();
        let lines: Vec<&str> = poem.split_inclusive('\n').collect();
        let opening = format!("{SONNET_BASE}{}{}", lines[0], lines[1]);
        for p in &prompts {
            assert!(p.text.starts_with(&opening), "{}", p.text);
            assert!(
                p.input_tokens <= 120 && p.input_tokens == t.count(&p.text),
                "{}",
                p.input_tokens
            );
            assert_eq!(p.max_tokens, 30);
        }
        let distinct: std::collections::BTreeSet<&str> = prompts.iter().map(|p| p.text.as_str()).collect();
        assert!(distinct.len() > 10, "lines drawn at random: {}", distinct.len());
        // Too short for the opening line, and a file of no lines: errors that say so.
        let short = args(&["--dataset", "sonnet", "--dataset-path", fixture, "--input-tokens", "5"]);
        let e = load(&short, 1, &t).unwrap_err().to_string();
        assert!(e.contains("opening line"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, "\n\n").unwrap();
        let none = args(&["--dataset", "sonnet", "--dataset-path", empty.to_str().unwrap()]);
        let e = load(&none, 1, &t).unwrap_err().to_string();
        assert!(e.contains("empty.txt") && e.contains("no poem lines"), "{e}");
    }

    /// A streamed chat's body options.
    fn streamed_chat() -> BodyOptions<'static> {
        static MODELS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| vec!["m".into()]);
        BodyOptions {
            endpoint: EndpointKind::Chat,
            models: &MODELS,
            stream: true,
            temperature: 0.0,
            sglang_spec_details: false,
            continuous_usage_stats: false,
        }
    }

    #[test]
    fn a_conversation_s_turn_carries_every_earlier_turn_and_answer() {
        let t = TokenCounter::new();
        let prompt = Prompt {
            text: "one".into(),
            category: None,
            max_tokens: 7,
            ignore_eos: false,
            input_tokens: 1,
            later_turns: vec!["two".into(), "three".into()],
        };
        let o = streamed_chat();
        let ready = Ready::of(&prompt, &o, 0);
        let c = ready.conversation.expect("a conversation");
        let answers = ["A".to_string(), "B b".to_string()];
        let third: serde_json::Value = serde_json::from_slice(&c.body(2, &answers)).unwrap();
        let roles: Vec<(&str, &str)> = third["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        assert_eq!(
            roles,
            [
                ("user", "one"),
                ("assistant", "A"),
                ("user", "two"),
                ("assistant", "B b"),
                ("user", "three")
            ]
        );
        // The first turn's settings stay.
        assert_eq!(
            (third["max_tokens"].as_u64(), third["stream"].as_bool()),
            (Some(7), Some(true))
        );
        assert_eq!(
            c.input_tokens(2, &answers, &t),
            t.count("one") + t.count("A") + t.count("two") + t.count("B b") + t.count("three")
        );
        // A single-turn prompt is no conversation.
        let single = Prompt {
            later_turns: Vec::new(),
            ..prompt
        };
        assert!(Ready::of(&single, &o, 0).conversation.is_none());
    }

    /// A parquet file as `datasets`' `to_parquet` writes one (snappy), made here.
    fn write_parquet(path: &Path, questions: &[&str], lengths: &[i64], topics: &[&str]) {
        use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        let schema = parquet::schema::parser::parse_message_type(
            "message train { REQUIRED BYTE_ARRAY question (UTF8); REQUIRED INT64 answer_tokens; REQUIRED BYTE_ARRAY topic (UTF8); }",
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).unwrap();
        let mut group = writer.next_row_group().unwrap();
        let text = |v: &[&str]| v.iter().map(|s| ByteArray::from(*s)).collect::<Vec<_>>();
        let mut column = group.next_column().unwrap().unwrap();
        column
            .typed::<ByteArrayType>()
            .write_batch(&text(questions), None, None)
            .unwrap();
        column.close().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<Int64Type>().write_batch(lengths, None, None).unwrap();
        column.close().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column
            .typed::<ByteArrayType>()
            .write_batch(&text(topics), None, None)
            .unwrap();
        column.close().unwrap();
        group.close().unwrap();
        writer.close().unwrap();
    }

    #[test]
    fn a_hugging_face_parquet_file_loads_through_its_column_mapping() {
        let t = TokenCounter::new();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("train.parquet");
        let questions = [
            "What is speculative decoding?",
            "Name a draft model.",
            "Why does batch size matter?",
        ];
        write_parquet(&path, &questions, &[40, 12, 64], &["qa", "qa", "reasoning"]);
        let p = path.to_str().unwrap();
        let a = args(&[
            "--dataset",
            "hf",
            "--dataset-path",
            p,
            "--output-len-column",
            "answer_tokens",
            "--category-column",
            "topic",
        ]);
        // `question` is found without --prompt-column.
        let pool = from_file(&a, &path, 100, &t).unwrap();
        // The pool is in a seeded order, not the file's.
        let mut got: Vec<(&str, u32, Option<&str>)> = pool
            .iter()
            .map(|p| (p.text.as_str(), p.max_tokens, p.category.as_deref()))
            .collect();
        got.sort();
        let mut want = [
            (questions[0], 40, Some("qa")),
            (questions[1], 12, Some("qa")),
            (questions[2], 64, Some("reasoning")),
        ];
        want.sort();
        assert_eq!(got, want);
        assert_eq!(pool[0].input_tokens, t.count(questions[0]));
        // A column the file lacks is named with the row; a file that is not parquet says so.
        let missing = args(&["--dataset", "hf", "--dataset-path", p, "--prompt-column", "instruction"]);
        let e = from_file(&missing, &path, 100, &t).unwrap_err().to_string();
        assert!(e.contains("train.parquet: row 1: no column \"instruction\""), "{e}");
        let fake = dir.path().join("fake.parquet");
        std::fs::write(&fake, "prompt,answer\n").unwrap();
        let e = from_file(&missing, &fake, 100, &t).unwrap_err().to_string();
        assert!(e.contains("fake.parquet: not a parquet file"), "{e}");
    }

    #[test]
    fn hugging_face_json_lines_map_their_columns_and_take_a_list_s_first_turn() {
        let t = TokenCounter::new();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mt_bench.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"question_id": 81, "category": "writing", "turns": ["Compose a travel blog post.", "Rewrite it in limericks."]}"#,
                "\n\n",
                r#"{"question_id": 101, "category": "reasoning", "turns": ["Who is in second place?", "And now?"]}"#,
                "\n",
            ),
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let a = args(&["--dataset", "hf", "--dataset-path", p, "--category", "reasoning"]);
        let pool = from_file(&a, &path, 100, &t).unwrap();
        assert_eq!(pool.len(), 1);
        assert_eq!(
            (pool[0].text.as_str(), pool[0].category.as_deref()),
            ("Who is in second place?", Some("reasoning"))
        );
        // A malformed line is named by its number; a JSON array of rows reads too.
        std::fs::write(&path, "{\"prompt\": \"a\"}\n{\"prompt\": \n").unwrap();
        let e = from_file(&args(&["--dataset", "hf", "--dataset-path", p]), &path, 100, &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("mt_bench.jsonl: line 2: not a JSON row"), "{e}");
        let array = dir.path().join("rows.json");
        std::fs::write(&array, r#"[{"text": "one", "n": 5}, {"text": "two", "n": 7}]"#).unwrap();
        let a = args(&[
            "--dataset",
            "hf",
            "--dataset-path",
            array.to_str().unwrap(),
            "--output-len-column",
            "n",
        ]);
        let pool = from_file(&a, &array, 100, &t).unwrap();
        assert_eq!(pool.iter().map(|p| p.max_tokens).collect::<Vec<_>>(), [5, 7]);
        // Column flags name a hf file's columns only.
        let e = crate::cli::bench_plan_of(&["speclens", "bench", "--prompt-column", "q"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--dataset hf"), "{e}");
    }

    #[test]
    fn sharegpt_takes_the_first_turn_and_the_answer_s_length_as_vllm_does() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/made_sharegpt.json");
        let t = TokenCounter::new();
        let a = args(&["--dataset", "sharegpt", "--dataset-path", fixture]);
        let pool = from_file(&a, Path::new(fixture), 100, &t).unwrap();
        // sg-3 has one turn and sg-4's answer ("Yes.") is under 4 tokens: 3 of 5 entries remain.
        let mut texts: Vec<&str> = pool.iter().map(|p| p.text.as_str()).collect();
        texts.sort();
        assert_eq!(
            texts,
            [
                "Explain in a few sentences why speculative decoding speeds up generation at small batch sizes.",
                "List three prime numbers greater than ten and say why each is prime.",
                "Write a haiku about a GPU running out of memory.",
            ]
        );
        let haiku = pool.iter().find(|p| p.text.starts_with("Write a haiku")).unwrap();
        assert_eq!(
            u64::from(haiku.max_tokens),
            t.count("Tensors overflow, the allocator sighs at last, batch size halves again."),
            "the second turn's length is the output length; later turns are not used"
        );
        assert!(pool
            .iter()
            .all(|p| p.input_tokens == t.count(&p.text) && !p.ignore_eos && p.category.is_none()));
        // The same seed, the same order; a run cycles the pool.
        assert_eq!(load(&a, 6, &t).unwrap()[3], load(&a, 6, &t).unwrap()[0]);
    }

    #[test]
    fn a_bad_sharegpt_file_says_where_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sg.json");
        let a = args(&["--dataset", "sharegpt", "--dataset-path", path.to_str().unwrap()]);
        let t = TokenCounter::new();
        std::fs::write(&path, "[\n {\"conversations\": [{\"from\": \"human\"}]}\n]").unwrap();
        let err = load(&a, 1, &t).unwrap_err().to_string();
        assert!(err.contains("not a ShareGPT file") && err.contains("line 2"), "{err}");
        std::fs::write(
            &path,
            "[{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}]",
        )
        .unwrap();
        let err = load(&a, 1, &t).unwrap_err().to_string();
        assert!(
            err.contains("no usable ShareGPT pair: 1 entries, 1 with fewer than two turns"),
            "{err}"
        );
        let with_category = args(&[
            "--dataset",
            "sharegpt",
            "--dataset-path",
            path.to_str().unwrap(),
            "--category",
            "x",
        ]);
        assert!(load(&with_category, 1, &t)
            .unwrap_err()
            .to_string()
            .contains("no categories"));
    }

    #[test]
    fn spec_bench_file_with_categories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("question.jsonl");
        std::fs::write(
            &path,
            "{\"question_id\": 1, \"category\": \"writing\", \"turns\": [\"Write a poem\", \"again\"]}\n\
             {\"question_id\": 2, \"category\": \"summarization\", \"turns\": [\"Summarize this\"]}\n",
        )
        .unwrap();
        let a = args(&[
            "--dataset",
            "spec-bench",
            "--dataset-path",
            path.to_str().unwrap(),
            "--category",
            "summarization",
        ]);
        let t = TokenCounter::new();
        let p = load(&a, 3, &t).unwrap();
        assert!(p
            .iter()
            .all(|p| p.text == "Summarize this" && p.category.as_deref() == Some("summarization")));
        let none = args(&[
            "--dataset",
            "spec-bench",
            "--dataset-path",
            path.to_str().unwrap(),
            "--category",
            "math",
        ]);
        assert!(load(&none, 1, &t).unwrap_err().to_string().contains("no prompts"));
        std::fs::write(&path, "not json\n").unwrap();
        assert!(load(&a, 1, &t)
            .unwrap_err()
            .to_string()
            .contains(":1: not a dataset line"));
    }

    #[test]
    fn bodies_ask_for_usage_when_streaming() {
        let p = Prompt {
            text: "hi".into(),
            category: None,
            max_tokens: 5,
            ignore_eos: true,
            input_tokens: 1,
            later_turns: Vec::new(),
        };
        let o = streamed_chat();
        let v: serde_json::Value = serde_json::from_slice(&body(&p, &o)).unwrap();
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["messages"][0]["content"], "hi");
        assert_eq!(v["ignore_eos"], true);
    }
}
