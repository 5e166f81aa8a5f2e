"""What a chat client needs of the transport under it: :class:`Transport`, the one seam between
:class:`~inquitree.core.calls.models.ChatModel` (retries, deadlines, the call cache, redaction,
usage and the reply's bounds) and the wire.

InquiTree's own transports (``chat_http.py``: the standard library's HTTP, or the OpenAI SDK's
``post``) speak the OpenAI chat-completions protocol. A lab whose model sits behind another API
gives the client a transport of its own (``ModelConfig(transport=...)``, or ``ChatModel(...,
transport=...)``): it is handed each request as an OpenAI-shaped body and answers with an
OpenAI-shaped reply, translating both ways; everything around the call stays InquiTree's
(docs/plugins.md, "A model behind another API").
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Stream", "Transport", "TransportError", "TransportTimeout", "TransportTooLarge"]


class TransportTooLarge(Exception):
    """The endpoint sent more than this process holds for one call (a line, a body, a stream)."""


class TransportTimeout(Exception):
    """The endpoint said nothing within the timeout, or did not finish its answer by the call's
    deadline. ``partial``: what a streamed answer had sent by then (None when it was not streamed)."""

    def __init__(self, message: str, partial: str | None = None):
        super().__init__(message)
        self.partial = partial


class TransportError(Exception):
    """The connection failed, closed early or broke the protocol; ``str()`` says how."""


class Stream(Protocol):
    """What a caller of :meth:`Endpoint.post` wants of a streamed answer: ``feed`` gets each
    event's data and returns True once the caller has enough (the read stops and the connection
    closes); ``deadline`` (``time.monotonic()`` seconds, or None) bounds the whole streamed answer,
    which may run longer than an answer that is not streamed, since its tokens keep arriving.
    The transport sets ``done`` at the server's ``[DONE]`` and ``stopped`` when ``feed`` asked to
    stop; ``text`` is what was fed, one event a line. ``spoke`` says whether the last event fed
    carried a token (content or reasoning): only those count as the endpoint speaking, so that
    events with nothing in them (a role alone, every half second) cannot hold a call open."""

    deadline: float | None
    done: bool
    stopped: bool
    spoke: bool

    def feed(self, data: str) -> bool: ...

    def text(self) -> str: ...


class Transport(Protocol):
    """Sends one request and returns ``(status, headers, text)``: the HTTP status the API answered
    with (200 for an answer), its headers (anything with ``get``: ``retry-after`` is read from
    them) and the answer's text, a chat completion's JSON; or raises :class:`TransportTimeout`
    (nothing by ``deadline``, ``time.monotonic()`` seconds) or :class:`TransportError` (the
    connection failed), both tried again by the client. ``path`` is ``/chat/completions`` or
    ``/embeddings``, ``body`` the OpenAI-shaped request. Where ``streams`` is True the client may
    pass a :class:`Stream` and ``"stream": true`` in the body: the transport then feeds it each
    event's data; a transport that does not stream leaves ``streams`` False and is given None.
    ``silence``: how long the other side may stay silent. The client passes them in this order."""

    streams: bool

    def post(
        self,
        path: str,
        body: dict[str, Any],
        deadline: float | None,
        stream: Stream | None,
        silence: float | None,
        /,
    ) -> tuple[int, Any, str]: ...
