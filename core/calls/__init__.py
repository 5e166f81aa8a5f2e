"""Model calls: an OpenAI-compatible chat client with its retries (``models``), its settings,
deadlines and errors (``settings``), redaction (``redaction``), the call cache (``cache``), and
the HTTP transport under it (``chat_http``). Agents, judges, the
control and extraction all call models through here."""

from __future__ import annotations

from inquitree.core.calls.cache import call_cache
from inquitree.core.calls.models import ChatModel, json_schema_format, openai_endpoint, token_count
from inquitree.core.calls.redaction import (
    configured_secrets,
    option_label,
    parse_options,
    redact_text,
    redact_url,
    secret_values,
)
from inquitree.core.calls.settings import (
    BACKOFF_CAP_S,
    DEFAULT_CALL_LIMIT_S,
    DEFAULT_MAX_REPLY_CHARS,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    CallSettings,
    ModelCallError,
    call_deadline,
)
from inquitree.core.calls.transport import Transport, TransportError, TransportTimeout

__all__ = [
    "Transport",
    "TransportError",
    "TransportTimeout",
    "BACKOFF_CAP_S",
    "CallSettings",
    "ChatModel",
    "DEFAULT_CALL_LIMIT_S",
    "DEFAULT_MAX_REPLY_CHARS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "ModelCallError",
    "call_cache",
    "call_deadline",
    "configured_secrets",
    "json_schema_format",
    "openai_endpoint",
    "option_label",
    "parse_options",
    "redact_text",
    "redact_url",
    "secret_values",
    "token_count",
]
