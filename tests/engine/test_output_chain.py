"""Output chain rules: accept, replace, regenerate, fallback refusal, attempts."""

from __future__ import annotations

import logging

import pytest

from chatomon import DEFAULT_REFUSAL, Atom, Message, OrbitalContext, Verdict, orbital
from tests.engine.conftest import ScriptNucleus


def rejecting(word: str, verdict: Verdict, *, name: str = "guard"):
    @orbital(side="output", name=name)
    def check(ctx: OrbitalContext) -> Verdict:
        return verdict if word in ctx.message else Verdict.allow()

    return check


async def test_allow_accepts_the_reply(nucleus: ScriptNucleus) -> None:
    atom = Atom("a", nucleus, output=[rejecting("nope", Verdict.block())])
    result = await atom.chat("Hi")
    assert result.reply == "Hello!"
    assert result.report.final_action == "answered"
    (attempt,) = result.report.output
    assert attempt.decision == "accept"
    assert attempt.results[0].attempt == 1


@pytest.mark.parametrize(
    "verdict", [Verdict.block(reply="Replaced."), Verdict.respond("Replaced.")]
)
async def test_block_with_reply_and_respond_replace(nucleus: ScriptNucleus, verdict) -> None:
    nucleus.replies = ("Acme is better",)
    atom = Atom("a", nucleus, output=[rejecting("Acme", verdict)])
    result = await atom.chat("Hi")
    assert result.reply == "Replaced."
    assert result.report.final_action == "orbital_response"
    assert result.report.output[0].decision == "replace"
    assert result.history[-1] == Message(role="assistant", content="Replaced.")
    assert nucleus.calls == 1


async def test_block_with_guidance_regenerates(nucleus: ScriptNucleus) -> None:
    nucleus.replies = ("Acme is better", "We are great")
    atom = Atom(
        "a",
        nucleus,
        input=[orbital(side="input", name="tone")(lambda ctx: Verdict.allow("Be kind."))],
        output=[rejecting("Acme", Verdict.block(guidance="No competitors."))],
    )
    result = await atom.chat("Hi")
    assert result.reply == "We are great"
    assert result.report.final_action == "answered"
    assert [a.decision for a in result.report.output] == ["regenerate", "accept"]
    assert [a.results[0].attempt for a in result.report.output] == [1, 2]
    assert nucleus.requests[0].guidance == ("Be kind.",)
    assert nucleus.requests[1].guidance == ("Be kind.", "No competitors.")
    assert nucleus.requests[1].attempt == 2


async def test_output_orbitals_see_the_attempt_and_the_user_message(
    nucleus: ScriptNucleus,
) -> None:
    nucleus.replies = ("bad", "good")
    seen: list[OrbitalContext] = []

    @orbital(side="output")
    def spy(ctx: OrbitalContext) -> Verdict:
        seen.append(ctx)
        return Verdict.block(guidance="again") if ctx.message == "bad" else Verdict.allow()

    await Atom("a", nucleus, output=[spy]).chat("Question?")
    assert [(c.attempt, c.message) for c in seen] == [(1, "bad"), (2, "good")]
    assert seen[0].side == "output"
    assert seen[0].history == (Message(role="user", content="Question?"),)


async def test_max_attempts_rejected_gives_the_fallback_refusal(nucleus: ScriptNucleus) -> None:
    nucleus.replies = ("Acme 1", "Acme 2", "Acme 3")
    atom = Atom("a", nucleus, output=[rejecting("Acme", Verdict.block(guidance="no"))])
    result = await atom.chat("Hi")
    assert result.reply == DEFAULT_REFUSAL
    assert result.report.final_action == "fallback_refusal"
    assert nucleus.calls == 3
    assert [a.decision for a in result.report.output] == ["regenerate", "regenerate", "replace"]


async def test_max_attempts_one_means_no_regeneration(nucleus: ScriptNucleus) -> None:
    nucleus.replies = ("Acme",)
    atom = Atom(
        "a", nucleus, output=[rejecting("Acme", Verdict.block(guidance="no"))], max_attempts=1
    )
    result = await atom.chat("Hi")
    assert result.report.final_action == "fallback_refusal"
    assert nucleus.calls == 1


async def test_block_without_anything_is_the_fallback_refusal(nucleus: ScriptNucleus) -> None:
    atom = Atom("a", nucleus, output=[rejecting("Hello", Verdict.block())], refusal="Sorry.")
    result = await atom.chat("Hi")
    assert result.reply == "Sorry."
    assert result.report.final_action == "fallback_refusal"
    assert nucleus.calls == 1


async def test_orbital_texts_are_not_rechecked(nucleus: ScriptNucleus) -> None:
    checked: list[str] = []

    @orbital(side="output")
    def spy(ctx: OrbitalContext) -> Verdict:
        checked.append(ctx.message)
        return Verdict.allow()

    faq = orbital(side="input", name="faq")(lambda ctx: Verdict.respond("FAQ answer"))
    result = await Atom("a", nucleus, input=[faq], output=[spy]).chat("Hi")
    assert result.reply == "FAQ answer"
    assert checked == []

    replacer = rejecting("Hello", Verdict.respond("Replacement"), name="replacer")
    result = await Atom("b", nucleus, output=[replacer, spy]).chat("Hi")
    assert result.reply == "Replacement"
    assert checked == []


async def test_guided_refusals_written_by_the_nucleus_are_checked(nucleus: ScriptNucleus) -> None:
    nucleus.replies = ("Acme can help you", "I cannot help with that")
    block_in = orbital(side="input", name="b")(lambda ctx: Verdict.block(guidance="decline"))
    atom = Atom("a", nucleus, input=[block_in], output=[rejecting("Acme", Verdict.block("x"))])
    result = await atom.chat("Hi")
    assert result.reply == "x"
    assert result.report.final_action == "orbital_response"
    assert len(result.report.output) == 1

    nucleus.requests.clear()
    nucleus.replies = ("I cannot help with that",)
    result = await atom.chat("Hi")
    assert result.report.final_action == "guided_refusal"
    assert result.report.output[0].decision == "accept"


async def test_output_guidance_on_allow_is_ignored_with_a_warning(
    nucleus: ScriptNucleus, caplog: pytest.LogCaptureFixture
) -> None:
    hint = orbital(side="output", name="hint")(lambda ctx: Verdict.allow("ignored"))
    with caplog.at_level(logging.WARNING, logger="chatomon"):
        result = await Atom("a", nucleus, output=[hint]).chat("Hi")
    assert result.report.final_action == "answered"
    assert nucleus.calls == 1
    assert nucleus.requests[0].guidance == ()
    assert any("hint" in r.getMessage() and "ignored" in r.getMessage() for r in caplog.records)
