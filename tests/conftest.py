"""Suite-wide fixtures: no test reaches the network."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

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
