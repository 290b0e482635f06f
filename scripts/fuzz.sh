#!/usr/bin/env bash
# Fuzz every target in fuzz/ for a bounded time each (default 300 s; first argument overrides).
# Installs cargo-fuzz when missing. Fuzzing needs nightly-only compiler flags: RUSTC_BOOTSTRAP
# lets this machine's stable toolchain accept them. A crash stops the script and leaves the
# input in fuzz/artifacts/<target>/ — turn it into a regression test.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
seconds="${1:-300}"
if ! cargo fuzz --version >/dev/null 2>&1; then
  say "installing cargo-fuzz"
  cargo install cargo-fuzz --locked || die "could not install cargo-fuzz from crates.io"
fi
export RUSTC_BOOTSTRAP=1
for target in prom_parse payload_adapt sse_parse; do
  mkdir -p "fuzz/corpus/$target"
  say "fuzzing $target for $seconds s"
  cargo fuzz run "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- -max_total_time="$seconds" -print_final_stats=1 \
    || die "fuzz target $target failed: see fuzz/artifacts/$target/"
done
say "no crash in any target"
