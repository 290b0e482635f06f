#!/usr/bin/env bash
# Every check and test: installs what is missing (browser included), then formatting, the
# shared crate for wasm32, clippy (native and wasm32), the dashboard build, and all tests
# (unit, property, integration with the real binary, headless Chromium).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh --browser --prometheus
say "cargo fmt --check"
cargo fmt --all --check
say "shared crate for wasm32"
cargo check -p speclens-shared --target wasm32-unknown-unknown
say "clippy (native)"
cargo clippy --all-targets -- -D warnings
say "clippy (web app, wasm32)"
cargo clippy -p speclens-web --target wasm32-unknown-unknown -- -D warnings
say "building the dashboard (Trunk)"
trunk build --release
say "tests"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
# One test at a time: the timing tests measure a simulated server, and a neighbour test
# loading both cores would skew what they measure. The whole suite still takes well under a
# minute this way.
cargo test -- --test-threads=1 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line with the totals of every test binary.
awk '/^test result:/ { for (i = 2; i <= NF; i++) { if ($i ~ /^passed;/) p += $(i - 1); if ($i ~ /^failed;/) f += $(i - 1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
