"""``inquitree label moves|conclusions``: a person reads a seeded sample of a campaign's own moves or
conclusions, blind to the engine's decision and the judge's verdict, and each answer is appended to
the event store (core/instrument/labels.py; docs/instrument.md, "Measuring on your own agents").

Answers are read one a line from a terminal or from standard input, so a labelling run can be
scripted and tested. The same command continues an interrupted sample; another ``--labeller``
labels the same sample beside the first, and their agreement is reported."""

from __future__ import annotations

import getpass
import os
import sys
import textwrap
from typing import Any

import click

from inquitree.cli.common import db_option, echo

WIDTH = 80
HELP_MOVE = (
    "answer with the id of the candidate the agent's reply means to take (as shown in brackets), "
    "or 'none' when it names none of them; s skips this item, q stops (the answers so far are kept)"
)
HELP_CONCLUSION = (
    "answer 'stated' when the agent's items state the finding, 'partial' when they state part of it, "
    "'absent' when they do not (st, p and a will do); s skips this item, q stops (the answers so far are kept)"
)


def _wrapped(text: str, indent: str = "  ") -> list[str]:
    from inquitree.boundary.text import printable

    return textwrap.wrap(
        printable(text, one_line=True), WIDTH - 1, initial_indent=indent, subsequent_indent=indent
    ) or [indent]


def _say(text: str) -> None:
    """A line of the run's own (names in it come from the store: escaped), wrapped to the screen."""
    from inquitree.boundary.text import printable

    echo("\n".join(textwrap.wrap(printable(text, one_line=True), WIDTH - 1, subsequent_indent="  ")))


def _labeller(given: str | None) -> str:
    from inquitree.boundary.errors import BadName
    from inquitree.events import check_episode_id

    name = given or os.environ.get("INQUITREE_LABELLER") or getpass.getuser()
    try:
        return check_episode_id(name)
    except BadName as exc:
        raise click.BadParameter(str(exc).replace("episode id", "labeller name"), param_hint="--labeller") from None


def _sample_options(f):
    f = click.option("--labeller", help="Who answers (default: $INQUITREE_LABELLER, else your login name).")(f)
    f = click.option("--seed", type=int, default=0, show_default=True, help="The sample's seed.")(f)
    f = click.option(
        "--sample", "size", type=click.IntRange(min=1), required=True, help="How many items (all, if fewer exist)."
    )(f)
    f = click.option("--agent", help="Only this agent's episodes (its label, as the leaderboard names it).")(f)
    f = click.option("--suite", required=True, help="The campaign whose episodes are sampled (its suite name).")(f)
    return db_option(f)


@click.group()
def label() -> None:
    """Label a sample of a campaign's moves or conclusions (docs/instrument.md)."""


@label.command()
@_sample_options
def moves(db_url, suite, agent, size, seed, labeller) -> None:
    """Read a sample of the agents' own moves at the Topic and Subtopic states: which candidate
    does each reply mean? Stratified by agent and state; answers are appended as LabelRecorded."""
    from inquitree.core import instrument as labels

    _run(db_url, "move", suite, agent, size, seed, _labeller(labeller), labels.campaign_moves)


@label.command()
@_sample_options
def conclusions(db_url, suite, agent, size, seed, labeller) -> None:
    """Read a sample of (episode, ground-truth finding) pairs: did the agent's submitted items state
    the finding? Stratified by agent; answers are appended as LabelRecorded."""
    from inquitree.core import instrument as labels

    _run(db_url, "conclusion", suite, agent, size, seed, _labeller(labeller), labels.campaign_conclusions)


def _run(db_url, kind, suite, agent, size, seed, labeller, collect) -> None:
    from inquitree.core import instrument as labels
    from inquitree.events import EventStore, LabelRecorded

    with EventStore(db_url, create=False) as store:
        found = collect(store, suite, agent)
        if not found:
            what = "matched moves" if kind == "move" else "submitted conclusions"
            raise click.ClickException(
                f"suite {suite!r}{f', agent {agent!r},' if agent else ''} has no {what} in this store"
            )
        sample = labels.sample_id(kind, suite, agent, size, seed)
        picked = labels.draw_sample(found, size, seed)
        recorded = labels.sample_answers(store, sample)
        version = len(recorded)
        done = labels.latest_answers(recorded)
        left = [it for it in picked if (labeller, it.key) not in done]
        trees: dict[str, Any] = {}
        _say(
            f"sample {sample}: {len(picked)} {kind}s of {len(found)} (seed {seed}); {labeller} has answered "
            f"{len(picked) - len(left)}, {len(left)} to go. ? for help."
        )
        answered = 0
        for n, it in enumerate(left, len(picked) - len(left) + 1):
            tree = trees.setdefault(it.tree_id, _tree(it.tree_id))
            screen, choices = (_move_screen if kind == "move" else _conclusion_screen)(it, tree)
            echo("\n" + "\n".join([f"-- {n}/{len(picked)} " + "-" * (WIDTH - 8 - len(f"{n}/{len(picked)}")), *screen]))
            answer = _ask(choices, HELP_MOVE if kind == "move" else HELP_CONCLUSION)
            if answer is None:
                break
            event = LabelRecorded(
                labeller=labeller, sample_id=sample, kind=kind, suite=suite, seed=seed, size=len(picked),
                stream_id=it.stream_id, position=it.position, answer=answer,
                item_id=it.key[2],
            )  # fmt: skip
            version = labels.keep_answer(store, event, version)
            answered += 1
        everything = labels.sample_answers(store, sample)
        total = sum(1 for who, _ in labels.latest_answers(everything) if who == labeller)
        echo("")
        _say(f"{answered} answers kept now; {labeller} has answered {total} of {len(picked)} in {sample}")
        for pair in labels.labeller_agreement(everything):
            if labeller in pair["labellers"] and pair["items"]:
                kappa = "-" if pair["kappa"] is None else f"{pair['kappa']:.2f}"
                _say(
                    f"agreement of {pair['labellers'][0]} and {pair['labellers'][1]} on the {pair['items']} items "
                    f"both answered: {100 * pair['agreement']:.0f}%, kappa {kappa}"
                )


def _tree(tree_id: str):
    from inquitree.core.game import resolve_tree

    return resolve_tree(tree_id)


def _move_screen(it, tree) -> tuple[list[str], dict[str, str]]:
    """The state and the candidates' texts, then the agent's reply: never the engine's decision."""
    lines = ["state: " + ("Topic (which subtopic does the reply move to?)" if it.state == "topic" else "Subtopic")]
    lines += ["topic:", *_wrapped(tree.topic)]
    if it.state == "topic":
        texts = {s.id: s.text for s in tree.subtopics}
        lines.append("candidates (subtopics):")
    else:
        sub = tree.subtopic[it.subtopic]
        texts = {st.id: st.text for st in sub.studies}
        lines += ["in the subtopic:", *_wrapped(sub.text), "candidates (its studies: does the reply propose it?):"]
    for cid in it.candidates:
        lines += _wrapped(f"[{cid}] {texts.get(cid, '')}")
    lines += ["the agent's reply:", *_wrapped(it.action or "(empty)")]
    choices = {cid.lower(): cid for cid in it.candidates} | {"none": "none", "n": "none"}
    return lines, choices


def _conclusion_screen(it, tree) -> tuple[list[str], dict[str, str]]:
    """The ground-truth finding beside the agent's submitted items: never a judge's verdict."""
    finding = next(c for c in tree.conclusions if c.id == it.item_id)
    lines = ["topic:", *_wrapped(tree.topic), "the finding:", *_wrapped(finding.text), "the agent's items:"]
    for k, text in enumerate(it.submitted, 1):
        lines += _wrapped(f"{k}. {text}")
    if not it.submitted:
        lines.append("  (none submitted)")
    choices = {w: w for w in ("stated", "partial", "absent")} | {"st": "stated", "p": "partial", "a": "absent"}
    return lines, choices


def _ask(choices: dict[str, str], help_text: str) -> str | None:
    """One answer: a choice, ``skip``, or None to stop (q, or the end of the input)."""
    while True:
        click.echo("answer: ", nl=False)
        line = sys.stdin.readline()
        if not line:
            click.echo("")
            return None
        said = line.strip().lower()
        if not sys.stdin.isatty():  # a scripted answer: shown after its prompt, as if typed
            from inquitree.boundary.text import printable

            click.echo(printable(line.strip(), one_line=True))
        if said in choices:
            return choices[said]
        if said in ("s", "skip"):
            return "skip"
        if said in ("q", "quit"):
            return None
        if said in ("?", "h", "help"):
            echo("\n".join(textwrap.wrap(help_text, WIDTH - 1)))
            continue
        from inquitree.boundary.text import shown

        echo(f"not an answer here: {shown(said, 40)} (? for help)")
