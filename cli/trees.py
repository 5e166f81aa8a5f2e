"""``inquitree trees``: list, show, graph, validate and calibrate research trees."""

from __future__ import annotations

import sys
import time

import click

from inquitree.cli.common import FINITE, FiniteFloat, KindOption, echo, fitted, match_rule_option, progress, say
from inquitree.core.game import Tree, TreeError, load_tree_file, resolve_tree, shipped_tree_paths


@click.group()
def trees() -> None:
    """Research trees: the shipped set and your own files."""


def _load_all(refs: tuple[str, ...]) -> list[Tree]:
    return [resolve_tree(r) for r in refs] if refs else [load_tree_file(p) for p in shipped_tree_paths()]


@trees.command("list")
@click.option("--max-hints", "-H", default=4, show_default=True, help="H, for the upper bound n(2H+3).")
def list_(max_hints: int) -> None:
    """Every shipped tree: id, subtopics n (and the paper's count for IT-18 trees), bounds, provenance.

    Below the table, the IT-18 set (the paper's Table 4) against the shipped trees:
    papers covered, subtopics ours vs the paper's, and any paper without a tree.
    """
    from inquitree.core.game import it18_registry

    rows = [("id", "IT-18", "n", "paper n", "3n", "n(2H+3)", "title", "provenance")]
    covered: dict[int, Tree] = {}
    for path in shipped_tree_paths():
        t = load_tree_file(path)
        lo, hi = t.bounds(max_hints)
        paper_n, it18 = t.paper.get("paper_subtopics"), t.paper.get("it18_id")
        if it18 is not None:
            covered[it18] = t
        rows.append(
            (
                t.id,
                "-" if it18 is None else str(it18),
                str(t.n),
                "-" if paper_n is None else str(paper_n),
                str(lo),
                str(hi),
                t.title,
                t.provenance["kind"],
            )
        )
    lines, left_out = fitted(rows, cut=(6,))
    echo(f"bounds with H={max_hints}")
    for line in lines:
        echo(line)
    if left_out:
        say(
            f"{len(left_out)} more column(s) do not fit: {', '.join(left_out)} (`inquitree trees show ID` gives them)",
            err=True,
        )
    papers = it18_registry()
    ours = sum(covered[p["it18_id"]].n for p in papers if p["it18_id"] in covered)
    theirs = sum(p["subtopics"] for p in papers)
    have = [p for p in papers if p["it18_id"] in covered]
    echo()
    say(
        f"IT-18 (paper's Table 4): {len(have)} of {len(papers)} papers have a tree; subtopics {ours} here "
        f"vs {theirs} in the paper; mean per paper {ours / max(len(have), 1):.1f} vs {theirs / len(papers):.1f}"
    )
    for p in papers:
        if p["it18_id"] not in covered:
            say(f"  no tree yet: IT-18 #{p['it18_id']} ({p['subtopics']} subtopics) {p['title']}")


@trees.command()
@click.argument("tree_ref", metavar="ID|PATH")
def show(tree_ref: str) -> None:
    """A readable outline of one tree (ground truth included: this is for people, not agents)."""
    t = resolve_tree(tree_ref)
    lo, hi = t.bounds()
    p = t.paper
    echo(f"{t.id}: {t.title}")
    echo(f"  journal: {p.get('journal') or '-'}   published: {p.get('published') or '-'}   doi: {p.get('doi') or '-'}")
    echo(f"  provenance: {t.provenance['kind']}: {t.provenance['note']}")
    for src in t.provenance.get("sources", []):
        echo(f"    source: {src}")
    echo(f"  n = {t.n} subtopics; steps between 3n = {lo} and n(2H+3) = {hi} (H=4)")
    echo(f"\nTOPIC  {t.topic}")
    for s in t.subtopics:
        deps = f"  (after {', '.join(s.depends_on)})" if s.depends_on else ""
        echo(f"\n  SUBTOPIC {s.id}{deps}: {s.text}")
        for st in s.studies:
            echo(f"    STUDY {st.id}: {st.text}")
            echo(f"      RESULT {st.result.id}: {st.result.text}")
            for k, fake in enumerate(st.result.fakes):
                echo(f"      fake {k}: {fake}")
    echo("\nCONCLUSIONS")
    for c in t.conclusions:
        echo(f"  {c.id} [needs {', '.join(c.requires_results) or 'nothing'}]: {c.text}")


@trees.command()
@click.argument("tree_ref", metavar="ID|PATH")
@click.option("--format", "fmt", type=click.Choice(["mermaid", "dot"]), default="mermaid", show_default=True)
def graph(tree_ref: str, fmt: str) -> None:
    """The subtopic dependency DAG as Mermaid or Graphviz dot."""
    t = resolve_tree(tree_ref)

    def label(s) -> str:
        text = s.text if len(s.text) <= 60 else s.text[:57] + "..."
        return f"{s.id}: {text}".replace('"', "'")

    if fmt == "mermaid":
        echo("graph TD")
        for s in t.subtopics:
            echo(f'  {s.id.replace(".", "_")}["{label(s)}"]')
        for s in t.subtopics:
            for d in s.depends_on:
                echo(f"  {d.replace('.', '_')} --> {s.id.replace('.', '_')}")
    else:
        from inquitree.viewer.treeview import dot_quote

        echo(f"digraph {dot_quote(t.id)} {{\n  rankdir=TB; node [shape=box];")
        for s in t.subtopics:
            echo(f"  {dot_quote(s.id)} [label={dot_quote(label(s))}];")
        for s in t.subtopics:
            for d in s.depends_on:
                echo(f"  {dot_quote(d)} -> {dot_quote(s.id)};")
        echo("}")


@trees.command()
@click.argument("paths", nargs=-1)
@click.option(
    "--embedder",
    default=None,
    help="Also check hint monotonicity (Eq. 6) with this embedder: local | hash | openai[:MODEL].",
)
@click.option(
    "--tau", type=FINITE, default=None, help="Warn where a level-4 hint falls below tau (default: the embedder's)."
)
@click.option("--base-url", default=None, help="Base URL of an OpenAI-compatible embeddings endpoint.")
def validate(paths: tuple[str, ...], embedder: str | None, tau: float | None, base_url: str | None) -> None:
    """Validate tree files (default: every shipped tree). Exit 1 on any error."""
    from inquitree.core.players import calibrate_tree, default_tau, make_embedder

    refs = paths or tuple(str(p) for p in shipped_tree_paths())
    emb = make_embedder(embedder, base_url=base_url) if embedder else None
    if emb is not None and tau is None:
        tau = default_tau(emb.id)
    errors = warnings = 0
    t0 = time.perf_counter()
    for k, ref in enumerate(refs, 1):
        progress(f"  validating {k}/{len(refs)}: {ref}" + (f" (embedding its hints with {emb.id})" if emb else ""))
        try:
            t = resolve_tree(ref, memo=False)  # always against the schema, whatever the cache says
        except TreeError as exc:
            for problem in exc.problems:
                echo(f"ERROR {exc.source}: {problem}")
            errors += len(exc.problems)
            continue
        line = f"ok    {t.source}: {t.id}, {t.n} subtopics"
        if emb is not None:
            cal = calibrate_tree(t, emb)
            for v in cal.violations:
                c = ", ".join(f"h{i + 1}={x:.3f}" for i, x in enumerate(v.hint_cosines))
                echo(f"ERROR {t.source}: {v.kind} {v.id}: hints are not monotone (Eq. 6): {c}")
                errors += 1
            for tc in cal.targets:
                if tau is not None and tc.hint_cosines[3] < tau:
                    echo(
                        f"WARN  {t.source}: {tc.kind} {tc.id}: level-4 hint cosine "
                        f"{tc.hint_cosines[3]:.3f} is below tau={tau}"
                    )
                    warnings += 1
            line += f"; hints monotone under {emb.id}" if not cal.violations else ""
        progress("")
        echo(line)
    echo(f"{len(refs)} trees, {errors} errors, {warnings} warnings ({time.perf_counter() - t0:.2f} s)")
    sys.exit(1 if errors else 0)


# A match threshold as `play` takes it: a finite number in (0, 1]
THRESHOLD = FiniteFloat(0, 1, min_open=True)


@trees.command()
@click.argument("tree_ref", metavar="TREE")
@click.argument("text")
@click.option(
    "--subtopic", default=None, metavar="ID", help="Match against this subtopic's study (the Subtopic state)."
)
@click.option("--embedder", default="local", show_default=True, cls=KindOption, role="embedder")
@click.option("--embedder-base-url", "base_url", default=None)
@click.option(
    "--tau",
    type=THRESHOLD,
    default=None,
    help="Match threshold in (0, 1], as `play --tau` (default: the embedder's).",
)
@click.option(
    "--tau-study",
    type=THRESHOLD,
    default=None,
    help="Threshold at the Subtopic state, as `play --tau-study` (default: the embedder's when --tau is not given).",
)
@match_rule_option("--match-rule", "The match rule, as `play --match-rule`.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def match(
    tree_ref: str,
    text: str,
    subtopic: str | None,
    embedder: str,
    base_url,
    tau: float | None,
    tau_study: float | None,
    match_rule: str,
    fmt: str,
):
    """What the engine would make of TEXT as an ACTION: the candidates of the state (the subtopics
    at the Topic, or --subtopic's study), each with its cosine, the best, the threshold `play`
    would apply there with the same options, and the engine's own decision."""
    import json

    from inquitree.core.game import SUBTOPIC, TOPIC, fitted_rule, match_anchors, read_match, threshold_at
    from inquitree.core.players import make_embedder
    from inquitree.core.run import EpisodeSpec, cosines

    tree = resolve_tree(tree_ref)
    if subtopic is not None and subtopic not in tree.subtopic:
        known = ", ".join(s.id for s in tree.subtopics)
        raise click.BadParameter(f"{subtopic!r} is not a subtopic of {tree.id}; its subtopics: {known}")
    emb = make_embedder(embedder, base_url=base_url)
    state = SUBTOPIC if subtopic else TOPIC
    rule = fitted_rule(emb.id) if match_rule == "fitted" else None
    threshold = threshold_at(state, *EpisodeSpec(tau=tau, tau_study=tau_study).thresholds(emb.id))
    anchors = match_anchors(tree, state, subtopic, rule is not None)
    order = [s.id for s in tree.subtopics] if subtopic is None else [st.id for st in tree.subtopic[subtopic].studies]
    found = read_match(order, cosines(emb, text, anchors), state, threshold, rule)
    result = {
        "tree": tree.id,
        "state": state,
        "embedder": emb.id,
        "rule": match_rule,
        "candidates": found.candidates,
        "best": found.best,
        "tau": threshold,
        **({"reading": found.rule} if found.rule else {}),
        "match": found.best if found.accepted else None,
    }
    if fmt == "json":
        click.echo(json.dumps(result, indent=1))
        return
    texts = dict(anchors)
    score = {c["id"]: max([c["cosine"], *c.get("hints", [])]) for c in found.candidates}
    for c in sorted(order, key=lambda c: -score[c]):
        mark = "*" if c == found.best else " "
        echo(f"{mark} {score[c]:.3f}  {c}  {texts[c][:90]}")
    verdict = f"matches {found.best}" if result["match"] else "a miss (the hint level rises)"
    if found.rule is None:
        echo(f"best {found.best} at {found.best_cosine:.3f} against tau {threshold} ({state} state): {verdict}")
    else:
        echo(
            f"best {found.best} at {found.best_cosine:.3f} (the best of its text and hints); the fitted rule's "
            f"probability {found.rule['probability']:.3f} against {found.rule['threshold']} ({state} state): {verdict}"
        )


@trees.command()
@click.argument("refs", nargs=-1)
@click.option("--embedder", default="local", show_default=True, cls=KindOption, role="embedder")
@click.option("--base-url", default=None)
def calibrate(refs: tuple[str, ...], embedder: str, base_url: str | None) -> None:
    """Cosines of hints by level and between targets, per tree, and a recommended tau."""
    from inquitree.core.players import (
        DEFAULT_TAU,
        calibrate_tree,
        make_embedder,
        percentile,
        recommend_tau,
        summary_rows,
    )

    emb = make_embedder(embedder, base_url=base_url)
    trees_ = _load_all(refs)
    cals = []
    for k, t in enumerate(trees_, 1):
        progress(f"  calibrating {k}/{len(trees_)}: {t.id}")
        cals.append(calibrate_tree(t, emb))
    progress("")
    echo(f"embedder {emb.id}: cos(hint, target) by level, and each target's highest cosine to another candidate")
    for cal in cals:
        echo(f"\n{cal.tree_id} ({len(cal.targets)} targets, {len(cal.violations)} monotonicity violations)")
        echo(f"  {'':14}{'mean':>7}{'min':>7}{'max':>7}")
        for what, mean, lo, hi in summary_rows(cal):
            echo(f"  {what:14}{mean:7.3f}{lo:7.3f}{hi:7.3f}")
        echo(f"  recommended tau for this tree: {recommend_tau([cal])}")
        tau_now = DEFAULT_TAU.get(emb.id, (None, ""))[0]
        close = [t for t in cal.targets if t.kind == "subtopic" and t.max_cross >= (tau_now or 1.0)]
        if tau_now is not None and close:
            listed = ", ".join(f"{t.id} {t.max_cross:.2f}" for t in close)
            echo(
                f"  WARNING: {len(close)} subtopics are closer to another subtopic than tau {tau_now} ({listed}): "
                "an action meant for one can match its neighbour"
            )
    h1 = [c for cal in cals for c in cal.level(1)]
    h4 = [c for cal in cals for c in cal.level(4)]
    tau = recommend_tau(cals)
    echo(
        f"\nall trees: P90(h1) = {percentile(h1, 90):.3f}, P10(h4) = {percentile(h4, 10):.3f} "
        f"-> recommended tau = {tau}"
    )
    if emb.id in DEFAULT_TAU:
        echo(f"current default for {emb.id}: {DEFAULT_TAU[emb.id][0]}")
