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
from attackkit import ATTACKS, attacked_copy, forge_verdicts, record_lab
from click.testing import CliRunner

from inquitree.core.cli import main
from inquitree.core.replay import resimulate
from inquitree.events.signing import load_verifier
from inquitree.events.store import Anchor, EventStore

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
    if plain.ok:
        assert out.exit_code == 0 and "cannot prove" in out.output
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
