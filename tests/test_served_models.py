"""What labs serve: reasoning models (vLLM's reasoning parsers, DeepSeek-R1 distills, Qwen3 thinking)
send their thinking in ``reasoning_content`` apart from the answer, and chat templates without a
system role (Gemma's) refuse a system message. Against a loopback server that speaks both, as vLLM
and a Gemma template answer (tests/openai_server.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.calls.models import ChatModel, system_in_user
from inquitree.core.calls.settings import CallSettings, ModelCallError
from inquitree.core.run.limits import tokens_of
from inquitree.events.store import EventStore
from inquitree.events.types import AgentReplied

from openai_server import OpenAICompatibleServer

THINKING = "The user asks about sleep. Let me think about which subtopic comes first. " * 8
ANSWER = "THOUGHT: replay first.\nACTION: draw_conclusion"


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_reasoning_models_thinking_is_kept_apart_from_its_answer(streamed):
    with OpenAICompatibleServer([ANSWER]) as server:
        server.reasoning, server.streams = THINKING, streamed
        out = ChatModel("r1", server.base_url, settings=CallSettings(stream=streamed)).chat(
            [{"role": "user", "content": "go"}]
        )
    assert out.text == ANSWER and out.reasoning == THINKING
    if not streamed:  # the endpoint counted the reasoning tokens inside the output tokens
        assert out.usage["reasoning"] == len(THINKING) // 4 and out.usage["output"] >= out.usage["reasoning"]
        # ... so limits and budgets count them once, as part of the output
        assert tokens_of(out.usage) == sum(v for k, v in out.usage.items() if k in ("input", "output"))


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_an_answer_lost_to_reasoning_is_one_clear_error_not_retried(streamed):
    """A reasoning model that spends the whole max_tokens thinking returns empty content: that was
    retried as an empty reply and then failed the episode with no word of why."""
    with OpenAICompatibleServer([ANSWER] * 5) as server:
        server.reasoning, server.reasoning_only, server.streams = THINKING, True, streamed
        chat = ChatModel("r1", server.base_url, settings=CallSettings(stream=streamed, max_tokens=64, max_retries=2))
        with pytest.raises(ModelCallError) as err:
            chat.chat([{"role": "user", "content": "go"}])
        calls = len(server.requests)
    assert err.value.kind == "reasoning_budget" and not err.value.retryable and calls == 1
    assert "spent its whole budget (64 tokens) on reasoning" in str(err.value) and "--max-tokens" in str(err.value)


def test_a_template_without_a_system_role_gets_the_system_text_in_the_first_user_message():
    messages = [{"role": "system", "content": "You are a scientist."}, {"role": "user", "content": "Topic."}]
    with OpenAICompatibleServer([ANSWER, ANSWER]) as server:
        server.no_system_role = True
        chat = ChatModel("gemma", server.base_url, settings=CallSettings(max_retries=0))
        first = chat.chat(messages)
        second = chat.chat([*messages, {"role": "assistant", "content": ANSWER}, {"role": "user", "content": "More."}])
        sent = [r["body"]["messages"] for r in server.requests]
    assert first.text == ANSWER and first.system_as_user and second.system_as_user
    assert len(sent) == 3 and sent[0][0]["role"] == "system"  # refused once, then never sent again
    assert sent[1] == [{"role": "user", "content": "You are a scientist.\n\nTopic."}]
    assert all(m["role"] != "system" for m in sent[2]) and sent[2][0]["content"].startswith("You are a scientist.")
    with OpenAICompatibleServer([ANSWER]) as server:  # --system-role system: the refusal stands
        server.no_system_role = True
        strict = ChatModel("gemma", server.base_url, settings=CallSettings(max_retries=0, system_role="system"))
        with pytest.raises(ModelCallError) as err:
            strict.chat(messages)
    assert err.value.kind == "bad_request" and "System role not supported" in str(err.value)
    assert system_in_user([{"role": "system", "content": "S"}]) == [{"role": "user", "content": "S"}]


def test_a_missing_system_role_costs_one_refused_call_per_endpoint_a_run_not_one_per_episode():
    """Each episode has a client of its own; what one learned the next ones know."""
    messages = [{"role": "system", "content": "You are a scientist."}, {"role": "user", "content": "Topic."}]
    with OpenAICompatibleServer([ANSWER] * 4) as server:
        server.no_system_role = True
        for _ in range(3):  # three episodes' clients of the same endpoint and model
            assert (
                ChatModel("gemma2", server.base_url, settings=CallSettings(max_retries=0)).chat(messages).system_as_user
            )
        sent = [r["body"]["messages"] for r in server.requests]
        other = ChatModel("gemma3", server.base_url, settings=CallSettings(max_retries=0)).chat(messages)
    assert len(sent) == 4 and sum(m[0]["role"] == "system" for m in sent) == 1  # one refusal, then never again
    assert other.system_as_user and len(server.requests) == 6  # another model learns for itself


def _played(tmp_path, monkeypatch, episode_id: str, *extra: str, no_system_role: bool = False) -> str:
    """A recorded `play` of a reasoning model (THINKING, then ANSWER) on a loopback server; the store's URL."""
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(
        lambda m: "ACTION: (1) nothing" if "numbered" in m[-1]["content"] else ANSWER
    ) as server:
        server.reasoning, server.no_system_role = THINKING, no_system_role
        out = CliRunner().invoke(
            main,
            ["play", "--tree", "synthetic-diamond-4", "--agent", "openai:r1", "--base-url", server.base_url]
            + ["--embedder", "hash", "--record", "--db", db, "--episode-id", episode_id, *extra],
        )
    assert out.exit_code == 0, out.output
    return db


def test_an_episode_records_the_reasoning_and_the_system_role_and_replays(tmp_path, monkeypatch):
    """The engine reads only the answer; the transcript keeps the thinking; replay knows both."""
    db = _played(tmp_path, monkeypatch, "thinking", "--max-retries", "0", no_system_role=True)
    with EventStore(db) as store:
        replies = [r.event for r in store.read_stream("episode/thinking") if isinstance(r.event, AgentReplied)]
    assert replies and all(r.reasoning == THINKING and r.system_as_user for r in replies)
    assert all("Let me think" not in r.action for r in replies)  # the action came from the answer alone
    replayed = CliRunner().invoke(main, ["replay", "thinking", "--db", db, "-q"])
    assert replayed.exit_code == 0 and "replay: identical" in replayed.output, replayed.output


def test_the_reasoning_shows_in_the_transcript_the_viewer_and_the_costs(tmp_path, monkeypatch):
    from inquitree.warehouse.report import episode_items
    from inquitree.warehouse.warehouse import Warehouse

    db = _played(tmp_path, monkeypatch, "shown", "--no-stream")
    shown = CliRunner().invoke(main, ["replay", "shown", "--db", db, "--transcript"])
    assert "AGENT'S REASONING" in shown.output and "Let me think" in shown.output
    path = str(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        wh.sync(db)
        items = episode_items(wh, "shown")
        costs = wh.query("costs").filter(wh.query("costs")["level"] == "model").row(0, named=True)
    thoughts = [i for i in items if i["kind"] == "reasoning"]
    replies = [i for i in items if i["kind"] == "agent"]
    assert thoughts and len(thoughts) == len(replies) and "Let me think" in thoughts[0]["html"]
    assert items.index(thoughts[0]) < items.index(replies[0])  # the thinking comes before its answer
    assert (
        costs["reasoning_tokens"] == len(replies) * (len(THINKING) // 4)
        and costs["output_tokens"] >= costs["reasoning_tokens"]
    )
