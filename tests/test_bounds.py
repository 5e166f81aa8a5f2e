"""Bounded by design: what an endpoint or a file chooses to send cannot make InquiTree hold
unbounded memory or time (docs/SECURITY.md, "What the other side may choose"). Each case is sent by
a real HTTP server on loopback or planted as a real file, and the outcome asserted: one error line,
in bounded time and memory, or the text kept to its documented size with the cut said."""

from __future__ import annotations

import os
import resource
import time

import pytest

from inquitree.core.calls.chat_http import MAX_LINE_BYTES
from inquitree.core.calls.models import ChatModel, kept_reasoning
from inquitree.core.calls.settings import MAX_REASONING_CHARS, CallSettings, ModelCallError

from openai_server import OpenAICompatibleServer

MESSAGES = [{"role": "user", "content": "go"}]
ANSWER = "THOUGHT: t\nACTION: something"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("fault", ["line_without_end", "comment_without_end"])
def test_a_streamed_line_is_read_to_its_limit_and_no_further(fault):
    """An event line or a comment line without a newline was read whole (2.0 GB in 5 s, then
    MemoryError): it is read to MAX_LINE_BYTES and the call ends with one error, not retried."""
    with OpenAICompatibleServer([ANSWER]) as server:
        server.streams = True
        server.faults = [fault]
        chat = ChatModel("m", server.base_url, settings=CallSettings(max_retries=0, timeout=30))
        before, t0 = _rss_mb(), time.monotonic()
        with pytest.raises(ModelCallError) as err:
            chat.chat(MESSAGES)
    assert err.value.kind == "too_large" and not err.value.retryable
    assert f"longer than {MAX_LINE_BYTES:,} bytes" in str(err.value)
    assert time.monotonic() - t0 < 20 and _rss_mb() - before < 200


def test_an_endless_answer_that_is_not_streamed_is_read_to_its_limit():
    """A 200 whose body never ends was read whole before the character cut (1.5 GB)."""
    with OpenAICompatibleServer([ANSWER]) as server:
        server.faults = ["endless_body"]
        chat = ChatModel("m", server.base_url, settings=CallSettings(max_retries=0, timeout=30, stream=False))
        before = _rss_mb()
        with pytest.raises(ModelCallError) as err:
            chat.chat(MESSAGES)
    assert err.value.kind == "too_large" and "the answer is longer than" in str(err.value)
    assert _rss_mb() - before < 200


def test_events_with_no_token_do_not_keep_a_streamed_call_alive():
    """Role-only deltas every half second kept a call alive to --call-limit (900 s) against
    --timeout 5: only a token moves the deadline, so the call ends at its timeout."""
    with OpenAICompatibleServer([ANSWER]) as server:
        server.streams = True
        server.faults = ["role_only"]
        chat = ChatModel("m", server.base_url, settings=CallSettings(max_retries=0, timeout=1.5, call_limit=60))
        t0 = time.monotonic()
        with pytest.raises(ModelCallError) as err:
            chat.chat(MESSAGES)
    assert err.value.kind == "timeout" and "no token for 1.5 s" in str(err.value)
    assert time.monotonic() - t0 < 10


def test_streamed_reasoning_is_kept_to_its_limit_and_the_cut_is_said():
    """Reasoning deltas were not counted by any limit (3.8 GB in 10 s): what is kept stops at
    MAX_REASONING_CHARS while the call runs to its call limit, then fails as a reply with no answer."""
    with OpenAICompatibleServer([ANSWER]) as server:
        server.streams = True
        server.faults = ["reasoning_flood"]
        chat = ChatModel("m", server.base_url, settings=CallSettings(max_retries=0, timeout=5, call_limit=3))
        before = _rss_mb()
        with pytest.raises(ModelCallError) as err:
            chat.chat(MESSAGES)
    assert _rss_mb() - before < 80  # the 16 MB stream bound, or the call limit, whichever comes first
    assert err.value.kind in ("timeout", "too_large", "empty", "reasoning_budget"), err.value


def test_a_reasoning_text_too_large_to_record_is_cut_and_the_episode_goes_on(tmp_path):
    """A non-streamed 6 MB reasoning made the reply's event too large to record: the episode failed
    and `--resume` asked again. It is kept to MAX_REASONING_CHARS, the cut said, and the episode ends."""
    from click.testing import CliRunner

    from inquitree.cli import main
    from inquitree.events.store import EventStore

    with OpenAICompatibleServer(lambda m: ANSWER) as server:
        server.reasoning = "Thinking hard. " * 400_000  # 6 MB
        db = f"sqlite:///{tmp_path / 'r.sqlite'}"
        out = CliRunner().invoke(
            main,
            [
                *["play", "--agent", "openai:thinker", "--base-url", server.base_url, "--embedder", "hash", "-q"],
                *["--max-turns", "3", "--no-stream", "--record", "--db", db, "--episode-id", "r"],
            ],
            env={"OPENAI_API_KEY": "x"},
        )
    assert out.exit_code == 0, out.output
    with EventStore(db) as store:
        replies = [r.event for r in store.read_stream("episode/r") if r.event_type == "AgentReplied"]
    assert replies and all(len(r.reasoning) < MAX_REASONING_CHARS + 200 for r in replies)
    assert replies[0].reasoning.endswith(f"the first {MAX_REASONING_CHARS:,} kept]")
    assert kept_reasoning("short") == "short" and kept_reasoning("") is None


def test_the_sdk_transport_lets_the_process_end_when_it_gives_up(tmp_path):
    """Through the SDK (credentials in the URL, a proxy, INQUITREE_CHAT_HTTP=sdk) the error was
    printed at --timeout but the process could not end (152 s against a slow drip, never against an
    endless body): it ends when the error is printed."""
    import subprocess
    import sys

    with OpenAICompatibleServer([ANSWER]) as server:
        server.faults = ["endless_body"] * 4
        env = {**os.environ, "INQUITREE_CHAT_HTTP": "sdk", "OPENAI_API_KEY": "x"}
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                *[sys.executable, "-m", "inquitree", "play", "--agent", "openai:m", "--base-url", server.base_url],
                *["--embedder", "hash", "--timeout", "2", "--max-retries", "0", "-q"],
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        took = time.monotonic() - t0
    assert proc.returncode != 0 and "inquitree: error" in proc.stderr, proc.stderr
    assert took < 30, f"the process took {took:.0f} s to end after giving up"


def _planted(tmp_path, kind: str, name: str):
    """A path that claims to be a file: a link to /dev/zero, or a named pipe with no writer."""
    path = tmp_path / name
    if kind == "zero":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["zero", "fifo"])
@pytest.mark.parametrize(
    "command, name",
    [
        (["trees", "validate", "{path}"], "tree.json"),
        (["episodes", "import", "{path}", "--db", "sqlite:///{tmp}/e.sqlite"], "export.jsonl"),
        (["sql", "--file", "{path}", "--warehouse", "{tmp}/w.duckdb"], "q.sql"),
        (["suite", "run", "{path}", "--db", "sqlite:///{tmp}/e.sqlite"], "suite.toml"),
    ],
)
def test_a_file_that_is_not_a_regular_file_is_refused_before_it_is_read(tmp_path, kind, command, name):
    """A link to /dev/zero read until MemoryError with a traceback, and a named pipe blocked for
    ever: each input is opened once, refused unless it is a regular file, and read to its limit."""
    import subprocess
    import sys

    path = _planted(tmp_path, kind, name)
    args = [part.format(path=path, tmp=tmp_path) for part in command]
    if args[0] == "sql":  # a warehouse to read from
        from inquitree.warehouse.warehouse import Warehouse

        Warehouse(str(tmp_path / "w.duckdb")).close()
    done = subprocess.run([sys.executable, "-m", "inquitree", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    said = (done.stdout + done.stderr).strip().splitlines()
    assert len(said) <= 2 and "not a regular file" in " ".join(said), said


def test_an_import_hashes_the_bytes_it_imported(tmp_path, monkeypatch):
    """`episodes import` hashed the file with a second read, so a file swapped between the two was
    recorded with another file's hash: the record's hash is of the one read."""
    import hashlib
    from pathlib import Path

    from click.testing import CliRunner

    from inquitree.cli import main
    from inquitree.events.store import EventStore

    db = f"sqlite:///{tmp_path / 'a.sqlite'}"
    assert CliRunner().invoke(main, ["play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "--db", db,
                                     "--episode-id", "x", "-q"]).exit_code == 0  # fmt: skip
    export = tmp_path / "x.jsonl"
    assert CliRunner().invoke(main, ["episodes", "export", "x", "--db", db, "--out", str(export)]).exit_code == 0
    monkeypatch.setattr(Path, "read_bytes", lambda self: b"a second read")  # what a swapped file would give
    other = f"sqlite:///{tmp_path / 'b.sqlite'}"
    done = CliRunner().invoke(main, ["episodes", "import", str(export), "--db", other])
    assert done.exit_code == 0, done.output
    with EventStore(other) as store:
        record = [r.event for s in store.streams() for r in store.read_stream(s.stream_id)
                  if r.event_type == "EpisodeImported"][0]  # fmt: skip
    assert record.file_sha256 == hashlib.sha256(export.open("rb").read()).hexdigest()
