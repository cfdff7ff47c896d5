"""`deliver_now`: listeners told from sync code, in order, a failing one logged and skipped."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from chatomon.chat.activity import Activity, deliver_now


def activity() -> Activity:
    return Activity("turn_finished", "c-1", "t-1", None, {"status": "completed"})


def test_sync_and_async_listeners_hear_the_activity_in_order() -> None:
    heard: list[tuple[str, str]] = []

    def sync_listener(event: Activity) -> None:
        heard.append(("sync", threading.current_thread().name))

    async def async_listener(event: Activity) -> None:
        await asyncio.sleep(0)  # really awaited, not just called
        heard.append(("async", event.kind))

    deliver_now([sync_listener, async_listener, sync_listener], activity())
    here = threading.current_thread().name
    assert heard == [("sync", here), ("async", "turn_finished"), ("sync", here)]


def test_a_failing_listener_is_logged_by_type_and_the_rest_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[str] = []

    def failing(event: Activity) -> None:
        raise ValueError("secret user text")

    async def failing_later(event: Activity) -> None:
        await asyncio.sleep(0)
        raise KeyError("more secret text")

    with caplog.at_level(logging.ERROR, logger="chatomon.chat.activity"):
        deliver_now([failing, failing_later, lambda event: heard.append(event.turn_id)], activity())
    assert heard == ["t-1"]
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    assert "ValueError" in messages[0] and "KeyError" in messages[1]
    assert not any("secret" in message for message in messages)
