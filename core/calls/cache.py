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

from inquitree.boundary.errors import InquiTreeError

CACHE_QUERY_S = 10.0  # the longest one statement on a cache file may run (a foreign file's SQL is bounded)


class CallCacheError(InquiTreeError):
    """A call cache file this code will not read: its tables are not the ones it makes."""


class CallCache:
    """Answers of earlier calls in a SQLite file, keyed by everything that determines them.

    Opt-in (``--call-cache FILE`` / ``call_cache`` in a suite). Shared by threads and processes:
    one connection behind a lock, WAL mode, a busy timeout."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        # A cache may come from another lab (a suite's call_cache): its schema runs no function of
        # ours, and no statement on it runs longer than CACHE_QUERY_S.
        self._con.execute("PRAGMA trusted_schema = OFF")
        self._started = time.monotonic()
        self._con.set_progress_handler(self._too_long, 10_000)
        foreign = [
            f"its {name} is a {kind}"
            for name, kind in self._con.execute(
                "SELECT name, type FROM sqlite_master WHERE name IN ('calls', 'refused_formats')"
            ).fetchall()
            if kind != "table"
        ]
        if foreign:
            self._con.close()
            raise CallCacheError(
                f"call cache {self.path}: {' and '.join(foreign)}, not the table InquiTree makes: not read"
            )
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

    def _too_long(self) -> int:
        """SQLite's progress handler: non-zero ends the statement (it raises OperationalError)."""
        return int(time.monotonic() - self._started > CACHE_QUERY_S)

    def _run(self, sql: str, args: tuple = ()) -> list[tuple]:
        """``sql`` on the cache, its rows; every statement goes through here, so the progress
        handler's clock starts with it (a write timed from the last read was cut short)."""
        self._started = time.monotonic()
        try:
            return self._con.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise CallCacheError(f"call cache {self.path}: a statement ran past {CACHE_QUERY_S:g} s") from None
            raise

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
            rows = self._run("SELECT answer FROM calls WHERE key = ?", (key,))
        if not rows or not isinstance(rows[0][0], str):
            return None
        try:
            found = json.loads(rows[0][0])
        except ValueError:
            return None  # an answer that is not JSON is no answer: the call is made
        return found if isinstance(found, dict) else None

    def put(self, key: str, model: str, endpoint: str, answer: dict[str, Any]) -> None:
        with self._lock:
            self._run(
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
            rows = self._run("SELECT format FROM refused_formats WHERE model = ? AND endpoint = ?", (model, endpoint))
        return {r[0] for r in rows if isinstance(r[0], str)}

    def note_refused(self, model: str, endpoint: str, name: str) -> None:
        with self._lock:
            self._run("INSERT OR IGNORE INTO refused_formats VALUES (?, ?, ?)", (model, endpoint, name))

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
