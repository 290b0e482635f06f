#!/usr/bin/env bash
# The main job: install what is missing, build the dashboard and the collector, and serve the
# dashboard on 127.0.0.1 (extra arguments go to `speclens serve`, e.g. --port 9000).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
bash scripts/setup.sh
say "building the dashboard (Trunk, wasm32)"
trunk build --release
say "building the speclens collector"
cargo build --release -p speclens
say "starting the dashboard"
exec target/release/speclens serve --web-dir web/dist "$@"
