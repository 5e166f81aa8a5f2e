"""What is left of a damaged SQLite store: SQLite's own check, the events still readable, and
which episodes' chains still hold (so they can be proven and exported).

``inquitree db verify`` is the command a user runs when a store is damaged (a disk fault, a file
cut short, a copy that went wrong), so it must report, not crash: it reads the log position by
position range, and where SQLite cannot read a range, row by row, keeping whatever it can.
"""

from __future__ import annotations

import bisect
import dataclasses
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from inquitree.events.chain import GENESIS_HASH, link_problem, log_hash

__all__ = ["DamageReport", "inspect_file"]

CHUNK = 1000
GIVE_UP_AFTER = 50  # chunks in a row with nothing readable, when the log's end is unknown


@dataclasses.dataclass
class DamageReport:
    path: str
    opened: bool = True  # False: not a database at all (or its header is destroyed)
    check: list[str] = dataclasses.field(default_factory=list)  # SQLite's integrity check, first lines
    last_position: int | None = None  # the log's end, when SQLite could still tell
    readable: int = 0
    unreadable: list[tuple[int, int]] = dataclasses.field(default_factory=list)  # position ranges
    log_ok_to: int = 0  # every event up to here is readable and both chains hold
    intact: dict[str, int] = dataclasses.field(default_factory=dict)  # stream -> version, chain holds from 1
    damaged: dict[str, str] = dataclasses.field(default_factory=dict)  # stream -> what is wrong

    @property
    def unreadable_events(self) -> int:
        return sum(b - a + 1 for a, b in self.unreadable)


def _read(con: sqlite3.Connection, a: int, b: int) -> list[tuple[Any, ...]] | None:
    try:
        return con.execute(
            "SELECT global_position, stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
            "prev_hash, hash, log_hash FROM events WHERE global_position BETWEEN ? AND ? ORDER BY global_position",
            (a, b),
        ).fetchall()
    except sqlite3.DatabaseError:
        return None


def inspect_file(path: str | Path) -> DamageReport:
    report = DamageReport(str(path))
    try:
        con = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
        con.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError as exc:
        report.opened, report.check = False, [str(exc)]
        return report
    try:
        report.check = [r[0] for r in con.execute("PRAGMA integrity_check(20)").fetchall()]
    except sqlite3.DatabaseError as exc:
        report.check = [f"the integrity check itself failed: {exc}"]
    extents = _index_extents(con)  # the stream index can outlive the table's pages
    try:
        report.last_position = con.execute("SELECT max(global_position) FROM events").fetchone()[0] or 0
    except sqlite3.DatabaseError:
        report.last_position = max((b for _, _, b in extents.values()), default=None)
    rows: list[tuple[Any, ...]] = []
    start, empty_run = 1, 0
    while True:
        if report.last_position is not None and start > report.last_position:
            break
        if report.last_position is None and empty_run >= GIVE_UP_AFTER:
            break
        end = start + CHUNK - 1 if report.last_position is None else min(start + CHUNK - 1, report.last_position)
        got = _read(con, start, end)
        if got is None:  # row by row: keep what SQLite can still read of this range
            got = []
            for pos in range(start, end + 1):
                one = _read(con, pos, pos)
                if one is None:
                    if report.unreadable and report.unreadable[-1][1] == pos - 1:
                        report.unreadable[-1] = (report.unreadable[-1][0], pos)
                    else:
                        report.unreadable.append((pos, pos))
                else:
                    got += one
        empty_run = 0 if got else empty_run + 1
        rows += got
        start = end + 1
    con.close()
    report.readable = len(rows)
    _chains(report, rows)
    for sid, (version, first, last) in extents.items():
        if sid not in report.intact and sid not in report.damaged:
            report.damaged[sid] = f"none of its {version} events (global positions {first}-{last}) can be read"
        elif report.intact.get(sid, version) < version:
            del report.intact[sid]
            report.damaged[sid] = f"its events after version {report.intact.get(sid, 0) or '?'} cannot be read"
    return report


def _index_extents(con: sqlite3.Connection) -> dict[str, tuple[int, int, int]]:
    """stream -> (last version, first and last global position), read from the (stream_id,
    stream_version) index alone; {} when that cannot be read either."""
    try:
        for _, name, unique, *_ in con.execute("PRAGMA index_list(events)").fetchall():
            columns = [r[2] for r in con.execute(f"PRAGMA index_info('{name}')").fetchall()]
            if unique and columns == ["stream_id", "stream_version"]:
                rows = con.execute(
                    f"SELECT stream_id, max(stream_version), min(global_position), max(global_position) "
                    f'FROM events INDEXED BY "{name}" GROUP BY stream_id'
                ).fetchall()
                return {sid: (v, a, b) for sid, v, a, b in rows}
    except sqlite3.DatabaseError:
        pass
    return {}


def _chains(report: DamageReport, rows: list[tuple[Any, ...]]) -> None:
    """Which prefix of the log and which streams are readable with both chains holding."""
    prev_log, expect, broken = GENESIS_HASH, 1, False
    by_stream: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        pos, sid, version, etype, sver, at, payload, prev_hash, digest, lhash = row
        by_stream[sid].append(row)
        if broken or pos != expect or log_hash(prev_log, pos, digest) != lhash:
            broken = True
            continue
        prev_log, expect, report.log_ok_to = lhash, pos + 1, pos
    lost = sorted(p for a, b in report.unreadable for p in range(a, b + 1))
    for sid, srows in sorted(by_stream.items()):
        last = (0, GENESIS_HASH)
        for pos, _, version, etype, sver, at, payload, prev_hash, digest, _ in srows:
            problem = link_problem(last, sid, version, etype, sver, at, payload, prev_hash, digest)
            if problem:
                report.damaged[sid] = f"version {version} (global position {pos}): {problem}"
                break
            last = (version, digest)
        else:
            first, final = srows[0][0], srows[-1][0]
            if bisect.bisect_left(lost, final) > bisect.bisect_right(lost, first):  # a lost position in between
                report.damaged[sid] = "events of the stream may lie in an unreadable range"
            else:
                report.intact[sid] = last[0]
