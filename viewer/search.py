"""Full-text search over an episode's texts: every observation, reply, conclusion item and judge
rationale in the warehouse, in a SQLite FTS5 index beside it (``WAREHOUSE.search.sqlite``).

Why SQLite's FTS5 and not DuckDB's full-text search: DuckDB's wheels do not bundle its ``fts``
extension and installing one needs the network; FTS5 is part of the SQLite that Python ships.
The index is rebuilt when the warehouse has synced further than the index remembers, so it is
one projection of the log like the warehouse itself.
"""

from __future__ import annotations

import html
import sqlite3
from pathlib import Path
from typing import Any

from inquitree.core.runner import STREAM_PREFIX

__all__ = ["SearchIndex", "KINDS"]

KINDS = ("observation", "reply", "conclusion", "rationale")
_HIT, _END = "\x02", "\x03"  # snippet markers no text contains, turned into <mark> after escaping

_TEXTS = """
SELECT o.episode_id, o.step, 'observation', o.text FROM ev_observation_emitted o
UNION ALL SELECT r.episode_id, r.step, 'reply', r.raw FROM ev_agent_replied r
UNION ALL SELECT c.episode_id, NULL, 'conclusion', array_to_string(c.items, '\n') FROM ev_conclusion_submitted c
UNION ALL SELECT v.episode_id, NULL, 'rationale', v.item_id || ': ' || v.rationale FROM ev_judge_verdict v
"""


class SearchIndex:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    def position(self) -> int:
        if not self.path.exists():
            return -1
        with sqlite3.connect(self.path) as con:
            try:
                return int(con.execute("SELECT position FROM state").fetchone()[0])
            except sqlite3.Error:
                return -1

    def build(self, wh: Any, position: int) -> int:
        """Index every text of the warehouse ``wh`` (synced to ``position``); returns how many."""
        tmp = self.path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        con = sqlite3.connect(tmp)
        con.execute(
            "CREATE VIRTUAL TABLE texts USING fts5(text, episode_id UNINDEXED, step UNINDEXED, kind UNINDEXED, "
            "agent UNINDEXED, tree_id UNINDEXED, randomness UNINDEXED, status UNINDEXED)"
        )
        con.execute("CREATE TABLE state (position INTEGER)")
        con.execute("INSERT INTO state VALUES (?)", (position,))
        n = self._insert(con, wh, "")
        con.commit()
        con.close()
        tmp.replace(self.path)
        return n

    def update(self, wh: Any, position: int) -> int:
        """Bring the index to ``position``: the texts of every episode with an event past the
        index's position are indexed again (their status may have changed too); returns how many."""
        since = self.position()
        if since < 0:
            return self.build(wh, position)
        con = sqlite3.connect(self.path)
        try:
            touched = [
                r[0]
                for r in wh.con.execute(
                    "SELECT DISTINCT stream_id[length($2) + 1:] FROM raw_events "
                    "WHERE global_position > $1 AND starts_with(stream_id, $2)",
                    [since, STREAM_PREFIX],
                ).fetchall()
            ]
            con.executemany("DELETE FROM texts WHERE episode_id = ?", [(e,) for e in touched])
            n = self._insert(con, wh, "AND t.episode_id IN (SELECT unnest(?::VARCHAR[]))", [touched]) if touched else 0
            con.execute("UPDATE state SET position = ?", (position,))
            con.commit()
        finally:
            con.close()
        return n

    @staticmethod
    def _insert(con: sqlite3.Connection, wh: Any, where: str, args: list[Any] | None = None) -> int:
        rows = wh.con.execute(
            f"SELECT t.*, e.agent, e.tree_id, e.randomness, e.status FROM ({_TEXTS}) t(episode_id, step, kind, text) "
            f"JOIN episodes e USING (episode_id) WHERE t.text IS NOT NULL {where}",
            args or [],
        ).fetchall()
        con.executemany(
            "INSERT INTO texts (episode_id, step, kind, text, agent, tree_id, randomness, status) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(*r[:6], str(r[6]), r[7]) for r in rows],  # filters compare text: the level as text too
        )
        return len(rows)

    def search(self, query: str, filters: dict[str, str] | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Hits for ``query`` (its words, all of them, as typed: FTS5's own syntax is not exposed),
        best first, each with an escaped snippet whose matches are in ``<mark>``."""
        words = [w for w in query.split() if w]
        if not words or not self.path.exists():
            return []
        match = " ".join('"' + w.replace('"', '""') + '"' for w in words)
        where, args = ["texts MATCH ?"], [match]
        for key in ("agent", "tree_id", "randomness", "status", "kind"):
            value = (filters or {}).get(key)
            if value not in (None, ""):
                where.append(f"{key} = ?")
                args.append(str(value))
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            rows = con.execute(
                f"SELECT episode_id, step, kind, agent, tree_id, randomness, status, "
                f"snippet(texts, 0, '{_HIT}', '{_END}', ' … ', 16) FROM texts WHERE {' AND '.join(where)} "
                "ORDER BY rank LIMIT ?",
                (*args, limit),
            ).fetchall()
        finally:
            con.close()
        keys = ("episode_id", "step", "kind", "agent", "tree_id", "randomness", "status")
        return [
            {
                **dict(zip(keys, r[:7], strict=True)),
                "snippet_html": html.escape(r[7]).replace(_HIT, "<mark>").replace(_END, "</mark>"),
            }
            for r in rows
        ]
