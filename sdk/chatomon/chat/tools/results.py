"""Tool error results: what the model reads when a call cannot run, and how to correct it.

`{"status": "error", "code": "unknown_field", "message": "...", "allowed": [...]}`: the
message is short and says what to do instead; `allowed` lists what would be accepted
when that is a closed set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ERROR_CODES", "is_tool_error", "tool_error"]

ERROR_CODES = (
    "unknown_tool",
    "unknown_manager",
    "unknown_field",
    "unknown_filter",
    "invalid_value",
    "limit_exceeded",
    "query_timeout",
    "mutation_not_allowed",
    "invalid_input",
    "not_authenticated",
    "permission_denied",
)
"""Every code a tool error result may carry."""


def tool_error(
    code: str, message: str, allowed: Iterable[str] = (), **details: Any
) -> dict[str, Any]:
    """An error result with `code` (one of ERROR_CODES) and a message for the model."""
    result: dict[str, Any] = {"status": "error", "code": code, "message": message}
    listed = list(allowed)
    if listed:
        result["allowed"] = listed
    result.update(details)
    return result


def is_tool_error(result: Any) -> bool:
    """Whether a tool's result is an error result (`tool_error`) the model should correct."""
    return isinstance(result, Mapping) and result.get("status") == "error"
