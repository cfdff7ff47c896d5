"""The translation pieces the vendor adapters share."""

from __future__ import annotations

import time
from email.utils import formatdate
from types import MappingProxyType

from chatomon.providers import ToolDefinition
from chatomon.providers.shared_format import function_tools, plain, retry_after_seconds


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "17"}) == 17
    assert retry_after_seconds({"Retry-After": "17"}) == 17
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    in_a_minute = retry_after_seconds({"retry-after": formatdate(time.time() + 60, usegmt=True)})
    assert in_a_minute is not None
    assert 50 < in_a_minute <= 60
    assert retry_after_seconds({"retry-after": formatdate(time.time() - 60, usegmt=True)}) == 0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "nan"}) is None
    assert retry_after_seconds({}) is None
    assert retry_after_seconds(None) is None


def test_plain_and_function_tools() -> None:
    schema = MappingProxyType({"type": "object", "required": ("a",)})
    assert plain(schema) == {"type": "object", "required": ["a"]}
    (tool,) = function_tools([ToolDefinition(name="q", description="d", parameters=schema)])
    assert tool == {
        "type": "function",
        "function": {
            "name": "q",
            "description": "d",
            "parameters": {"type": "object", "required": ["a"]},
        },
    }
