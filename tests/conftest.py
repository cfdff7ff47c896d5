"""Suite-wide fixtures: no test reaches the network; the reliability ledger's table at the end."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from tests.ledger import Ledger

_real_connect = socket.socket.connect


def _is_loopback(address: Any) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return isinstance(address, str | bytes)  # AF_UNIX sockets stay on this machine


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that opens a connection to anything but loopback."""

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if not _is_loopback(address):
            raise AssertionError(f"test tried to reach the network: {address!r}")
        _real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


_LEDGER_KEY = pytest.StashKey[Ledger]()


@pytest.fixture(scope="session")
def ledger(pytestconfig: pytest.Config) -> Ledger:
    """The session's ledger of faults, cases and running turns (see `tests.ledger`)."""
    return pytestconfig.stash.setdefault(_LEDGER_KEY, Ledger())


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the ledger's table when the reliability or security suites recorded into it."""
    lines = config.stash.get(_LEDGER_KEY, Ledger()).lines()
    if lines:
        terminalreporter.section("reliability and security summary")
        for line in lines:
            terminalreporter.write_line(line)
