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


def labeller_name(given: str | None) -> str:
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

    _run(db_url, "move", suite, agent, size, seed, labeller_name(labeller))


@label.command()
@_sample_options
def conclusions(db_url, suite, agent, size, seed, labeller) -> None:
    """Read a sample of (episode, ground-truth finding) pairs: did the agent's submitted items state
    the finding? Stratified by agent; answers are appended as LabelRecorded."""

    _run(db_url, "conclusion", suite, agent, size, seed, labeller_name(labeller))


def _run(db_url, kind, suite, agent, size, seed, labeller) -> None:
    from inquitree.core import instrument as labels
    from inquitree.events import EventStore

    with EventStore(db_url, create=False) as store:
        try:
            run = labels.LabelSession(store, kind, suite, agent, size, seed, labeller)
        except labels.LabelError as exc:
            raise click.ClickException(str(exc)) from None
        left, total = run.left(), len(run.items)
        _say(
            f"sample {run.sample}: {total} {kind}s of {run.available} (seed {seed}); {labeller} has answered "
            f"{total - len(left)}, {len(left)} to go. ? for help."
        )
        answered = 0
        for n, it in left:
            shown = run.screen_of(it)
            rule = f"-- {n}/{total} " + "-" * (WIDTH - 8 - len(f"{n}/{total}"))
            echo("\n" + "\n".join([rule, *_lines(shown)]))
            answer = _ask(shown.aliases, HELP_MOVE if kind == "move" else HELP_CONCLUSION)
            if answer is None:
                break
            run.keep(it, answer)
            answered += 1
        echo("")
        _say(f"{answered} answers kept now; {labeller} has answered {len(run.answered())} of {total} in {run.sample}")
        for pair in run.agreement():
            kappa = "-" if pair["kappa"] is None else f"{pair['kappa']:.2f}"
            _say(
                f"agreement of {pair['labellers'][0]} and {pair['labellers'][1]} on the {pair['items']} items "
                f"both answered: {100 * pair['agreement']:.0f}%, kappa {kappa}"
            )


def _lines(shown) -> list[str]:
    """A screen as the terminal shows it: each heading, then its texts wrapped and indented."""
    out = []
    for heading, texts in shown.sections:
        if heading == "state":
            out.append(f"state: {texts[0]}")
            continue
        out.append(f"{heading}:")
        for text in texts:
            out += _wrapped(text)
    return out


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
