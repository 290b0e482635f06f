# Sourced by the scripts in this folder: strict mode, paths and messages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# cargo-installed tools (trunk, wasm-bindgen) and the project-local wasm-opt.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$ROOT/.tools/npm/node_modules/.bin:$PATH"
# The real engines of the tests (a 6 GB vLLM, a llama-server build) are kept once per user, not
# per checkout, like cargo's registry: every clone's test run finds them ready. Each entry is
# named by its pinned version and checked by its stamp before use.
CACHE="${SPECLENS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/speclens}"
# Each step's line carries the seconds since the outermost script started (scripts call each
# other; the first sets the origin), so a log shows where the time went.
SPECLENS_T0="${SPECLENS_T0:-$(date +%s)}"
export SPECLENS_T0
say() { printf '\033[1m==> [%5d s] %s\033[0m\n' "$(($(date +%s) - SPECLENS_T0))" "$*" >&2; }
die() { printf 'speclens %s: error: %s\n' "$(basename "$0" .sh)" "$*" >&2; exit 1; }
# A clean clone (CI) gains nothing from incremental caches, the largest files of a test build;
# without them the build needs less disk (a CI run once failed at 201 s on a full disk).
if [[ "${CI:-}" == true ]]; then export CARGO_INCREMENTAL=0; fi
