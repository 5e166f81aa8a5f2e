"""docs/serving.md's commands, as written, against a loopback server that answers as vLLM does for a
reasoning model (its thinking in ``reasoning_content``, its tokens counted): the page a lab follows
is the page the tests run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from inquitree.cli import main
from inquitree.events.store import EventStore
from inquitree.events.types import AgentReplied

from openai_server import OpenAICompatibleServer

PAGE = Path(__file__).resolve().parent.parent / "docs" / "serving.md"


def _commands() -> tuple[str, dict[str, str], list[list[str]]]:
    """The suite file the page writes, the environment it exports and its `inquitree` commands."""
    section = PAGE.read_text().split("## Run the evaluation", 1)[1]
    suite = section.split("```toml\n", 1)[1].split("```", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    env, commands = {}, []
    for line in block.splitlines():
        if line.startswith("export "):
            env.update(dict(pair.split("=", 1) for pair in shlex.split(line)[1:]))
        elif line.startswith("inquitree "):
            commands.append(shlex.split(line)[1:])
    return suite, env, commands


def test_the_serving_pages_commands_run_as_written(tmp_path, monkeypatch):
    suite, env, commands = _commands()
    assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:8000") and len(commands) == 2
    assert [c[0] for c in commands] == ["play", "suite"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qwen3.toml").write_text(suite)
    with OpenAICompatibleServer(
        lambda m: "ACTION: (1) nothing" if "numbered" in m[-1]["content"] else "ACTION: draw_conclusion"
    ) as server:
        server.reasoning = "First I should consider the prerequisites. " * 10
        server.streams = True
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # the page's server, here on loopback
        monkeypatch.setenv("OPENAI_API_KEY", env["OPENAI_API_KEY"])
        for args in commands:
            out = CliRunner().invoke(main, args)
            assert out.exit_code == 0, (args, out.output)
        asked = [r["body"] for r in server.requests]
    assert asked and all(b["model"] == "Qwen/Qwen3-8B" and b["max_tokens"] == 16384 for b in asked)
    with EventStore("sqlite:///inquitree.sqlite") as store:
        replies = [
            r.event
            for s in store.streams("episode/")
            for r in store.read_stream(s.stream_id)
            if isinstance(r.event, AgentReplied) and r.event.model
        ]
    model_replies = [r for r in replies if r.reasoning]
    assert model_replies and all(re.search(r"ACTION:", r.raw) for r in model_replies)
    assert all("prerequisites" not in r.action for r in model_replies)
