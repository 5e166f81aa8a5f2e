"""The call cache: answers of earlier calls in a SQLite file, keyed by everything that determines
them (model, endpoint without credentials, every request option, the full message list), so a
re-run pays nothing for answers already obtained and never serves one model's answer for
another's request. Episodes use it when asked (``--call-cache FILE``, a suite's ``call_cache``);
``extract`` always does (``<id>.cache.sqlite`` beside its outputs, or the file it is given)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any


class CallCache:
    """Answers of earlier calls in a SQLite file, keyed by everything that determines them.

    Opt-in (``--call-cache FILE`` / ``call_cache`` in a suite). Shared by threads and processes:
    one connection behind a lock, WAL mode, a busy timeout."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, endpoint TEXT, "
            "created_at TEXT, answer TEXT)"
        )
        # Output formats an endpoint refused (llama.cpp's server answers json_schema with a 500):
        # a new process does not probe them again, which would be a call a cached re-run pays for.
        self._con.execute(
            "CREATE TABLE IF NOT EXISTS refused_formats (model TEXT, endpoint TEXT, format TEXT, "
            "PRIMARY KEY (model, endpoint, format))"
        )
        self._lock = threading.Lock()

    @staticmethod
    def key(model: str, endpoint: str, request: dict[str, Any]) -> str:
        blob = json.dumps(
            {"model": model, "endpoint": endpoint, "request": request},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._con.execute("SELECT answer FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, model: str, endpoint: str, answer: dict[str, Any]) -> None:
        with self._lock:
            self._con.execute(
                "INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    endpoint,
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    json.dumps(answer, ensure_ascii=False),
                ),
            )

    def refused_formats(self, model: str, endpoint: str) -> set[str]:
        with self._lock:
            rows = self._con.execute(
                "SELECT format FROM refused_formats WHERE model = ? AND endpoint = ?", (model, endpoint)
            ).fetchall()
        return {r[0] for r in rows}

    def note_refused(self, model: str, endpoint: str, name: str) -> None:
        with self._lock:
            self._con.execute("INSERT OR IGNORE INTO refused_formats VALUES (?, ?, ?)", (model, endpoint, name))

    def close(self) -> None:
        with self._lock:
            self._con.close()


_CACHES: dict[str, CallCache] = {}
_CACHES_LOCK = threading.Lock()


def call_cache(path: str | Path | None) -> CallCache | None:
    """One shared cache object per file in this process (None: no cache)."""
    if not path:
        return None
    key = str(Path(path).resolve())
    with _CACHES_LOCK:
        if key not in _CACHES:
            _CACHES[key] = CallCache(path)
        return _CACHES[key]
