"""``inquitree play`` and ``inquitree replay`` (an episode's events are printed as ``cli/episodes.py``
prints them)."""

from __future__ import annotations

import sys

import click

from inquitree.cli.common import (
    KindOption,
    agent_config,
    agent_options,
    call_options,
    db_option,
    echo,
    episode_options,
    judge_config,
    judge_options,
    limit_options,
    secho,
    setup_of,
)
from inquitree.cli.episodes import episode_ref, interrupted_note, load_episode, print_scores, resumed_note, show_event
from inquitree.core.game import decided
from inquitree.events import (
    ConclusionSubmitted,
    DecisionParsed,
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
    Transitioned,
    TurnLimitReached,
    check_episode_id,
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
                self.parts.append(f"{verdict} {ev.best} ({decided(ev.best_cosine, ev.tau, ev.accepted, ev.rule, 2)})")
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
        elif isinstance(ev, EpisodeInterrupted):
            echo(f"  {interrupted_note(ev)}")
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


@click.command()
@click.option("--tree", "tree_ref", default="synthetic-chain-7", show_default=True, metavar="ID|PATH")
@click.option(
    "--agent",
    "agent_spec",
    default="oracle",
    show_default=True,
    cls=KindOption,
    role="agent",
)
@click.option(
    "--judge",
    "judge_spec",
    default="embedding",
    show_default=True,
    cls=KindOption,
    role="judge",
    extra=" | none",
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--randomness", "-a", default=0, show_default=True, type=int, help="Fake results with probability 10a%.")
@episode_options
@click.option(
    "--record/--no-record", default=False, help="Append every event to the store (default: nothing is written)."
)
@db_option
@agent_options
@judge_options
@call_options
@limit_options
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
    seed,
    randomness,
    record,
    db_url,
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
    from inquitree.core.game import resolve_tree
    from inquitree.core.run import EpisodeFailure, LimitError, Recording, new_episode_id, run_episode, stream_id
    from inquitree.events import EventStore, redact

    tree = resolve_tree(tree_ref)
    setup = setup_of(model_kw)
    params = setup.params(tree, randomness, seed)
    try:
        agent = setup.agent(agent_spec, tree, seed, agent_config(model_kw))
    except LimitError as exc:
        raise click.UsageError(f"--max-episode-cost: {exc}") from None
    judge = setup.judge(judge_spec, judge_config(model_kw))
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
        outcome = run_episode(setup, tree, params, agent, judge, Recording(store, episode_id, hook, resume))
    except KeyboardInterrupt:
        if store is None or not store.current_version(stream_id(episode_id)):
            echo("\ninterrupted (nothing was recorded)", err=True)
        else:
            echo(
                f"\ninterrupted: the steps taken are recorded in {redact(store.url)} as episode {episode_id}; "
                f"{resume_hint(episode_id)}",
                err=True,
            )
        sys.exit(130)
    except EpisodeFailure as exc:
        where = f"; what was played is recorded in {redact(store.url)}; {resume_hint(episode_id)}" if store else ""
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


def resume_command(episode_id: str) -> str:
    """The command that continues this episode, as a user can paste it: this one's words with the
    episode's id and ``--resume``, every secret they carried shown as ``***`` (a password or a key
    in a URL's user-info, path or query; a credential-like option or header value given with
    ``--agent-option`` or ``--judge-option``; a configured secret's value), with a word saying so."""
    import shlex

    from inquitree.core.calls import configured_secrets, parse_options, redact_text, redact_url, secret_values

    argv = sys.argv[1:]
    options: dict = {}
    urls = [w.split("=", 1)[-1] if w.startswith("--") else w for w in argv if "://" in w]
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if flag.endswith("-option") and flag.startswith("--"):
            text = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            try:
                options.update({f"{flag}:{k}": v for k, v in parse_options([text], flag).items()})
            except Exception:  # a malformed option was refused before any episode began
                continue
    secrets = secret_values(options) + tuple(s for u in urls for s in secret_values({}, u)) + configured_secrets()

    def shown(word: str) -> str:
        if "://" in word:  # a URL as typed unless it hides something (urlunsplit respells sqlite:////)
            flag, eq, value = word.partition("=")
            url = value if eq and flag.startswith("--") else word
            hidden = str(redact_url(url))
            if "***" in hidden:
                return f"{flag}={hidden}" if url is value else hidden
        return redact_text(word, secrets)

    words = ["inquitree", *(shown(w) for w in argv)]
    if not any(w == "--episode-id" or w.startswith("--episode-id=") for w in words):
        words += ["--episode-id", episode_id]
    if "--resume" not in words:
        words.append("--resume")
    return shlex.join(words)


def resume_hint(episode_id: str) -> str:
    """``this continues it: COMMAND``, saying so when some of its words had to be shown as ``***``."""
    command = resume_command(episode_id)
    hidden = "***" in command and "***" not in " ".join(sys.argv[1:])
    return f"this continues it{', once the secrets shown as *** are given again' if hidden else ''}: {command}"


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

    from inquitree.core.game import fold, resolve_tree
    from inquitree.core.run import resimulate, stream_id
    from inquitree.events import EventStore

    t0 = time.perf_counter()
    with EventStore(db_url, create=False) as store:
        episode_id = episode_ref(store, episode)
        events = load_episode(store, episode_id)
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
