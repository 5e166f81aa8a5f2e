"""Embedder benchmark (issue: trees and embedders).

- local embedder: load time, sentences/s, peak memory (RSS high-water mark of this process),
- the cache: the texts one 77-step episode embeds (every action and candidate), cold vs
  served from the persistent cache by a fresh process-level instance (as a replay would),
- validation time of every shipped tree, structural only and with the local embedder.

  python bench/embedder.py
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree.core.game.tree import load_tree_file, shipped_tree_paths
from inquitree.core.players.calibrate import calibrate_tree
from inquitree.core.players.embed import CachedEmbedder, LocalEmbedder


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true", help="the smoke run: 100 sentences, the synthetic trees")
    args = ap.parse_args()
    size = 100 if args.quick else 1000
    tree_paths = [p for p in shipped_tree_paths() if not args.quick or p.stem.startswith("synthetic-")]
    out = {"rss_before_mb": round(rss_mb(), 1)}
    t0 = time.perf_counter()
    emb = LocalEmbedder()
    out["local_load_s"] = round(time.perf_counter() - t0, 3)
    trees = [load_tree_file(p) for p in shipped_tree_paths()]
    texts = sorted({t for tr in trees for s in tr.subtopics for x in (s, *s.studies) for t in (x.text, *x.hints)})
    corpus = (texts * (size // len(texts) + 1))[:size]
    emb.embed(corpus[:32])
    t0 = time.perf_counter()
    emb.embed(corpus)
    out["local_sentences_per_s"] = round(len(corpus) / (time.perf_counter() - t0))
    out["peak_rss_mb"] = round(rss_mb(), 1)

    chain = next(t for t in trees if t.id == "synthetic-chain-7")
    episode_texts = [s.text for s in chain.subtopics] + [st.text for st in chain.study.values()]
    episode_texts += [f"ACTION: a reply the agent wrote at step {i}" for i in range(77)]
    with tempfile.TemporaryDirectory() as d:
        cold = CachedEmbedder(emb, Path(d) / "c.sqlite")
        t0 = time.perf_counter()
        for t in episode_texts:
            cold.embed([t])
        cold_s = time.perf_counter() - t0
        cold.close()
        warm = CachedEmbedder(emb, Path(d) / "c.sqlite")
        t0 = time.perf_counter()
        for t in episode_texts:
            warm.embed([t])
        warm_s = time.perf_counter() - t0
        assert warm.misses == 0
    out["cache_episode_texts"] = len(episode_texts)
    out["cache_cold_ms"] = round(cold_s * 1000, 1)
    out["cache_warm_ms"] = round(warm_s * 1000, 1)
    out["cache_speedup"] = round(cold_s / warm_s, 1)

    t0 = time.perf_counter()
    for p in tree_paths:
        load_tree_file(p)
    out["validate_all_structural_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    t0 = time.perf_counter()
    for p in tree_paths:
        calibrate_tree(load_tree_file(p), emb)
    out["validate_all_with_local_embedder_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    out["trees"] = len(tree_paths)
    print(json.dumps(out, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
