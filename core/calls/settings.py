"""How one role's model calls are made (:class:`CallSettings`: waiting, retries, reply size,
request options, where the system text goes), the deadline an episode's wall-time limit sets on
them (:func:`call_deadline`), and how a call fails (:class:`ModelCallError`, classified by kind)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any, Iterator

from inquitree.boundary.errors import InquiTreeError
from inquitree.core.calls.redaction import CLIENT_FIELDS, redact_options

BACKOFF_CAP_S = 30.0
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CALL_LIMIT_S = 900.0  # a streamed answer still arriving is kept as far as it got after this long
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_REPLY_CHARS = 20_000
# A reasoning model's thinking, kept with its reply up to this many characters (about 50k tokens;
# the rest is cut and the cut said in the text kept), so that no reply can make its event too large
# to record (MAX_EVENT_BYTES) and fail its episode, nor a stream of thinking fill this process.
MAX_REASONING_CHARS = 200_000


_DEADLINE = threading.local()


@contextlib.contextmanager
def call_deadline(at: float | None) -> Iterator[None]:
    """Model calls made inside the block end by ``at`` (``time.monotonic()`` seconds): the runner
    sets it from the episode's wall-time limit, so a slow endpoint cannot hold an episode past its
    limit, whatever the per-call timeout and retries would allow. An earlier outer deadline wins."""
    before = getattr(_DEADLINE, "at", None)
    _DEADLINE.at = at if before is None else before if at is None else min(at, before)
    try:
        yield
    finally:
        _DEADLINE.at = before


def current_deadline() -> float | None:
    """The deadline of the innermost :func:`call_deadline` block around this thread's call, if any."""
    return getattr(_DEADLINE, "at", None)


class ModelCallError(InquiTreeError):
    """A model call that produced no usable reply. ``kind`` classifies it; ``retryable``: a later
    attempt may succeed (the endpoint was busy or broken, not the request). ``chunks``: the
    streamed chunks one attempt received before it failed; ``attempts``: every failed attempt of
    the call (kind, seconds, chunks), set on the error that ends it."""

    def __init__(
        self, message: str, kind: str, retryable: bool, status: int | None = None, retry_after: float | None = None
    ):
        super().__init__(message)
        self.kind, self.retryable, self.status, self.retry_after = kind, retryable, status, retry_after
        self.chunks: int | None = None
        self.attempts: list[dict[str, Any]] = []


class DeadlineReached(ModelCallError):
    """A call given up at the deadline of :func:`call_deadline` (the episode's wall-time limit)."""

    def __init__(self, message: str):
        super().__init__(message, "deadline", retryable=False)


# A path segment that may be a credential: a known key prefix, or a run of 20 or more letters and
# digits that mixes both (a token), as some gateways take the key in the path (/v1/sk-.../).


@dataclasses.dataclass(frozen=True)
class CallSettings:
    """How one role's calls are made; every field is recorded with the run."""

    timeout: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    max_tokens: int | None = None
    max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    stream: bool = True
    call_limit: float = DEFAULT_CALL_LIMIT_S
    # Where the system text goes: "auto" (as a system message, or folded into the first user message
    # once the endpoint says its chat template has no system role), "system", or "user" always.
    system_role: str = "auto"

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise InquiTreeError(f"--timeout {self.timeout}: must be more than 0 seconds")
        if self.max_retries < 0:
            raise InquiTreeError(f"--max-retries {self.max_retries}: must be 0 or more")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InquiTreeError(f"--max-tokens {self.max_tokens}: must be at least 1")
        if self.max_reply_chars < 1:
            raise InquiTreeError(f"--max-reply-chars {self.max_reply_chars}: must be at least 1")
        if not self.call_limit > 0:
            raise InquiTreeError(f"--call-limit {self.call_limit}: must be more than 0 seconds")
        if self.system_role not in ("auto", "system", "user"):
            raise InquiTreeError(f"--system-role {self.system_role!r}: expected auto, system or user")
        taken = sorted(set(self.options) & CLIENT_FIELDS)
        if taken:  # a suite from another lab could send the user's key elsewhere, with its own prompts, n at a time
            raise InquiTreeError(
                f"request option {taken[0]!r}: the client sets it itself ({', '.join(sorted(CLIENT_FIELDS))} "
                "cannot be options), so what is recorded is what was sent"
            )

    def worst_case_seconds(self) -> float:
        """The longest one call can take when the endpoint never answers (each retry after a
        timeout waits twice as long as the attempt before it)."""
        return self.timeout * (2 ** (self.max_retries + 1) - 1) + self.max_retries * BACKOFF_CAP_S

    def describe(self) -> dict[str, Any]:
        return {
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "max_tokens": self.max_tokens,
            "max_reply_chars": self.max_reply_chars,
            "options": redact_options(self.options),
            "stream": self.stream,
            "call_limit": self.call_limit,
            **({"system_role": self.system_role} if self.system_role != "auto" else {}),
        }
