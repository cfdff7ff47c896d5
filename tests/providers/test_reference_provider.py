"""A provider written for the chat API reference runs unchanged on chatomon.

The reference (chat-api-reference.txt, "Provider protocol") shows this custom provider:

    from collections.abc import AsyncIterator
    from general_manager.chat.providers.base import (
        ChatEvent, DoneEvent, Message, TokenUsage, ToolDefinition,
    )
    class MyProvider:
        async def complete(self, messages: list[Message], tools: list[ToolDefinition])
                -> AsyncIterator[ChatEvent]:
            # Adapt the provider SDK's streaming response here.
            yield DoneEvent(usage=TokenUsage())

The one change a project makes is the import: `general_manager.chat.providers.base`
becomes `chatomon.providers.base`. `MyProvider` below is the example as written;
`SketchSDKProvider` fills in its body the way a provider written against the reference
does: it reads `ToolDefinition.input_schema`, yields `ToolCallEvent(id=..., name=...,
args=...)`, and reads tool results from the `Message` tool fields (`tool_calls` with
`args`, `tool_call_id`, `tool_name`, the structured `tool_result`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from chatomon import Atom
from chatomon.chat.loop import ToolLoop
from chatomon.chat.pipeline import ChatService
from chatomon.chat.store import MemoryStore, Owner
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.fixtures import toy_registry
from chatomon.data.mutations import mutation
from chatomon.providers import build_provider

# The reference's example, its import mapped to chatomon's module. -------------------------
from chatomon.providers.base import (
    ChatEvent,
    DoneEvent,
    Message,
    TokenUsage,
    ToolDefinition,
)

# What a provider that handles tools imports beside it (the same module in the reference).
from chatomon.providers.base import TOOL_RESULT_MISSING, TextChunkEvent, ToolCallEvent  # isort: skip


class MyProvider:
    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
    ) -> AsyncIterator[ChatEvent]:
        # Adapt the provider SDK's streaming response here.
        yield DoneEvent(usage=TokenUsage())


# A provider written against the reference, over a stand-in vendor SDK. ---------------------

PARTS = {"manager": "PartManager", "fields": ["name"]}
MATERIALS = {"manager": "MaterialManager", "fields": ["name"]}
RENAME = {"mutation": "renameMaterial", "input": {"material_id": 1, "name": "Iron"}}

REQUESTS: list[dict[str, Any]] = []
"""Every request the stand-in SDK received, in its own (Anthropic-like) format."""


def sketch_sdk_stream(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The stand-in vendor: calls a tool after a question, answers after a tool result.

    It reads the parts (`query`); asked to rename, it reads the materials, then asks for
    the rename (`mutate`), then answers with the mutation's status.
    """
    REQUESTS.append(request)
    query = next(t for t in request["tools"] if t["name"] == "query")
    assert "manager" in query["input_schema"]["properties"]
    messages = request["messages"]
    question = next(m["content"] for m in reversed(messages) if isinstance(m["content"], str))
    renaming = "rename" in question.lower()
    last = messages[-1]["content"]
    result = last[-1] if isinstance(last, list) and last[-1]["type"] == "tool_result" else None
    call_id = f"toolu_{len(REQUESTS)}"
    if result is None:
        arguments = MATERIALS if renaming else PARTS
        yield {"kind": "tool_use", "id": call_id, "name": "query", "input": arguments}
    elif renaming and result["tool_name"] == "query":
        yield {"kind": "tool_use", "id": call_id, "name": "mutate", "input": RENAME}
    elif renaming:
        yield {"kind": "text", "text": f"Renamed: {result['result']['status']}."}
    else:
        yield {"kind": "text", "text": f"There are {result['result']['total_count']} parts."}
    yield {"kind": "usage", "input_tokens": 12, "output_tokens": 3}


def vendor_message(message: Message) -> dict[str, Any]:
    """One history message in the stand-in SDK's format, read from the reference's fields."""
    if message.role == "tool":
        assert message.tool_result is not TOOL_RESULT_MISSING
        block = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "tool_name": message.tool_name,
            "result": message.tool_result,
        }
        return {"role": "user", "content": [block]}
    if message.tool_calls:
        uses = [
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}
            for call in message.tool_calls
        ]
        return {"role": "assistant", "content": uses}
    return {"role": message.role, "content": message.content}


class SketchSDKProvider:
    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
    ) -> AsyncIterator[ChatEvent]:
        request = {
            "tools": [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ],
            "messages": [vendor_message(m) for m in messages],
        }
        usage = TokenUsage()
        for event in sketch_sdk_stream(request):
            if event["kind"] == "text":
                yield TextChunkEvent(content=event["text"])
            elif event["kind"] == "tool_use":
                yield ToolCallEvent(id=event["id"], name=event["name"], args=event["input"])
            else:
                usage = TokenUsage(
                    input_tokens=event["input_tokens"], output_tokens=event["output_tokens"]
                )
        yield DoneEvent(usage=usage)


# The tests. -------------------------------------------------------------------------------

USER = SimpleActor(id=7, is_authenticated=True)


class Rename(BaseModel):
    material_id: int
    name: str


def toolset(*, confirm: bool = False) -> Toolset:
    """The toy registry, with renameMaterial (confirmed by the client) when `confirm`."""
    registry = toy_registry()
    if not confirm:
        return Toolset(registry)

    @mutation(name="renameMaterial", input=Rename, manager="MaterialManager")
    def rename(actor: Any, data: Rename) -> dict[str, Any]:
        return {"id": data.material_id, "name": data.name}

    registry.register(rename)
    names = ["renameMaterial"]
    return Toolset(registry, ToolSettings(allowed_mutations=names, confirm_mutations=names))


def chat_service(provider: Any, *, confirm: bool = False) -> ChatService:
    return ChatService(store=MemoryStore(), provider=provider, toolset=toolset(confirm=confirm))


async def collect(events: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event async for event in events]


def tool_result_blocks(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in request["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


async def test_the_reference_example_is_built_by_its_dotted_path_and_answers() -> None:
    """Reference: "A custom provider class is instantiated without arguments and must
    implement the asynchronous provider protocol." and "Finish every normal completion
    with DoneEvent."
    """
    provider = build_provider(f"{__name__}.MyProvider")
    assert type(provider) is MyProvider
    events = await collect(chat_service(provider).run_turn(USER, "Hello"))
    assert [e["type"] for e in events] == ["done"]
    assert events[-1]["reply"] == ""
    assert events[-1]["usage"] == {"input_tokens": 0, "output_tokens": 0}


async def test_a_reference_provider_runs_a_tool_turn_through_chat_service() -> None:
    """Reference: "Yield TextChunkEvent for assistant text and ToolCallEvent with a stable
    ID, tool name, and decoded argument mapping for tool requests." and "Provider history
    keeps tool call IDs, names, arguments, and results as structured data. [...] custom
    providers receive it through the Message tool fields."
    """
    REQUESTS.clear()
    chat = chat_service(build_provider(f"{__name__}.SketchSDKProvider"))
    events = await collect(chat.run_turn(USER, "How many parts are there?"))
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "text_chunk", "done"]
    assert (events[0]["id"], events[0]["name"], events[0]["args"]) == ("toolu_1", "query", PARTS)
    assert events[-1]["reply"] == "There are 3 parts."
    assert events[-1]["usage"] == {"input_tokens": 24, "output_tokens": 6}
    # The second request carried the structured result under the reference's field names.
    (block,) = tool_result_blocks(REQUESTS[1])
    assert (block["tool_use_id"], block["tool_name"]) == ("toolu_1", "query")
    assert block["result"]["total_count"] == 3
    assert block["result"] == events[1]["result"]
    assert REQUESTS[1]["messages"][-2]["content"][0]["input"] == PARTS

    # The next turn's history, read back from the store, keeps the same structured fields.
    conversation_id = events[-1]["conversation_id"]
    events = await collect(chat.run_turn(USER, "And now?", conversation_id))
    assert events[-1]["reply"] == "There are 3 parts."
    assert tool_result_blocks(REQUESTS[2]) == [block]
    stored = await chat.store.messages(Owner.user(7), UUID(conversation_id))
    assert [m.item.kind for m in stored].count("tool_result") == 2


async def test_a_reference_provider_reads_structured_results_across_a_confirmation() -> None:
    """A suspended turn keeps the structured results of its earlier rounds: the resumed
    round's history still carries them in `tool_result` (reference: "Provider history keeps
    tool call IDs, names, arguments, and results as structured data.").
    """
    REQUESTS.clear()
    chat = chat_service(SketchSDKProvider(), confirm=True)
    events = await collect(chat.run_turn(USER, "Please rename steel to iron"))
    assert [e["type"] for e in events] == [
        "tool_call",
        "tool_result",
        "tool_call",
        "confirm_mutation",
    ]
    resumed = await collect(chat.resolve_confirmation(USER, events[-1]["id"], True))
    assert resumed[-1]["type"] == "done"
    assert resumed[-1]["reply"] == "Renamed: executed."
    read, write = tool_result_blocks(REQUESTS[-1])
    assert read["tool_name"] == "query" and read["result"]["total_count"] == 3
    assert write["tool_name"] == "mutate" and write["result"]["status"] == "executed"


async def test_a_reference_provider_runs_a_tool_turn_through_an_atom() -> None:
    """The same provider as the nucleus' provider of an Atom (reference: "It receives
    provider-neutral messages and tool definitions and yields text, tool-call, and terminal
    events").
    """
    REQUESTS.clear()
    atom = Atom("data", ToolLoop(SketchSDKProvider(), toolset(), actor=USER))
    result = await atom.chat("How many parts are there?")
    assert result.reply == "There are 3 parts."
    assert [m["role"] for m in REQUESTS[1]["messages"]] == ["system", "user", "assistant", "user"]
    (block,) = tool_result_blocks(REQUESTS[1])
    assert block["tool_name"] == "query" and block["result"]["total_count"] == 3
