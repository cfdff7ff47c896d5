"""The public surface of `import chatomon` is pinned: changing it is a deliberate act."""

from __future__ import annotations

import inspect

import chatomon
from chatomon import schemas

EXPECTED = {
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
    "PromptInjectionGuard",
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
}


def test_all_is_pinned() -> None:
    assert set(chatomon.__all__) == EXPECTED
    assert len(chatomon.__all__) == len(EXPECTED), "duplicates in __all__"


def test_every_exported_name_exists() -> None:
    for name in chatomon.__all__:
        assert hasattr(chatomon, name), name


def test_everything_the_schemas_reference_documents_is_importable_from_chatomon() -> None:
    for name in schemas.__all__:
        assert getattr(chatomon, name) is getattr(schemas, name)


def test_public_objects_have_docstrings() -> None:
    for name in chatomon.__all__:
        value = getattr(chatomon, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__doc__, f"{name} has no docstring"
