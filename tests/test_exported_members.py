"""The public surface of `import chatomon` is pinned: changing it is a deliberate act."""

from __future__ import annotations

import inspect

import chatomon
from chatomon import errors, schemas
from chatomon.chat import store

EXPECTED = {
    "DEFAULT_BLOCKED_GUIDANCE",
    "DEFAULT_BLOCKED_PLACEHOLDER",
    "DEFAULT_REFUSAL",
    "Atom",
    "Blocklist",
    "GroundingGuard",
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
    "PlannedCoverage",
    "PlannedEvidence",
    "PlannedTaskReport",
    "PlannedTaskStatus",
    "PlannedTurnReport",
    "PlannedUnresolved",
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


def test_the_store_errors_are_branches_of_the_one_tree_and_stay_importable() -> None:
    for name in ("StoreError", "ConversationNotFoundError", "TurnTransitionError"):
        assert name in errors.__all__ and name in store.__all__
        assert getattr(store, name) is getattr(errors, name)
        assert issubclass(getattr(errors, name), errors.ChatomonError)
    assert issubclass(errors.ConversationNotFoundError, (errors.StoreError, LookupError))
    assert issubclass(errors.TurnTransitionError, (errors.StoreError, ValueError))
    error = errors.TurnTransitionError("t-1", "awaiting_confirmation", "completed", ["running"])
    assert (error.turn_id, error.current, error.requested, error.allowed) == (
        "t-1",
        "awaiting_confirmation",
        "completed",
        ("running",),
    )
    assert str(error) == (
        "turn 't-1' cannot go from 'awaiting_confirmation' to 'completed' "
        "(allowed from 'awaiting_confirmation': running)"
    )


def test_the_references_public_error_helpers_are_importable_from_chatomon() -> None:
    # Reference (Settings, errors, and audit helpers) documents PublicChatError,
    # public_chat_error and planned_public_error as public API.
    from chatomon import public_errors  # noqa: PLC0415

    for name in ("PublicChatError", "public_chat_error", "planned_public_error"):
        assert getattr(chatomon, name) is getattr(public_errors, name)
