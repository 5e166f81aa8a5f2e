"""What `db verify` proves against an attacker who can write to the database file.

Every attack in ``tests/attackkit.py`` is made on a copy of a store recorded with signed
checkpoints and then anchored. With the anchor, every attack on the events is found (moving a
checkpoint changes no event; the key finds that one); with the key alone, every
one but deleting the last episode together with its checkpoint (nothing inside the database can
show that an end was cut off at a checkpoint: that is what the anchor kept elsewhere is for).
Without either, verify finds what changes the log inside, and says what it cannot prove.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.run.replay import resimulate
from inquitree.events.signing import load_verifier
from inquitree.events.store import EventStore
from inquitree.events.verify import Anchor

from attackkit import ATTACKS, attacked_copy, forge_verdicts, record_lab

NOT_FOUND_WITH_KEY = {"delete the last stream and its checkpoint"}
# The anchor proves the events, not the checkpoint table: moving a checkpoint changes no event.
NOT_FOUND_WITH_ANCHOR = {"move a checkpoint to another position"}
# Without a key or anchor: attacks that leave both chains consistent (cut at the end, or re-chained)
NOT_FOUND_WITHOUT_PROOF = {
    "delete the last event of a stream (the log's last)",
    "delete the last five events of a stream",
    "delete the last stream",
    "forge judge verdicts, re-score, re-chain",
    "forge the last episode's verdicts, re-score, re-chain",
    "raw INSERT at the end, hashes computed",
    "raw INSERT in the middle, positions moved, re-chain",
    "re-chain after forging, delete contradicted checkpoints",
    "re-chain after forging, sign with the attacker's key",
    "delete the last stream and its checkpoint",
    "move a checkpoint to another position",  # checkpoints are only read with a key
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return record_lab(tmp_path_factory.mktemp("lab"))


def test_the_untouched_store_is_proved_by_anchor_and_key(lab):
    with EventStore(f"sqlite:///{lab.db}", create=False) as store:
        report = store.verify(anchor=Anchor.load(lab.anchor), verifier=load_verifier(lab.public_key))
    assert report.ok and report.uncovered == 0 and report.covered_to == report.head_position > 0


@pytest.mark.parametrize("name,attack", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack(lab, tmp_path, name, attack):
    db = attacked_copy(lab, attack, tmp_path)
    with EventStore(f"sqlite:///{db}", create=False) as store:
        plain = store.verify()
        anchored = store.verify(anchor=Anchor.load(lab.anchor))
        keyed = store.verify(verifier=load_verifier(lab.public_key))
    assert anchored.ok == (name in NOT_FOUND_WITH_ANCHOR), f"{name}: with the anchor: {anchored}"
    assert keyed.ok == (name in NOT_FOUND_WITH_KEY), f"{name}: with the key: {keyed}"
    assert plain.ok == (name in NOT_FOUND_WITHOUT_PROOF), f"{name}: without a key: {plain}"
    # Without proof, the command says what it cannot prove rather than calling the log genuine.
    out = CliRunner().invoke(main, ["db", "verify", "--db", f"sqlite:///{db}"])
    # Every attack dropped the triggers first: verify names them even where the chains hold.
    if plain.ok:
        assert out.exit_code == 1 and "cannot prove" in out.output
        assert "UNGUARDED" in out.output and "trigger events_no_update is missing" in out.output
    else:
        assert out.exit_code == 1 and "TAMPERED" in out.output


def test_forged_verdicts_replay_identical_but_the_key_finds_them(lab, tmp_path):
    """The issue's forgery: verdicts raised, the score recomputed by the engine, both chains redone.
    Replay cannot see it (the verdicts are inputs); the signed checkpoints can."""
    db = attacked_copy(lab, lambda conn: None, tmp_path)
    from attackkit import _open, _streams, rechain

    conn = _open(db)
    stream = _streams(conn)[0]
    before, after = forge_verdicts(conn, stream)
    rechain(conn)
    conn.close()
    assert after is not None and before is not None and after > before
    with EventStore(f"sqlite:///{db}", create=False) as store:
        assert resimulate([r.event for r in store.read_stream(stream)]).identical
        assert store.verify().ok
        report = store.verify(verifier=load_verifier(lab.public_key))
    assert not report.ok and "the log was rewritten" in report.first_problem[2]
    out = CliRunner().invoke(main, ["db", "verify", "--db", f"sqlite:///{db}", "--key", str(lab.public_key)])
    assert out.exit_code == 1 and "TAMPERED" in out.output


# -- a signer vouches only for what it can account for ----------------------------------
def _forge_valid_event(url: str) -> int:
    """As a writer of the database (SQLite file, or PostgreSQL's writer role, which may INSERT), add an
    event at the end of the log with both hashes computed as InquiTree computes them; returns its position."""
    import sqlalchemy as sa

    from inquitree.events.base import canonical_json
    from inquitree.events.chain import GENESIS_HASH, chain_hash, log_hash

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        position, lhash = conn.exec_driver_sql(
            "SELECT global_position, log_hash FROM events ORDER BY global_position DESC LIMIT 1"
        ).one()
        at, payload = "2026-11-24T00:00:00.000000Z", canonical_json({"note": "forged"})
        digest = chain_hash(GENESIS_HASH, "forged", 1, "Noted", 1, at, payload)
        conn.execute(
            sa.text("INSERT INTO events VALUES (:p, 'forged', 1, 'Noted', 1, :at, :payload, :prev, :h, :lh)"),
            dict(
                p=position + 1,
                at=at,
                payload=payload,
                prev=GENESIS_HASH,
                h=digest,
                lh=log_hash(lhash, position + 1, digest),
            ),
        )
    engine.dispose()
    return position + 1


def _record(url: str, signer, seed: int) -> None:
    from inquitree.core.game.tree import resolve_tree

    from attackkit import TREE
    from enginekit import RandomAgent, play

    tree = resolve_tree(TREE)
    with EventStore(url, signer=signer) as store:
        play(tree, RandomAgent(tree, seed=seed), store=store, seed=seed, randomness=3)


def test_a_forged_insert_is_never_signed_by_an_honest_recorder(store_url, tmp_path, capsys):
    """The issue's laundering: a writer inserts an event with valid hashes, then an honest episode is
    recorded with the key. The recorder signs its own episode and the log up to the forgery, never
    past it, and says so; `db verify --key` finds the forged event covered by nothing."""
    from inquitree.events.signing import generate, load_signer

    private, public = generate(tmp_path / "lab")
    signer = load_signer(private)
    _record(store_url, signer, seed=1)
    forged = _forge_valid_event(store_url)
    capsys.readouterr()
    _record(store_url, signer, seed=2)
    said = capsys.readouterr().err
    assert f"does not vouch for 1 event(s) from global position {forged} on (stream 'forged' version 1)" in said
    with EventStore(store_url, create=False) as store:
        report = store.verify(verifier=load_verifier(public))
        log_heads = [c["position"] for c in store.checkpoints() if c["kind"] == "log"]
    assert report.first_problem is None and report.uncovered == 1 and not report.ok
    assert max(log_heads) == forged - 1  # the log is signed up to the forgery, not across it
    out = CliRunner().invoke(main, ["db", "verify", "--db", store_url, "--key", str(public)])
    assert out.exit_code == 1 and "NOT PROVEN: 1 events after global position" in out.output
    assert "--adopt" in out.output and "sign the head" not in out.output


def test_two_recorders_with_one_key_vouch_for_each_other(sqlite_url, tmp_path):
    """Workers of a campaign share the key: each signs its own streams' heads, so the other can sign
    the log across them; the last to finish signs it all."""
    from inquitree.core.game.tree import resolve_tree
    from inquitree.events.signing import generate, load_signer

    from attackkit import TREE
    from enginekit import RandomAgent, play
    from tests_support import Noted

    private, public = generate(tmp_path / "lab")
    signer = load_signer(private)
    tree = resolve_tree(TREE)
    slow = EventStore(sqlite_url, signer=signer)
    slow.append("slow", [Noted(n=1)], 0)  # an episode in flight in another process
    with EventStore(sqlite_url, signer=signer) as fast:
        play(tree, RandomAgent(tree, seed=3), store=fast, seed=3, randomness=3)
        assert fast.checkpoint(signer).position is None  # nothing more it can vouch for before "slow"
    slow.append("slow", [Noted(n=2)], 1)
    slow.close()
    with EventStore(sqlite_url, create=False) as store:
        report = store.verify(verifier=load_verifier(public))
    assert report.ok and report.uncovered == 0 and report.covered_to == report.head_position


def test_db_anchor_key_refuses_a_rechained_log(lab, tmp_path):
    """Before: `db anchor --key` checked the chains only, and signed a re-chained log."""
    from attackkit import forge_verdicts_rechain

    db = attacked_copy(lab, forge_verdicts_rechain, tmp_path)
    out_file = tmp_path / "anchor.json"
    out = CliRunner().invoke(
        main, ["db", "anchor", "--db", f"sqlite:///{db}", "--key", str(lab.private_key), "--out", str(out_file)]
    )
    assert out.exit_code == 2 and "not anchored" in out.output and "the log was rewritten" in out.output
    assert not out_file.exists()


def test_db_anchor_key_adopts_an_unsigned_log_only_when_asked(sqlite_url, tmp_path):
    from inquitree.events.signing import generate

    private, public = generate(tmp_path / "lab")
    _record(sqlite_url, None, seed=1)  # recorded before the lab signed anything
    anchor = ["db", "anchor", "--db", sqlite_url, "--key", str(private), "--out", str(tmp_path / "a.json")]
    out = CliRunner().invoke(main, anchor)
    assert out.exit_code == 2 and "pass --adopt to vouch for them" in out.output
    verify = ["db", "verify", "--db", sqlite_url, "--key", str(public)]
    assert CliRunner().invoke(main, verify).exit_code == 1
    out = CliRunner().invoke(main, [*anchor, "--adopt"])
    assert out.exit_code == 0, out.output
    out = CliRunner().invoke(main, verify)
    assert out.exit_code == 3 and "proved by checkpoints signed by key" in out.output  # 3: no anchor for the end


def test_a_dropped_trigger_is_reported_and_restored_sqlite(sqlite_url):
    import sqlite3

    _record(sqlite_url, None, seed=1)
    path = sqlite_url.removeprefix("sqlite:///")
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER events_no_update")
    conn.commit()
    out = CliRunner().invoke(main, ["db", "verify", "--db", sqlite_url])
    assert out.exit_code == 1 and "UNGUARDED" in out.output and "trigger events_no_update is missing" in out.output
    recording = CliRunner().invoke(main, ["play", "--embedder", "hash", "--record", "--db", sqlite_url, "-q"])
    assert recording.exit_code == 0 and "no longer enforces immutability" in recording.stderr  # said, not silent
    out = CliRunner().invoke(main, ["db", "upgrade", "--db", sqlite_url])
    assert out.exit_code == 0 and "created trigger events_no_update" in out.output
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        conn.execute("UPDATE events SET payload = '{}'")
    conn.close()
    out = CliRunner().invoke(main, ["db", "verify", "--db", sqlite_url])
    assert out.exit_code == 0 and "UNGUARDED" not in out.output


def test_verify_names_the_guards_in_force_and_a_backend_without_any_is_unguarded(sqlite_url, monkeypatch):
    """`db verify` lists the guards the store's backend has; a backend that declares none (a
    database without triggers) is reported UNGUARDED, never as guarded because nothing is missing."""
    from inquitree.events.backends.sqlite import SQLite

    _record(sqlite_url, None, seed=1)
    out = CliRunner().invoke(main, ["db", "verify", "--db", sqlite_url])
    assert out.exit_code == 0 and "guards in force (sqlite): events_no_update refuses UPDATE on events" in out.output
    assert "events_payload_size refuses an INSERT of a payload over 4,194,304 bytes on events" in out.output
    monkeypatch.setattr(SQLite, "guards", {})
    out = CliRunner().invoke(main, ["db", "verify", "--db", sqlite_url])
    assert out.exit_code == 1 and "UNGUARDED: the sqlite backend has no immutability guards" in out.output
    assert "guards in force" not in out.output and "db upgrade" not in out.output


def test_a_disabled_trigger_and_a_granted_update_are_reported_and_restored_postgresql():
    import sqlalchemy as sa
    from conftest import as_admin, fresh_pg_database

    writer = fresh_pg_database()
    _record(writer, None, seed=1)
    admin = sa.create_engine(as_admin(writer))
    with admin.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE events DISABLE TRIGGER events_no_update_delete")
        conn.exec_driver_sql("DROP TRIGGER checkpoints_no_truncate ON checkpoints")
        conn.exec_driver_sql("GRANT UPDATE ON events TO inquitree_writer")
    out = CliRunner().invoke(main, ["db", "verify", "--db", writer])
    assert out.exit_code == 1 and "UNGUARDED" in out.output
    for said in (
        "trigger events_no_update_delete is disabled",
        "trigger checkpoints_no_truncate is missing",
        "role inquitree_writer may UPDATE events",
    ):
        assert said in out.output
    out = CliRunner().invoke(main, ["db", "upgrade", "--db", as_admin(writer)])
    assert out.exit_code == 0 and "revoked UPDATE on events from inquitree_writer" in out.output, out.output
    out = CliRunner().invoke(main, ["db", "verify", "--db", writer])
    assert out.exit_code == 0 and "UNGUARDED" not in out.output, out.output
    with pytest.raises(sa.exc.DatabaseError, match="immutable"), admin.begin() as conn:
        conn.exec_driver_sql("UPDATE events SET payload = '{}'")
    admin.dispose()


def test_a_keyring_proves_a_store_merged_from_two_signers(tmp_path):
    """Two labs export signed episodes; a third imports both: each is proved by its signer's key."""
    from inquitree.events.signing import generate

    dst = f"sqlite:///{tmp_path / 'merged.sqlite'}"
    publics = []
    for lab_name, seed in (("a", 1), ("b", 2)):
        private, public = generate(tmp_path / lab_name)
        publics.append(str(public))
        src = f"sqlite:///{tmp_path / f'{lab_name}.sqlite'}"
        _record(src, None, seed=seed)
        path = tmp_path / f"{lab_name}.jsonl"
        assert (
            CliRunner()
            .invoke(main, ["episodes", "export", "--db", src, "--out", str(path), "--key", str(private)])
            .exit_code
            == 0
        )
        out = CliRunner().invoke(main, ["episodes", "import", str(path), "--db", dst, "--key", str(public)])
        assert out.exit_code == 0, out.output
    one = CliRunner().invoke(main, ["db", "verify", "--db", dst, "--key", publics[0]])
    assert one.exit_code == 1 and "NOT PROVEN" in one.output
    both = CliRunner().invoke(main, ["db", "verify", "--db", dst, "--key", publics[0], "--key", publics[1]])
    assert both.exit_code == 3 and "checkpoints signed by keys" in both.output, both.output  # 3: no anchor
