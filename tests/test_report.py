"""The HTML report, opened in headless Chromium (Debian's package; scripts/test.sh installs it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import pytest

from inquitree.core.tree import resolve_tree
from inquitree.events.store import EventStore
from inquitree.warehouse.report import write_report
from inquitree.warehouse.sync import Warehouse

from enginekit import OracleAgent, RandomAgent, play


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (scripts/test.sh installs Debian's package)")
        pytest.skip("chromium is not installed")
    return path


def dump_dom(url: str) -> str:
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run(
            [
                chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=5000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.fixture
def report_dir(sqlite_url, tmp_path):
    store = EventStore(sqlite_url)
    tree = resolve_tree("synthetic-diamond-4")
    for seed in range(3):
        for a in (0, 4):
            play(tree, RandomAgent(tree, seed), store=store, seed=seed, randomness=a)
    play(tree, OracleAgent(tree), store=store, randomness=4, seed=5)
    store.close()
    with Warehouse(str(tmp_path / "w.duckdb")) as wh:
        wh.sync(sqlite_url)
        write_report(wh, tmp_path / "report")
    return tmp_path / "report"


def test_report_figures_and_an_episode_page_render_in_chromium(report_dir):
    index = dump_dom(f"file://{report_dir / 'index.html'}")
    assert re.search(r'data-figures="5"', index) and re.search(r'data-figures-loaded="5"', index), index[:500]
    assert "Leaderboard (Table 2" in index and "Figure 3c" in index
    links = re.findall(r'href="(episodes/[^"]+\.html)"', index)
    assert len(links) == 7
    page = dump_dom(f"file://{report_dir / links[-1]}")
    assert page.count('class="turn env"') >= 4 and page.count('class="turn agent"') >= 4
    assert "hint level" in page or "best match" in page
    assert "FAKE #0" in page  # the oracle at a=4 meets fakes and redoes them; the viewer shows the draws
    assert "embedding:hash" in page  # its verdicts and scores
