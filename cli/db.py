"""``inquitree db``: the event store's schema and integrity."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inquitree.boundary.text import shown
from inquitree.cli.common import db_option, echo, key_option, output_file, say
from inquitree.events import IMPORT_PREFIX


@click.group()
def db() -> None:
    """The event store: schema upgrades, integrity check, streams."""


@db.command()
@db_option
def upgrade(db_url: str | None) -> None:
    """Bring the store's schema to the newest migration."""
    from inquitree.events import (
        backend_named,
        current_revision,
        default_url,
        make_engine,
        redact,
        restore_guards,
        upgrade_schema,
    )

    url = db_url or default_url()
    engine = make_engine(url)
    before = current_revision(engine)
    upgrade_schema(engine)
    echo(f"{redact(url)}: schema {before or '(empty)'} -> {current_revision(engine)}")
    raw = engine.raw_connection()
    try:
        restored = restore_guards(raw, backend_named(engine.dialect.name))
    except Exception as exc:  # e.g. the writer role, which may not change triggers or grants
        raise click.ClickException(f"{redact(url)}: cannot restore the immutability guards: {exc}") from exc
    finally:
        raw.close()
        engine.dispose()
    for done in restored:
        echo(f"{redact(url)}: {done} (an immutability guard was missing)")


_CANNOT = (
    "cannot prove: that no events were cut from the end of the log, nor that the whole log was not "
    "rewritten and re-hashed; keep an anchor (`inquitree db anchor`) or sign checkpoints "
    "($INQUITREE_SIGNING_KEY), then check with --anchor FILE or --key PUBLIC_KEY"
)


_TAIL = (
    "cannot prove: that no events were cut from the end of the log together with their checkpoints (a signature "
    "covers what it signed, not what came after it); keep an anchor outside the database and check with --anchor FILE"
)


def _word(ev) -> str:
    """On whose word an imported episode stands (``EpisodeImported``)."""
    if not ev.hashes:
        return "on no one's word: the file carried no hashes"
    if ev.signed_by is None:
        return "hashes matched, but the file was not signed: on the word of whoever sent it"
    if ev.checked_with is None:
        return f"signed by key {ev.signed_by}, not checked at import: pass that key's public key to --key to check it"
    return f"on the word of key {ev.checked_with}, whose signature was checked at import"


UNANCHORED_EXIT = 3  # `db verify --key` proved every event but not the end of the log (no anchor)


@db.command()
@db_option
@click.option(
    "--anchor",
    "anchor_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="An anchor file (`inquitree db anchor`): the log up to its head must be the one anchored.",
)
@key_option(
    "A public key (`inquitree db keygen`): every checkpoint it signed must match the log, and every "
    "event must be covered by one. Repeat it for a keyring (episodes imported from several signers).",
    multiple=True,
)
@click.option(
    "--accept-unanchored",
    is_flag=True,
    help="With --key and no --anchor: exit 0 although nothing can prove that no events were cut from "
    "the end of the log together with their checkpoints (the exit status is 3 otherwise).",
)
def verify(db_url: str | None, anchor_path: str | None, key_paths: tuple[str, ...], accept_unanchored: bool) -> None:
    """Check the log's two hash chains, its immutability guards, and its head against an anchor or
    signed checkpoints.

    Exit status: 0 when everything checked holds; 1 when something does not (TAMPERED), when a
    guard is missing (UNGUARDED), or when an anchor or key was given and events after its head are
    covered by nothing (NOT PROVEN); 3 when --key proved every event but, with no --anchor, nothing
    can show that none were cut from the end together with their checkpoints (UNANCHORED; exit 0
    with --accept-unanchored). Without --key or --anchor only the chains are checked, and a log cut
    short or re-hashed whole is not found (exit 0, and the output says so)."""
    from inquitree.events import Anchor, EpisodeImported, EventStore, StoreDamaged, load_keyring

    anchor = Anchor.load(anchor_path) if anchor_path else None
    verifier = load_keyring(key_paths)
    try:
        with EventStore(db_url, create=False) as store:
            report = store.verify(
                progress=lambda n: echo(f"  ... {n:,} events checked", err=True), anchor=anchor, verifier=verifier
            )
            missing, declared = store.missing_guards(), store.declared_guards()
            backend = store.dialect
            imports = [
                r.event
                for s in store.streams(prefix=IMPORT_PREFIX)
                for r in store.read_stream(s.stream_id)
                if isinstance(r.event, EpisodeImported)
            ]
    except StoreDamaged as exc:
        _report_damage(db_url, exc)
        sys.exit(1)
    if report.first_problem is not None:
        stream, version, what = report.first_problem
        where = f"stream {stream!r} version {version}: " if stream is not None else ""
        say(f"TAMPERED: {where}{what}")
        sys.exit(1)
    if missing and not declared:
        say(f"UNGUARDED: {missing[0]}; only the chains, with an anchor or a key, show a change")
    elif missing:
        say(
            "UNGUARDED: the database no longer enforces immutability: "
            + "; ".join(missing)
            + " (`inquitree db upgrade`, as the store's owner, restores them;"
            + " then check the log with an anchor or a key)"
        )
    say(
        f"chains ok: {report.events_checked:,} events in {report.streams_checked:,} streams; no event inside the log "
        f"was changed, removed, inserted or moved (head: position {report.head_position}, "
        f"log hash {report.head_hash[:16]}...)"
    )
    if declared and not missing:
        say(f"guards in force ({backend}): " + "; ".join(declared))
    for note in report.notes:
        say(f"note: {note}")
    for ev in imports:
        say(f"imported: episode {ev.episode_id} from {shown(ev.file_name)} ({ev.events} events): {_word(ev)}")
    sys.exit(_proof(report, verifier, missing, accept_unanchored))


def _proof(report, verifier, missing: list[str], accept_unanchored: bool) -> int:
    """What the anchor or the keys proved, said line by line; returns `db verify`'s exit status."""
    if not report.proof:
        say(_CANNOT)
        return 1 if missing else 0
    by = []
    if "anchor" in report.proof:
        by.append("the anchor")
    if verifier is not None:
        by.append(f"checkpoints signed by {verifier.describe()}")
    proved_by = " and ".join(by)
    if report.covered_to:
        say(f"proved by {proved_by}: the log up to global position {report.covered_to} is the one recorded")
    if report.stream_covered:
        after = f" after global position {report.covered_to}" if report.covered_to else ""
        say(
            f"proved by {proved_by}: the {report.stream_covered:,} events{after} are in streams whose signed heads "
            "cover them (episodes recorded, exported or imported under the key)"
        )
    if "anchor" not in report.proof:  # a signature covers what it signed, never what was cut after it
        say(_TAIL)
    if report.unsigned_import_records:
        say(
            f"note: {report.unsigned_import_records} record(s) of imports were written by an importer without a "
            "signing key: the 'imported:' lines above are that importer's word"
        )
    if report.uncovered:
        sign = (
            " (a recorder holding the key signs only what it recorded; to vouch for other events, check them "
            "first, then `inquitree db anchor --key PRIVATE_KEY --adopt`)"
            if verifier
            else ""
        )
        what = (
            f"none of the {report.uncovered:,} events is covered by {proved_by}"
            if not report.covered_to
            else f"{report.uncovered:,} events after global position {report.covered_to} (the last covered by "
            f"{proved_by}) are covered by nothing"
        )
        say(f"NOT PROVEN: {what}{sign}")
        return 1
    if missing:
        return 1
    if "anchor" not in report.proof and not accept_unanchored:
        say("UNANCHORED: exit status 3 (--anchor FILE proves the end; --accept-unanchored accepts the proof as it is)")
        return UNANCHORED_EXIT
    return 0


def _report_damage(db_url: str | None, exc: Exception) -> None:
    """What is left of a damaged store, as `db verify` says it (exit 1: tampered or damaged)."""
    from inquitree.events import default_url, inspect_file, redact, sqlite_database

    url = db_url or default_url()
    path = sqlite_database(url)
    echo(f"DAMAGED: {redact(url)} cannot be read whole ({getattr(exc, 'reason', exc)})")
    if path is None:  # PostgreSQL: the server's own tools (pg_amcheck) look inside
        echo("the server reports the damage; check the database with PostgreSQL's tools (pg_amcheck)")
        return
    found = inspect_file(Path(path).expanduser())
    if not found.opened:
        echo(f"{redact(url)}: not a readable SQLite database ({found.check[0]}): nothing can be read from it")
        return
    said = [ln.strip() for line in found.check for ln in line.splitlines() if ln.strip()]
    echo(f"SQLite's integrity check: {'; '.join(said[:5]) or 'nothing reported'}" + (" ..." if len(said) > 5 else ""))
    end = "unknown" if found.last_position is None else f"{found.last_position:,}"
    ranges = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in found.unreadable[:10])
    more = f" and {len(found.unreadable) - 10} more ranges" if len(found.unreadable) > 10 else ""
    echo(
        f"readable: {found.readable:,} events (the log ends at position {end}); unreadable: "
        f"{found.unreadable_events:,} events" + (f" at positions {ranges}{more}" if ranges else "")
    )
    echo(f"the log is readable and both chains hold up to global position {found.log_ok_to:,}")
    intact = [s for s in found.intact if s.startswith("episode/")]
    if intact:
        echo(
            f"{len(intact)} episode(s) are readable with their chains intact (`inquitree episodes export ID` "
            f"exports each with its hashes): {', '.join(s.removeprefix('episode/') for s in intact[:10])}"
            + (" ..." if len(intact) > 10 else "")
        )
    else:
        echo("no episode is readable whole")
    for sid, what in list(found.damaged.items())[:10]:
        echo(f"damaged: {sid}: {what}")
    if len(found.damaged) > 10:
        echo(f"damaged: {len(found.damaged) - 10} more streams")


@db.command()
@click.argument("prefix", type=click.Path(dir_okay=False))
def keygen(prefix: str) -> None:
    """Make an Ed25519 key pair for signed checkpoints: PREFIX.key (private) and PREFIX.pub (public).

    Keep the private key away from the database (set $INQUITREE_SIGNING_KEY to its path where
    episodes are recorded); publish the public key with your results."""
    from inquitree.events import KEY_ENV, generate, load_verifier

    private, public = generate(prefix)
    echo(f"wrote {private} (private, mode 600) and {public} (public); key id {load_verifier(public).key_id}")
    echo(f"sign while recording: export {KEY_ENV}={private.resolve()}")


@db.command()
@db_option
@click.option(
    "--out", type=click.Path(dir_okay=False), default="-", show_default=True, help="Where to write the anchor."
)
@key_option(
    "A private key: sign the anchor and store the same signed checkpoint in the log (default: $INQUITREE_SIGNING_KEY).",
    private=True,
)
@click.option(
    "--adopt",
    is_flag=True,
    help="With --key: also vouch for events that no recorder holding the key appended (after you checked them).",
)
def anchor(db_url: str | None, out: str, key_path: str | None, adopt: bool) -> None:
    """Write the log's head (position and log hash) to a file to keep outside the database.

    The chains are checked first: a log that is already broken is not anchored. With --key the
    key's earlier checkpoints must match the log too, and every event after the last of them must
    have been recorded under the key; --adopt vouches for the others (a log recorded before it was
    signed), once you have checked them. Keep the file elsewhere or publish it with a paper;
    `inquitree db verify --anchor FILE` then proves the log up to that head, whoever could write to
    the database since."""
    from inquitree.events import Anchor, EventStore, load_signer, redact

    signer = load_signer(key_path) if key_path else None
    if adopt and signer is None:
        raise click.UsageError("--adopt vouches with a key: give --key PRIVATE_KEY (or $INQUITREE_SIGNING_KEY)")
    with EventStore(db_url, create=False, signer=None) as store:
        report = store.verify(verifier=signer.verifier if signer else None)
        if report.first_problem is not None:
            stream, version, what = report.first_problem
            where = f"stream {stream!r} version {version}: " if stream is not None else ""
            raise click.ClickException(f"not anchored: {where}{what}")
        if report.head_position == 0:
            raise click.ClickException(f"{redact(store.url)} holds no events: nothing to anchor")
        if signer is not None:
            signed = store.checkpoint(signer, note="inquitree db anchor", adopt=adopt)
            if signed.problem or signed.unaccounted:
                raise click.ClickException(
                    f"not anchored: {signed.warning(signer.key_id)}; pass --adopt to vouch for them"
                )
            if adopt and report.uncovered:
                echo(f"vouched for {report.uncovered:,} event(s) no earlier checkpoint of the key covered", err=True)
        made = Anchor.of(report, redact(store.url), signer)
    if out == "-":
        echo(made.to_json(), nl=False)
    else:
        output_file(out, made.to_json())
        by = f", signed by key {signer.key_id}" if signer else ""
        echo(f"anchored position {made.position} ({made.events:,} events){by} in {out}", err=True)


@db.command()
@db_option
@click.option("--prefix", default=None, help="Only streams whose id starts with this.")
def streams(db_url: str | None, prefix: str | None) -> None:
    """List the streams with their versions."""
    from inquitree.events import EventStore

    with EventStore(db_url, create=False) as store:
        for s in store.streams(prefix):
            echo(f"{s.stream_id}\t{s.version}\t{s.first_recorded_at}\t{s.last_recorded_at}")


@db.command("grant")
@db_option
@click.option("--owner", default="inquitree_owner", show_default=True, help="Role that owns the tables and migrates.")
@click.option("--writer", default="inquitree_writer", show_default=True, help="Role that records (SELECT, INSERT).")
@click.option("--reader", default="inquitree_reader", show_default=True, help="Role that reads (SELECT).")
def grant_roles(db_url: str | None, owner: str, writer: str, reader: str) -> None:
    """PostgreSQL: set up an owner, a writer and a reader role for the store (run it as a superuser).

    The owner gets the tables and runs `db upgrade`; the writer may only SELECT and INSERT (it cannot
    UPDATE, DELETE, TRUNCATE, ALTER, disable a trigger or set session_replication_role); the reader
    may only SELECT. Record and run campaigns as the writer, sync the warehouse as the reader.
    Passwords come from $INQUITREE_PG_OWNER_PASSWORD, $INQUITREE_PG_WRITER_PASSWORD and
    $INQUITREE_PG_READER_PASSWORD when set. Safe to run again."""
    from inquitree.events import default_url, grant

    urls = grant(db_url or default_url(), {"owner": owner, "writer": writer, "reader": reader})
    for kind, url in urls.items():
        echo(f"{kind}\t{url}")
