"""One inspect_ai run of InquiTree on an IT-18 tree against the real local model (llama.cpp's server
with SmolLM2-135M, scripts/local-model.sh start), recorded into an InquiTree store, then checked:
the inspect transcript (what `inspect view` shows) against the store's events, and `inquitree
replay` on the recorded episode. A 135M model proves the plumbing, not science.

    python bench/inspect_real.py [--url http://127.0.0.1:8011/v1] [--out bench/results/inspect_real.json]
"""

from __future__ import annotations

import argparse
import atexit
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

TREE = "it18-24-concept-neurons-relations"


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from needs import need  # bench/needs.py

    need("inspect_ai")
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8011/v1")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "inspect_real.json"))
    args = ap.parse_args()
    try:
        urllib.request.urlopen(args.url.rstrip("/") + "/models", timeout=5).read()
    except OSError as exc:
        sys.exit(f"inspect_real: no server at {args.url} ({exc}); start one with scripts/local-model.sh start")
    d = Path(tempfile.mkdtemp(prefix="inquitree-inspect-real-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)  # no folder outlives the run
    db = f"sqlite:///{d / 'real.sqlite'}"
    inspect = str(Path(sys.executable).parent / "inspect")
    cmd = [
        inspect,
        "eval",
        "inquitree/research_tree",
        "--model",
        "llama-cpp-python/smollm2-135m",
        "-T",
        f"trees={TREE}",
        "-T",
        "max_turns=10",
        "-T",
        "window=3",
        "-T",
        f"db={db}",
        "--max-tokens",
        "128",
        "--log-dir",
        "logs",
        "--display",
        "none",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=d, check=True, env={**os.environ, "LLAMA_CPP_PYTHON_BASE_URL": args.url})
    wall = time.perf_counter() - t0
    from inspect_ai.log import read_eval_log

    from inquitree.events.store import EventStore

    log = read_eval_log(glob.glob(str(d / "logs" / "*.eval"))[0])
    sample = log.samples[0]
    eid = sample.scores["inquitree_scores"].metadata["episode_id"]
    with EventStore(db) as store:
        events = [r.event for r in store.read_stream(f"episode/{eid}")]
    observations = [e.text for e in events if e.TYPE == "ObservationEmitted"]
    replies = [e.raw for e in events if e.TYPE == "AgentReplied"]
    users = [m.text for m in sample.messages if m.role == "user"]
    assistants = [m.text for m in sample.messages if m.role == "assistant"]
    replay = subprocess.run(
        [sys.executable, "-m", "inquitree", "replay", eid, "--db", db, "-q"], capture_output=True, text=True
    )
    usage = next(iter(sample.model_usage.values()))
    result = {
        "what": "inspect eval inquitree/research_tree against SmolLM2-135M behind llama.cpp's server; a 135M model "
        "proves the plumbing, not science",
        "stamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(cmd[1:]),
        "status": log.status,
        "wall_s": round(wall, 1),
        "episode_id": eid,
        "scores": sample.scores["inquitree_scores"].value,
        "transcript_messages": len(sample.messages),
        "transcript_user_messages_equal_observations": users == observations[: len(users)],
        "transcript_assistant_messages_equal_replies": assistants == replies,
        "model_calls_in_transcript": sum(1 for e in sample.events if e.event == "model"),
        "agent_replies_in_store": len(replies),
        "inspect_tokens": {"input": usage.input_tokens, "output": usage.output_tokens},
        "store_tokens": {
            "input": sum(e.usage.get("input") or 0 for e in events if e.TYPE == "AgentReplied"),
            "output": sum(e.usage.get("output") or 0 for e in events if e.TYPE == "AgentReplied"),
        },
        "replay": replay.stdout.strip().splitlines()[-1],
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
