"""``inquitree extract``: a research tree from a paper's text, by an OpenAI-compatible model (Appendix D)."""

from __future__ import annotations

from pathlib import Path

import click

from inquitree.cli.common import call_options, call_settings, echo


@click.command()
@click.argument("paper", type=click.Path(path_type=Path))
@click.option("--model", required=True, help="Chat model that extracts the tree and runs the checks.")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL or OpenAI).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="Directory for <id>.json, <id>.review.md, the call log <id>.calls.jsonl and the call cache "
    "<id>.cache.sqlite (unless --call-cache names another).",
)
@click.option("--id", "tree_id", default=None, help="Tree id (default: extracted-<paper file stem>).")
@click.option("--embedder", default="local", show_default=True, help="Embedder for the hint check (Eq. 6).")
@click.option("--hint-rounds", default=2, show_default=True, help="Regenerations for hints that are not monotone.")
@click.option("--attempts", default=3, show_default=True, help="Tries per model call when its JSON is unusable.")
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=8192,
    show_default=True,
    help="Longest answer per call, in tokens.",
)
@call_options
def extract(
    paper: Path,
    model: str,
    base_url: str | None,
    out_dir: Path,
    tree_id: str | None,
    embedder: str,
    hint_rounds: int,
    attempts: int,
    max_tokens: int,
    **call_kw,
) -> None:
    """Extract a research tree from PAPER (plain text) and write it with a review report.

    Steps: the tree skeleton from the paper (checked against the schema, problems sent
    back to the model), four hints per target (regenerated while not monotone under the
    embedder), Stage 1 content checks (leakage, observational purity, fake plausibility)
    and the Stage 2 dependency audit. Checks only flag; a person decides. Model answers
    are kept in the call cache (beside the outputs unless --call-cache names one), so an
    interrupted run resumes where it stopped and a re-run makes no call.
    """
    from inquitree.core.extract import extract_tree, tokens_note
    from inquitree.core.players import make_embedder

    emb = make_embedder(embedder, base_url=base_url)
    # a whole tree in one JSON answer: replies this long are expected, whatever --max-reply-chars says
    settings = call_settings(call_kw, max_tokens, min_reply_chars=200_000)
    res = extract_tree(
        paper,
        model,
        out_dir,
        emb,
        base_url=base_url,
        tree_id=tree_id,
        hint_rounds=hint_rounds,
        attempts=attempts,
        progress=lambda line: echo(line, err=True),
        settings=settings,
        cache_path=Path(call_kw["call_cache"]) if call_kw["call_cache"] else None,
    )
    counts: dict[str, int] = {}
    for f in res.flags:
        counts[f.check] = counts.get(f.check, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in counts.items()) or "none"
    echo(f"tree:   {res.tree_path} ({len(res.doc['subtopics'])} subtopics)")
    echo(f"review: {res.review_path} ({len(res.flags)} flags: {summary})")
    echo(f"model calls: {res.calls} (+{res.cached} reused from the cache); {tokens_note(res.tokens, res.calls)}")
