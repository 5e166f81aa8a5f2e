"""``inquitree judge`` (re-judging finished episodes) and ``inquitree control`` (Sec. 4.3)."""

from __future__ import annotations

import sys

import click

from inquitree.boundary.errors import InquiTreeError
from inquitree.cli.common import (
    KindOption,
    Progress,
    agent_config,
    agent_options,
    call_options,
    db_option,
    echo,
    judge_config,
    judge_options,
)


@click.command()
@click.argument("episodes", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every finished episode (optionally --prefix).")
@click.option("--prefix", default="", help="With --all: only episode ids starting with this (e.g. a suite name).")
@click.option("--judge", "judge_spec", required=True, cls=KindOption, role="judge")
@judge_options
@call_options
@click.option("--embedder", "embedder_name", default="local", show_default=True, help="For the embedding judge.")
@click.option("--again", is_flag=True, help="Judge again even where this judge already has verdicts.")
@db_option
def judge(episodes, all_, prefix, judge_spec, embedder_name, again, db_url, **model_kw) -> None:
    """Append a judge's verdicts and scores to finished episodes (nothing is overwritten).

    Says how many verdicts failed and why (one line per cause, with its count) and exits 1 when
    every verdict it made failed; Ctrl-C keeps the episodes judged so far (exit 130) and the same
    command continues with the rest."""
    from collections import Counter

    from inquitree.core.players import make_embedder, make_judge
    from inquitree.core.run import finished_episodes, judge_episode
    from inquitree.events import EventStore

    j = make_judge(judge_spec, make_embedder(embedder_name), judge_config(model_kw))
    added = skipped = verdicts = 0
    causes: Counter[str] = Counter()
    with EventStore(db_url, create=False) as store:
        ids = list(episodes) + (finished_episodes(store, prefix) if all_ else [])
        if not ids:
            raise click.UsageError("name episodes, or use --all")
        with Progress(len(ids), "episodes") as meter:
            try:
                for n, eid in enumerate(ids):
                    meter.update(n, f"; {added} judged, {skipped} had its verdicts" + _failed(causes, verdicts))
                    new = judge_episode(store, eid, j, again=again)
                    added += bool(new)
                    skipped += not new
                    verdicts += len(new)
                    causes.update(v.rationale for v in new if v.error)
                    if added >= HALT_AFTER and sum(causes.values()) == verdicts and len(causes) == 1:
                        # the first episodes' verdicts all failed, of one cause: the rest would too
                        raise JudgeStopped(
                            f"the first {added} episodes' {verdicts} verdicts all failed the same way "
                            f"({next(iter(causes))[:200]}); {len(ids) - n - 1} episodes not judged"
                        )
                meter.update(len(ids), f"; {added} judged, {skipped} had its verdicts" + _failed(causes, verdicts))
            except (KeyboardInterrupt, InquiTreeError) as exc:
                meter.close()
                why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"stopped: {exc}"
                at = "" if isinstance(exc, JudgeStopped) else f" at episode {added + skipped + 1} of {len(ids)}"
                echo(
                    f"judge {j.id}: {why}{at}; the {added} episodes judged so far keep their verdicts, and "
                    "the same command, run again, judges the rest and retries every failed verdict",
                    err=True,
                )
                _say_causes(causes, verdicts)
                sys.exit(130 if isinstance(exc, KeyboardInterrupt) else 1)
    echo(
        f"judge {j.id}: {added} episodes judged, {skipped} already had its usable verdicts"
        + (" (an episode with a failed verdict is judged again by the same command)" if causes else "")
    )
    _say_causes(causes, verdicts)
    if verdicts and sum(causes.values()) == verdicts:
        echo(
            f"every verdict of judge {j.id} failed: its episodes have no conclusion score under it "
            "(is the model able to answer in the judge's format? `inquitree query judge_flags` lists the causes)",
            err=True,
        )
        sys.exit(1)


HALT_AFTER = 3  # episodes whose every verdict failed of one cause before a run stops judging


class JudgeStopped(InquiTreeError):
    """The first episodes' verdicts all failed the same way: judging the rest would spend every request."""


def _failed(causes, verdicts: int) -> str:
    failed = sum(causes.values())
    return f", {failed} of {verdicts} verdicts failed" if failed else ""


def _say_causes(causes, verdicts: int) -> None:
    """How many verdicts failed, then one line per cause with its count, the most frequent first."""
    failed = sum(causes.values())
    if not failed:
        return
    echo(f"{failed} of {verdicts} verdicts failed (no score for their episodes under this judge):", err=True)
    for cause, count in causes.most_common(10):
        echo(f"  {count} x {cause}", err=True)
    if len(causes) > 10:
        echo(
            f"  ... and {len(causes) - 10} other causes ({sum(c for _, c in causes.most_common()[10:])} verdicts)",
            err=True,
        )


@click.command()
@click.option("--agent", "agent_spec", required=True, help="oracle | random | openai:MODEL")
@click.option("--tree", "tree_refs", multiple=True, help="Trees whose results to show (default: every shipped tree).")
@click.option("--seed", default=0, show_default=True)
@agent_options
@call_options
@db_option
def control(agent_spec, tree_refs, seed, db_url, **model_kw) -> None:
    """The decontextualized control: each true and fake result alone; VALID or INVALID."""
    from inquitree.core.game import load_tree_file, resolve_tree, shipped_tree_paths
    from inquitree.core.run import run_control
    from inquitree.events import ControlAnswered, EventStore

    trees = [resolve_tree(r) for r in tree_refs] if tree_refs else [load_tree_file(p) for p in shipped_tree_paths()]
    with EventStore(db_url) as store:
        sid, answered, total = run_control(store, agent_spec, trees, seed, agent_config(model_kw))
        answers = [r.event for r in store.read_stream(sid)[1:] if isinstance(r.event, ControlAnswered)]
    read = [a for a in answers if a.answer is not None]  # an unparsed answer is an error, never a wrong one
    unparsed = len(answers) - len(read)
    if answers and not read:
        echo(
            f"{sid}: {answered} answered now, {len(answers)}/{total} in all; none of the {len(answers)} answers could "
            "be read (neither VALID nor INVALID): no accuracy to give",
            err=True,
        )
        sys.exit(1)
    right = sum(a.correct for a in read)
    fakes = [a for a in read if a.shown_fake]
    trues = [a for a in read if not a.shown_fake]
    echo(
        f"{sid}: {answered} answered now, {len(answers)}/{total} in all; over the {len(read)} answers read: "
        f"accuracy {right / max(1, len(read)):.3f}, "
        f"fake detection {sum(a.answer == 'INVALID' for a in fakes) / max(1, len(fakes)):.3f}, "
        f"false alarms {sum(a.answer == 'INVALID' for a in trues) / max(1, len(trues)):.3f}; "
        f"{unparsed} unparsed (left out, never scored as wrong)"
    )
