"""`LayerReceiver`: a socket's receive from a failing channel layer, and its groups rejoined."""

from __future__ import annotations

from typing import Any

from chatomon.django.transports.layer import LayerReceiver


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
