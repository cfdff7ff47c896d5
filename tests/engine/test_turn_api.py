"""The connector API: begin, check_input, check_output, finish, abort."""

from __future__ import annotations

import pytest

from chatomon import (
    DEFAULT_BLOCKED_PLACEHOLDER,
    Atom,
    InputDecision,
    Message,
    OutputDecision,
    TurnReport,
    TurnStateError,
    Verdict,
    orbital,
)
from tests.engine.conftest import ScriptNucleus

no_acme = orbital(side="output", name="no_acme")(
    lambda ctx: Verdict.block(guidance="No Acme.") if "Acme" in ctx.message else Verdict.allow()
)
faq = orbital(side="input", name="faq")(
    lambda ctx: Verdict.respond("9 to 18.") if "open" in ctx.message else Verdict.allow("brief")
)


def connector_atom(reports: list[TurnReport]) -> Atom:
    # A connector calls its own LLM: the nucleus must never be called here.
    def unused(messages, guidance):
        raise AssertionError("a connector's atom nucleus is not called")

    return Atom("conn", unused, input=[faq], output=[no_acme], on_turn=[reports.append])


async def test_a_connector_drives_a_regenerated_turn() -> None:
    reports: list[TurnReport] = []
    turn = connector_atom(reports).begin("Hi", history=[Message(role="user", content="x")])
    assert turn.state == "new"
    decision = await turn.check_input()
    assert decision == InputDecision(kind="proceed", guidance=("brief",))
    assert turn.input_decision == decision
    assert turn.state == "input_checked"
    request = turn.nucleus_request()
    assert request.messages[-1] == Message(role="user", content="Hi")
    assert request.guidance == ("brief",)

    first = await turn.check_output("Acme is good")
    assert first == OutputDecision(kind="regenerate", guidance=("No Acme.",))
    assert turn.nucleus_request(decision.guidance + first.guidance).attempt == 2
    second = await turn.check_output("We are good")
    assert second == OutputDecision(kind="accept")
    report = await turn.finish("We are good")
    assert turn.state == "finished"
    assert report.final_action == "answered"
    assert [a.decision for a in report.output] == ["regenerate", "accept"]
    assert reports == [report]
    assert turn.next_history("We are good")[-2:] == (
        Message(role="user", content="Hi"),
        Message(role="assistant", content="We are good"),
    )


async def test_connector_reply_decision() -> None:
    reports: list[TurnReport] = []
    turn = connector_atom(reports).begin("when open?")
    decision = await turn.check_input()
    assert decision == InputDecision(kind="reply", reply="9 to 18.")
    with pytest.raises(TurnStateError):
        await turn.check_output("anything")
    report = await turn.finish("9 to 18.")
    assert report.final_action == "orbital_response"


async def test_connector_sees_redaction_of_a_blocked_message() -> None:
    block = orbital(side="input", name="b")(lambda ctx: Verdict.block(guidance="decline"))
    turn = Atom("a", ScriptNucleus(), input=[block]).begin("bad")
    assert turn.input_decision is None
    assert turn.current_message.content == "bad"
    decision = await turn.check_input()
    assert decision.kind == "guided_refusal"
    assert decision.redact_user_message
    assert turn.current_message.content == DEFAULT_BLOCKED_PLACEHOLDER
    assert turn.nucleus_request().messages[-1].content == DEFAULT_BLOCKED_PLACEHOLDER
    await turn.check_output("I can't help.")
    assert (await turn.finish("I can't help.")).final_action == "guided_refusal"


@pytest.mark.parametrize(
    "misuse",
    [
        lambda turn: turn.check_output("x"),
        lambda turn: turn.finish("x"),
    ],
)
async def test_steps_out_of_order_raise_turn_state_error(misuse) -> None:
    turn = Atom("a", ScriptNucleus()).begin("Hi")
    with pytest.raises(TurnStateError) as caught:
        await misuse(turn)
    assert caught.value.state == "new"


async def test_input_cannot_be_checked_twice_and_finished_turns_are_closed() -> None:
    turn = Atom("a", ScriptNucleus()).begin("Hi")
    await turn.check_input()
    with pytest.raises(TurnStateError, match="check_input"):
        await turn.check_input()
    await turn.check_output("ok")
    with pytest.raises(TurnStateError, match="already decided"):
        await turn.check_output("again")
    await turn.finish("ok")
    with pytest.raises(TurnStateError):
        await turn.finish("ok")


async def test_finish_after_regenerate_is_refused_and_abort_reports() -> None:
    reports: list[TurnReport] = []
    turn = connector_atom(reports).begin("Hi")
    await turn.check_input()
    await turn.check_output("Acme")
    with pytest.raises(TurnStateError, match="regenerated"):
        await turn.finish("Acme")
    report = await turn.abort(RuntimeError("gave up"))
    assert report.final_action == "aborted"
    assert report.error_type == "RuntimeError"
    assert await turn.abort(RuntimeError("again")) is report
    assert reports == [report]


async def test_last_attempt_rejected_is_a_replace_with_the_refusal() -> None:
    reports: list[TurnReport] = []
    atom = connector_atom(reports)
    turn = atom.begin("Hi")
    await turn.check_input()
    decisions = [await turn.check_output("Acme") for _ in range(atom.max_attempts)]
    assert [d.kind for d in decisions] == ["regenerate", "regenerate", "replace"]
    assert decisions[-1].text == atom.refusal
    assert (await turn.finish(atom.refusal)).final_action == "fallback_refusal"


def test_begin_rejects_a_non_text_message() -> None:
    with pytest.raises(TypeError, match="str"):
        Atom("a", ScriptNucleus()).begin(42)


async def test_finish_refuses_a_reply_the_output_chain_never_checked() -> None:
    reports: list[TurnReport] = []
    turn = connector_atom(reports).begin("Hi")
    await turn.check_input()
    with pytest.raises(TurnStateError, match="never checked"):
        await turn.finish("UNCHECKED")
    assert reports == []


async def test_finish_without_output_orbitals_needs_no_check() -> None:
    turn = Atom("a", ScriptNucleus()).begin("Hi")
    await turn.check_input()
    assert (await turn.finish("fine")).final_action == "answered"
