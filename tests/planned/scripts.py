"""Scripted roles for planned-turn tests: plans as JSON, executors keyed by task question."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chatomon.chat.pipeline import AtomConfig, ChatService
from chatomon.chat.store import MemoryStore
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.planned import REQUIRED_ROLES, PlannedTurns, get_planned_chat_settings
from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.testing import FunctionProvider, ScriptedProvider
from tests.chat.services import service

USER = SimpleActor(id=7, is_authenticated=True)


def task(
    task_id: str,
    question: str,
    *,
    manager: str | None = None,
    needs: Sequence[Mapping[str, Any]] = ({"kind": "query"},),
    depends_on: Sequence[str] = (),
) -> dict[str, Any]:
    """One task of a plan, in the planner's JSON shape."""
    shaped: dict[str, Any] = {"id": task_id, "question": question, "needs": list(needs)}
    if manager is not None:
        shaped["manager"] = manager
    if depends_on:
        shaped["depends_on"] = list(depends_on)
    return shaped


def plan(*tasks: Mapping[str, Any], intent: str = "read") -> str:
    """A plan as the planner writes it."""
    body: dict[str, Any] = {"intent": intent}
    if intent == "read":
        body["tasks"] = list(tasks)
    return json.dumps(body)


Step = Callable[[list[Message], list[ToolDefinition]], Any]


def by_question(answers: Mapping[str, Any]) -> FunctionProvider:
    """An executor answering each task by the first key found in its prompt.

    A value is one completion, or a list of completions played in turn for that task.
    """
    played: dict[str, int] = {}

    def answer(messages: list[Message], tools: list[ToolDefinition]) -> Any:
        prompt = "\n".join(m.content for m in messages if m.role in ("system", "user"))
        for key, value in answers.items():
            if key in prompt:
                if isinstance(value, tuple):
                    number = played.get(key, 0)
                    played[key] = number + 1
                    return value[min(number, len(value) - 1)]
                return value
        raise AssertionError(f"no scripted answer for prompt: {prompt[:300]}")

    return FunctionProvider(answer)


def roles(
    *,
    planner: Any,
    executor: Any = None,
    complex_executor: Any = None,
    synthesizer: Any = None,
    fallback: Any = None,
) -> dict[str, Any]:
    """A provider per role; unscripted roles get an empty script (any request fails the test)."""
    empty = ScriptedProvider([])
    return {
        "planner": planner,
        "simple_executor": executor or empty,
        "complex_executor": complex_executor or executor or empty,
        "synthesizer": synthesizer or empty,
        "fallback_executor": fallback or empty,
    }


def planned_turns(providers: Mapping[str, Any], **settings: Any) -> PlannedTurns:
    """PlannedTurns over `providers` with the defaults, `settings` overriding them."""
    chosen = get_planned_chat_settings({"planned": {**settings, "enabled": True}})
    assert set(providers) == set(REQUIRED_ROLES)
    return PlannedTurns(providers, settings=chosen)


def planned_service(
    providers: Mapping[str, Any],
    *,
    legacy: Any = None,
    store: Any = None,
    tools: ToolSettings | None = None,
    atom_config: AtomConfig | None = None,
    audit: Any = None,
    **settings: Any,
) -> ChatService:
    """A ChatService over the toy registry (with renameMaterial) running planned turns."""
    chat = service(
        store or MemoryStore(),
        legacy or ScriptedProvider([]),
        settings=tools,
        atom_config=atom_config,
        planned=planned_turns(providers, **settings),
        audit=audit,
    )
    assert isinstance(chat.toolset, Toolset)
    return chat
