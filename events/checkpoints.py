"""Signed checkpoints of the log (``events/signing.py`` makes and checks the signatures): what a
signer may vouch for and how it signs it, and the checkpoints kept in the store. A
:class:`Checkpoints` works over a store's database (the store holds one, as ``store.signing``) and
remembers what that store appended and its key has not vouched for yet; ``events/verify.py`` reads
the checkpoints back to prove the log.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from inquitree.boundary.text import warn
from inquitree.events import signing
from inquitree.events.chain import GENESIS_HASH, link_problem, log_hash
from inquitree.events.database import (
    CHECKPOINT_COLUMNS,
    EVENT_COLUMNS,
    Database,
)


@dataclasses.dataclass
class _KeyState:
    """One key's checkpoints as a store has read and checked them (read again from ``seen`` on)."""

    seen: int = 0  # the last checkpoint seq read
    log: tuple[int, str] = (0, GENESIS_HASH)  # the highest log head it signed
    streams: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)  # stream -> signed head


@dataclasses.dataclass(frozen=True)
class SignResult:
    """What a signer signed: the log head (``position``, None if nothing new), how many stream heads,
    and how many events after the signed head nothing accounts for (the first as (global position,
    stream, version)); ``problem`` says what was found broken, and then nothing was signed."""

    position: int | None = None
    streams: int = 0
    unaccounted: int = 0
    first_unaccounted: tuple[int, str, int] | None = None
    problem: str | None = None

    def warning(self, key_id: str) -> str | None:
        if self.problem:
            return f"NOT SIGNED with key {key_id}: {self.problem}; run `inquitree db verify`"
        if self.unaccounted and self.first_unaccounted:
            pos, sid, version = self.first_unaccounted
            return (
                f"key {key_id} does not vouch for {self.unaccounted:,} event(s) from global position {pos} on "
                f"(stream {sid!r} version {version}): no recorder holding the key appended them. If another process "
                "is still recording with the key, it signs them when it ends; otherwise check them "
                "(`inquitree db verify`, `inquitree replay`)"
            )
        return None


class FromEnv:
    """The default signer: the key named by ``$INQUITREE_SIGNING_KEY`` (for a store that may create)."""


FROM_ENV = FromEnv()


class Checkpoints:
    """Signing what one store recorded, over that store's database: the signer, the clock that
    stamps each checkpoint, and what the store appended that the key has not vouched for yet."""

    def __init__(self, db: Database, signer: signing.Signer | None, clock: Callable[[], str]):
        self.db = db
        self.signer = signer
        self.clock = clock
        self._unsigned = False  # appended since the last checkpoint
        # global position ranges this store appended and its key has not vouched for
        self._own: list[tuple[int, int]] = []
        # each stream this store appended to, with the first version it appended
        self._own_streams: dict[str, int] = {}
        self._signed: dict[str, _KeyState] = {}  # key id -> its checkpoints read so far
        self._said: set[str] = set()  # signing problems already printed

    def recorded(self, first_position: int, last_position: int, stream_id: str, first_version: int) -> None:
        """The store appended these events: the signer may vouch for them."""
        self._unsigned = True
        self._own.append((first_position, last_position))
        self._own_streams.setdefault(stream_id, first_version)

    @property
    def pending(self) -> bool:
        """A signer is set and something was appended since its last checkpoint."""
        return self.signer is not None and self._unsigned

    def head(self) -> tuple[int, str]:
        """The log's head: the last event's global position and log hash ((0, zeros) when empty)."""
        with self.db.cursor() as cur:
            return self.db.read_log_head(cur)

    def checkpoint(
        self, signer: signing.Signer | None = None, note: str | None = None, *, adopt: bool = False
    ) -> "SignResult":
        """Sign what the key can vouch for, and store the checkpoints; see :class:`SignResult`.

        A signer never signs a head it has not checked. First it checks every earlier checkpoint of
        its key (their signatures, and that the log still has the head the last one signed), then
        both chains of every event after that head. Each of those events must be accounted for:
        appended by this store, or inside a stream whose head a checkpoint of the key signed (another
        process recording with the key). This store's streams get signed heads (``stream``
        checkpoints), and the log's head is signed up to the first event nothing accounts for.
        ``adopt=True`` (``db anchor --key K --adopt``, after a person checked the log) vouches for
        every event whose chains hold. Uses ``signer`` or the store's own; without either, or with
        nothing new since this store's last checkpoint, it does nothing."""
        signer = signer or self.signer
        if signer is None or (signer is self.signer and not self._unsigned and not adopt):
            return SignResult()
        with self.db.write_transaction() as cur:
            self.db.backend.hold_off_appends(cur)  # one signer at a time, and no append between its read and its rows
            result = self._sign_accounted(cur, signer, note, adopt)
        if signer is self.signer:
            self._unsigned = result.problem is not None or result.unaccounted > 0
        return result

    def sign_recorded(self) -> "SignResult":
        """The store's own signer signs what this store recorded (after an episode, and on close);
        a problem, or events it cannot vouch for, are said once on stderr, never signed over."""
        result = self.checkpoint()
        message = result.warning(self.signer.key_id if self.signer else "")
        if message and message not in self._said:
            self._said.add(message)
            warn(f"inquitree: {message}")
        return result

    def _sign_accounted(self, cur: Any, signer: signing.Signer, note: str | None, adopt: bool) -> "SignResult":  # noqa: C901 - one walk checks, accounts and signs in one transaction
        m = self.db.mark
        state = self._signed.setdefault(signer.key_id, _KeyState())
        cur.execute(
            f"SELECT {', '.join(CHECKPOINT_COLUMNS)} FROM checkpoints WHERE key_id = {m} AND seq > {m} ORDER BY seq",
            (signer.key_id, state.seen),
        )
        verifier = signer.verifier
        for row in cur.fetchall():
            cp = dict(zip(CHECKPOINT_COLUMNS, row, strict=False))
            message = signing.checkpoint_message(cp["kind"], cp["subject"], cp["position"], cp["hash"], cp["signed_at"])
            if not verifier.verify(message, cp["signature"]):
                return SignResult(
                    problem=f"checkpoint #{cp['seq']} claims key {signer.key_id} but its signature does not verify "
                    "(forged or altered)"
                )
            state.seen = cp["seq"]
            if cp["kind"] == "log" and cp["position"] > state.log[0]:
                state.log = (cp["position"], cp["hash"])
            elif cp["kind"] == "stream" and cp["position"] > state.streams.get(cp["subject"], (0, ""))[0]:
                state.streams[cp["subject"]] = (cp["position"], cp["hash"])
        start, start_hash = state.log
        if start:
            cur.execute(f"SELECT log_hash FROM events WHERE global_position = {m}", (start,))
            row = cur.fetchone()
            if row is None or row[0] != start_hash:
                return SignResult(
                    problem=f"the log at global position {start} is not the one key {signer.key_id} signed: "
                    "it was rewritten or cut short"
                )
        cur.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE global_position > {m} ORDER BY global_position", (start,)
        )
        rows = cur.fetchall()
        heads: dict[str, tuple[int, str]] = {}
        prev_log, signed_to, signed_hash = start_hash, start, start_hash
        unaccounted, first, refused = 0, None, set()
        for pos, sid, version, etype, sver, at, payload, prev_hash, digest, lhash in rows:
            last = heads.get(sid)
            if last is None:
                last = (version - 1, self.db.hash_on(cur, sid, version - 1) or "")
            problem = link_problem(last, sid, version, etype, sver, at, payload, prev_hash, digest)
            if problem is None and log_hash(prev_log, pos, digest) != lhash:
                problem = "log hash does not match (an event before it was removed, inserted or moved)"
            signed_stream = state.streams.get(sid)
            if problem is None and signed_stream and signed_stream[0] == version and signed_stream[1] != digest:
                problem = f"key {signer.key_id} signed another hash for this event"
            if problem:
                return SignResult(problem=f"stream {sid!r} version {version} (global position {pos}): {problem}")
            heads[sid], prev_log = (version, digest), lhash
            if adopt or self._owns(pos) or (signed_stream is not None and version <= signed_stream[0]):
                if first is None:
                    signed_to, signed_hash = pos, lhash
                continue
            unaccounted += 1
            refused.add(sid)
            first = first or (pos, sid, version)
        streams = 0
        for sid in list(self._own_streams):
            if sid in refused or sid not in heads:
                continue
            version, digest = heads[sid]
            if state.streams.get(sid, (0, ""))[0] < version:
                self._sign(cur, signer, "stream", sid, version, digest, note)
                streams += 1
            del self._own_streams[sid]
        if signed_to > start:
            self._sign(cur, signer, "log", "log", signed_to, signed_hash, note)
            self._own = [(a, b) for a, b in self._own if b > signed_to]
        return SignResult(signed_to if signed_to > start else None, streams, unaccounted, first)

    def _owns(self, position: int) -> bool:
        return any(a <= position <= b for a, b in self._own)

    def add_signature(self, signature: dict[str, Any], note: str | None = None) -> None:
        """Keep a stream signature made elsewhere (an imported episode's provenance)."""
        row = {k: signature[k] for k in ("kind", "subject", "position", "hash", "signed_at", "key_id", "signature")}
        with self.db.write_transaction() as cur:
            self._insert_checkpoint(cur, {**row, "note": note})

    def _insert_checkpoint(self, cur: Any, row: dict[str, Any]) -> None:
        names = CHECKPOINT_COLUMNS[1:]  # seq is the database's
        marks = ", ".join([self.db.mark] * len(names))
        cur.execute(f"INSERT INTO checkpoints ({', '.join(names)}) VALUES ({marks})", tuple(row[k] for k in names))

    def _sign(
        self, cur: Any, signer: signing.Signer, kind: str, subject: str, position: int, digest: str, note: str | None
    ) -> dict[str, Any]:
        at = self.clock()
        row = {
            "kind": kind,
            "subject": subject,
            "position": position,
            "hash": digest,
            "signed_at": at,
            "key_id": signer.key_id,
            "signature": signer.sign(signing.checkpoint_message(kind, subject, position, digest, at)),
        }
        self._insert_checkpoint(cur, {**row, "note": note})
        return row

    def rows(self) -> list[dict[str, Any]]:
        return read_checkpoints(self.db)


def read_checkpoints(db: Database) -> list[dict[str, Any]]:
    """Every checkpoint in the store, in the order they were kept."""
    with db.cursor() as cur:
        cur.execute(f"SELECT {', '.join(CHECKPOINT_COLUMNS)} FROM checkpoints ORDER BY seq")
        return [dict(zip(CHECKPOINT_COLUMNS, r, strict=False)) for r in cur.fetchall()]
