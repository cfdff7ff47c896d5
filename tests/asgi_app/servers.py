"""Real ASGI server processes for the tests: uvicorn serving the test project on loopback.

`AsgiServer(env).start()` picks a free port, starts `uvicorn tests.asgi_app.asgi:application`
in a child process and waits until it answers; `stop()` ends it. `Visitor` is one browser:
an httpx client with its cookie jar (session, CSRF), and WebSocket connections carrying
the same cookies. `postgres_database` gives servers a PostgreSQL database of their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import httpx
from websockets.asyncio.client import ClientConnection, connect

from chatomon.chat.pipeline.wire import TERMINAL_TYPES

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = "tests.asgi_app.settings"


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def server_environment(**values: str) -> dict[str, str]:
    """The environment of a server process: this one's, the test settings, `values`."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DJANGO_SETTINGS_MODULE=SETTINGS, PYTHONPATH=str(ROOT), **values)
    return env


def run_admin(admin_url: str, statement: str) -> None:
    """Run one statement outside a transaction (CREATE and DROP DATABASE need that)."""
    import psycopg  # noqa: PLC0415

    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(statement)


def admin_url(url: str) -> str:
    """The URL of the `postgres` maintenance database on the server of `url`."""
    return urlunsplit(urlsplit(url)._replace(path="/postgres", query=""))


@contextmanager
def postgres_database(label: str) -> Iterator[str]:
    """A new database beside DATABASE_URL's on its PostgreSQL server: its URL; dropped after."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    name = f"{parts.path.lstrip('/') or 'chatomon'}_{label}_{uuid4().hex[:8]}"
    admin = admin_url(os.environ["DATABASE_URL"])
    run_admin(admin, f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        run_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def migrate(env: Mapping[str, str]) -> None:
    """Create the tables of the database `env` names."""
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--verbosity", "0"],
        env=dict(env),
        cwd=ROOT,
        check=True,
    )


class AsgiServer:
    """One uvicorn process serving the test project."""

    def __init__(self, env: Mapping[str, str], log: Path | None = None) -> None:
        self.env = dict(env)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = log
        """Where the process's stderr (its log) goes; None: this process's stderr."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> AsgiServer:
        command = [
            sys.executable, "-m", "uvicorn", "tests.asgi_app.asgi:application",
            "--host", "127.0.0.1", "--port", str(self.port),
            "--log-level", "warning", "--lifespan", "off", "--ws", "websockets-sansio",
        ]  # fmt: skip
        stderr = self.log.open("ab") if self.log is not None else None
        try:
            self.process = subprocess.Popen(command, env=self.env, cwd=ROOT, stderr=stderr)
        finally:
            if stderr is not None:
                stderr.close()  # the child holds its own copy
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the ASGI server exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}/test/csrf/", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the ASGI server did not answer in time")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process = None


class Visitor:
    """One browser of the test project: cookies shared by HTTP and WebSocket requests."""

    def __init__(self) -> None:
        self.cookies = httpx.Cookies()

    def client(self, server: AsgiServer) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=server.url, cookies=self.cookies, timeout=30)

    async def log_in(self, server: AsgiServer, username: str) -> None:
        async with self.client(server) as client:
            response = await client.post("/test/login/", json={"username": username})
            response.raise_for_status()
            self.cookies.update(response.cookies)

    async def csrf_headers(self, server: AsgiServer) -> dict[str, str]:
        async with self.client(server) as client:
            response = await client.get("/test/csrf/")
            self.cookies.update(response.cookies)
            return {"X-CSRFToken": response.json()["token"]}

    async def post(self, server: AsgiServer, path: str, payload: Any) -> httpx.Response:
        headers = await self.csrf_headers(server)
        async with self.client(server) as client:
            response = await client.post(path, json=payload, headers=headers)
            self.cookies.update(response.cookies)
            return response

    def socket(self, server: AsgiServer, path: str = "/chat/") -> Any:
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        headers = {"Cookie": cookie} if cookie else {}
        return connect(server.ws_url + path, origin=server.url, additional_headers=headers)


async def receive_until_terminal(
    socket: ClientConnection, wait: float = 10
) -> list[dict[str, Any]]:
    """Events from `socket` up to and including the next terminal one."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(wait):
        while not events or events[-1]["type"] not in TERMINAL_TYPES:
            events.append(json.loads(await socket.recv()))
    return events


async def latest_turn_status(server: AsgiServer, awaited: str, wait: float = 5) -> str | None:
    """The status of the newest turn once it is `awaited`, or the last one seen after `wait`."""
    status = None
    async with httpx.AsyncClient(base_url=server.url) as client:
        for _ in range(int(wait / 0.05)):
            turns = (await client.get("/test/turns/")).json()["turns"]
            status = turns[0]["status"] if turns else None
            if status == awaited:
                break
            await asyncio.sleep(0.05)
    return status


async def staff_approval_over_socket(
    asking: AsgiServer, deciding: AsgiServer, username: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`username`'s socket on `asking` waits for a staff approval decided through `deciding`.

    Returns the envelope events of the staff decision and the events the socket then
    received, up to the terminal one.
    """
    visitor = Visitor()
    await visitor.log_in(asking, username)
    async with httpx.AsyncClient(base_url=deciding.url) as client:
        part = (await client.post("/test/seed/")).json()["id"]
    async with visitor.socket(asking) as socket:
        text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "3.00"}}'
        await socket.send(json.dumps({"type": "message", "text": text}))
        waiting = (await receive_until_terminal(socket))[-1]
        assert waiting["type"] == "confirm_mutation" and waiting["approver"] == "staff"
        async with httpx.AsyncClient(base_url=deciding.url) as staff:
            decision = {"confirmation_id": waiting["id"], "confirmed": True}
            decided = (await staff.post("/test/staff/decide/", json=decision)).json()["events"]
        return decided, await receive_until_terminal(socket)
