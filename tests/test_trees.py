"""Research trees: the shipped set, validation errors, tree commands, calibration."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.game.tree import TreeError, load_tree_file, parse_tree, resolve_tree, shipped_tree_paths
from inquitree.core.players.calibrate import calibrate_tree, recommend_tau
from inquitree.core.players.embed import DEFAULT_TAU, HashEmbedder


@pytest.fixture(scope="module")
def chain_doc() -> dict:
    with open(resolve_tree("synthetic-chain-7").source, encoding="utf-8") as f:
        return json.load(f)


def problems_of(doc: dict) -> list[str]:
    with pytest.raises(TreeError) as info:
        parse_tree(doc, "t.json")
    return info.value.problems


def test_every_shipped_tree_loads_and_states_its_provenance():
    paths = shipped_tree_paths()
    assert {p.stem for p in paths} >= {"synthetic-chain-7", "synthetic-independent-7", "synthetic-diamond-4"}
    for p in paths:
        t = load_tree_file(p)
        assert t.id == p.stem
        assert t.provenance["kind"] and t.provenance["note"]
        if t.id.startswith("synthetic-"):
            assert t.provenance["kind"] == "synthetic" and "made up" in t.provenance["note"]


def test_synthetic_structures_and_bounds():
    chain, indep, diamond = (
        resolve_tree(i) for i in ("synthetic-chain-7", "synthetic-independent-7", "synthetic-diamond-4")
    )
    assert [s.depends_on for s in chain.subtopics] == [(), ("s1",), ("s2",), ("s3",), ("s4",), ("s5",), ("s6",)]
    assert all(s.depends_on == () for s in indep.subtopics)
    assert [s.depends_on for s in diamond.subtopics] == [(), ("s1",), ("s1",), ("s2", "s3")]
    assert chain.bounds(4) == (21, 77) and diamond.bounds(4) == (12, 44) and chain.bounds(2) == (21, 49)


def test_every_shipped_tree_has_monotone_hints_under_the_local_embedder(local_embedder):
    for p in shipped_tree_paths():
        cal = calibrate_tree(load_tree_file(p), local_embedder)
        assert cal.violations == [], f"{p.name}: {cal.violations}"
        assert len(cal.targets) == sum(1 + len(s.studies) for s in load_tree_file(p).subtopics)


@pytest.mark.parametrize("embedder_name", ["local", "hash"])
def test_default_tau_is_what_calibration_recommends_on_the_shipped_trees(embedder_name, local_embedder):
    emb = local_embedder if embedder_name == "local" else HashEmbedder()
    cals = [calibrate_tree(load_tree_file(p), emb) for p in shipped_tree_paths()]
    assert DEFAULT_TAU[emb.id][0] == recommend_tau(cals)


def test_depends_on_results_is_accepted_and_means_the_owning_subtopic(chain_doc):
    doc = copy.deepcopy(chain_doc)
    del doc["subtopics"][2]["depends_on"]
    doc["subtopics"][2]["depends_on_results"] = ["r2"]
    doc["conclusions"][0]["depends_on_results"] = doc["conclusions"][0].pop("requires_results")
    t = parse_tree(doc, "t.json")
    assert t.subtopic["s3"].depends_on == ("s2",)
    assert t.conclusions[0].requires_results == ("r1",)


def test_missing_field_names_the_json_path(chain_doc):
    doc = copy.deepcopy(chain_doc)
    del doc["subtopics"][1]["studies"][0]["result"]["fakes"]
    assert problems_of(doc) == ["$.subtopics[1].studies[0].result: 'fakes' is a required property"]


def test_wrong_type_and_wrong_hint_count(chain_doc):
    doc = copy.deepcopy(chain_doc)
    doc["subtopics"][0]["text"] = 42
    doc["subtopics"][3]["hints"] = doc["subtopics"][3]["hints"][:3]
    found = problems_of(doc)
    assert "$.subtopics[0].text: 42 is not of type 'string'" in found
    assert any(p.startswith("$.subtopics[3].hints: ") and "too short" in p for p in found)


def test_cycle_is_printed(chain_doc):
    doc = copy.deepcopy(chain_doc)
    doc["subtopics"][0]["depends_on"] = ["s3"]
    assert problems_of(doc) == ["$.subtopics: the subtopic dependencies form a cycle: s1 -> s3 -> s2 -> s1"]


def test_duplicate_ids_unknown_references_and_fake_equal_to_truth(chain_doc):
    doc = copy.deepcopy(chain_doc)
    doc["subtopics"][1]["id"] = "s1"
    doc["subtopics"][4]["depends_on"] = ["s99"]
    doc["conclusions"][1]["requires_results"] = ["r404"]
    res = doc["subtopics"][5]["studies"][0]["result"]
    res["fakes"] = ["  " + res["text"].replace(" ", "  ") + " "]
    found = problems_of(doc)
    assert "$.subtopics[1].id: duplicate id 's1' (first used at $.subtopics[0])" in found
    assert "$.subtopics[4].depends_on[0]: unknown subtopic id 's99'" in found
    assert "$.conclusions[1].requires_results[0]: unknown result id 'r404'" in found
    assert "$.subtopics[5].studies[0].result.fakes[0]: the fake result is the true result's text" in found


def test_malformed_json_names_line_and_column(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "inquitree/research-tree@1",\n  "id": }')
    with pytest.raises(TreeError) as info:
        load_tree_file(bad)
    assert str(info.value) == f"{bad}: not valid JSON: line 2 column 9: Expecting value"


def test_unknown_tree_id_lists_the_shipped_ones():
    with pytest.raises(TreeError, match=r"unknown tree id 'no-such-tree'; shipped trees: .*synthetic-chain-7"):
        resolve_tree("no-such-tree")


def test_cli_validate_reports_each_error_and_exits_1(tmp_path, chain_doc):
    doc = copy.deepcopy(chain_doc)
    doc["subtopics"][0]["depends_on"] = ["s2"]
    bad = tmp_path / "cyclic.json"
    bad.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["trees", "validate", str(bad), "synthetic-diamond-4"])
    assert result.exit_code == 1
    assert f"ERROR {bad}: $.subtopics: the subtopic dependencies form a cycle: s1 -> s2 -> s1" in result.output
    assert "ok    " in result.output and "2 trees, 1 errors" in result.output
    assert "Traceback" not in result.output


def test_cli_validate_with_embedder_reports_monotonicity_violations(tmp_path, chain_doc):
    doc = copy.deepcopy(chain_doc)
    hints = doc["subtopics"][2]["hints"]
    hints[0], hints[3] = hints[3], hints[0]
    bad = tmp_path / "swapped.json"
    bad.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["trees", "validate", str(bad), "--embedder", "hash"])
    assert result.exit_code == 1
    assert "subtopic s3: hints are not monotone (Eq. 6): h1=" in result.output


def test_cli_unknown_tree_is_one_line_exit_2():
    result = CliRunner().invoke(main, ["trees", "show", "nope"])
    assert result.exit_code == 2 and result.output.startswith("inquitree: error: nope: unknown tree id 'nope'")


def test_cli_list_show_graph():
    runner = CliRunner()
    listing = runner.invoke(main, ["trees", "list"]).output
    assert any(line.split()[:6] == ["synthetic-chain-7", "-", "7", "-", "21", "77"] for line in listing.splitlines())
    assert any(line.split()[:4] == ["it18-02-spatio-predictive-maps", "2", "4", "4"] for line in listing.splitlines())
    assert (
        "IT-18 (paper's Table 4): 18 of 18 papers have a tree; subtopics" in listing
        and "vs 120 in the paper" in listing
    )
    shown = runner.invoke(main, ["trees", "show", "synthetic-diamond-4"]).output
    assert "SUBTOPIC s4  (after s2, s3)" in shown and "steps between 3n = 12 and n(2H+3) = 44" in shown
    dot = runner.invoke(main, ["trees", "graph", "synthetic-diamond-4", "--format", "dot"]).output
    assert dot.count(" -> ") == 4 and '"s2" -> "s4";' in dot
    mermaid = runner.invoke(main, ["trees", "graph", "synthetic-chain-7"]).output
    assert mermaid.startswith("graph TD") and "s6 --> s7" in mermaid


def test_a_tree_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from inquitree.core.game.tree import TreeError, load_tree_file

    big = tmp_path / "big.json"
    big.write_text('{"id": "x", "topic": "' + "a" * 2_000 + '"}')
    monkeypatch.setenv("INQUITREE_MAX_TREE_BYTES", "1000")
    with pytest.raises(TreeError, match=r"big.json.*2,0\d\d bytes, over the limit of 1,000"):
        load_tree_file(big)


def test_a_tree_that_passed_the_schema_is_not_checked_against_it_again(chain_doc, monkeypatch):
    import inquitree.core.game.tree as tree_module

    first = parse_tree(chain_doc, "chain")
    monkeypatch.setattr(tree_module, "_schema_validator", lambda: pytest.fail("checked against the schema again"))
    again = parse_tree(copy.deepcopy(chain_doc), "chain")
    assert again == first
    changed = copy.deepcopy(chain_doc)
    changed["topic"]["text"] += " (edited)"
    with pytest.raises(pytest.fail.Exception):  # other content: checked
        parse_tree(changed, "chain")


def test_the_checks_beyond_the_schema_run_on_every_load(chain_doc, monkeypatch):
    import inquitree.core.game.tree as tree_module

    broken = copy.deepcopy(chain_doc)
    broken["subtopics"][0]["depends_on"] = [broken["subtopics"][-1]["id"]]  # a cycle: the schema allows it
    with pytest.raises(TreeError, match="cycle"):
        parse_tree(copy.deepcopy(broken), "first")  # passes the schema (and is marked), not the rest
    monkeypatch.setattr(tree_module, "_schema_validator", lambda: pytest.fail("checked against the schema again"))
    with pytest.raises(TreeError, match="cycle"):
        parse_tree(broken, "again")


def test_a_changed_schema_trees_validate_and_an_unwritable_cache_each_check_again(chain_doc, monkeypatch, tmp_path):
    import inquitree.core.game.tree as tree_module

    parse_tree(chain_doc, "chain")
    calls = []
    real = tree_module._schema_validator
    monkeypatch.setattr(tree_module, "_schema_validator", lambda: calls.append(1) or real())
    parse_tree(chain_doc, "chain", memo=False)  # what `trees validate` does
    monkeypatch.setattr(tree_module, "_schema_digest", lambda: "another schema")
    parse_tree(chain_doc, "chain")
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("INQUITREE_CACHE", str(tmp_path / "file"))  # a file where the directory would be
    parse_tree(chain_doc, "chain")
    parse_tree(chain_doc, "chain")
    assert len(calls) == 4


def test_trees_match_shows_what_the_engine_would_decide():
    """`inquitree trees match`: the state's candidates with their cosines, the best, tau and the
    decision, as the engine computes them (the oracle's action is a subtopic's own text)."""
    import json

    from click.testing import CliRunner

    from inquitree.cli import main

    tree = resolve_tree("synthetic-diamond-4")
    first = tree.subtopics[0]
    runner = CliRunner()
    out = runner.invoke(main, ["trees", "match", tree.id, first.text, "--format", "json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert [c["id"] for c in got["candidates"]] == [s.id for s in tree.subtopics]
    assert got["best"] == first.id and got["match"] == first.id and got["tau"] == 0.75
    assert max(c["cosine"] for c in got["candidates"]) == pytest.approx(1.0, abs=1e-3)
    study = first.studies[0]
    inside = json.loads(
        runner.invoke(
            main,
            ["trees", "match", tree.id, "something else", "--subtopic", first.id, "--tau", "0.99"]
            + ["--format", "json"],
        ).output
    )
    assert inside["candidates"][0]["id"] == study.id and inside["match"] is None and inside["tau"] == 0.99
    table = runner.invoke(main, ["trees", "match", tree.id, first.text])
    assert f"best {first.id} at 1.000 against tau 0.75 (topic state): matches {first.id}" in table.output
    # Inside a subtopic, without options: the engine's study threshold, not the Topic's tau.
    default = json.loads(
        runner.invoke(main, ["trees", "match", tree.id, "x", "--subtopic", first.id, "--format", "json"]).output
    )
    assert default["state"] == "subtopic" and default["tau"] == 0.42
    wrong = runner.invoke(main, ["trees", "match", tree.id, "x", "--subtopic", "nope"])
    assert wrong.exit_code == 2 and "'nope' is not a subtopic of synthetic-diamond-4" in wrong.output
    # Thresholds play refuses are refused here too, not compared against.
    for option, value in (("--tau", "1.5"), ("--tau", "0"), ("--tau-study", "-0.1"), ("--tau-study", "nan")):
        out = runner.invoke(main, ["trees", "match", tree.id, "x", option, value])
        assert out.exit_code == 2 and f"Invalid value for '{option}'" in out.output, (option, value, out.output)


def test_calibrate_warns_where_subtopics_are_closer_to_each_other_than_tau():
    """it18-29's subtopics score about 0.9 against one another, above tau 0.75, and
    `trees calibrate` said nothing about it."""
    from click.testing import CliRunner

    from inquitree.cli import main

    out = CliRunner().invoke(main, ["trees", "calibrate", "it18-29-illusory-contour-pattern-completion"])
    assert out.exit_code == 0, out.output
    warning = next(ln for ln in out.output.splitlines() if "WARNING:" in ln)
    assert "subtopics are closer to another subtopic than tau 0.75" in warning and "(s2 0.9" in warning
