"""A deterministic stand-in for a model, for the demo served to the browser tests.

The demo process loads it by dotted path (CHATOMON_PROVIDER=tests.browser.provider.
DemoScriptProvider). It reads the conversation like a tool-using model would: it looks parts
and projects up with the query tool, asks for mutations with their ids from those results,
and words its answer from the last tool result, streaming it word by word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.testing import FunctionProvider, tool_call

COST = re.compile(r"cost of part (P-\d+) to (\d+(?:\.\d+)?)", re.IGNORECASE)
ASSIGN = re.compile(r"assign part (P-\d+) to project (PRJ-\d+)", re.IGNORECASE)
CHUNK_DELAY_SECONDS = 0.03


def words(text: str) -> list[str]:
    """The text as streamed chunks, one word (with its space) each."""
    return re.findall(r"\S+\s*", text)


class Conversation:
    """The latest user request and the tool results that followed it."""

    def __init__(self, messages: list[Message]) -> None:
        start = max(i for i, m in enumerate(messages) if m.role == "user")
        self.request = messages[start].content
        self.results: list[tuple[str, Any]] = [
            (m.name or "", _decoded(m.content)) for m in messages[start + 1 :] if m.role == "tool"
        ]

    def rows(self, number: int) -> list[dict[str, Any]]:
        """The rows of the `number`-th query result (0-based)."""
        queries = [result for name, result in self.results if name == "query"]
        return list(queries[number].get("data", [])) if number < len(queries) else []

    def mutated(self) -> Mapping[str, Any] | None:
        """The mutate tool's result, once there is one."""
        return next((result for name, result in self.results if name == "mutate"), None)


def _decoded(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return content


def _find(manager: str, field: str, value: str) -> Any:
    return tool_call("query", {"manager": manager, "filters": {field: value}, "limit": 1})


def _outcome(result: Mapping[str, Any], done: str) -> list[str]:
    status = result.get("status")
    if status == "executed":
        return words(done)
    reason = result.get("reason") or result.get("message") or status
    return words(f"The change was not made ({status}): {reason}.")


def change_cost(chat: Conversation, number: str, cost: str) -> list[Any]:
    """Look the part up, ask for updatePartCost, then report the outcome."""
    if not chat.results:
        return [_find("PartManager", "number", number)]
    if (result := chat.mutated()) is not None:
        return _outcome(result, f"Done: part {number} now costs {cost} EUR per unit.")
    parts = chat.rows(0)
    if not parts:
        return words(f"There is no part {number}.")
    arguments = {"part_id": parts[0]["id"], "unit_cost": cost}
    return [tool_call("mutate", {"mutation": "updatePartCost", "input": arguments})]


def assign(chat: Conversation, number: str, code: str) -> list[Any]:
    """Look up the part and the project, ask for assignPartToProject, report the outcome."""
    if not chat.results:
        return [_find("PartManager", "number", number)]
    if len(chat.results) == 1:
        return [_find("ProjectManager", "code", code)]
    if (result := chat.mutated()) is not None:
        return _outcome(result, f"Done: part {number} is now used by project {code}.")
    part, project = chat.rows(0), chat.rows(1)
    if not (part and project):
        return words(f"I cannot find part {number} or project {code}.")
    arguments = {"part_id": part[0]["id"], "project_id": project[0]["id"]}
    return [tool_call("mutate", {"mutation": "assignPartToProject", "input": arguments})]


def count_parts(chat: Conversation) -> list[Any]:
    """Anything else: count the parts with one query, then say how many there are."""
    if not chat.results:
        return [tool_call("query", {"manager": "PartManager", "limit": 1})]
    total = chat.results[-1][1].get("total_count")
    return words(f"Acme Parts has {total} parts in its catalogue.")


def answer(messages: list[Message], tools: list[ToolDefinition]) -> list[Any]:
    """The next completion for this conversation."""
    chat = Conversation(messages)
    if match := COST.search(chat.request):
        return change_cost(chat, match[1].upper(), match[2])
    if match := ASSIGN.search(chat.request):
        return assign(chat, match[1].upper(), match[2].upper())
    return count_parts(chat)


class DemoScriptProvider(FunctionProvider):
    """The browser tests' provider: zero-argument construction, as settings build it."""

    name = "demo-script"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(answer, chunk_delay=CHUNK_DELAY_SECONDS)
        self.check_keys(config or {})
