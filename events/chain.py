"""The two hash chains of the log (pure functions, no database).

- The **stream chain**: each event's ``hash`` covers the previous event's hash in its stream and
  the event's stored content (stream id and version, type, schema version, timestamp, payload
  bytes). It does not depend on where the event sits in a store, so an episode exported from one
  store and imported into another keeps its hashes, and a signature over its head stays valid.
- The **log chain**: each event's ``log_hash`` covers the previous event's log hash (in global
  position order), the event's global position and its stream hash. It binds every event to its
  position and to everything recorded before it: an event moved, removed or slipped in anywhere
  changes every log hash after it, so a log head kept outside the database (an anchor) or signed
  with a key the database does not hold (a checkpoint) proves the whole log up to that head.
"""

from __future__ import annotations

import hashlib

GENESIS_HASH = "0" * 64


def chain_hash(
    prev_hash: str,
    stream_id: str,
    stream_version: int,
    event_type: str,
    schema_version: int,
    recorded_at: str,
    payload_json: str,
) -> str:
    """The stream chain: sha256 over the previous hash in the stream and this event's stored content."""
    text = f"{prev_hash}\n{stream_id}\n{stream_version}\n{event_type}\n{schema_version}\n{recorded_at}\n{payload_json}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def log_hash(prev_log_hash: str, global_position: int, stream_hash: str) -> str:
    """The log chain: sha256 over the previous log hash, this event's global position and its stream hash."""
    return hashlib.sha256(f"{prev_log_hash}\n{global_position}\n{stream_hash}".encode("ascii")).hexdigest()


def link_problem(
    last: tuple[int, str],
    stream_id: str,
    stream_version: int,
    event_type: str,
    schema_version: int,
    recorded_at: str,
    payload_json: str,
    prev_hash: str,
    digest: str,
) -> str | None:
    """What breaks the stream chain at this event, given the stream's ``last`` (version, hash)
    before it ((0, GENESIS_HASH) for a first event); None when it holds."""
    last_version, last_hash = last
    if stream_version != last_version + 1:
        return f"version gap: expected version {last_version + 1} next in the stream"
    if prev_hash != last_hash:
        return "prev_hash does not match the previous event's hash"
    if (
        chain_hash(prev_hash, stream_id, stream_version, event_type, schema_version, recorded_at, payload_json)
        != digest
    ):
        return "content does not match its hash (the event was changed)"
    return None
