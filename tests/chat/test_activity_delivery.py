"""`deliver`: listeners hear every activity in order; a failing one is logged and skipped."""

from __future__ import annotations

import asyncio
import logging

import pytest

from chatomon.chat.pipeline.activity import Activity, deliver


def activity() -> Activity:
    return Activity("turn_finished", "c-1", "t-1", None, {"status": "completed"})


async def test_sync_and_async_listeners_hear_the_activity_in_order() -> None:
    heard: list[str] = []

    def sync_listener(event: Activity) -> None:
        heard.append("sync")

    async def async_listener(event: Activity) -> None:
        await asyncio.sleep(0)  # really awaited, not just called
        heard.append(f"async {event.kind}")

    await deliver([sync_listener, async_listener, sync_listener], activity())
    assert heard == ["sync", "async turn_finished", "sync"]


async def test_a_failing_listener_is_logged_by_type_and_the_rest_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[str] = []

    def failing(event: Activity) -> None:
        raise ValueError("secret user text")

    async def failing_later(event: Activity) -> None:
        await asyncio.sleep(0)
        raise KeyError("more secret text")

    with caplog.at_level(logging.ERROR, logger="chatomon.chat.pipeline.activity"):
        await deliver(
            [failing, failing_later, lambda event: heard.append(event.turn_id)], activity()
        )
    assert heard == ["t-1"]
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    assert "ValueError" in messages[0] and "KeyError" in messages[1]
    assert not any("secret" in message for message in messages)
