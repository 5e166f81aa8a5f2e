"""A probe behind one finding of the Qwen 1.5B study: at temperature 0, runs 0 and 1 of every tree
were the same dialogue while run 2 differed in 17 of 18 trees. No reply came from InquiTree's call
cache (it was off, and no reply is marked ``cache_hit``), no seed is sent to the server, and runs
0 and 1 ran on different servers, so the server alone does not decide either. What differed is
what each server had evaluated just before: run 2 of a tree followed run 0 of the same tree on the
same server, whose prompts share a long prefix with it, while runs 0 and 1 followed another tree.
llama-cpp-python reuses the evaluated prefix of the previous prompt, and a prompt evaluated partly
from that cache can give other logits than one evaluated whole.

The probe sends the first Topic request of a tree (the system prompt and the first observation,
as the study's agent sent them, temperature 0, 512 tokens) to a freshly started server under two
conditions, each twice: right after another tree's first request, and right after itself. Each
condition is answered the same every time, and the two conditions differently, if what the server
evaluated before decides the reply. The replies are written as JSON to ``--out``; nothing is
recorded in a store.

    python docs/studies/qwen-1.5b/probe_prompt_cache.py --base-url http://127.0.0.1:8011/v1 \
        --out docs/studies/qwen-1.5b/tables/prompt_cache.json
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from pathlib import Path

from inquitree.core.game.prompts import TemplateSet

EPISODES = Path(__file__).resolve().parent / "episodes"


def first_turn(tree: str, run: int) -> tuple[str, str]:
    """The first observation of the episode at randomness 0 and the model's recorded reply to it."""
    found = sorted(EPISODES.glob(f"qwen-1.5b.{tree}*.a0.r{run}.jsonl"))
    if len(found) != 1:
        raise SystemExit(f"expected one exported episode of {tree} run {run} in {EPISODES}, found {len(found)}")
    events = [e for e in map(json.loads, found[0].open(encoding="utf-8")) if "type" in e]
    observation = next(e["payload"]["text"] for e in events if e["type"] == "ObservationEmitted")
    reply = next(e["payload"]["raw"] for e in events if e["type"] == "AgentReplied")
    return observation, reply


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", default="http://127.0.0.1:8011/v1")
    ap.add_argument("--model", default="qwen-1.5b")
    ap.add_argument(
        "--trees",
        default="it18-02:it18-01,it18-05:it18-04,it18-12:it18-11",
        help="TREE:OTHER,...: each tree probed, after the first request of OTHER and after itself",
    )
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    system = TemplateSet("inquitree").system_prompt

    def ask(observation: str) -> tuple[str, float]:
        body = {
            "model": args.model,
            "temperature": 0.0,
            "max_tokens": 512,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": observation}],
        }
        request = urllib.request.Request(
            f"{args.base_url.rstrip('/')}/chat/completions",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        t0 = time.perf_counter()
        with urllib.request.urlopen(request, timeout=900) as response:
            reply = json.load(response)["choices"][0]["message"]["content"]
        return reply, time.perf_counter() - t0

    found = [probe(ask, *pair.split(":")) for pair in args.trees.split(",")]
    Path(args.out).write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for f in found:
        print(f["tree"], {k: v for k, v in f.items() if isinstance(v, bool)})


def probe(ask, tree: str, other_tree: str) -> dict:
    """One tree's first request under both conditions, each twice, beside the recorded replies."""
    probed, recorded = first_turn(tree, 0), {run: first_turn(tree, run)[1] for run in (0, 1, 2)}
    other = first_turn(other_tree, 0)[0]
    replies: dict[str, str] = {}
    for label, before in (
        ("after another tree", other),
        ("after itself", probed[0]),
        ("after another tree, again", other),
        ("after itself, again", probed[0]),
    ):
        ask(before)
        replies[label], seconds = ask(probed[0])
        print(f"{tree} {label}: {len(replies[label])} characters in {seconds:.0f} s")
    a, b = replies["after another tree"], replies["after itself"]
    return {
        "tree": tree,
        "other": other_tree,
        "each condition answered alike": a == replies["after another tree, again"]
        and b == replies["after itself, again"],
        "the two conditions answered alike": a == b,
        "recorded run 0 equals run 1": recorded[0] == recorded[1],
        "recorded run 0 equals run 2": recorded[0] == recorded[2],
        "replies": replies,
        "recorded": {f"run {run}": text for run, text in recorded.items()},
    }


if __name__ == "__main__":
    main()
