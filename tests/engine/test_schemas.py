"""The data contracts of the schemas reference: constants, constructors and validators."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from chatomon import schemas
from chatomon.schemas import (
    DEFAULT_BLOCKED_GUIDANCE,
    DEFAULT_BLOCKED_PLACEHOLDER,
    DEFAULT_REFUSAL,
    InputDecision,
    Message,
    OrbitalContext,
    OrbitalResult,
    OutputDecision,
    TurnReport,
    Verdict,
)


def test_constants_match_the_reference() -> None:
    assert DEFAULT_REFUSAL == "I'm sorry, I can't help with that."
    assert DEFAULT_BLOCKED_PLACEHOLDER == "[message removed by chatomon]"
    assert DEFAULT_BLOCKED_GUIDANCE == (
        "The user's last message is withheld from you and a placeholder stands in its place. "
        "Do not mention the placeholder or that a message was removed: reply as the guidance "
        "says."
    )


def test_literal_types_match_the_reference() -> None:
    assert get_args(schemas.Side) == ("input", "output")
    assert get_args(schemas.VerdictAction) == ("allow", "block", "respond")
    assert get_args(schemas.ErrorPolicy) == ("block", "allow")
    assert get_args(schemas.CaptureContent) == ("none", "hash", "full")
    assert get_args(schemas.FinalAction) == (
        "answered",
        "orbital_response",
        "blocked",
        "guided_refusal",
        "fallback_refusal",
        "aborted",
    )
    assert get_args(schemas.OutputDecisionKind) == ("accept", "replace", "regenerate")


def test_schemas_imports_nothing_from_chatomon() -> None:
    tree = ast.parse(Path(schemas.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert not (node.module or "").startswith("chatomon")
        if isinstance(node, ast.Import):
            assert not any(alias.name.startswith("chatomon") for alias in node.names)


def test_the_reference_examples_hold() -> None:
    ok = Verdict.allow(guidance="The user sounds frustrated: be empathetic.")
    refusal = Verdict.block(reply="I can only help with parcel tracking.")
    rewrite = Verdict.block(guidance="Do not mention competitors.")
    faq = Verdict.respond("We are open Monday to Friday, 9 to 18.")
    assert ok.action == "allow"
    assert refusal.reply and rewrite.guidance and faq.reply
    assert faq.action == "respond" and faq.reply == "We are open Monday to Friday, 9 to 18."


@pytest.mark.parametrize(
    "model",
    [
        Message(role="user", content="hi"),
        Verdict.allow(),
        InputDecision(kind="proceed"),
        OutputDecision(kind="accept"),
    ],
)
def test_models_are_frozen(model: object) -> None:
    field = next(iter(type(model).model_fields))
    with pytest.raises(ValidationError):
        setattr(model, field, None)


def test_message_roles_are_user_and_assistant_only() -> None:
    with pytest.raises(ValidationError):
        Message(role="system", content="x")


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: Verdict(action="respond"), "needs the text"),
        (lambda: Verdict(action="respond", reply="x", guidance="g"), "no guidance"),
        (lambda: Verdict(action="allow", reply="x"), "no reply"),
        (lambda: Verdict(action="block", reply="x", guidance="g"), "not both"),
        (lambda: Verdict.respond(""), "must not be empty"),
        (lambda: Verdict.block(guidance=""), "must not be empty"),
        (lambda: Verdict(action="maybe"), "allow"),
    ],
)
def test_inconsistent_verdicts_are_rejected_with_a_clear_message(build, words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        build()


def test_verdict_fields_and_defaults() -> None:
    verdict = Verdict.block(guidance="g", reason="r", escalate=True, annotations={"a": 1})
    assert (verdict.action, verdict.reply, verdict.guidance) == ("block", None, "g")
    assert verdict.reason == "r" and verdict.escalate and verdict.annotations == {"a": 1}
    assert Verdict.allow().escalate is False
    assert Verdict.block().reply is None and Verdict.block().guidance is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "reply"},
        {"kind": "reply", "reply": "x", "guidance": ("g",)},
        {"kind": "proceed", "reply": "x"},
        {"kind": "proceed", "redact_user_message": True},
        {"kind": "guided_refusal", "redact_user_message": True},
        {"kind": "guided_refusal", "guidance": ("g",)},
    ],
)
def test_input_decision_payload_is_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        InputDecision(**kwargs)


def test_valid_input_decisions() -> None:
    assert InputDecision(kind="proceed", guidance=("g",)).guidance == ("g",)
    assert InputDecision(kind="reply", reply="r", redact_user_message=True).reply == "r"
    decision = InputDecision(kind="guided_refusal", guidance=("g",), redact_user_message=True)
    assert decision.redact_user_message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "accept", "text": "x"},
        {"kind": "replace"},
        {"kind": "regenerate"},
        {"kind": "accept", "guidance": ("g",)},
        {"kind": "replace", "text": "x", "guidance": ("g",)},
    ],
)
def test_output_decision_payload_is_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        OutputDecision(**kwargs)


def test_orbital_context_requires_turn_id_and_annotations() -> None:
    with pytest.raises(ValidationError):
        OrbitalContext(side="input", message="x")
    ctx = OrbitalContext(side="output", message="x", annotations={}, turn_id="t")
    assert ctx.attempt == 1 and ctx.history == () and ctx.conversation_id is None


def test_report_round_trips_through_json() -> None:
    result = OrbitalResult(
        name="n", side="input", kind="K", fingerprint="f", action="allow", duration_ms=0.1
    )
    report = TurnReport(
        turn_id="t",
        conversation_id=None,
        atom_name="a",
        started_at=datetime.now(UTC),
        duration_ms=1.0,
        final_action="answered",
        escalated=False,
        input=(result,),
        output=(),
    )
    assert TurnReport.model_validate_json(report.model_dump_json()) == report
