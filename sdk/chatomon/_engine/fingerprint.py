"""Stable hashes of configurations, for OrbitalResult.fingerprint.

A fingerprint must be the same for the same configuration in every process, so values
are reduced to canonical JSON first: mappings by sorted key, sets sorted, patterns by
their source, callables and classes by qualified name, and nothing that embeds a memory
address.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Mapping, Set
from typing import Any

__all__ = ["canonical", "fingerprint_of"]

_FINGERPRINT_LENGTH = 16


def fingerprint_of(value: Any) -> str:
    """Hex digest (16 characters of SHA-256) of the canonical JSON form of `value`."""
    text = json.dumps(canonical(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_FINGERPRINT_LENGTH]


def canonical(value: Any) -> Any:
    """Reduce `value` to JSON-ready data that does not depend on the process."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return canonical(value.value)
    if isinstance(value, Mapping):
        return {str(key): canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    if isinstance(value, Set):
        items = [canonical(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, re.Pattern):
        return {"pattern": value.pattern, "flags": value.flags}
    fingerprint = getattr(value, "fingerprint", None)
    if isinstance(fingerprint, str):
        return {"fingerprint": fingerprint}
    if isinstance(value, type) or callable(value):
        module = getattr(value, "__module__", None) or ""
        name = getattr(value, "__qualname__", None) or type(value).__qualname__
        return f"{module}.{name}"
    text = repr(value)
    if " at 0x" in text:
        cls = type(value)
        return f"{cls.__module__}.{cls.__qualname__}"
    return text
