"""A lab's agent kind from its own package (docs/plugins.md): the worked plug-in in
docs/plugins/inquitree-sweep, made importable with the entry point its pyproject.toml declares (a
dist-info folder beside it on PYTHONPATH, which is how an installed distribution is found), is
listed by ``play --help``, plays and records an episode whose agent names the plug-in, and plays in
a suite; a plug-in that does not load is named with its cause."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "plugins" / "inquitree-sweep"


def _site(tmp_path: Path, entry: str | None = None) -> Path:
    """A folder holding the example's module and a dist-info with its declared entry points
    (``entry`` replaces the agents group's value: a broken plug-in)."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(EXAMPLE / "sweep_agent.py", site)
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = []
    for group, points in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {entry or value}" for name, value in points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return site


def _run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "inquitree", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_labs_agent_from_its_own_package_plays_and_records_its_name(tmp_path):
    site = _site(tmp_path)
    helped = _run(site, tmp_path, "play", "--help")
    assert helped.returncode == 0 and "sweep" in " ".join(helped.stdout.split()), helped.stdout
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    played = _run(site, tmp_path, "play", "--tree", "synthetic-chain-7", "--agent", "sweep", "--db", db, "--record")
    assert played.returncode == 0, played.stdout + played.stderr
    assert "coverage 1.000" in played.stdout and "steps 21 within [3n, n(2H+3)] = [21, 77]" in played.stdout
    replayed = _run(site, tmp_path, "replay", "last", "--db", db)
    assert "identical" in replayed.stdout, replayed.stdout + replayed.stderr
    import sqlite3

    with sqlite3.connect(tmp_path / "e.sqlite") as con:
        started = [r[0] for r in con.execute("SELECT payload FROM events WHERE event_type = 'EpisodeStarted'")]
    assert any('"plugin": "inquitree-sweep==0.1.0"' in p or '"plugin":"inquitree-sweep==0.1.0"' in p for p in started)
    suite = tmp_path / "lab.toml"
    suite.write_text(
        'name = "lab"\ntrees = ["synthetic-diamond-4"]\nagents = ["sweep", "oracle"]\nruns = 1\nembedder = "hash"\n'
    )
    ran = _run(site, tmp_path, "suite", "run", str(suite), "--db", db)
    assert ran.returncode == 0 and "2 done" in " ".join(ran.stdout.split()), ran.stdout + ran.stderr


def test_a_plugin_that_does_not_load_is_named_with_its_cause(tmp_path):
    site = _site(tmp_path, entry="no_such_module:make")
    played = _run(site, tmp_path, "play", "--tree", "synthetic-chain-7", "--agent", "sweep")
    said = " ".join((played.stdout + played.stderr).split())
    assert played.returncode != 0
    assert "the plug-in 'sweep' (no_such_module:make, from inquitree-sweep==0.1.0" in said, said
    assert "ModuleNotFoundError" in said


def test_a_model_behind_another_api_is_called_through_a_transport_of_its_own():
    """docs/plugins.md's transport, run as written against a stand-in for a messages API: the
    chat client tries again a call that failed, reads the reply and its usage, and a model agent
    made by the page's factory replies through it and records the transport's class."""
    import re

    from inquitree.core.calls import CallSettings, ChatModel
    from inquitree.core.players import parse_spec

    page = (ROOT / "docs" / "plugins.md").read_text()
    code = re.search(r"## A model behind another API.*?```python\n(.*?)```", page, flags=re.S).group(1)
    space: dict = {"__name__": "labs_transport"}
    exec(compile(code, "docs/plugins.md", "exec"), space)
    asked: list[dict] = []

    def send(request: dict) -> dict:
        asked.append(request)
        if len(asked) == 1:
            raise ConnectionResetError("reset by peer")
        return {
            "model": request["model"],
            "content": [{"type": "text", "text": "explore_new_subtopic: the first one"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 5},
        }

    chat = ChatModel(
        "claude-x",
        transport=space["MessagesTransport"](send),
        settings=CallSettings(max_retries=2),
        sleep=lambda s: None,
    )
    out = chat.chat([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}])
    assert out.text == "explore_new_subtopic: the first one"
    assert out.usage["input"] == 12 and out.usage["output"] == 5
    assert [f["kind"] for f in out.failed] == ["connection"] and len(asked) == 2
    assert asked[1]["system"] == "be brief" and asked[1]["messages"] == [{"role": "user", "content": "hello"}]

    make = space["agent_kind"](send)
    agent = make(parse_spec("agent", "openai:claude-x"), system_prompt="You explore.", tree=None, seed=0)
    reply = agent.reply("Topic: ...", "topic", 1)
    assert reply.text == "explore_new_subtopic: the first one"
    assert agent.description["transport"] == "labs_transport.MessagesTransport"
    assert agent.description["kind"] == "openai" and agent.description["model"] == "claude-x"
