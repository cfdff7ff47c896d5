"""What the vendor translation modules share: plain JSON values, function tools, retry-after.

SDK-free, like the vendor `*_format` modules that use it.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from chatomon.providers.base import ToolDefinition

__all__ = ["function_tools", "plain", "retry_after_seconds"]


def plain(value: Any) -> Any:
    """`value` with every mapping a dict and every sequence a list, as JSON encoders expect.

    Tool schemas and arguments arrive as read-only mappings and tuples.
    """
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def function_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """Tools as `{"type": "function", "function": {...}}` entries (OpenAI chat, Ollama)."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": plain(tool.input_schema),
            },
        }
        for tool in tools
    ]


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait, from `retry-after-ms` or `retry-after` (seconds or an HTTP date).

    Header names match case-insensitively; an unreadable value counts as absent.
    """
    lowered = {key.lower(): value for key, value in (headers or {}).items()}
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if not value:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed) - time.time()
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    return None
