"""Calls to OpenAI-compatible chat models: the one place every agent, judge, control and extract
call goes through.

What a researcher paying for calls needs, in one class (:class:`ChatModel`), with its settings
and errors (``core/calls/settings.py``), redaction and cache beside it:

- **Request options** (``reasoning_effort=high``, ``top_p``, ``seed``, ...) reach the endpoint
  in the request body as given, over one of two transports with the same outcomes
  (``core/calls/chat_http.py``): a keep-alive connection per thread, or the SDK's ``post`` where that
  does not apply (a proxy, credentials in the URL, ``INQUITREE_CHAT_HTTP=sdk``); never through
  the SDK's typed methods, whose per-argument transform was half of a call's CPU in a campaign
  (bench/campaign.py). What the endpoint rejects is a readable :class:`ModelCallError`.
- **Bounded waiting, sized for a CPU model too.** Answers are asked for as a stream (``stream``,
  on by default over the direct transport). A streamed answer may run as long as its tokens keep
  coming, up to ``call_limit`` seconds; ``timeout`` bounds the silence before the first token and
  between tokens. An answer that is not streamed must arrive whole within ``timeout`` (a deadline
  for the whole attempt, not for each read: a server that answers a byte at a time is cut off).
  A call given up on closes its connection, so a streaming server stops generating the abandoned
  answer instead of making the retry queue behind it; a streamed answer still arriving at
  ``call_limit`` is kept as far as it got, its ``finish_reason`` ``call_limit``. A failed attempt
  is retried at most ``max_retries`` times, after a pause of ``min(30 s, Retry-After or 2**attempt
  s)``, and a retry after a timeout waits twice as long as the attempt before it (an identical
  wait would be doomed the same way). So an endpoint that never answers holds one call at most
  ``timeout * (2**(max_retries + 1) - 1) + max_retries * 30`` seconds
  (:meth:`CallSettings.worst_case_seconds`; 480 s with the defaults), and never past the episode's
  wall-time limit (:func:`call_deadline`). The client library's own retries are off, so nothing
  retries twice.
- **Every attempt accounted**: a reply carries the endpoint's ``finish_reason`` (``length``: cut
  by ``max_tokens``; ``repeat``: the caller stopped a reply that went round in circles) and the
  attempts that failed before it (kind, seconds, tokens seen).
- **Every failure classified** (``kind``: timeout, connection, rate_limit, server_error,
  context_length, bad_request, auth, not_found, malformed, wrong_shape, empty), with a readable
  message and whether a later attempt may succeed. A 200 whose body is HTML, cut short, or
  JSON of the wrong shape is an error of its own kind, never "an empty reply".
- **Structured output** where the endpoint supports it: a JSON schema as ``response_format``,
  falling back to ``json_object`` and then to plain text when the endpoint refuses it.
- **Sizes.** A reply longer than ``max_reply_chars`` is cut there, and the cut is recorded.
- **Secrets.** Credentials in a URL (``user:secret@``, ``?key=...``) and the API key never
  appear in a description, an error message or a cache key (``core/calls/redaction.py``).
- **A call cache** (``core/calls/cache.py``, opt-in): keyed by everything that determines the answer
  (model, endpoint without credentials, every request option, the full message list), so a
  re-run pays nothing for answers already obtained and never serves one model's answer for
  another's request.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from typing import Any, Callable
from urllib.parse import urlsplit

from inquitree.core.calls.cache import CallCache
from inquitree.core.calls.redaction import endpoint_key, redact_text, redact_url, secret_values
from inquitree.core.calls.settings import (
    BACKOFF_CAP_S,
    MAX_REASONING_CHARS,
    CallSettings,
    DeadlineReached,
    ModelCallError,
    current_deadline,
)
from inquitree.core.calls.transport import Transport

_CONTEXT = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|too many tokens|exceeds? the (context|max)"
    r"|prompt is too long|n_ctx",
    re.I,
)


@dataclasses.dataclass
class ChatResult:
    text: str
    model: str
    usage: dict[str, int | None]  # input (not cached), cached_input, cache_write, output
    latency_ms: float
    cache_hit: bool = False
    truncated_from: int | None = None  # the reply's length in characters, when it was cut
    finish_reason: str | None = None  # as the endpoint said it (stop, length, ...), or repeat / call_limit
    failed: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # attempts before this one
    reasoning: str | None = None  # a reasoning model's thinking, sent apart from its answer (never read as one)
    system_as_user: bool = False  # the system text went as the start of the first user message
    # the endpoint's system_fingerprint (OpenAI's fp_..., llama.cpp's build): which backend and
    # weights configuration answered, beside the model name it reports
    fingerprint: str | None = None

    def record(self) -> dict[str, Any]:
        """What the events keep of a call beside its text."""
        return {"usage": dict(self.usage), "latency_ms": self.latency_ms, "cache_hit": self.cache_hit}


CHAT, EMBEDDINGS = "/chat/completions", "/embeddings"


@dataclasses.dataclass
class _Vectors:
    """An embeddings answer's vectors, with what :meth:`ChatModel._send` notes of every call."""

    rows: list[Any]
    latency_ms: float | None = None
    failed: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    system_as_user: bool = False


def openai_endpoint(base_url: str | None, api_key: str | None) -> tuple[str | None, str | None]:
    """(base URL, key) for an OpenAI-compatible endpoint: the arguments, else $OPENAI_BASE_URL and
    $OPENAI_API_KEY; a local server (a base URL without a key) takes any key. The key is None when
    there is neither: the caller says what needs it."""

    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    return base_url, api_key or os.environ.get("OPENAI_API_KEY") or ("unused" if base_url else None)


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class ChatModel:
    """One model behind an OpenAI-compatible endpoint, called with :class:`CallSettings`."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        settings: CallSettings | None = None,
        cache: CallCache | None = None,
        rate_limiter=None,
        temperature: float | None = 0.0,
        who: str = "model",
        sleep: Callable[[float], None] = time.sleep,
        transport: Transport | None = None,
    ):
        """``transport``: what sends each request (``core/calls/transport.py``); by default
        InquiTree's HTTP to ``base_url``, an OpenAI-compatible endpoint (whose key it needs)."""
        self.model, self.who = model, who
        self.settings = settings or CallSettings()
        self.base_url, key = openai_endpoint(base_url, api_key)
        if transport is not None:
            key = key or "-"  # a transport of its own authenticates as it must; nothing to send here
        if not key:
            raise ModelCallError(
                f"the {who} needs $OPENAI_API_KEY (or a base URL for a local server)", "auth", retryable=False
            )
        self._key: str = key
        # what a reply must not carry into the record: the key, and the secrets of options and URL
        self._secrets = (key, *secret_values(self.settings.options, self.base_url))
        if self.base_url is not None:
            try:
                parts = urlsplit(self.base_url)
                ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 1) > 0
            except ValueError:
                ok = False
            if not ok:  # refused at once: tried as a URL it failed as a connection, three times over
                raise ModelCallError(
                    f"the {who}'s base URL {redact_url(self.base_url)!r} is not an http:// or https:// URL with a "
                    "host (e.g. http://127.0.0.1:8011/v1)",
                    "bad_request",
                    retryable=False,
                )
        if transport is None:
            from inquitree.core.calls.chat_http import endpoint  # http.client and ssl: not at start-up

            self._http: Transport = endpoint(self.base_url, key, self.settings.timeout)
        else:
            self._http = transport
        self.transport = _named(self._http)
        self.public_url = redact_url(self.base_url)
        # a transport of a lab's own is another endpoint: its cached answers are its own
        self.endpoint = endpoint_key(self.base_url) + (f" via {self.transport}" if self.transport else "")
        self.cache, self.rate_limiter, self.sleep = cache, rate_limiter, sleep
        self.temperature = temperature
        self._formats_refused: set[str] = set()
        self._streams = True  # False once the endpoint refused a streamed request
        self._usage_in_stream = True  # False once it refused ``stream_options``
        self._refusals_read = False  # the cache file's refusals, read on the first structured call
        # the system text goes in the first user message: asked for, or learned from the endpoint
        # (by this client or another of this process: one refused call per endpoint and model a run)
        self.system_as_user = self.settings.system_role == "user" or (
            self.settings.system_role == "auto" and (self.endpoint, self.model) in _NO_SYSTEM_ROLE_LEARNED
        )

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "base_url": self.public_url,
            **({"transport": self.transport} if self.transport else {}),
            "temperature": self.temperature,
            **self.settings.describe(),
            "call_cache": self.cache is not None,
        }

    def _where(self) -> str:
        return f"{self.who} {self.model} at {self.public_url or 'OpenAI'}"

    def _request(self, messages: list[dict[str, str]], response_format: dict | None) -> dict[str, Any]:
        req: dict[str, Any] = {"messages": system_in_user(messages) if self.system_as_user else messages}
        if self.temperature is not None:
            req["temperature"] = self.temperature
        if self.settings.max_tokens is not None:
            req["max_tokens"] = self.settings.max_tokens
        if response_format is not None:
            req["response_format"] = response_format
        req.update(self.settings.options)  # an option given explicitly wins over the defaults above
        return req

    def chat(
        self,
        messages: list[dict[str, str]],
        response_format: dict | None = None,
        stop: Callable[[str], bool] | None = None,
    ) -> ChatResult:
        """One reply. Structured output is asked for in the most precise form the endpoint takes:
        a JSON schema (OpenAI's ``json_schema``), then the schema in ``json_object`` form (llama.cpp's
        server constrains its output with it), then plain ``json_object``, then none. A form the
        endpoint refuses is remembered, so later calls start with the next; with a call cache it is
        remembered in the cache file too, and an answer cached under any form is served before
        anything is sent, so a cached re-run makes no call at all, even with the endpoint down.

        ``stop`` is asked, each time a streamed reply completes a line, whether the reply so far
        is enough (a conclusion list going round in circles): the stream is then closed and the
        reply kept as it stands, its ``finish_reason`` ``repeat``."""
        formats: list[tuple[str, dict | None]] = []
        if response_format and response_format.get("type") == "json_schema":
            schema = response_format["json_schema"]["schema"]
            formats += [
                ("json_schema", response_format),
                ("json_object+schema", {"type": "json_object", "schema": schema}),
            ]
        if response_format:
            formats.append(("json_object", {"type": "json_object"}))
        formats.append(("none", None))
        if self.cache is not None and len(formats) > 1 and not self._refusals_read:
            self._formats_refused |= self.cache.refused_formats(self.model, self.endpoint)
            self._refusals_read = True  # once: this model's own refusals are added as they come
        formats = [f for f in formats if f[0] not in self._formats_refused]
        requests = [(name, self._request(messages, fmt)) for name, fmt in formats]
        if self.cache is not None:
            for _name, req in requests:
                hit = self._from_cache(self.cache.get(CallCache.key(self.model, self.endpoint, req)))
                if hit is not None:
                    return self._redacted(hit)
        for i, (name, req) in enumerate(requests):
            try:
                result = self._redacted(self._send(req, stop))
            except ModelCallError as exc:
                if not (exc.kind == "format_refused" and i + 1 < len(requests)):
                    raise
                self._formats_refused.add(name)
                if self.cache is not None:
                    self.cache.note_refused(self.model, self.endpoint, name)
                continue
            if self.cache is not None:
                self.cache.put(
                    CallCache.key(self.model, self.endpoint, req),
                    self.model,
                    self.endpoint,
                    {
                        "text": result.text,
                        "model": result.model,
                        "usage": result.usage,
                        "truncated_from": result.truncated_from,
                        "finish_reason": result.finish_reason,
                        "latency_ms": result.latency_ms,
                        "reasoning": result.reasoning,
                        "system_as_user": result.system_as_user,
                        "system_fingerprint": result.fingerprint,
                    },
                )
            return result
        raise AssertionError("unreachable")

    def _from_cache(self, hit: dict[str, Any] | None) -> ChatResult | None:
        """A cached answer as a fresh one would be recorded: the cache may be another lab's file,
        so its text is cut to ``max_reply_chars``, its reasoning to the kept size, every token
        count read as :func:`token_count` reads one, and a field of the wrong type left out; an
        answer without text is no answer (the call is made)."""
        if hit is None or not isinstance(hit.get("text"), str):
            return None
        cut = hit.get("truncated_from")
        text, truncated_from = (
            hit["text"],
            cut if isinstance(cut, int) and not isinstance(cut, bool) and cut > 0 else None,
        )
        if len(text) > self.settings.max_reply_chars:
            truncated_from, text = len(text), text[: self.settings.max_reply_chars]
        usage: dict[str, Any] = hit["usage"] if isinstance(hit.get("usage"), dict) else {}
        reasoning = hit.get("reasoning")
        return ChatResult(
            text,
            hit["model"] if isinstance(hit.get("model"), str) else self.model,
            {k: token_count(v) for k, v in usage.items() if isinstance(k, str)},
            0.0,
            cache_hit=True,
            truncated_from=truncated_from,
            finish_reason=hit["finish_reason"] if isinstance(hit.get("finish_reason"), str) else None,
            reasoning=kept_reasoning(reasoning) if isinstance(reasoning, str) else None,
            system_as_user=hit.get("system_as_user") is True,
            fingerprint=fingerprint_of(hit),
        )

    def _redacted(self, result: ChatResult) -> ChatResult:
        """``result`` with every known secret replaced by ``***`` in every string the answer carries
        into a record: its text, reasoning, the model name and the finish reason it reports (a key an
        endpoint echoed in ``model`` was stored, cached, exported and logged)."""
        result.text = redact_text(result.text, self._secrets)
        if result.reasoning:
            result.reasoning = redact_text(result.reasoning, self._secrets)
        if isinstance(result.model, str):
            result.model = redact_text(result.model, self._secrets)
        if isinstance(result.finish_reason, str):
            result.finish_reason = redact_text(result.finish_reason, self._secrets)
        if isinstance(result.fingerprint, str):
            result.fingerprint = redact_text(result.fingerprint, self._secrets)
        return result

    def embeddings(self, texts: list[str]) -> list[Any]:
        """``POST /embeddings`` for ``texts`` through the same client as a chat call: the whole
        attempt by its deadline, the answer's bytes bounded, the retries and the one error line of
        :meth:`_send`. Returns the answer's vectors in the order of ``texts`` (unchecked numbers:
        the caller checks their shape and values)."""
        found = self._send({"input": list(texts)}, route=EMBEDDINGS, parse=self._parse_embeddings)
        assert isinstance(found, _Vectors)
        if len(found.rows) != len(texts):
            raise self._error(f"asked for {len(texts)} embeddings, got {len(found.rows)}", "malformed", True, 200)
        return found.rows

    def _parse_embeddings(self, doc: Any) -> "_Vectors":
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list) or not all(
            isinstance(d, dict) and isinstance(d.get("embedding"), list) for d in data
        ):
            raise self._error("HTTP 200 without data[].embedding: not an embeddings answer", "malformed", True, 200)
        ordered = sorted(data, key=lambda d: d["index"] if isinstance(d.get("index"), int) else 0)
        return _Vectors([d["embedding"] for d in ordered])

    def _send(
        self,
        req: dict[str, Any],
        stop: Callable[[str], bool] | None = None,
        route: str = "/chat/completions",
        parse: Callable[[Any], Any] | None = None,
    ) -> Any:
        """The call with its retries (see the module's docstring for how long each may wait);
        none runs past the deadline of :func:`call_deadline`. The attempts that failed are kept
        in the result (``failed``) and in the error that ends the call (``attempts``). ``route``
        and ``parse``: another endpoint of the API (embeddings), its answer read by ``parse``; the
        repairs of a chat request (system role, temperature, streaming) apply to chat alone."""
        body = {"model": self.model, **req}
        chat = route == CHAT
        last: ModelCallError | None = None
        attempt = 0
        limit = current_deadline()
        failed: list[dict[str, Any]] = []
        silence = self.settings.timeout
        while attempt <= self.settings.max_retries:
            if attempt and last is not None:
                wait = min(
                    BACKOFF_CAP_S, max(0.0, last.retry_after if last.retry_after is not None else 2.0 ** (attempt - 1))
                )
                if limit is not None and time.monotonic() + wait >= limit:
                    self.sleep(max(0.0, limit - time.monotonic()))
                    raise DeadlineReached(f"{self._where()}: the episode's time ran out before the next attempt")
                self.sleep(wait)
            if self.rate_limiter:
                self.rate_limiter.acquire()
            t0 = time.perf_counter()
            now = time.monotonic()
            deadline, streamed_by = now + silence, now + self.settings.call_limit
            if limit is not None:
                if limit <= now:
                    raise DeadlineReached(f"{self._where()}: the episode's time ran out")
                deadline, streamed_by = min(deadline, limit), min(streamed_by, limit)
            try:
                result = self._attempt(body, deadline, silence, stop, streamed_by, limit, route, parse)
                result.latency_ms = (time.perf_counter() - t0) * 1000
                result.failed = failed
                result.system_as_user = self.system_as_user
                return result
            except ModelCallError as exc:
                if exc.kind == "timeout" and limit is not None and time.monotonic() >= limit:
                    raise DeadlineReached(f"{self._where()}: the episode's time ran out during a call") from None
                message = str(exc).lower() if chat else ""
                if (
                    exc.kind == "bad_request"
                    and _NO_SYSTEM_ROLE.search(message)
                    and self.settings.system_role == "auto"
                    and any(m.get("role") == "system" for m in body["messages"])
                ):
                    # a chat template without a system role (Gemma's and others): the system text goes
                    # as the start of the first user message, now and in every later call (recorded)
                    body["messages"] = system_in_user(body["messages"])
                    self.system_as_user = True
                    _NO_SYSTEM_ROLE_LEARNED.add((self.endpoint, self.model))  # the next episodes' clients know it
                    continue
                if exc.kind == "bad_request" and "temperature" in message and "temperature" in body:
                    body.pop("temperature")  # the model does not take it (#24: "where the model accepts it");
                    self.temperature = None  # sent again at once, not counted as a retry
                    continue
                if exc.kind == "bad_request" and "stream" in message and (self._streams or self._usage_in_stream):
                    # an endpoint that refuses streaming or its usage option: asked again at once without
                    if "stream_options" in message or "include_usage" in message:
                        self._usage_in_stream = False
                    else:
                        self._streams = False
                    continue
                failed.append(
                    {"kind": exc.kind, "seconds": round(time.perf_counter() - t0, 3), "output_chunks": exc.chunks}
                )
                if not exc.retryable:
                    exc.attempts = failed
                    raise
                if exc.kind == "timeout":
                    silence *= 2  # the same wait again would end the same way
                last = exc
                attempt += 1
        assert last is not None
        tries = self.settings.max_retries + 1
        error = ModelCallError(
            f"{last} (gave up after {tries} attempt{'s' if tries > 1 else ''})",
            last.kind,
            retryable=True,
            status=last.status,
        )
        error.attempts = failed
        raise error

    def _error(
        self,
        message: str,
        kind: str,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        chunks: int | None = None,
    ) -> ModelCallError:
        error = ModelCallError(
            redact_text(f"{self._where()}: {message}", (self._key,)), kind, retryable, status, retry_after
        )
        error.chunks = chunks
        return error

    def _attempt(
        self,
        body: dict[str, Any],
        deadline: float | None = None,
        silence: float | None = None,
        stop: Callable[[str], bool] | None = None,
        streamed_by: float | None = None,
        limit: float | None = None,
        route: str = "/chat/completions",
        parse: Callable[[Any], Any] | None = None,
    ) -> Any:
        """One attempt: streamed where the transport and the endpoint allow (see the module's
        docstring), else the answer whole by ``deadline``."""
        from inquitree.core.calls.transport import TransportError, TransportTimeout, TransportTooLarge

        wait = silence or self.settings.timeout
        reply: _StreamedReply | None = None
        if route == CHAT and self.settings.stream and self._streams and self._http.streams:
            reply = _StreamedReply(streamed_by, stop, self.settings.max_reply_chars)
            body = {**body, "stream": True}
            if self._usage_in_stream:
                body["stream_options"] = {"include_usage": True}
        try:
            status, headers, text = self._http.post(route, body, deadline, reply, wait)
        except TransportTimeout as exc:
            if reply is None or exc.partial is None:  # not streamed: the old rule, the whole answer in time
                raise self._error(f"no complete answer within {wait:g} s", "timeout", True) from None
            episode_over = limit is not None and time.monotonic() >= limit
            if "cut off" in str(exc) and reply.content and not episode_over:
                reply.finish_reason = "call_limit"  # still arriving after call_limit seconds: kept as far as it got
                return self._streamed(reply)
            what = (
                f"the streamed answer was still arriving after {self.settings.call_limit:g} s (call_limit)"
                if "cut off" in str(exc)
                else f"the streamed answer stopped: no token for {wait:g} s"
            )
            raise self._error(what, "timeout", True, chunks=reply.chunks) from None
        except TransportError as exc:
            raise self._error(f"connection failed ({exc})", "connection", True) from None
        except TransportTooLarge as exc:  # the same request would be answered the same way: not retried
            raise self._error(str(exc), "too_large", False, chunks=reply.chunks if reply else None) from None
        if not 200 <= status < 300:
            raise self._status_error(status, text, headers, "response_format" in body)
        if reply is not None and (reply.events or reply.done):
            return self._streamed(reply)
        if not text.strip():
            raise self._error("HTTP 200 with an empty body", "malformed", True, 200)
        try:
            doc = json.loads(text)
        except ValueError:
            looks_html = text.lstrip()[:1] == "<"
            what = "an HTML page" if looks_html else f"a body that is not JSON ({len(text)} bytes, cut short?)"
            raise self._error(f"HTTP 200 with {what}: {text[:80]!r}", "malformed", True, 200) from None
        return (parse or self._parse)(doc)

    def _streamed(self, reply: _StreamedReply) -> ChatResult:
        """The reply a stream made, or the error it amounts to."""
        chunks = reply.chunks
        if reply.error is not None:
            raise self._error(reply.error, "malformed", True, 200, chunks=chunks)
        if not (reply.done or reply.stopped or reply.finish_reason):
            raise self._error("the stream ended before the answer did", "connection", True, chunks=chunks)
        if reply.finish_reason is None:
            # llama.cpp's Python server ends a streamed answer this way when another request
            # arrives (its --interrupt_requests, on by default)
            raise self._error(
                "the endpoint ended the stream without a finish reason (interrupted by another request? "
                "llama.cpp's server: start it with --interrupt_requests False)",
                "server_error",
                True,
                200,
                chunks=chunks,
            )
        content = reply.content
        reasoning = kept_reasoning("".join(reply.reasoning_parts), reply.reasoning_size)
        if not content.strip():
            raise self._empty(reply.finish_reason, reasoning)
        truncated_from = None
        if len(content) > self.settings.max_reply_chars:
            truncated_from, content = len(content), content[: self.settings.max_reply_chars]
        usage = (
            _usage(reply.usage)
            if reply.usage is not None
            else {
                "input": None,
                "cached_input": None,
                "cache_write": None,
                "output": None,
                "output_chunks": chunks,  # the endpoint reported no usage for the stream: its chunks, counted
            }
        )
        return ChatResult(
            content, reply.model or self.model, usage, 0.0, truncated_from=truncated_from,
            finish_reason=reply.finish_reason, reasoning=reasoning, fingerprint=reply.fingerprint,
        )  # fmt: skip

    def _parse(self, doc: Any) -> ChatResult:
        choices = doc.get("choices") if isinstance(doc, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if (
            not isinstance(doc, dict)
            or not isinstance(message, dict)
            or (content is not None and not isinstance(content, str))
        ):
            shape = json.dumps(doc)[:120] if not isinstance(doc, str) else doc[:120]
            raise self._error(
                f"the reply is JSON of the wrong shape (no choices[0].message.content): {shape}",
                "wrong_shape",
                True,
                200,
            )
        thinking = message.get("reasoning_content") or message.get("reasoning")
        reasoning = kept_reasoning(thinking) if isinstance(thinking, str) else None
        if not content or not content.strip():
            finish = first.get("finish_reason") if isinstance(first, dict) else None
            raise self._empty(finish, reasoning)
        truncated_from = None
        if len(content) > self.settings.max_reply_chars:
            truncated_from, content = len(content), content[: self.settings.max_reply_chars]
        usage = _usage(doc["usage"] if isinstance(doc.get("usage"), dict) else {})
        model = doc["model"] if isinstance(doc.get("model"), str) and doc["model"] else self.model
        finish = first.get("finish_reason") if isinstance(first, dict) else None
        return ChatResult(
            content, model, usage, 0.0, truncated_from=truncated_from,
            finish_reason=finish if isinstance(finish, str) else None, reasoning=reasoning,
            fingerprint=fingerprint_of(doc),
        )  # fmt: skip

    def _empty(self, finish: str | None, reasoning: str | None) -> ModelCallError:
        """The error of a reply with no answer: a reasoning model that spent its whole budget on
        thinking is told apart (asking again with the same budget would end the same way)."""
        if reasoning and finish == "length":
            budget = self.settings.max_tokens
            return self._error(
                f"the reply has no answer: the model spent its whole budget ({budget} tokens) on reasoning "
                f"({len(reasoning):,} characters of it) and was cut there; give it room with --max-tokens "
                "(reasoning models need thousands of tokens: see docs/real-models.md)",
                "reasoning_budget",
                False,
                200,
            )
        about = f", after {len(reasoning):,} characters of reasoning" if reasoning else ""
        return self._error(
            f"the endpoint returned an empty reply (finish_reason {finish!r}{about})", "empty", True, 200
        )

    def _status_error(self, status: int, text: str, headers, response_format: bool = False) -> ModelCallError:
        message = _error_message(text)
        retry_after = _retry_after(headers)
        if response_format and status in (400, 422, 500) and re.search(r"response_format|json_schema", message):
            # llama.cpp's Python server answers an unknown format with a 500 validation error
            return self._error(
                f"HTTP {status}, the endpoint refused the output format: {message}", "format_refused", False, status
            )
        if status == 429:
            return self._error(f"HTTP 429 rate limited: {message}", "rate_limit", True, status, retry_after)
        named = [k for k in self.settings.options if re.search(rf"\b{re.escape(k)}\b", message)]
        if named and (status >= 500 or 400 <= status < 500) and not _CONTEXT.search(message):
            # An option the endpoint does not take: some servers answer it with a 500 (llama.cpp's
            # validation error), which a retry cannot change
            return self._error(
                f"HTTP {status}, the endpoint rejected the request option {', '.join(named)}: {message}",
                "bad_request",
                False,
                status,
            )
        if status >= 500 or status in (408, 409):
            if _CONTEXT.search(message):
                return self._error(
                    f"HTTP {status}, the request exceeds the model's context: {message}",
                    "context_length",
                    False,
                    status,
                )
            return self._error(f"HTTP {status}: {message}", "server_error", True, status, retry_after)
        if _CONTEXT.search(message):
            return self._error(
                f"HTTP {status}, the request exceeds the model's context: {message} "
                "(set --window to keep fewer turns, or --max-tokens)",
                "context_length",
                False,
                status,
            )
        if status in (401, 403):
            return self._error(f"HTTP {status}, not authorized: {message}", "auth", False, status)
        if status == 404:
            return self._error(f"HTTP 404 (no such model or route): {message}", "not_found", False, status)
        return self._error(f"HTTP {status}, the endpoint rejected the request: {message}", "bad_request", False, status)


# What an endpoint says when its chat template has no system role (Gemma's Jinja template raises
# "System role not supported"; others insist that roles alternate user/assistant).
_NO_SYSTEM_ROLE = re.compile(r"system role|system message|system prompt|roles must alternate", re.IGNORECASE)
# The (endpoint, model) pairs that refused a system message in this process: a campaign's later
# episodes send the system text in the first user message at once (set.add is atomic in CPython).
_NO_SYSTEM_ROLE_LEARNED: set[tuple[str, str]] = set()


def _named(transport: Any) -> str | None:
    """A transport of a lab's own, as the record names it (``module.Class``); None for InquiTree's."""
    kind = type(transport)
    if kind.__module__ == "inquitree.core.calls.chat_http":
        return None
    return f"{kind.__module__}.{kind.__qualname__}"


def system_in_user(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The messages with the system text as the start of the first user message, for a chat
    template that has no system role."""
    system = [m["content"] for m in messages if m.get("role") == "system"]
    if not system:
        return messages
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    text = "\n\n".join(system)
    for m in rest:
        if m.get("role") == "user":
            m["content"] = f"{text}\n\n{m['content']}"
            break
    else:
        rest.insert(0, {"role": "user", "content": text})
    return rest


# More tokens than any call is billed for: a count above it, or below 0, is not a count (an endpoint
# or a cache that answers -1,000,000,000 would otherwise turn the token and cost limits off).
MAX_TOKENS_A_CALL = 100_000_000


def token_count(value: Any) -> int | None:
    """``value`` as a call's token count, or None (unreported) when it is not a whole number from 0
    to ``MAX_TOKENS_A_CALL``: never subtracted from a total, never a limit switched off."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS_A_CALL:
        return None
    return value


def _usage(u: dict[str, Any]) -> dict[str, int | None]:
    """An endpoint's ``usage`` object as the events keep it (input less its cached part); a count
    that cannot be one is unreported (:func:`token_count`)."""
    details: dict[str, Any] = u["prompt_tokens_details"] if isinstance(u.get("prompt_tokens_details"), dict) else {}
    prompt = token_count(u.get("prompt_tokens"))
    cached = token_count(details.get("cached_tokens"))
    if cached is not None and prompt is not None and cached > prompt:
        cached = None  # more cached than asked: one of the two is wrong, and the input is what is billed
    output = token_count(u.get("completion_tokens"))
    usage: dict[str, int | None] = {
        "input": None if prompt is None else prompt - (cached or 0),
        "cached_input": cached,
        "cache_write": None,
        "output": output,
    }
    thought = u["completion_tokens_details"] if isinstance(u.get("completion_tokens_details"), dict) else {}
    if token_count(thought.get("reasoning_tokens")):
        usage["reasoning"] = thought["reasoning_tokens"]  # part of ``output``, as the endpoint counts them
    return usage


def kept_reasoning(text: str | None, received: int | None = None) -> str | None:
    """A reply's reasoning as it is recorded: at most ``MAX_REASONING_CHARS`` characters, and when
    more came (``received``, for a stream whose rest was never kept), a last line that says so."""
    if not text:
        return None
    total = max(received or 0, len(text))
    if total <= MAX_REASONING_CHARS:
        return text
    return (
        text[:MAX_REASONING_CHARS]
        + f"\n[reasoning cut here: {total:,} characters came, the first {MAX_REASONING_CHARS:,} kept]"
    )


class _StreamedReply:
    """A streamed chat completion as its events arrive (a :class:`~inquitree.core.calls.chat_http.Stream`
    for the transport to feed): the content so far, the finish reason, usage and model when the endpoint
    sends them. It asks to stop when ``stop`` says the reply is enough, when the reply is longer
    than it could be kept, or at an event that is not a chunk."""

    def __init__(self, deadline: float | None, stop: Callable[[str], bool] | None, max_chars: int):
        self.deadline, self.stop, self.max_chars = deadline, stop, max_chars
        self.events: list[str] = []
        self.done = self.stopped = False
        self.parts: list[str] = []
        self.reasoning_parts: list[str] = []  # a reasoning model's thinking, streamed before its answer
        self.size = self.chunks = 0
        self.reasoning_size = 0  # characters of thinking received (kept: MAX_REASONING_CHARS at most)
        self.spoke = False  # the last event carried a token
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.model: str | None = None
        self.fingerprint: str | None = None
        self.error: str | None = None

    @property
    def content(self) -> str:
        return "".join(self.parts)

    def text(self) -> str:
        return "\n".join(self.events)

    def feed(self, data: str) -> bool:
        self.spoke = False
        self.events.append(data)
        try:
            doc = json.loads(data)
        except ValueError:
            self.error = f"a streamed event that is not JSON: {data[:80]!r}"
            return True
        if not isinstance(doc, dict) or "error" in doc:
            self.error = f"the stream carried an error: {_error_message(data)}"
            return True
        if isinstance(doc.get("model"), str) and doc["model"]:
            self.model = doc["model"]
        self.fingerprint = fingerprint_of(doc) or self.fingerprint
        if isinstance(doc.get("usage"), dict):
            self.usage = doc["usage"]
        choices = doc.get("choices")
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        if isinstance(first.get("finish_reason"), str):
            self.finish_reason = first["finish_reason"]
        delta = first.get("delta")
        if isinstance(delta, dict):
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thinking, str) and thinking:
                if self.reasoning_size < MAX_REASONING_CHARS:
                    self.reasoning_parts.append(thinking[: MAX_REASONING_CHARS - self.reasoning_size])
                self.reasoning_size += len(thinking)
                self.chunks += 1
                self.spoke = True
        piece = delta.get("content") if isinstance(delta, dict) else None
        if not isinstance(piece, str) or not piece:
            return False
        self.parts.append(piece)
        self.size += len(piece)
        self.chunks += 1
        self.spoke = True
        if self.size > self.max_chars:
            self.finish_reason = "max_reply_chars"  # cut here anyway: the rest is not worth generating
            return True
        if self.stop is not None and "\n" in piece and self.stop(self.content):
            self.finish_reason = "repeat"
            return True
        return False


MAX_FINGERPRINT_CHARS = 200  # fp_ plus a dozen characters at OpenAI; a build tag at llama.cpp


def fingerprint_of(doc: dict[str, Any]) -> str | None:
    """An answer's ``system_fingerprint``, when it carries a short one (its first
    MAX_FINGERPRINT_CHARS characters: it comes from the endpoint and is kept in every reply)."""
    value = doc.get("system_fingerprint")
    return value[:MAX_FINGERPRINT_CHARS] if isinstance(value, str) and value else None


def _error_message(text: str) -> str:
    """What an error response says: its JSON ``error.message`` (OpenAI's and llama.cpp's shape),
    else its first 500 characters."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:500]
        if isinstance(err, str):
            return err[:500]
    return text[:500]


def _retry_after(headers) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
