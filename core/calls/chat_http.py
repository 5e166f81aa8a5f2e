"""The HTTP under :class:`~inquitree.core.calls.models.ChatModel`: one keep-alive connection per thread
and endpoint, from the standard library.

Why not the client library's HTTP stack: every call of a campaign shares one GIL, and the
client's CPU is what stretched a campaign against a fast endpoint well past its ideal wall time.
A campaign spends about half the client CPU over this transport that it spends through the
OpenAI SDK's ``post`` (``python bench/campaign.py --transports`` measures both), and a process that
calls no other SDK function does not import the SDK (a slow import, paid in every worker).

This transport takes an endpoint only when it can honour it exactly as the SDK would: an
``http`` or ``https`` base URL without credentials in it, and no proxy for its host (``$https_proxy``,
``$no_proxy``, ...). For anything else, or with ``INQUITREE_CHAT_HTTP=sdk``, :func:`direct_endpoint`
returns None and :func:`endpoint` gives an :class:`SdkEndpoint`, which makes the call through the
SDK's documented ``post``. Either way the caller gets the same three outcomes: ``(status, headers,
text)``, :class:`TransportTimeout` or :class:`TransportError`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import heapq
import http.client
import importlib
import itertools
import os
import socket
import ssl
import threading
import time
import urllib.request
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from inquitree.core.calls.transport import Stream, TransportError, TransportTimeout, TransportTooLarge

HTTP_ENV = "INQUITREE_CHAT_HTTP"  # "direct" (the default where it applies) or "sdk"
DEFAULT_BASE_URL = "https://api.openai.com/v1"

# What the other side may make this process hold (docs/SECURITY.md): a line of a streamed answer
# (an event or a comment), a whole answer that is not streamed, and the events of one streamed
# answer together. Past any of them the call ends with one error line, its connection closed.
MAX_LINE_BYTES = 1024 * 1024
MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_STREAM_BYTES = 16 * 1024 * 1024

_TLS: list[ssl.SSLContext] = []  # built once (tens of ms), shared by every connection
_TLS_LOCK = threading.Lock()
_SDK_CLIENTS: dict[tuple, Any] = {}  # endpoint and settings -> the SDK client the threads' copies come from
_SDK_SSL: list[Any] = []  # the SDK's TLS context, built once (it is slow to build), shared by its clients
_THREAD = threading.local()
# Request options for the SDK's ``post``: the API key as a bearer token (what the typed methods
# ask for; clients before 2.x send it anyway and ignore the option).
_BEARER: Any = {"security": {"bearer_auth": True}}


def _split_request(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str], list[tuple[str, str]]]:
    """The request options the OpenAI SDK reads as where to send things, not what: ``extra_headers``
    become headers, ``extra_query`` query parameters and ``extra_body`` fields of the body (sent
    inside the body, a credential header never authenticated). Returns (body, headers, query)."""
    if not any(k in body for k in ("extra_headers", "extra_query", "extra_body")):
        return body, {}, []
    body = dict(body)
    headers, query, extra = (body.pop(k, None) for k in ("extra_headers", "extra_query", "extra_body"))
    if isinstance(extra, dict):
        body.update({k: v for k, v in extra.items() if k not in body})  # the engine's own fields stay its
    return (
        body,
        {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {},
        [(str(k), str(v)) for k, v in query.items()] if isinstance(query, dict) else [],
    )


def _is_event_stream(resp: http.client.HTTPResponse) -> bool:
    return (resp.getheader("content-type") or "").split(";")[0].strip().lower() == "text/event-stream"


def _tls() -> ssl.SSLContext:
    with _TLS_LOCK:
        if not _TLS:
            _TLS.append(tls_context())
        return _TLS[0]


def tls_context() -> ssl.SSLContext:
    """Trusting what the SDK's HTTP client trusts by default: ``$SSL_CERT_FILE`` or
    ``$SSL_CERT_DIR`` when set, else certifi's bundle (installed with the SDK), else the system's."""
    cafile = None
    if not (os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")):
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:
            pass
    return ssl.create_default_context(cafile=cafile)


class _Watchdog:
    """One thread that ends the calls still running at their deadline, by shutting down their
    socket: the timeout of a socket bounds each read, so a server that sends a valid answer one
    byte a second could hold a call for as long as it liked (221 s against a 5 s timeout). Arming
    and disarming a call is a heap push and a flag (no thread per call)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[list[Any]] = []  # [deadline, seq, connection, armed, fired, socket]
        self._seq = itertools.count()
        self._pid = 0  # the process the thread runs in: a forked worker starts its own

    def arm(self, deadline: float, conn: http.client.HTTPConnection) -> list[Any]:
        entry = [deadline, next(self._seq), conn, True, False, None, None]  # [6]: a later deadline, see extend
        with self._cond:
            if self._pid != os.getpid():
                self._pid, self._heap = os.getpid(), []
                threading.Thread(target=self._run, name="inquitree-call-deadlines", daemon=True).start()
            heapq.heappush(self._heap, entry)
            self._cond.notify()
        return entry

    def hold(self, entry: list[Any] | None, sock: Any) -> None:
        """Keep the call's socket itself, once connected: http.client lets go of it (``conn.sock =
        None``) as soon as a response says ``Connection: close``, while the response goes on reading
        from it, so the connection alone no longer leads to the socket to shut. If the deadline
        passed before the socket was known, shut it now."""
        if entry is None or sock is None:
            return
        with self._cond:
            entry[5] = sock
            late = entry[4]
        if late:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    @staticmethod
    def extend(entry: list[Any] | None, deadline: float) -> None:
        """Move the call's deadline later (a streamed answer that keeps speaking): one assignment, no
        heap work per event; the thread pushes the entry back when its old deadline comes."""
        if entry is not None and deadline > entry[0]:
            entry[6] = deadline

    def disarm(self, entry: list[Any]) -> None:
        """Stop watching (it may have fired already: see :meth:`fired`)."""
        with self._cond:
            entry[3] = False

    @staticmethod
    def fired(entry: list[Any] | None) -> bool:
        """Whether the deadline shut this call's socket (set before the shutdown, so a read that the
        shutdown ended always sees it)."""
        return entry is not None and bool(entry[4])

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and not self._heap[0][3]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                entry = heapq.heappop(self._heap)
                later = entry[6]
                if later is not None and later > time.monotonic():  # extended since: watch it again
                    entry[0], entry[6] = later, None
                    heapq.heappush(self._heap, entry)
                    continue
                entry[3], entry[4] = False, True
                sock = entry[5] or getattr(entry[2], "sock", None)
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)


_WATCHDOG = _Watchdog()
_CUT_OFF = "the answer was not complete by the call's deadline (cut off)"


class Endpoint:
    """POSTs JSON to one endpoint; thread-safe (each thread keeps its own connection). A
    :class:`~inquitree.core.calls.transport.Transport` that streams."""

    streams = True

    def __init__(self, base_url: str, api_key: str, timeout: float):
        parts = urlsplit(base_url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.query = f"?{parts.query}" if parts.query else ""
        self.timeout = timeout
        self.headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "inquitree",
        }
        self._local = threading.local()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """(connection, reused): this thread's open connection, or a new one."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        if self.https:
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=_tls())
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self._local.conn = conn
        return conn, False

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def _request(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str], str]:
        """The body, headers and target of a POST to ``path`` (:func:`_split_request`'s options applied)."""
        body, extra_headers, extra_query = _split_request(body)
        query = self.query
        if extra_query:
            query = (f"{query}&" if query else "?") + urlencode(extra_query)
        return (
            body,
            ({**self.headers, **extra_headers} if extra_headers else self.headers),
            f"{self.prefix}{path}{query}",
        )

    def post(
        self,
        path: str,
        body: dict[str, Any],
        deadline: float | None = None,
        stream: Stream | None = None,
        silence: float | None = None,
    ) -> tuple[int, http.client.HTTPMessage, str]:
        """``(status, headers, text)`` of ``POST base_url + path``, the whole answer by ``deadline``
        (``time.monotonic()`` seconds; the socket's timeout, ``silence`` or the endpoint's, still
        bounds each read). A kept-alive connection that the server closed in the meantime is
        replaced once, as other HTTP clients do, when nothing came back on it; any other failure
        raises.

        With ``stream``, an answer the server streams (``text/event-stream``) is read event by
        event until it ends, ``stream.feed`` says it has enough, the endpoint sends no data for
        ``silence`` seconds, or ``stream.deadline`` passes; ``text`` is then the events' data, one
        a line. Whenever the read stops early the connection is closed, which is how a streaming
        server learns to stop generating. An answer that is not streamed must still arrive whole
        by ``deadline``."""
        body, headers, target = self._request(path, body)
        data = orjson.dumps(body)  # the C encoder: the history is sent again on every turn
        wait = silence or self.timeout

        def partial() -> str | None:  # what a streamed answer had sent, for the caller to keep or count
            return stream.text() if stream is not None and streamed else None

        while True:
            conn, reused = self._connection()
            sock, resp, streamed = None, None, False
            conn.timeout = wait
            if conn.sock is not None:
                conn.sock.settimeout(wait)
            # A streamed answer must speak within ``wait`` of the request (status line, headers and
            # its first event together) and within ``wait`` of each event after it: the watchdog's
            # deadline moves on with every complete event (_read_events), never with a byte alone.
            silent_by = time.monotonic() + wait
            first = min(silent_by, stream.deadline or silent_by) if stream is not None else deadline
            watch = _WATCHDOG.arm(first, conn) if first is not None else None
            try:
                conn.request("POST", target, body=data, headers=headers)
                sock = conn.sock
                _WATCHDOG.hold(watch, sock)
                resp = conn.getresponse()
                streamed = stream is not None and resp.status == 200 and _is_event_stream(resp)
                if not streamed and watch is not None and deadline is not None and first != deadline:
                    _WATCHDOG.disarm(watch)  # not streamed: the whole answer is due by ``deadline``
                    watch = _WATCHDOG.arm(deadline, conn)
                    _WATCHDOG.hold(watch, sock)
                if streamed:
                    assert stream is not None
                    text = self._read_events(resp, stream, wait, watch)
                else:
                    text = self._read_body(resp)
            except (TransportTimeout, TransportTooLarge):  # closed, so the server stops
                self._abandon(resp, sock)
                raise
            except (TimeoutError, socket.timeout):
                self._abandon(resp, sock)
                raise TransportTimeout(f"no answer within {wait:g} s", partial()) from None
            except (OSError, http.client.HTTPException) as exc:
                self._abandon(resp, sock)
                if _WATCHDOG.fired(watch):
                    raise TransportTimeout(self._why_cut(stream, wait), partial()) from None
                stale = isinstance(
                    exc,
                    (
                        http.client.RemoteDisconnected,
                        ConnectionResetError,
                        BrokenPipeError,
                        http.client.ImproperConnectionState,  # the last answer was not read to its end
                    ),
                )
                if reused and stale:
                    continue  # a stale keep-alive connection: the request never reached the server
                raise TransportError(f"{type(exc).__name__}: {exc}") from None
            finally:
                if watch is not None:
                    _WATCHDOG.disarm(watch)
            if _WATCHDOG.fired(watch):  # the deadline shut the socket just as the read finished
                self._drop()
                raise TransportTimeout(self._why_cut(stream, wait), partial())
            if stream is not None and stream.stopped:
                self._abandon(resp, sock)  # the server notices the closed connection and stops generating
            elif resp.will_close:
                self._drop()
            return resp.status, resp.headers, text

    def _abandon(self, resp: http.client.HTTPResponse | None, sock: socket.socket | None) -> None:
        """Close a connection whose answer is not read to its end. Once a response says
        ``Connection: close``, http.client hands the socket to the response alone, so closing the
        connection would leave it open: the socket itself is shut."""
        self._drop()
        if resp is not None:
            resp.close()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    @staticmethod
    def _read_body(resp: http.client.HTTPResponse) -> str:
        """An answer that is not streamed, read to ``MAX_BODY_BYTES`` at most."""
        raw = resp.read(MAX_BODY_BYTES + 1)
        if len(raw) > MAX_BODY_BYTES:
            raise TransportTooLarge(f"the answer is longer than {MAX_BODY_BYTES:,} bytes; not read further")
        if resp.length:  # a read of a given size returns what came: a body cut short is said here
            raise http.client.IncompleteRead(raw, resp.length)
        return raw.decode("utf-8", "replace")

    @staticmethod
    def _why_cut(stream: Stream | None, wait: float) -> str:
        """Why the watchdog ended a call: the endpoint fell silent, or the answer ran past its deadline."""
        if stream is not None and (stream.deadline is None or time.monotonic() < stream.deadline):
            return f"no token for {wait:g} s (the endpoint fell silent, or sent lines or events with none in them)"
        return _CUT_OFF

    @staticmethod
    def _read_events(resp: http.client.HTTPResponse, stream: Stream, silence: float, watch: list[Any] | None) -> str:
        """The data of a server-sent event stream, until ``[DONE]``, its end, or ``stream.feed``
        saying it has enough. Only an event that carries a token counts as the endpoint speaking:
        ``silence`` seconds without one end the read (the watchdog's deadline moves on with each,
        so neither keep-alive comments, nor events with nothing in them, nor a line dripped a byte
        at a time hold a call open). A line is read to ``MAX_LINE_BYTES`` at most and the stream's
        data to ``MAX_STREAM_BYTES``: past either the read ends with :class:`TransportTooLarge`."""
        heard = time.monotonic()
        received = 0
        while True:
            line = resp.readline(MAX_LINE_BYTES + 1)
            if len(line) > MAX_LINE_BYTES:
                raise TransportTooLarge(f"a streamed line is longer than {MAX_LINE_BYTES:,} bytes; not read further")
            if not line:
                return stream.text()
            if line.startswith(b"data:"):
                received += len(line)
                if received > MAX_STREAM_BYTES:
                    raise TransportTooLarge(f"the streamed answer passed {MAX_STREAM_BYTES:,} bytes; not read further")
                payload = line[5:].strip().decode("utf-8", "replace")
                if payload == "[DONE]":
                    stream.done = True
                    if len(resp.read(MAX_LINE_BYTES + 1)) > MAX_LINE_BYTES:  # the body's end: reusable
                        raise TransportTooLarge(f"more than {MAX_LINE_BYTES:,} bytes after the stream's end")
                    return stream.text()
                if stream.feed(payload):
                    stream.stopped = True
                    return stream.text()
                if stream.spoke:
                    heard = time.monotonic()
                    later = heard + silence
                    _WATCHDOG.extend(watch, min(later, stream.deadline) if stream.deadline is not None else later)
                    continue
            if time.monotonic() - heard > silence:
                raise TransportTimeout(f"no token for {silence:g} s", stream.text())


def direct_endpoint(base_url: str | None, api_key: str, timeout: float) -> Endpoint | None:
    """An :class:`Endpoint` for ``base_url``, or None where the SDK must make the call (see the
    module's docstring)."""
    if os.environ.get(HTTP_ENV, "direct").strip().lower() == "sdk":
        return None
    url = base_url or DEFAULT_BASE_URL
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    proxies = urllib.request.getproxies()
    if (proxies.get(parts.scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(parts.hostname):
        return None
    return Endpoint(url, api_key, timeout)


class SdkEndpoint:
    """:meth:`Endpoint.post` through the OpenAI SDK's ``post`` (its route for any endpoint: the
    body goes out as it is, the reply comes back as text), for what the direct transport does not
    honour. Non-2xx answers come back as ``(status, headers, text)``, as they do from
    :class:`Endpoint`."""

    streams = False  # the SDK's post returns the answer whole

    def __init__(self, base_url: str | None, api_key: str, timeout: float):
        # A query string in the base URL (``?api-version=...``) goes with every request, after the
        # path: the SDK would otherwise append the path to the query ("/v1?key=x/chat/completions").
        self.query: tuple[tuple[str, str], ...] = ()
        if base_url and "?" in base_url:
            parts = urlsplit(base_url)
            base_url = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
            self.query = tuple(parse_qsl(parts.query, keep_blank_values=True))
        self.base_url, self.api_key, self.timeout = base_url, api_key, timeout

    def post(
        self,
        path: str,
        body: dict[str, Any],
        deadline: float | None = None,
        stream: Stream | None = None,
        silence: float | None = None,
    ) -> tuple[int, Any, str]:
        """As :meth:`Endpoint.post`, never streamed (``stream`` and ``silence`` are not used: the
        answer comes whole, by ``deadline``). The SDK bounds each read only, so with a ``deadline``
        the call runs in a helper thread and is given up at the deadline (the thread ends at its
        next read timeout)."""
        t0 = time.monotonic()
        client = _sdk_client(self.base_url, self.api_key, self.timeout)  # this thread's, made once
        if deadline is None:
            return self._post(client, path, body)
        # The SDK's import and the client's TLS set-up (a second or more, once per thread) are this
        # process's own work, not the endpoint's: the deadline bounds the wait for the answer.
        deadline += time.monotonic() - t0
        future = _in_daemon_thread(self._post, client, path, body)
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            _forget_sdk_client(self.base_url, self.api_key, self.timeout, client)  # its read ends with it
            raise TransportTimeout(_CUT_OFF) from None

    def _post(self, client: Any, path: str, body: dict[str, Any]) -> tuple[int, Any, str]:
        import openai

        try:
            body, extra_headers, extra_query = _split_request(body)
            options = {**_BEARER, "params": dict(self.query)} if self.query else _BEARER
            if extra_headers or extra_query:
                options = {**options, "headers": extra_headers, "params": {**dict(self.query), **dict(extra_query)}}
            # The response unread (stream=True), then read here to MAX_BODY_BYTES at most: the SDK
            # would read a 200's body whole, however long the other side makes it.
            http = _sdk_http()
            resp = client.post(path, cast_to=http.Response, body=body, options=options, stream=True)
            try:
                text = _bounded_text(resp)
            except http.TimeoutException:
                raise TransportTimeout(f"no answer within {self.timeout:g} s") from None
            except http.HTTPError as exc:  # the body cut short or the connection lost while it was read
                raise TransportError(f"{type(exc).__name__}: {exc}") from None
            finally:
                resp.close()
        except openai.APITimeoutError:
            raise TransportTimeout(f"no answer within {self.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            inner = exc.__cause__ or exc.__context__
            raise TransportError(f"{type(inner).__name__}: {inner}" if inner else type(exc).__name__) from None
        except openai.APIStatusError as exc:
            try:
                answer = exc.response.text
            except Exception:  # the message is best effort
                answer = str(exc)
            return exc.status_code, getattr(exc.response, "headers", None), answer
        return 200, None, text


def _in_daemon_thread(fn: Any, *args: Any) -> concurrent.futures.Future:
    """``fn(*args)`` in a daemon thread of its own. A call given up at its deadline may still be
    reading in it; a daemon thread does not hold the process when it ends (a pool's threads did:
    after the error was printed, a slow drip kept the process 152 s and an endless body for ever)."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to the caller, as a pool does
            future.set_exception(exc)

    threading.Thread(target=run, name="inquitree-sdk-call", daemon=True).start()
    return future


def _bounded_text(resp: Any) -> str:
    """An SDK response's body as text, read to ``MAX_BODY_BYTES`` at most."""
    chunks, size = [], 0
    for chunk in resp.iter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise TransportTooLarge(f"the answer is longer than {MAX_BODY_BYTES:,} bytes; not read further")
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _sdk_http() -> Any:
    """The HTTP package the SDK is built on (httpx, or httpx2 in later releases)."""
    import openai

    return importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])


def _forget_sdk_client(base_url: str | None, api_key: str, timeout: float, client: Any) -> None:
    """Close a thread's SDK client whose call was given up (the read still under way in its helper
    thread fails at once) and let the thread make a new one."""
    mine: dict[tuple, Any] = _THREAD.__dict__.setdefault("sdk_clients", {})
    if mine.get((base_url, api_key, timeout)) is client:
        del mine[(base_url, api_key, timeout)]
    with contextlib.suppress(Exception):
        client.close()


def _sdk_client(base_url: str | None, api_key: str, timeout: float):
    """The calling thread's SDK client for an endpoint and settings (the SDK's own retries off).

    Each thread has its own connection pool: with one pool shared by 64 threads, every request
    and every response walked all 64 connections, a third of a campaign's HTTP time
    (bench/campaign.py). Building a client costs mostly its TLS context; that is built once, and
    a thread's client is a cheap copy of the endpoint's first client with its own pool on the
    shared context."""
    import openai

    key = (base_url, api_key, timeout)
    mine: dict[tuple, Any] = _THREAD.__dict__.setdefault("sdk_clients", {})
    client = mine.get(key)
    if client is None:
        with _TLS_LOCK:
            if key not in _SDK_CLIENTS:
                _SDK_CLIENTS[key] = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)
            if not _SDK_SSL:
                # the SDK's HTTP package (httpx, or httpx2 in later releases) makes the context as
                # its clients do by default (certifi, SSL_CERT_FILE, ...)
                _SDK_SSL.append(_sdk_http().create_ssl_context())
        client = mine[key] = _SDK_CLIENTS[key].with_options(http_client=openai.DefaultHttpxClient(verify=_SDK_SSL[0]))
    return client


def endpoint(base_url: str | None, api_key: str, timeout: float) -> Endpoint | SdkEndpoint:
    """The transport for ``base_url``: the direct one where it applies, else the SDK's."""
    return direct_endpoint(base_url, api_key, timeout) or SdkEndpoint(base_url, api_key, timeout)
