#!/usr/bin/env bash
# A real llama.cpp server (llama-server) with speculative decoding, for the tests and for anyone
# without a GPU.
#
#   bash scripts/real-llamacpp.sh setup        build llama-server from the llama.cpp source that
#                                              PyPI's llama-cpp-python sdist vendors, and convert
#                                              the real-vLLM tests' tiny Llama to GGUF
#   bash scripts/real-llamacpp.sh serve PORT   llama-server with n-gram speculation (k = 3, 4
#                                              slots, Prometheus metrics) on 127.0.0.1:PORT
#   bash scripts/real-llamacpp.sh stop [PORT]  stop the servers this script started (or one)
#
# The build and the model land in the cache's llamacpp-0.3.36/ ($SPECLENS_CACHE, default
# ~/.cache/speclens: once per user, not per checkout), the servers' logs in this checkout's
# .tools/llamacpp/logs. The source is llama-cpp-python 0.3.36's sdist (a registry
# package, checked against its SHA-256), built with CMake from PyPI (pinned) and the machine's
# C++ compiler (Debian's g++ when missing): about 6 minutes on 2 cores, once. The model is the
# tiny random Llama that scripts/real-vllm.sh builds, converted with llama.cpp's own
# convert_hf_to_gguf.py run by the real vLLM's Python (which has torch and transformers); its
# tokenizer's pre-tokenizer is one llama.cpp does not list, so the conversion names llama.cpp's
# "default" one (the text is random either way). docs/REAL_VLLM.md ("A real llama.cpp") has the
# details.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

LLAMA_CPP_PYTHON_VERSION=0.3.36
SDIST_URL="https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
CMAKE_VERSION=4.4.5
TOOLS="$CACHE/llamacpp-$LLAMA_CPP_PYTHON_VERSION"
SRC="$TOOLS/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
BUILD="$TOOLS/build"
SERVER="$BUILD/bin/llama-server"
GGUF="$TOOLS/tiny-llama.gguf"
HF_MODEL="$(bash "$ROOT/scripts/real-vllm.sh" model-dir)"
VLLM_PYTHON="$(dirname "$HF_MODEL")/venv/bin/python"
LOGS="$ROOT/.tools/llamacpp/logs"
# The served model's name, as with the real vLLM.
SERVED_NAME=tiny-llama
# What a build is made of: a change here rebuilds.
BUILD_STAMP="$LLAMA_CPP_PYTHON_VERSION $SDIST_SHA256 cmake $CMAKE_VERSION static release server-only"

fetch_source() {
  [ -f "$SRC/CMakeLists.txt" ] && return 0
  local sdist="$TOOLS/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
  if ! [ -f "$sdist" ] || [ "$(sha256sum "$sdist" | cut -d' ' -f1)" != "$SDIST_SHA256" ]; then
    say "downloading llama-cpp-python $LLAMA_CPP_PYTHON_VERSION's source from PyPI (76 MB)"
    curl -fsSL --retry 3 -o "$sdist.part" "$SDIST_URL" || die "could not download $SDIST_URL"
    [ "$(sha256sum "$sdist.part" | cut -d' ' -f1)" = "$SDIST_SHA256" ] \
      || die "the downloaded sdist's SHA-256 is not $SDIST_SHA256"
    mv "$sdist.part" "$sdist"
  fi
  tar -xzf "$sdist" -C "$TOOLS" || die "could not unpack $sdist"
  [ -f "$SRC/CMakeLists.txt" ] || die "the sdist has no vendor/llama.cpp/CMakeLists.txt"
}

build_server() {
  if [ -x "$SERVER" ] && [ "$(cat "$BUILD/.speclens-stamp" 2>/dev/null)" = "$BUILD_STAMP" ]; then
    return 0
  fi
  command -v python3 >/dev/null || die "python3 not found: CMake comes from PyPI"
  if ! command -v g++ >/dev/null || ! command -v make >/dev/null; then
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    say "installing g++ and make from Debian"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq g++ make >/dev/null \
      || die "could not install g++ and make with apt-get"
  fi
  local venv="$TOOLS/cmake-venv"
  if ! "$venv/bin/cmake" --version 2>/dev/null | grep -q "version $CMAKE_VERSION"; then
    python3 -m venv "$venv" || die "could not create a Python virtual environment in $venv (Debian: apt-get install python3-venv)"
    "$venv/bin/pip" install --no-input --disable-pip-version-check -q "cmake==$CMAKE_VERSION" \
      || die "could not install cmake==$CMAKE_VERSION from PyPI"
  fi
  fetch_source
  say "building llama-server (llama.cpp from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION; about 6 minutes on 2 cores, once)"
  rm -rf "$BUILD"
  local log="$TOOLS/build.log"
  # Static libraries: one self-contained binary. No curl, no OpenSSL: it only serves local files.
  "$venv/bin/cmake" -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$log" 2>&1 \
    || die "CMake could not configure llama.cpp (see $log)"
  "$venv/bin/cmake" --build "$BUILD" --target llama-server -j "$(nproc)" >>"$log" 2>&1 \
    || die "llama-server did not build (see $log)"
  "$SERVER" --version >>"$log" 2>&1 || die "the built llama-server does not run (see $log)"
  echo "$BUILD_STAMP" >"$BUILD/.speclens-stamp"
}

convert_model() {
  [ -f "$GGUF" ] && [ "$GGUF" -nt "$HF_MODEL/model.safetensors" ] && return 0
  bash "$ROOT/scripts/real-vllm.sh" setup
  say "converting the tiny Llama to GGUF"
  local log="$TOOLS/convert.log"
  (
    cd "$SRC"
    PYTHONPATH="$SRC/gguf-py" HF_HUB_OFFLINE=1 "$VLLM_PYTHON" - "$HF_MODEL" --outfile "$GGUF.part" --outtype f32 <<'EOF'
# llama.cpp's converter, told to use its "default" pre-tokenizer: the tiny model's tokenizer
# hash is not in llama.cpp's list, and the converter refuses what it does not list.
import runpy, sys
sys.path.insert(0, ".")
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "default"
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[1:]
runpy.run_path("convert_hf_to_gguf.py", run_name="__main__")
EOF
  ) >"$log" 2>&1 || die "could not convert the tiny model to GGUF (see $log)"
  mv "$GGUF.part" "$GGUF"
}

# One setup at a time.
setup() {
  mkdir -p "$TOOLS"
  exec 9>"$TOOLS/.setup.lock"
  flock 9 || die "cannot lock $TOOLS/.setup.lock"
  build_server
  convert_model
  flock -u 9
}

serve() {
  local port="${1:-}"
  [[ "$port" =~ ^[0-9]+$ ]] || die "serve needs a port number (usage: real-llamacpp.sh serve PORT)"
  setup
  if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
    die "something already answers on 127.0.0.1:$port (stop it first: real-llamacpp.sh stop $port)"
  fi
  mkdir -p "$LOGS"
  local log="$LOGS/spec-$port.log"
  # n-gram speculation from the context (no draft model): a 3-token match drafts the 3 tokens
  # that followed it (k = 3); 4 slots of
  # 256 tokens each; --metrics for /metrics.
  setsid "$SERVER" -m "$GGUF" --alias "$SERVED_NAME" --host 127.0.0.1 --port "$port" --metrics \
    --spec-type ngram-simple --spec-ngram-simple-size-n 3 --spec-ngram-simple-size-m 3 -c 1024 -np 4 -t 1 --seed 0 >"$log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$LOGS/$port.pid"
  local waited=0
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$log" >&2
      die "llama-server on port $port exited before it was ready: see $log"
    fi
    if [ "$waited" -ge 120 ]; then
      stop "$port"
      die "llama-server on port $port was not ready after 60 s: see $log"
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  say "llama-server is ready: http://127.0.0.1:$port (model $SERVED_NAME)"
}

stop() {
  local file pid
  for file in "$LOGS"/${1:-*}.pid; do
    [ -e "$file" ] || continue
    pid="$(cat "$file")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$file"
  done
}

case "${1:-}" in
  setup) setup ;;
  serve) shift; serve "$@" ;;
  stop) shift; stop "$@" ;;
  *) die "usage: real-llamacpp.sh setup | serve PORT | stop [PORT]" ;;
esac
