"""The four chat signals, sent from ChatService activities with robust delivery."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chatomon.chat.pipeline import ChatService
from chatomon.chat.store import MemoryStore
from chatomon.django.audit.signals import (
    chat_error,
    chat_message_received,
    chat_mutation_executed,
    chat_tool_called,
    send_activity,
    send_chat_error,
)
from chatomon.providers import FunctionProvider, ScriptedProvider
from tests.chat.services import RENAME, USER, collect, confirm_settings, service


@pytest.fixture
def heard() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Every signal sent while the test runs, with its keyword arguments."""
    received: list[tuple[str, dict[str, Any]]] = []
    signals = {
        "chat_message_received": chat_message_received,
        "chat_tool_called": chat_tool_called,
        "chat_mutation_executed": chat_mutation_executed,
        "chat_error": chat_error,
    }
    receivers = {}
    for name, signal in signals.items():

        def receiver(sender: Any, _name: str = name, **kwargs: Any) -> None:
            assert sender is ChatService
            received.append((_name, kwargs))

        receivers[name] = receiver
        signal.connect(receiver)
    yield received
    for name, signal in signals.items():
        signal.disconnect(receivers[name])


def names(heard: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [name for name, _ in heard]


@pytest.mark.parametrize(
    ("confirmed", "reply", "status"),
    [(True, "Done.", "executed"), (False, "Left as is.", "rejected")],
)
async def test_a_decided_mutation_sends_message_tool_and_mutation_signals(
    heard: list[tuple[str, dict[str, Any]]], confirmed: bool, reply: str, status: str
) -> None:
    chat = service(
        MemoryStore(),
        ScriptedProvider([[RENAME], [reply]]),
        settings=confirm_settings(),
        listeners=[send_activity],
    )
    pending = (await collect(chat.run_turn(USER, "Rename steel")))[-1]
    await collect(chat.resolve_confirmation(USER, pending["id"], confirmed))
    assert names(heard) == ["chat_message_received", "chat_tool_called", "chat_mutation_executed"]
    message, tool, mutation = (kwargs for _, kwargs in heard)
    assert message["text"] == "Rename steel" and message["user"] is USER
    assert message["conversation_id"] == pending["conversation_id"]
    assert tool["name"] == "mutate" and tool["call_id"] == pending["call_id"]
    assert tool["result"]["status"] == status
    assert mutation["mutation"] == "renameMaterial"
    assert mutation["input"] == {"material_id": 1, "name": "Iron"}
    assert mutation["result"]["status"] == status
    assert mutation["turn_id"] == pending["turn_id"]


async def test_a_provider_failure_sends_chat_error_with_the_exception(
    heard: list[tuple[str, dict[str, Any]]],
) -> None:
    def broken(messages: Any, tools: Any) -> str:
        raise RuntimeError("vendor exploded: key sk-123")

    chat = service(MemoryStore(), FunctionProvider(broken), listeners=[send_activity])
    events = await collect(chat.run_turn(USER, "Hi"))
    assert events[-1]["code"] == "chat_error" and "sk-123" not in str(events)
    (error,) = [kwargs for name, kwargs in heard if name == "chat_error"]
    assert error["code"] == "chat_error"
    assert isinstance(error["exception"], RuntimeError)


async def test_a_failing_receiver_breaks_neither_the_turn_nor_other_receivers(
    heard: list[tuple[str, dict[str, Any]]], caplog: pytest.LogCaptureFixture
) -> None:
    def failing(sender: Any, **kwargs: Any) -> None:
        raise ValueError("receiver bug")

    chat_message_received.connect(failing)
    try:
        chat = service(MemoryStore(), ScriptedProvider([["Hello."]]), listeners=[send_activity])
        events = await collect(chat.run_turn(USER, "Hi"))
    finally:
        chat_message_received.disconnect(failing)
    assert events[-1]["type"] == "done"
    assert names(heard) == ["chat_message_received"]
    assert "receiver bug" in caplog.text  # Django's send_robust logs it


def test_a_transport_failure_can_be_signalled_outside_a_turn(
    heard: list[tuple[str, dict[str, Any]]],
) -> None:
    failure = OSError("socket closed")
    send_chat_error("chat_error", "Something went wrong.", exception=failure)
    assert heard == [
        (
            "chat_error",
            {
                "code": "chat_error",
                "message": "Something went wrong.",
                "exception": failure,
                "user": None,
                "conversation_id": None,
                "turn_id": None,
                "signal": chat_error,
            },
        )
    ]
