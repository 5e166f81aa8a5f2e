"""Verification: one walk over the log checks both hash chains (``events/chain.py``), then what
proves its head (an anchor, signed checkpoints, a keyring); :class:`VerifyReport` says what was
proved and what was not. :func:`verify` reads a store's database; an :class:`Anchor` is a head
of the log kept outside it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Callable

from inquitree.boundary.errors import InquiTreeError
from inquitree.events import signing
from inquitree.events.chain import GENESIS_HASH, link_problem, log_hash
from inquitree.events.checkpoints import read_checkpoints
from inquitree.events.database import Database, utc_now
from inquitree.events.names import IMPORT_PREFIX


@dataclasses.dataclass
class VerifyReport:
    """What ``verify`` checked and proved.

    ``first_problem`` is (stream id, stream version, what) for a problem at an event, or
    (None, None, what) for one of the log as a whole (a missing head, a bad signature).
    ``covered_to`` is the highest global position proved by the anchor or by a log checkpoint
    signed with a given key; of the events after it, ``stream_covered`` are proved by a signed head
    of their stream and ``uncovered`` by nothing: with an anchor or a key, those make the report
    not ok."""

    events_checked: int
    streams_checked: int
    first_problem: tuple[str | None, int | None, str] | None
    head_position: int = 0
    head_hash: str = GENESIS_HASH
    proof: tuple[str, ...] = ()  # "anchor", "key"
    covered_to: int = 0
    uncovered: int = 0
    stream_covered: int = 0  # events after ``covered_to`` proved by a signed head of their stream
    # records of imports (``import/`` streams) covered by nothing: an importer without a key wrote
    # them. They prove nothing and claim little (the episode's own signature is checked apart), so
    # they are reported, not counted in ``uncovered``.
    unsigned_import_records: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problem found and, when an anchor or a key was given, every event covered by it."""
        return self.first_problem is None and not (self.proof and self.uncovered)


@dataclasses.dataclass(frozen=True)
class Anchor:
    """A head of the log kept outside the database: the event at ``position`` has ``log_hash``.

    Written by ``inquitree db anchor`` as JSON; signed when a key is given (``key_id``, ``signature``
    over the same line a log checkpoint signs)."""

    position: int
    log_hash: str
    events: int
    streams: int
    made_at: str
    store: str = ""
    key_id: str | None = None
    signature: str | None = None

    FORMAT = "inquitree-anchor/1"

    @classmethod
    def of(cls, report: "VerifyReport", store: str = "", signer: signing.Signer | None = None) -> "Anchor":
        """The head a clean ``verify()`` report found, made now, signed when ``signer`` is given."""
        anchor = cls(
            report.head_position, report.head_hash, report.events_checked, report.streams_checked, utc_now(), store
        )
        if signer is None:
            return anchor
        return dataclasses.replace(anchor, key_id=signer.key_id, signature=signer.sign(anchor.message()))

    def to_json(self) -> str:
        return json.dumps({"format": self.FORMAT, **dataclasses.asdict(self)}, indent=2) + "\n"

    @classmethod
    def load(cls, path: str | Path) -> "Anchor":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InquiTreeError(f"{path}: cannot read the anchor ({exc})") from exc
        if not isinstance(data, dict) or data.get("format") != cls.FORMAT:
            raise InquiTreeError(f"{path}: not an InquiTree anchor (field 'format' is not {cls.FORMAT!r})")
        fields = {f.name for f in dataclasses.fields(cls)}
        try:
            anchor = cls(**{k: v for k, v in data.items() if k in fields})
        except TypeError as exc:
            raise InquiTreeError(f"{path}: {exc}") from exc
        if not isinstance(anchor.position, int) or not re.fullmatch(r"[0-9a-f]{64}", str(anchor.log_hash)):
            raise InquiTreeError(f"{path}: field 'position' must be an integer and 'log_hash' 64 hex digits")
        return anchor

    def message(self) -> bytes:
        return signing.checkpoint_message("log", "log", self.position, self.log_hash, self.made_at)


def _against(claims: list[tuple[str, str]], actual: str, where: str) -> str | None:
    """The first claim (who, hash) about ``where`` that ``actual`` contradicts, as a problem."""
    for who, claimed in claims:
        if claimed != actual:
            return (
                f"{who} says the hash at {where} is {claimed[:16]}..., the log has {actual[:16]}...: "
                "the log was rewritten"
            )
    return None


def verify(  # noqa: C901 - one walk over the log checks both chains and every claim
    db: Database,
    progress: Callable[[int], None] | None = None,
    stream_id: str | None = None,
    *,
    anchor: Anchor | None = None,
    verifier: signing.Verifier | signing.Keyring | None = None,
) -> VerifyReport:
    """Walk the log in global position order and check both chains, then what proves its head.

    Without ``anchor`` or ``verifier`` this finds any event changed, removed, moved or added
    inside the log, but cannot tell a log cut short at its end, or rewritten and re-hashed as a
    whole, from an honest one. An ``anchor`` proves the log up to its position; a ``verifier``
    checks the signed checkpoints in the store and proves the log up to the last one. With
    ``stream_id``, only that stream's chain is checked. ``verifier`` may be a keyring: each
    checkpoint is checked with the key that made it, and an event is covered by a signed log head
    at or after it, or by a signed head of its stream (an exported or imported episode)."""
    if stream_id is not None:
        return _verify_stream(db, stream_id)
    keys = signing.Keyring.of(verifier)
    report = VerifyReport(0, 0, None)
    expect: dict[int, list[tuple[str, str]]] = {}  # global position -> [(who says so, log hash)]
    expect_stream: dict[tuple[str, int], list[tuple[str, str]]] = {}
    if anchor is not None:
        report.proof += ("anchor",)
        if anchor.signature and keys is not None:
            by = keys.get(anchor.key_id or "")
            if by is None or not by.verify(anchor.message(), anchor.signature):
                report.first_problem = (None, None, "the anchor's signature does not match the given key")
                return report
            report.notes.append(f"the anchor is signed by key {by.key_id}")
        expect.setdefault(anchor.position, []).append(("the anchor", anchor.log_hash))
    stream_signed: dict[str, int] = {}  # stream -> the highest version a signed stream head covers
    if keys is not None:
        report.proof += ("key",)
        problem = _load_checkpoints(db, keys, expect, expect_stream, report.notes)
        if problem:
            report.first_problem = (None, None, problem)
            return report
        for sid, version in expect_stream:
            stream_signed[sid] = max(version, stream_signed.get(sid, 0))
    covered_to = max(expect, default=0)
    heads: dict[str, tuple[int, str]] = {}
    prev_log, last_pos = GENESIS_HASH, 0
    with db.scan(
        "SELECT global_position, stream_id, stream_version, event_type, schema_version, recorded_at, payload, "
        "prev_hash, hash, log_hash FROM events ORDER BY global_position"
    ) as rows:
        for pos, sid, version, etype, sver, at, payload, prev_hash, digest, lhash in rows:
            problem = link_problem(
                heads.get(sid, (0, GENESIS_HASH)), sid, version, etype, sver, at, payload, prev_hash, digest
            )
            if problem is None and log_hash(prev_log, pos, digest) != lhash:
                problem = (
                    f"log hash does not match at global position {pos} (an event before it was removed, "
                    "inserted or moved, or this one was)"
                )
            if problem is None:
                if pos in expect:
                    problem = _against(expect.pop(pos), lhash, f"global position {pos}")
                if expect_stream and (sid, version) in expect_stream:
                    claims = expect_stream.pop((sid, version))
                    problem = problem or _against(claims, digest, f"stream {sid!r} version {version}")
            report.events_checked += 1
            if sid not in heads:
                report.streams_checked += 1
            if problem:
                report.first_problem = (sid, version, problem)
                return report
            heads[sid] = (version, digest)
            prev_log, last_pos = lhash, pos
            if report.proof and pos > covered_to:
                if version > stream_signed.get(sid, 0) and sid.startswith(IMPORT_PREFIX):
                    report.unsigned_import_records += 1
                elif version > stream_signed.get(sid, 0):
                    report.uncovered += 1
                else:
                    report.stream_covered += 1
            if progress and report.events_checked % 100_000 == 0:
                progress(report.events_checked)
    report.head_position, report.head_hash = last_pos, prev_log
    for pos, claims in sorted(expect.items()):
        who = " and ".join(w for w, _ in claims)
        report.first_problem = (
            None,
            None,
            f"{who} covers global position {pos}, but the log ends at position {last_pos}: "
            "events were removed from the end of the log",
        )
        return report
    for (sid, version), claims in expect_stream.items():
        who = " and ".join(w for w, _ in claims)
        report.first_problem = (sid, version, f"{who} covers this event, but the stream no longer has it")
        return report
    report.covered_to = covered_to
    return report


def _load_checkpoints(
    db: Database,
    keys: signing.Keyring,
    expect: dict[int, list[tuple[str, str]]],
    expect_stream: dict[tuple[str, int], list[tuple[str, str]]],
    notes: list[str],
) -> str | None:
    """Check every checkpoint's signature; those by a key of ``keys`` become claims to check
    against the log. A checkpoint that claims such a key and does not verify is a problem."""
    others: dict[str, int] = {}
    for cp in read_checkpoints(db):
        verifier = keys.get(cp["key_id"])
        if verifier is None:
            others[cp["key_id"]] = others.get(cp["key_id"], 0) + 1
            continue
        message = signing.checkpoint_message(cp["kind"], cp["subject"], cp["position"], cp["hash"], cp["signed_at"])
        if not verifier.verify(message, cp["signature"]):
            return (
                f"checkpoint #{cp['seq']} ({cp['kind']} at {cp['position']}): "
                "the signature does not match (forged or altered)"
            )
        claim = (f"checkpoint #{cp['seq']} signed {cp['signed_at']}", cp["hash"])
        if cp["kind"] == "log":
            expect.setdefault(cp["position"], []).append(claim)
        else:
            expect_stream.setdefault((cp["subject"], cp["position"]), []).append(claim)
    streams = sum(1 for claims in expect_stream.values() for _ in claims)
    if streams:
        notes.append(f"{streams} signed stream head(s) (episodes recorded, exported or imported) are checked too")
    for key_id, n in sorted(others.items()):
        notes.append(f"{n} checkpoint(s) signed by another key ({key_id}) were not checked")
    return None


def _verify_stream(db: Database, stream_id: str) -> VerifyReport:
    """One stream's chain (its content and order); the log chain needs the whole log."""
    report = VerifyReport(0, 0, None)
    last = (0, GENESIS_HASH)
    with db.cursor() as cur:
        cur.execute(
            "SELECT stream_version, event_type, schema_version, recorded_at, payload, prev_hash, hash FROM events "
            f"WHERE stream_id = {db.mark} ORDER BY stream_version",
            (stream_id,),
        )
        for version, etype, sver, at, payload, prev_hash, digest in cur.fetchall():
            report.events_checked += 1
            report.streams_checked = 1
            problem = link_problem(last, stream_id, version, etype, sver, at, payload, prev_hash, digest)
            if problem:
                report.first_problem = (stream_id, version, problem)
                return report
            last = (version, digest)
    return report
