"""The demo's HumanHandoff orbital: a request for a person is answered and escalated.

chatomon.demo.orbitals imports no demo model, so it is tested in this process.
"""

from __future__ import annotations

import doctest

import pytest

from chatomon import Atom, OrbitalContext
from chatomon.demo import orbitals
from chatomon.demo.orbitals import HANDOFF_REPLY, HumanHandoff


def check(text: str):
    return HumanHandoff().check(
        OrbitalContext(side="input", message=text, annotations={}, turn_id="t")
    )


@pytest.mark.parametrize(
    "text",
    ["Can I talk to a human?", "I want to SPEAK TO A PERSON now", "I have a complaint."],
)
def test_a_request_for_a_person_is_answered_and_escalated(text: str) -> None:
    verdict = check(text)
    assert (verdict.action, verdict.escalate, verdict.reason) == (
        "respond",
        True,
        "human_requested",
    )
    assert verdict.reply == HANDOFF_REPLY


@pytest.mark.parametrize("text", ["Which parts use PEEK?", "humane handling", "complaints box"])
def test_other_messages_pass(text: str) -> None:
    assert check(text).action == "allow"  # whole words only


def test_in_an_atom_the_turn_is_escalated_without_the_model() -> None:
    def nucleus(messages, guidance):
        raise AssertionError("the model must not answer a request for a person")

    result = Atom("demo", nucleus=nucleus, input=[HumanHandoff()]).chat_sync(
        "Talk to someone, please"
    )
    assert result.report.escalated and result.reply == HANDOFF_REPLY


def test_the_examples_in_its_docstring_hold() -> None:
    assert doctest.testmod(orbitals).failed == 0
