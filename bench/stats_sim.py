"""Does every printed interval hold its rate? The statistics of ``inquitree.stats`` on simulated
campaigns whose truth is known (``tests/campaignsim.py``), in every design of docs/statistics.md at 2,
3, 5, 8, 12 and 18 papers:

    python bench/stats_sim.py [--campaigns 2000] [--before OLD_MODULE.py] [--out bench/results/stats_sim.json]

- intervals: per design and paper count, the share of campaigns that print a 95% interval, how
  often a printed one covers the true mean, the share of rows with a warning, the median width;
- paired: the sign-flip test's size (rejections at 5% under a true null), among all rows and
  among rows without a warning, and how often its interval covers the true difference;
- asymmetry: the paired test's size on the asymmetric null at 13 to 40 papers, where the
  symmetry warning may stop;
- power: how often it rejects a true difference of 0.10, beside what ``papers_needed`` predicts;
- family-wise error: 10 equal agents compared pairwise (45 tests) at 5, 12 and 18 papers, raw and
  after Holm's adjustment: the chance of at least one "significant" pair;
- ranks: 5 agents 0.05 apart; how often each agent's rank interval holds its true rank;
- episode units: intervals whose units are episodes (``steps_bounds``: one tree a row, each
  episode a unit) on samples of 5 to 1,000 episodes drawn from the steps of episodes played here
  (the random and oracle agents on the three synthetic trees, randomness 0-9), whose mean is the
  truth: Cox's log-scale interval, the t interval, and what ``stats`` prints (Cox below
  ``COX_MAX_UNITS`` units).

``--before FILE`` also runs an older interval module's ``Bootstrap`` (a copy taken from git history,
where the warehouse computed its own intervals before ``inquitree.stats``) on the same campaigns,
for a before/after table. The results go to ``--out`` as JSON and a markdown table is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from inquitree import stats

from campaignsim import DESIGNS, PAIRED, PAPERS, campaign, equal_agents, paired_campaign


def _old(path: str | None):
    if not path:
        return None
    spec = importlib.util.spec_from_file_location("old_intervals", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_intervals"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.Bootstrap()


def intervals(campaigns: int, before) -> list[dict]:
    rows = []
    for name, design in DESIGNS.items():
        for papers in PAPERS:
            rng = np.random.default_rng(zlib.crc32(f"{name}/{papers}".encode()))
            printed = covered = warned = 0
            widths = []
            old_covered = old_zero = 0
            t0 = time.perf_counter()
            for _ in range(campaigns):
                trees, values = campaign(rng, name, papers)
                r = stats.mean_interval(trees, values, design.bounds)
                warned += r.warning is not None
                if r.low is not None and r.high is not None:
                    printed += 1
                    covered += r.low <= design.truth <= r.high
                    widths.append(r.high - r.low)
                if before is not None:
                    o = before.mean(trees, values)
                    if o["ci_low"] is not None:
                        old_covered += o["ci_low"] <= design.truth <= o["ci_high"]
                        old_zero += o["ci_high"] - o["ci_low"] < 1e-12
            row = {
                "design": name,
                "what": design.what,
                "papers": papers,
                "campaigns": campaigns,
                "printed": round(printed / campaigns, 4),
                "coverage": round(covered / printed, 4) if printed else None,
                "warned": round(warned / campaigns, 4),
                "median_width": round(float(np.median(widths)), 4) if widths else None,
                "seconds": round(time.perf_counter() - t0, 1),
            }
            if before is not None:
                row["before_coverage"] = round(old_covered / campaigns, 4)
                row["before_zero_width"] = round(old_zero / campaigns, 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def paired(campaigns: int, before) -> list[dict]:
    rows = []
    for name in PAIRED:
        for papers in sorted(set(PAPERS) | {7, 9}):
            rng = np.random.default_rng(zlib.crc32(f"{name}/{papers}/paired".encode()))
            rejected = rejected_unwarned = unwarned = printed = covered = warned = 0
            old_rejected = old_disagree = 0
            t0 = time.perf_counter()
            for _ in range(campaigns):
                trees, diffs = paired_campaign(rng, name, papers)
                r = stats.paired_test(trees, diffs)
                significant = r.p is not None and r.p <= stats.ALPHA
                rejected += significant
                warned += r.warning is not None
                if r.warning is None:
                    unwarned += 1
                    rejected_unwarned += significant
                if r.low is not None and r.high is not None:
                    printed += 1
                    covered += r.low <= 0.0 <= r.high
                    assert (r.low <= 0.0 <= r.high) == (not significant), "test and interval disagree"
                if before is not None:
                    p = before.sign_flip_p(trees, diffs)
                    o = before.mean(trees, diffs)
                    old_rejected += p < stats.ALPHA
                    if o["ci_low"] is not None:
                        old_disagree += (p < stats.ALPHA) == (o["ci_low"] <= 0 <= o["ci_high"])
            row = {
                "design": name,
                "what": PAIRED[name],
                "papers": papers,
                "campaigns": campaigns,
                "size": round(rejected / campaigns, 4),
                "size_unwarned": round(rejected_unwarned / unwarned, 4) if unwarned else None,
                "warned": round(warned / campaigns, 4),
                "interval_printed": round(printed / campaigns, 4),
                "interval_coverage": round(covered / printed, 4) if printed else None,
                "seconds": round(time.perf_counter() - t0, 1),
            }
            if before is not None:
                row["before_size"] = round(old_rejected / campaigns, 4)
                row["before_disagree"] = round(old_disagree / campaigns, 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


# Beyond PAPERS: where the paired test's size holds on the asymmetric null, which is where the
# symmetry warning (stats.SYMMETRY_PAPERS) may stop.
ASYMMETRY_PAPERS = (13, 14, 15, 16, 18, 21, 22, 24, 26, 28, 30, 34, 40)


def asymmetry(campaigns: int) -> list[dict]:
    rows = []
    for papers in ASYMMETRY_PAPERS:
        rng = np.random.default_rng(zlib.crc32(f"paired-asymmetric/{papers}/asym".encode()))
        rejected, t0 = 0, time.perf_counter()
        for _ in range(campaigns):
            trees, diffs = paired_campaign(rng, "paired-asymmetric", papers)
            r = stats.paired_test(trees, diffs)
            rejected += r.p is not None and r.p <= stats.ALPHA
        size = rejected / campaigns
        row = {
            "papers": papers,
            "campaigns": campaigns,
            "size": round(size, 4),
            "size_se": round((size * (1 - size) / campaigns) ** 0.5, 4),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def power(campaigns: int) -> list[dict]:
    rows = []
    effect, sd_between, sd_within = 0.10, 0.10, 0.05
    need = stats.papers_needed(effect, sd_between, sd_within, runs=3, simulations=campaigns)
    for papers in sorted(set(PAPERS) | {need.papers or 0} - {0}):
        rng = np.random.default_rng(papers)
        hits = sum(
            (stats.paired_test(*paired_campaign(rng, "paired-normal", papers, effect)).p or 1) <= stats.ALPHA
            for _ in range(campaigns)
        )
        rows.append(
            {
                "design": "paired-normal, true difference 0.10",
                "papers": papers,
                "campaigns": campaigns,
                "power": round(hits / campaigns, 4),
                "papers_needed_for_80": need.papers,
                "predicted_power_there": need.power,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def family_wise(campaigns: int) -> list[dict]:
    rows = []
    agents = 10
    for papers in (5, 12, 18):
        if 2 / 2**papers > stats.ALPHA:
            continue
        rng = np.random.default_rng(1000 + papers)
        raw_any = holm_any = 0
        for _ in range(campaigns):
            who, paper, value = equal_agents(rng, agents, papers)
            table = np.array(value).reshape(agents, papers)
            ps = []
            for a in range(agents):
                for b in range(a + 1, agents):
                    ps.append(stats.sign_flip_p(table[b] - table[a]))
            raw_any += min(ps) <= stats.ALPHA
            holm_any += min(p for p in stats.holm(ps) if p is not None) <= stats.ALPHA
        rows.append(
            {
                "design": f"{agents} equal agents, all {agents * (agents - 1) // 2} pairs",
                "papers": papers,
                "campaigns": campaigns,
                "any_significant_raw": round(raw_any / campaigns, 4),
                "any_significant_holm": round(holm_any / campaigns, 4),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def ranks(campaigns: int) -> list[dict]:
    rows = []
    truth = [0.40, 0.45, 0.50, 0.55, 0.60]
    for papers in (5, 12, 18):
        rng = np.random.default_rng(2000 + papers)
        held = np.zeros(len(truth))
        widths = []
        for _ in range(campaigns):
            difficulty = rng.normal(0, 0.15, papers)
            agents, trees, values = [], [], []
            for k, mean in enumerate(truth):
                for p in range(papers):
                    agents.append(f"a{k}")
                    trees.append(f"p{p}")
                    values.append(float(mean + difficulty[p] + rng.normal(0, 0.08)))
            found = stats.rank_intervals(agents, trees, values, resamples=500, seed=0)
            for r in found:
                true_rank = len(truth) - int(r.agent[1:])
                held[int(r.agent[1:])] += r.low <= true_rank <= r.high
                widths.append(r.high - r.low)
        rows.append(
            {
                "design": "5 agents 0.05 apart, shared paper difficulty",
                "papers": papers,
                "campaigns": campaigns,
                "rank_interval_holds": [round(h / campaigns, 4) for h in held],
                "median_rank_interval_width": float(np.median(widths)),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


UNIT_COUNTS = (5, 10, 20, 30, 100, 300, 1000)


def _step_populations(episodes: int) -> dict[str, np.ndarray]:
    """The steps of ``episodes`` finished episodes per tree and agent, played with the hash embedder."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.events.types import EpisodeScored

    from enginekit import OracleAgent, RandomAgent, play

    out = {}
    for tid in ("synthetic-chain-7", "synthetic-diamond-4", "synthetic-independent-7"):
        tree = resolve_tree(tid)
        for agent in ("random", "oracle"):
            steps = []
            for i in range(episodes):
                player = OracleAgent(tree) if agent == "oracle" else RandomAgent(tree, i)
                played = play(tree, player, seed=i, randomness=i % 10)
                steps += [e.steps for e in played.events if isinstance(e, EpisodeScored)][-1:]
            out[f"{tid} {agent}"] = np.array(steps, float)
    return out


def episode_units(campaigns: int, episodes: int = 1000) -> list[dict]:
    """Coverage of Cox's interval, the t interval and the printed one, with episodes as units: the
    same ``stats.interval_of_means`` with ``COX_MAX_UNITS`` set so that it takes Cox's always, the t
    interval always, or as shipped (set back at the end, whatever happens)."""
    rows = []
    shipped = stats.COX_MAX_UNITS
    methods = {"cox": 10**9, "t": 0, "printed": shipped}
    try:
        for name, population in _step_populations(episodes).items():
            truth = float(population.mean())
            for n in UNIT_COUNTS:
                rng = np.random.default_rng(zlib.crc32(f"{name}/{n}".encode()))
                samples = [rng.choice(population, n) for _ in range(campaigns)]
                row: dict = {"design": name, "papers": n, "campaigns": campaigns, "truth": round(truth, 3)}
                for method, limit in methods.items():
                    stats.COX_MAX_UNITS, covered, printed = limit, 0, 0
                    for x in samples:
                        r = stats.interval_of_means(x, n, (0.0, None), unit="episode")
                        if r.low is not None and r.high is not None:
                            printed += 1
                            covered += r.low <= truth <= r.high
                    row[method] = round(covered / printed, 4) if printed else None
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        stats.COX_MAX_UNITS = shipped
    return rows


def _grid(rows: list[dict], names, counts, cell, unit: str = "papers") -> list[str]:
    """A markdown table: one line per design in ``names``, one column per count of ``unit``, each
    cell ``cell(row)`` of that design's row at that count."""
    by = {(r["design"], r["papers"]): r for r in rows}
    lines = ["| design | " + " | ".join(f"{n} {unit}" for n in counts) + " |", "|---" * (len(counts) + 1) + "|"]
    return lines + [f"| {name} | " + " | ".join(cell(by[(name, n)]) for n in counts) + " |" for name in names]


def _coverage_cell(r: dict) -> str:
    cell = "none" if r["coverage"] is None else f"{100 * r['coverage']:.1f}%"
    if r["warned"] and r["coverage"] is not None:
        cell += f" (warned {100 * r['warned']:.1f}%)"
    if "before_coverage" in r:
        cell += f" [{100 * r['before_coverage']:.1f}%]"
    return cell


def _size_cell(r: dict) -> str:
    cell = "cannot" if r["interval_printed"] == 0 else f"{100 * r['size']:.1f}%"
    if r["interval_printed"] and r["warned"]:
        cell += f" (warned {100 * r['warned']:.0f}%)"
    if "before_size" in r:
        cell += f" [{100 * r['before_size']:.1f}%; disagreed {100 * r['before_disagree']:.1f}%]"
    return cell


def _by_papers(title: str, cells: list[tuple[int, str]]) -> list[str]:
    """A two-column table, one row per paper count, after a blank line."""
    return ["", f"| papers | {title} |", "|---|---|", *[f"| {papers} | {cell} |" for papers, cell in cells]]


def markdown(result: dict) -> str:
    """The tables of docs/statistics.md, from a result of this bench."""
    out = []
    if "intervals" in result:
        out += [
            "Coverage of the printed 95% intervals (share of printed intervals that hold the true mean; "
            '"none": no interval is printed, with a warning), and in brackets the warehouse\'s method '
            "of version 0.1.0's first release on the same campaigns:",
            "",
            *_grid(result["intervals"], DESIGNS, PAPERS, _coverage_cell),
        ]
    if "paired" in result:
        out += [
            "",
            'The paired test\'s size under a true null (rejections at 5%; "cannot": p_min > 0.05, no '
            'rejection is possible and the row says so; "warned": the share of rows that carry a warning). '
            "Its interval is the test inverted, so it holds the true difference exactly when the test does not "
            "reject. In brackets, before: the size, and how often the old interval and test disagreed (one "
            "said there was a difference, the other not):",
            "",
            *_grid(result["paired"], PAIRED, sorted({r["papers"] for r in result["paired"]}), _size_cell),
        ]
    if "asymmetry" in result:
        out += _by_papers(
            "size on the asymmetric null (Monte Carlo SE)",
            [(r["papers"], f"{100 * r['size']:.1f}% ({100 * r['size_se']:.1f})") for r in result["asymmetry"]],
        )
    if "power" in result:
        out += _by_papers(
            "simulated power (difference 0.10, SD 0.10 between, 0.05 within, 3 pairs)",
            [(r["papers"], f"{100 * r['power']:.1f}%") for r in result["power"]],
        )
        first = result["power"][0]
        out += ["", f"`papers_needed` for 80%: {first['papers_needed_for_80']} papers."]
    if "family_wise" in result:
        out += ["", '| comparisons | papers | any "significant", raw | after Holm |', "|---|---|---|---|"]
        out += [
            f"| {r['design']} | {r['papers']} | {100 * r['any_significant_raw']:.1f}% | "
            f"{100 * r['any_significant_holm']:.1f}% |"
            for r in result["family_wise"]
        ]
    if "ranks" in result:
        out += ["", "| agents | papers | rank interval holds its true rank (best to worst) | median width |"]
        out += ["|---|---|---|---|"]
        out += [
            f"| {r['design']} | {r['papers']} | "
            + ", ".join(f"{100 * h:.1f}%" for h in reversed(r["rank_interval_holds"]))
            + f" | {r['median_rank_interval_width']:g} |"
            for r in result["ranks"]
        ]
    if "episode_units" in result:
        units = result["episode_units"]
        out += [
            "",
            "Episodes as units (one tree's steps, each episode a unit): coverage of Cox's log-scale interval / "
            "the t interval / the printed one, on samples of n episodes:",
            "",
            *_grid(
                units,
                dict.fromkeys(r["design"] for r in units),
                UNIT_COUNTS,
                lambda r: " / ".join(f"{100 * r[m]:.1f}%" for m in ("cox", "t", "printed")),
                "episodes",
            ),
        ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", type=int, default=2000)
    parser.add_argument(
        "--before", default=None, help="a copy of an older interval module (from git history), for comparison"
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "stats_sim.json"))
    parser.add_argument(
        "--only", default=None, help="comma-separated parts: intervals,paired,asymmetry,power,fwer,ranks,units"
    )
    parser.add_argument("--tables", metavar="RESULT.json", help="print the markdown tables of an earlier result")
    parser.add_argument("--episodes", type=int, default=1000, help="units: episodes played per tree and agent")
    args = parser.parse_args()
    if args.tables:
        print(markdown(json.loads(Path(args.tables).read_text())))
        return
    before = _old(args.before)
    parts = set((args.only or "intervals,paired,asymmetry,power,fwer,ranks,units").split(","))
    t0 = time.perf_counter()
    result: dict = {"campaigns": args.campaigns, "before": args.before}
    if args.only and Path(args.out).exists():  # a part run again replaces that part of an earlier result
        result = json.loads(Path(args.out).read_text()) | {"campaigns": args.campaigns}
    if "intervals" in parts:
        result["intervals"] = intervals(args.campaigns, before)
    if "paired" in parts:
        result["paired"] = paired(args.campaigns, before)
    if "asymmetry" in parts:
        result["asymmetry"] = asymmetry(args.campaigns)
    if "power" in parts:
        result["power"] = power(args.campaigns)
    if "fwer" in parts:
        result["family_wise"] = family_wise(args.campaigns)
    if "ranks" in parts:
        result["ranks"] = ranks(args.campaigns)
    if "units" in parts:
        result["episode_units"] = episode_units(args.campaigns, args.episodes)
    result["seconds" if not args.only else f"seconds_{args.only}"] = round(time.perf_counter() - t0, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))
    print(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
