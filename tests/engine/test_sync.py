"""chat_sync works in plain code and inside a running event loop (as in Jupyter)."""

from __future__ import annotations

import asyncio
import threading

from chatomon import Atom
from tests.engine.conftest import ScriptNucleus


def test_chat_sync_without_a_loop() -> None:
    result = Atom("a", ScriptNucleus()).chat_sync("Hi")
    assert result.reply == "Hello!"
    assert result.report.final_action == "answered"


async def test_chat_sync_inside_a_running_loop() -> None:
    threads: list[str] = []

    def nucleus(messages, guidance):
        threads.append(threading.current_thread().name)
        return "from a sync call"

    result = Atom("a", nucleus).chat_sync("Hi")
    assert result.reply == "from a sync call"
    assert threads[0].startswith("chatomon-sync")
    assert asyncio.get_running_loop().is_running()


async def test_top_level_await_style_use() -> None:
    atom = Atom("a", ScriptNucleus())
    first, second = await asyncio.gather(atom.chat("one"), atom.chat("two"))
    assert first.report.turn_id != second.report.turn_id
