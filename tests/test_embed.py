"""Embedders: the offline local model, the cache, and an OpenAI-compatible endpoint over real HTTP."""

from __future__ import annotations

import numpy as np
import pytest

from inquitree.core.players.embed import CachedEmbedder, EmbedderError, HashEmbedder, OpenAIEmbedder
from inquitree.core.players.kinds import make_embedder

from openai_server import OpenAICompatibleServer
from tests_support import free_port

PARAPHRASE = (
    "Record place cells in the hippocampus while mice explore a new arena.",
    "Measure hippocampal place-cell activity as the animals explore an unfamiliar environment.",
)
UNRELATED = "The bakery raised the price of sourdough bread this morning."


def test_local_embedder_unit_vectors_and_semantic_order(local_embedder):
    v = local_embedder.embed([*PARAPHRASE, UNRELATED])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    paraphrase, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert paraphrase > 0.6 and unrelated < 0.2
    assert np.array_equal(local_embedder.embed([PARAPHRASE[0]])[0], v[0])  # deterministic, batch-independent


def test_the_local_model_loads_at_the_first_text_a_cache_does_not_hold(tmp_path):
    from inquitree.core.players.embed import LocalEmbedder

    warm = CachedEmbedder(LocalEmbedder(), tmp_path / "c.sqlite")
    first = warm.embed(["sleep and memory"])
    warm.close()
    inner = LocalEmbedder()
    assert inner._model is None  # making it loads nothing
    cached = CachedEmbedder(inner, tmp_path / "c.sqlite")
    assert np.array_equal(cached.embed(["sleep and memory"]), first) and inner._model is None
    cached.embed(["a text the cache has not seen"])
    assert inner._model is not None


def test_a_missing_local_model_package_is_named_when_the_embedder_is_made(monkeypatch):
    import importlib.util

    from inquitree.core.players.embed import LocalEmbedder

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    with pytest.raises(EmbedderError, match="needs onnxruntime"):
        LocalEmbedder()


def test_cache_returns_identical_vectors_and_persists(tmp_path):
    inner = HashEmbedder()
    calls = []

    class Counting:
        id = inner.id

        def embed(self, texts):
            calls.append(list(texts))
            return inner.embed(texts)

    cache = CachedEmbedder(Counting(), tmp_path / "c.sqlite")
    first = cache.embed(["a b c", "d e f", "a b c"])
    again = cache.embed(["d e f", "a b c"])
    assert calls == [["a b c", "d e f"]]
    assert np.array_equal(again, first[[1, 0]]) and cache.hits == 3 and cache.misses == 2
    cache.close()
    reopened = CachedEmbedder(Counting(), tmp_path / "c.sqlite")
    assert np.array_equal(reopened.embed(["a b c"])[0], first[0]) and calls == [["a b c", "d e f"]]


def test_the_cache_keeps_a_bounded_memory_and_reads_what_it_dropped_from_its_file(tmp_path):
    """A model campaign embeds every reply it gets: the vectors kept in memory stay under the
    budget, and one dropped is read from the file again (a hit, not a new call)."""
    inner = HashEmbedder(dim=64)  # 256 bytes a vector
    texts = [f"reply number {i}" for i in range(200)]
    bounded = CachedEmbedder(inner, tmp_path / "c.sqlite", memory_bytes=40 * 256)
    unbounded = HashEmbedder(dim=64).embed(texts)
    for i, text in enumerate(texts):
        assert np.array_equal(bounded.embed([text, texts[0]]), unbounded[[i, 0]])
        assert bounded._mem_bytes <= 40 * 256 and len(bounded._mem) <= 40
    assert bounded.misses == 200
    again = bounded.embed(texts)  # most were dropped from memory: read back from the file
    assert np.array_equal(again, unbounded) and bounded.misses == 200 and bounded.hits == 200 + 200
    assert bounded._mem_bytes == sum(v.nbytes for v in bounded._mem.values())


def test_openai_embedder_over_http_batches_and_normalizes():
    with OpenAICompatibleServer() as server:
        emb = OpenAIEmbedder("text-embedding-3-small", base_url=server.base_url, batch_size=2)
        v = emb.embed(["one text", "two texts", "three texts"])
        assert v.shape == (3, 64) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
        assert [len(r["body"]["input"]) for r in server.requests] == [2, 1]
        assert server.requests[0]["body"]["model"] == "text-embedding-3-small"
        assert np.allclose(v, HashEmbedder(dim=64).embed(["one text", "two texts", "three texts"]), atol=1e-6)
        assert emb.id == f"openai:text-embedding-3-small@{server.base_url}"


def test_openai_embedder_retries_transient_errors():
    with OpenAICompatibleServer() as server:
        server.faults = [500, 429]
        emb = OpenAIEmbedder("m", base_url=server.base_url, max_retries=3)
        assert emb.embed(["x"]).shape == (1, 64)
        assert len(server.requests) == 3


def test_openai_embedder_gives_up_with_a_clear_error():
    with OpenAICompatibleServer() as server:
        server.faults = [500, 500, 500]
        emb = OpenAIEmbedder("m", base_url=server.base_url, max_retries=1)
        with pytest.raises(EmbedderError, match=r"embedding request to http://127\.0\.0\.1:\d+/v1 \(m\) failed"):
            emb.embed(["x"])


def test_unknown_embedder_name():
    with pytest.raises(EmbedderError, match="unknown embedder 'bert'"):
        make_embedder("bert")


def test_nomic_embeds_the_action_as_a_query_and_the_candidates_as_documents(tmp_path, monkeypatch):
    """nomic-embed-text-v1.5 reads a text by its task prefix: the engine's cosine puts
    ``search_query: `` before the agent's action and ``search_document: `` before each candidate,
    the cache keeps the two roles of one text apart, and no key of the environment reaches the
    server."""
    from inquitree.core.players.embed import NomicEmbedder, embed_actions
    from inquitree.core.run.runner import cosines

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-embedder")
    with OpenAICompatibleServer() as server:
        server._embedder = HashEmbedder(dim=NomicEmbedder.DIM)
        emb = make_embedder("nomic", base_url=server.base_url, cache=tmp_path / "cache.sqlite")
        assert emb.id == "nomic:nomic-embed-text-v1.5-f16:search_query/search_document"
        found = cosines(emb, "record place cells", [("s1", "place cells in mice"), ("s2", "bread prices")])
        inputs = [r["body"]["input"] for r in server.requests]
        assert inputs == [
            ["search_document: place cells in mice", "search_document: bread prices"],
            ["search_query: record place cells"],
        ]
        assert all(r["body"]["model"] == "nomic-embed-text-v1.5" for r in server.requests)
        assert {r["authorization"] for r in server.requests} == {"Bearer unused"}
        hashed = HashEmbedder(dim=NomicEmbedder.DIM)
        want = (
            hashed.embed(["search_document: place cells in mice"])[0]
            @ hashed.embed(["search_query: record place cells"])[0]
        )
        assert found["s1"] == round(float(want), 6)
        # one text in both roles: two vectors, each cached under its own role
        as_query = embed_actions(emb, ["bread prices"])[0]
        assert not np.allclose(as_query, emb.embed(["bread prices"])[0])
        assert len(server.requests) == 3
        assert np.allclose(embed_actions(emb, ["bread prices"])[0], as_query)
        assert len(server.requests) == 3


def test_nomic_refuses_a_server_of_another_model_and_says_how_to_start_its_own():
    """A server at the nomic address that answers with another width is another model: refused,
    not read; with nothing listening, the error says how to serve the embedder."""
    from inquitree.core.players.embed import NomicEmbedder

    refused = pytest.raises(EmbedderError, match="answered with 64 dimensions, not nomic-embed-text-v1.5's 768")
    with OpenAICompatibleServer() as server, refused:  # 64 dimensions
        NomicEmbedder(server.base_url).embed(["x"])
    with pytest.raises(EmbedderError, match="scripts/local-model.sh start nomic"):
        NomicEmbedder(f"http://127.0.0.1:{free_port()}/v1", timeout=5).embed(["x"])


def test_an_embeddings_call_is_bounded_like_a_chat_call():
    """Embeddings went through the SDK with only a per-read timeout: a server that dripped a byte every
    few seconds held `play --timeout 5` until it was killed (120-150 s), and an endless body grew to
    3.9 GB. Through the chat client, each attempt is whole by its timeout and the body is bounded."""
    import time

    from inquitree.core.calls.chat_http import MAX_BODY_BYTES

    with OpenAICompatibleServer() as server:
        server.drip_seconds = 0.5
        server.faults = ["drip"]
        emb = OpenAIEmbedder("m", base_url=server.base_url, max_retries=0, timeout=1.0)
        t0 = time.monotonic()
        with pytest.raises(EmbedderError, match="no complete answer within 1 s"):
            emb.embed(["x"])
        assert time.monotonic() - t0 < 5
        server.faults = ["endless"]
        emb = OpenAIEmbedder("m", base_url=server.base_url, max_retries=0, timeout=30.0)
        with pytest.raises(EmbedderError, match="failed: .*(bytes|too large)"):
            emb.embed(["x"])
        assert server.flooded < 4 * MAX_BODY_BYTES  # the client let go near the bound, not at 3.9 GB
    # an answer that is not an embeddings answer is one line too
    with OpenAICompatibleServer() as server:
        server.faults = ["garbage"]
        with pytest.raises(EmbedderError, match="HTTP 200 with an HTML page"):
            OpenAIEmbedder("m", base_url=server.base_url, max_retries=0).embed(["x"])
