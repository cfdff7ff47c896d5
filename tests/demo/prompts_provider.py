"""A scripted model for the demo's suggested prompts (tests of local_demo_prompts.py).

The demo process loads it by dotted path (CHATOMON_PROVIDER=tests.demo.prompts_provider.
PromptsProvider). The cost change and the assignment go as the browser tests' provider
plays them (look the rows up, then mutate); the read question is answered from one query
of the projects using the part, naming their codes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.testing import FunctionProvider, tool_call
from tests.browser.provider import ASSIGN, COST, Conversation, assign, change_cost, words

READ = re.compile(r"which projects use part (P-\d+)", re.IGNORECASE)


def projects_using(chat: Conversation, number: str) -> list[Any]:
    """Query the projects using the part, then name them."""
    if not chat.results:
        filters = {"parts__number": number}
        return [tool_call("query", {"manager": "ProjectManager", "filters": filters,
                                    "fields": ["code", "name"]})]  # fmt: skip
    codes = [row["code"] for row in chat.rows(0)]
    if not codes:
        return words(f"No project uses part {number}.")
    return words(f"Part {number} is used by {', '.join(codes)}.")


def answer(messages: list[Message], tools: list[ToolDefinition]) -> list[Any]:
    """The next completion for this conversation."""
    chat = Conversation(messages)
    if match := READ.search(chat.request):
        return projects_using(chat, match[1].upper())
    if match := COST.search(chat.request):
        return change_cost(chat, match[1].upper(), match[2])
    if match := ASSIGN.search(chat.request):
        return assign(chat, match[1].upper(), match[2].upper())
    return words("I can answer questions about parts and projects.")


class PromptsProvider(FunctionProvider):
    """Zero-argument construction, as the demo's settings build it."""

    name = "demo-prompts-script"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(answer)
        self.check_keys(config or {})
