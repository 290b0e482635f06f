#!/usr/bin/env bash
# AIPerf 0.13.0 (NVIDIA's benchmark client, from PyPI): the reference the parity tests hold
# speclens's AIPerf figures to, its own metric code on fixed records and a live `aiperf profile`.
#
#   bash scripts/aiperf.sh setup          install aiperf 0.13.0 and its pinned dependencies
#                                         (scripts/aiperf-requirements.txt) into the cache's
#                                         aiperf-0.13.0/venv (about 1.2 GB, a minute or two, once),
#                                         and a word-level tokenizer folder beside it (built from
#                                         the corpus AIPerf ships: no hub download)
#   bash scripts/aiperf.sh venv           print the virtual environment's folder
#   bash scripts/aiperf.sh tokenizer      print the tokenizer's folder
#   bash scripts/aiperf.sh python ARGS…   the environment's python (e.g. scripts/aiperf_reference.py)
#   bash scripts/aiperf.sh aiperf ARGS…   the installed `aiperf` command
#
# Idempotent: a stamp of the version and the pins says whether the install is already right.
CALLER_DIR="$PWD"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

AIPERF_VERSION=0.13.0
TOOLS="$CACHE/aiperf-$AIPERF_VERSION"
VENV="$TOOLS/venv"
TOKENIZER="$TOOLS/tokenizer"
LOCK="$ROOT/scripts/aiperf-requirements.txt"

stamp_of() { { echo "$AIPERF_VERSION"; cat "$LOCK" "$ROOT/scripts/aiperf_tokenizer.py"; } | sha256sum | cut -c1-16; }

install_aiperf() {
  local stamp
  stamp="$(stamp_of)"
  if [ -x "$VENV/bin/aiperf" ] && [ -f "$TOKENIZER/tokenizer.json" ] \
    && [ "$(cat "$VENV/.speclens-stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  command -v python3 >/dev/null || die "python3 not found: AIPerf needs CPython 3.10 or later"
  say "installing AIPerf $AIPERF_VERSION (pinned dependencies) into $VENV (about 1.2 GB, once)"
  rm -rf "$VENV" "$TOKENIZER"
  mkdir -p "$TOOLS"
  python3 -m venv "$VENV" || die "could not create a Python virtual environment in $VENV (Debian: apt-get install python3-venv)"
  local log="$TOOLS/install.log"
  # Every version is pinned and complete, so nothing is resolved: --no-deps.
  "$VENV/bin/pip" install --no-deps --no-input --disable-pip-version-check -r "$LOCK" >"$log" 2>&1 \
    || die "could not install AIPerf $AIPERF_VERSION from PyPI (see $log)"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" "$ROOT/scripts/aiperf_tokenizer.py" "$TOKENIZER" >>"$log" 2>&1 \
    || die "could not build the tokenizer folder (see $log)"
  echo "$stamp" >"$VENV/.speclens-stamp"
}

setup() {
  mkdir -p "$TOOLS"
  exec 9>"$TOOLS/.setup.lock"
  flock 9 || die "cannot lock $TOOLS/.setup.lock"
  install_aiperf
  flock -u 9
}

command="${1:-}"
shift || true
case "$command" in
  setup) setup ;;
  venv) echo "$VENV" ;;
  tokenizer) echo "$TOKENIZER" ;;
  python)
    setup
    cd "$CALLER_DIR"
    exec "$VENV/bin/python" "$@"
    ;;
  aiperf)
    setup
    cd "$CALLER_DIR"
    exec "$VENV/bin/aiperf" "$@"
    ;;
  *) die "usage: aiperf.sh setup | venv | tokenizer | python ARGS… | aiperf ARGS…" ;;
esac
