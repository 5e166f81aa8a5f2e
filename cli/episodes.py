"""``inquitree episodes``: list, show, export, import and hand recorded episodes to inspect, and
how an episode's events are printed on a terminal (``show_event``, ``print_scores``, which
``play`` and ``replay`` print with too). A module of its own so that `episodes list`, which a
researcher runs often, imports the store and the fold but none of what playing an episode
needs (the model-call options, the run settings)."""

from __future__ import annotations

import textwrap

import click

from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.text import install_extra, shown
from inquitree.cli.common import (
    db_option,
    echo,
    echo_data,
    fitted,
    key_option,
    output_file,
    progress,
    progress_due,
    say,
    secho,
)
from inquitree.core.game import decided
from inquitree.events import (
    IMPORT_PREFIX,
    AgentReplied,
    DependencyBlocked,
    EpisodeFailed,
    EpisodeInterrupted,
    EpisodeResumed,
    EpisodeScored,
    EpisodeStarted,
    Event,
    HintIssued,
    LimitReached,
    MatchScored,
    ObservationEmitted,
    ResultDrawn,
    TurnLimitReached,
    episode_stream,
)


def _wrap(text: str, indent: str = "    ") -> str:
    return "\n".join(
        textwrap.fill(line, 100, initial_indent=indent, subsequent_indent=indent) if line else ""
        for line in text.splitlines()
    )


def resumed_note(ev: EpisodeResumed) -> str:
    """What a resume says: after which step, why it had stopped, and which settings changed."""
    changed = [who for who, now in (("agent", ev.agent), ("judge", ev.judge)) if now is not None]
    if ev.after_error.startswith("interrupted ("):
        why = f" (it had been {ev.after_error})"
    elif ev.after_error:
        why = f" (it had failed: {ev.after_error}; that failure no longer ends the episode)"
    else:
        why = ""
    note = f"; the {' and '.join(changed)} settings changed and are recorded" if changed else ""
    return f"resumed after step {ev.step}{why}{note}"


def interrupted_note(ev: EpisodeInterrupted) -> str:
    by = "Ctrl-C" if ev.reason == "interrupt" else ev.reason
    return f"interrupted by {by} after step {ev.step} ({ev.during}); its steps are kept, and a resume continues it"


def show_event(ev: Event, engine_notes: bool = True) -> None:
    """The live transcript: what each side said, and (optionally) what the engine decided."""
    if isinstance(ev, ObservationEmitted):
        secho(f"\n[{ev.step}] ENVIRONMENT ({' + '.join(ev.templates)}) -> {ev.state}", fg="cyan", bold=True)
        echo(_wrap(ev.text))
    elif isinstance(ev, AgentReplied):
        if ev.reasoning:  # a reasoning model's thinking, shown apart: the engine read only the answer below
            secho(f"[{ev.step}] AGENT'S REASONING ({len(ev.reasoning):,} characters)", fg="green", dim=True)
            secho(_wrap(ev.reasoning), dim=True)
        secho(f"[{ev.step}] AGENT ({ev.state})", fg="green", bold=True)
        echo(_wrap(ev.raw))
    elif not engine_notes:
        return
    elif isinstance(ev, MatchScored) and ev.best is not None:
        secho(
            f"    engine: best match {ev.best} {decided(ev.best_cosine, ev.tau, ev.accepted, ev.rule)}",
            fg="yellow",
        )
    elif isinstance(ev, DependencyBlocked):
        secho(f"    engine: {ev.subtopic_id} is locked (needs {', '.join(ev.missing)})", fg="yellow")
    elif isinstance(ev, HintIssued):
        secho(f"    engine: hint level {ev.level}{' (final)' if ev.final else ''} towards {ev.target}", fg="yellow")
    elif isinstance(ev, ResultDrawn):
        secho(
            f"    engine: result {ev.result_id}: draw {ev.draw:.3f} vs p={ev.probability:.1f} -> "
            f"{'FAKE #' + str(ev.fake_index) if ev.fake else 'true'}",
            fg="yellow",
        )
    elif isinstance(ev, TurnLimitReached):
        secho(f"    engine: turn limit {ev.max_turns} reached", fg="red")
    elif isinstance(ev, EpisodeFailed):
        secho(f"    engine: episode failed [{ev.kind or ev.error_class or '?'}]: {ev.error}", fg="red")
    elif isinstance(ev, EpisodeInterrupted):
        secho(f"    engine: {interrupted_note(ev)}", fg="red")
    elif isinstance(ev, EpisodeResumed):
        secho(f"    engine: {resumed_note(ev)}", fg="yellow")
    elif isinstance(ev, LimitReached):
        secho(
            f"    engine: limit {ev.limit} reached ({ev.used:g} of {ev.threshold:g}): the episode ends here", fg="red"
        )


def print_scores(episode_id: str, scored: EpisodeScored | None) -> None:
    secho(f"\nepisode {episode_id}", bold=True)
    if scored is None:
        echo("  not scored (no judge)")
        return
    q = (
        "n/a (judge error)"
        if scored.q_sum is None
        else f"{scored.q_sum:.3f} (q_norm {scored.q_norm:.3f}, k={scored.k})"
    )
    echo(f"  coverage {scored.coverage:.3f}   Q {q}   judge {scored.judge_id}")
    echo(
        f"  steps {scored.steps} within [3n, n(2H+3)] = [{scored.lower_bound}, {scored.upper_bound}]: "
        f"{'yes' if scored.within_bounds else 'no'}   hints {scored.hints_issued}   forced {scored.forced_transitions}"
    )


def episode_ref(store, ref: str) -> str:
    """The episode id a command line names: ``last`` (the latest recorded), an id, or its stream."""
    from inquitree.core.run import STREAM_PREFIX

    if ref == "last":
        streams = store.streams(prefix=STREAM_PREFIX)
        if not streams:
            raise InquiTreeError(f"no episodes in {store!r}")
        return max(streams, key=lambda s: s.last_recorded_at).stream_id.removeprefix(STREAM_PREFIX)
    return ref.removeprefix(STREAM_PREFIX)


def load_episode(store, episode_id: str) -> list[Event]:
    """Every event of an episode; an unknown id is an error, not an empty episode."""
    from inquitree.core.run import stream_id

    recorded = store.read_stream(stream_id(episode_id))
    if not recorded:
        raise InquiTreeError(f"no episode {episode_id!r} in {store!r} (see `inquitree episodes list`)")
    return [r.event for r in recorded]


@click.group()
def episodes() -> None:
    """Recorded episodes."""


@episodes.command("list")
@db_option
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Episodes to list.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True, help="Newest episodes to skip.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "tsv"]),
    default=None,
    help="table: aligned columns that fit the terminal, what does not fit named; tsv: tab-separated, every "
    "column. Default: table on a terminal, tsv into a pipe or a file.",
)
def episodes_list(db_url: str | None, limit: int, offset: int, fmt: str | None) -> None:
    """One line per recorded episode, newest first, a page at a time: id, start time, tree, agent,
    seed, randomness, state, steps, coverage, q_norm and the judge that gave it (the latest score;
    an episode judged twice is scored once per judge: `inquitree query episode_summary`). Only the page's
    episodes are read, so a page takes the same time in a store of any size."""
    import sys

    from inquitree.core.game import STATE_AND_STEP_EVENTS, fold
    from inquitree.events import EPISODE_PREFIX as STREAM_PREFIX
    from inquitree.events import EventStore, agent_name

    rows: list[tuple[str, ...]] = [
        ("episode", "started", "tree", "agent", "seed", "a", "state", "steps", "coverage", "q_norm", "judge")
    ]
    with EventStore(db_url, create=False) as store:
        page = store.newest_streams(STREAM_PREFIX, limit + 1, offset)
        if len(page) > limit:
            page = page[:limit]
            echo(
                f"(episodes {offset + 1}-{offset + limit}, newest first; --offset {offset + limit} for older ones)",
                err=True,
            )
        # only the events that decide what a line shows: not the observations, matches and verdicts
        shown_types = (*STATE_AND_STEP_EVENTS, EpisodeScored.TYPE)
        read = store.read_streams([s.stream_id for s in page], shown_types)
        for s in page:
            events = [r.event for r in read[s.stream_id]]
            start = events[0] if events and isinstance(events[0], EpisodeStarted) else None
            st = fold(events)
            scored = [e for e in events if isinstance(e, EpisodeScored)]
            cov = f"{scored[-1].coverage:.3f}" if scored else "-"
            qn = f"{scored[-1].q_norm:.3f}" if scored and scored[-1].q_norm is not None else "-"
            judge = scored[-1].judge_id if scored else "-"
            agent = agent_name(start.agent) if start else "?"
            rows.append(
                (
                    s.stream_id.removeprefix(STREAM_PREFIX),
                    s.first_recorded_at[:19],
                    start.tree_id if start else "?",
                    agent,
                    str(start.params["seed"]) if start else "?",
                    str(start.params["randomness"]) if start else "?",
                    st.state,
                    str(st.step),
                    cov,
                    qn,
                    judge,
                )
            )
    if (fmt or ("table" if sys.stdout.isatty() else "tsv")) == "tsv":
        for row in rows:
            echo("\t".join(row))
        return
    # A person's order: who, then the score beside the judge that gave it, then the rest.
    order = [0, 2, 3, 5, 9, 10, 8, 7, 6, 4, 1]
    rows = [tuple(row[i] for i in order) for row in rows]
    lines, left_out = fitted(rows, cut=(1, 2, 5))
    if len(left_out) > len(rows[0]) // 2:  # long ids (a campaign's): each on a line of its own, the rest below it
        lines, left_out = fitted([r[1:] for r in rows], cut=(0, 1, 4), indent=2)
        lines = [lines[0]] + [line for row, rest in zip(rows[1:], lines[1:], strict=True) for line in (row[0], rest)]
    for line in lines:
        echo(line)
    if left_out:
        say(
            f"{len(left_out)} more column(s) do not fit: {', '.join(left_out)} (--format tsv gives every one)", err=True
        )


@episodes.command("show")
@click.argument("episode", default="last")
@db_option
def episodes_show(episode: str, db_url: str | None) -> None:
    """The transcript of one episode with the engine's notes and its scores."""
    from inquitree.events import EventStore

    with EventStore(db_url, create=False) as store:
        episode_id = episode_ref(store, episode)
        events = load_episode(store, episode_id)
    for ev in events:
        show_event(ev, engine_notes=True)
    scored = [e for e in events if isinstance(e, EpisodeScored)]
    print_scores(episode_id, scored[-1] if scored else None)


@episodes.command("export")
@click.argument("episode", default="last")
@db_option
@click.option("--out", type=click.Path(dir_okay=False), default="-", help="File to write (default: stdout).")
@click.option(
    "--suite",
    "suite_name",
    help="Every episode of this campaign (the suite's name), in one file; EPISODE is not given.",
)
@key_option(
    "A private key (`inquitree db keygen`) to sign the episode's head (default: $INQUITREE_SIGNING_KEY).",
    private=True,
)
def episodes_export(episode: str, db_url: str | None, out: str, suite_name: str | None, key_path: str | None) -> None:
    """Write one episode's events as JSON lines, with their proof.

    Each line holds {"type", "version", "payload"} (the golden-log format) and the event's stored
    timestamp and hashes; with a key, a last line signs the episode's head, so that `episodes
    import --key PUBLIC_KEY` can show the file is the one recorded. With --suite, every episode of
    the campaign in one file, each signed, and a last line that lists their heads, signed too, so
    that an episode left out of the file is seen on import."""
    from inquitree.core.run import STREAM_PREFIX, dump_campaign, dump_export, stream_id
    from inquitree.events import EventStore, episode_prefix, load_signer, utc_now

    signer = load_signer(key_path) if key_path else None
    with EventStore(db_url, create=False) as store:
        if suite_name is not None:
            if episode != "last":
                raise click.UsageError("give EPISODE or --suite NAME, not both")
            streams = [s.stream_id for s in store.streams(STREAM_PREFIX + episode_prefix(suite_name))]
            if not streams:
                raise InquiTreeError(
                    f"no episode of campaign {suite_name!r} in {store!r} (see `inquitree episodes list`)"
                )
            found = [store.read_stream(sid) for sid in streams]
            what, text = (
                f"{len(found)} episodes of campaign {suite_name}",
                dump_campaign(suite_name, found, signer, utc_now()),
            )
            count = sum(len(r) for r in found)
        else:
            episode_id = episode_ref(store, episode)
            records = store.read_stream(stream_id(episode_id))
            if not records:  # as show, replay and to-inspect: an unknown id is an error, not an empty file
                raise InquiTreeError(f"no episode {episode_id!r} in {store!r} (see `inquitree episodes list`)")
            what, text, count = episode_id, dump_export(records, signer, utc_now()), len(records)
    if out == "-":
        echo_data(text, nl=False)
    else:
        output_file(out, text)
        signed = f", signed by key {signer.key_id}" if signer else ""
        echo(f"wrote {count} events of {what} to {out}{signed}", err=True)


@episodes.command("to-inspect")
@click.argument("episode_refs", metavar="[EPISODE]...", nargs=-1)
@db_option
@click.option("--suite", "suite_name", help="Every episode of this campaign (the suite's name).")
@click.option(
    "--out",
    "--log-dir",
    "log_dir",
    default="logs",
    show_default=True,
    help="The folder to write the logs into, as every writer's --out (--log-dir, inspect's name, works too; "
    "logs is inspect view's default).",
)
def episodes_to_inspect(
    episode_refs: tuple[str, ...], db_url: str | None, suite_name: str | None, log_dir: str
) -> None:
    """Write recorded episodes as inspect_ai eval logs, for `inspect view --log-dir DIR`.

    One log per agent, shaped like a run of `inspect eval inquitree/research_tree`: a sample per
    tree and randomness level, its episodes as epochs, the dialogue as messages (the engine's
    notes on each reply), the recorded scores and inspect's metrics over them. EPISODE is an id
    or `last` (the default, without --suite). Needs `pip install 'inquitree[inspect]'`."""
    from inquitree.core.run import STREAM_PREFIX
    from inquitree.events import EventStore

    try:
        from inquitree.core.inspect import eval_logs, write_logs
    except ModuleNotFoundError as exc:
        raise InquiTreeError(f"inspect logs need inspect_ai: {install_extra('inspect')} ({exc})") from None
    with EventStore(db_url, create=False) as store:
        ids = [episode_ref(store, ref) for ref in episode_refs]
        if suite_name is not None:
            from inquitree.events import episode_prefix

            prefix = STREAM_PREFIX + episode_prefix(suite_name)
            found = [s.stream_id.removeprefix(STREAM_PREFIX) for s in store.streams(prefix=prefix)]
            if not found:
                raise InquiTreeError(f"no episodes of suite {suite_name!r} in {store!r} (see `inquitree suite status`)")
            ids += found
        if not ids:
            ids = [episode_ref(store, "last")]
        ids = list(dict.fromkeys(ids))  # an episode named twice is exported once
        due = progress_due()

        def read(n: int, total: int) -> None:
            if due(n == total):
                progress(f"  {n} of {total} episodes read", done=n == total)

        logs = eval_logs(store, ids, progress=read)
    progress(f"  writing {len(logs)} log(s)", done=True)
    for path in write_logs(logs, log_dir):
        echo(f"wrote {path}")
    echo(f"{len(ids)} episode(s) in {len(logs)} log(s); view them with: inspect view --log-dir {log_dir}")


@episodes.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@db_option
@key_option("The public key of whoever exported the files: each signature must verify with it.")
def episodes_import(paths: tuple[str, ...], db_url: str | None, key_path: str | None) -> None:
    """Append exported episodes (JSON lines, one file an episode) to the store, each as a new stream.
    Files are imported in the order given; the first that is refused stops the command, and the
    ones before it stay imported (importing them again does nothing).

    A file that carries hashes is checked first: an edited file is refused, naming the first event
    that does not match; with --key its signature must verify (and a file without hashes or without
    a signature is refused). The episode keeps its timestamps and hashes, and its signature is kept
    in the store, so it stays provable where it is imported. The import is recorded beside it
    (``import/<episode>``: the file, its hashes, the key that signed it and the key that checked it),
    and this lab's own key ($INQUITREE_SIGNING_KEY) never signs the imported episode: `db verify
    --key` proves it only with the key of whoever signed it. An episode already in the store is
    left alone: importing the same events again does nothing, and a file that differs from the
    stored episode is refused."""
    from inquitree.events import load_verifier

    verifier = load_verifier(key_path) if key_path else None
    for path in paths:
        _import_one(path, db_url, verifier)
    if len(paths) > 1:
        echo(f"{len(paths)} files imported")


def _import_one(path: str, db_url: str | None, verifier) -> None:
    """One exported file into the store: an episode, or a campaign's episodes (see ``episodes
    import``); a campaign's list of episodes is checked against the episodes the file holds before
    any is imported."""
    from inquitree.boundary.files import read_file
    from inquitree.core.run import MAX_CAMPAIGN_BYTES, MAX_IMPORT_BYTES, check_manifest, load_export, split_campaign

    data = read_file(path, MAX_CAMPAIGN_BYTES, what="the export")  # once: what is hashed is what is imported
    sections, manifest = split_campaign(path, data)
    if manifest is None:
        if len(data) > MAX_IMPORT_BYTES:
            raise InquiTreeError(f"{path}: {len(data):,} bytes, over the limit of {MAX_IMPORT_BYTES:,}; refused")
        _import_episode(path, data, load_export(path, data), db_url, verifier)
        return
    exports = []
    for k, section in enumerate(sections, 1):
        where = f"{path} (episode {k} of {len(sections)})"
        if len(section) > MAX_IMPORT_BYTES:
            raise InquiTreeError(f"{where}: {len(section):,} bytes, over the limit of {MAX_IMPORT_BYTES:,}; refused")
        exports.append((where, section, load_export(where, section)))
    heads = [
        (episode_stream(ex.events[0].episode_id, where=where), ex.rows[-1]["stream_version"], ex.rows[-1]["hash"])
        if ex.rows and isinstance(ex.events[0], EpisodeStarted)
        else (where, 0, "")
        for where, _, ex in exports
    ]
    for sentence in check_manifest(path, manifest, heads, verifier):
        echo(f"{path}: {sentence}")
    for where, section, ex in exports:
        _import_episode(where, section, ex, db_url, verifier)


def _import_episode(path: str, data: bytes, exported, db_url: str | None, verifier) -> None:
    """One exported episode (``data``, read back as ``exported``) into the store."""
    import hashlib
    from pathlib import Path

    from inquitree.core.run import dump_jsonl
    from inquitree.events import EpisodeImported, EventStore

    events = exported.events
    first = events[0]
    if not isinstance(first, EpisodeStarted):
        raise InquiTreeError(f"{path}: line 1 is a {first.TYPE} event: an episode starts with EpisodeStarted")
    sid = episode_stream(first.episode_id, where=f"{path}: line 1")
    established = exported.check(sid, verifier)
    record = EpisodeImported(
        episode_id=first.episode_id,
        file_name=shown(Path(path).name, 120).strip("'"),
        file_sha256=hashlib.sha256(data).hexdigest(),
        events=len(events),
        hashes=exported.rows is not None,
        signed_by=str(exported.signature.get("key_id")) if exported.signature else None,
        checked_with=verifier.key_id if verifier is not None and exported.signature else None,
    )
    # No signer for the episode: the lab's key vouches only for what this lab recorded, so the
    # episode is proved only by the key that exported it. The record of the import is the lab's
    # own act, appended (and signed, with $INQUITREE_SIGNING_KEY) by a store that holds the key.
    with EventStore(db_url, signer=None) as store:
        stored = [r.event for r in store.read_stream(sid)]
        if stored:
            if dump_jsonl(stored) == dump_jsonl(events):
                echo(f"{sid} is already in the store with the same {len(events)} events: nothing to do")
                return
            raise InquiTreeError(
                f"{path}: episode {first.episode_id} is already in {store!r} with other content "
                f"({len(stored)} events stored, {len(events)} in the file); import it into another store"
            )
        if exported.rows is None:
            store.append(sid, events, 0)
        else:
            store.append_exported(sid, exported.rows)
        if exported.signature is not None:
            store.add_signature(exported.signature, note=f"imported from {record.file_name}")
    with EventStore(db_url) as store:
        store.append(IMPORT_PREFIX + first.episode_id, [record], 0)
    for sentence in established:
        echo(f"{path}: {sentence}")
    echo(f"imported {len(events)} events as {sid}")
