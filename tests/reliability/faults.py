"""Faults the reliability suite injects: a loopback TCP proxy that can refuse connections.

`TcpProxy(("127.0.0.1", 5432)).start()` listens on a free loopback port and relays every
connection to the target. `cut()` is an outage as a client sees a stopped or unreachable
database: the listening socket closes (new connections are refused) and every relayed
connection is cut. `restore()` listens again on the same port. `drop()` cuts the live
connections but keeps accepting (a failover, an idle timeout). `stop()` ends it all; a
`with TcpProxy(...) as proxy:` block stops it on exit. Threads, not asyncio, so sync and
async tests (and the server processes behind them) use it alike.

The machine's PostgreSQL is never stopped: the servers under test reach it through the
proxy (`proxied_url`), and the test cuts the proxy.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

from tests.asgi_app.servers import migrate, postgres_database, server_environment

__all__ = ["TcpProxy", "migrated_database", "proxied_url", "target_of"]

_CHUNK = 65536


class TcpProxy:
    """A loopback TCP relay to `target`, with an outage switch (see the module docstring)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._lock = threading.Lock()
        self._stopped = False
        self.accepted = 0
        """Connections relayed so far (a test can see that a client reconnected)."""

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> TcpProxy:
        """Listen (on a free port the first time, on the same port after a `cut`)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def cut(self) -> None:
        """Refuse new connections and cut every relayed one (the database is unreachable)."""
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            _close(listener)
        self.drop()

    def restore(self) -> None:
        """Accept connections again, on the same port."""
        if self._listener is None and not self._stopped:
            self.start()

    def drop(self) -> None:
        """Cut every relayed connection; new ones are still accepted."""
        with self._lock:
            pairs, self._pairs = self._pairs, set()
        for client, upstream in pairs:
            _close(client)
            _close(upstream)

    def stop(self) -> None:
        """Stop listening and cut everything, for good."""
        self._stopped = True
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # the listener was closed: cut() or stop()
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            pair = (client, upstream)
            with self._lock:
                if self._listener is not listener:  # cut while connecting
                    _close(client)
                    _close(upstream)
                    return
                self._pairs.add(pair)
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, upstream, pair), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, pair), daemon=True).start()

    def _pump(
        self, source: socket.socket, sink: socket.socket, pair: tuple[socket.socket, socket.socket]
    ) -> None:
        try:
            while data := source.recv(_CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        # One side ended: so does the other (as a dead server's connection would).
        with self._lock:
            self._pairs.discard(pair)
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def proxied_url(url: str, proxy: TcpProxy) -> str:
    """`url` (postgresql://...) with its host and port replaced by the proxy's.

    Examples:
        >>> proxy = TcpProxy(("127.0.0.1", 5432))
        >>> proxy.port = 6000
        >>> proxied_url("postgresql://postgres@127.0.0.1:5432/db?pool=off", proxy)
        'postgresql://postgres@127.0.0.1:6000/db?pool=off'
    """
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    if parts.password:
        user = f"{parts.username}:{parts.password}@"
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}"))


def target_of(url: str) -> tuple[str, int]:
    """The host and port a postgresql:// URL names."""
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 5432


@contextmanager
def migrated_database(label: str, directory: Path) -> Iterator[str]:
    """The URL of a migrated database of its own for server processes; dropped after.

    PostgreSQL (beside DATABASE_URL's) when DATABASE_URL names it, else a SQLite file in
    `directory` that several processes may open.
    """
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        with postgres_database(label) as url:
            migrate(server_environment(DATABASE_URL=url))
            yield url
    else:
        url = f"sqlite:///{directory / f'{label}.sqlite3'}"
        migrate(server_environment(DATABASE_URL=url))
        yield url
