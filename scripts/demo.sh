#!/usr/bin/env bash
# The main job: install what is missing, build the dashboard and the collector, then run the
# demo on simulated engines (acceptance per category, a break-even sweep) and serve the
# dashboard on 127.0.0.1 (extra arguments go to `speclens demo`, e.g. --port 9000).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh
say "building the dashboard (Trunk, wasm32)"
trunk build --release
say "building the speclens collector"
cargo build --release -p speclens
say "running the demo"
exec target/release/speclens demo "$@"
