"""A turn whose mutation would change nothing: a tool result and an answer, no confirmation."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from pydantic import BaseModel

from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.activity import Activity
from chatomon.chat.store import ConversationStore, Owner
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.fixtures import toy_registry
from chatomon.data.mutations import mutation
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call

from .services import USER, collect, confirm_settings, service

pytestmark = pytest.mark.usefixtures("close_worker_connections")

KEEP_NAME = tool_call(
    "mutate", {"mutation": "renameMaterial", "input": {"material_id": 1, "name": "Steel"}}
)


class Membership(BaseModel):
    part_id: int
    project_id: int


def assignment_service(
    store: ConversationStore, provider: Any, log: list[dict[str, Any]], **options: Any
) -> ChatService:
    """The toy registry with addPart, whose own preview says when the part is already in."""
    registry = toy_registry()
    projects = {r["id"]: r for r in registry.managers["ProjectManager"].records or []}

    def preview(actor: Any, data: Membership) -> dict[str, Any]:
        project = projects[data.project_id]
        already = data.part_id in project["parts"]
        shown = {"action": "assign", "part": data.part_id, "project": project["name"]}
        if already:
            shown |= {"unchanged": True, "reason": f"the part is already in {project['name']}"}
        return shown

    @mutation(name="addPart", input=Membership, manager="ProjectManager", preview=preview)
    def add_part(actor: Any, data: Membership) -> dict[str, Any]:
        log.append(data.model_dump())
        return {"id": data.project_id}

    registry.register(add_part)
    settings = ToolSettings(allowed_mutations=["addPart"], confirm_mutations=["addPart"])
    return ChatService(
        store=store, provider=provider, toolset=Toolset(registry, settings), **options
    )


@pytest.mark.parametrize("staff", [False, True])
async def test_a_rename_to_the_same_name_answers_without_asking(
    store: ConversationStore, staff: bool
) -> None:
    log: list[dict[str, Any]] = []
    heard: list[Activity] = []
    provider = ScriptedProvider([[KEEP_NAME], ["Steel is already called Steel."]])
    chat = service(
        store, provider, log=log, settings=confirm_settings(staff=staff), listeners=[heard.append]
    )
    events = await collect(chat.run_turn(USER, "Rename steel to steel"))
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "text_chunk", "done"]
    result = events[1]["result"]
    assert result["status"] == "unchanged"
    assert result["reason"] == "MaterialManager #1 already has name Steel"
    assert "nothing to change" in result["message"]
    assert log == []  # nothing written
    assert await store.list_pending() == []  # nobody asked
    # The model saw the reason in the tool result it answered from.
    seen = provider.requests[1].messages[-1]
    assert seen.role == "tool" and "already has name Steel" in str(seen.content)
    turn = await store.get_turn(events[-1]["turn_id"])
    assert turn is not None and turn.status == "completed" and turn.report is not None
    assert turn.report["pauses"] == []
    steps = [(s["kind"], s["name"], s["status"]) for s in turn.report["steps"]]
    assert ("tool_call", "mutate", "unchanged") in steps
    assert "confirmation_requested" not in [a.kind for a in heard]
    outcome = next(a for a in heard if a.kind == "mutation_executed")
    assert outcome.payload["result"]["status"] == "unchanged"


async def test_a_custom_preview_that_says_unchanged_asks_nothing(
    store: ConversationStore,
) -> None:
    log: list[dict[str, Any]] = []
    provider = ScriptedProvider(
        [
            [
                tool_call(
                    "mutate", {"mutation": "addPart", "input": {"part_id": 3, "project_id": 1}}
                )
            ],
            ["Gear is already in Apollo."],
            [
                tool_call(
                    "mutate", {"mutation": "addPart", "input": {"part_id": 1, "project_id": 1}}
                )
            ],
            ["Waiting for you."],
        ]
    )
    chat = assignment_service(store, provider, log)
    first = await collect(chat.run_turn(USER, "Add the gear to Apollo"))
    assert [e["type"] for e in first][-1] == "done"
    (result,) = [e["result"] for e in first if e["type"] == "tool_result"]
    assert result["status"] == "unchanged"
    assert result["message"].startswith("the part is already in Apollo: nothing to change")
    # The same mutation for a part not yet in the project still asks the user.
    second = await collect(chat.run_turn(USER, "Add the bolt to Apollo"))
    assert [e["type"] for e in second] == ["tool_call", "confirm_mutation"]
    (pending,) = await store.list_pending()
    assert pending.id == UUID(second[-1]["id"]) and log == []
    stored = await store.messages(Owner.user(7), UUID(first[-1]["conversation_id"]))
    kinds = [m.item.kind for m in stored]
    assert kinds[:4] == ["user", "tool_calls", "tool_result", "assistant"]
