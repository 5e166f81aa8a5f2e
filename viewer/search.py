"""Full-text search over an episode's texts: every observation, reply, conclusion item and judge
rationale in the warehouse, in a SQLite FTS5 index beside it (``WAREHOUSE.search.sqlite``).

Why SQLite's FTS5 and not DuckDB's full-text search: DuckDB's wheels do not bundle its ``fts``
extension and installing one needs the network; FTS5 is part of the SQLite that Python ships.
The index is rebuilt when the warehouse has synced further than the index remembers, so it is
one projection of the log like the warehouse itself.
"""

from __future__ import annotations

import html
import re
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from inquitree.events import EPISODE_PREFIX as STREAM_PREFIX

__all__ = ["SearchIndex", "SearchStopped", "KINDS", "RANK_AT_MOST", "terms"]

KINDS = ("observation", "reply", "conclusion", "rationale")

_TEXTS = """
SELECT o.episode_id, o.step, 'observation', o.text FROM ev_observation_emitted o
UNION ALL SELECT r.episode_id, r.step, 'reply', r.raw FROM ev_agent_replied r
UNION ALL SELECT c.episode_id, NULL, 'conclusion', array_to_string(c.items, '\n') FROM ev_conclusion_submitted c
UNION ALL SELECT v.episode_id, NULL, 'rationale', v.item_id || ': ' || v.rationale FROM ev_judge_verdict v
"""


MAX_QUERY_CHARS = 200
MAX_TERMS = 8
SEARCH_SECONDS = 2.0  # a search's own budget; the worst query's measured time is in bench/results/search_worst.json
# Ranking by relevance (FTS5's bm25) scores every text that matches before the best 100 are known:
# a word in a third of a large store's texts is hundreds of thousands of scores. Past this many
# matching texts the hits are the newest ones instead, which FTS5 reads in order and stops.
RANK_AT_MOST = 20_000


INSERT_BATCH = 5_000  # rows read from the warehouse and written to the index at a time


class SearchStopped(Exception):
    """A search stopped by its time budget or its client, or refused by SQLite; the message says which."""


class IndexStopped(Exception):
    """The server is stopping: the index's build or update is left, and its file with it."""


class SearchIndex:
    def __init__(self, path: str | Path, stop: threading.Event | None = None):
        self.path = Path(path)
        self.stop = stop  # set: a build or update under way ends at its next batch (IndexStopped)

    def position(self) -> int:
        """The warehouse position the index holds every text up to; -1 if there is no index yet, or
        one made before each text's episode was kept beside it (it is then built again)."""
        if not self.path.exists():
            return -1
        with sqlite3.connect(self.path) as con:
            try:
                con.execute("SELECT 1 FROM owners LIMIT 1")
                return int(con.execute("SELECT position FROM state").fetchone()[0])
            except sqlite3.Error:
                return -1

    def build(self, wh: Any, position: int) -> int:
        """Index every text of the warehouse ``wh`` (synced to ``position``); returns how many."""
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(6)}.tmp")  # unguessable: no link waits there
        con = sqlite3.connect(tmp)
        try:
            con.execute(
                "CREATE VIRTUAL TABLE texts USING fts5(text, episode_id UNINDEXED, step UNINDEXED, kind UNINDEXED, "
                "agent UNINDEXED, tree_id UNINDEXED, randomness UNINDEXED, status UNINDEXED)"
            )
            con.execute("CREATE TABLE state (position INTEGER)")
            # Which episode each text belongs to, by an index FTS5 cannot give its UNINDEXED columns: an
            # update deletes an episode's texts by their rowids (by episode_id it read every text, 0.3 s
            # an episode at 1M events). The index is made after the rows, which is quicker than beside them.
            con.execute("CREATE TABLE owners (episode_id TEXT NOT NULL, text_rowid INTEGER NOT NULL)")
            con.execute("INSERT INTO state VALUES (?)", (position,))
            n = self._insert(con, wh, "")
            con.execute("CREATE INDEX owners_by_episode ON owners (episode_id)")
            con.commit()
            con.close()
            tmp.replace(self.path)
        except BaseException:
            con.close()
            tmp.unlink(missing_ok=True)
            raise
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
            gone = [(e,) for e in touched]
            con.executemany(
                "DELETE FROM texts WHERE rowid IN (SELECT text_rowid FROM owners WHERE episode_id = ?)", gone
            )
            con.executemany("DELETE FROM owners WHERE episode_id = ?", gone)
            n = self._insert(con, wh, "AND t.episode_id IN (SELECT unnest(?::VARCHAR[]))", [touched]) if touched else 0
            con.execute("UPDATE state SET position = ?", (position,))
            con.commit()
        finally:
            con.close()
        return n

    def _insert(self, con: sqlite3.Connection, wh: Any, where: str, args: list[Any] | None = None) -> int:
        """Index the texts the query selects, a batch of rows at a time: all of a 1M-event store's
        texts at once held hundreds of megabytes in Python objects at the viewer's first start.
        Between batches it stops when ``stop`` is set (the server is stopping): a first build left
        its temporary file, tens of megabytes, each time the viewer was stopped during it."""
        cur = wh.con.execute(
            f"SELECT t.*, e.agent, e.tree_id, e.randomness, e.status FROM ({_TEXTS}) t(episode_id, step, kind, text) "
            f"JOIN all_episodes e USING (episode_id) WHERE t.text IS NOT NULL {where}",  # every episode, any scope
            args or [],
        )
        n = 0
        (last,) = con.execute("SELECT coalesce(max(rowid), 0) FROM texts").fetchone()
        while rows := cur.fetchmany(INSERT_BATCH):
            if self.stop is not None and self.stop.is_set():
                raise IndexStopped
            rowids = range(last + 1, last + 1 + len(rows))
            con.executemany(
                "INSERT INTO texts (rowid, episode_id, step, kind, text, agent, tree_id, randomness, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                # filters compare text: the level as text too
                [(rowid, *r[:6], str(r[6]), r[7]) for rowid, r in zip(rowids, rows, strict=True)],
            )
            con.executemany(
                "INSERT INTO owners VALUES (?, ?)", [(r[0], rowid) for rowid, r in zip(rowids, rows, strict=True)]
            )
            last += len(rows)
            n += len(rows)
        return n

    def search(
        self,
        query: str,
        filters: dict[str, str] | None = None,
        limit: int = 100,
        budget: float = SEARCH_SECONDS,
        cancel: threading.Event | None = None,
    ) -> list[dict[str, Any]]:
        """Hits for ``query`` (its words, all of them, as typed: FTS5's own syntax is not exposed),
        best first, each with an escaped snippet whose matches are in ``<mark>``. When more than
        RANK_AT_MOST texts hold the words, the newest hits come first instead (each hit's
        ``ranked`` says which order it is in).

        A query is bounded before it runs (:func:`terms`: at most MAX_QUERY_CHARS characters and
        MAX_TERMS distinct words; a word repeated a thousand times is one word), and while it runs:
        SQLite's progress handler stops it after ``budget`` seconds or as soon as ``cancel`` is set
        (the client left), raising :class:`SearchStopped`."""
        words = terms(query)
        if not words or not self.path.exists():
            return []
        match = " ".join('"' + w.replace('"', '""') + '"' for w in words)
        where, args = ["texts MATCH ?"], [match]
        for key in ("agent", "tree_id", "randomness", "status", "kind"):
            value = (filters or {}).get(key)
            if value not in (None, ""):
                where.append(f"{key} = ?")
                args.append(str(value).replace("\x00", ""))
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        deadline = time.monotonic() + budget
        why: list[str] = []

        def stop() -> int:
            if cancel is not None and cancel.is_set():
                why.append("the request was closed")
                return 1
            if time.monotonic() > deadline:
                why.append(f"it took longer than {budget:g} s")
                return 1
            return 0

        con.set_progress_handler(stop, 10_000)
        # The progress handler ticks between SQLite's instructions; one long call (a function over a
        # long text) does not tick it, so a timer interrupts the connection at the deadline as well.
        timer = threading.Timer(max(0.0, deadline - time.monotonic()), con.interrupt)
        timer.daemon = True
        timer.start()
        try:
            # more than RANK_AT_MOST matching texts (filters aside: ranking scores them all either way)?
            common = con.execute(
                "SELECT rowid FROM texts WHERE texts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (match, RANK_AT_MOST),
            ).fetchone()
            rows = con.execute(
                f"SELECT rowid, episode_id, step, kind, agent, tree_id, randomness, status FROM texts "
                f"WHERE {' AND '.join(where)} ORDER BY {'rowid DESC' if common else 'rank'} LIMIT ?",
                (*args, limit),
            ).fetchall()
            # The snippets: FTS5's snippet() works inside one call over each whole text (22.9 s for
            # 100 long texts of common words), so they are made here, over a bounded excerpt of each.
            hits = []
            pattern = _words_pattern(words)
            for r in rows:
                if stop():
                    raise sqlite3.OperationalError("interrupted")
                (text,) = con.execute(
                    "SELECT substr(text, 1, ?) FROM texts WHERE rowid = ?", (SNIPPET_SCAN, r[0])
                ).fetchone()
                hits.append((*r[1:], _snippet(text or "", pattern)))
        except sqlite3.OperationalError as exc:
            if why or time.monotonic() > deadline:
                reason = why[0] if why else f"it took longer than {budget:g} s"
                raise SearchStopped(f"the search was stopped: {reason}; add words or filters to narrow it") from None
            raise SearchStopped(f"the search could not run ({exc})") from None
        finally:
            timer.cancel()
            con.close()
        keys = ("episode_id", "step", "kind", "agent", "tree_id", "randomness", "status")
        return [{**dict(zip(keys, h[:7], strict=True)), "snippet_html": h[7], "ranked": common is None} for h in hits]


SNIPPET_SCAN = 20_000  # characters of a text searched for its snippet (a reply is cut at 20,000)
SNIPPET_SIDE = 120  # characters of context on each side of the first match


def _words_pattern(words: list[str]) -> re.Pattern[str]:
    """The query's words as they stand in a text, case folded, each as a whole token or its start."""
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")", re.I)


def _snippet(text: str, pattern: re.Pattern[str]) -> str:
    """An escaped excerpt around the first match of ``pattern`` in ``text`` (its start when none is
    found: FTS5's tokenizer folds some letters that this pattern does not), every match in it marked."""
    first = pattern.search(text)
    start = max(0, first.start() - SNIPPET_SIDE) if first else 0
    end = min(len(text), (first.end() if first else 0) + SNIPPET_SIDE)
    excerpt = text[start:end]
    out, at = [], 0
    for m in pattern.finditer(excerpt):
        out += [html.escape(excerpt[at : m.start()]), "<mark>", html.escape(m.group(0)), "</mark>"]
        at = m.end()
    out.append(html.escape(excerpt[at:]))
    return ("… " if start else "") + "".join(out) + (" …" if end < len(text) else "")


def terms(query: str) -> list[str]:
    """The distinct words of ``query`` (case folded), control characters dropped, bounded: at most
    MAX_QUERY_CHARS characters are read and MAX_TERMS words kept. What the snippet step costs grows
    with the words it marks, so a query of one word repeated is one word."""
    text = query[:MAX_QUERY_CHARS]
    if len(query) > MAX_QUERY_CHARS and not query[MAX_QUERY_CHARS].isspace():
        text = text.rpartition(" ")[0] or text  # the cut fell inside a word: that part-word is not searched
    text = "".join(c if c.isprintable() else " " for c in text)
    seen: dict[str, None] = {}
    for w in text.split():
        seen.setdefault(w.casefold(), None)
        if len(seen) == MAX_TERMS:
            break
    return list(seen)
