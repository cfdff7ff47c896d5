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
So does a store that cannot be reached (issue 19, item 4): `chat_error` with
`reason: "store_unavailable"`, and a turn whose close failed is recorded as aborted once
the store answers again.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatomon.chat.pipeline.activity import Activity
from chatomon.chat.store import ConversationStore
from chatomon.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    StoreUnavailableError,
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


class OutageStore:
    """`inner`, except that while `down` every call fails as an unreachable database does."""

    def __init__(self, inner: ConversationStore) -> None:
        self.inner = inner
        self.down = False

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise StoreUnavailableError("the database refuses connections")
            return await method(*args, **kwargs)

        return call


class OutageDuringTheTurn(ScriptedProvider):
    """Answers, but the store goes down while the model answers (before the turn's close)."""

    def __init__(self, store: OutageStore) -> None:
        super().__init__(["Hello there.", "Hello again."])
        self.outage = store
        self.calls = 0

    async def complete(self, messages: Any, tools: Any) -> Any:
        self.calls += 1
        self.outage.down = self.calls == 1
        async for event in super().complete(messages, tools):
            yield event


async def test_a_store_down_when_the_turn_opens_answers_store_unavailable(
    store: ConversationStore,
) -> None:
    outage = OutageStore(store)
    outage.down = True
    events = await collect(service(outage, ScriptedProvider(["Hi."])).run_turn(USER, "Hi"))
    assert events == [
        {
            "type": "error",
            "code": "chat_error",
            "message": "Something went wrong. Please try again.",
            "reason": "store_unavailable",
        }
    ]


async def test_a_turn_whose_close_fails_ends_with_an_error_and_is_aborted_once_the_store_is_back(
    store: ConversationStore,
) -> None:
    outage = OutageStore(store)
    chat = service(outage, OutageDuringTheTurn(outage))
    events = await collect(chat.run_turn(USER, "Hi"))
    assert [e["type"] for e in events] == ["text_chunk", "error"]
    assert (events[-1]["code"], events[-1]["reason"]) == ("chat_error", "store_unavailable")
    turn_id = events[-1]["turn_id"]
    assert (await store.get_turn(turn_id)).status == "running"  # not recorded: the store is down
    assert chat.driver.closer.pending == 1
    outage.down = False
    for _ in range(100):  # the first retry comes after 0.5 s
        # The closer forgets the turn just after its write returns: wait for both.
        if (await store.get_turn(turn_id)).status != "running" and not chat.driver.closer.pending:
            break
        await asyncio.sleep(0.05)
    assert (await store.get_turn(turn_id)).status == "aborted"
    assert chat.driver.closer.pending == 0
    assert [e["type"] for e in await collect(chat.run_turn(USER, "Again"))][-1] == "done"
