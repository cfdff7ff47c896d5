"""Orbitals: the checks an atom runs on the user's message and on the nucleus reply.

`base` holds the contract (`Orbital`, `@orbital`, `parallel`); each other module holds one
family of built-in orbitals. The families load on first use, so that `import chatomon`
does not pay for regular expressions and models a program may never use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from chatomon.orbitals.base import (
    FunctionOrbital,
    Orbital,
    OrbitalOptions,
    ParallelGroup,
    orbital,
    parallel,
)

if TYPE_CHECKING:
    from chatomon.orbitals.grounding import GroundingGuard
    from chatomon.orbitals.injection import PromptInjectionGuard
    from chatomon.orbitals.judge import JudgeOutputError, LLMJudge
    from chatomon.orbitals.lexical import Blocklist, MaxLength, RegexGuard
    from chatomon.orbitals.pii import PIIGuard
    from chatomon.orbitals.topics import TopicGuard

__all__ = [
    "Blocklist",
    "FunctionOrbital",
    "GroundingGuard",
    "JudgeOutputError",
    "LLMJudge",
    "MaxLength",
    "Orbital",
    "OrbitalOptions",
    "PIIGuard",
    "ParallelGroup",
    "PromptInjectionGuard",
    "RegexGuard",
    "TopicGuard",
    "orbital",
    "parallel",
]

BUILT_IN: dict[str, str] = {
    "Blocklist": "chatomon.orbitals.lexical",
    "MaxLength": "chatomon.orbitals.lexical",
    "RegexGuard": "chatomon.orbitals.lexical",
    "PIIGuard": "chatomon.orbitals.pii",
    "PromptInjectionGuard": "chatomon.orbitals.injection",
    "TopicGuard": "chatomon.orbitals.topics",
    "GroundingGuard": "chatomon.orbitals.grounding",
    "LLMJudge": "chatomon.orbitals.judge",
    "JudgeOutputError": "chatomon.orbitals.judge",
}
"""Built-in orbital names and the modules that define them."""


def __getattr__(name: str) -> Any:
    if name in BUILT_IN:
        return getattr(importlib.import_module(BUILT_IN[name]), name)
    raise AttributeError(f"module 'chatomon.orbitals' has no attribute {name!r}")
