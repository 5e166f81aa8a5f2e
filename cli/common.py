"""Options shared by several ``inquitree`` commands, defined once (the command modules import
them from here, never from the group's module ``cli.py``)."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import click

from inquitree.boundary.text import printable
from inquitree.events import KEY_ENV


class FiniteFloat(click.FloatRange):
    """A number option that refuses NaN and infinities, which pass any range check (``nan < 0`` and
    ``nan > 1`` are both false) and would reach a plan, a limit or a threshold as a number."""

    name = "number"

    def _describe_range(self) -> str:
        """No range to say when there is none (click's own says ``x<=None`` in every --help)."""
        return "" if self.min is None and self.max is None else super()._describe_range()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


FINITE = FiniteFloat()


def echo(message: object = None, **kw: Any) -> None:
    """``click.echo`` for anything a person reads on a terminal: model replies, tree text, error
    messages from endpoints and ids reach it with every control character escaped
    (``boundary.text.printable``), so none can clear the screen, retitle the window, hide a link
    or overwrite a line, on a terminal or through a pipe."""
    click.echo(None if message is None else printable(str(message)), **kw)


def screen_width() -> int:
    """The width a person's terminal shows (``$COLUMNS`` when set, 80 when unknown), kept within
    40-120: what notes, long lines and fitted tables wrap or fit to."""
    import shutil

    return max(40, min(shutil.get_terminal_size((80, 24)).columns, 120))


def say(message: str, err: bool = False) -> None:
    """:func:`echo` a sentence, on a terminal wrapped to :func:`screen_width` with its continuation lines
    indented; into a pipe or a file one line, for whatever reads it (grep, a log, a test)."""
    import sys
    import textwrap

    if (sys.stderr if err else sys.stdout).isatty():
        message = "\n".join(textwrap.wrap(message, screen_width(), subsequent_indent="  ", break_on_hyphens=False))
    echo(message, err=err)


def fitted(rows: Sequence[Sequence[str]], cut: tuple[int, ...] = (), indent: int = 0) -> tuple[list[str], list[str]]:
    """``rows`` (the first one the header) as aligned lines within the terminal's width: columns
    kept from the left while they fit, the columns in ``cut`` shortened with "…" (to 20 characters
    when the whole does not fit, and the last to the room left; an id is never cut), each line
    after ``indent`` spaces; returns the lines and the names of the columns left out."""
    import shutil

    width = max(40, shutil.get_terminal_size((80, 24)).columns) - indent  # a table may use a wide screen whole
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    if sum(widths) + 2 * (len(widths) - 1) > width:  # too wide: the cuttable columns first, before any is dropped
        widths = [min(w, max(len(rows[0][i]), 20)) if i in cut else w for i, w in enumerate(widths)]
    kept: list[tuple[int, int]] = []
    used = 0
    for i, w in enumerate(widths):
        gap = 2 if kept else 0
        if used + gap + w <= width:
            kept.append((i, w))
            used += gap + w
            continue
        room = width - used - gap
        if i in cut and room >= max(8, len(rows[0][i])):
            kept.append((i, room))
        break

    def cell(text: str, w: int) -> str:
        return text.ljust(w) if len(text) <= w else text[: w - 1] + "…"

    lines = [" " * indent + "  ".join(cell(r[i], w) for i, w in kept).rstrip() for r in rows]
    shown = {i for i, _ in kept}
    return lines, [rows[0][i] for i in range(len(widths)) if i not in shown]


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
    # one screen line: a longer one wraps, and the next rewrite clears only its last part
    click.echo(f"\r\033[K{printable(message)[: screen_width() - 1]}", err=True, nl=done)


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


class Progress:
    """How far a long run of ``total`` items has come, with an estimate of the time left. On a
    terminal: one line rewritten in place, at most once a second. Piped, under ``nohup`` or into a
    file (CI), where a rewritten line shows nothing: a full line on stderr at every tenth of the
    items and at least every ``every`` seconds, a background thread saying it while one item takes
    long, so that a log shows the run is alive and how much is left. The first update's count is
    where this run started (items a resumed run finds done do not speed up its estimate). A
    context manager."""

    def __init__(self, total: int, noun: str, every: float = 10.0):
        import sys
        import threading
        import time

        self.total, self.noun, self.every = total, noun, every
        self.done, self.extra = 0, ""
        self.base: int | None = None  # the count at the first update
        # the share of their work the items in flight have done (a campaign's cells): without it
        # the estimate grew while long cells ran, as if they were done one after the other
        self.in_flight: Callable[[], float] | None = None
        self.tty = sys.stderr.isatty()
        self.started = self.said = time.monotonic()
        self._tenths = 0
        self._due = progress_due()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = None if self.tty else threading.Thread(target=self._heartbeat, daemon=True)
        if self._beat is not None:
            self._beat.start()

    def line(self) -> str:
        """``12/96 cells (12%), 1 min 5 s, about 7 min 40 s left`` and the caller's extra words."""
        import time

        elapsed = time.monotonic() - self.started
        flying = min(self.in_flight(), max(0, self.total - self.done)) if self.in_flight is not None else 0.0
        now = self.done - (self.base or 0) + flying
        if now > 0 and self.total > self.done:
            left = f", about {_duration(elapsed / now * (self.total - self.done - flying))} left"
        else:
            left = "" if self.done >= self.total else ", estimating the time left"
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        return f"  {self.done}/{self.total} {self.noun}{share}, {_duration(elapsed)}{left}{self.extra}"

    def update(self, done: int, extra: str = "", total: int | None = None) -> None:
        import time

        with self._lock:
            self.done, self.extra = done, extra
            if self.base is None:
                self.base = done
            if total is not None:
                self.total = total
            last = done >= self.total
            if self.tty:
                if self._due(last):
                    progress(self.line(), done=last)
                return
            tenths = 10 * done // max(1, self.total)
            if tenths > self._tenths or last or time.monotonic() - self.said >= self.every:
                self._tenths = tenths
                self._say()

    def _say(self) -> None:
        import time

        self.said = time.monotonic()
        click.echo(printable(self.line()), err=True)

    def _heartbeat(self) -> None:
        import time

        while not self._stop.wait(min(1.0, self.every)):
            with self._lock:
                if self.base is not None and time.monotonic() - self.said >= self.every and self.done < self.total:
                    self._say()

    def close(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        progress_done()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _stack(*decorators: Callable) -> Callable:
    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def match_rule_option(name: str, help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The match rule a command plays, explains or measures with: the paper's (one cosine against
    tau) or the one fitted on real moves for the embedder (core/game/matching.py); its value
    reaches the command as ``match_rule``."""
    from inquitree.core.game import PAPER, RULES

    return click.option(name, "match_rule", type=click.Choice(list(RULES)), default=PAPER, show_default=True, help=help)


class KindOption(click.Option):
    """An option that names a kind of ``role`` (``agent``, ``judge``, ``embedder``): its help lists
    the registered kinds, a lab's plug-ins included, read when the help is shown rather than when
    the command starts (reading plug-ins imports their packages); ``extra`` is said after them."""

    def __init__(self, *args: Any, role: str, extra: str = "", **kwargs: Any):
        self.role, self.extra = role, extra
        super().__init__(*args, **kwargs)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from inquitree.core.players import spelled  # the players' room: when a help is shown

        self.help = spelled(self.role) + self.extra
        return super().get_help_record(ctx)


def episode_option(option) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The command-line option of one episode option (``core/run/spec.py``'s declaration): its
    flag, type, default and help from there; its value reaches the command under its name."""
    names = [option.flag, *([option.short] if option.short else []), option.name]
    shown = option.default is not None
    if option.kinds:
        return click.option(*names, default=option.default, show_default=shown, cls=KindOption, role=option.kinds)
    if option.choices:
        kind: Any = click.Choice(list(option.choices))
    elif option.kind is float:
        kind = FINITE
    elif option.kind is int:
        kind = int if option.least is None else click.IntRange(min=option.least)
    else:
        kind = str
    return click.option(
        *names,
        type=kind,
        default=option.default,
        show_default=shown,
        help=option.what[0].upper() + option.what[1:] + ".",
    )


def episode_options(f):
    """What an episode is played with (``EpisodeSetup``): every option of ``EPISODE_OPTIONS``, the
    embedder, the thresholds and match rule, the hint, turn and re-ask bounds, the templates;
    :func:`setup_of` reads them back."""
    from inquitree.core.run import EPISODE_OPTIONS

    return _stack(*(episode_option(o) for o in EPISODE_OPTIONS))(f)


def call_options(f):
    """How model calls are made (agent and judge alike): waiting, retries, reply size, cache.
    (The model-call module is imported here, by the commands that call models, not by this
    module: `episodes list` and the other commands that read the store do without it.)"""
    from inquitree.core.calls import (
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
            help="Price table for cost limits (default: $INQUITREE_PRICES, else ~/.config/inquitree/prices.json).",
        ),
    )(f)


def call_settings(
    kw: dict[str, Any],
    max_tokens: int | None,
    options: tuple[str, ...] = (),
    what: str = "",
    min_reply_chars: int = 0,
):
    """The call settings of :func:`call_options` (every command that calls a model builds them
    here, so none drops an option), with a command's reply length, request options (named by
    their flag ``what`` in an error) and smallest reply size."""
    from inquitree.core.calls import DEFAULT_CALL_LIMIT_S, CallSettings, parse_options

    return CallSettings(
        timeout=kw["timeout"],
        max_retries=kw["max_retries"],
        max_tokens=max_tokens,
        max_reply_chars=max(kw["max_reply_chars"], min_reply_chars),
        options=parse_options(options, what),
        stream=kw.get("stream", True),
        call_limit=kw.get("call_limit", DEFAULT_CALL_LIMIT_S),
        system_role=kw.get("system_role", "auto"),
    )


def agent_config(kw: dict[str, Any]):
    from inquitree.core.players import ModelConfig

    return ModelConfig(
        kw["base_url"],
        call_settings(kw, kw["max_tokens"], kw["agent_options"], "--agent-option"),
        kw["window"],
        kw["agent_label"],
        kw["call_cache"],
        kw["history_tokens"],
    )


def judge_config(kw: dict[str, Any]):
    from inquitree.core.players import ModelConfig

    return ModelConfig(
        kw["judge_base_url"],
        call_settings(kw, kw["judge_max_tokens"], kw["judge_options"], "--judge-option"),
        call_cache=kw["call_cache"],
    )


def setup_of(kw: dict[str, Any]):
    """The episode setup of :func:`episode_options` and :func:`limit_options` (``play``): their
    values leave ``kw``, the model options stay."""
    from inquitree.core.run import EPISODE_OPTIONS, EpisodeSetup, Limits, episode_values

    take = kw.pop
    return EpisodeSetup.of(
        episode_values({o.name: take(o.name) for o in EPISODE_OPTIONS}),
        limits=Limits(take("max_episode_tokens"), take("max_episode_cost"), take("max_episode_seconds")),
        prices=take("prices"),
    )


def output_file(path: str, data: str | bytes) -> None:
    """Write ``data`` to the ``--out`` file ``path``, with the folders it names made first (as
    ``report --out`` and ``--parquet`` make theirs), never through a link already at ``path``
    (``boundary/files.py``); a folder that cannot be made is the usual one-line error."""
    from pathlib import Path

    from inquitree.boundary.files import write_file

    parent = Path(path).expanduser().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.ClickException(f"--out {path}: cannot make the folder {parent}: {exc.strerror or exc}") from None
    write_file(Path(path).expanduser(), data)
