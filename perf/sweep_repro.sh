#!/usr/bin/env bash
# Is the break-even reproducible on a busy machine? Three identical standalone sweeps — a
# speculative sim (k = 3, α = 0.7) against a plain one, both in real time (12 ms steps, an H100's
# ridge), concurrency 1,64,128,192,256,320, 4 requests per slot, 8 → 64 streamed tokens (prefill
# about free, as the model assumes), each
# point run three times — while `yes > /dev/null` keeps one of the two cores busy. Prints each
# sweep's measured crossing, the model's, and how far each crossing is from their median.
# About 15 minutes.
#
# Usage: bash perf/sweep_repro.sh [RUNS]   (default 3; SWEEP_REPRO_KEEP=DIR keeps the sweeps there)
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$ROOT"
RUNS="${1:-3}"
cargo build --release -q -p speclens || die "speclens did not build"
WORK="${SWEEP_REPRO_KEEP:-$(mktemp -d)}"
mkdir -p "$WORK"
target/release/speclens sim --port 18721 --num-spec-tokens 3 --alpha 0.7 >/dev/null 2>&1 &
SPEC=$!
target/release/speclens sim --port 18722 >/dev/null 2>&1 &
BASE=$!
yes >/dev/null &
BUSY=$!
trap 'kill $SPEC $BASE $BUSY 2>/dev/null || true; [ -n "${SWEEP_REPRO_KEEP:-}" ] || rm -rf "$WORK"' EXIT
sleep 1
crossings=()
for run in $(seq 1 "$RUNS"); do
  start=$(date +%s)
  target/release/speclens sweep --spec-url http://127.0.0.1:18721 --base-url http://127.0.0.1:18722 \
    --concurrency 1,64,128,192,256,320 --requests-per-slot 4 --input-tokens 8 --output-tokens 64 \
    --out "$WORK/sweep-$run" >"$WORK/out-$run.txt" 2>&1 || { cat "$WORK/out-$run.txt"; die "sweep $run failed"; }
  measured="$(sed -n 's/.*Measured crossing: B\* = \([0-9.]*\).*/\1/p' "$WORK/out-$run.txt" | head -n 1)"
  model="$(sed -n 's/.*Model prediction: B\* = \([0-9.]*\).*/\1/p' "$WORK/out-$run.txt" | head -n 1)"
  [ -n "$measured" ] || { cat "$WORK/out-$run.txt"; die "sweep $run found no crossing"; }
  echo "sweep $run: measured B* = $measured, model B* = $model ($(($(date +%s) - start)) s)"
  crossings+=("$measured")
done
python3 - "${crossings[@]}" <<'EOF'
import statistics, sys
values = [float(v) for v in sys.argv[1:]]
median = statistics.median(values)
spread = max(abs(v - median) / median for v in values)
print(f"median B* = {median:.1f}; largest distance from it: {spread * 100:.1f} % "
      + ("(within 5 %)" if spread <= 0.05 else "(MORE than 5 %)"))
EOF
