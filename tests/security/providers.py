"""Providers of the security suite, selectable by dotted path (in-process and in servers).

- `EchoProvider`: answers "Echo: <the user's text>" at once, in one chunk: the hostile-input
  tests send thousands of bodies, and a turn they let through must cost little.
- `MarkupProvider`: puts HTML and template syntax (which would run script, or render a tag,
  if anything showed it as markup) into its answer, a data row and mutation inputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.testing import FunctionProvider, tool_call

FLAG = "__chatomonPwned"
"""The window property an injected script would set (the tests read it back)."""


def markup(where: str) -> str:
    """HTML and template syntax that sets `window[FLAG]` wherever it runs as markup.

    No double quote in it, so that it reads the same inside JSON (a page may show a
    payload as JSON, which escapes double quotes).
    """
    return (
        f"<script>window.{FLAG}='{where}'</script>"
        f"<img src=x onerror='window.{FLAG}=1'>"
        f"<svg onload='window.{FLAG}=2'></svg>"
        f"<a href='javascript:window.{FLAG}=3'>{where}</a>"
        "{{ request.user.username }}{% now 'Y' %}"
    )


ROW_NAME = f"<img src=x onerror='window.{FLAG}=4'>{{{{ x }}}}{{% now 'Y' %}} row"
"""A part name (at most 100 characters) that is markup: a data row shown in the pages."""
MODEL_MARKUP = markup("model")
"""What `MarkupProvider` answers."""


def _echo(messages: list[Message], tools: list[ToolDefinition]) -> list[Any]:
    return ["Echo: " + (messages[-1].content if messages else "")]


def _mutate(mutation: str, values: Mapping[str, Any]) -> Any:
    return tool_call("mutate", {"mutation": mutation, "input": dict(values)})


def _markup(messages: list[Message], tools: list[ToolDefinition]) -> list[Any]:
    """Markup in every place a model and its tools can put text.

    A message with "approve" creates a part named `ROW_NAME` (a data row, and a mutation
    input) and asks to change its cost, which waits for staff; any other message is
    answered with `MODEL_MARKUP` after a query whose rows include such parts.
    """
    start = max(i for i, m in enumerate(messages) if m.role == "user")
    results = [json.loads(m.content) for m in messages[start + 1 :] if m.role == "tool"]
    if "approve" not in messages[start].content:
        if not results:
            query = {"manager": "PartManager", "filters": {"name": ROW_NAME}, "limit": 5}
            return [tool_call("query", query)]
        return ["Model says: ", MODEL_MARKUP]
    if not results:
        return [_mutate("createPart", {"name": ROW_NAME, "unit_cost": "1.00"})]
    part = results[0]["result"]
    if len(results) == 1:
        return [_mutate("updatePartCost", {"part_id": part["id"], "unit_cost": "2.00"})]
    return ["Model says: ", MODEL_MARKUP]


class EchoProvider(FunctionProvider):
    """Echoes the latest message in one chunk, without delay."""

    name = "security-echo"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(_echo)
        self.check_keys(config or {})


class MarkupProvider(FunctionProvider):
    """Answers with markup, and puts markup into data rows and mutation inputs (`_markup`)."""

    name = "security-markup"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(_markup)
        self.check_keys(config or {})
