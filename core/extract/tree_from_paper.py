"""Research trees from papers by an OpenAI-compatible model (the paper's Appendix D).

``extract_tree`` runs the pipeline and writes two files for a person to review:

1. **Extraction (D.1).** The model reads the paper and returns the tree's skeleton as
   JSON: paper metadata, an open-ended Topic, subtopics with their study, result, fake
   results and ``depends_on_results``, and conclusion items with the results each needs.
   The skeleton is checked with the same schema and structural rules as any tree
   (unknown ids, cycles, fakes equal to the truth ...); problems go back to the model,
   a bounded number of times.
2. **Hints.** For every target (each subtopic and each study) the model writes h1..h4.
   The embedder measures Eq. 6; a target whose hints are not strictly rising in cosine
   is asked again with its cosines shown, up to ``hint_rounds`` times. What is still
   not monotone after that is flagged, not hidden.
3. **Stage 1 (D.2): content checks**, one prompt each: leakage in the Topic,
   observational purity of subtopic and study texts, plausibility of the fake results.
4. **Stage 2 (D.2): dependency audit**: logical progression, redundant and missing
   dependencies.

Checks never rewrite the tree: every flag goes to ``<id>.review.md`` with the item,
the issue and the model's suggestion, for a person to decide (as the paper's authors
did). The tree states it was extracted by a model and names the model, the prompt
version and the paper file's digest.

Calls go through the engine's client and its call cache (``core/calls``): each raw answer is
kept under everything that determined it, in ``<id>.cache.sqlite`` beside the outputs (or the
file ``--call-cache`` names, which a suite's calls may share), so a run that dies (network,
Ctrl-C) resumes where it stopped and a re-run of a finished extraction replays every answer,
rejected ones too, with no call. ``<id>.calls.jsonl`` is the run's log: each call sent, with its
purpose, usage, latency, the raw answer and the problems found in it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Callable

from inquitree.boundary.errors import InquiTreeError
from inquitree.boundary.files import InputRefused, append_opened, confined, read_file, write_file
from inquitree.core.calls import CallSettings, ChatModel, ModelCallError, call_cache, json_schema_format
from inquitree.core.game import TreeError, parse_tree
from inquitree.core.players import hint_cosines, is_monotone, strip_code_fence

PROMPT_VERSION = "extract-v1"


class ExtractError(InquiTreeError):
    pass


# ---------------------------------------------------------------- prompts (ours, versioned)

EXTRACT_SYSTEM = """You turn a scientific paper into a research tree for InquiTree, a benchmark in which an AI \
agent rediscovers the paper's findings step by step. Reply with one JSON object and nothing else, in this form:

{"paper": {"title": str, "journal": str or null, "doi": str or null, "published": "YYYY-MM-DD" or null},
 "topic": str,
 "subtopics": [{"id": "s1", "text": str, "depends_on_results": ["r..."], "study": str, "result": str,
                "fakes": [str, ...]}, ...],
 "conclusions": [{"id": "c1", "text": str, "requires_results": ["r..."]}, ...]}

Rules:
- Decompose the paper's line of inquiry into subtopics s1, s2, ... in order; subtopic sK has exactly one study \
and its result has the id rK.
- topic: the open-ended research question. It must not state or imply any finding ("the relationship between \
A and B", not "how A promotes B").
- subtopic text and study text: what is examined and how (set-up, phenomenon, measurement), never what was \
found or what it means.
- result: what the study found, as the paper reports it, with its numbers where the paper gives them.
- fakes: one or more false results for the same study: plausible and specific, contradicting the paper, and \
unable to support the true conclusions.
- depends_on_results: the results that must be known before the subtopic makes scientific sense (a \
phenomenon is established before its mechanism); [] when none. No cycles.
- conclusions: the paper's main conclusions as short items; requires_results lists the results each one rests on.
"""

EXTRACT_USER = "The paper:\n\n{paper}"

HINTS_SYSTEM = """You write the four hints InquiTree gives an agent that fails to propose a target. Reply with \
one JSON object and nothing else: {"hints": [h1, h2, h3, h4]}.
The hints must come ever closer to the target: h1 a vague pointer to the area, h2 names the kind of question or \
method, h3 most of the target, h4 the target stated outright as an instruction. Each is one sentence. Do not \
reveal results or conclusions."""

HINTS_USER = """Research topic: {topic}
Target ({kind}): {target}"""

HINTS_RETRY = """These hints are not getting steadily closer to the target: their cosine similarities to it \
were h1={c[0]:.2f}, h2={c[1]:.2f}, h3={c[2]:.2f}, h4={c[3]:.2f}, and each must be higher than the one before. \
Write all four again."""

CHECK_FORMAT = """Reply with one JSON object and nothing else: {"flags": [{"item": id, "issue": str, \
"suggestion": str}, ...]}, where item is one of the ids given. Reply {"flags": []} when nothing needs changing."""

LEAKAGE_SYSTEM = (
    """Stage 1 check, information leakage. The Topic of a research tree must be open-ended: it \
must not state or imply the final conclusions, so that an agent starts from a neutral prior. Flag the Topic if \
it does. """
    + CHECK_FORMAT
)

PURITY_SYSTEM = (
    """Stage 1 check, observational purity. Subtopic and study texts may only state the set-up, the \
phenomenon examined or the measurement. Flag every text that contains a finding, an interpretation or an \
expected outcome, which belong in results and conclusions. """
    + CHECK_FORMAT
)

FAKES_SYSTEM = (
    """Stage 1 check, fake result plausibility. For every result, each fake must (i) contradict the \
true result, (ii) be subtle and specific enough to deceive, not an obvious error, and (iii) be unable to support \
the true conclusions. Flag each fake that fails one of these, naming which. """
    + CHECK_FORMAT
)

AUDIT_SYSTEM = (
    """Stage 2 check, dependency audit. A subtopic may only be unlocked once the results it depends \
on are known, and those results must be a necessary scientific basis for it (for example, a phenomenon is \
established before its mechanism). Flag: logical progression problems, redundant dependencies (a listed result \
is not needed) and insufficient dependencies (a needed result is missing). Start each issue with one of \
"logical progression:", "redundant:", "insufficient:". """
    + CHECK_FORMAT
)


# ---------------------------------------------------------------- model calls, logged


def _parse_json_object(raw: str) -> dict:
    obj = json.loads(strip_code_fence(raw))
    if not isinstance(obj, dict):
        raise ValueError("the reply is JSON but not an object")
    return obj


_STR = {"type": "string"}
_STRS = {"type": "array", "items": _STR}
SKELETON_SCHEMA = {
    "type": "object",
    "required": ["paper", "topic", "subtopics", "conclusions"],
    "properties": {
        "paper": {
            "type": "object",
            "required": ["title"],
            "properties": {
                "title": _STR,
                "journal": {"type": ["string", "null"]},
                "doi": {"type": ["string", "null"]},
                "published": {"type": ["string", "null"]},
            },
        },
        "topic": _STR,
        "subtopics": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "text", "depends_on_results", "study", "result", "fakes"],
                "properties": {
                    "id": _STR,
                    "text": _STR,
                    "depends_on_results": _STRS,
                    "study": _STR,
                    "result": _STR,
                    "fakes": _STRS,
                },
            },
        },
        "conclusions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "text", "requires_results"],
                "properties": {"id": _STR, "text": _STR, "requires_results": _STRS},
            },
        },
    },
}
HINTS_SCHEMA = {
    "type": "object",
    "required": ["hints"],
    "properties": {"hints": {"type": "array", "items": _STR, "minItems": 4, "maxItems": 4}},
}
FLAGS_SCHEMA = {
    "type": "object",
    "required": ["flags"],
    "properties": {
        "flags": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["item", "issue"],
                "properties": {"item": _STR, "issue": _STR, "suggestion": _STR},
            },
        }
    },
}


_LOG_READ_LIMIT = 4_000_000  # bytes of a call log read to tell an older one (whose first line is a skeleton)


class JsonChat:
    """Ask one chat model for JSON objects; bounded retries; every call cached and logged.

    Each purpose's JSON schema goes to the endpoint as structured output (``response_format``;
    dropped where the endpoint refuses it). The raw answers are kept by the engine's call cache
    (``cache_path``), so a re-run replays the same conversation, rejections included, and asks
    only what was never answered. ``log_path`` receives one line per call sent: purpose, usage,
    latency, the raw answer and the problems found in it (none: the answer was used)."""

    def __init__(
        self,
        model: str,
        base_url: str | None,
        log_path: Path,
        cache_path: Path,
        attempts: int = 3,
        settings: CallSettings | None = None,
    ):
        self.model, self.attempts, self.log_path, self.cache_path = model, attempts, log_path, cache_path
        self._log: Any = None  # the call log, opened at its first line
        try:
            self.chat = ChatModel(
                model,
                base_url,
                settings=settings or CallSettings(timeout=300.0),
                cache=call_cache(cache_path),
                who="extraction model",
            )
        except ModelCallError as exc:
            raise ExtractError(f"extract: {exc}") from None
        self.calls = self.cached = 0
        self.tokens = {"input": 0, "output": 0, "unreported": 0}  # unreported: calls whose usage is unknown

    def older_log(self) -> bool:
        """Whether the log was written by a version that kept its answers there, parsed (they
        are not reused: the cache holds raw answers, and a parsed one is not what the model said)."""
        try:  # a regular file of at most the limit (no pipe is waited on), read once
            head = read_file(self.log_path, _LOG_READ_LIMIT, what="call log")
            first = json.loads(head.split(b"\n", 1)[0] or b"{}")
        except (InputRefused, ValueError):  # none, too large, not a file, or not JSON: not an older log
            return False
        return isinstance(first, dict) and "key" in first and "answer" not in first

    def _record(self, purpose: str, res, problems: list[str]) -> None:
        """Count an answer; one the cache did not serve is a call: its tokens, and a line in the log."""
        if res.cache_hit:
            self.cached += 1
            return
        self.calls += 1
        if res.usage.get("input") is None and res.usage.get("output") is None:
            self.tokens["unreported"] += 1  # unknown is not zero
        self.tokens["input"] += (res.usage.get("input") or 0) + (res.usage.get("cached_input") or 0)
        self.tokens["output"] += res.usage.get("output") or 0
        record = {
            "purpose": purpose,
            "usage": res.usage,
            "latency_ms": round(res.latency_ms, 1),
            "finish_reason": res.finish_reason,
            "answer": res.text,
            "problems": problems,
        }
        if self._log is None:  # opened once, refusing a link: later lines go where the first did
            self._log = append_opened(self.log_path)
        self._log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._log.flush()

    def ask(
        self,
        purpose: str,
        system: str,
        user: str,
        check: Callable[[dict], list[str]] | None = None,
        extra: list[dict] | None = None,
        schema: dict | None = None,
    ) -> dict:
        convo = [{"role": "system", "content": system}, {"role": "user", "content": user}, *(extra or [])]
        fmt = json_schema_format(purpose.split()[0].replace("-", "_"), schema) if schema else {"type": "json_object"}
        problems: list[str] = []
        for _ in range(self.attempts):
            try:
                res = self.chat.chat(convo, fmt)
            except ModelCallError as exc:
                if exc.kind in ("malformed", "wrong_shape", "empty"):
                    problems = [str(exc)]
                    continue
                raise ExtractError(f"{purpose}: {exc}") from exc
            try:
                obj = _parse_json_object(res.text)
                problems = check(obj) if check else []
            except ValueError as exc:
                obj, problems = None, [f"not a JSON object ({exc})"]
            self._record(purpose, res, problems)
            if not problems and obj is not None:
                return obj
            convo = [
                *convo,
                {"role": "assistant", "content": res.text},
                {
                    "role": "user",
                    "content": "Your reply has these problems:\n- "
                    + "\n- ".join(problems)
                    + "\nReply again with the corrected JSON object only.",
                },
            ]
        raise ExtractError(
            f"{purpose}: no usable answer from {self.model} after {self.attempts} attempts: "
            + "; ".join(problems[:5])
            + f" (the answers are in {self.log_path}; {self.cache_path} serves them again on a re-run: "
            "raise --attempts to ask on from the last one, or remove that file to ask anew)"
        )


# ---------------------------------------------------------------- the pipeline


@dataclasses.dataclass
class Flag:
    stage: str  # "form" | "stage 1" | "stage 2" | "hints"
    check: str  # provenance | placeholders | structure | leakage | purity | fakes | dependencies | monotonicity
    item: str
    issue: str
    suggestion: str = ""


@dataclasses.dataclass
class Extraction:
    tree_path: Path
    review_path: Path
    doc: dict
    flags: list[Flag]
    hint_cosines: dict[str, list[float]]
    calls: int
    cached: int
    tokens: dict


def tokens_note(tokens: dict, calls: int) -> str:
    """The tokens a run spent, as far as the endpoint said: a call that reported no usage (a
    llama.cpp stream) is not counted as zero."""
    unreported = tokens.get("unreported", 0)
    if not calls:
        return "no tokens spent"
    if unreported == calls:
        return "tokens unknown (the endpoint reported no usage)"
    note = f"tokens in {tokens['input']}, out {tokens['output']}"
    return note + (f" ({unreported} of {calls} calls reported no usage and are not counted)" if unreported else "")


def slugify(title: str) -> str:
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words[:6]) or "paper"


def _skeleton_to_doc(sk: dict, tree_id: str, provenance: dict, hints: dict[str, list[str]] | None = None) -> dict:
    """The tree document for a skeleton; targets without hints get placeholders (structure checks only)."""

    def hints_of(key: str) -> list[str]:
        return (hints or {}).get(key) or [f"(hint {i} of {key} not written yet)" for i in range(1, 5)]

    paper = sk.get("paper") or {}
    subtopics = []
    for k, s in enumerate(sk.get("subtopics") or [], start=1):
        sid = f"s{k}"
        subtopics.append(
            {
                "id": sid,
                "text": s.get("text"),
                "depends_on_results": list(s.get("depends_on_results") or []),
                "hints": hints_of(sid),
                "studies": [
                    {
                        "id": f"{sid}.study",
                        "text": s.get("study"),
                        "hints": hints_of(f"{sid}.study"),
                        "result": {"id": f"r{k}", "text": s.get("result"), "fakes": list(s.get("fakes") or [])},
                    }
                ],
            }
        )
    published = paper.get("published")
    if not (isinstance(published, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", published)):
        published = None
    return {
        "schema": "inquitree/research-tree@1",
        "id": tree_id,
        "paper": {
            "title": paper.get("title") or "(untitled)",
            "journal": paper.get("journal"),
            "doi": paper.get("doi"),
            "published": published,
            "open_access": None,
            "it18_id": None,
            "paper_subtopics": None,
        },
        "provenance": provenance,
        "topic": {"text": sk.get("topic")},
        "subtopics": subtopics,
        "conclusions": [
            {
                "id": c.get("id") or f"c{j}",
                "text": c.get("text"),
                "requires_results": list(c.get("requires_results") or []),
            }
            for j, c in enumerate(sk.get("conclusions") or [], start=1)
        ],
    }


def _tree_problems(doc: dict) -> list[str]:
    try:
        parse_tree(doc, "the extracted tree")
    except TreeError as exc:
        return exc.problems
    return []


def _skeleton_problems(obj: dict, tree_id: str, provenance: dict) -> list[str]:
    if (
        not isinstance(obj.get("subtopics"), list)
        or not all(isinstance(s, dict) for s in obj["subtopics"])
        or not isinstance(obj.get("conclusions", []), list)
        or not all(isinstance(c, dict) for c in obj.get("conclusions", []))
        or not isinstance(obj.get("paper", {}), dict)
    ):
        return [
            "the JSON does not have the requested form: subtopics and conclusions must be lists of objects "
            "and paper an object"
        ]
    return _tree_problems(_skeleton_to_doc(obj, tree_id, provenance))


def _flags_check(known: set[str]) -> Callable[[dict], list[str]]:
    def check(obj: dict) -> list[str]:
        flags = obj.get("flags")
        if not isinstance(flags, list):
            return ['"flags" must be a list']
        bad = []
        for i, f in enumerate(flags):
            if not isinstance(f, dict) or not isinstance(f.get("issue"), str):
                bad.append(f"flags[{i}] must be an object with an issue")
            elif f.get("item") not in known:
                bad.append(f"flags[{i}].item {f.get('item')!r} is not one of the ids given")
        return bad

    return check


PLACEHOLDERS = {"", "none", "null", "n/a", "na", "-", "tbd", "todo", "...", "unknown"}


def _form_flags(doc: dict) -> list[Flag]:
    """What a small model does that the schema lets through, found without a model: fakes that are
    placeholders, that repeat the true result or each other, and a tree with no dependency at all
    (a list of sections, not a chain of reasoning)."""
    flags: list[Flag] = []
    for s in doc["subtopics"]:
        result = s["studies"][0]["result"]
        true = " ".join(result["text"].split()).casefold()
        seen: set[str] = set()
        issues = []
        for j, fake in enumerate(result["fakes"], 1):
            norm = " ".join(fake.split()).casefold()
            if norm.strip(" .") in PLACEHOLDERS:
                issues.append(f"fake {j} is a placeholder ({fake!r})")
            elif norm == true:
                issues.append(f"fake {j} repeats the true result")
            elif norm in seen:
                issues.append(f"fake {j} repeats an earlier fake")
            seen.add(norm)
        if issues:
            flags.append(
                Flag(
                    "form",
                    "placeholders",
                    result["id"],
                    "; ".join(issues),
                    "write plausible results the study did not find",
                )
            )
    if len(doc["subtopics"]) > 1 and not any(s["depends_on_results"] for s in doc["subtopics"]):
        flags.append(
            Flag(
                "form",
                "structure",
                "topic",
                "no subtopic depends on another's result: the tree is a list, not the paper's chain of reasoning",
                "name, for each subtopic, the earlier results it builds on",
            )
        )
    return flags


def _written_dates(iso: str) -> list[str]:
    """The ways a paper may print an ISO date: 2025-10-01, 1 October 2025, October 1, 2025."""
    try:
        d = _dt.date.fromisoformat(iso)
    except ValueError:  # shaped like a date, not one (2025-02-30)
        return []
    month = d.strftime("%B")
    return [iso, f"{d.day} {month} {d.year}", f"{month} {d.day}, {d.year}"]


def _unsupported_paper_facts(doc: dict, text: str) -> list[Flag]:
    """A publication date, DOI or journal that the paper's text does not contain is the model's guess: it is
    left out of the tree (a pre/post-cutoff split must not rest on it) and flagged for a person to
    look up."""
    paper, flags, flat = doc["paper"], [], " ".join(text.split()).casefold()
    published = paper.get("published")
    if published and not any(w.casefold() in flat for w in _written_dates(published)):
        paper["published"] = None
        flags.append(
            Flag(
                "form",
                "provenance",
                "paper",
                f"the model gave the publication date {published}, which the paper's text does not contain: left empty",
                "look the date up (the journal's page, arXiv, the DOI) and set paper.published",
            )
        )
    for field, what in (("doi", "DOI"), ("journal", "journal")):
        value = paper.get(field)
        if value and " ".join(str(value).split()).casefold() not in flat:
            paper[field] = None
            flags.append(
                Flag(
                    "form",
                    "provenance",
                    "paper",
                    f"the model gave the {what} {value!r}, which the paper's text does not contain: left empty",
                    f"look the {what} up and set paper.{field}",
                )
            )
    return flags


def _hints_check(obj: dict) -> list[str]:
    h = obj.get("hints")
    if not (isinstance(h, list) and len(h) == 4 and all(isinstance(x, str) and x.strip() for x in h)):
        return ['"hints" must be a list of exactly four non-empty strings']
    return []


def extract_tree(
    paper_path: Path,
    model: str,
    out_dir: Path,
    embedder,
    base_url: str | None = None,
    tree_id: str | None = None,
    hint_rounds: int = 2,
    attempts: int = 3,
    progress: Callable[[str], None] = lambda s: None,
    settings: CallSettings | None = None,
    cache_path: Path | None = None,
) -> Extraction:
    """Run the pipeline on ``paper_path`` and write ``<id>.json`` and ``<id>.review.md`` to
    ``out_dir``, beside the call log ``<id>.calls.jsonl`` and, unless ``cache_path`` names another
    file, the call cache ``<id>.cache.sqlite``."""
    paper_path = Path(paper_path)
    text = _paper_text(paper_path)
    digest = hashlib.sha256(text.encode()).hexdigest()
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = tree_id or f"extracted-{paper_path.stem}"
    confined(out_dir, stem, ".json")  # every file below is named after the tree: none may leave --out
    chat = JsonChat(
        model,
        base_url,
        confined(out_dir, stem, ".calls.jsonl"),
        cache_path or confined(out_dir, stem, ".cache.sqlite"),
        attempts=attempts,
        settings=settings,
    )
    older = confined(out_dir, stem, ".calls.older.jsonl")
    if chat.older_log() and not older.exists():  # kept, beside a log of the new form
        chat.log_path.rename(older)
        progress(
            f"extraction: {chat.log_path.name} held answers an older version kept, parsed; they are not reused "
            f"(what is not in the call cache is asked again) and are now in {older.name}"
        )
    provenance = {
        "kind": "extracted-by-model",
        "note": (
            f"Extracted by the model {model} from the paper text {paper_path.name} (sha256 {digest[:16]}) with "
            f"InquiTree's extraction prompts {PROMPT_VERSION} on {_dt.date.today().isoformat()}. Not reviewed "
            f"by a person until the flags in {stem}.review.md are resolved."
        ),
        "sources": [f"file:{paper_path.name}#sha256={digest}"],
    }

    progress(f"extraction: asking {model} for the tree skeleton")
    sk = chat.ask(
        "extraction",
        EXTRACT_SYSTEM,
        EXTRACT_USER.format(paper=text),
        check=lambda obj: _skeleton_problems(obj, stem, provenance),
        schema=SKELETON_SCHEMA,
    )
    n = len(sk["subtopics"])
    topic = sk["topic"]

    targets = [(f"s{k}", "subtopic", s["text"]) for k, s in enumerate(sk["subtopics"], 1)]
    targets += [(f"s{k}.study", "study", s["study"]) for k, s in enumerate(sk["subtopics"], 1)]
    hints, cosines, flags = _hints(chat, embedder, topic, targets, hint_rounds, progress)
    doc = _skeleton_to_doc(sk, stem, provenance, hints)
    problems = _tree_problems(doc)
    if problems:  # the skeleton passed, so only hints could break it: not expected, but never write a bad tree
        raise ExtractError("the assembled tree is invalid: " + "; ".join(problems))

    flags += _unsupported_paper_facts(doc, text) + _form_flags(doc)
    flags += _model_checks(chat, doc, progress)

    # Each under a new, unguessable name, then renamed over its target: never through a link there.
    tree_path = write_file(confined(out_dir, stem, ".json"), json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    review_path = write_file(
        confined(out_dir, stem, ".review.md"), render_review(doc, flags, cosines, model, embedder.id, chat)
    )
    progress(f"wrote {tree_path} ({n} subtopics) and {review_path} ({len(flags)} flags)")
    return Extraction(tree_path, review_path, doc, flags, cosines, chat.calls, chat.cached, dict(chat.tokens))


def _paper_text(paper_path: Path) -> str:
    """The paper's text, read as UTF-8; a missing, unreadable or empty file is one line naming it."""
    try:
        text = paper_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExtractError(f"{paper_path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExtractError(f"{paper_path}: cannot read it as UTF-8 text: {exc}") from None
    if not text.strip():
        raise ExtractError(f"{paper_path}: the file is empty")
    return text


def _hints(
    chat: JsonChat,
    embedder,
    topic: str,
    targets: list[tuple[str, str, str]],
    hint_rounds: int,
    progress: Callable[[str], None],
) -> tuple[dict[str, list[str]], dict[str, list[float]], list[Flag]]:
    """Four hints for each target (a subtopic or a study), asked again up to ``hint_rounds`` times
    while their cosines to the target under ``embedder`` are not monotone; a target whose hints
    stay out of order is flagged for the reviewer."""
    hints: dict[str, list[str]] = {}
    cosines: dict[str, list[float]] = {}
    flags: list[Flag] = []
    for i, (key, kind, target) in enumerate(targets, 1):
        progress(f"hints: {i}/{len(targets)} ({key})")
        user = HINTS_USER.format(topic=topic, kind=kind, target=target)
        extra: list[dict] = []
        given: list[list[str]] = []
        for _round in range(hint_rounds + 1):
            h = chat.ask(f"hints for {key}", HINTS_SYSTEM, user, check=_hints_check, extra=extra, schema=HINTS_SCHEMA)[
                "hints"
            ]
            c = [round(x, 4) for x in hint_cosines(embedder, target, h)]
            if is_monotone(c) or h in given:  # the same hints again: asking once more would not change them
                break
            given.append(h)
            extra = [
                *extra,
                {"role": "assistant", "content": json.dumps({"hints": h}, ensure_ascii=False)},
                {"role": "user", "content": HINTS_RETRY.format(c=c)},
            ]
        hints[key], cosines[key] = h, c
        if not is_monotone(c):
            flags.append(
                Flag(
                    "hints",
                    "monotonicity",
                    key,
                    f"hints are not monotone under {embedder.id} after "
                    + (
                        f"{len(given)} regeneration(s) (the model then gave the same hints again): "
                        if len(given) <= hint_rounds
                        else f"{hint_rounds} regenerations: "
                    )
                    + ", ".join(f"h{j}={x:.3f}" for j, x in enumerate(c, 1)),
                    "rewrite the hints so that each is closer to the target than the one before",
                )
            )

    return hints, cosines, flags


def _model_checks(chat: JsonChat, doc: dict, progress: Callable[[str], None]) -> list[Flag]:
    """The model's checks of the assembled tree (Appendix D): stage 1 leakage, purity and fakes,
    stage 2 the dependency audit; each returns flags for a person to act on."""
    flags: list[Flag] = []
    ids = {"topic"} | {s["id"] for s in doc["subtopics"]} | {f"{s['id']}.study" for s in doc["subtopics"]}
    results = {s["studies"][0]["result"]["id"] for s in doc["subtopics"]}
    conclusions = "\n".join(f"- {c['id']}: {c['text']}" for c in doc["conclusions"])
    texts = "\n".join(
        f"- {s['id']}: {s['text']}\n- {s['id']}.study: {s['studies'][0]['text']}" for s in doc["subtopics"]
    )
    fakes = "\n".join(
        f"- {s['studies'][0]['result']['id']}: true: {s['studies'][0]['result']['text']}\n"
        + "".join(f"  fake: {f}\n" for f in s["studies"][0]["result"]["fakes"])
        for s in doc["subtopics"]
    )
    structure = "\n".join(
        f"- {s['id']}: {s['text']} (result {s['studies'][0]['result']['id']}: "
        f"{s['studies'][0]['result']['text']}); depends on results: "
        f"{', '.join(s['depends_on_results']) or 'none'}"
        for s in doc["subtopics"]
    )
    checks = [
        (
            "stage 1",
            "leakage",
            LEAKAGE_SYSTEM,
            f"Ids: topic\nTopic: {doc['topic']['text']}\n\nThe paper's "
            f"conclusions (which the Topic must not reveal):\n{conclusions}",
            {"topic"},
        ),
        ("stage 1", "purity", PURITY_SYSTEM, f"Ids and texts:\n{texts}", ids - {"topic"}),
        ("stage 1", "fakes", FAKES_SYSTEM, f"Ids are result ids.\n{fakes}\nTrue conclusions:\n{conclusions}", results),
        (
            "stage 2",
            "dependencies",
            AUDIT_SYSTEM,
            f"Ids are subtopic ids.\nTopic: {doc['topic']['text']}\n{structure}",
            {s["id"] for s in doc["subtopics"]},
        ),
    ]
    for stage, name, system, user, known in checks:
        progress(f"{stage}: {name} check")
        obj = chat.ask(f"{stage} {name} check", system, user, check=_flags_check(known), schema=FLAGS_SCHEMA)
        flags += [Flag(stage, name, f["item"], f["issue"], str(f.get("suggestion") or "")) for f in obj["flags"]]
    return flags


def render_review(
    doc: dict, flags: list[Flag], cosines: dict[str, list[float]], model: str, embedder_id: str, chat: JsonChat
) -> str:
    lines = [
        f"# Review: {doc['id']}",
        "",
        f"Paper: {doc['paper']['title']}",
        f"Extracted by {model} (prompts {PROMPT_VERSION}); "
        f"{chat.calls} model calls this run, {chat.cached} answers reused from the cache; "
        f"{tokens_note(chat.tokens, chat.calls)}.",
        "",
        "Nothing below has been applied to the tree. Decide each flag, edit the tree by hand, then run "
        f"`inquitree trees validate {doc['id']}.json --embedder local`.",
        "",
    ]
    by_check: dict[str, list[Flag]] = {}
    for f in flags:
        by_check.setdefault(f"{f.stage}: {f.check}", []).append(f)
    lines.append(f"## Flags ({len(flags)})")
    order = [
        "form: provenance",
        "form: placeholders",
        "form: structure",
        "stage 1: leakage",
        "stage 1: purity",
        "stage 1: fakes",
        "stage 2: dependencies",
        "hints: monotonicity",
    ]
    for name in order + sorted(set(by_check) - set(order)):  # a check missing from the order is still shown
        group = by_check.get(name, [])
        lines += ["", f"### {name} ({len(group)})"]
        lines += [
            f"- [ ] **{f.item}**: {f.issue}" + (f"  \n  suggestion: {f.suggestion}" if f.suggestion else "")
            for f in group
        ] or ["- none"]
    lines += [
        "",
        f"## Hint cosines under {embedder_id} (Eq. 6 needs h1 < h2 < h3 < h4)",
        "",
        "| target | h1 | h2 | h3 | h4 | monotone |",
        "|---|---|---|---|---|---|",
    ]
    for key, c in cosines.items():
        lines.append(f"| {key} | " + " | ".join(f"{x:.3f}" for x in c) + f" | {'yes' if is_monotone(c) else 'NO'} |")
    return "\n".join(lines) + "\n"
