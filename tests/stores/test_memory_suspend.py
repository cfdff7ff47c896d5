"""MemoryStore.suspend_turn and close_turn are one unit of work: all of it stored or none."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from chatomon.chat.store import MemoryStore, MessageItem, Owner
from chatomon.errors import TurnTransitionError
from tests.stores.conftest import NOW
from tests.stores.test_suspend import asked

OWNER = Owner.session("m" * 40)


class Uncopyable:
    """A tool result that cannot be copied: the store fails while appending it."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Uncopyable:
        raise RuntimeError("cannot copy")


BROKEN = [MessageItem.user("Add a bolt"), MessageItem.tool_result("c1", "query", Uncopyable())]


async def opened(store: MemoryStore) -> tuple[Any, str]:
    """A conversation with one running turn."""
    turn = await store.open_turn(OWNER, None, now=NOW)
    assert turn is not None
    return turn.conversation.id, turn.turn.id


async def test_a_suspension_failing_on_its_items_stores_no_confirmation() -> None:
    store = MemoryStore()
    conversation_id, turn_id = await opened(store)
    with pytest.raises(RuntimeError, match="cannot copy"):
        await store.suspend_turn(OWNER, conversation_id, turn_id, items=BROKEN, **asked())
    assert await store.list_pending(now=NOW) == []
    assert await store.messages(OWNER, conversation_id) == []
    turn = await store.get_turn(turn_id)
    assert turn is not None and turn.status == "running"


async def test_a_close_failing_on_its_items_leaves_the_turn_running() -> None:
    store = MemoryStore()
    conversation_id, turn_id = await opened(store)
    with pytest.raises(RuntimeError, match="cannot copy"):
        await store.close_turn(OWNER, conversation_id, turn_id, items=BROKEN, status="completed")
    assert await store.messages(OWNER, conversation_id) == []
    turn = await store.get_turn(turn_id)
    assert turn is not None and turn.status == "running"


@pytest.fixture
def _switch_often() -> Iterator[None]:
    """Let threads interleave between almost any two bytecodes, to widen every race."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def race(store: MemoryStore) -> tuple[Any, str, BaseException | None]:
    """Suspend a new turn while another thread aborts it: the ids and the suspension's error."""
    conversation_id, turn_id = asyncio.run(opened(store))
    start = threading.Barrier(2)
    outcome: list[BaseException | None] = []

    def suspend() -> None:
        start.wait()
        try:
            asyncio.run(
                store.suspend_turn(
                    OWNER, conversation_id, turn_id, items=[MessageItem.user("x")], **asked()
                )
            )
            outcome.append(None)
        except TurnTransitionError as error:
            outcome.append(error)

    def abort() -> None:
        start.wait()
        asyncio.run(store.update_turn(turn_id, status="aborted"))

    threads = [threading.Thread(target=suspend), threading.Thread(target=abort)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(outcome) == 1
    return conversation_id, turn_id, outcome[0]


@pytest.mark.usefixtures("_switch_often")
def test_a_turn_aborted_during_its_suspension_keeps_no_pending_confirmation() -> None:
    store = MemoryStore()
    refused = 0
    for _ in range(300):
        conversation_id, turn_id, error = race(store)
        if error is not None:  # the abort came first: the suspension stored nothing
            refused += 1
            left = [c for c in asyncio.run(store.list_pending(now=NOW)) if c.turn_id == turn_id]
            assert left == []
            assert asyncio.run(store.messages(OWNER, conversation_id)) == []
    assert refused > 0  # the race was run both ways
