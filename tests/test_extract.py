"""``inquitree extract`` end to end against a loopback OpenAI-compatible server.

The server's "model" below is a scripted function: it answers each pipeline prompt the
way a model could, including a first skeleton with a broken reference (which must be sent
back), first hints for s1 in the wrong order (which must be regenerated), and one flag from
each check (which must reach the review report and nothing else). The paper text is a
made-up study used only as input here.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from inquitree.cli import main
from inquitree.core.calls.cache import CallCache
from inquitree.core.extract import tree_from_paper as ex
from inquitree.core.game.tree import load_tree_file
from tests.openai_server import OpenAICompatibleServer

PAPER = """Sleep after learning and spatial memory in mice (an invented study, test input only).
We trained mice in a water maze and let half of them sleep while the others were kept awake. Sleeping mice
remembered the platform better. We recorded CA1 place cells and found that training sequences were replayed
during sharp-wave ripples in the following sleep. Silencing ripples during sleep abolished the memory benefit.
"""

SKELETON = {
    "paper": {
        "title": "Sleep after learning and spatial memory in mice",
        "journal": None,
        "doi": None,
        "published": None,
    },
    "topic": "How sleep after learning relates to the retention of spatial memories in mice.",
    "subtopics": [
        {
            "text": "Whether sleep after training changes how well mice remember a hidden platform location.",
            "depends_on_results": [],
            "study": "Train mice in a water maze, let half sleep and keep half awake, "
            "then test platform recall a day later.",
            "result": "Sleeping mice recalled the platform better.",
            "fakes": ["Sleeping and sleep-deprived mice recalled the platform equally well."],
        },
        {
            "text": "Whether hippocampal place-cell sequences from training reappear during the sleep that follows.",
            "depends_on_results": ["r1"],
            "study": "Record CA1 place cells during training and subsequent sleep and "
            "detect sequence replay in sharp-wave ripples.",
            "result": "Training sequences were replayed in ripples.",
            "fakes": ["Training sequences were not replayed more than chance during ripples."],
        },
        {
            "text": "Whether disrupting sharp-wave ripples during post-training sleep changes later memory.",
            "depends_on_results": ["r1", "r2"],
            "study": "Silence ripples with closed-loop stimulation during sleep "
            "after training and test platform recall.",
            "result": "Ripple disruption abolished the sleep benefit.",
            "fakes": ["Ripple disruption left the sleep benefit intact."],
        },
    ],
    "conclusions": [
        {"id": "c1", "text": "Sleep after learning improves spatial memory in mice.", "requires_results": ["r1"]},
        {
            "id": "c2",
            "text": "Replay in sleep ripples is needed for the memory benefit.",
            "requires_results": ["r2", "r3"],
        },
    ],
}


def good_hints(target: str) -> list[str]:
    words = target.rstrip(".").split()
    return [
        "Consider the broader research area first.",
        "Look at " + " ".join(words[-4:]) + ".",
        " ".join(words[: max(3, 2 * len(words) // 3)]) + ".",
        "Investigate this: " + target,
    ]


def scripted_model(messages: list[dict]) -> str:
    system, user = messages[0]["content"], messages[1]["content"]
    if system == ex.EXTRACT_SYSTEM:
        if len(messages) == 2:  # first answer: a conclusion needs a result that does not exist
            bad = json.loads(json.dumps(SKELETON))
            bad["conclusions"][0]["requires_results"] = ["r9"]
            return json.dumps(bad)
        return "```json\n" + json.dumps(SKELETON) + "\n```"
    if system == ex.HINTS_SYSTEM:
        target = user.split("): ", 1)[1]
        hints = good_hints(target)
        if target == SKELETON["subtopics"][0]["text"] and len(messages) == 2:
            hints = hints[::-1]  # the wrong order: the pipeline must ask again
        return json.dumps({"hints": hints})
    if system == ex.LEAKAGE_SYSTEM:
        return json.dumps(
            {
                "flags": [
                    {
                        "item": "topic",
                        "issue": "implies that sleep matters for retention",
                        "suggestion": "The relation between post-learning states and memory.",
                    }
                ]
            }
        )
    if system == ex.PURITY_SYSTEM:
        return json.dumps({"flags": []})
    if system == ex.FAKES_SYSTEM:
        return json.dumps({"flags": [{"item": "r3", "issue": "too obvious", "suggestion": "make it partial"}]})
    if system == ex.AUDIT_SYSTEM:
        return json.dumps({"flags": [{"item": "s3", "issue": "redundant: r1 is implied by r2", "suggestion": ""}]})
    raise AssertionError(f"unexpected prompt: {system[:80]}")


@pytest.fixture
def paper(tmp_path):
    p = tmp_path / "paper.txt"
    p.write_text(PAPER)
    return p


def call_log(out) -> list[dict]:
    """The run's log: one record per call sent."""
    return [json.loads(line) for line in (out / "sleep-test.calls.jsonl").read_text().splitlines()]


def run(paper, out, base_url):
    return CliRunner().invoke(
        main,
        ["extract", str(paper), "--model", "scripted", "--base-url", base_url, "--out", str(out), "--id", "sleep-test"],
    )


def test_extract_end_to_end_writes_a_valid_tree_and_a_review(paper, tmp_path, local_embedder):
    out = tmp_path / "out"
    with OpenAICompatibleServer(scripted_model) as srv:
        result = run(paper, out, srv.base_url)
    assert result.exit_code == 0, result.output
    tree = load_tree_file(out / "sleep-test.json")
    assert tree.n == 3 and tree.subtopic["s3"].depends_on == ("s1", "s2")
    assert tree.provenance["kind"] == "extracted-by-model" and "scripted" in tree.provenance["note"]
    assert tree.provenance["sources"][0].startswith("file:paper.txt#sha256=")
    chats = [r["body"]["messages"] for r in srv.requests if r["path"].endswith("/chat/completions")]
    # the broken skeleton went back to the model with the problem named
    retry = [m for m in chats if m[0]["content"] == ex.EXTRACT_SYSTEM and len(m) == 4]
    assert retry and "unknown result id 'r9'" in retry[0][3]["content"]
    # s1's hints came back in the wrong order and were asked for again, with their cosines
    s1_text = SKELETON["subtopics"][0]["text"]
    s1_asks = [m for m in chats if m[0]["content"] == ex.HINTS_SYSTEM and m[1]["content"].endswith(s1_text)]
    assert len(s1_asks) == 2 and "cosine similarities" in s1_asks[1][-1]["content"]
    assert tree.subtopic["s1"].hints[3] == "Investigate this: " + s1_text
    # every target is monotone under the local embedder or flagged in the review
    review = (out / "sleep-test.review.md").read_text()
    for s in tree.subtopics:
        for key, target, hints in ((s.id, s.text, s.hints), (s.studies[0].id, s.studies[0].text, s.studies[0].hints)):
            v = local_embedder.embed([target, *hints])
            c = [float(v[0] @ x) for x in v[1:]]
            assert all(c[i] < c[i + 1] for i in range(3)) or f"**{key}**: hints are not monotone" in review
    # each check's flag is in the review, and nothing was applied to the tree
    assert "### stage 1: leakage (1)" in review and "**topic**: implies that sleep matters" in review
    assert "### stage 1: purity (0)" in review and "### stage 1: fakes (1)" in review
    assert "### stage 2: dependencies (1)" in review and "**s3**: redundant: r1 is implied by r2" in review
    assert tree.topic == SKELETON["topic"]
    assert "1 leakage, 1 fakes, 1 dependencies)" in result.output


def test_a_rerun_reuses_every_answer_and_an_interrupted_run_resumes(paper, tmp_path, local_embedder):
    out = tmp_path / "out"
    with OpenAICompatibleServer(scripted_model) as srv:  # one endpoint: the cache keys answers by it

        def chats() -> list[dict]:
            return [r for r in srv.requests if r["path"].endswith("/chat/completions")]

        srv.fail_after = (5, "garbage")  # the endpoint breaks after five calls
        broken = run(paper, out, srv.base_url)
        assert broken.exit_code == 2 and "Traceback" not in broken.output
        assert "no usable answer from scripted" in broken.output
        assert not (out / "sleep-test.json").exists()
        log = call_log(out)
        # five calls logged, four answers used: the skeleton (asked twice), s1's hints twice (reordered),
        # s2's hints; the rejected first skeleton is logged with its problems, every call with its raw
        # answer, usage and latency (the garbage after them never became an answer)
        assert len(log) == 5 and sum(not r["problems"] for r in log) == 4
        rejected = [r for r in log if r["problems"]]
        assert len(rejected) == 1 and rejected[0]["purpose"] == "extraction"
        assert all(r["answer"] and r["usage"]["output"] is not None and r["latency_ms"] > 0 for r in log)
        cache = CallCache(out / "sleep-test.cache.sqlite")  # the engine's call cache holds the raw answers
        assert cache._con.execute("SELECT count(*) FROM calls").fetchone()[0] == 5
        cache.close()

        srv.fail_after, before = None, len(chats())
        resumed = run(paper, out, srv.base_url)
        asked = chats()[before:]
        assert resumed.exit_code == 0, resumed.output
        # the skeleton's conversation, its rejection included, is replayed from the cache, not asked again
        assert asked and not any(m["body"]["messages"][0]["content"] == ex.EXTRACT_SYSTEM for m in asked)
        assert "(+5 reused from the cache)" in resumed.output
        log = call_log(out)
        assert len(log) == 5 + len(asked)  # the log gains the calls sent, not the answers replayed

        first, before = (out / "sleep-test.json").read_text(), len(chats())
        again = run(paper, out, srv.base_url)
        assert len(chats()) == before  # a finished extraction again: no call
    assert again.exit_code == 0 and "model calls: 0 (+" in again.output
    assert (out / "sleep-test.json").read_text() == first


def test_a_run_out_of_attempts_fails_again_from_the_cache_and_goes_on_with_more(paper, tmp_path):
    """What the failure says holds: the cache replays the rejected answers (no call), and a larger
    --attempts asks on from the last of them."""
    out = tmp_path / "out"
    with OpenAICompatibleServer(scripted_model) as srv:

        def attempt(n: int):
            before = srv.chat_calls
            result = CliRunner().invoke(
                main,
                ["extract", str(paper), "--model", "scripted", "--base-url", srv.base_url, "--out", str(out),
                 "--id", "sleep-test", "--embedder", "hash", "--attempts", str(n)],
            )  # fmt: skip
            return result, srv.chat_calls - before

        failed, calls = attempt(1)  # the scripted skeleton is wrong the first time
        assert failed.exit_code == 2 and calls == 1
        assert "raise --attempts to ask on from the last one" in failed.output
        assert "sleep-test.cache.sqlite" in failed.output and "sleep-test.calls.jsonl" in failed.output
        again, calls = attempt(1)
        assert again.exit_code == 2 and calls == 0  # the same rejected answer, from the cache
        more, calls = attempt(2)
        assert more.exit_code == 0, more.output
        skeletons = [r for r in srv.requests if r["path"].endswith("/chat/completions")]
        skeletons = [r for r in skeletons if r["body"]["messages"][0]["content"] == ex.EXTRACT_SYSTEM]
        assert len(skeletons) == 2 and len(skeletons[1]["body"]["messages"]) == 4  # asked on after the rejection


def small_model(messages: list[dict]) -> str:
    """What Qwen2.5-Coder-1.5B did with a real paper: placeholder fakes, no dependency between
    subtopics, and the same hints (out of order) however often it was shown their cosines."""
    system, user = messages[0]["content"], messages[1]["content"]
    if system == ex.EXTRACT_SYSTEM:
        flat = json.loads(json.dumps(SKELETON))
        flat["paper"]["published"] = "2025-10-01"  # a date the paper does not give
        flat["paper"]["journal"] = "arXiv preprint arXiv:2601.07095"  # nor a venue
        for sub in flat["subtopics"]:
            sub["depends_on_results"], sub["fakes"] = [], ["None", "None"]
        return json.dumps(flat)
    if system == ex.HINTS_SYSTEM:
        return json.dumps({"hints": good_hints(user.split("): ", 1)[1])[::-1]})
    return json.dumps({"flags": []})


def test_what_a_small_model_does_is_flagged_and_a_repeated_answer_is_not_asked_for_again(paper, tmp_path):
    out = tmp_path / "out"
    with OpenAICompatibleServer(small_model) as srv:
        result = run(paper, out, srv.base_url)
        chats = [r["body"]["messages"] for r in srv.requests if r["path"].endswith("/chat/completions")]
    assert result.exit_code == 0, result.output
    review = (out / "sleep-test.review.md").read_text()
    assert "### form: placeholders (3)" in review  # one flag per result, naming each fake
    assert review.count("fake 1 is a placeholder ('None'); fake 2 is a placeholder ('None')") == 3
    assert "### form: structure (1)" in review and "the tree is a list" in review
    assert "### form: provenance (2)" in review and "publication date 2025-10-01" in review
    assert "the journal 'arXiv preprint arXiv:2601.07095'" in review
    paper_facts = load_tree_file(out / "sleep-test.json").paper
    assert paper_facts["published"] is None and paper_facts["journal"] is None  # left out, not guessed
    # each target asked twice (the second answer repeated the first), not hint_rounds + 1 = 3 times
    per_target: dict[str, int] = {}
    for m in chats:
        if m[0]["content"] == ex.HINTS_SYSTEM:
            per_target[m[1]["content"]] = per_target.get(m[1]["content"], 0) + 1
    assert len(per_target) == 6 and set(per_target.values()) == {2}
    assert review.count("after 1 regeneration(s) (the model then gave the same hints again)") == 6
    # the loopback server reports usage; a stream that reports none is unknown, not zero
    assert "tokens in " in result.output and "reported no usage" not in result.output
    assert ex.tokens_note({"input": 0, "output": 0, "unreported": 3}, 3) == (
        "tokens unknown (the endpoint reported no usage)"
    )
    assert "(1 of 3 calls reported no usage" in ex.tokens_note({"input": 9, "output": 4, "unreported": 1}, 3)
    assert ex.tokens_note({"input": 0, "output": 0, "unreported": 0}, 0) == "no tokens spent"  # all reused


def test_bad_inputs_are_one_line_errors(tmp_path):
    r = CliRunner().invoke(
        main,
        [
            "extract",
            str(tmp_path / "missing.txt"),
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--embedder",
            "hash",
        ],
    )
    assert r.exit_code == 2 and "missing.txt: no such file" in r.output
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    r = CliRunner().invoke(
        main, ["extract", str(empty), "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--embedder", "hash"]
    )
    assert r.exit_code == 2 and "empty.txt: the file is empty" in r.output


def test_extract_writes_through_no_link_planted_at_its_outputs(paper, tmp_path, local_embedder):
    """`extract --out` wrote STEM.review.md and STEM.json.tmp through links placed there in advance
    (a victim file was overwritten): its temporary file has an unguessable name, and an output name
    (the tree, the review, the call cache, the call log) that is a link leaving the folder is refused."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    planted_links = ("sleep-test.review.md", "sleep-test.cache.sqlite", "sleep-test.calls.jsonl")
    for planted, code in (("sleep-test.json.tmp", 0), *((name, 2) for name in planted_links)):
        out = tmp_path / planted
        out.mkdir()
        (out / planted).symlink_to(victim)
        with OpenAICompatibleServer(scripted_model) as srv:
            done = run(paper, out, srv.base_url)
        assert done.exit_code == code, done.output
        assert victim.read_text() == "precious"
    assert not (tmp_path / "sleep-test.json.tmp" / "sleep-test.json").is_symlink()


def test_extract_takes_the_call_settings_it_is_given_and_the_engines_call_cache(paper, tmp_path):
    """The shared call options reach the extraction's calls (here: not streamed), and
    `--call-cache` names the cache its answers go to: the engine's, which a play may share."""
    out = tmp_path / "out"
    shared = tmp_path / "c.sqlite"
    args = ["extract", str(paper), "--model", "scripted", "--out", str(out), "--id", "sleep-test", "--no-stream",
            "--call-cache", str(shared), "--embedder", "hash"]  # fmt: skip
    with OpenAICompatibleServer(scripted_model) as srv:
        result = CliRunner().invoke(main, [*args, "--base-url", srv.base_url])
        url = srv.base_url
    assert result.exit_code == 0, result.output
    chats = [r["body"] for r in srv.requests if r["path"].endswith("/chat/completions")]
    assert chats and not any(b.get("stream") for b in chats)
    assert shared.exists() and not (out / "sleep-test.cache.sqlite").exists()
    # the same endpoint, now closed: every answer comes from the shared file
    again = CliRunner().invoke(main, [*args, "--base-url", url])
    assert again.exit_code == 0, again.output
    assert f"model calls: 0 (+{len(chats)} reused from the cache)" in again.output


def test_a_log_of_an_older_version_is_set_aside_and_said_not_reused(paper, tmp_path):
    """An older version kept its parsed answers in <id>.calls.jsonl: they are not what the model
    said, so they are not reused; the file is kept under another name and the run says so."""
    out = tmp_path / "out"
    out.mkdir()
    older = {"key": "0" * 64, "purpose": "extraction", "usage": {}, "latency_ms": 1.0, "json": SKELETON}
    (out / "sleep-test.calls.jsonl").write_text(json.dumps(older) + "\n")
    with OpenAICompatibleServer(scripted_model) as srv:
        result = run(paper, out, srv.base_url)
    assert result.exit_code == 0, result.output
    assert "held answers an older version kept" in result.output and "sleep-test.calls.older.jsonl" in result.output
    assert json.loads((out / "sleep-test.calls.older.jsonl").read_text()) == older
    log = call_log(out)
    assert log and all("answer" in r for r in log) and log[0]["purpose"] == "extraction"


def test_a_log_too_large_or_not_a_file_is_not_read_to_tell_an_older_one(paper, tmp_path):
    """Telling an older log reads a regular file of at most 4 MB, once: a larger one is not an
    older log (it is kept and the run appends to it), and a pipe there is not waited on."""
    fifo = tmp_path / "fifo.calls.jsonl"
    os.mkfifo(fifo)
    with OpenAICompatibleServer(scripted_model) as srv:
        chat = ex.JsonChat("scripted", srv.base_url, fifo, tmp_path / "c.sqlite")
        assert chat.older_log() is False  # at once: a pipe with no writer is refused, not read
    out = tmp_path / "out"
    out.mkdir()
    endless = '{"key": "' + "x" * (ex._LOG_READ_LIMIT + 10) + '"}'  # an older-looking line, too long to read
    (out / "sleep-test.calls.jsonl").write_text(endless + "\n")
    with OpenAICompatibleServer(scripted_model) as srv:
        result = run(paper, out, srv.base_url)
    assert result.exit_code == 0, result.output
    assert "older version" not in result.output and not (out / "sleep-test.calls.older.jsonl").exists()
    lines = (out / "sleep-test.calls.jsonl").read_text().splitlines()
    assert lines[0] == endless and all("answer" in json.loads(line) for line in lines[1:])
