"""The viewer in a real browser (Debian's Chromium, driven by Playwright), on SQLite and on
PostgreSQL, served by ``inquitree view`` in a process of its own:

- a campaign that ``inquitree suite run`` starts in another process appears on the home page, and
  its cells go from pending through running to their ends (one failing with its reason) on the
  campaign's page, with no reload (a mark left on each page survives);
- episodes recorded afterwards are caught up with: a search finds a phrase planted in one reply
  and links to its turn; the side-by-side page marks the first divergence of two scripted agents
  whose paths are known; a reply holding a script, an ``onerror`` image and a ``javascript:`` link
  runs nothing; the tree page draws the episode's path;
- no page logs a console error;
- a lab at work: while a campaign runs with the viewer open, `warehouse sync`, `query` and
  `report` run from other processes at once, the episode list is sorted and filtered in the page,
  and Ctrl-C on the campaign shows as "interrupted" on the page and in `suite status`.

With ``$INQUITREE_SCREENSHOTS`` set to a folder, the SQLite run saves a screenshot of each page kind
there (docs/viewer.md's pictures, ``docs/viewer/``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the viewer's extra is not installed (pip install 'inquitree[view]')")
pytest.importorskip("playwright", reason="the browser tests need playwright (pip install 'inquitree[test]')")

from playwright.sync_api import expect
from test_viewer import PLANTED, XSS

from inquitree.core.game.tree import resolve_tree
from inquitree.events.store import EventStore

from enginekit import OracleAgent, ScriptAgent, follower, play
from openai_server import OpenAICompatibleServer
from tests_support import INTERRUPTIBLE, chromium_browser, chromium_path, viewer_process

MARK = "window.__noReload = 'still here'"  # gone if the page reloads
TERMINAL = ("finished", "limit", "failed")


@pytest.fixture
def browser():
    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (scripts/test.sh installs Debian's package)")
        pytest.skip("chromium is not installed")
    with chromium_browser() as b:
        yield b


def _suite(tmp_path: Path, base_url: str) -> Path:
    """Eight cells of a model agent behind a slow loopback server (each reply 0.1 s), eight turns at
    most: long enough to watch them run; the server's first answer is a 500, so one cell fails."""
    path = tmp_path / "live.toml"
    path.write_text(
        'name = "live test"\ntrees = ["synthetic-diamond-4"]\nagents = ["openai:m"]\nrandomness = [0, 5]\n'
        'runs = 4\nembedder = "hash"\nmax_turns = 8\nconcurrency = 2\nretries = 0\nmax_retries = 0\n'
        f'base_url = "{base_url}"\n'
    )
    return path


def _record_readers(url: str, tmp_path: Path) -> dict[str, str]:
    """Episodes recorded while the viewer runs: the oracle, a follower of it that parts at step 4,
    and a script whose first reply holds the planted phrase and the XSS payload."""
    tree = resolve_tree("synthetic-diamond-4")
    with EventStore(url) as store:
        oracle = play(tree, OracleAgent(tree), store=store)
        parted = play(tree, follower(oracle, tmp_path / "follower.txt"), store=store, max_turns=12)
        xss = tmp_path / "xss.txt"
        xss.write_text(XSS + "\n---\n" + "\n---\n".join(["ACTION: (1) nothing"] * 8) + "\n")
        scripted = play(tree, ScriptAgent(str(xss)), store=store, max_turns=4)
    return {"oracle": oracle.episode_id, "follower": parted.episode_id, "xss": scripted.episode_id}


class _Pages:
    """One browser page per viewer page kind, each collecting console errors."""

    def __init__(self, browser, base: str, shots: Path | None):
        self.context = browser.new_context(viewport={"width": 1200, "height": 900})
        self.base, self.shots, self.errors = base, shots, []

    def open(self, path: str):
        page = self.context.new_page()
        page.on("console", lambda m: self.errors.append(f"{path}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"{path}: {e}"))
        page.goto(self.base + path)
        return page

    def shot(self, page, name: str) -> None:
        if self.shots is not None:
            page.screenshot(path=str(self.shots / f"{name}.png"))


def test_the_viewer_in_a_browser(store_url, tmp_path, browser):
    EventStore(store_url).close()  # an empty store: the viewer starts before any campaign
    shots = None
    if os.environ.get("INQUITREE_SCREENSHOTS") and store_url.startswith("sqlite"):
        shots = Path(os.environ["INQUITREE_SCREENSHOTS"])
        shots.mkdir(parents=True, exist_ok=True)
    with (
        OpenAICompatibleServer(
            lambda m: "ACTION: (1) nothing" if "numbered" in m[-1]["content"] else "THOUGHT: hm\nACTION: not sure yet",
            delay=0.1,
        ) as server,
        viewer_process(store_url, str(tmp_path / "w.duckdb")) as base,
    ):
        server.faults = [500]
        pages = _Pages(browser, base, shots)
        home = pages.open("/")
        assert "no campaign in the store yet" in home.inner_text("#campaigns")
        suite = pages.open("/suites/live-test")
        assert "Not in the store yet" in suite.inner_text("#summary")
        for p in (home, suite):
            p.evaluate(MARK)

        run = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inquitree",
                "suite",
                "run",
                str(_suite(tmp_path, server.base_url)),
                "--db",
                store_url,
                "--trust-suite",  # the test's own suite, whose loopback server may see the (dummy) key
            ],
            env={**os.environ, "OPENAI_API_KEY": "none"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            home.wait_for_selector('#campaigns tr[data-key="live-test"]', timeout=60_000)
            suite.wait_for_selector("#grid td.st-running", timeout=60_000)
            pages.shot(suite, "suite")
            assert suite.locator("#grid td[class^=st-] > a").count() == 8
            # Playwright's locators and expectations, not a string predicate: the viewer's own CSP
            # (no eval) refused that on a busy machine.
            ended = ", ".join(f"#grid td.st-{s}" for s in TERMINAL)
            expect(suite.locator(ended)).to_have_count(8, timeout=120_000)
            out = run.communicate(timeout=120)[0].decode()
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert run.returncode == 1, out  # one cell failed, on purpose
        for p in (home, suite):
            assert p.evaluate("window.__noReload") == "still here"  # updated in place, never reloaded
        failed = suite.locator("#grid td.st-failed")
        assert failed.count() == 1
        assert "500" in suite.inner_text("#failures") and "failed at step" in suite.inner_text("#failures")
        assert suite.locator("#grid td.st-limit").count() == 7  # max_turns ended the others
        assert "8 of 8 cells ended" in suite.inner_text("#summary")
        expect(home.locator("#campaigns")).to_contain_text("8 of 8 cells ended")

        ids = _record_readers(store_url, tmp_path)  # after the viewer started: it catches up in the background
        found = pages.open("/search?q=" + PLANTED.replace(" ", "+"))
        link = found.locator(f'a[href="/episodes/{ids["xss"]}#turn-1"]')
        deadline = time.monotonic() + 60
        while link.count() == 0 and time.monotonic() < deadline:  # the page never waits for the sync
            time.sleep(0.5)
            found.reload()
        assert link.count() == 1
        pages.shot(found, "search")
        link.click()
        found.wait_for_url(f"**/episodes/{ids['xss']}#turn-1")
        assert PLANTED in found.inner_text("#turn-1")
        assert found.evaluate("document.body.dataset.pwned") is None  # no planted script ran
        assert found.locator("#turn-1 a[href^='javascript']").count() == 0

        episode = pages.open(f"/episodes/{ids['oracle']}")
        episode.keyboard.press("j")
        episode.keyboard.press("j")
        second = episode.evaluate("[...document.querySelectorAll(\".turn[id^='turn-']\")][1].id")
        assert episode.evaluate("location.hash") == "#" + second
        episode.keyboard.press("h")
        episode.keyboard.press("t")
        assert episode.locator(".engine-note.focus[data-tag='transition']").count() == 1
        pages.shot(episode, "episode")

        tree = pages.open(f"/trees/synthetic-diamond-4?episode={ids['follower']}")
        assert tree.locator("#tree-picture svg").count() == 1
        assert "visit #1" in tree.inner_text("#tree-picture")
        pages.shot(tree, "tree")

        compare = pages.open("/compare?a=oracle&b=follower&one_off=1")
        assert "Paired comparison" in compare.inner_text("body")
        pages.shot(compare, "compare")
        pair = pages.open(f"/compare/episodes?a={ids['oracle']}&b={ids['follower']}")
        assert "they part at step 4" in pair.inner_text("body")
        assert pair.locator("#divergence").inner_text().strip() == "4"
        pages.shot(pair, "side_by_side")

        figures = pages.open("/figures")
        assert figures.locator("figure img").count() >= 4
        for img in figures.locator("figure img").all():
            expect(img).to_have_js_property("complete", True)
            assert img.evaluate("i => i.naturalWidth") > 0
        pages.shot(figures, "figures")
        pages.open("/trees")
        pages.shot(pages.open("/"), "home")  # the campaign, and the episodes the viewer caught up with
        # Closing the pages ends their event streams; nothing on any page logged an error before.
        errors = list(pages.errors)
        pages.context.close()
    assert errors == []


def test_a_lab_at_work_beside_the_viewer(store_url, tmp_path, browser):
    """as a lab works: a campaign runs with the viewer open; meanwhile `warehouse sync`,
    `query` and `report` run from other processes, all at once; the episode list is sorted and
    filtered in the page (its state in the URL); the campaign is interrupted with Ctrl-C, and the
    page and `suite status` say so within seconds."""
    import re
    import signal

    EventStore(store_url).close()
    wh = str(tmp_path / "w.duckdb")
    suite = tmp_path / "lab.toml"
    with (
        OpenAICompatibleServer(
            lambda m: "ACTION: (1) nothing" if "numbered" in m[-1]["content"] else "THOUGHT: hm\nACTION: not sure yet",
            delay=0.25,
        ) as server,
        viewer_process(store_url, wh) as base,
    ):
        suite.write_text(
            'name = "lab"\ntrees = ["synthetic-diamond-4", "synthetic-chain-7"]\nagents = ["openai:m"]\n'
            'randomness = [0]\nruns = 60\nembedder = "hash"\nmax_turns = 6\nconcurrency = 1\nretries = 0\n'
            f'max_retries = 0\nbase_url = "{server.base_url}"\n'
        )
        inquitree = [sys.executable, "-m", "inquitree"]
        run = subprocess.Popen(
            [*inquitree, "suite", "run", str(suite), "--db", store_url, "--trust-suite"],
            env={**os.environ, "OPENAI_API_KEY": "none"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            **INTERRUPTIBLE,  # interrupted below with SIGINT, whatever the disposition the tests started with
        )
        try:
            pages = _Pages(browser, base, None)
            home = pages.open("/")
            row = home.locator('#campaigns tr[data-key="lab"]')
            expect(row).to_contain_text("running", timeout=60_000)
            expect(row).to_contain_text(re.compile(r"[1-9][0-9]* of 120 cells ended"), timeout=60_000)
            others = [
                subprocess.Popen([*inquitree, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for args in (
                    ["warehouse", "sync", "--db", store_url, "--warehouse", wh],
                    ["query", "episode_summary", "--warehouse", wh, "--format", "csv"],
                    ["report", "--out", str(tmp_path / "report"), "--db", store_url, "--warehouse", wh],
                )
            ]
            for proc in others:  # side by side with the viewer, the campaign and one another
                out, err = proc.communicate(timeout=300)
                assert proc.returncode == 0, (proc.args, out[-1500:], err[-1500:])
            assert run.poll() is None, "the campaign should still be running"
            assert (tmp_path / "report" / "index.html").exists()

            listing = pages.open("/")  # the snapshot the sync published
            listing.locator("table.episodes th a", has_text="steps").click()
            listing.wait_for_url("**/?sort=steps&dir=asc#episodes")
            listing.select_option("select[name=status]", "done")
            listing.locator("form.filters button").click()
            listing.wait_for_url("**status=done**")
            assert "sort=steps" in listing.url and "dir=asc" in listing.url  # the sort survives the filter
            statuses = listing.locator("table.episodes tr td:nth-child(6)").all_inner_texts()
            assert statuses and set(statuses) == {"done"}
            steps = [int(s) for s in listing.locator("table.episodes tr td:nth-child(8)").all_inner_texts()]
            assert steps == sorted(steps)

            run.send_signal(signal.SIGINT)  # Ctrl-C
            out = run.communicate(timeout=120)[0].decode()
            t0 = time.monotonic()
            expect(row).to_contain_text("interrupted", timeout=30_000)
            assert time.monotonic() - t0 < 30
            assert "running" not in row.inner_text()
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        status = subprocess.run(
            [*inquitree, "suite", "status", str(suite), "--db", store_url], capture_output=True, text=True, timeout=120
        )
        assert "interrupted" in status.stdout + status.stderr, (out[-1500:], status.stdout, status.stderr)
        assert not pages.errors, pages.errors
