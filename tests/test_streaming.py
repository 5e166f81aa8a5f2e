"""Model calls a CPU model survives: answers streamed, so a slow reply whose tokens keep
arriving is not cut off by a timeout sized for a GPU; a call given up on closes its stream, so the
server stops generating it; a retry after a timeout waits longer; a conclusion that goes round in
circles is cut; every reply says why it ended and which attempts failed before it."""

from __future__ import annotations

import time

import pytest

from inquitree.core.calls.cache import CallCache
from inquitree.core.calls.models import ChatModel
from inquitree.core.calls.settings import CallSettings, ModelCallError
from inquitree.core.game.engine import CONCLUSION, repeats_itself
from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent

from openai_server import OpenAICompatibleServer

LONG = "THOUGHT: a long answer.\nACTION: " + "word " * 40  # 232 characters: 29 chunks of 8


def _eventually(check, seconds: float = 3.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.02)
    return check()


def test_a_streamed_answer_is_assembled_and_says_why_it_ended(tmp_path):
    with OpenAICompatibleServer([LONG, LONG]) as server:
        server.streams = True
        cache = CallCache(tmp_path / "calls.sqlite")
        chat = ChatModel("m", server.base_url, settings=CallSettings(max_tokens=64), cache=cache)
        out = chat.chat([{"role": "user", "content": "go"}])
        body = server.requests[0]["body"]
    assert out.text == LONG and out.finish_reason == "stop" and out.failed == []
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    # llama.cpp's server reports no usage in a stream: the chunks are counted, nothing is invented
    assert out.usage == {"input": None, "cached_input": None, "cache_write": None, "output": None, "output_chunks": 29}
    # streaming is how the answer travels, not part of the request: a cached re-run needs no server
    again = ChatModel("m", server.base_url, settings=CallSettings(max_tokens=64), cache=cache)
    hit = again.chat([{"role": "user", "content": "go"}])
    assert hit.cache_hit and hit.text == LONG and hit.finish_reason == "stop"


@pytest.mark.parametrize("streams", [True, False])
def test_the_endpoints_fingerprint_is_kept_streamed_or_not_and_read_back_from_the_cache(tmp_path, streams):
    """A reply says which backend configuration answered it (system_fingerprint): a campaign run
    again against another can say so. One the endpoint sends too long is cut; a secret in it is masked."""
    with OpenAICompatibleServer([LONG, LONG, LONG]) as server:
        server.streams, server.fingerprint = streams, "fp_44709d6fcb"
        cache = CallCache(tmp_path / "calls.sqlite")
        out = ChatModel("m", server.base_url, settings=CallSettings(max_tokens=64), cache=cache).chat(
            [{"role": "user", "content": "go"}]
        )
        hit = ChatModel("m", server.base_url, settings=CallSettings(max_tokens=64), cache=cache).chat(
            [{"role": "user", "content": "go"}]
        )
        server.fingerprint = "sk-secret-key-1 " + "x" * 500
        long = ChatModel("m", server.base_url, api_key="sk-secret-key-1").chat([{"role": "user", "content": "again"}])
    assert out.fingerprint == "fp_44709d6fcb" and hit.cache_hit and hit.fingerprint == "fp_44709d6fcb"
    assert long.fingerprint is not None and len(long.fingerprint) <= 200 and "sk-secret-key-1" not in long.fingerprint


def test_an_answer_that_keeps_arriving_outlasts_the_timeout_and_stops_at_the_call_limit():
    with OpenAICompatibleServer([LONG, LONG]) as server:
        server.streams, server.stream_seconds = True, 0.05  # 29 chunks: about 1.5 s, three timeouts long
        slow = ChatModel("m", server.base_url, settings=CallSettings(timeout=0.5, max_retries=0))
        t0 = time.monotonic()
        out = slow.chat([{"role": "user", "content": "go"}])
        assert out.text == LONG and out.finish_reason == "stop" and time.monotonic() - t0 > 1.0
        # the call limit keeps what arrived, says so, and closes the stream: the server stops
        capped = ChatModel("m", server.base_url, settings=CallSettings(timeout=0.5, max_retries=0, call_limit=0.4))
        out = capped.chat([{"role": "user", "content": "go"}])
        assert out.finish_reason == "call_limit" and 0 < len(out.text) < len(LONG) and LONG.startswith(out.text)
        assert _eventually(lambda: server.abandoned == 1)
    # without a stream the old rule holds: the whole answer within the timeout
    with OpenAICompatibleServer([LONG]) as server:
        server.delay = 0.8
        plain = ChatModel("m", server.base_url, settings=CallSettings(timeout=0.5, max_retries=0, stream=False))
        with pytest.raises(ModelCallError) as err:
            plain.chat([{"role": "user", "content": "go"}])
        assert err.value.kind == "timeout" and "stream" not in server.requests[0]["body"]


def test_a_stalled_stream_is_given_up_closed_and_retried_with_more_patience():
    with OpenAICompatibleServer([LONG, LONG]) as server:
        server.streams = True
        server.faults = ["stream_stall"]  # two chunks, then keep-alive comments only
        chat = ChatModel("m", server.base_url, settings=CallSettings(timeout=0.3, max_retries=1), sleep=lambda s: None)
        out = chat.chat([{"role": "user", "content": "go"}])
        assert out.text == LONG and out.finish_reason == "stop"
        [failed] = out.failed
        assert failed["kind"] == "timeout" and failed["output_chunks"] == 2 and failed["seconds"] >= 0.3
        assert _eventually(lambda: server.abandoned == 1)  # the stalled answer's stream was closed


def test_a_stream_that_ends_early_or_unfinished_is_an_error_of_its_own_kind():
    for fault, kind in (("stream_interrupted", "server_error"), ("stream_cut", "connection")):
        with OpenAICompatibleServer([LONG, LONG]) as server:
            server.streams, server.faults = True, [fault]
            chat = ChatModel("m", server.base_url, settings=CallSettings(max_retries=1), sleep=lambda s: None)
            out = chat.chat([{"role": "user", "content": "go"}])
            assert out.text == LONG and [a["kind"] for a in out.failed] == [kind], fault
            server.faults = [fault, fault]
            with pytest.raises(ModelCallError) as err:
                chat.chat([{"role": "user", "content": "again"}])
            assert err.value.kind == kind and [a["kind"] for a in err.value.attempts] == [kind, kind]
            if fault == "stream_interrupted":
                assert "--interrupt_requests False" in str(err.value)


def test_a_conclusion_going_round_in_circles_is_cut_and_recorded_as_such():
    items = ["Grid cells encode position.", "Place cells remap.", "Theta phase orders spikes."]
    looping = "".join(f"{n + 1}. {items[n % 3]}\n" for n in range(17))  # 17 items, 3 distinct
    with OpenAICompatibleServer([looping]) as server:
        server.streams, server.stream_seconds = True, 0.01  # still generating when the client has enough
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, CallSettings()))
        reply = agent.reply("List your conclusions.", CONCLUSION, 9)
        assert _eventually(lambda: server.abandoned == 1)
    event = reply.replied(9, CONCLUSION, reply.text)
    assert event.finish_reason == "repeat" and event.failed_attempts == []
    assert reply.text.count("\n") == 6  # three items, three repeats, then the stream was closed
    assert all(item in reply.text for item in items)


def test_repeats_itself_counts_complete_lines_with_their_numbers_dropped():
    assert not repeats_itself("1. a\n2. b\n3. a\n4. b\n")  # two repeats
    assert repeats_itself("1. a\n2. b\n3. a\n4. b\n- **A**\n")  # the third, whatever its numbering and emphasis
    assert not repeats_itself("1. a\n2. a\n3. a\n4. a")  # the fourth line is not complete yet
    assert not repeats_itself("\n\n\n\n1. a\n")  # blank lines are not items


def test_without_streams_the_request_is_as_before():
    with OpenAICompatibleServer(["ACTION: x"]) as server:
        server.streams = True
        chat = ChatModel("m", server.base_url, settings=CallSettings(stream=False))
        out = chat.chat([{"role": "user", "content": "go"}])
        body = server.requests[0]["body"]
    assert "stream" not in body and "stream_options" not in body
    assert out.finish_reason == "stop" and out.usage["output"] is not None


def test_a_kept_alive_stream_leaves_its_connection_ready_for_the_next_call():
    """Found on the real server: a streamed answer read up to ``[DONE]`` but not to the end of its
    chunked body left the connection unusable, so every next call failed once ("connection") and
    paid a retry's pause. The body is read to its end; a connection left in that state anyway is
    replaced without counting an attempt."""
    with OpenAICompatibleServer([LONG] * 3) as server:
        server.streams = server.stream_keepalive = True
        chat = ChatModel("m", server.base_url, settings=CallSettings(max_retries=0))
        outs = [chat.chat([{"role": "user", "content": f"turn {n}"}]) for n in range(3)]
    assert [o.text for o in outs] == [LONG] * 3 and all(o.failed == [] for o in outs)
    assert len(server.requests) == 3


def test_a_call_that_ends_the_episode_leaves_its_attempts_in_the_failure(tmp_path):
    """Every attempt is accounted, failed ones too: a model call that gives up ends the episode
    with an EpisodeFailed that lists each attempt (kind, seconds, chunks)."""
    from click.testing import CliRunner

    from inquitree.cli import main
    from inquitree.events.store import EventStore

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(["ACTION: x"]) as server:
        server.fail_after = (0, 500)
        out = CliRunner().invoke(
            main,
            ["play", "--agent", "openai:m", "--base-url", server.base_url, "--embedder", "hash", "--max-retries", "1",
             "--record", "--db", db, "-q"],
        )  # fmt: skip
    assert out.exit_code != 0
    with EventStore(db) as store:
        (stream,) = store.streams("episode/")
        (failed,) = [r.event for r in store.read_stream(stream.stream_id) if r.event.TYPE == "EpisodeFailed"]
    assert failed.kind == "server_error" and [a["kind"] for a in failed.attempts] == ["server_error"] * 2
    assert all(a["seconds"] >= 0 for a in failed.attempts)


def test_a_verdict_keeps_the_attempts_that_failed_before_it():
    """The judge's calls are accounted as the agent's are (JudgeVerdict v2): a stalled first answer
    that was given up on stays in the verdict the retry produced, with why that answer ended."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.core.players.judges import OpenAIJudge

    tree = resolve_tree("synthetic-diamond-4")
    answer = '{"score": 1.0, "rationale": "stated in item 1"}'
    with OpenAICompatibleServer([answer] * (len(tree.conclusions) + 1)) as server:
        server.streams = True
        server.faults = ["stream_stall"]
        judge = OpenAIJudge(
            "m", ModelConfig(base_url=server.base_url, settings=CallSettings(timeout=0.3, max_retries=1))
        )
        verdicts = judge.judge(tree, ["an item"])
    first, *rest = verdicts
    assert [v.score for v in verdicts] == [1.0] * len(tree.conclusions)
    assert [a["kind"] for a in first.failed_attempts] == ["timeout"] and first.failed_attempts[0]["seconds"] >= 0.3
    assert all(v.finish_reason == "stop" and v.failed_attempts == [] for v in rest)
    assert first.finish_reason == "stop" and first.VERSION == 2


class _Dripper:
    """A loopback server that sends ``prefix`` whole, then ``drip`` one byte every ``every`` seconds,
    forever (until the client hangs up or ``seconds`` pass): bytes keep coming, no event ever ends."""

    def __init__(self, prefix: bytes, drip: bytes, every: float = 0.2, seconds: float = 30.0):
        import socket
        import threading

        self.prefix, self.drip, self.every, self.seconds = prefix, drip, every, seconds
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(5)
            try:
                conn.recv(65536)  # the request
                conn.sendall(self.prefix)
                end = time.monotonic() + self.seconds
                i = 0
                while time.monotonic() < end:
                    conn.sendall(self.drip[i % len(self.drip) : i % len(self.drip) + 1])
                    i += 1
                    time.sleep(self.every)
            except OSError:
                pass  # the client gave up: what the test wants
            finally:
                conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize(
    "prefix, drip",
    [
        (
            b"",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n",
        ),  # the status line and headers, a byte at a time
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {", b" "),  # an event that never ends
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", b": ping\n"),  # comments only
    ],
    ids=["headers", "event", "comments"],
)
def test_a_streamed_call_is_held_to_its_timeout_before_the_first_token(prefix, drip):
    """With streaming on, a server that dripped its status line, or `data: {` and then a space a
    second, was cut only at --call-limit (900 s by default): the silence timer moved with bytes.
    Now only a complete event moves it: the call ends within its timeout."""
    server = _Dripper(prefix, drip)
    try:
        chat = ChatModel("m", server.base_url, settings=CallSettings(timeout=1.0, max_retries=0, call_limit=60))
        t0 = time.monotonic()
        with pytest.raises(ModelCallError) as err:
            chat.chat([{"role": "user", "content": "go"}])
        took = time.monotonic() - t0
    finally:
        server.close()
    assert err.value.kind == "timeout", err.value
    assert took < 4.0, took  # the timeout (1 s) and the watchdog's tick, not the call limit (60 s)
