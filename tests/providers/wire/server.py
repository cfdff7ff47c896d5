"""A loopback HTTP server that replays scripted vendor responses byte for byte.

Each request pops the next `Reply` from the queue and records what the client sent.
Bodies are sent with chunked transfer encoding and flushed piece by piece, so streaming
clients see events as they are written; `Pause` steps between pieces simulate a slow first
byte or a stall, and `drop=True` closes the socket before the terminating chunk (a lost
connection, which clients notice as an incomplete body).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Pause:
    """Wait this many seconds before sending the next piece of the body."""

    seconds: float


@dataclass
class Reply:
    """What the server answers to one request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Sequence[bytes | Pause] = ()
    drop: bool = False

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
        """A complete JSON response (used for errors and non-streaming endpoints)."""
        return cls(
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
            body=[json.dumps(payload).encode()],
        )


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The request body decoded as JSON."""
        return json.loads(self.body)


class WireServer:
    """Serves queued replies on 127.0.0.1 on a free port; a context manager."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL of the server, without a trailing slash."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if not self.replies:
                return Reply.json(599, {"error": "the test server had no reply queued"})
            return self.replies.pop(0)

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-reply (timeout tests do) is expected, not an error."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            super().handle_error(request, client_address)


def _handler_for(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Keep the test output quiet."""

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            recorded = RecordedRequest(
                method=self.command,
                path=self.path,
                headers={key.lower(): value for key, value in self.headers.items()},
                body=body,
            )
            reply = server.next_reply(recorded)
            pieces = list(reply.body)
            # A pause before any byte delays the status line too: a slow first byte.
            while pieces and isinstance(pieces[0], Pause):
                time.sleep(pieces.pop(0).seconds)
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.send_header("transfer-encoding", "chunked")
            self.send_header("connection", "close")
            self.end_headers()
            for piece in _pieces(pieces):
                if isinstance(piece, Pause):
                    time.sleep(piece.seconds)
                    continue
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
            if not reply.drop:
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True

        do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - stdlib naming

    return Handler


def _pieces(pieces: Sequence[bytes | Pause]) -> Iterator[bytes | Pause]:
    for piece in pieces:
        if isinstance(piece, Pause) or piece:
            yield piece
