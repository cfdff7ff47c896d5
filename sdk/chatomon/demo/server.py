"""Serving the demo with uvicorn in the foreground until Ctrl-C.

The socket is bound here, before uvicorn starts, so that port 0 (any free port) works and
the log line shows the real address; tests rely on that line.
"""

from __future__ import annotations

import logging
import socket

import uvicorn

__all__ = ["bind", "serve"]

logger = logging.getLogger("chatomon.demo")

SHUTDOWN_GRACE_SECONDS = 3
"""Open SSE streams and WebSockets never end by themselves: cut them after this."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (IPv6 when the host is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(host: str, port: int, *, chat_problem: str | None = None) -> None:
    """Serve the demo's ASGI application until interrupted (returns after a clean stop).

    With `chat_problem` (why the chat provider cannot answer), the serving line says the
    console works but chat does not, and why, rather than only "serving".
    """
    from chatomon.demo.asgi import application  # noqa: PLC0415 - after django.setup()

    sock = bind(host, port)
    config = uvicorn.Config(
        application,
        lifespan="off",  # Django's ASGI handler speaks no lifespan protocol
        log_config=None,  # the demo settings' LOGGING formats every line
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        ws="websockets-sansio",
    )
    url = _url(sock)
    logger.info("serving on %s  (console: %s/console/, Ctrl-C stops)", url, url)
    if chat_problem is not None:
        logger.warning("the console and data work; chat does not until fixed: %s", chat_problem)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        # uvicorn shut down cleanly, then re-raised the Ctrl-C it caught: that is the end.
        pass
    finally:
        sock.close()
    logger.info("stopped")
