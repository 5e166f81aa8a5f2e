"""Real-model campaigns: request options and labels, the call cache, run limits and budgets,
the memory window (all against a loopback OpenAI-compatible server)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.calls.cache import CallCache
from inquitree.core.calls.redaction import option_label, parse_options
from inquitree.core.calls.settings import CallSettings
from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent
from inquitree.core.run.campaign import Suite, SuiteError, run_suite
from inquitree.core.run.runner import STREAM_PREFIX, stream_id
from inquitree.events.store import EventStore
from inquitree.warehouse.warehouse import Warehouse

from faultkit import model
from openai_server import OpenAICompatibleServer
from tests_support import model_play


def test_options_reach_the_endpoint_known_ones_as_fields_unknown_ones_in_the_body():
    assert parse_options(["reasoning_effort=high", "top_p=0.9", "seed=7", 'stop=["x"]', "flag=true"]) == {
        "reasoning_effort": "high",
        "top_p": 0.9,
        "seed": 7,
        "stop": ["x"],
        "flag": True,
    }
    with pytest.raises(Exception, match="expected KEY=VALUE"):
        parse_options(["nonsense"])
    assert option_label("gpt-5", {"reasoning_effort": "high"}) == "gpt-5@reasoning_effort=high"
    with OpenAICompatibleServer(model) as server:
        settings = CallSettings(max_tokens=50, options={"reasoning_effort": "high", "top_k": 20, "temperature": 0.7})
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, settings))
        agent.reply("obs", "topic", 1)
        body = server.requests[0]["body"]
    assert body["reasoning_effort"] == "high" and body["top_k"] == 20 and body["max_tokens"] == 50
    assert body["temperature"] == 0.7  # an explicit option wins over the default 0
    assert agent.description["options"] == {"reasoning_effort": "high", "top_k": 20, "temperature": 0.7}
    assert agent.label == "m@reasoning_effort=high,temperature=0.7,top_k=20"


SECRETS = {
    "api_key": "sk-planted-api-key-0001",
    "x-api-key": "planted-x-api-key-0002",
    "auth_token": "planted-auth-token-0003",
    "client_secret": "planted-client-secret-0004",
    "password": "planted-password-0005",
    "extra_headers": {"Authorization": "Bearer planted-bearer-0006"},
}


def test_credential_named_options_reach_the_endpoint_and_nothing_else(tmp_path):
    """Options whose names look like credentials are sent as given but never recorded, printed or
    put in a label (the log is immutable: a key written there could never be taken back)."""
    import json

    db = tmp_path / "e.sqlite"
    wh = str(tmp_path / "w.duckdb")
    args = []
    for name, value in SECRETS.items():
        args += ["--agent-option", f"{name}={json.dumps(value) if isinstance(value, dict) else value}"]
    with OpenAICompatibleServer(model) as server:
        out = CliRunner().invoke(
            main,
            [
                "play",
                "--agent",
                "openai:m",
                "--base-url",
                server.base_url,
                *args,
                "--judge",
                "openai:m",
                "--judge-base-url",
                server.base_url,
                "--judge-option",
                "api_key=sk-planted-judge-0007",
                "--record",
                "--db",
                f"sqlite:///{db}",
                "--embedder",
                "hash",
                "--max-turns",
                "4",
            ],
        )
        request = server.requests[0]
        sent = request["body"]
    assert out.exit_code == 0, out.output
    # a header option goes out as a header (here it replaces the key's Authorization), the rest in the body
    assert sent["api_key"] == SECRETS["api_key"] and "extra_headers" not in sent
    assert request["authorization"] == SECRETS["extra_headers"]["Authorization"]
    assert CliRunner().invoke(main, ["warehouse", "sync", "--db", f"sqlite:///{db}", "--warehouse", wh]).exit_code == 0
    shown = CliRunner().invoke(main, ["episodes", "list", "--db", f"sqlite:///{db}"]).output
    everything = db.read_bytes() + Path(wh).read_bytes() + (out.output + shown).encode()
    for planted in ["planted", "sk-planted"]:
        assert planted.encode() not in everything
    with EventStore(f"sqlite:///{db}", create=False) as store:
        started = store.read_all()[0].event
    options = started.agent["options"]
    assert options["api_key"] == "***" and options["extra_headers"] == {"Authorization": "***"}
    assert started.agent["label"] == "m" and started.judge["options"]["api_key"] == "***"


def test_a_rejected_option_is_a_recorded_readable_failure(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(model) as server:
        server.faults = [400]
        server.fault_body = "Unrecognized request argument supplied: frobnicate"
        out = CliRunner().invoke(
            main,
            [
                "play",
                "--agent",
                "openai:m",
                "--base-url",
                server.base_url,
                "--agent-option",
                "frobnicate=1",
                "--record",
                "--db",
                db,
                "--episode-id",
                "x",
                "--embedder",
                "hash",
            ],
        )
    assert out.exit_code == 2 and "inquitree: error:" in out.output and "frobnicate" in out.output
    with EventStore(db) as store:
        last = store.read_stream(stream_id("x"))[-1].event
    assert last.TYPE == "EpisodeFailed" and last.kind == "bad_request" and not last.retryable


def test_one_model_with_two_option_sets_is_two_agents_everywhere(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(model) as server:
        suite = tmp_path / "s.toml"
        suite.write_text(
            'name = "opt"\ntrees = ["synthetic-diamond-4"]\nembedder = "hash"\nmax_turns = 3\n'
            f'base_url = "{server.base_url}"\n'
            'agents = [{agent = "openai:m", options = {reasoning_effort = "high"}},\n'
            '          {agent = "openai:m", options = {reasoning_effort = "low"}, label = "m-low"}]\n'
        )
        report = run_suite(Suite.load(suite), EventStore(db))
        efforts = sorted(r["body"]["reasoning_effort"] for r in server.requests)
    assert report.done == 2 and efforts[0] == "high" and efforts[-1] == "low"
    with EventStore(db) as store:
        ids = sorted(s.stream_id.removeprefix(STREAM_PREFIX) for s in store.streams(prefix=STREAM_PREFIX))
    assert ids == [
        "opt.synthetic-diamond-4.m-low.embedding.a0.r0",
        "opt.synthetic-diamond-4.openai-m-reasoning_effort-high.embedding.a0.r0",
    ]
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(db)
        agents = sorted(r["agent"] for r in wh.query("table2_leaderboard").to_dicts())
    assert agents == ["m-low", "m@reasoning_effort=high"]
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\ntrees = ["synthetic-diamond-4"]\nagents = [{agent = "openai:m", colour = "red"}]\n')
    with pytest.raises(SuiteError, match="unknown key 'colour'"):
        Suite.load(bad)
    bad.write_text('name = "b"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m", {agent = "openai:m"}]\n')
    with pytest.raises(SuiteError, match="two agents are labelled"):
        Suite.load(bad)


def test_the_call_cache_serves_identical_calls_and_never_another_models(tmp_path):
    cache = tmp_path / "calls.sqlite"
    base = [
        "play",
        "--tree",
        "synthetic-diamond-4",
        "--embedder",
        "hash",
        "--max-turns",
        "3",
        "--judge",
        "openai:j",
        "--call-cache",
        str(cache),
        "--record",
        "-q",
    ]
    with OpenAICompatibleServer(
        lambda m: '{"score": 1.0, "rationale": "it says so"}' if "ground-truth" in m[0]["content"] else model(m)
    ) as server:
        urls = ["--base-url", server.base_url, "--judge-base-url", server.base_url]
        first = CliRunner().invoke(
            main, [*base, *urls, "--agent", "openai:m", "--db", f"sqlite:///{tmp_path / 'a.sqlite'}"]
        )
        calls = len(server.requests)
        again = CliRunner().invoke(
            main, [*base, *urls, "--agent", "openai:m", "--db", f"sqlite:///{tmp_path / 'b.sqlite'}"]
        )
        assert first.exit_code == 0 and again.exit_code == 0, first.output + again.output
        assert len(server.requests) == calls  # the re-run made no call
        other = CliRunner().invoke(
            main, [*base, *urls, "--agent", "openai:other", "--db", f"sqlite:///{tmp_path / 'c.sqlite'}"]
        )
        assert other.exit_code == 0 and len(server.requests) == calls + 4  # another model: asked, not served
        opts = CliRunner().invoke(
            main,
            [
                *base,
                *urls,
                "--agent",
                "openai:m",
                "--agent-option",
                "top_p=0.5",
                "--db",
                f"sqlite:///{tmp_path / 'd.sqlite'}",
            ],
        )
        assert opts.exit_code == 0 and len(server.requests) == calls + 8  # other options: asked again
    with EventStore(f"sqlite:///{tmp_path / 'b.sqlite'}") as store:
        events = [r.event for s in store.streams() for r in store.read_stream(s.stream_id)]
    assert all(e.cache_hit for e in events if e.TYPE in ("AgentReplied", "JudgeVerdict"))
    with EventStore(f"sqlite:///{tmp_path / 'a.sqlite'}") as store:
        firsts = [r.event for s in store.streams() for r in store.read_stream(s.stream_id)]
    assert not any(e.cache_hit for e in firsts if e.TYPE == "AgentReplied")
    assert [e.raw for e in firsts if e.TYPE == "AgentReplied"] == [e.raw for e in events if e.TYPE == "AgentReplied"]
    # the key holds no credentials and differs by endpoint path, model and request
    k1 = CallCache.key("m", "http://h/v1", {"messages": []})
    assert (
        k1
        != CallCache.key("m2", "http://h/v1", {"messages": []})
        != CallCache.key("m", "http://h/v2", {"messages": []})
    )


def test_an_episode_token_limit_ends_it_and_it_is_scored_and_counted(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(lambda m: "THOUGHT: t\nACTION: something") as server:
        out = CliRunner().invoke(
            main,
            [
                "play",
                "--agent",
                "openai:m",
                "--base-url",
                server.base_url,
                "--record",
                "--db",
                db,
                "--episode-id",
                "lim",
                "--embedder",
                "hash",
                "--max-episode-tokens",
                "1000",
            ],
        )
    assert out.exit_code == 0, out.output
    assert "limit episode_tokens reached" in out.output and "coverage" in out.output
    with EventStore(db) as store:
        events = [r.event for r in store.read_stream(stream_id("lim"))]
    lim = next(e for e in events if e.TYPE == "LimitReached")
    assert lim.used >= 1000 and events[-1].TYPE == "EpisodeScored" and events[-1].q_norm == 0.0
    assert CliRunner().invoke(main, ["replay", "lim", "--db", db, "-q"]).output.count("replay: identical") == 1
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(db)
        row = wh.sql("SELECT status, ended_by FROM episodes").to_dicts()
    assert row == [{"status": "done", "ended_by": "limit:episode_tokens"}]


def test_a_campaign_budget_stops_new_cells_and_ends_those_in_flight(tmp_path):
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(lambda m: "THOUGHT: t\nACTION: something") as server:
        suite = tmp_path / "b.toml"
        suite.write_text(
            f'name = "bud"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\nruns = 4\n'
            f'embedder = "hash"\nconcurrency = 1\nbudget_tokens = 1500\nbase_url = "{server.base_url}"\n'
        )
        report = run_suite(Suite.load(suite), EventStore(db))
    assert report.done >= 1 and report.not_started >= 1 and report.done + report.not_started == 4
    with EventStore(db) as store:
        ended = [store.read_stream(s.stream_id)[-2].event for s in store.streams(prefix=STREAM_PREFIX)]
        limits = [
            r.event
            for s in store.streams(prefix=STREAM_PREFIX)
            for r in store.read_stream(s.stream_id)
            if r.event_type == "LimitReached"
        ]
    assert limits and all(lim.limit == "campaign_tokens" for lim in limits) and len(ended) == report.done


def test_the_window_keeps_the_last_turns_beside_the_system_prompt():
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        agent = OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, window=2))
        for i in range(4):
            agent.reply(f"obs {i}", "topic", i + 1)
        sent = server.requests[-1]["body"]["messages"]
    assert [m["content"] for m in sent] == ["sys", "obs 2", "ACTION: x", "obs 3"]


def test_a_cost_limit_needs_a_price_and_ends_the_episode_when_spent(tmp_path):
    import json

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"prices": [{"model": "m", "input_per_mtok": 1000.0, "output_per_mtok": 1000.0}]}))
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(lambda m: "THOUGHT: t\nACTION: something") as server:
        base = ["play", "--agent", "openai:m", "--base-url", server.base_url, "--embedder", "hash", "-q"]
        no_price = CliRunner().invoke(main, [*base, "--max-episode-cost", "0.5"])
        assert no_price.exit_code == 2 and "has no price for 'm'" in no_price.output
        out = CliRunner().invoke(
            main,
            [*base, "--max-episode-cost", "0.5", "--prices", str(prices), "--record", "--db", db, "--episode-id", "c"],
        )
    assert out.exit_code == 0, out.output
    with EventStore(db) as store:
        events = [r.event for r in store.read_stream(stream_id("c"))]
    lim = next(e for e in events if e.TYPE == "LimitReached")
    assert lim.limit == "episode_cost_usd" and lim.used >= 0.5 and events[-1].TYPE == "EpisodeScored"


@pytest.mark.parametrize(
    "entry, says",
    [
        ({"model": "m", "input_per_mtok": float("nan"), "output_per_mtok": 1.0}, "input_per_mtok is nan"),
        ({"model": "m", "input_per_mtok": -1.0, "output_per_mtok": 1.0}, "input_per_mtok is -1.0"),
        ({"model": "m", "input_per_mtok": "1.0", "output_per_mtok": 1.0}, "input_per_mtok is '1.0'"),
        ({"model": "m", "input_per_mtok": 1.0, "output_per_mtok": 1.0, "cached_input_per_mtok": -0.1}, "cached_input"),
        ({"model": "m", "usd_per_hour": 2.0, "serves": float("inf")}, "serves is inf"),
        ({"model": "m", "usd_per_hour": 2.0, "serves": 1e308}, "serves is 1e+308"),
        ({"model": "m", "usd_per_hour": 2.0, "serves": 2.5}, "serves is 2.5"),
        ({"model": "m", "usd_per_hour": float("inf")}, "usd_per_hour is inf"),
        ({"model": 7, "input_per_mtok": 1.0, "output_per_mtok": 1.0}, "no model name"),
    ],
)
def test_every_price_is_a_finite_number_and_serves_a_whole_number(tmp_path, entry, says):
    """NaN, negative or infinite prices and an unbounded `serves` made every call cost nothing and
    silently disabled --max-episode-cost; a price given as text ended the episode in a TypeError.
    Each is refused when the table is read, naming the file, the model and the field."""
    import json

    from inquitree.core.run.limits import LimitError, PriceTable

    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"prices": [entry]}))  # json writes NaN and Infinity, as Python reads them
    with pytest.raises(LimitError, match=f"{path}: not a price table.*{re.escape(says)}"):
        PriceTable(path)


def test_prices_live_outside_the_installed_package(tmp_path, monkeypatch):
    """--prices FILE, then $INQUITREE_PRICES, then the user's ~/.config/inquitree/prices.json, then
    the shipped (empty) table: no user edits a file inside the package."""
    import json

    from inquitree.core.run.limits import PRICES_ENV, PRICES_PATH, PriceTable

    monkeypatch.delenv(PRICES_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert PriceTable().path == PRICES_PATH
    user = tmp_path / "config" / "inquitree" / "prices.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"prices": [{"model": "mine", "input_per_mtok": 1, "output_per_mtok": 2}]}))
    assert PriceTable().path == user and PriceTable().has("mine")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"prices": []}))
    monkeypatch.setenv(PRICES_ENV, str(other))
    assert PriceTable().path == other and PriceTable(user).path == user


def test_a_server_priced_per_hour_charges_each_call_its_seconds(tmp_path):
    """A model a lab serves itself: usd_per_hour shared by `serves` requests. The episode's cost
    limit ends it on time spent, and `query costs` prices every call by its latency."""
    import json

    from inquitree.core.run.limits import LimitError, PriceTable

    prices = tmp_path / "prices.json"
    entry = {"model": "m", "usd_per_hour": 3600.0, "serves": 2}  # half a dollar per second of a call
    prices.write_text(json.dumps({"prices": [entry]}))
    table = PriceTable(prices)
    assert table.cost("m", {"output": 10**9}, 4.0) == 2.0 and table.cost("m", {"output": 5}) is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"prices": [{**entry, "serves": 0}]}))
    with pytest.raises(LimitError, match="serves is 0, not a whole number from 1"):
        PriceTable(bad)

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(lambda m: "THOUGHT: t\nACTION: something", delay=0.2) as server:
        out = CliRunner().invoke(
            main,
            [
                *["play", "--agent", "openai:m", "--base-url", server.base_url, "--embedder", "hash", "-q"],
                *["--max-episode-cost", "0.5", "--prices", str(prices), "--record", "--db", db, "--episode-id", "h"],
            ],
        )
    assert out.exit_code == 0, out.output
    with EventStore(db) as store:
        events = [r.event for r in store.read_stream(stream_id("h"))]
    replies = [e for e in events if e.TYPE == "AgentReplied"]
    lim = next(e for e in events if e.TYPE == "LimitReached")
    spent = sum(r.latency_ms for r in replies) / 1000 * 0.5
    assert lim.limit == "episode_cost_usd" and lim.used == pytest.approx(spent, abs=1e-5) and lim.used >= 0.5
    assert 1 < len(replies) <= 6  # each call of about 0.2 s costs about 0.1 USD

    wh = str(tmp_path / "w.duckdb")
    sync = CliRunner().invoke(main, ["warehouse", "sync", "--db", db, "--warehouse", wh, "--prices", str(prices)])
    assert sync.exit_code == 0, sync.output
    costs = CliRunner().invoke(main, ["query", "costs", "--warehouse", wh, "--one-off", "--format", "json"])
    assert costs.exit_code == 0, costs.output
    row = next(r for r in json.loads(costs.output) if r["level"] == "episode")
    assert row["cost_usd"] == pytest.approx(spent, rel=1e-6) and row["seconds"] == pytest.approx(spent * 2, abs=2e-3)
    # At 80 columns each level is a table of its own, its numbers shown (in one table with the
    # episodes' ids, the costs table showed no number at all)
    screen = CliRunner(env={"COLUMNS": "80"}).invoke(main, ["query", "costs", "--warehouse", wh, "--one-off"]).output
    heads = [ln for ln in screen.splitlines() if ln.startswith("per ")]
    assert heads == ["per model:", "per campaign and model:", "per episode:"]
    header = next(ln for ln in screen.splitlines() if "cost_usd" in ln)
    assert "output_tokens" in header and max(map(len, screen.splitlines())) <= 80
    assert f"{row['cost_usd']:.2f}" in screen.split("per episode:")[1]


def _judged_model(messages: list[dict]) -> str:
    """An agent, and a judge that first copies the prompt's placeholder and gives a real rationale
    only when told what was wrong (a re-ask that repeated the prompt would get the same answer)."""
    if "ground-truth" not in messages[0]["content"]:
        return model(messages)
    if "could not be used" in messages[-1]["content"]:
        return '{"score": 0.6, "rationale": "The agent states the direction but not the mechanism."}'
    return '{"score": 1.0, "rationale": "Rationale: <one or two sentences>"}'


def test_a_cached_rerun_makes_no_call_even_with_the_endpoint_down(tmp_path):
    """The issue's llama.cpp case: the judge's json_schema probe is answered with a 500 and was never
    cached, so every new process probed again, and with the endpoint stopped a fully cached campaign
    failed every cell. Refusals are kept in the cache now and any cached form is served first."""
    cache = tmp_path / "calls.sqlite"
    with OpenAICompatibleServer(_judged_model) as server:
        server.reject_format = {"json_schema"}
        url = server.base_url
        suite = tmp_path / "cached.toml"
        suite.write_text(
            f'name = "cached"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\njudges = ["openai:j"]\n'
            f'runs = 2\nembedder = "hash"\nmax_turns = 4\nbase_url = "{url}"\njudge_base_url = "{url}"\n'
            f'call_cache = "{cache}"\nconcurrency = 1\n'  # one cell at a time: the probe count is exact
        )
        first = run_suite(Suite.load(suite), EventStore(f"sqlite:///{tmp_path / 'a.sqlite'}"))
        made = len(server.requests)
        probes = sum(
            1 for r in server.requests if (r["body"].get("response_format") or {}).get("type") == "json_schema"
        )
        again = run_suite(Suite.load(suite), EventStore(f"sqlite:///{tmp_path / 'b.sqlite'}"))
        assert (first.done, again.done, again.failed) == (2, 2, 0)
        assert len(server.requests) == made  # endpoint up: not one request
    assert probes == 1  # refused once, remembered for the rest of the campaign
    down = run_suite(Suite.load(suite), EventStore(f"sqlite:///{tmp_path / 'c.sqlite'}"))  # the server is stopped
    assert (down.done, down.failed) == (2, 0)
    with (
        EventStore(f"sqlite:///{tmp_path / 'a.sqlite'}", create=False) as a,
        EventStore(f"sqlite:///{tmp_path / 'c.sqlite'}", create=False) as c,
    ):
        verdicts = [r.event for r in a.read_all() if r.event_type == "JudgeVerdict"]
        cached = [r.event for r in c.read_all() if r.event_type == "JudgeVerdict"]
    # The re-ask stated the problem and got a usable verdict: one paid call for the placeholder, one
    # for the answer, and the verdict's usage is what they cost (the second run of the cell asks the
    # same and is served from the cache: a hit, which costs nothing).
    assert verdicts and all(v.score == 0.6 for v in verdicts) and not verdicts[0].cache_hit
    judge_calls = [r for r in server.requests if "ground-truth" in r["body"]["messages"][0]["content"]]
    assert len(judge_calls) == 2 * len(set(v.item_id for v in verdicts)) + 1  # + the refused probe
    assert all(v.cache_hit and v.usage == w.usage for v, w in zip(cached, verdicts, strict=False))


def test_placeholder_rationales_are_judge_errors():
    from inquitree.core.players.judges import parse_verdict

    for why in ["Rationale: <one or two sentences>", "N/A", "n/a.", "<one or two sentences>", "none", "---", "TBD"]:
        score, reason = parse_verdict(f'{{"score": 1.0, "rationale": "{why}"}}')
        assert score is None and "placeholder" in reason, why
    assert parse_verdict('{"score": 0.6, "rationale": "Not applicable here: the mechanism is missing."}')[0] == 0.6


def test_history_budget_and_context_errors_trim_the_history_never_the_episode(tmp_path):
    """A turn window does not bound tokens: with a small model the conclusion prompt overflowed the
    context and the whole played episode was left unscored. A call refused for its length is sent
    again with the history cut to the window the error names; --history-tokens sets a budget up front."""
    from inquitree.core.players.agents import context_size, estimated_tokens, fit_history

    assert context_size("Requested tokens (4211) exceed context window of 4096") == 4096
    assert context_size("This model's maximum context length is 128000 tokens.") == 128000
    turns = [{"role": r, "content": "x" * 300} for r in ("user", "assistant") * 5] + [{"role": "user", "content": "q"}]
    kept = fit_history(turns, 250)
    assert kept[-1]["content"] == "q" and kept[0]["role"] == "user" and estimated_tokens(kept) <= 250
    assert fit_history(turns, 1) == [turns[-1]]  # the observation being answered always stays

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(model) as server:
        server.context_tokens = 1800  # the system prompt, a few turns and the 1,024-token reply
        out = CliRunner().invoke(
            main,
            model_play(server.base_url, "--max-turns", "12", "--record", "--db", db, "--episode-id", "long", "-q"),
        )
        sizes = [sum(len(m["content"]) for m in r["body"]["messages"]) // 4 + 1024 for r in server.requests]
        refused = [n for n in sizes if n > 1800]  # what the server refused as too long
        sent = [len(r["body"]["messages"]) for r in server.requests]
    assert out.exit_code == 0, out.output
    with EventStore(db, create=False) as store:
        events = [r.event for r in store.read_stream(stream_id("long"))]
    assert events[-1].TYPE == "EpisodeScored" and not any(e.TYPE == "EpisodeFailed" for e in events)
    assert len(refused) == 1  # refused once; the budget it taught held for every later turn
    assert max(sent[-3:]) < max(sent)  # the later turns went out with less history


def test_a_key_the_endpoint_echoes_in_its_answer_is_never_stored(tmp_path):
    """An API key echoed in a 200 reply was stored and exported as it was (the same key in an
    error was redacted): every known secret (the key, credential options and header values, a
    URL's password and query values) is redacted from each reply and reasoning before it is
    recorded, cached or exported."""
    key, header = "sk-echoed-key-0123456789", "Bearer echoed-header-0004"

    def echo(messages: list[dict]) -> str:
        return f"THOUGHT: my key is {key} and {header}\nACTION: something"

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    cache = tmp_path / "calls.sqlite"
    with OpenAICompatibleServer(echo) as server:
        server.reasoning = f"thinking with {key}"
        out = CliRunner().invoke(
            main,
            [
                *["play", "--agent", "openai:m", "--base-url", server.base_url, "--embedder", "hash", "-q"],
                *["--agent-option", f'extra_headers={{"Authorization": "{header}"}}', "--max-turns", "3"],
                *["--call-cache", str(cache), "--record", "--db", db, "--episode-id", "k"],
            ],
            env={"OPENAI_API_KEY": key},
        )
    assert out.exit_code == 0, out.output
    exported = CliRunner().invoke(main, ["episodes", "export", "k", "--db", db]).output
    stored = (tmp_path / "e.sqlite").read_bytes() + cache.read_bytes() + exported.encode()
    assert b"echoed" not in stored and "my key is ***" in exported


@pytest.mark.parametrize(("retries", "said"), [(0, "gave up after 1 attempt)"), (1, "gave up after 2 attempts)")])
def test_a_failed_call_says_how_many_attempts_it_made(retries, said):
    from inquitree.core.calls import ChatModel, ModelCallError

    settings = CallSettings(timeout=5, max_retries=retries)
    chat = ChatModel("m", "http://127.0.0.1:9/v1", settings=settings, sleep=lambda s: None)  # no back-off wait
    with pytest.raises(ModelCallError) as failed:
        chat.chat([{"role": "user", "content": "hello"}])
    assert str(failed.value).endswith(said) and failed.value.kind == "connection"


def test_a_cost_limit_prices_the_model_asked_for_not_the_name_the_endpoint_answers(tmp_path):
    """OpenAI answers gpt-4o-2024-08-06 to a request for gpt-4o: priced by the answer's name, no call
    had a price and --max-episode-cost 0.05 let every turn run. Priced by the model asked for, the limit
    ends the episode; a price entry's aliases name the dated spellings."""
    import json

    from inquitree.core.run.limits import PriceTable

    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "prices": [
                    {
                        "model": "gpt-4o",
                        "aliases": ["gpt-4o-2024-08-06"],
                        "input_per_mtok": 1000.0,
                        "output_per_mtok": 1000.0,
                    }
                ]
            }
        )
    )
    table = PriceTable(prices)
    assert table.cost("GPT-4o-2024-08-06", {"input": 1000}) == table.cost("gpt-4o", {"input": 1000}) == 1.0
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(lambda m: "THOUGHT: t\nACTION: something") as server:
        server.answer_model = "gpt-4o-2025-99-99"  # a spelling no entry knows
        out = CliRunner().invoke(
            main,
            [
                "play",
                "--agent",
                "openai:gpt-4o",
                "--base-url",
                server.base_url,
                "--embedder",
                "hash",
                "-q",
                "--max-episode-cost",
                "0.05",
                "--prices",
                str(prices),
                "--record",
                "--db",
                db,
                "--episode-id",
                "d",
            ],
        )
    assert out.exit_code == 0, out.output
    with EventStore(db) as store:
        events = [r.event for r in store.read_stream(stream_id("d"))]
    lim = next(e for e in events if e.TYPE == "LimitReached")
    assert lim.limit == "episode_cost_usd" and lim.used >= 0.05
    assert sum(e.TYPE == "AgentReplied" for e in events) < 20
    # the warehouse's costs price the same calls the same way, under the name asked for
    from inquitree.warehouse.warehouse import Warehouse

    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(db, prices=prices)
        rows = [r for r in wh.query("costs").to_dicts() if r["level"] == "model" and r["model"] == "gpt-4o"]
    assert rows and rows[0]["cost_usd"] is not None and rows[0]["cost_usd"] >= 0.05


@pytest.mark.parametrize("bad", [-1_000_000_000, 10**12, True, "5"])
def test_a_token_count_that_cannot_be_one_is_unreported_never_subtracted(tmp_path, bad):
    """prompt_tokens -1,000,000,000 from an endpoint turned the token and cost limits off."""
    from inquitree.core.calls.models import _usage
    from inquitree.core.run.limits import tokens_of

    usage = _usage({"prompt_tokens": bad, "completion_tokens": 10})
    assert usage["input"] is None and usage["output"] == 10
    assert tokens_of({"input": bad, "output": 10}) == 10  # a cached reply's usage is read the same way
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(lambda m: "THOUGHT: t\nACTION: something") as server:
        server.usage_override = {"prompt_tokens": bad, "completion_tokens": 50}
        out = CliRunner().invoke(
            main,
            model_play(
                server.base_url, "-q", "--max-episode-tokens", "200", "--record", "--db", db, "--episode-id", "t"
            ),
        )
    assert out.exit_code == 0, out.output
    with EventStore(db) as store:
        events = [r.event for r in store.read_stream(stream_id("t"))]
    lim = next(e for e in events if e.TYPE == "LimitReached")
    assert lim.limit == "episode_tokens" and sum(e.TYPE == "AgentReplied" for e in events) == 4  # 4 x 50


@pytest.mark.parametrize("field", ["messages", "model", "n", "stream", "stream_options"])
def test_an_option_never_replaces_what_the_client_sends(tmp_path, field):
    """An option named messages, model or n replaced what the engine sent: a suite from another lab
    could make the user's key call another model with its own prompts, 64 completions a call, while
    the record said the engine's prompts went to the named model. Refused, naming the option."""
    with OpenAICompatibleServer(lambda m: "ACTION: x") as server:
        out = CliRunner().invoke(main, model_play(server.base_url, "-q", "--agent-option", f"{field}=64"))
        suite = tmp_path / "s.toml"
        suite.write_text(
            f'name = "s"\ntrees = ["synthetic-diamond-4"]\nagents = [{{agent = "openai:m", options = {{{field} = 64}}, '
            f'label = "x"}}]\nembedder = "hash"\nbase_url = "{server.base_url}"\n'
        )
        ran = CliRunner().invoke(main, ["suite", "run", str(suite), "--db", f"sqlite:///{tmp_path / 'e.sqlite'}"])
        assert not any(r["path"].endswith("/chat/completions") for r in server.requests)
    assert out.exit_code != 0 and f"the client sets {field!r} itself" in out.output, out.output
    assert ran.exit_code != 0 and field in ran.output and "cannot be" in ran.output, ran.output


@pytest.mark.parametrize("where", ["key", "path"])
def test_a_secret_echoed_in_the_answers_model_name_is_never_recorded(tmp_path, where):
    """A key the endpoint echoed in the answer's `model` was stored, cached and exported; so was a key
    that stood in the base URL's path (hidden in the URL, not in what came back)."""
    secret = "sk-echoedSecret0123456789"
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    with OpenAICompatibleServer(lambda m: "THOUGHT: t\nACTION: draw_conclusion") as server:
        server.answer_model = f"model-{secret}"
        base = server.base_url + (f"/{secret}" if where == "path" else "")
        env = {"OPENAI_API_KEY": secret if where == "key" else "local"}
        out = CliRunner(env=env).invoke(
            main, model_play(base, "-q", "--max-turns", "2", "--record", "--db", db, "--episode-id", "s")
        )
    assert out.exit_code == 0, out.output
    with EventStore(db) as store:
        recorded = "".join(r.event.to_json().decode() for r in store.read_stream(stream_id("s")))
    assert secret not in recorded and secret not in out.output
    assert '"model":"model-***"' in recorded.replace(" ", "")


@pytest.mark.parametrize("transport", ["direct", "sdk"])
def test_extra_headers_query_and_body_options_go_where_the_sdk_sends_them(transport, monkeypatch):
    """``extra_headers`` given as an option went out inside the JSON body, so a credential header
    given that way never authenticated: the client sends extra_headers as headers, extra_query in
    the query string and extra_body merged into the body, as the OpenAI SDK does, on both transports."""
    from inquitree.core.calls import CallSettings
    from inquitree.core.players.agents import ModelConfig, OpenAIChatAgent

    monkeypatch.setenv("INQUITREE_CHAT_HTTP", transport)
    options = {
        "extra_headers": {"X-Lab-Auth": "lab-token-1"},
        "extra_query": {"tenant": "lab-a"},
        "extra_body": {"top_k": 5},
    }
    with OpenAICompatibleServer(lambda m: "ACTION: ok") as server:
        settings = CallSettings(options=options)
        OpenAIChatAgent("m", "sys", ModelConfig(server.base_url, settings)).reply("obs", "topic", 1)
        sent = server.requests[0]
    assert {k.lower(): v for k, v in sent["headers"].items()}.get("x-lab-auth") == "lab-token-1"
    assert "tenant=lab-a" in sent["path"] and sent["body"]["top_k"] == 5
    assert not {"extra_headers", "extra_query", "extra_body"} & set(sent["body"])
