"""A failed turn reaches the client with a stable public error, never the exception's text.

Reference (planned read orchestration): "Stable planned error codes are invalid_plan,
manager_unresolved, dependency_blocked, budget_exhausted, deadline_exceeded,
provider_failed, and synthesis_failed. Their messages are stable and do not include
profiles, trust groups, catalog data, plans, or exceptions. Other exceptions remain the
generic chat_error mapping." And: "public_chat_error(exc) preserves an exception's valid
public_reason, maps a plain TimeoutError to deadline_exceeded, and maps other unexpected
exceptions to chat_error."

The pipeline's failure path (`TurnDriver.failed`) is the one place every surface gets its
error event from, so these hold for HTTP, SSE, WebSocket, the console and the widget.
"""

from __future__ import annotations

import pytest

from chatomon.chat.pipeline.activity import Activity
from chatomon.chat.store import ConversationStore
from chatomon.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call

from .services import USER, collect, confirm_settings, service

pytestmark = pytest.mark.usefixtures("close_worker_connections")

SECRET = "key sk-live-123 at https://internal.example"
PROVIDER_FAILED = "The provider could not complete the request."
DEADLINE = "The request reached its time limit."


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (ProviderError(SECRET, provider="vendor"), ("provider_failed", PROVIDER_FAILED, None)),
        (
            ProviderUnavailableError(SECRET, provider="vendor"),
            ("provider_failed", PROVIDER_FAILED, "provider_unavailable"),
        ),
        (
            ProviderAuthError(SECRET, provider="vendor"),
            ("provider_failed", PROVIDER_FAILED, "provider_auth"),
        ),
        (
            ProviderRateLimitError(SECRET, provider="vendor", retry_after_seconds=9),
            ("provider_failed", PROVIDER_FAILED, "provider_rate_limited"),
        ),
        (
            ProviderTimeoutError(SECRET, provider="vendor"),
            ("deadline_exceeded", DEADLINE, "provider_timeout"),
        ),
        (TimeoutError(SECRET), ("deadline_exceeded", DEADLINE, None)),
        (
            RuntimeError(SECRET),
            ("chat_error", "Something went wrong. Please try again.", None),
        ),
    ],
)
async def test_a_failed_turn_ends_with_its_public_error(
    store: ConversationStore, failure: Exception, expected: tuple[str, str, str | None]
) -> None:
    chat = service(store, ScriptedProvider([failure]))
    (error,) = await collect(chat.run_turn(USER, "Hi"))
    code, message, reason = expected
    assert (error["type"], error["code"], error["message"]) == ("error", code, message)
    assert error.get("reason") == reason
    assert "sk-live" not in str(error) and "internal.example" not in str(error)
    turn = await store.get_turn(error["turn_id"])
    assert turn is not None and turn.status == "aborted"


async def test_a_provider_failure_after_a_tool_round_keeps_the_streamed_events(
    store: ConversationStore,
) -> None:
    provider = ScriptedProvider(
        [
            [tool_call("search_managers", {"query": "parts"})],
            ProviderUnavailableError(SECRET, provider="v"),
        ]
    )
    events = await collect(service(store, provider).run_turn(USER, "Which parts?"))
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "error"]
    assert (events[-1]["code"], events[-1]["reason"]) == ("provider_failed", "provider_unavailable")


async def test_the_listeners_hear_the_public_code_and_the_exception(
    store: ConversationStore,
) -> None:
    # Reference: "Unexpected internal exceptions are reported as the generic chat_error
    # event and are emitted through the chat error signal for server-side observability."
    # The exception goes to the listeners (signals, audit), never to the client.
    heard: list[Activity] = []

    async def listen(activity: Activity) -> None:
        heard.append(activity)

    failure = ProviderTimeoutError(SECRET, provider="vendor")
    chat = service(store, ScriptedProvider([failure]), listeners=[listen])
    await collect(chat.run_turn(USER, "Hi"))
    (error,) = [activity for activity in heard if activity.kind == "error"]
    assert error.payload["code"] == "deadline_exceeded"
    assert error.payload["message"] == DEADLINE
    assert error.payload["exception"] is failure


async def test_a_resumed_turn_that_fails_gets_the_same_public_error(
    store: ConversationStore,
) -> None:
    rename = tool_call(
        "mutate", {"mutation": "renameMaterial", "input": {"material_id": 1, "name": "Iron"}}
    )
    provider = ScriptedProvider([[rename], ProviderAuthError(SECRET, provider="vendor")])
    chat = service(store, provider, settings=confirm_settings())
    pending = (await collect(chat.run_turn(USER, "Rename steel")))[-1]
    events = await collect(chat.resolve_confirmation(USER, pending["id"], True))
    assert [e["type"] for e in events] == ["confirmation_resolved", "tool_result", "error"]
    assert (events[-1]["code"], events[-1]["reason"]) == ("provider_failed", "provider_auth")
    assert "sk-live" not in str(events[-1])
