"""The wire server itself: streaming, pauses, drops, recording."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.providers.wire.server import Pause, Reply, WireServer


def test_streams_pieces_with_pauses_and_records_requests() -> None:
    with WireServer() as server:
        server.push(Reply(headers={"content-type": "text/plain"}, body=[b"a", Pause(0.4), b"b"]))
        started = time.perf_counter()
        with httpx.stream("POST", server.url + "/v1/x", json={"k": 1}) as response:
            pieces = [(piece, time.perf_counter() - started) for piece in response.iter_raw()]
        assert [p for p, _ in pieces] == [b"a", b"b"], "each piece is flushed on its own"
        assert pieces[1][1] - pieces[0][1] >= 0.2, "the pause separates them"
        (request,) = server.requests
        assert (request.method, request.path, request.json()) == ("POST", "/v1/x", {"k": 1})


def test_drop_is_an_incomplete_body() -> None:
    with WireServer() as server:
        server.push(Reply(body=[b"partial"], drop=True))
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(server.url).read()


def test_missing_reply_is_a_599() -> None:
    with WireServer() as server:
        assert httpx.get(server.url).status_code == 599
