"""chatomon: guarded, audited, human-supervised LLM assistants.

An `Atom` wraps a nucleus (an LLM, or any function writing replies) with input and output
orbitals (checks whose verdicts allow, block, guide a refusal, answer directly, replace or
regenerate). Every turn leaves a `TurnReport`.

Importing chatomon needs no Django settings and no vendor SDK.
"""

from chatomon.atom import Atom, ChatResult, TurnSink
from chatomon.errors import (
    ChatomonError,
    ConfigurationError,
    NucleusError,
    TurnError,
    TurnStateError,
)
from chatomon.events import TextChunk, TurnDone
from chatomon.nucleus import CallableNucleus, Nucleus, NucleusReply, NucleusRequest
from chatomon.orbitals import (
    Blocklist,
    FunctionOrbital,
    JudgeOutputError,
    LLMJudge,
    MaxLength,
    Orbital,
    OrbitalOptions,
    ParallelGroup,
    PIIGuard,
    PromptInjectionGuard,
    RegexGuard,
    TopicGuard,
    orbital,
    parallel,
)
from chatomon.schemas import (
    DEFAULT_BLOCKED_GUIDANCE,
    DEFAULT_BLOCKED_PLACEHOLDER,
    DEFAULT_REFUSAL,
    CaptureContent,
    ErrorPolicy,
    FinalAction,
    InputDecision,
    Message,
    OrbitalContext,
    OrbitalResult,
    OutputAttempt,
    OutputDecision,
    OutputDecisionKind,
    Side,
    TokenUsage,
    TurnReport,
    Verdict,
    VerdictAction,
)
from chatomon.turn import Turn

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
    "InputDecision",
    "JudgeOutputError",
    "LLMJudge",
    "MaxLength",
    "Message",
    "Nucleus",
    "NucleusError",
    "NucleusReply",
    "NucleusRequest",
    "Orbital",
    "OrbitalContext",
    "OrbitalOptions",
    "OrbitalResult",
    "OutputAttempt",
    "OutputDecision",
    "OutputDecisionKind",
    "PIIGuard",
    "ParallelGroup",
    "PromptInjectionGuard",
    "RegexGuard",
    "Side",
    "TextChunk",
    "TokenUsage",
    "TopicGuard",
    "Turn",
    "TurnDone",
    "TurnError",
    "TurnReport",
    "TurnSink",
    "TurnStateError",
    "Verdict",
    "VerdictAction",
    "__version__",
    "orbital",
    "parallel",
]
