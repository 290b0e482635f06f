//! Engines as the target names itself: the engine read from `/v1/models` (`owned_by`) decides
//! which engine-specific request fields are sent (SGLang's per-request stats by default to
//! SGLang, never to TensorRT-LLM, whose request models refuse unknown fields), `--engine`
//! overrides it, and `result.json` records it. Against the sim in each engine's shape.

use std::time::Duration;

use serde_json::json;

use crate::common::{post_json, run_speclens_within, Speclens};

const LIMIT: Duration = Duration::from_secs(60);

/// `bench` of 6 short requests; its stderr and `result.json`.
fn bench(url: &str, extra: &[&str]) -> (String, serde_json::Value) {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("run");
    let mut args = vec![
        "bench",
        "--url",
        url,
        "--num-prompts",
        "6",
        "--output-tokens",
        "16",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run_speclens_within(&args, LIMIT);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let text = std::fs::read_to_string(dir.join("result.json")).unwrap();
    (stderr, serde_json::from_str(&text).unwrap())
}

#[test]
fn an_sglang_server_gets_its_per_request_field_without_a_flag() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "sglang"]);
    let (_, result) = bench(&sim.url(), &[]);
    assert_eq!(result["config"]["engine"], "sglang");
    assert_eq!(result["completed"], 6);
    assert_eq!(
        result["spec_decode"]["per_request"]["spec_decode_steps"]["count"], 6,
        "every request carried SGLang's stats: {}",
        result["spec_decode"]["per_request"]
    );
    // Named otherwise, the server is not asked: no per-request stats.
    let (_, named) = bench(&sim.url(), &["--engine", "vllm"]);
    assert_eq!(named["config"]["engine"], "vllm");
    assert!(
        named["spec_decode"]["per_request"].is_null(),
        "{}",
        named["spec_decode"]
    );
}

#[tokio::test]
async fn a_tensorrt_llm_server_never_gets_sglang_s_field() {
    let sim = Speclens::instant_spec_sim("0.7", &["--payload", "trtllm"]);
    // As trtllm-serve: an unknown request field is refused.
    let (status, body) = post_json(
        &format!("{}/v1/chat/completions", sim.url()),
        &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "return_spec_tokens_details": true}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("return_spec_tokens_details"), "{body}");

    let (stderr, result) = bench(&sim.url(), &["--sglang-spec-details"]);
    assert_eq!(result["config"]["engine"], "trtllm");
    assert_eq!(
        (result["completed"].as_u64(), result["failed"].as_u64()),
        (Some(6), Some(0))
    );
    assert!(
        stderr.contains("--sglang-spec-details is not sent to a TensorRT-LLM server"),
        "{stderr}"
    );
}
