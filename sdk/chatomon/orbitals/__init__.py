"""Orbitals: the checks an atom runs on the user's message and on the nucleus reply.

`base` holds the contract (`Orbital`, `@orbital`, `parallel`); each other module holds one
family of built-in orbitals.
"""

from chatomon.orbitals.base import (
    FunctionOrbital,
    Orbital,
    OrbitalOptions,
    ParallelGroup,
    orbital,
    parallel,
)
from chatomon.orbitals.injection import PromptInjectionGuard
from chatomon.orbitals.judge import JudgeOutputError, LLMJudge
from chatomon.orbitals.lexical import Blocklist, MaxLength, RegexGuard
from chatomon.orbitals.pii import PIIGuard
from chatomon.orbitals.topics import TopicGuard

__all__ = [
    "Blocklist",
    "FunctionOrbital",
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
