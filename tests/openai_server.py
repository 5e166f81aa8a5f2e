"""A real OpenAI-compatible HTTP server on loopback, for tests.

It serves ``POST /v1/embeddings`` (vectors from InquiTree's hash embedder, so
they are deterministic and meaningful) and ``POST /v1/chat/completions``
(replies from a script the test supplies, or from a callable over the
messages). ``faults`` is a queue of responses to give before normal service:
an int status (500, 429 ...), ``"timeout"`` (sleep past the client's timeout),
``"garbage"`` (a 200 with a non-JSON body), ``"empty"`` (a reply with no content), and the
fault matrix of the real-model issue: ``"wrong_shape"`` (200, JSON without choices[0].message),
``"html"`` (200, text/html), ``"empty_body"`` (200, no bytes), ``"truncated"`` (200, half the
JSON, then the connection closes), ``"retry_after"`` (429 with Retry-After: 1), ``"context"``
(400 with llama.cpp's context-length message), ``"close"`` (the connection closes with no
response), ``"hang"`` (accepts, never answers, until the server stops), ``"drop_idle"`` (a
normal reply, then the kept-alive connection is closed without saying so, as servers do with
idle connections).
With ``streams`` set, a chat request that asks for a stream is answered as llama.cpp's server
answers it: server-sent events, one chunk per ``stream_piece`` characters every
``stream_seconds``, a keep-alive comment line between them, the finish reason, ``[DONE]``; and
no usage. Stream faults: ``"stream_stall"`` (two chunks, then only keep-alive comments),
``"stream_interrupted"`` (``[DONE]`` with no finish reason, as llama.cpp ends an answer another
request interrupts), ``"stream_cut"`` (the connection closes mid-answer). ``abandoned`` counts
the streamed answers whose client closed the connection before their end (a real server stops
generating them).
As vLLM serves a reasoning model (its reasoning parsers): ``reasoning`` set, each reply carries that
text in ``reasoning_content`` (streamed as deltas before the content) and counts its tokens in
``completion_tokens_details.reasoning_tokens``; with ``reasoning_only`` the whole budget went to
the reasoning (empty content, finish reason ``length``). With ``no_system_role`` a request with a
system message is refused as a chat template without one refuses it (Gemma's: HTTP 400, "System
role not supported").
Every request is kept in ``requests`` for the test to inspect.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from inquitree.core.players.embed import HashEmbedder

# Streamed answers without end, each chosen by the other side (docs/SECURITY.md's read bounds):
# an event line that never ends, a comment line that never ends, reasoning deltas as fast as the
# socket takes them, and events that carry no token every half second.
FLOODS = ("line_without_end", "comment_without_end", "reasoning_flood", "role_only")


class OpenAICompatibleServer:
    def __init__(self, replies: list[str] | Callable[[list[dict]], str] | None = None, delay: float = 0.0):  # noqa: C901 - the fake server's handler: one branch a fault
        self.replies = replies if replies is not None else []
        self.delay = delay
        self.faults: list = []
        self.fail_after: tuple[int, object] | None = None  # (n, fault): every chat call after the n-th fails
        self.chat_calls = 0
        self.fault_body: str | None = None  # message of injected error responses
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._embedder = HashEmbedder(dim=64)
        self._stopping = threading.Event()
        self.reject_format: set[str] = set()  # response_format types answered with llama.cpp's 500 validation error
        self.drip_seconds = 1.0  # the "drip" fault: a valid answer, one byte every this many seconds
        # A context window, in tokens of 4 characters: a chat call whose messages and max_tokens do not
        # fit is refused as llama.cpp's server refuses it (HTTP 400, "exceed context window of N").
        self.context_tokens: int | None = None
        self.streams = False
        self.stream_keepalive = False
        self.stream_piece = 8
        self.stream_seconds = 0.0
        self.abandoned = 0
        self.streamed_chunks = 0  # chunks written before the client stopped reading, over all streams
        self.reasoning: str | None = None  # a reasoning model's thinking, sent apart from the content
        self.reasoning_only = False  # the whole budget spent on reasoning: empty content, finish "length"
        self.no_system_role = False  # a chat template without a system role
        self.answer_model: str | None = None  # the model name answers carry (None: the one asked for)
        self.fingerprint: str | None = None  # the system_fingerprint answers carry (None: none)
        self.usage_override: dict | None = None  # usage fields that replace the counted ones
        self.flooded = 0  # bytes an "endless" answer wrote before the client let go
        server = self

        def flood(fault: str, write: Callable[[bytes], None], delta: Callable[[dict], None]) -> None:
            """One of FLOODS, until the server stops or the client closes the connection."""
            if fault in ("line_without_end", "comment_without_end"):
                write(b"data: " if fault == "line_without_end" else b": ")
            while not server._stopping.is_set():
                if fault in ("line_without_end", "comment_without_end"):
                    write(b"x" * 65536)
                elif fault == "reasoning_flood":
                    delta({"reasoning_content": "Let me think again. " * 400})
                else:  # "role_only": events with nothing in them, twice a second
                    delta({"role": "assistant"})
                    server._stopping.wait(0.5)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid the 40 ms stall

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _drip_or_flood(self, data: bytes, fault: str) -> None:
                """``drip``: ``data`` with its length, one byte every ``drip_seconds``; ``endless``: a
                chunked 200 whose chunks never stop, until the client closes or the server stops."""
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if fault == "drip":
                    self.send_header("Content-Length", str(len(data)))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.close_connection = True
                piece = b"[" + b"0.5," * 16383 + b"0.5]"
                try:
                    for i in itertools.count():
                        if fault == "drip":
                            if i >= len(data):
                                return None
                            self.wfile.write(data[i : i + 1])
                        else:
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                        server.flooded += 0 if fault == "drip" else len(piece)
                        if server._stopping.wait(server.drip_seconds if fault == "drip" else 0):
                            return None
                except OSError:  # the client gave up
                    return None
                return None

            def _stream(self, content: str, fault: object) -> None:
                kept = server.stream_keepalive  # chunked and kept alive, as uvicorn serves llama.cpp's streams
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header(*(("Transfer-Encoding", "chunked") if kept else ("Connection", "close")))
                self.end_headers()
                self.close_connection = not kept

                def write(data: bytes) -> None:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if kept else data)
                    self.wfile.flush()

                def event(data: str) -> None:
                    write(f"data: {data}\r\n\r\n".encode())

                def chunk(delta: dict, finish: str | None = None) -> str:
                    return json.dumps(
                        {"model": "streamed", "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                        | ({"system_fingerprint": server.fingerprint} if server.fingerprint else {})
                    )  # fmt: skip

                pieces = [content[i : i + server.stream_piece] for i in range(0, len(content), server.stream_piece)]
                thinking = server.reasoning or ""
                try:
                    if fault in FLOODS:  # what the other side may choose to send without end
                        self.close_connection = True
                        return flood(fault, write, lambda delta: event(chunk(delta)))
                    event(chunk({"role": "assistant"}))
                    for i in range(0, len(thinking), server.stream_piece):
                        event(chunk({"reasoning_content": thinking[i : i + server.stream_piece]}))
                    if server.reasoning_only:
                        event(chunk({}, "length"))
                        event("[DONE]")
                        return None
                    for n, piece in enumerate(pieces):
                        if fault == "stream_cut" and n == 2:
                            self.close_connection = True
                            return None
                        if fault == "stream_stall" and n == 2:
                            self.close_connection = True
                            while not server._stopping.wait(0.05):
                                write(b": ping\r\n\r\n")
                            return None
                        event(chunk({"content": piece}))
                        with server._lock:
                            server.streamed_chunks += 1
                        if server.stream_seconds and server._stopping.wait(server.stream_seconds):
                            return None
                        write(b": ping\r\n\r\n")
                    if fault != "stream_interrupted":
                        event(chunk({}, "stop"))
                    event("[DONE]")
                    if kept:
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client closed the connection: a real server stops generating
                    with server._lock:
                        server.abandoned += 1
                return None

            def do_POST(self) -> None:  # noqa: C901 - one branch a fault the tests inject
                length = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(length) or b"{}")
                route = self.path.split("?", 1)[0]  # a base URL may carry a query (?api-version=...)
                with server._lock:
                    server.requests.append(
                        {
                            "path": self.path,
                            "body": req,
                            "authorization": self.headers.get("Authorization"),
                            "headers": dict(self.headers),
                        }
                    )
                    fault = server.faults.pop(0) if server.faults else None
                    if route.endswith("/chat/completions"):
                        server.chat_calls += 1
                        if server.fail_after and server.chat_calls > server.fail_after[0]:
                            fault = server.fail_after[1]
                if server.delay:
                    time.sleep(server.delay)
                fmt = (req.get("response_format") or {}).get("type")
                if fmt in server.reject_format:
                    return self._send(
                        500,
                        json.dumps(
                            {
                                "error": {
                                    "message": f"1 validation error: body.response_format.type "
                                    f"Input should be 'text' or 'json_object', got {fmt!r}"
                                }
                            }
                        ).encode(),
                    )
                if fault == "timeout":
                    time.sleep(5)
                    return self._send(500, b'{"error":{"message":"late"}}')
                if isinstance(fault, int):
                    headers = {"Retry-After": "0"} if fault == 429 else {}
                    return self._send(
                        fault,
                        json.dumps(
                            {"error": {"message": server.fault_body or f"injected {fault}", "type": "server_error"}}
                        ).encode(),
                        headers,
                    )
                if fault == "garbage":
                    return self._send(200, b"<html>this is not json</html>")
                if fault == "endless_body":  # a 200 whose body never ends (no length, read to the close)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.close_connection = True
                    with contextlib.suppress(OSError):  # the client closed the connection
                        while not server._stopping.is_set():
                            self.wfile.write(b'{"x": "' + b"y" * 65536)
                    return None
                if fault == "hang":
                    server._stopping.wait(600)
                    self.close_connection = True
                    return None
                if fault == "close":
                    self.close_connection = True
                    return None
                if fault == "html":
                    body = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    return self.wfile.write(body)
                if fault == "empty_body":
                    return self._send(200, b"")
                if fault == "wrong_shape":
                    return self._send(
                        200, json.dumps({"id": "x", "object": "chat.completion", "choices": ["just a string"]}).encode()
                    )
                if fault == "truncated":
                    full = json.dumps(
                        {
                            "id": "x",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ACTION: hi"}}],
                        }
                    ).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(full)))
                    self.end_headers()
                    self.wfile.write(full[: len(full) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return None
                if fault == "retry_after":
                    return self._send(429, b'{"error":{"message":"slow down"}}', {"Retry-After": "1"})
                if fault == "context":
                    return self._send(
                        400,
                        json.dumps(
                            {
                                "error": {
                                    "message": "Requested tokens (4211) exceed context window of 4096",
                                    "type": "invalid_request_error",
                                }
                            }
                        ).encode(),
                    )
                if route.endswith("/embeddings"):
                    texts = req["input"] if isinstance(req["input"], list) else [req["input"]]
                    vecs = server._embedder.embed(texts)
                    data = [
                        {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                        for i, v in enumerate(vecs)
                    ]
                    body = {
                        "object": "list",
                        "data": data,
                        "model": req.get("model"),
                        "usage": {"prompt_tokens": 0, "total_tokens": 0},
                    }
                    if fault in ("drip", "endless"):  # a byte every drip_seconds; or a body with no end
                        return self._drip_or_flood(json.dumps(body).encode(), fault)
                    return self._send(200, json.dumps(body).encode())
                if route.endswith("/chat/completions") and server.context_tokens is not None:
                    wanted = sum(len(m.get("content") or "") for m in req["messages"]) // 4 + (
                        req.get("max_tokens") or 0
                    )
                    if wanted > server.context_tokens:
                        message = f"Requested tokens ({wanted}) exceed context window of {server.context_tokens}"
                        return self._send(400, json.dumps({"error": {"message": message}}).encode())
                system = any(m.get("role") == "system" for m in req.get("messages") or [])
                if route.endswith("/chat/completions") and server.no_system_role and system:
                    message = "System role not supported"  # as a Jinja chat template without one raises it
                    return self._send(400, json.dumps({"error": {"message": message, "type": "BadRequest"}}).encode())
                if route.endswith("/chat/completions"):
                    content = "" if fault == "empty" or server.reasoning_only else server._next_reply(req["messages"])
                    body = {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": server.answer_model or req.get("model"),
                        **({"system_fingerprint": server.fingerprint} if server.fingerprint else {}),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "length" if server.reasoning_only else "stop",
                                "message": {"role": "assistant", "content": content}
                                | ({"reasoning_content": server.reasoning} if server.reasoning else {}),
                            }
                        ],
                        "usage": {
                            "prompt_tokens": sum(len(m.get("content") or "") for m in req["messages"]) // 4,
                            "completion_tokens": (len(content) + len(server.reasoning or "")) // 4,
                            "total_tokens": 0,
                            "prompt_tokens_details": {"cached_tokens": 0},
                        },
                    }
                    if server.reasoning:
                        body["usage"]["completion_tokens_details"] = {"reasoning_tokens": len(server.reasoning) // 4}
                    body["usage"].update(server.usage_override or {})
                    if server.streams and req.get("stream"):
                        return self._stream(content, fault)
                    if fault == "drop_idle":
                        self.close_connection = True  # no "Connection: close": the client finds out later
                    if fault in ("drip", "drip_close", "drip_chunked"):
                        # A valid answer sent a byte at a time, so every read is quick: with a length
                        # ("drip"), also saying "Connection: close" (HTTP/1.0 style: http.client lets go
                        # of the socket as soon as it reads that header), or chunked, kept alive.
                        data = json.dumps(body).encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        if fault == "drip_chunked":
                            self.send_header("Transfer-Encoding", "chunked")
                        else:
                            self.send_header("Content-Length", str(len(data)))
                        if fault == "drip_close":
                            self.send_header("Connection", "close")
                        self.end_headers()
                        self.close_connection = True
                        try:
                            for i in range(len(data)):
                                piece = data[i : i + 1]
                                if fault == "drip_chunked":
                                    piece = b"1\r\n" + piece + b"\r\n"
                                self.wfile.write(piece)
                                self.wfile.flush()
                                if server._stopping.wait(server.drip_seconds):
                                    return None
                            if fault == "drip_chunked":
                                self.wfile.write(b"0\r\n\r\n")
                        except OSError:  # the client gave up
                            return None
                        return None
                    if fault == "silent":  # the request is read, and nothing, not even a status line, comes back
                        server._stopping.wait(server.drip_seconds * 1000)
                        self.close_connection = True
                        return None
                    return self._send(200, json.dumps(body).encode())
                return self._send(404, b'{"error":{"message":"no such route"}}')

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _next_reply(self, messages: list[dict]) -> str:
        if callable(self.replies):
            return self.replies(messages)
        with self._lock:
            return self.replies.pop(0) if self.replies else "ACTION: draw_conclusion"

    def __enter__(self) -> "OpenAICompatibleServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _bench_model(messages: list[dict]) -> str:
    return "ACTION: (1) nothing" if "numbered" in messages[-1]["content"] else "THOUGHT: hm\nACTION: not sure yet"


if __name__ == "__main__":  # a standalone server for benchmarks: python tests/openai_server.py DELAY
    import sys

    srv = OpenAICompatibleServer(_bench_model, delay=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0)
    srv.httpd.request_queue_size = 256
    print(srv.base_url, flush=True)
    srv.httpd.serve_forever()


class CountingProxy:
    """A loopback HTTP proxy in front of a real OpenAI-compatible server that counts the requests
    passing through it; stopping it makes its URL refuse connections, as a stopped server's would
    (the cached re-run bench uses it with llama.cpp's server: same URL, every request counted)."""

    def __init__(self, upstream_base_url: str):
        import http.client
        from urllib.parse import urlsplit

        up = urlsplit(upstream_base_url)
        self.requests: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                proxy.requests.append(f"{method} {self.path}")
                conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=600)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(method, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            def do_POST(self) -> None:
                self._forward("POST")

            def do_GET(self) -> None:
                self._forward("GET")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}{up.path.rstrip('/')}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "CountingProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
