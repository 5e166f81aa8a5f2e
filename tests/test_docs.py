"""The README and docs/ read as a manual: every relative link resolves, the README stays a guide,
and the product speaks of itself: no numbered work periods, internal issue numbers or diary in the
README, the manual, comments, messages, query descriptions or file names (history lives in git and
in CHANGELOG.md, by version)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MANUAL = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# Work periods and issue numbers, as the diary wrote them. A bare #N is a decision of
# docs/DECISIONS.md, so only numbers above the last decision are refused.
DIARY = re.compile(r"\b(sessions? \d+|this session|the session's|issue #?\d+|work log)\b", re.I)
HASH_NUMBER = re.compile(r"(?<![\w&/\"'])#(\d+)\b")
# Recordings and data keep what they recorded: logs, labelled sets, result files, tree texts.
NOT_PROSE = re.compile(
    r"^(tests/golden/|tests/data/|docs/studies/.*/(episodes|tables)/|trees/.*\.json$|core/data/"
    r"|scripts/it18/|tests/test_docs\.py$)|\.(png|jsonl|csv|gguf)$"
)


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    return out or [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]


def headings(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return found


def test_every_relative_link_in_the_readme_and_the_manual_resolves():
    broken = []
    for page in MANUAL:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            where = (page.parent / file).resolve() if file else page
            if not where.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and where.suffix == ".md" and anchor not in headings(where):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "links that do not resolve:\n" + "\n".join(broken)


def test_the_readme_is_a_guide():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: it is the door, the manual is docs/"
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert first_block[0].endswith("inquitree replay last") and first_block[1] == "bash scripts/test.sh"
    assert text.index("```bash") < text.index("\n## "), "the set-up commands come before any section"
    for page in ("real-models", "campaigns", "warehouse", "statistics", "viewer", "inspect", "proving-the-log"):
        assert f"(docs/{page}.md)" in text, page
    assert "(docs/trees.md)" in text and "(docs/SECURITY.md)" in text and "(docs/ARCHITECTURE.md)" in text


def test_the_product_speaks_of_itself():
    last_decision = max(int(n) for n in re.findall(r"^\| (\d+) \|", (ROOT / "docs" / "DECISIONS.md").read_text(), re.M))
    from tests_support import tracked_texts

    found = [
        f"{name}: a file named after a work period"
        for name in tracked()
        if "session" in name.lower() or re.search(r"issue[-_]?\d", name.lower())
    ]
    for name, text in tracked_texts(ROOT, NOT_PROSE):
        for n, line in enumerate(text.splitlines(), 1):
            if DIARY.search(line.replace("session_replication_role", "")):
                found.append(f"{name}:{n}: {line.strip()[:100]}")
            found += [
                f"{name}:{n}: #{m} is no decision: {line.strip()[:80]}"
                for m in HASH_NUMBER.findall(line)
                if int(m) > last_decision and not name.endswith((".j2", ".css", ".js"))
            ]
    assert not found, "the product speaks of how it was made:\n" + "\n".join(found)


def test_query_descriptions_speak_of_the_analysis():
    from click.testing import CliRunner

    from inquitree.cli import main

    listed = CliRunner().invoke(main, ["query", "--list"]).output
    assert listed.strip() and not DIARY.search(listed) and not re.search(r"#(4\d|5\d)\b", listed)


def test_the_manual_builds_as_a_site(tmp_path):
    """`mkdocs build --strict`: every page in the navigation, every link and anchor inside the site."""
    import sys

    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "instrument" / "index.html").exists()


# What reads as the history of the work rather than the tool as it is.
HISTORY = re.compile(r"\b(no longer|the old \w+|used to be|previously|anymore|any more)\b", re.I)


def test_no_page_points_outside_the_repository_or_speaks_of_its_past():
    found = []
    for page in MANUAL:
        if page.name == "CHANGELOG.md":
            continue
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if "../shared" in line or re.search(r"\]\((\.\./){2,}", line):
                found.append(f"{page.relative_to(ROOT)}:{n}: points outside the repository: {line.strip()[:80]}")
            if HISTORY.search(line) and "would no longer" not in line and "may no longer" not in line:
                found.append(f"{page.relative_to(ROOT)}:{n}: speaks of the past: {line.strip()[:80]}")
    assert not found, "\n".join(found)


def test_every_version_in_the_changelog_has_its_date():
    versions = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert versions and all(v == "Unreleased" or re.search(r"\(\d{4}-\d\d-\d\d", v) for v in versions), versions


def test_the_local_model_script_cites_sections_that_exist():
    text = (ROOT / "scripts" / "local-model.sh").read_text(encoding="utf-8")
    cited = re.findall(r"\(((?:docs/)?[\w./-]+\.md), \"([^\"]+)\"\)", text)
    assert cited, "the script cites where its figures are measured"
    for page, section in cited:
        titles = [line.lstrip("#").strip() for line in (ROOT / page).read_text().splitlines() if line.startswith("#")]
        assert section in titles, f"scripts/local-model.sh cites {page}, section {section!r}: no such section"


def test_the_readmes_python_example_runs_through_the_faces(tmp_path, monkeypatch):
    """The README's Python example, after a recorded episode in its folder: it imports only the
    user's face, ``inquitree.api``, reads the episode, replays it and queries the warehouse."""
    from click.testing import CliRunner

    from inquitree.cli import main

    text = (ROOT / "README.md").read_text()
    block = re.search(r"\*\*From Python\*\*.*?```python\n(.*?)```", text, flags=re.S)
    assert block is not None
    code = block.group(1)
    imports = [line.split()[1] for line in code.splitlines() if line.startswith(("from inquitree", "import inquitree"))]
    assert imports == ["inquitree.api"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INQUITREE_DB", raising=False)
    played = CliRunner().invoke(main, ["play", "--tree", "synthetic-chain-7", "--agent", "oracle", "--record", "-q"])
    assert played.exit_code == 0, played.output
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "replays identically: True" in out.stdout and "shape: (1, " in out.stdout


def test_the_suite_keys_page_lists_every_key_a_suite_may_have(tmp_path):
    """14 of a suite's 39 keys were documented: the page's tables are made from the declaration
    the suite's checks read, and an unknown key's error lists the same keys."""
    from inquitree.core.run.campaign import SUITE_KEYS, SuiteError, suite_keys_markdown

    page = (ROOT / "docs" / "suite-keys.md").read_text()
    tables = page.split("<!-- the tables below: core.run.campaign.suite_keys_markdown() -->\n")[1]
    assert tables.split("<!-- end of the tables -->")[0] == suite_keys_markdown()
    import dataclasses

    from inquitree.core.run import EPISODE_OPTIONS
    from inquitree.core.run.campaign import Suite

    episode = {o.name for o in EPISODE_OPTIONS}
    assert set(SUITE_KEYS) == {f.name for f in dataclasses.fields(Suite)} - {"source", "entries", "episode"} | episode
    bad = tmp_path / "typo.toml"
    bad.write_text('name = "t"\ntrees = ["synthetic-chain-7"]\nagents = ["random"]\nmax_turn = 5\n')
    with pytest.raises(SuiteError, match="unknown key 'max_turn'") as refused:
        Suite.load(bad)
    assert all(key in str(refused.value) for key in SUITE_KEYS)
