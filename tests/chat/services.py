"""Building ChatServices for the tests: the toy registry plus a confirmable mutation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from chatomon.chat.pipeline import ChatService
from chatomon.chat.store import ConversationStore
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.fixtures import toy_registry
from chatomon.data.mutations import mutation
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call
from chatomon.schemas import TokenUsage

USER = SimpleActor(id=7, is_authenticated=True)
OTHER = SimpleActor(id=8, is_authenticated=True)
STAFF = SimpleActor(id=1, is_authenticated=True, is_staff=True)
RENAME = tool_call(
    "mutate", {"mutation": "renameMaterial", "input": {"material_id": 1, "name": "Iron"}}
)


class Rename(BaseModel):
    material_id: int
    name: str


def service(
    store: ConversationStore,
    provider: Any,
    *,
    log: list[dict[str, Any]] | None = None,
    settings: ToolSettings | None = None,
    rename_manager: str | None = "MaterialManager",
    **options: Any,
) -> ChatService:
    """A ChatService over the toy registry with `renameMaterial`, which appends to `log`.

    `rename_manager`: the manager renameMaterial declares (None: none, so that it runs
    as a write that may do I/O, through the toolset's `run_blocking`).
    """
    registry = toy_registry()

    @mutation(name="renameMaterial", input=Rename, manager=rename_manager)
    def rename(actor: Any, data: Rename) -> dict[str, Any]:
        if log is not None:
            log.append(data.model_dump())
        return {"id": data.material_id, "name": data.name}

    registry.register(rename)
    return ChatService(
        store=store, provider=provider, toolset=Toolset(registry, settings), **options
    )


def confirm_settings(*, staff: bool = False) -> ToolSettings:
    """renameMaterial allowed, confirmed by the client (or approved by staff)."""
    names = ["renameMaterial"]
    if staff:
        return ToolSettings(allowed_mutations=names, staff_approval_mutations=names)
    return ToolSettings(allowed_mutations=names, confirm_mutations=names)


def rename_script(answer: str = "Done.") -> ScriptedProvider:
    """The model asks for the rename, then answers."""
    return ScriptedProvider([[RENAME], [answer]])


async def collect(events: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event of a stream."""
    return [event async for event in events]


class Budget:
    """A TurnBudget exhausted (for `wait` seconds) once `allowed` usages were recorded."""

    def __init__(self, allowed: int, wait: float = 12.5) -> None:
        self.allowed, self.wait = allowed, wait
        self.recorded: list[TokenUsage] = []

    async def check(self) -> float | None:
        return None if len(self.recorded) < self.allowed else self.wait

    async def record(self, usage: TokenUsage) -> None:
        self.recorded.append(usage)
