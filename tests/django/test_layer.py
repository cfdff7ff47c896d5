"""`LayerReceiver`: a socket's receive from a failing channel layer, and its groups rejoined;
`EitherReceive`: the client's frames and the layer's messages as one receive; the user
group a logout closes (`user_group`)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from chatomon.django.service import user_group
from chatomon.django.transports.layer import EitherReceive, LayerReceiver, attempt

GROUP_NAME = re.compile(r"[A-Za-z0-9._-]+")
"""What Channels accepts in a group name (below 100 characters)."""


class Layer:
    """A channel layer that fails `down` receives and `down_rejoins` rejoins, then answers."""

    def __init__(self, down: int, down_rejoins: int) -> None:
        self.down, self.down_rejoins = down, down_rejoins
        self.log: list[str] = []

    async def receive(self) -> dict[str, Any]:
        if self.down > 0:
            self.down -= 1
            self.log.append("receive failed")
            raise ConnectionError("Redis refused the connection")
        self.log.append("received")
        return {"type": "chat.event"}

    async def rejoin(self) -> bool:
        if self.down_rejoins > 0:
            self.down_rejoins -= 1
            self.log.append("rejoin failed")
            return False
        self.log.append("rejoined")
        return True


async def test_a_failed_receive_rejoins_the_groups_before_the_next_one() -> None:
    layer = Layer(down=1, down_rejoins=0)
    assert await LayerReceiver(layer.receive, layer.rejoin)() == {"type": "chat.event"}
    assert layer.log == ["receive failed", "rejoined", "received"]


async def test_no_receive_before_the_rejoin_took_after_the_layer_came_back() -> None:
    # The layer came back between a rejoin that failed and the next receive: that receive
    # would wait on groups the socket is not in (lost with a Redis restart) for good.
    layer = Layer(down=1, down_rejoins=1)
    assert await LayerReceiver(layer.receive, layer.rejoin)() == {"type": "chat.event"}
    assert layer.log == ["receive failed", "rejoin failed", "rejoined", "received"]


def test_each_user_has_a_group_of_their_own() -> None:
    # A logout closes every socket in the user's group: two primary keys that made the same
    # group name ("a b" and "a_b" once their unsafe characters were replaced, or two long
    # keys cut at one length) closed each other's sockets.
    keys: list[object] = [42, "42", "a b", "a_b", "a/b", "x" * 90, "x" * 91, "é", "e"]
    groups = {key: user_group(key) for key in keys}
    assert len(set(groups.values())) == len(keys) - 1  # 42 and "42" are one key
    assert groups[42] == groups["42"] == "chatomon.user.42"
    assert all(len(name) < 100 and GROUP_NAME.fullmatch(name) for name in groups.values())


async def test_a_layer_call_that_never_answers_counts_as_failed() -> None:
    """A Redis that neither answers nor refuses holds no logout or decision for long."""
    never = asyncio.get_running_loop().create_future()
    started = time.monotonic()
    assert await attempt("publishing", never, seconds=0.2) is False
    assert time.monotonic() - started < 5
    assert never.cancelled()
    assert await attempt("publishing", asyncio.sleep(0), seconds=0.2) is True


class Source:
    """A receive that answers with the messages put into it, counting its calls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.calls = 0
        self.cancelled = 0

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        try:
            return await self.queue.get()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


async def test_either_receive_keeps_the_slower_receive_for_the_next_call() -> None:
    client, layer = Source("client"), Source("layer")
    either = EitherReceive([client, layer])
    layer.queue.put_nowait({"type": "chat.event", "n": 1})
    assert await either() == {"type": "chat.event", "n": 1}
    client.queue.put_nowait({"type": "websocket.receive"})
    assert await either() == {"type": "websocket.receive"}
    # The client's receive waited across the first call: asked once, never cancelled.
    assert (client.calls, client.cancelled) == (1, 0)
    await either.aclose()


async def test_either_receive_hands_the_client_first_when_both_have_a_message() -> None:
    client, layer = Source("client"), Source("layer")
    either = EitherReceive([client, layer])
    layer.queue.put_nowait({"type": "chat.event"})
    client.queue.put_nowait({"type": "websocket.disconnect"})
    assert [await either(), await either()] == [
        {"type": "websocket.disconnect"},
        {"type": "chat.event"},
    ]
    await either.aclose()


async def test_either_receive_cancels_what_still_waits_when_closed() -> None:
    client, layer = Source("client"), Source("layer")
    either = EitherReceive([client, layer])
    client.queue.put_nowait({"type": "websocket.disconnect"})
    await either()
    await either.aclose()
    assert (client.cancelled, layer.cancelled) == (0, 1)


async def test_either_receive_lets_no_source_hold_the_other_back() -> None:
    client, layer = Source("client"), Source("layer")
    for frame in range(1000):  # a client sending frames without pause
        client.queue.put_nowait({"type": "websocket.receive", "n": frame})
    layer.queue.put_nowait({"type": "chat.logout"})
    either = EitherReceive([client, layer])
    first = [(await either())["type"] for _ in range(3)]
    assert first == ["websocket.receive", "chat.logout", "websocket.receive"]
    await either.aclose()


async def test_either_receive_raises_a_sources_failure_and_still_closes() -> None:
    async def broken() -> dict[str, Any]:
        raise ConnectionResetError("the client went away")

    layer = Source("layer")
    either = EitherReceive([broken, layer])
    with pytest.raises(ConnectionResetError):
        await either()
    await either.aclose()
    assert layer.cancelled == 1
