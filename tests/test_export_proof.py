"""Exports carry their proof: hashes per event and a signature over the episode's head; an import
checks them, refuses an edited file naming the first bad event, and keeps the provenance."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.events.signing import generate, load_verifier
from inquitree.events.store import EventStore


def run(*args, ok=True):
    out = CliRunner().invoke(main, [str(a) for a in args])
    assert (out.exit_code == 0) == ok, out.output
    return out.output


@pytest.fixture
def exported(tmp_path):
    private, public = generate(tmp_path / "lab")
    src = f"sqlite:///{tmp_path / 'src.sqlite'}"
    run("play", "--record", "--db", src, "--agent", "random", "--embedder", "hash", "--randomness", "3")
    path = tmp_path / "episode.jsonl"
    run("episodes", "export", "--db", src, "--out", path, "--key", private)
    return tmp_path, src, path, public


def test_a_signed_export_imports_with_the_same_hashes_and_its_signature(exported):
    tmp_path, src, path, public = exported
    dst = f"sqlite:///{tmp_path / 'dst.sqlite'}"
    out = run("episodes", "import", str(path), "--db", dst, "--key", public)
    assert "match their hashes" in out and f"the signature by key {load_verifier(public).key_id} verifies" in out
    with EventStore(src, create=False) as a, EventStore(dst, create=False) as b:
        (stream,) = [s.stream_id for s in a.streams()]
        left, right = a.read_stream(stream), b.read_stream(stream)
        assert [(r.recorded_at, r.hash) for r in left] == [(r.recorded_at, r.hash) for r in right]
        (sig,) = b.checkpoints()
        assert sig["kind"] == "stream" and sig["hash"] == right[-1].hash and "imported from" in sig["note"]
        report = b.verify(verifier=load_verifier(public))
        assert report.first_problem is None and any("signed stream head" in n for n in report.notes)
    assert "nothing to do" in run("episodes", "import", str(path), "--db", dst)


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda lines: lines.__setitem__(3, lines[3].replace('"step":', '"step":1')), "line 4 "),
        (lambda lines: lines.pop(5), "line 6 "),
        (lambda lines: lines.insert(-1, lines[2]), "does not match its hash"),
    ],
    ids=["edit a payload", "remove a line", "repeat a line"],
)
def test_an_edited_export_is_refused_naming_the_first_bad_event(exported, edit, message):
    tmp_path, _, path, public = exported
    lines = path.read_text().splitlines()
    edit(lines)
    path.write_text("\n".join(lines) + "\n")
    out = run("episodes", "import", str(path), "--db", f"sqlite:///{tmp_path / 'dst.sqlite'}", ok=False)
    assert message in out and "edited" in out
    assert not (tmp_path / "dst.sqlite").exists() or not EventStore(f"sqlite:///{tmp_path / 'dst.sqlite'}").streams()


def _forge(path, resign: bool) -> None:
    """The forger's edit: a payload changed and every hash recomputed (sha256 needs no key); with
    ``resign`` the signature line is made to name the new head (its signature cannot follow)."""
    from inquitree.events.chain import GENESIS_HASH, chain_hash

    rows = [json.loads(line) for line in path.read_text().splitlines()]
    signature = rows.pop()
    rows[3]["payload"]["step"] = 99
    prev, subject = GENESIS_HASH, signature["signature"]["subject"]
    for i, row in enumerate(rows, 1):
        text = json.dumps(row["payload"], separators=(",", ":"), ensure_ascii=False)
        row["prev_hash"] = prev
        row["hash"] = prev = chain_hash(prev, subject, i, row["type"], row["version"], row["recorded_at"], text)
    if resign:
        signature["signature"]["hash"] = prev
    path.write_text(
        "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in [*rows, signature])
    )


def test_a_re_hashed_export_is_caught_by_the_signature(exported):
    """The forger recomputes every hash after an edit: the chain holds, the signature does not."""
    tmp_path, _, path, public = exported
    _forge(path, resign=True)
    dst = f"sqlite:///{tmp_path / 'dst.sqlite'}"
    out = run("episodes", "import", str(path), "--db", dst, "--key", public, ok=False)
    assert "the signature does not verify" in out
    # Without the key the chain is consistent: the import says what it could not check.
    out = run("episodes", "import", str(path), "--db", dst)
    assert "not checked: pass --key" in out


def test_a_re_hashed_export_that_kept_its_signature_is_refused_for_the_edit(exported):
    """The forger re-hashes after an edit but leaves the signature line alone: refused, and the reason
    is the edit (it used to say "events were added or removed")."""
    tmp_path, _, path, public = exported
    _forge(path, resign=False)
    for key in ([], ["--key", public]):
        out = run("episodes", "import", str(path), "--db", f"sqlite:///{tmp_path / 'dst.sqlite'}", *key, ok=False)
        assert "edited and every hash recomputed after it was signed" in out and "added or removed" not in out


def test_golden_logs_without_hashes_still_import_and_say_so(tmp_path):
    out = run(
        "episodes", "import", "tests/golden/oracle-independent-a3.jsonl", "--db", f"sqlite:///{tmp_path / 'g.sqlite'}"
    )
    assert "carries no hashes" in out and "imported 149 events" in out


@pytest.mark.parametrize("kind", ["log", "stream ", None])
def test_an_export_whose_signature_kind_was_edited_is_refused(exported, kind):
    """An import stored a signature whose `kind` was edited to "log", so the importer's own store then
    failed `db verify` for good (checkpoints cannot be deleted). Only a stream signature is taken."""
    tmp_path, _, path, public = exported
    lines = path.read_text().splitlines()
    doc = json.loads(lines[-1])
    doc["signature"]["kind"] = kind
    path.write_text("\n".join([*lines[:-1], json.dumps(doc)]) + "\n")
    dst = f"sqlite:///{tmp_path / 'dst.sqlite'}"
    for key in ([], ["--key", public]):
        out = run("episodes", "import", str(path), "--db", dst, *key, ok=False)
        assert "the signature's kind is" in out and "not 'stream'" in out
    if (tmp_path / "dst.sqlite").exists():  # refused before a checkpoint was stored: the store still proves itself
        assert "integrity: ok" in run("db", "verify", "--db", dst)


def test_a_campaign_exports_as_one_signed_file_and_imports_whole(tmp_path):
    """`episodes export --suite NAME` writes every episode of a campaign in one file, each signed,
    with a last line that lists their heads, signed too: an episode left out, added or moved is
    refused before any is imported."""
    private, public = generate(tmp_path / "lab")
    suite = tmp_path / "two.toml"
    suite.write_text(
        'name = "two"\ntrees = ["synthetic-diamond-4", "synthetic-chain-7"]\nagents = ["oracle", "random"]\n'
        'embedder = "hash"\n'
    )
    src, dst = f"sqlite:///{tmp_path / 'src.sqlite'}", f"sqlite:///{tmp_path / 'dst.sqlite'}"
    run("suite", "run", suite, "--db", src)
    run("play", "--record", "--db", src, "--agent", "random", "--embedder", "hash")  # not of the campaign
    path = tmp_path / "two.jsonl"
    assert "of 4 episodes of campaign two" in run(
        "episodes", "export", "--suite", "two", "--db", src, "--out", path, "--key", private
    )
    lines = path.read_text().splitlines()
    manifest = json.loads(lines[-1])["manifest"]
    assert manifest["campaign"] == "two" and manifest["episodes"] == 4 and sum('"signature"' in ln for ln in lines) == 5

    def refused(edited: list[str], says: str) -> None:
        bad = tmp_path / "bad.jsonl"
        bad.write_text("\n".join(edited) + "\n")
        out = run("episodes", "import", bad, "--db", f"sqlite:///{tmp_path / 'none.sqlite'}", "--key", public, ok=False)
        assert says in out, out

    starts = [i for i, ln in enumerate(lines) if '"type":"EpisodeStarted"' in ln]
    refused(lines[: starts[1]] + lines[starts[2] :], "episodes were removed, added or reordered")  # one left out
    forged = json.loads(lines[-1])
    forged["manifest"]["heads"] = forged["manifest"]["heads"][:1]
    refused(lines[: starts[1]] + [json.dumps(forged)], "does not verify with key")  # cut, its list re-made
    refused(lines[:-1] + ['{"manifest": {"campaign": "two", "heads": ' + json.dumps(manifest["heads"]) + "}}"],
            "is not signed, so key")  # fmt: skip

    out = run("episodes", "import", path, "--db", dst, "--key", public)
    assert "campaign two: its 4 episodes are the ones it lists, and the signature of the list by key" in out
    with EventStore(src, create=False) as a, EventStore(dst, create=False) as b:
        theirs = {s.stream_id: a.read_stream(s.stream_id) for s in a.streams("episode/two.")}
        assert set(theirs) == {s.stream_id for s in b.streams("episode/")}
        for sid, records in theirs.items():
            assert [r.hash for r in b.read_stream(sid)] == [r.hash for r in records]
        assert b.verify(verifier=load_verifier(public)).first_problem is None
