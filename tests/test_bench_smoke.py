"""Every bench and study script runs: a quick run of each, in a subprocess as a user runs it,
writing its results to a temporary file (never into bench/results or studies/results). A bench
nobody runs rots: two crashed at an earlier head (an `EventStore._writer` that no longer existed;
`compare.sql` run without its agents, after the bench had appended events to the store it
measured).

The real-model benches need a server (scripts/local-model.sh start): without one they must say so
in one line and exit non-zero, which is what is checked here."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
STUDIES = ROOT / "studies"
DEAD = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there

RUNS = {
    "attacks.py": ["--out", "{out}"],
    "cached_rerun.py": ["--runs", "1", "--out", "{out}"],
    "campaign.py": ["--quick", "--out", "{out}"],
    "cli_startup.py": ["--runs", "1", "--out", "{out}"],
    "embedder.py": ["--quick", "--out", "{out}"],
    "engine.py": ["--episodes", "5", "--rounds", "1", "--out", "{out}"],
    "engine_ab.py": ["--base", "HEAD", "--rounds", "1", "--episodes", "5", "--out", "{out}"],
    "episodes_list.py": ["--quick", "--out", "{out}"],
    "faults.py": ["--quick", "--out", "{out}"],
    "fewer_events.py": ["--episodes", "10", "--out", "{out}"],
    "inspect_overhead.py": ["--runs", "1", "--out", "{out}"],
    "integrity.py": ["--events", "2000", "--rounds", "1", "--per-round", "20", "--out", "{out}"],
    "random_agent.py": ["--seeds", "1", "--out", "{out}"],
    "scale.py": ["--sizes", "6000,9000", "--out", "{out}"],
    "search_worst.py": ["--quick", "--out", "{out}"],
    "slow_drip.py": ["--quick", "--out", "{out}"],
    "store_append.py": ["--events", "2000", "--batch", "500", "--single", "20", "--out", "{out}"],
    "trees_calibration.py": ["--quick", "--out", "{out}"],
    "viewer.py": ["--quick", "--out", "{out}"],
    "viewer_first_page.py": ["--before", "500", "--appended", "2000", "--runs", "1", "--out", "{out}"],
}
STUDY_RUNS = {  # the instrument studies (studies/): quick runs, as the benches
    "matching.py": ["--embedders", "hash", "--out", "{out}"],
    # nomic at the discard port: skipped with one line, as on a machine without its server
    "instrument_record.py": ["--nomic-url", "http://127.0.0.1:9/v1", "--draws", "100", "--out", "{out}"],
    "judging.py": ["--out", "{out}"],
    "qwen_corrected.py": ["--out", "{out}"],
    "stats_sim.py": ["--campaigns", "5", "--episodes", "12", "--out", "{out}"],
    "corrected.py": ["--campaigns", "2", "--out", "{out}"],
}
STUDIES_NEEDING_A_PACKAGE = {  # kept out of InquiTree's install: without it the study says so in one line
    "ppi_reference.py": "ppi-python",
}
NEEDS_A_STORE = {  # run against a small generated store, which they must leave as it was
    "intervals.py cost": ["cost", "--db", "{db}", "--out", "{out}"],
    "warehouse.py measure": ["measure", "--db", "{db}", "--runs", "1", "--out", "{out}"],
    "warehouse_memory.py": ["--db", "{db}", "--quick", "--out", "{out}"],
    "episodes_list.py": ["--db", "{db}", "--runs", "1", "--out", "{out}"],
    "growth.py": ["--db", "{db}", "--runs", "1", "--out", "{out}"],
}
NEEDS_A_SERVER = {
    "real_model.py": ["--url", DEAD, "--out", "{out}"],
    "inspect_real.py": ["--url", DEAD, "--out", "{out}"],
}


def _run(
    script: str, args: list[str], tmp_path: Path, folder: Path = BENCH, **names: str
) -> subprocess.CompletedProcess:
    out = tmp_path / "result.json"
    argv = [a.format(out=out, **names) for a in args]
    return subprocess.run(
        [sys.executable, str(folder / script), *argv], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )


def test_every_bench_script_has_a_smoke_run():
    scripts = {p.name for p in BENCH.glob("*.py")}
    helpers = {"warehouse.py", "needs.py"}  # warehouse.py's subcommands run above; needs.py is imported by benches
    covered = set(RUNS) | {k.split()[0] for k in NEEDS_A_STORE} | set(NEEDS_A_SERVER) | helpers
    assert scripts == covered, f"bench scripts without a smoke run: {sorted(scripts - covered)}"
    studies = {p.name for p in STUDIES.glob("*.py")}
    covered = set(STUDY_RUNS) | set(STUDIES_NEEDING_A_PACKAGE)
    assert studies == covered, f"study scripts without a smoke run: {sorted(studies - covered)}"


@pytest.mark.parametrize("script", sorted(STUDIES_NEEDING_A_PACKAGE))
def test_a_study_that_needs_a_package_runs_with_it_or_says_so(script, tmp_path):
    done = _run(script, ["--out", "{out}"], tmp_path, STUDIES)
    if done.returncode == 0:  # the package is there
        assert json.loads((tmp_path / "result.json").read_text())
    else:
        said = done.stderr.strip().splitlines()
        assert said and STUDIES_NEEDING_A_PACKAGE[script] in said[-1] and "Traceback" not in done.stderr


@pytest.mark.parametrize("script", sorted(STUDY_RUNS))
def test_study_runs(script, tmp_path):
    done = _run(script, STUDY_RUNS[script], tmp_path, STUDIES)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "result.json").read_text())  # results, written where it was told


@pytest.mark.parametrize("script", sorted(RUNS))
def test_bench_runs(script, tmp_path):
    done = _run(script, RUNS[script], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "result.json").read_text())  # results, written where it was told


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{d / 'events.sqlite'}"
    done = subprocess.run(
        [sys.executable, str(BENCH / "warehouse.py"), "generate", "--db", url, "--events", "3000"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return url, d / "events.sqlite"


@pytest.mark.parametrize("name", sorted(NEEDS_A_STORE))
def test_bench_on_a_store_leaves_it_as_it_was(name, small_store, tmp_path):
    url, path = small_store
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    done = _run(name.split()[0], NEEDS_A_STORE[name], tmp_path, db=url)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "result.json").read_text())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before, f"{name} wrote into the store it measured"


@pytest.mark.parametrize("script", sorted(NEEDS_A_SERVER))
def test_real_model_benches_say_when_there_is_no_server(script, tmp_path):
    done = _run(script, NEEDS_A_SERVER[script], tmp_path)
    assert done.returncode != 0 and not (tmp_path / "result.json").exists()
    said = done.stderr.strip().splitlines()
    assert said and "no server at" in said[-1] and "Traceback" not in done.stderr, done.stderr[-2000:]


NEEDS_AN_EXTRA = {  # what each bench needs beyond the README's install, checked before it starts
    "viewer.py": ("starlette", "httpx", "uvicorn"),
    "viewer_first_page.py": ("starlette", "httpx", "uvicorn"),
    "growth.py": ("starlette", "httpx", "uvicorn"),
    "search_worst.py": ("starlette", "httpx", "uvicorn"),
    "inspect_overhead.py": ("inspect_ai",),
    "inspect_real.py": ("inspect_ai",),
}


@pytest.mark.parametrize("script", sorted(NEEDS_AN_EXTRA))
def test_a_bench_without_its_extra_says_so_in_one_line_and_skips(script, tmp_path):
    """bench/viewer.py crashed on the README's install (Playwright comes with the test
    extra). Each bench that needs an extra checks for it first; without it, one line and exit 0."""
    source = (BENCH / script).read_text()
    assert f"need({', '.join(repr(m).replace(chr(39), chr(34)) for m in NEEDS_AN_EXTRA[script])})" in source
    blocked = ", ".join(repr(m) for m in NEEDS_AN_EXTRA[script])
    hide = (
        "import importlib.util, runpy, sys; real = importlib.util.find_spec; "
        f"importlib.util.find_spec = lambda name, *a: None if name in ({blocked},) else real(name, *a); "
        f"sys.argv = [{str(BENCH / script)!r}]; sys.path.insert(0, {str(BENCH)!r}); "
        f"runpy.run_path({str(BENCH / script)!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and len(lines) == 1, (done.stdout, done.stderr[-2000:])
    assert lines[0].startswith(f"{script}: skipped: needs ") and "pip install -e '.[" in lines[0]
    assert "Traceback" not in done.stderr
