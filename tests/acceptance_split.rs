//! Acceptance where it differs within one run: a server serving a base model and a LoRA adapter
//! (the sim's `--lora NAME=FACTOR`, listed in `/v1/models` as vLLM lists adapters) loaded in
//! turn by one `bench --model base,tuned`, each name's acceptance length reported apart (console
//! and `result.json`) within 2 % of what the sim was configured with.

use serde_json::Value;

use crate::common::{get_text, read_json, read_records, run_speclens, Speclens};

/// The sim's expected acceptance length at k drafts of conditional rate `alpha`:
/// 1 + α + α² + … + α^k (each draft accepted only if every earlier one was).
fn geometric_length(alpha: f64, k: i32) -> f64 {
    (0..=k).map(|i| alpha.powi(i)).sum()
}

/// Run speclens with `args`, which must succeed; its console.
fn succeeds(args: &[&str]) -> String {
    let (code, stdout, stderr) = run_speclens(args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    stdout
}

#[test]
fn one_run_against_a_base_model_and_its_adapter_reports_each_ones_acceptance() {
    let sim = Speclens::instant_spec_sim("0.8", &["--model", "base", "--lora", "tuned=0.75"]);
    let url = sim.url();
    let (status, listing) = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(get_text(&format!("{url}/v1/models")));
    assert_eq!(status, 200, "{listing}");
    let models: Value = serde_json::from_str(&listing).unwrap();
    assert_eq!(models["data"][1]["id"], "tuned", "{models}");
    assert_eq!(
        models["data"][1]["parent"], "base",
        "an adapter names its base: {models}"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (out_arg, models) = (out.to_str().unwrap(), "base,tuned");
    let stdout = succeeds(&[
        "bench",
        "--url",
        &url,
        "--model",
        models,
        "--num-prompts",
        "640",
        "--output-tokens",
        "128",
        "--out",
        out_arg,
    ]);
    // Requests went to the names in turn.
    let mut records = read_records(&out);
    records.sort_by_key(|r| r.request_id);
    let names: Vec<Option<&str>> = records.iter().take(4).map(|r| r.model.as_deref()).collect();
    assert_eq!(names, [Some("base"), Some("tuned"), Some("base"), Some("tuned")]);

    let result = read_json(&out.join("result.json"));
    assert_eq!(result["config"]["models"], serde_json::json!(["base", "tuned"]));
    let rows = result["acceptance_by_model"]
        .as_array()
        .expect("acceptance by served model");
    let configured = [("base", geometric_length(0.8, 3)), ("tuned", geometric_length(0.6, 3))];
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, (name, want)) in rows.iter().zip(configured) {
        assert_eq!(row["category"], name);
        assert_eq!(row["requests"], 320, "{row}");
        let got = row["acceptance_length"].as_f64().unwrap();
        assert!(
            (got - want).abs() / want < 0.02,
            "{name}: acceptance length {got:.3}, configured {want:.3}"
        );
    }
    assert!(stdout.contains("Acceptance by served model"), "{stdout}");
    let base_row = stdout
        .lines()
        .find(|l| l.contains(" base ") && l.contains("per_request"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let shown = format!("{:.3}", rows[0]["acceptance_length"].as_f64().unwrap());
    assert!(base_row.contains(&shown), "{base_row} shows {shown}");

    // `accept` takes the served names as its rows: every category's prompts to each in turn.
    let prompts = dir.path().join("prompts.jsonl");
    let lines: String = (0..20)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({"prompt": format!("Item {i}: go on with the list"), "category": "list"})
            )
        })
        .collect();
    std::fs::write(&prompts, lines).unwrap();
    let accept_out = dir.path().join("accept");
    succeeds(&[
        "accept",
        "--url",
        &url,
        "--dataset",
        "jsonl",
        "--dataset-path",
        prompts.to_str().unwrap(),
        "--requests-per-category",
        "640",
        "--request-rate",
        "1000",
        "--output-tokens",
        "128",
        "--model",
        models,
        "--by-model",
        "--out",
        accept_out.to_str().unwrap(),
    ]);
    for (name, want) in configured {
        let row = read_json(&accept_out.join(format!("accept-{name}.json")));
        let got = row["acceptance_length"].as_f64().unwrap();
        assert_eq!(row["requests"], 320, "{row}");
        assert!(
            (got - want).abs() / want < 0.02,
            "accept, {name}: acceptance length {got:.3}, configured {want:.3}"
        );
    }

    // A name the server does not serve is refused before any request.
    let (code, _, stderr) = run_speclens(&["bench", "--url", &url, "--model", "base,other", "--num-prompts", "2"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--model \"other\" is not served"), "{stderr}");
}
