"""Episodes as JSON lines, one event a line.

The format of ``inquitree episodes export`` and of the golden logs under ``tests/golden/`` that
every CI run replays. Each line holds ``type``, ``version`` (the schema version) and ``payload``.
An export also carries its proof: each event's ``stream_version``, ``recorded_at``,
``prev_hash`` and ``hash`` (the stream chain, ``events/chain.py``) as stored, and, when a key
signed it, a last line ``{"signature": {...}}`` over the stream's head. An import recomputes the
chain, names the first event that does not match, and checks the signature against a public key.
Golden logs carry no proof (they are test inputs) and load the same way.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson

from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.files import read_file
from inquitree.boundary.text import shown
from inquitree.events import (
    GENESIS_HASH,
    Event,
    Signer,
    Verifier,
    canonical_json,
    checkpoint_message,
    decode,
    export_message,
    heads_digest,
    link_problem,
    parse_json,
)

PROOF_FIELDS = ("stream_version", "recorded_at", "prev_hash", "hash")
# An export is one episode: even at the turn limit with every reply at its 20,000-character cut it
# stays far below this. Larger files are refused before they are read (each event is also held to
# the store's MAX_EVENT_BYTES when it is appended).
MAX_IMPORT_BYTES = 64 * 1024 * 1024


def as_stored(payload: dict[str, Any]) -> str:
    """A payload read from the store, written back byte for byte: the store keeps an event's fields
    in their declared order (nested keys sorted), and parsing keeps that order."""
    return orjson.dumps(payload).decode()


def dump_jsonl(events: list[Event]) -> str:
    return "".join(
        canonical_json({"type": e.TYPE, "version": e.VERSION, "payload": e.to_payload()}) + "\n" for e in events
    )


def dump_export(records: list, signer: Signer | None, signed_at: str) -> str:
    """Stored events (``RecordedEvent``) with their hashes, and a signature over the stream's head."""
    lines = [
        canonical_json(
            {
                "type": r.event_type,
                "version": r.schema_version,
                "stream_version": r.stream_version,
                "recorded_at": r.recorded_at,
                "prev_hash": r.prev_hash,
                "hash": r.hash,
            }
        )[:-1]
        + f',"payload":{as_stored(r.payload)}}}'
        for r in records
    ]
    if signer is not None and records:
        last = records[-1]
        message = checkpoint_message("stream", last.stream_id, last.stream_version, last.hash, signed_at)
        signature = {
            "kind": "stream",
            "subject": last.stream_id,
            "position": last.stream_version,
            "hash": last.hash,
            "signed_at": signed_at,
            "key_id": signer.key_id,
            "signature": signer.sign(message),
        }
        lines.append(canonical_json({"signature": signature}))
    return "".join(line + "\n" for line in lines)


# A campaign's export holds every episode of it; each episode is held to MAX_IMPORT_BYTES as well.
MAX_CAMPAIGN_BYTES = 1024 * 1024 * 1024


def dump_campaign(name: str, streams: list[list], signer: Signer | None, signed_at: str) -> str:
    """A campaign's episodes in one file (``episodes export --suite``): each episode as
    :func:`dump_export` writes it, its own signature after it, then a last line that lists the
    episodes' heads, signed, so that an episode left out or added is seen on import."""
    heads = [(r[-1].stream_id, r[-1].stream_version, r[-1].hash) for r in streams if r]
    manifest: dict[str, Any] = {
        "campaign": name,
        "episodes": len(heads),
        "heads": [list(h) for h in heads],
    }
    if signer is not None:
        digest = heads_digest(heads)
        manifest |= {
            "signed_at": signed_at,
            "key_id": signer.key_id,
            "signature": signer.sign(export_message(name, len(heads), digest, signed_at)),
        }
    body = "".join(dump_export(r, signer, signed_at) for r in streams if r)
    return body + canonical_json({"manifest": manifest}) + "\n"


def split_campaign(path: str, data: bytes) -> tuple[list[bytes], dict[str, Any] | None]:
    """A file's episodes, each as the bytes of an export of its own (its lines from its
    EpisodeStarted to its signature), and its campaign manifest (None: a one-episode export).
    A file whose last line is not a campaign's list of episodes is one episode's export, handed
    back whole and unread: its lines are parsed once, by :func:`load_export`."""
    if not data.rstrip().rpartition(b"\n")[2].lstrip().startswith(b'{"manifest"'):
        return [data], None
    sections: list[list[bytes]] = []
    manifest = None
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        if manifest is not None:
            raise InquiTreeError(f"{path}: line {n}: a line after the campaign's list of episodes")
        try:
            row = parse_json(line.decode("utf-8"))
        except ValueError as exc:  # (UnicodeDecodeError is one)
            raise InquiTreeError(f"{path}: line {n}: not JSON ({exc})") from None
        if isinstance(row, dict) and "manifest" in row:
            manifest = row["manifest"]
            if not isinstance(manifest, dict):
                raise InquiTreeError(f"{path}: line {n}: the campaign's list of episodes is not an object")
            continue
        if not sections or (isinstance(row, dict) and row.get("type") == "EpisodeStarted"):
            sections.append([])
        sections[-1].append(line)
    return [b"\n".join(lines) + b"\n" for lines in sections], manifest


def check_manifest(
    path: str, manifest: dict[str, Any], heads: list[tuple[str, int, str]], verifier: Verifier | None
) -> list[str]:
    """The campaign manifest against the heads of the episodes the file holds: raise at a
    difference (an episode left out, added or reordered) or a signature that does not verify."""
    listed = manifest.get("heads")
    if not isinstance(listed, list) or [tuple(h) if isinstance(h, list) else h for h in listed] != heads:
        raise InquiTreeError(
            f"{path}: the file's list of episodes does not match the episodes it holds ({len(heads)} held, "
            f"{len(listed) if isinstance(listed, list) else 'no'} listed): episodes were removed, added or reordered"
        )
    name = str(manifest.get("campaign"))
    if "signature" not in manifest:
        if verifier is not None:
            raise InquiTreeError(
                f"{path}: the campaign's list of episodes is not signed, so key {verifier.key_id} cannot check it"
            )
        return [f"campaign {name}: its {len(heads)} episodes are the ones it lists (the list is not signed)"]
    if verifier is None:
        return [
            f"campaign {name}: its {len(heads)} episodes are the ones it lists, signed by key "
            f"{manifest.get('key_id')} (not checked: pass --key PUBLIC_KEY to check it)"
        ]
    message = export_message(name, len(heads), heads_digest(heads), str(manifest.get("signed_at")))
    if manifest.get("key_id") != verifier.key_id or not verifier.verify(message, str(manifest.get("signature"))):
        raise InquiTreeError(
            f"{path}: the campaign's list of episodes does not verify with key {verifier.key_id} (signed by "
            f"{manifest.get('key_id')}): it was edited after it was signed, or another key signed it"
        )
    return [
        f"campaign {name}: its {len(heads)} episodes are the ones it lists, and the signature of the list by "
        f"key {verifier.key_id} verifies"
    ]


@dataclasses.dataclass
class Export:
    """A file read back: its events, the stored rows when it carries hashes, and its signature."""

    path: str
    events: list[Event]
    rows: list[dict[str, Any]] | None  # None: no proof in the file (a golden log, an old export)
    signature: dict[str, Any] | None

    def check(self, stream_id: str, verifier: Verifier | None = None) -> list[str]:
        """Recompute the stream chain and check the signature; raise at the first thing that does not
        hold (naming the line and event), else return what was established, one sentence each."""
        if self.rows is None and verifier is not None:
            raise InquiTreeError(
                f"{self.path}: the file carries no hashes, so key {verifier.key_id} cannot check it "
                "(export it again with `inquitree episodes export --key PRIVATE_KEY`); nothing was imported"
            )
        if self.rows is None:
            return ["the file carries no hashes: nothing shows whether it was edited"]
        prev = GENESIS_HASH
        for i, row in enumerate(self.rows, start=1):
            if link_problem(
                (i - 1, prev),
                stream_id,
                row["stream_version"],
                row["type"],
                row["version"],
                row["recorded_at"],
                row["payload_json"],
                row["prev_hash"],
                row["hash"],
            ):
                raise InquiTreeError(
                    f"{self.path}: line {i} ({row['type']}, version {row['stream_version']}) does not match its "
                    "hash: the file was edited after it was exported, or its lines were reordered or removed"
                )
            prev = row["hash"]
        said = [f"all {len(self.rows)} events match their hashes"]
        sig = self.signature
        if sig is None and verifier is not None:
            raise InquiTreeError(f"{self.path}: the file is not signed, so key {verifier.key_id} cannot check it")
        if sig is None:
            return said + ["the file is not signed: an edit that recomputed every hash could not be told apart"]
        if sig.get("kind") != "stream":  # stored as given: another kind would fail `db verify` for good
            raise InquiTreeError(
                f"{self.path}: the signature's kind is {shown(sig.get('kind'))}, not 'stream': an export carries the "
                "signature of its episode's stream alone"
            )
        if (sig.get("subject"), sig.get("position")) != (stream_id, len(self.rows)):
            raise InquiTreeError(
                f"{self.path}: the signature covers {sig.get('subject')!r} version {sig.get('position')}, not this "
                f"file's head ({stream_id!r} version {len(self.rows)}): events were added or removed"
            )
        if sig.get("hash") != prev:
            raise InquiTreeError(
                f"{self.path}: the signature covers another head hash ({str(sig.get('hash'))[:16]}...) than this "
                f"file's ({prev[:16]}...): events were edited and every hash recomputed after it was signed"
            )
        if verifier is None:
            return said + [f"signed by key {sig.get('key_id')} (not checked: pass --key PUBLIC_KEY to check it)"]
        # the message of the signature exactly as it will be stored (its kind, subject, position, hash, time)
        message = checkpoint_message(
            sig["kind"], sig["subject"], sig["position"], sig["hash"], str(sig.get("signed_at"))
        )
        if sig.get("key_id") != verifier.key_id or not verifier.verify(message, str(sig.get("signature"))):
            raise InquiTreeError(
                f"{self.path}: the signature does not verify with key {verifier.key_id} (signed by "
                f"{sig.get('key_id')}): the file was re-hashed after it was signed, or another key signed it"
            )
        return said + [f"the signature by key {verifier.key_id} verifies"]


def load_export(path: str | Path, data: bytes | None = None) -> Export:
    """An exported episode, from ``data`` (the file's bytes, read once by the caller, who hashes
    the same bytes) or read here: a regular file of at most ``MAX_IMPORT_BYTES``."""
    events: list[Event] = []
    rows: list[dict[str, Any]] = []
    signature = None
    proof_lines = 0
    if data is None:
        data = read_file(path, MAX_IMPORT_BYTES, what="the export")
    for n, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = parse_json(line)
            if signature is not None:
                raise ValueError("a line after the signature")
            if "signature" in row:
                signature = row["signature"]
                if not isinstance(signature, dict):
                    raise TypeError("the signature is not an object")
                continue
            events.append(decode(row["type"], row["version"], row["payload"]))
            if all(k in row for k in PROOF_FIELDS):
                proof_lines += 1
                rows.append(
                    {
                        **{k: row[k] for k in ("type", "version", *PROOF_FIELDS)},
                        "payload_json": as_stored(row["payload"]),
                    }
                )
        except (ValueError, KeyError, TypeError) as exc:
            raise InquiTreeError(f"{path}: line {n}: not an exported event ({type(exc).__name__}: {exc})") from exc
    if not events:
        raise InquiTreeError(f"{path}: no events")
    if proof_lines not in (0, len(events)):
        raise InquiTreeError(
            f"{path}: {len(events) - proof_lines} of {len(events)} lines carry no hash: the file was edited"
        )
    if signature is not None and not proof_lines:
        raise InquiTreeError(f"{path}: a signature but no hashes: the file was edited")
    return Export(str(path), events, rows if proof_lines else None, signature)


def load_jsonl(path: str | Path) -> list[Event]:
    return load_export(path).events
