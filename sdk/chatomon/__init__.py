"""chatomon: guarded, audited, human-supervised LLM assistants.

An `Atom` wraps a nucleus (an LLM, or any function writing replies) with input and output
orbitals (checks whose verdicts allow, block, guide a refusal, answer directly, replace or
regenerate). Every turn leaves a `TurnReport`.

Importing chatomon needs no Django settings and no vendor SDK; the built-in orbitals load
on first use.
"""

from typing import TYPE_CHECKING, Any

from chatomon import orbitals as _orbitals
from chatomon.atom import Atom, ChatResult, TurnSink
from chatomon.errors import (
    ChatomonError,
    ConfigurationError,
    NucleusError,
    TurnError,
    TurnStateError,
)
from chatomon.events import TextChunk, TurnDone, TurnSuspended
from chatomon.nucleus import (
    CallableNucleus,
    Nucleus,
    NucleusReply,
    NucleusRequest,
    NucleusSuspend,
    StepTiming,
)
from chatomon.orbitals import (
    BUILT_IN,
    FunctionOrbital,
    Orbital,
    OrbitalOptions,
    ParallelGroup,
    orbital,
    parallel,
)
from chatomon.public_errors import PublicChatError, planned_public_error, public_chat_error
from chatomon.schemas import (
    DEFAULT_BLOCKED_GUIDANCE,
    DEFAULT_BLOCKED_PLACEHOLDER,
    DEFAULT_REFUSAL,
    CaptureContent,
    ErrorPolicy,
    FinalAction,
    InputDecision,
    Message,
    NucleusStep,
    OrbitalContext,
    OrbitalResult,
    OutputAttempt,
    OutputDecision,
    OutputDecisionKind,
    PlannedCoverage,
    PlannedEvidence,
    PlannedTaskReport,
    PlannedTaskStatus,
    PlannedTurnReport,
    PlannedUnresolved,
    Side,
    TokenUsage,
    TurnPause,
    TurnReport,
    Verdict,
    VerdictAction,
)
from chatomon.turn import Turn

if TYPE_CHECKING:
    from chatomon.orbitals import (
        Blocklist,
        GroundingGuard,
        JudgeOutputError,
        LLMJudge,
        MaxLength,
        PIIGuard,
        PromptInjectionGuard,
        RegexGuard,
        TopicGuard,
    )

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_BLOCKED_GUIDANCE",
    "DEFAULT_BLOCKED_PLACEHOLDER",
    "DEFAULT_REFUSAL",
    "Atom",
    "Blocklist",
    "CallableNucleus",
    "CaptureContent",
    "ChatResult",
    "ChatomonError",
    "ConfigurationError",
    "ErrorPolicy",
    "FinalAction",
    "FunctionOrbital",
    "GroundingGuard",
    "InputDecision",
    "JudgeOutputError",
    "LLMJudge",
    "MaxLength",
    "Message",
    "Nucleus",
    "NucleusError",
    "NucleusReply",
    "NucleusRequest",
    "NucleusStep",
    "NucleusSuspend",
    "Orbital",
    "OrbitalContext",
    "OrbitalOptions",
    "OrbitalResult",
    "OutputAttempt",
    "OutputDecision",
    "OutputDecisionKind",
    "PIIGuard",
    "ParallelGroup",
    "PlannedCoverage",
    "PlannedEvidence",
    "PlannedTaskReport",
    "PlannedTaskStatus",
    "PlannedTurnReport",
    "PlannedUnresolved",
    "PromptInjectionGuard",
    "PublicChatError",
    "RegexGuard",
    "Side",
    "StepTiming",
    "TextChunk",
    "TokenUsage",
    "TopicGuard",
    "Turn",
    "TurnDone",
    "TurnError",
    "TurnPause",
    "TurnReport",
    "TurnSink",
    "TurnStateError",
    "TurnSuspended",
    "Verdict",
    "VerdictAction",
    "__version__",
    "orbital",
    "parallel",
    "planned_public_error",
    "public_chat_error",
]


def __getattr__(name: str) -> Any:
    if name in BUILT_IN:
        return getattr(_orbitals, name)
    raise AttributeError(f"module 'chatomon' has no attribute {name!r}")
