"""``inquitree play``, ``inquitree replay`` and ``inquitree episodes``."""

from __future__ import annotations

import sys
import textwrap

import click

from inquitree.cli.common import (
    agent_config,
    agent_options,
    call_options,
    db_option,
    echo,
    echo_data,
    judge_config,
    judge_options,
    key_option,
    limit_options,
    limits_of,
    output_file,
    progress,
    progress_due,
    secho,
)
from inquitree.core.run.spec import MAX_HINTS, MAX_REASKS
from inquitree.events.base import Event
from inquitree.events.errors import InquiTreeError
from inquitree.events.names import IMPORT_PREFIX, check_episode_id, episode_stream, install_extra, shown
from inquitree.events.types import (
    AgentReplied,
    ConclusionSubmitted,
    DecisionParsed,
    DependencyBlocked,
    EpisodeFailed,
    EpisodeResumed,
    EpisodeScored,
    EpisodeStarted,
    HintIssued,
    LimitReached,
    MatchScored,
    ObservationEmitted,
    ResultDrawn,
    Transitioned,
    TurnLimitReached,
)


def _wrap(text: str, indent: str = "    ") -> str:
    return "\n".join(
        textwrap.fill(line, 100, initial_indent=indent, subsequent_indent=indent) if line else ""
        for line in text.splitlines()
    )


def resumed_note(ev: EpisodeResumed) -> str:
    """What a resume says: after which step, why it had stopped, and which settings changed."""
    changed = [who for who, now in (("agent", ev.agent), ("judge", ev.judge)) if now is not None]
    why = f" (it had failed: {ev.after_error}; that failure no longer ends the episode)" if ev.after_error else ""
    note = f"; the {' and '.join(changed)} settings changed and are recorded" if changed else ""
    return f"resumed after step {ev.step}{why}{note}"


def show_event(ev: Event, engine_notes: bool = True) -> None:
    """The live transcript: what each side said, and (optionally) what the engine decided."""
    if isinstance(ev, ObservationEmitted):
        secho(f"\n[{ev.step}] ENVIRONMENT ({' + '.join(ev.templates)}) -> {ev.state}", fg="cyan", bold=True)
        echo(_wrap(ev.text))
    elif isinstance(ev, AgentReplied):
        secho(f"[{ev.step}] AGENT ({ev.state})", fg="green", bold=True)
        echo(_wrap(ev.raw))
    elif not engine_notes:
        return
    elif isinstance(ev, MatchScored) and ev.best is not None:
        secho(
            f"    engine: best match {ev.best} cos={ev.best_cosine:.3f} tau={ev.tau} "
            f"{'accepted' if ev.accepted else 'below tau'}",
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
    elif isinstance(ev, EpisodeResumed):
        secho(f"    engine: {resumed_note(ev)}", fg="yellow")
    elif isinstance(ev, LimitReached):
        secho(
            f"    engine: limit {ev.limit} reached ({ev.used:g} of {ev.threshold:g}): the episode ends here", fg="red"
        )


class StepLine:
    """One line per step, printed when the step's observation is emitted: the turn, the state,
    what the engine made of the reply (match, lock, hint level, fake draw, decision) and the turns
    left. For the human player (``for_human``) it says only what the player may know: the turn,
    the turns left and the hint level, never the hint's target or a fake draw."""

    def __init__(self, for_human: bool, max_turns: int = 0):
        """``max_turns``: the turn limit before the episode's start is seen (a resumed episode's
        start is not shown again: its turns used to read "turn 2 of 0")."""
        self.for_human = for_human
        self.max_turns = max_turns
        self.parts: list[str] = []
        self.asked = "topic"  # the state of the observation the reply answers

    def add(self, ev: Event) -> None:  # noqa: C901 - one branch an event type, as the line it prints
        if isinstance(ev, EpisodeStarted):
            self.max_turns = ev.params["max_turns"]
            echo(f"episode {ev.episode_id}: {ev.tree_id}, {ev.n_subtopics} subtopics, at most {self.max_turns} turns")
        elif isinstance(ev, MatchScored):
            if ev.best is None:
                self.parts.append("empty action")
            elif not self.for_human:
                verdict = "matched" if ev.accepted else "no match, best"
                self.parts.append(f"{verdict} {ev.best} ({ev.best_cosine:.2f} vs tau {ev.tau})")
        elif isinstance(ev, DependencyBlocked) and not self.for_human:
            self.parts.append(f"{ev.subtopic_id} locked")
        elif isinstance(ev, HintIssued):
            self.parts.append(f"hint level {ev.level}" + ("" if self.for_human else f" towards {ev.target}"))
        elif isinstance(ev, Transitioned):
            if ev.forced and not self.for_human:
                self.parts.append(f"forced to {ev.node or ev.to_state} ({ev.reason})")
        elif isinstance(ev, ResultDrawn) and not self.for_human:
            self.parts.append(f"result {ev.result_id}" + (f" FAKE #{ev.fake_index}" if ev.fake else ""))
        elif isinstance(ev, DecisionParsed):
            self.parts.append(ev.decision or "no decision: asked again")
        elif isinstance(ev, TurnLimitReached):
            self.parts.append("turn limit: conclusion asked for")
        elif isinstance(ev, LimitReached):
            echo(f"  limit {ev.limit} reached ({ev.used:g} of {ev.threshold:g}): the episode ends here")
        elif isinstance(ev, EpisodeFailed):
            echo(f"  episode failed [{ev.kind or ev.error_class or '?'}]: {ev.error}")
        elif isinstance(ev, EpisodeResumed):
            echo(f"  {resumed_note(ev)}")
        elif isinstance(ev, ObservationEmitted) and ev.step > 0:
            left = max(0, self.max_turns - ev.step)
            what = "; ".join(self.parts) or ev.state
            if self.for_human:
                level = ev.hidden.get("hint_level", 0)  # the level of the hint in this observation
                secho(f"  [turn {ev.step} of {self.max_turns}, {left} left, hint level {level}] {what}", fg="blue")
            else:
                echo(f"{ev.step:>4}/{self.max_turns} {self.asked:<10} {what}")
            self.parts = []
        if isinstance(ev, ObservationEmitted):
            self.asked = ev.state
        elif isinstance(ev, ConclusionSubmitted):
            echo(f"conclusion: {len(ev.items)} items")


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


@click.command()
@click.option("--tree", "tree_ref", default="synthetic-chain-7", show_default=True, metavar="ID|PATH")
@click.option(
    "--agent",
    "agent_spec",
    default="oracle",
    show_default=True,
    help="random | random-all (concludes only after visiting every subtopic) | oracle | human | script:FILE"
    " | openai:MODEL",
)
@click.option("--judge", "judge_spec", default="embedding", show_default=True, help="embedding | openai:MODEL | none")
@click.option("--embedder", "embedder_name", default="local", show_default=True, help="local | hash | openai[:MODEL]")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--randomness", "-a", default=0, show_default=True, type=int, help="Fake results with probability 10a%.")
@click.option("--tau", type=float, default=None, help="Match threshold (default: the embedder's, see README).")
@click.option(
    "--tau-study",
    type=float,
    default=None,
    help="Threshold at the Subtopic state, whose one candidate is the study (default: the embedder's study "
    "threshold when --tau is its default too, else --tau).",
)
@click.option("--max-hints", "-H", default=MAX_HINTS, show_default=True, type=int)
@click.option("--max-turns", type=click.IntRange(min=1), default=None, help="Default: n(2H+3).")
@click.option(
    "--max-reasks",
    type=click.IntRange(min=0),
    default=MAX_REASKS,
    show_default=True,
    help="C.4.2 re-asks in one Result visit; the next reply that names no decision ends the inquiry "
    "(the conclusion is asked for).",
)
@click.option(
    "--templates", "template_set", default="inquitree", show_default=True, help="Template set name or directory."
)
@click.option(
    "--record/--no-record", default=False, help="Append every event to the store (default: nothing is written)."
)
@db_option
@agent_options
@judge_options
@call_options
@limit_options
@click.option("--embedder-base-url", default=None, help="OpenAI-compatible base URL for the embedder.")
@click.option(
    "--episode-id",
    default=None,
    callback=lambda _ctx, _param, value: value if value is None else check_episode_id(value, "--episode-id"),
    help="Default: a new random id. Letters, digits and ._- (at most 180).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the recorded episode --episode-id (stopped by Ctrl-C or a failure) with the same options.",
)
@click.option(
    "--transcript",
    is_flag=True,
    help="Print the whole dialogue as it happens (default: one line per step; the human player always sees it).",
)
@click.option(
    "--engine-notes/--no-engine-notes",
    default=None,
    help="With --transcript: show matches, hints and fake draws (default: on, off for --agent human).",
)
@click.option("--quiet", "-q", is_flag=True, help="Only the final scores.")
def play(
    tree_ref,
    agent_spec,
    judge_spec,
    embedder_name,
    seed,
    randomness,
    tau,
    tau_study,
    max_hints,
    max_turns,
    max_reasks,
    template_set,
    record,
    db_url,
    embedder_base_url,
    episode_id,
    resume,
    transcript,
    engine_notes,
    quiet,
    **model_kw,
) -> None:
    """Play one episode, showing the dialogue live; end with the episode id and its scores.

    A failure of the agent, judge or embedder ends the episode with a recorded EpisodeFailed
    (exit 2); a reached limit ends it with LimitReached, and it is scored on what it reached."""
    from inquitree.core.game.prompts import TemplateSet
    from inquitree.core.game.tree import resolve_tree
    from inquitree.core.players import kinds
    from inquitree.core.players.agents import make_agent
    from inquitree.core.players.embed import make_embedder
    from inquitree.core.players.judges import make_judge
    from inquitree.core.run.runner import EpisodeFailure, new_episode_id, run_episode, stream_id
    from inquitree.core.run.spec import EpisodeSpec
    from inquitree.events.store import EventStore, redact

    tree = resolve_tree(tree_ref)
    templates = TemplateSet(template_set)
    embedder = make_embedder(embedder_name, base_url=embedder_base_url)
    spec = EpisodeSpec(tau, max_hints, max_turns, max_reasks, tau_study)
    params = spec.params(tree, embedder.id, templates, randomness, seed)
    limits, prices = limits_of(model_kw)
    agent = make_agent(agent_spec, tree, seed, templates.system_prompt, agent_config(model_kw))
    if (
        prices is not None
        and limits.episode_cost_usd
        and (model := kinds.parse("agent", agent_spec).model) is not None
        and not prices.has(model)
    ):
        raise click.UsageError(f"--max-episode-cost: {prices.path} has no price for {model!r}")
    judge = None if judge_spec == "none" else make_judge(judge_spec, embedder, judge_config(model_kw))
    if resume and not (record and episode_id):
        raise click.UsageError("--resume continues a recorded episode: give --record and its --episode-id")
    store = EventStore(db_url) if record else None
    recorded = store.current_version(stream_id(episode_id)) if store is not None and episode_id else 0
    if store is not None and bool(recorded) != resume:
        store.close()
        raise click.UsageError(
            f"episode {episode_id} is already recorded in {redact(store.url)}: choose another --episode-id, "
            "or add --resume to continue it"
            if recorded
            else f"--resume: no episode {episode_id} is recorded in {redact(store.url)}"
        )
    notes = engine_notes if engine_notes is not None else agent_spec != "human"
    episode_id = episode_id or new_episode_id()
    human = agent_spec == "human"
    if quiet:
        hook = None
    elif transcript or human:
        status = StepLine(for_human=human, max_turns=params.max_turns)

        def hook(ev: Event) -> None:
            show_event(ev, notes)
            if human:
                status.add(ev)
    else:
        hook = StepLine(for_human=False, max_turns=params.max_turns).add
    try:
        outcome = run_episode(
            tree,
            agent,
            judge,
            embedder,
            params,
            templates,
            store,
            episode_id,
            on_event=hook,
            resume=resume,
            limits=limits,
            prices=prices,
        )
    except KeyboardInterrupt:
        if store is None or not store.current_version(stream_id(episode_id)):
            echo("\ninterrupted (nothing was recorded)", err=True)
        else:
            echo(
                f"\ninterrupted: the steps taken are recorded in {redact(store.url)} as episode {episode_id}; "
                "the same command with --resume continues it",
                err=True,
            )
        sys.exit(130)
    except EpisodeFailure as exc:
        where = f"; what was played is recorded in {redact(store.url)}, and --resume continues it" if store else ""
        raise EpisodeFailure(
            f"{exc} (episode {episode_id} failed{where})", exc.episode_id, exc.retryable, exc.kind, exc.error_class
        ) from exc
    finally:
        if store is not None:
            store.close()  # signs the head (with a key) and folds SQLite's WAL into the file, here and not at exit
    print_scores(outcome.episode_id, outcome.scored)
    echo(
        f"  recorded in {store.url} as stream episode/{outcome.episode_id}"
        if store
        else "  not recorded (use --record to keep the events)"
    )


def _episode_ids(store, ref: str) -> str:
    from inquitree.core.run.runner import STREAM_PREFIX

    if ref == "last":
        streams = store.streams(prefix=STREAM_PREFIX)
        if not streams:
            raise InquiTreeError(f"no episodes in {store!r}")
        return max(streams, key=lambda s: s.last_recorded_at).stream_id.removeprefix(STREAM_PREFIX)
    return ref.removeprefix(STREAM_PREFIX)


def _load(store, episode_id: str) -> list[Event]:
    from inquitree.core.run.runner import stream_id

    recorded = store.read_stream(stream_id(episode_id))
    if not recorded:
        raise InquiTreeError(f"no episode {episode_id!r} in {store!r} (see `inquitree episodes list`)")
    return [r.event for r in recorded]


@click.command()
@click.argument("episode", default="last")
@db_option
@click.option("--quiet", "-q", is_flag=True, help="Print no step lines, only the scores and the checks.")
@click.option("--transcript", is_flag=True, help="Print the whole dialogue instead of one line per step.")
@click.option("--tree", "tree_ref", default=None, help="Use this tree file instead of the shipped tree of the same id.")
def replay(episode: str, db_url: str | None, quiet: bool, transcript: bool, tree_ref: str | None) -> None:
    """Fold EPISODE (an id, or `last`) into its steps, check its hash chain, and re-simulate it.

    Exit 0 when the re-simulation is identical, 1 at the first differing event."""
    import time

    from inquitree.core.game.engine import fold
    from inquitree.core.game.tree import resolve_tree
    from inquitree.core.run.replay import resimulate
    from inquitree.core.run.runner import stream_id
    from inquitree.events.store import EventStore

    t0 = time.perf_counter()
    with EventStore(db_url, create=False) as store:
        episode_id = _episode_ids(store, episode)
        events = _load(store, episode_id)
        chain = store.verify(stream_id=stream_id(episode_id))
    if transcript:
        for ev in events:
            show_event(ev, engine_notes=True)
    elif not quiet:
        lines = StepLine(for_human=False)
        for ev in events:
            lines.add(ev)
    state = fold(events)
    scored = [e for e in events if isinstance(e, EpisodeScored)]
    print_scores(episode_id, scored[-1] if scored else None)
    echo(f"  state {state.state}, {len(events)} events")
    if chain.first_problem is not None:
        stream, version, what = chain.first_problem
        echo(f"integrity: TAMPERED at version {version}: {what}")
        sys.exit(1)
    echo(f"integrity: ok ({chain.events_checked} hashes)")
    result = resimulate(events, resolve_tree(tree_ref) if tree_ref else None)
    elapsed = time.perf_counter() - t0
    if result.identical:
        echo(f"replay: identical ({result.events} events, {elapsed * 1000:.0f} ms)")
    else:
        echo(f"replay: DIFFERENT: {result.first_difference}")
        sys.exit(1)


@click.group()
def episodes() -> None:
    """Recorded episodes."""


@episodes.command("list")
@db_option
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Episodes to list.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True, help="Newest episodes to skip.")
def episodes_list(db_url: str | None, limit: int, offset: int) -> None:
    """One line per recorded episode, newest first, a page at a time: id, start time, tree, agent,
    seed, randomness, state, steps, coverage, q_norm and the judge that gave it (the latest score;
    an episode judged twice is scored once per judge: `inquitree query episode_summary`). Only the page's
    episodes are read, so a page takes the same time in a store of any size."""
    from inquitree.core.game.engine import STATE_AND_STEP_EVENTS, fold
    from inquitree.events.names import EPISODE_PREFIX as STREAM_PREFIX
    from inquitree.events.names import agent_name
    from inquitree.events.store import EventStore

    with EventStore(db_url, create=False) as store:
        echo("episode\tstarted\ttree\tagent\tseed\ta\tstate\tsteps\tcoverage\tq_norm\tjudge")
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
            echo(
                f"{s.stream_id.removeprefix(STREAM_PREFIX)}\t{s.first_recorded_at[:19]}\t"
                f"{start.tree_id if start else '?'}\t{agent}\t"
                f"{start.params['seed'] if start else '?'}\t{start.params['randomness'] if start else '?'}\t"
                f"{st.state}\t{st.step}\t{cov}\t{qn}\t{judge}"
            )


@episodes.command("show")
@click.argument("episode", default="last")
@db_option
def episodes_show(episode: str, db_url: str | None) -> None:
    """The transcript of one episode with the engine's notes and its scores."""
    from inquitree.events.store import EventStore

    with EventStore(db_url, create=False) as store:
        episode_id = _episode_ids(store, episode)
        events = _load(store, episode_id)
    for ev in events:
        show_event(ev, engine_notes=True)
    scored = [e for e in events if isinstance(e, EpisodeScored)]
    print_scores(episode_id, scored[-1] if scored else None)


@episodes.command("export")
@click.argument("episode", default="last")
@db_option
@click.option("--out", type=click.Path(dir_okay=False), default="-", help="File to write (default: stdout).")
@key_option(
    "A private key (`inquitree db keygen`) to sign the episode's head (default: $INQUITREE_SIGNING_KEY).",
    private=True,
)
def episodes_export(episode: str, db_url: str | None, out: str, key_path: str | None) -> None:
    """Write one episode's events as JSON lines, with their proof.

    Each line holds {"type", "version", "payload"} (the golden-log format) and the event's stored
    timestamp and hashes; with a key, a last line signs the episode's head, so that `episodes
    import --key PUBLIC_KEY` can show the file is the one recorded."""
    from inquitree.core.run.golden import dump_export
    from inquitree.core.run.runner import stream_id
    from inquitree.events.signing import load_signer
    from inquitree.events.store import EventStore, utc_now

    signer = load_signer(key_path) if key_path else None
    with EventStore(db_url, create=False) as store:
        episode_id = _episode_ids(store, episode)
        records = store.read_stream(stream_id(episode_id))
        if not records:  # as show, replay and to-inspect: an unknown id is an error, not an empty file
            raise InquiTreeError(f"no episode {episode_id!r} in {store!r} (see `inquitree episodes list`)")
    text = dump_export(records, signer, utc_now())
    if out == "-":
        echo_data(text, nl=False)
    else:
        with open(output_file(out), "w", encoding="utf-8") as f:
            f.write(text)
        signed = f", signed by key {signer.key_id}" if signer else ""
        echo(f"wrote {len(records)} events of {episode_id} to {out}{signed}", err=True)


@episodes.command("to-inspect")
@click.argument("episode_refs", metavar="[EPISODE]...", nargs=-1)
@db_option
@click.option("--suite", "suite_name", help="Every episode of this campaign (the suite's name).")
@click.option("--log-dir", default="logs", show_default=True, help="Where to write the logs (inspect view's default).")
def episodes_to_inspect(
    episode_refs: tuple[str, ...], db_url: str | None, suite_name: str | None, log_dir: str
) -> None:
    """Write recorded episodes as inspect_ai eval logs, for `inspect view --log-dir DIR`.

    One log per agent, shaped like a run of `inspect eval inquitree/research_tree`: a sample per
    tree and randomness level, its episodes as epochs, the dialogue as messages (the engine's
    notes on each reply), the recorded scores and inspect's metrics over them. EPISODE is an id
    or `last` (the default, without --suite). Needs `pip install 'inquitree[inspect]'`."""
    from inquitree.core.run.runner import STREAM_PREFIX
    from inquitree.events.store import EventStore

    try:
        from inquitree.core.inspect import export as inspect_export
    except ModuleNotFoundError as exc:
        raise InquiTreeError(f"inspect logs need inspect_ai: {install_extra('inspect')} ({exc})") from None
    with EventStore(db_url, create=False) as store:
        ids = [_episode_ids(store, ref) for ref in episode_refs]
        if suite_name is not None:
            from inquitree.events.names import episode_prefix

            prefix = STREAM_PREFIX + episode_prefix(suite_name)
            found = [s.stream_id.removeprefix(STREAM_PREFIX) for s in store.streams(prefix=prefix)]
            if not found:
                raise InquiTreeError(f"no episodes of suite {suite_name!r} in {store!r} (see `inquitree suite status`)")
            ids += found
        if not ids:
            ids = [_episode_ids(store, "last")]
        ids = list(dict.fromkeys(ids))  # an episode named twice is exported once
        due = progress_due()

        def read(n: int, total: int) -> None:
            if due(n == total):
                progress(f"  {n} of {total} episodes read", done=n == total)

        logs = inspect_export.eval_logs(store, ids, progress=read)
    progress(f"  writing {len(logs)} log(s)", done=True)
    for path in inspect_export.write_logs(logs, log_dir):
        echo(f"wrote {path}")
    echo(f"{len(ids)} episode(s) in {len(logs)} log(s); view them with: inspect view --log-dir {log_dir}")


@episodes.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@db_option
@key_option("The public key of whoever exported the file: its signature must verify with it.")
def episodes_import(path: str, db_url: str | None, key_path: str | None) -> None:
    """Append an exported episode (JSON lines) to the store as a new stream.

    A file that carries hashes is checked first: an edited file is refused, naming the first event
    that does not match; with --key its signature must verify (and a file without hashes or without
    a signature is refused). The episode keeps its timestamps and hashes, and its signature is kept
    in the store, so it stays provable where it is imported. The import is recorded beside it
    (``import/<episode>``: the file, its hashes, the key that signed it and the key that checked it),
    and this lab's own key ($INQUITREE_SIGNING_KEY) never signs the imported episode: `db verify
    --key` proves it only with the key of whoever signed it. An episode already in the store is
    left alone: importing the same events again does nothing, and a file that differs from the
    stored episode is refused."""
    import hashlib
    from pathlib import Path

    from inquitree.core.run.golden import MAX_IMPORT_BYTES, dump_jsonl, load_export
    from inquitree.events.signing import load_verifier
    from inquitree.events.store import EventStore
    from inquitree.events.types import EpisodeImported

    size = Path(path).stat().st_size
    if size > MAX_IMPORT_BYTES:
        raise InquiTreeError(
            f"{path}: {size:,} bytes is more than an export may hold ({MAX_IMPORT_BYTES:,}); nothing was imported"
        )
    exported = load_export(path)
    events = exported.events
    first = events[0]
    if not isinstance(first, EpisodeStarted):
        raise InquiTreeError(f"{path}: line 1 is a {first.TYPE} event: an episode starts with EpisodeStarted")
    sid = episode_stream(first.episode_id, where=f"{path}: line 1")
    verifier = load_verifier(key_path) if key_path else None
    established = exported.check(sid, verifier)
    record = EpisodeImported(
        episode_id=first.episode_id,
        file_name=shown(Path(path).name, 120).strip("'"),
        file_sha256=hashlib.sha256(Path(path).read_bytes()).hexdigest(),
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
