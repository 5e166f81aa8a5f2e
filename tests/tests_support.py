"""Small helpers shared by test modules."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from inquitree.events import Event, event_type, registered_types

if "TestNoted" in registered_types():
    Noted = registered_types()["TestNoted"]
else:

    @event_type
    class Noted(Event):
        TYPE = "TestNoted"
        n: int
        text: str = ""


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


# For a child process that a test interrupts with SIGINT (Ctrl-C): a shell starts a background job
# with SIGINT ignored, the child inherits that, and Python then installs no KeyboardInterrupt
# handler, so the child would never stop. The child gets the default disposition back first.
INTERRUPTIBLE = {"preexec_fn": _default_sigint}


def model_play(base_url: str, *extra: str) -> list[str]:
    """`inquitree play` with a model agent at ``base_url`` and the hash embedder (offline), and ``extra``."""
    return ["play", "--agent", "openai:m", "--base-url", base_url, "--embedder", "hash", *extra]


CHROMIUM_ARGS = [  # as the machine's notes start it: no background traffic to a closed network
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.contextmanager
def chromium_browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright (no browser download: its own executable)."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def viewer_process(db_url: str, warehouse: str, *extra: str) -> Iterator[str]:
    """``inquitree view`` in a process of its own, on a free loopback port; yields its base URL once
    it answers, and stops it at the end (its output is kept in ``WAREHOUSE.view.log``)."""
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    port = free_port()
    log = open(warehouse + ".view.log", "wb")  # noqa: SIM115 - closed below, after the process
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inquitree",
            "view",
            "--db",
            db_url,
            "--warehouse",
            warehouse,
            "--port",
            str(port),
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base + "/static/viewer.js", timeout=5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(
                        f"the viewer did not start: {Path(warehouse + '.view.log').read_text(encoding='utf-8')[-2000:]}"
                    ) from None
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextlib.contextmanager
def served(app: Any) -> Iterator[str]:
    """An ASGI application served by uvicorn in a thread of this process, on a free loopback port;
    yields its base URL once it listens, and stops it at the end."""
    import threading
    import time

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the application did not start listening")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(10)


def tracked_texts(root: Any, skip: Any) -> Iterator[tuple[str, str]]:
    """(path, text) of every file git tracks under ``root`` (every file, outside a checkout) that
    is text and whose path ``skip`` (a compiled pattern) does not match: what the tests that read
    the repository's own prose go through."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout (an sdist): every file under the root
        tracked = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    for name in tracked:
        if skip.search(name):
            continue
        try:
            yield name, (root / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
