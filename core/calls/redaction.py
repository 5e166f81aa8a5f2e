"""Redaction of what a model call carries: credentials in a URL (``user:secret@``, ``?key=...``),
the API key and request options that hold one never reach a description, an error message, a
label or a cache key; request options are parsed from the command line here too."""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from inquitree.boundary.errors import InquiTreeError

# A request option whose name says it carries a credential (``api_key``, ``x-api-key``, ``auth_token``,
# ``Authorization``, ``client_secret``, ``password``, ...): its value reaches the endpoint, and
# nothing else (records, labels, messages) ever holds it.
_SECRET_OPTION = re.compile(r"key|token|secret|passw|auth|credential|cookie|bearer|sig|session|private|cert|pwd", re.I)
# Where credentials travel in other spellings (``X-Custom-Auth``, ``?subscription-key=``, ``?code=``),
# an allow-list: only these headers' and query parameters' values are recorded as given; every other
# value is ``***``. A harmless one left out is only less informative in the record; a credential
# spelled in a way nobody foresaw is never written down.
_HEADER_OPTIONS = ("extra_headers", "headers", "default_headers")
_QUERY_OPTIONS = ("extra_query", "query", "default_query", "params")
_SHOWN_HEADERS = frozenset(
    h.lower()
    for h in (
        "Accept", "Accept-Encoding", "Accept-Language", "Content-Type", "User-Agent", "OpenAI-Beta",
        "anthropic-version", "anthropic-beta", "X-Title", "HTTP-Referer", "Cache-Control",
    )
)  # fmt: skip
_SHOWN_QUERY = frozenset(("api-version", "api_version", "version", "model", "deployment", "format"))
_URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s@]+@", re.I)
_URL_QUERY = re.compile(r"\bhttps?://[^\s?#'\"<>]*\?[^\s#'\"<>]+", re.I)


_KEY_PREFIX = re.compile(r"(sk|pk|rk|key|api|token|xox[abp]|ghp|gho|hf|glpat|akia)[-_]", re.IGNORECASE)
_PLAIN_SEGMENT = re.compile(r"[A-Za-z0-9._~-]{1,64}")


def _secret_segment(segment: str) -> bool:
    """A path segment that may be a credential (some gateways take the key in the path, /v1/sk-.../):
    anything outside a path's plain characters, a known key prefix, or a long token."""
    if not segment:
        return False
    return not _PLAIN_SEGMENT.fullmatch(segment) or bool(_KEY_PREFIX.match(segment)) or _mixes(segment)


def _mixes(segment: str) -> bool:
    """A run of 20+ letters and digits with both in it (a word such as 'deployments' has no digit)."""
    return any(
        len(run) >= 20 and any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
        for run in re.findall(r"[A-Za-z0-9]+", segment)
    )


def configured_secrets() -> tuple[str, ...]:
    """The values of this process's environment variables whose names look like credentials
    (``OPENAI_API_KEY``, ``*_TOKEN``, ...), 8 characters or longer: none may be written down."""
    return tuple(v for k, v in os.environ.items() if _SECRET_OPTION.search(k) and len(v) >= 8)


def redact_url(url: str | None) -> str | None:
    """``url`` as it may be recorded or printed: its origin, its path with every segment that may be
    a credential replaced by ``***`` (a key prefix such as ``sk-``, a long token, anything outside
    the plain characters of a path), the value of every query parameter but the few known to be
    harmless (``api-version``, ...) as ``***``, no user-info (``***@``), no fragment, and any value
    of a configured secret (:func:`configured_secrets`) replaced wherever it stands."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return _URL_USERINFO.sub(r"\1***@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    path = "/".join("***" if _secret_segment(seg) else seg for seg in parts.path.split("/"))
    query = parts.query
    if query:
        pairs = [(k, v if k.lower() in _SHOWN_QUERY else "***") for k, v in parse_qsl(query, keep_blank_values=True)]
        query = urlencode(pairs, safe="*")
    shown = urlunsplit((parts.scheme, netloc, path, query, ""))
    for secret in configured_secrets():
        shown = shown.replace(secret, "***")
    return shown


def redact_text(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """``text`` with credentials in any URL (its user-info and query values), and each of
    ``secrets``, replaced by ``***``."""
    text = _URL_USERINFO.sub(r"\1***@", text)
    text = _URL_QUERY.sub(lambda m: redact_url(m.group(0)) or "", text)
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return text


def endpoint_key(base_url: str | None) -> str:
    """The endpoint as a cache key: scheme, host, port and path, no credentials at all."""
    if not base_url:
        return "openai-default"
    p = urlsplit(base_url)
    host = (p.hostname or "") + (f":{p.port}" if p.port else "")
    path = "/".join("***" if _secret_segment(seg) else seg for seg in p.path.rstrip("/").split("/"))
    return urlunsplit((p.scheme, host, path, "", ""))


# Fields of a request the client sets itself: an option of that name would replace what the engine
# sends (its prompts, the model named, one answer streamed as recorded) while the record says otherwise.
CLIENT_FIELDS = frozenset({"messages", "model", "n", "stream", "stream_options", "input"})


def parse_options(pairs: tuple[str, ...] | list[str], what: str = "--agent-option") -> dict[str, Any]:
    """``["reasoning_effort=high", "top_p=0.9"]`` -> ``{"reasoning_effort": "high", "top_p": 0.9}``.
    A value that reads as JSON (numbers, true/false, null, lists, objects) is taken as JSON."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
            raise InquiTreeError(f"{what} {pair!r}: expected KEY=VALUE, e.g. reasoning_effort=high")
        if key in CLIENT_FIELDS:
            raise InquiTreeError(f"{what} {key}: the client sets {key!r} itself; it cannot be an option")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def redact_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` as they may be recorded or printed: the value of every option (at any depth) whose
    name looks like a credential is ``***``, and so is every header and query parameter
    (``extra_headers``, ``extra_query``, ...) but the few known to be harmless."""

    def clean(value: Any, allowed: frozenset[str] | None = None) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if allowed is not None:
                    out[k] = clean(v) if str(k).lower() in allowed and not isinstance(v, (dict, list)) else "***"
                elif _SECRET_OPTION.search(str(k)):
                    out[k] = "***"
                elif k in _HEADER_OPTIONS:
                    out[k] = clean(v, _SHOWN_HEADERS) if isinstance(v, dict) else "***"
                elif k in _QUERY_OPTIONS:
                    out[k] = clean(v, _SHOWN_QUERY) if isinstance(v, dict) else "***"
                else:
                    out[k] = clean(v)
            return out
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean(dict(options))


def secret_values(options: dict[str, Any], base_url: str | None = None) -> tuple[str, ...]:
    """The texts :func:`redact_options` and :func:`redact_url` hide: every value it shows as ``***``
    (credential-like options, header and query values) and the password and query values of
    ``base_url``. A reply that echoes one is recorded with it redacted (a key echoed in an error
    was redacted, one echoed in a 200 reply was stored and exported as it was)."""
    shown = redact_options(options)
    found: list[str] = []

    def walk(value: Any, mask: Any) -> None:
        if isinstance(value, dict) and isinstance(mask, dict):
            for k, v in value.items():
                walk(v, mask.get(k))
        elif isinstance(value, list) and isinstance(mask, list):
            for v, m in zip(value, mask, strict=False):
                walk(v, m)
        elif mask == "***" and value is not None:
            if isinstance(value, (dict, list)):
                found.extend(str(x) for x in _leaves(value))
            else:
                found.append(str(value))

    walk(options, shown)
    if base_url:
        parts = urlsplit(base_url)
        found += [parts.password or "", *(v for _, v in parse_qsl(parts.query))]
        found += [seg for seg in parts.path.split("/") if _secret_segment(seg)]  # what redact_url hides
    return tuple(dict.fromkeys(v for v in found if len(v) >= 4))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]


def option_label(model: str, options: dict[str, Any]) -> str:
    """A default label for a model run with options: ``gpt-5@reasoning_effort=high`` (credentials
    left out: a label is recorded and printed everywhere)."""
    redacted = redact_options(options)
    options = {k: v for k, v in options.items() if redacted[k] == v}  # an option holding a credential is left out
    if not options:
        return model
    return (
        model + "@" + ",".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in sorted(options.items()))
    )
