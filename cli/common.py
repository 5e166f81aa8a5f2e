"""Options shared by several ``inquitree`` commands, defined once (the command modules import
them from here, never from the group's module ``cli.py``)."""

from __future__ import annotations

import math
from typing import Any, Callable

import click

from inquitree.events.names import printable
from inquitree.events.signing import KEY_ENV


class FiniteFloat(click.FloatRange):
    """A number option that refuses NaN and infinities, which pass any range check (``nan < 0`` and
    ``nan > 1`` are both false) and would reach a plan, a limit or a threshold as a number."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


FINITE = FiniteFloat()


def echo(message: object = None, **kw: Any) -> None:
    """``click.echo`` for anything a person reads on a terminal: model replies, tree text, error
    messages from endpoints and ids reach it with every control character escaped
    (``events.names.printable``), so none can clear the screen, retitle the window, hide a link
    or overwrite a line, on a terminal or through a pipe."""
    click.echo(None if message is None else printable(str(message)), **kw)


def secho(message: object = None, **styles: Any) -> None:
    """``click.secho`` with the text escaped as :func:`echo` does, then styled."""
    click.secho(None if message is None else printable(str(message)), **styles)


def echo_data(text: str, **kw: Any) -> None:
    """Machine-readable output (JSON lines, CSV, JSON) as it is, byte for byte, except on a terminal,
    where a person reads it and it is escaped like everything else."""
    import sys

    click.echo(printable(text) if sys.stdout.isatty() else text, **kw)


AGENT_MAX_TOKENS = 1024
JUDGE_MAX_TOKENS = 512


def db_option(f):
    return click.option(
        "--db",
        "db_url",
        envvar="INQUITREE_DB",
        default=None,
        metavar="URL",
        help="Event store URL (default: $INQUITREE_DB or sqlite:///inquitree.sqlite).",
    )(f)


def key_option(help: str, *, private: bool = False, multiple: bool = False):
    """``--key FILE`` (as ``key_path``; ``key_paths``, a tuple, when ``multiple``): a key made by
    `inquitree db keygen`. A private key (for signing) defaults to ``$INQUITREE_SIGNING_KEY``; a
    public one (for checking) has no default."""
    return click.option(
        "--key",
        "key_paths" if multiple else "key_path",
        type=click.Path(dir_okay=False),
        envvar=KEY_ENV if private else None,
        default=None,
        multiple=multiple,
        help=help,
    )


def progress(message: str, done: bool = False) -> None:
    """A progress line on a terminal (rewritten in place), nothing when stderr is piped or a file."""
    import sys

    if not sys.stderr.isatty():
        return
    click.echo(f"\r\033[K{message}", err=True, nl=done)


def progress_done() -> None:
    """Clear the progress line (on a terminal), so that the next line starts on a clean one."""
    import sys

    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)


def progress_due(seconds: float = 1.0) -> Callable[[bool], bool]:
    """``due(last)``: whether a progress line is due now, at most once every ``seconds`` (the first
    at once, and the ``last`` always), so that a long run's lines stay cheap and readable."""
    import time

    shown = [-float("inf")]

    def due(last: bool = False) -> bool:
        now = time.monotonic()
        if last or now - shown[0] >= seconds:
            shown[0] = now
            return True
        return False

    return due


def _stack(*decorators: Callable) -> Callable:
    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def call_options(f):
    """How model calls are made (agent and judge alike): waiting, retries, reply size, cache.
    (The model-call module is imported here, by the commands that call models, not by this
    module: `episodes list` and the other commands that read the store do without it.)"""
    from inquitree.core.calls.models import (
        BACKOFF_CAP_S,
        DEFAULT_CALL_LIMIT_S,
        DEFAULT_MAX_REPLY_CHARS,
        DEFAULT_MAX_RETRIES,
        DEFAULT_TIMEOUT_S,
        CallSettings,
    )

    worst = CallSettings().worst_case_seconds()
    return _stack(
        click.option(
            "--timeout",
            type=FiniteFloat(min=0, min_open=True),
            default=DEFAULT_TIMEOUT_S,
            show_default=True,
            help="Seconds the endpoint may stay silent: before the first token and between tokens of a "
            "streamed answer, for the whole of one that is not streamed. A retry after a timeout waits twice "
            "as long as the attempt before it; an endpoint that never answers holds one call at most "
            f"timeout x (2^(max-retries + 1) - 1) + max-retries x {BACKOFF_CAP_S:g} s: {worst:g} s with the "
            "defaults.",
        ),
        click.option(
            "--call-limit",
            type=FiniteFloat(min=0, min_open=True),
            default=DEFAULT_CALL_LIMIT_S,
            show_default=True,
            help="Seconds a streamed answer may keep arriving (a CPU model's long reply); one still arriving "
            "then is kept as far as it got (finish reason call_limit).",
        ),
        click.option(
            "--system-role",
            type=click.Choice(["auto", "system", "user"]),
            default="auto",
            show_default=True,
            help="Where the system prompt goes: auto sends a system message and, when the endpoint says its chat "
            "template has none (Gemma's and others), the start of the first user message from then on (recorded "
            "in each reply); user always folds it in; system never does.",
        ),
        click.option(
            "--stream/--no-stream",
            default=True,
            show_default=True,
            help="Ask for answers as a stream, so a slow model is not cut off while its tokens arrive and a "
            "call given up on stops the server's work.",
        ),
        click.option(
            "--max-retries",
            type=click.IntRange(min=0),
            default=DEFAULT_MAX_RETRIES,
            show_default=True,
            help="Retries of a call that failed for a reason that may pass (timeout, 429, 5xx, bad body).",
        ),
        click.option(
            "--max-reply-chars",
            type=click.IntRange(min=1),
            default=DEFAULT_MAX_REPLY_CHARS,
            show_default=True,
            help="A longer reply is cut here; the cut is recorded.",
        ),
        click.option(
            "--call-cache",
            default=None,
            metavar="FILE",
            envvar="INQUITREE_CALL_CACHE",
            help="Reuse earlier answers to identical calls (same model, endpoint, options and messages) "
            "from this SQLite file, and keep new ones there. Off by default.",
        ),
    )(f)


def agent_options(f):
    """The model agent's endpoint, request options, label, memory window and length."""
    return _stack(
        click.option("--base-url", default=None, help="OpenAI-compatible base URL for the agent."),
        click.option(
            "--agent-option",
            "agent_options",
            multiple=True,
            metavar="KEY=VALUE",
            help="A request option for the agent's calls, e.g. reasoning_effort=high or top_p=0.9 "
            "(repeatable; unknown ones go in the request body).",
        ),
        click.option(
            "--agent-label",
            default=None,
            help="The agent's name in every query (default: the model, with its options: gpt-5@reasoning_effort=high).",
        ),
        click.option(
            "--window",
            type=click.IntRange(min=1),
            default=None,
            help="Turns of history the agent keeps beside the system prompt (default: all, DECISIONS #24).",
        ),
        click.option(
            "--history-tokens",
            type=click.IntRange(min=1),
            default=None,
            help="Most tokens (estimated: characters / 3) of the prompt the agent sends; the oldest turns go first. "
            "Without it, a call the endpoint refuses as too long is sent again with the history cut to fit.",
        ),
        click.option(
            "--max-tokens",
            type=click.IntRange(min=1),
            default=AGENT_MAX_TOKENS,
            show_default=True,
            help="Longest agent reply, in tokens (max_tokens of each call).",
        ),
    )(f)


def judge_options(f):
    return _stack(
        click.option("--judge-base-url", default=None, help="OpenAI-compatible base URL for the judge."),
        click.option(
            "--judge-option",
            "judge_options",
            multiple=True,
            metavar="KEY=VALUE",
            help="A request option for the judge's calls (repeatable).",
        ),
        click.option(
            "--judge-max-tokens",
            type=click.IntRange(min=1),
            default=JUDGE_MAX_TOKENS,
            show_default=True,
            help="Longest judge reply, in tokens.",
        ),
    )(f)


def limit_options(f):
    return _stack(
        click.option(
            "--max-episode-tokens",
            type=click.IntRange(min=1),
            default=None,
            help="End the episode before the call after its agent calls used this many tokens.",
        ),
        click.option(
            "--max-episode-cost",
            type=FiniteFloat(min=0, min_open=True),
            default=None,
            metavar="USD",
            help="End the episode once its agent calls cost this much (needs the model's price).",
        ),
        click.option(
            "--max-episode-seconds",
            type=FiniteFloat(min=0, min_open=True),
            default=None,
            help="End the episode after this much wall time.",
        ),
        click.option(
            "--prices",
            default=None,
            metavar="FILE",
            help="Price table for cost limits (default: $INQUITREE_PRICES or the shipped one).",
        ),
    )(f)


def _settings(kw: dict[str, Any], max_tokens: int | None, options: tuple[str, ...], what: str):
    from inquitree.core.calls.models import DEFAULT_CALL_LIMIT_S, CallSettings, parse_options

    return CallSettings(
        timeout=kw["timeout"],
        max_retries=kw["max_retries"],
        max_tokens=max_tokens,
        max_reply_chars=kw["max_reply_chars"],
        options=parse_options(options, what),
        stream=kw.get("stream", True),
        call_limit=kw.get("call_limit", DEFAULT_CALL_LIMIT_S),
        system_role=kw.get("system_role", "auto"),
    )


def agent_config(kw: dict[str, Any]):
    from inquitree.core.players.agents import ModelConfig

    return ModelConfig(
        kw["base_url"],
        _settings(kw, kw["max_tokens"], kw["agent_options"], "--agent-option"),
        kw["window"],
        kw["agent_label"],
        kw["call_cache"],
        kw["history_tokens"],
    )


def judge_config(kw: dict[str, Any]):
    from inquitree.core.players.agents import ModelConfig

    return ModelConfig(
        kw["judge_base_url"],
        _settings(kw, kw["judge_max_tokens"], kw["judge_options"], "--judge-option"),
        call_cache=kw["call_cache"],
    )


def limits_of(kw: dict[str, Any]):
    from inquitree.core.run.limits import Limits, PriceTable

    limits = Limits(kw["max_episode_tokens"], kw["max_episode_cost"], kw["max_episode_seconds"])
    prices = PriceTable(kw["prices"]) if (kw["prices"] or limits.episode_cost_usd) else None
    return limits, prices


def output_file(path: str, data: str | bytes) -> None:
    """Write ``data`` to the ``--out`` file ``path``, with the folders it names made first (as
    ``report --out`` and ``--parquet`` make theirs), never through a link already at ``path``
    (``events/outputs.py``); a folder that cannot be made is the usual one-line error."""
    from pathlib import Path

    from inquitree.events.outputs import write_file

    parent = Path(path).expanduser().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.ClickException(f"--out {path}: cannot make the folder {parent}: {exc.strerror or exc}") from None
    write_file(Path(path).expanduser(), data)
