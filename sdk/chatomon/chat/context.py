"""The bounded context of a stored conversation: recent messages, and a summary of the rest.

`build_context` keeps the last `max_recent_messages` items verbatim. As the chat API
reference defines `summarize_after` ("Message count after which older history may be
summarized by the provider"), once the conversation holds more than `summarize_after` items
the older ones are replaced by a summary the provider writes (one completion through
`run_completion`); up to that count every item is kept verbatim. A summary records the exact
last message it covers; one whose marker is missing or outdated is regenerated, never
reused. A summary spends the turn's `TurnBudget` like a provider round: it is refused
(`rate_limited`) while the budget is exhausted, and its usage is recorded. Tool windows are
kept whole: an assistant call group travels with only its own linked results, and the window
edge never separates them. Tool rows without a stored call identity become assistant
context text, never native tool-result messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chatomon.chat.budget import TurnBudget, require_room
from chatomon.chat.store.records import ConversationSummary, StoredMessage
from chatomon.providers.base import DoneEvent, Message, TextChunkEvent
from chatomon.providers.contract import run_completion
from chatomon.schemas import Message as TextMessage

__all__ = ["SUMMARY_PROMPT", "BuiltContext", "build_context", "text_history"]

SUMMARY_PROMPT = (
    "Summarize the earlier part of this conversation between a user and a data assistant "
    "in a few sentences: what the user wanted, the facts found, and decisions made. "
    "Write only the summary."
)


@dataclass(frozen=True, slots=True)
class BuiltContext:
    """The provider messages of a turn's history and the summary to store.

    Attributes:
        messages: The history as provider-neutral messages for the tool loop.
        summary: The summary covering the older items (None when none were summarized).
        summary_changed: Whether `summary` was written now and should be stored.
    """

    messages: tuple[Message, ...]
    summary: ConversationSummary | None
    summary_changed: bool


def windows(items: Sequence[StoredMessage]) -> list[list[StoredMessage]]:
    """Split items into units: a call group with its linked results, or one item."""
    units: list[list[StoredMessage]] = []
    for stored in sorted(items, key=lambda m: m.position):
        item, group = stored.item, units[-1] if units else None
        if (
            item.kind == "tool_result"
            and group is not None
            and group[0].item.kind == "tool_calls"
            and item.call_id in {c.id for c in group[0].item.tool_calls if c.id}
        ):
            group.append(stored)
        else:
            units.append([stored])
    return units


def _context_text(stored: StoredMessage) -> Message:
    item = stored.item
    if item.kind == "tool_result":
        result = json.dumps(item.result, default=str)
        return Message.assistant(f"[Earlier result of tool {item.name or 'unknown'}: {result}]")
    calls = ", ".join(f"{c.name}({json.dumps(dict(c.args))})" for c in item.tool_calls)
    return Message.assistant(" ".join(p for p in (item.content, f"[Called {calls}]") if p))


def unit_messages(unit: Sequence[StoredMessage]) -> list[Message]:
    """The provider messages of one unit."""
    head = unit[0].item
    if head.kind == "user":
        return [Message.user(head.content)]
    if head.kind == "assistant":
        return [Message.assistant(head.content)]
    if head.kind == "tool_result":  # not linked to a call group: context text only
        return [_context_text(unit[0])]
    answered = {m.item.call_id for m in unit[1:]}
    if not head.tool_calls or any(not c.id or c.id not in answered for c in head.tool_calls):
        # Vendors reject a native call without its result: keep the group as text.
        return [_context_text(m) for m in unit]
    # The structured result travels as `tool_result` (its JSON text is the content).
    results = [
        Message(
            role="tool",
            tool_call_id=m.item.call_id,
            tool_name=m.item.name,
            tool_result=m.item.result,
        )
        for m in unit[1:]
    ]
    return [Message.assistant(head.content, head.tool_calls), *results]


def split_window(
    units: list[list[StoredMessage]], max_recent_messages: int
) -> tuple[list[list[StoredMessage]], list[list[StoredMessage]]]:
    """(older units, recent units): whole units from the end, up to the message budget."""
    taken, count = 0, 0
    for unit in reversed(units):
        if taken and count + len(unit) > max_recent_messages:
            break
        taken, count = taken + 1, count + len(unit)
    return units[: len(units) - taken], units[len(units) - taken :]


async def build_context(
    items: Sequence[StoredMessage],
    *,
    provider: Any,
    summary: ConversationSummary | None = None,
    max_recent_messages: int = 20,
    summarize_after: int = 10,
    timeout_seconds: float | None = None,
    budget: TurnBudget | None = None,
) -> BuiltContext:
    """The bounded history of `items` for the next turn, summarizing the older prefix.

    Args:
        items: The stored conversation.
        provider: Writes the summary.
        summary: The stored summary, reused when its marker is exact.
        max_recent_messages: Items kept verbatim at the end.
        summarize_after: The item count beyond which the older items are summarized.
        timeout_seconds: The summary's whole-request timeout.
        budget: Checked before a summary is written, told its usage after.

    Raises:
        ToolLoopError: `rate_limited` when a summary is due and the budget is exhausted.
    """
    if max_recent_messages < 1 or summarize_after < 0:
        raise ValueError("max_recent_messages must be >= 1 and summarize_after >= 0")
    older, recent = split_window(windows(items), max_recent_messages)
    flat_older = [m for unit in older for m in unit]
    if not flat_older or len(items) <= summarize_after:
        every = [m for unit in (*older, *recent) for m in unit_messages(unit)]
        return BuiltContext(tuple(every), None, False)
    recent_messages = [m for unit in recent for m in unit_messages(unit)]
    last = flat_older[-1]
    changed = not _covers(summary, last)
    if changed:
        await require_room(budget)
        text = await _summarize(provider, older, timeout_seconds, budget)
        summary = ConversationSummary(text, last.id, last.position)
    assert summary is not None
    note = Message.system(f"Summary of the earlier conversation: {summary.text}")
    return BuiltContext((note, *recent_messages), summary, changed)


def _covers(summary: ConversationSummary | None, last: StoredMessage) -> bool:
    # Only an exact marker is trusted; any other coverage is unknown and regenerated.
    return (
        summary is not None
        and summary.through_id == last.id
        and summary.through_position == last.position
    )


async def _summarize(
    provider: Any,
    older: list[list[StoredMessage]],
    timeout_seconds: float | None,
    budget: TurnBudget | None,
) -> str:
    transcript = "\n".join(
        f"{message.role}: {message.content}"
        for unit in older
        for message in unit_messages(unit)
        if message.content
    )
    request = [Message.system(SUMMARY_PROMPT), Message.user(transcript)]
    chunks: list[str] = []
    async for event in run_completion(provider, request, [], timeout_seconds=timeout_seconds):
        if isinstance(event, TextChunkEvent):
            chunks.append(event.content)
        elif isinstance(event, DoneEvent) and budget is not None:
            await budget.record(event.usage)
    return "".join(chunks).strip()


def text_history(messages: Iterable[Message]) -> list[TextMessage]:
    """The built context as user/assistant text, the history the Atom's orbitals read.

    Native tool messages become assistant context text and a summary an assistant line;
    the tool loop itself receives the native messages.
    """
    history: list[TextMessage] = []
    for message in messages:
        if message.role == "user":
            history.append(TextMessage(role="user", content=message.content))
        elif message.role == "tool":
            text = f"[Earlier result of tool {message.tool_name or 'unknown'}: {message.content}]"
            history.append(TextMessage(role="assistant", content=text))
        elif message.role == "system":
            history.append(TextMessage(role="assistant", content=f"[{message.content}]"))
        else:
            history.append(TextMessage(role="assistant", content=_assistant_text(message)))
    return [m for m in history if m.content]


def _assistant_text(message: Message) -> str:
    calls = ", ".join(
        f"{c.name}({json.dumps(dict(c.args), default=str)})" for c in message.tool_calls
    )
    return " ".join(p for p in (message.content, f"[Called {calls}]" if calls else "") if p)
