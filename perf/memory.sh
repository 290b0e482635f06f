#!/usr/bin/env bash
# Memory that does not grow with the run: peak RSS of `speclens bench` for 10,000, 100,000 and
# 1,000,000 streamed requests (32 tokens in, 32 out, concurrency 64) against a `--time-scale 0`
# sim, and the error of the 100,000-request run's percentiles (an HDR histogram at 3
# significant digits past 65,536 values) against exact ones recomputed from its records.jsonl.
# The sim runs on core 0, speclens on core 1. Takes about two minutes.
#
# Usage: bash perf/memory.sh [SIZES…]   (default: 10000 100000 1000000)
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$ROOT"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(10000 100000 1000000)
PORT=18712
[ -x /usr/bin/time ] || die "GNU time is needed for the peak RSS (apt-get install time)"
cargo build --release -q -p speclens || die "speclens did not build"
WORK="$(mktemp -d)"
taskset -c 0 target/release/speclens sim --port "$PORT" --time-scale 0 --num-spec-tokens 3 --alpha 0.7 >/dev/null 2>&1 &
SIM=$!
trap 'kill $SIM 2>/dev/null || true; rm -rf "$WORK"' EXIT
sleep 1
printf '%-10s %14s %12s %10s\n' requests "peak RSS (KB)" "wall (s)" "req/s"
for n in "${SIZES[@]}"; do
  /usr/bin/time -f '%M %e' -o "$WORK/time-$n" taskset -c 1 target/release/speclens bench \
    --url "http://127.0.0.1:$PORT" --num-prompts "$n" --concurrency 64 --input-tokens 32 --output-tokens 32 \
    --out "$WORK/run-$n" >/dev/null 2>&1 || die "the $n-request run failed"
  read -r rss wall <"$WORK/time-$n"
  rate="$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["request_throughput"]))' "$WORK/run-$n/result.json")"
  printf '%-10s %14s %12s %10s\n' "$n" "$rss" "$wall" "$rate"
done
first="$(cut -d' ' -f1 "$WORK/time-${SIZES[0]}")"
last="$(cut -d' ' -f1 "$WORK/time-${SIZES[-1]}")"
python3 -c "import sys; print(f'last / first: {int(sys.argv[2]) / int(sys.argv[1]):.2f}')" "$first" "$last"

# The percentile error of a run past the exact limit: numpy's linear interpolation over every
# value in records.jsonl, against what result.json and the AIPerf export report.
ERR_RUN="$WORK/run-100000"
[ -d "$ERR_RUN" ] || ERR_RUN="$WORK/run-${SIZES[-1]}"
python3 - "$ERR_RUN" <<'EOF'
import json, sys
run = sys.argv[1]
ttft, itl, e2el, tpot = [], [], [], []
for line in open(f"{run}/records.jsonl"):
    r = json.loads(line)
    if r.get("warmup") or not r["success"]:
        continue
    ttft.append(r["ttft_ms"]); e2el.append(r["e2el_ms"]); itl.extend(r.get("itl_ms", []))
    if r["output_tokens"] > 1:
        tpot.append((r["e2el_ms"] - r["ttft_ms"]) / (r["output_tokens"] - 1))

def pct(sorted_v, q):
    idx = q / 100 * (len(sorted_v) - 1)
    lo, hi = int(idx), min(int(idx) + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (idx - lo) * (sorted_v[hi] - sorted_v[lo])

result = json.load(open(f"{run}/result.json"))
export = json.load(open(f"{run}/profile_export_speclens.json"))
worst_rel, worst_abs, checked = 0.0, 0.0, 0
rows = []
# AIPerf's names: its inter_token_latency is vLLM's TPOT, its inter_chunk_latency vLLM's ITL.
for name, values, key in [("ttft", ttft, "time_to_first_token"), ("itl", itl, "inter_chunk_latency"),
                          ("e2el", e2el, "request_latency"), ("tpot", tpot, "inter_token_latency")]:
    values.sort()
    reported = {50: result[f"median_{name}_ms"], 99: result[f"p99_{name}_ms"]}
    if key:
        reported.update({q: export[key][f"p{q}"] for q in (1, 5, 10, 25, 50, 75, 90, 95, 99)})
    for q, got in sorted(reported.items()):
        want = pct(values, q)
        err = abs(got - want)
        worst_abs = max(worst_abs, err)
        if want > 0.01:
            worst_rel = max(worst_rel, err / want)
        checked += 1
    rows.append(f"{name}: {len(values):,} values, p50 {pct(values, 50):.4f} ms (reported {reported[50]:.4f}), "
                f"p99 {pct(values, 99):.4f} ms (reported {reported[99]:.4f})")
print(f"percentiles of {run.rsplit('-', 1)[-1]} requests against exact values ({checked} checked):")
for row in rows:
    print("  " + row)
print(f"  largest relative error (values above 0.01 ms): {worst_rel * 100:.3f} %; largest absolute error: {worst_abs * 1000:.2f} µs")
EOF
