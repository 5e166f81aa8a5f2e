"""Model calls: an OpenAI-compatible chat client with its retries (``models``), its settings,
deadlines and errors (``settings``), redaction (``redaction``), the call cache (``cache``), and
the HTTP transport under it (``chat_http``). Agents, judges, the
control and extraction all call models through here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inquitree import lazy_exports

if TYPE_CHECKING:  # the names as the type checker reads them; at run time each is loaded on first use
    from inquitree.core.calls.cache import call_cache as call_cache
    from inquitree.core.calls.models import ChatModel as ChatModel
    from inquitree.core.calls.models import json_schema_format as json_schema_format
    from inquitree.core.calls.models import openai_endpoint as openai_endpoint
    from inquitree.core.calls.models import token_count as token_count
    from inquitree.core.calls.redaction import configured_secrets as configured_secrets
    from inquitree.core.calls.redaction import option_label as option_label
    from inquitree.core.calls.redaction import parse_options as parse_options
    from inquitree.core.calls.redaction import redact_text as redact_text
    from inquitree.core.calls.redaction import redact_url as redact_url
    from inquitree.core.calls.redaction import secret_values as secret_values
    from inquitree.core.calls.settings import BACKOFF_CAP_S as BACKOFF_CAP_S
    from inquitree.core.calls.settings import DEFAULT_CALL_LIMIT_S as DEFAULT_CALL_LIMIT_S
    from inquitree.core.calls.settings import DEFAULT_MAX_REPLY_CHARS as DEFAULT_MAX_REPLY_CHARS
    from inquitree.core.calls.settings import DEFAULT_MAX_RETRIES as DEFAULT_MAX_RETRIES
    from inquitree.core.calls.settings import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
    from inquitree.core.calls.settings import CallSettings as CallSettings
    from inquitree.core.calls.settings import ModelCallError as ModelCallError
    from inquitree.core.calls.settings import call_deadline as call_deadline

_EXPORTS = {
    "BACKOFF_CAP_S": "settings",
    "CallSettings": "settings",
    "ChatModel": "models",
    "DEFAULT_CALL_LIMIT_S": "settings",
    "DEFAULT_MAX_REPLY_CHARS": "settings",
    "DEFAULT_MAX_RETRIES": "settings",
    "DEFAULT_TIMEOUT_S": "settings",
    "ModelCallError": "settings",
    "call_cache": "cache",
    "call_deadline": "settings",
    "json_schema_format": "models",
    "openai_endpoint": "models",
    "configured_secrets": "redaction",
    "option_label": "redaction",
    "parse_options": "redaction",
    "redact_text": "redaction",
    "redact_url": "redaction",
    "secret_values": "redaction",
    "token_count": "models",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
