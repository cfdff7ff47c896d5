"""Planned turns over POST chat/, SSE and WebSocket: the same ChatService, the same events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import AsyncClient

from chatomon.django.models import Turn
from tests.asgi_app.fixtures import configure, make_part, sse_events, types

from .test_consumer import open_socket, send, until_terminal

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
ROLE = "tests.asgi_app.providers.RoleProvider"
ROLES = ("planner", "simple_executor", "complex_executor", "synthesizer", "fallback_executor")


def planned(settings: Any, **planned_options: Any) -> None:
    """CHATOMON with planned turns: one RoleProvider profile per role, one trust group."""
    configure(
        settings,
        provider_profiles={
            role: {"provider": ROLE, "provider_config": {"role": role}, "trust_group": "test"}
            for role in ROLES
        },
        planned={"enabled": True, "roles": {role: role for role in ROLES}, **planned_options},
    )


async def post(path: str, payload: dict[str, Any], client: AsyncClient | None = None) -> Any:
    client = client or AsyncClient()
    return await client.post(path, json.dumps(payload), content_type="application/json")


async def test_post_chat_answers_a_planned_read_with_task_ids_and_coverage(settings: Any) -> None:
    planned(settings)
    await make_part()
    body = (await post("/chat/", {"text": "Which PartManager and MaterialManager rows?"})).json()
    events = body["events"]
    # Two concurrent tasks: each task's call comes before its result, in any interleaving.
    assert sorted(types(events)[:4]) == ["tool_call", "tool_call", "tool_result", "tool_result"]
    assert types(events)[4:] == ["text_chunk", "text_chunk", "done"]
    assert {e["task_id"] for e in events if e["type"] == "tool_call"} == {"t1", "t2"}
    done = events[-1]
    assert done["type"] == "done"
    assert done["coverage"] == {"status": "complete", "resolved": 2, "total": 2, "unresolved": []}
    assert body["answer"].startswith("Planned answer")
    turn = await Turn.objects.aget(pk=done["turn_id"])
    assert turn.report["planned"]["intent"] == "read"
    assert [t["status"] for t in turn.report["planned"]["tasks"]] == ["resolved", "resolved"]


async def test_sse_streams_a_planned_read(settings: Any) -> None:
    planned(settings)
    response = await post("/chat/stream/", {"text": "Which PartManager rows?"})
    body = b"".join([chunk async for chunk in response.streaming_content])
    events = sse_events(body)
    assert types(events)[-1] == "done"
    assert events[0]["type"] == "tool_call" and events[0]["task_id"] == "t1"
    assert events[-1]["coverage"]["status"] == "complete"


async def test_a_websocket_runs_a_planned_read(settings: Any) -> None:
    planned(settings)
    socket = await open_socket()
    await send(socket, {"type": "message", "text": "Which MaterialManager rows?"})
    events = await until_terminal(socket)
    assert events[-1]["type"] == "done"
    assert [e["task_id"] for e in events if e["type"] == "tool_result"] == ["t1"]
    await socket.disconnect()


async def test_a_mutation_plan_runs_the_tool_loop_and_its_confirmation(settings: Any) -> None:
    planned(settings)
    socket = await open_socket()
    await send(socket, {"type": "message", "text": 'mutate createPart {"name": "Nut"}'})
    events = await until_terminal(socket)
    assert types(events) == ["tool_call", "confirm_mutation"]
    assert "task_id" not in events[0]
    await socket.disconnect()


async def test_a_client_payload_cannot_choose_a_profile(settings: Any) -> None:
    planned(settings)
    response = await post(
        "/chat/",
        {"text": "Which PartManager rows?", "provider_profile": "planner", "trust_group": "x"},
    )
    # Unknown payload fields change nothing: the configured roles answer as always.
    assert response.json()["events"][-1]["coverage"]["status"] == "complete"


async def test_planned_audit_events_name_their_turn(settings: Any) -> None:
    seen: list[dict[str, Any]] = []
    planned(settings)
    settings.CHATOMON = {
        **settings.CHATOMON,
        "audit": {"enabled": True, "level": "all", "logger": seen.append},
    }
    done = (await post("/chat/", {"text": "Which PartManager rows?"})).json()["events"][-1]
    rows = [event for event in seen if event["type"] == "planned"]
    assert {row["payload"]["event"] for row in rows} >= {"planned_plan", "planned_turn"}
    assert all(row["turn_id"] == done["turn_id"] for row in rows)
    assert all(row["conversation_id"] == done["conversation_id"] for row in rows)
    assert "PartManager" not in repr(rows)  # the allowlist: no manager names
