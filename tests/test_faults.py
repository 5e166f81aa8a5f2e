"""Error containment (the real-model issue): every fault of a faulty endpoint ends the episode with a
recorded, classified EpisodeFailed; the campaign accounts for every cell and goes on."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.calls.chat_http import HTTP_ENV, Endpoint, direct_endpoint
from inquitree.core.calls.redaction import redact_url
from inquitree.core.calls.settings import CallSettings, ModelCallError
from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent

from faultkit import FAULTS, run_fault
from openai_server import OpenAICompatibleServer
from tests_support import model_play

FAULTS_RESUMED = next(f for f, (_, permanent) in FAULTS.items() if permanent)  # one fault also checks a resume


@pytest.mark.parametrize("transport", ["direct", "sdk"])
@pytest.mark.parametrize("fault", list(FAULTS), ids=[str(f) for f in FAULTS])
def test_fault_matrix(fault, transport, tmp_path, monkeypatch):
    """Both HTTP transports (core/calls/chat_http.py) classify every fault alike."""
    monkeypatch.setenv(HTTP_ENV, transport)
    kind, permanent = FAULTS[fault]
    out = run_fault(fault, tmp_path)
    assert out["cells"] == 2 and out["done"] + out["failed"] == 2  # every cell accounted for
    assert len(out["episodes"]) == 2
    if not permanent:
        assert out["done"] == 2 and all(e["outcome"] == "EpisodeScored" for e in out["episodes"].values())
        return
    assert out["failed"] == 2 and len(out["errors"]) == 2
    for ep in out["episodes"].values():
        assert ep["outcome"] == "failed" and ep["kind"] == kind, ep
        assert ep["retryable"] == (kind not in ("bad_request", "context_length")), ep
    assert all(f"[{kind}]" in e for e in out["errors"])
    status = CliRunner().invoke(main, ["suite", "status", out["suite"], "--db", out["db"]])
    # each way the cells failed is said once, with the agent and how many cells
    said = " ".join(status.output.split())
    assert "2 failed" in said and said.count(f"[{kind}") in (1, 2), status.output
    assert "failed: 2 cells of" in said or said.count("failed: 1 cell of") == 2, status.output
    if fault != FAULTS_RESUMED:
        return
    # A failed cell resumed since (a rerun in flight, or cut short) is no longer counted failed.
    from inquitree.core.run.runner import STREAM_PREFIX
    from inquitree.events.store import EventStore
    from inquitree.events.types import EpisodeResumed

    with EventStore(out["db"]) as store:
        sid = sorted(store.streams_with_event(STREAM_PREFIX, "EpisodeFailed"))[0]
        version = len(store.read_stream(sid))
        store.append(sid, [EpisodeResumed(step=1, after_error=kind)], expected_version=version)
    status = CliRunner().invoke(main, ["suite", "status", out["suite"], "--db", out["db"]])
    assert "1 failed, 1 interrupted" in status.output and status.output.count(f"[{kind}") == 1, status.output


def test_the_direct_transport_takes_only_endpoints_it_can_honour(monkeypatch):
    for var in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", HTTP_ENV):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.upper(), raising=False)
    assert isinstance(direct_endpoint(None, "k", 5), Endpoint)  # OpenAI itself
    local = direct_endpoint("http://127.0.0.1:8011/v1?api-version=1", "k", 5)
    assert local is not None and (local.host, local.port, local.prefix, local.query) == (
        "127.0.0.1",
        8011,
        "/v1",
        "?api-version=1",
    )
    assert direct_endpoint("http://alice:pw@127.0.0.1:8011/v1", "k", 5) is None  # credentials in the URL
    assert direct_endpoint("unix:///tmp/s", "k", 5) is None
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    assert direct_endpoint("https://api.example/v1", "k", 5) is None  # the SDK knows proxies
    assert direct_endpoint("http://127.0.0.1:8011/v1", "k", 5) is not None  # not an https proxy's
    monkeypatch.setenv("no_proxy", "api.example")
    assert direct_endpoint("https://api.example/v1", "k", 5) is not None
    monkeypatch.setenv(HTTP_ENV, "sdk")
    assert direct_endpoint("http://127.0.0.1:8011/v1", "k", 5) is None


def test_the_direct_transport_trusts_the_certificates_the_sdk_trusts(monkeypatch):
    import certifi

    from inquitree.core.calls.chat_http import tls_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    bundle = certifi.contents().count("BEGIN CERTIFICATE")
    assert len(tls_context().get_ca_certs()) == bundle > 100  # certifi's, as httpx loads by default
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert len(tls_context().get_ca_certs()) == bundle  # the file the variable names


def test_a_kept_alive_connection_the_server_closed_is_replaced_without_a_retry(monkeypatch):
    monkeypatch.delenv(HTTP_ENV, raising=False)
    slept: list[float] = []
    with OpenAICompatibleServer(lambda m: "ACTION: ok") as server:
        server.faults = ["drop_idle"]
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, CallSettings(max_retries=0)))
        assert isinstance(agent.chat._http, Endpoint)
        agent.chat.sleep = slept.append
        assert agent.reply("obs", "topic", 1).text == "ACTION: ok"
        time.sleep(0.05)  # the server has closed its end by now
        assert agent.reply("obs 2", "topic", 2).text == "ACTION: ok"  # max_retries=0: not a retry
        assert server.chat_calls == 2 and slept == []


def test_suite_run_exits_non_zero_naming_the_failed_cells(tmp_path):
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        server.fail_after = (0, "wrong_shape")
        suite = tmp_path / "s.toml"
        suite.write_text(
            f'name = "ws"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m", "oracle"]\n'
            f'embedder = "hash"\nretries = 0\nmax_retries = 0\nbase_url = "{server.base_url}"\n'
        )
        out = CliRunner().invoke(main, ["suite", "run", str(suite), "--db", f"sqlite:///{tmp_path / 'e.sqlite'}"])
    assert out.exit_code == 1, out.output
    assert "1 done now, 1 failed" in out.output and "failed (ws.synthetic-diamond-4.openai-m" in out.output
    assert "[wrong_shape]" in out.output and "Traceback" not in out.output


def test_a_never_answering_endpoint_holds_a_call_for_at_most_the_stated_bound():
    settings = CallSettings(timeout=0.4, max_retries=2)
    slept: list[float] = []
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        server.fail_after = (0, "hang")
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, settings))
        agent.chat.sleep = slept.append  # the backoff pauses, counted instead of slept
        t0 = time.perf_counter()
        with pytest.raises(Exception, match="no complete answer within 1.6 s") as info:  # the third wait
            agent.reply("obs", "topic", 1)
        held = time.perf_counter() - t0
        assert len(server.requests) == 3  # one attempt and two retries
    assert info.value.retryable and info.value.kind == "timeout"
    assert slept == [1.0, 2.0]
    # each retry after a timeout waits twice as long as the attempt before it: 0.4 + 0.8 + 1.6 s
    assert held + 1e-3 >= 0.4 + 0.8 + 1.6 and held + sum(slept) <= settings.worst_case_seconds()
    assert settings.worst_case_seconds() == pytest.approx(0.4 * 7 + 2 * 30)
    assert CallSettings().worst_case_seconds() == 480.0  # the default, stated in --help
    assert "480 s with the defaults" in CliRunner().invoke(main, ["play", "--help"]).output.replace("\n", " ").replace(
        "  ", " "
    )


@pytest.mark.parametrize("fault", ["drip", "drip_close", "drip_chunked", "silent"])
@pytest.mark.parametrize("transport", ["direct", "sdk"])
def test_a_slow_drip_endpoint_is_cut_off_at_the_timeout(transport, fault, monkeypatch):
    """A valid answer sent a byte at a time: each read is quick, so a timeout per read never fired
    (a 222-byte answer at 1 byte/s held a call for 221 s with --timeout 5). The timeout is a
    deadline for the whole attempt now, on both transports, whether the answer has a length and is
    kept alive, says ``Connection: close`` (http.client then let go of the socket the deadline had to
    shut: the call ran past 120 s), is chunked, or never comes at all."""
    monkeypatch.setenv(HTTP_ENV, transport)
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        server.fail_after, server.drip_seconds = (0, fault), 0.05  # about 12 s for the whole answer
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, CallSettings(timeout=1.0, max_retries=0)))
        if transport == "sdk":  # the SDK's import and client set-up (seconds on a busy machine) are not the call's
            from inquitree.core.calls.chat_http import _sdk_client

            _sdk_client(server.base_url, "unused", 1.0)
        t0 = time.perf_counter()
        with pytest.raises(Exception, match="no (complete )?answer within 1 s") as info:
            agent.reply("obs", "topic", 1)
        held = time.perf_counter() - t0
    assert info.value.kind == "timeout" and info.value.retryable
    assert 1.0 <= held < 1.8, held


def test_the_episode_time_limit_holds_during_a_slow_call(tmp_path):
    """--max-episode-seconds used to be checked between calls only: a call with the default timeout
    and retries could run minutes past it. The limit now ends the call, and the episode is scored
    on what it reached, as at any limit."""
    from inquitree.core.run.runner import stream_id
    from inquitree.events.store import EventStore

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        server.fail_after, server.drip_seconds = (1, "drip"), 0.2
        t0 = time.perf_counter()
        out = CliRunner().invoke(
            main,
            model_play(server.base_url, "--max-episode-seconds", "2", "--record", "--db", db, "--episode-id", "slow"),
        )
        held = time.perf_counter() - t0
    assert out.exit_code == 0, out.output
    assert held < 6, held  # the defaults alone would allow 3 x 60 s + 3 s for the second call
    with EventStore(db, create=False) as store:
        events = [r.event for r in store.read_stream(stream_id("slow"))]
    reached = [e for e in events if e.TYPE == "LimitReached"]
    assert len(reached) == 1 and reached[0].limit == "episode_seconds"
    assert events[-1].TYPE == "EpisodeScored" and not any(e.TYPE == "EpisodeFailed" for e in events)


def test_retry_after_is_honoured_and_capped():
    slept: list[float] = []
    with OpenAICompatibleServer(lambda m: "ACTION: ok") as server:
        server.faults = ["retry_after"]
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, CallSettings(max_retries=1)))
        agent.chat.sleep = slept.append
        assert agent.reply("obs", "topic", 1).text == "ACTION: ok"
    assert slept == [1.0]


def test_credentials_never_reach_events_messages_or_ids(tmp_path):
    # Query values are kept only for an allow-list of harmless names (api-version, ...): `x` is hidden too.
    assert redact_url("http://user:s3cret@host:8/v1?api_key=abc&x=1") == "http://***@host:8/v1?api_key=***&x=***"
    assert redact_url("http://h/v1?api-version=2024&code=c") == "http://h/v1?api-version=2024&code=***"
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        url = server.base_url.replace("http://", "http://alice:s3cret-pw@") + "?key=tok123"
        server.fail_after = (1, 500)
        db = f"sqlite:///{tmp_path / 'e.sqlite'}"
        out = CliRunner().invoke(
            main,
            [
                "play",
                "--agent",
                "openai:m",
                "--base-url",
                url,
                "--record",
                "--db",
                db,
                "--max-retries",
                "0",
                "--judge",
                "none",
                "--embedder",
                "hash",
            ],
        )
    assert out.exit_code == 2
    text = (tmp_path / "e.sqlite").read_bytes()
    for secret in (b"s3cret-pw", b"tok123", b"alice"):
        assert secret not in text
    assert "s3cret-pw" not in out.output and "tok123" not in out.output and "***@127.0.0.1" in out.output


def test_a_huge_reply_is_cut_and_the_cut_recorded():
    with OpenAICompatibleServer(lambda m: "ACTION: " + "x" * 50_000) as server:
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, CallSettings(max_reply_chars=1000)))
        reply = agent.reply("obs", "topic", 1)
    assert len(reply.text) == 1000 and reply.truncated_from == 50_008


def test_structured_output_falls_back_where_the_endpoint_refuses_it():
    refused = {"json_schema"}

    def model(messages):
        return '{"score": 1.0, "rationale": "states it"}'

    with OpenAICompatibleServer(model) as server:
        server.reject_format = refused  # answers 500 with a validation error, as llama.cpp's server does
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, CallSettings(max_retries=0)))
        fmt = {"type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object"}}}
        first = agent.chat.chat([{"role": "user", "content": "a"}], fmt)
        second = agent.chat.chat([{"role": "user", "content": "b"}], fmt)
        sent = [r["body"].get("response_format") for r in server.requests]
    assert first.text == second.text
    assert sent == [
        fmt,
        {"type": "json_object", "schema": {"type": "object"}},
        {"type": "json_object", "schema": {"type": "object"}},
    ]  # the refusal is remembered


def test_context_length_errors_are_not_retried():
    with OpenAICompatibleServer(lambda m: "x") as server:
        server.fail_after = (0, "context")
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, CallSettings(max_retries=3)))
        with pytest.raises(Exception, match="exceeds the model's context") as info:
            agent.reply("obs", "topic", 1)
        assert len(server.requests) == 1
    assert info.value.kind == "context_length" and not info.value.retryable
    assert isinstance(info.value.__cause__ or info.value, Exception) and not isinstance(info.value, ModelCallError)


@pytest.mark.parametrize("status", [400, 422, 500])
def test_an_option_the_endpoint_rejects_is_not_retried(status):
    """A 500 whose body names a request option (llama.cpp's validation error) used to be retried as a
    server error; it is a bad request, as a 4xx naming it is."""
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        server.faults = [status]
        server.fault_body = "1 validation error: body.frobnicate: Extra inputs are not permitted"
        settings = CallSettings(max_retries=2, options={"frobnicate": 1})
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, settings))
        with pytest.raises(Exception, match="rejected the request option frobnicate") as info:
            agent.reply("obs", "topic", 1)
        assert len(server.requests) == 1
    assert info.value.kind == "bad_request" and not info.value.retryable


@pytest.mark.parametrize("transport", ["direct", "sdk"])
def test_a_base_url_with_credentials_and_a_query_keeps_its_path(transport, monkeypatch):
    """With credentials in the URL the SDK makes the call, and it used to put the path after the
    query string (`/v1?api-version=2/chat/completions`)."""
    monkeypatch.setenv(HTTP_ENV, transport)
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        url = server.base_url.replace("http://", "http://user:secret@") + "?api-version=2"
        agent = OpenAIChatAgent("m", "sys", ModelConfig(url, CallSettings(max_retries=0)))
        assert agent.reply("obs", "topic", 1).text == "ACTION: x"
        (request,) = server.requests
    assert request["path"] == "/v1/chat/completions?api-version=2"
