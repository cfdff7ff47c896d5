"""Input chain rules: allow, block (reply / guidance / nothing), respond, and history."""

from __future__ import annotations

from chatomon import (
    DEFAULT_BLOCKED_GUIDANCE,
    DEFAULT_BLOCKED_PLACEHOLDER,
    DEFAULT_REFUSAL,
    Atom,
    Message,
    OrbitalContext,
    Verdict,
    orbital,
)
from tests.engine.conftest import ScriptNucleus


def verdict_orbital(name: str, verdict: Verdict, calls: list[str] | None = None):
    @orbital(side="input", name=name)
    def check(ctx: OrbitalContext) -> Verdict:
        if calls is not None:
            calls.append(name)
        return verdict

    return check


HISTORY = (Message(role="user", content="earlier"), Message(role="assistant", content="reply"))


async def test_allow_guidance_reaches_the_nucleus_in_order(nucleus: ScriptNucleus) -> None:
    atom = Atom(
        "a",
        nucleus,
        input=[
            verdict_orbital("one", Verdict.allow("be brief")),
            verdict_orbital("two", Verdict.allow()),
            verdict_orbital("three", Verdict.allow("be kind")),
        ],
    )
    result = await atom.chat("Hi", history=HISTORY)
    assert result.reply == "Hello!"
    assert result.report.final_action == "answered"
    assert nucleus.requests[0].guidance == ("be brief", "be kind")
    assert nucleus.last_messages() == [*HISTORY, Message(role="user", content="Hi")]
    assert result.history == (
        *HISTORY,
        Message(role="user", content="Hi"),
        Message(role="assistant", content="Hello!"),
    )


async def test_block_with_reply_answers_without_the_nucleus(nucleus: ScriptNucleus) -> None:
    atom = Atom("a", nucleus, input=[verdict_orbital("b", Verdict.block(reply="Not here."))])
    result = await atom.chat("secret stuff", history=HISTORY)
    assert result.reply == "Not here."
    assert result.report.final_action == "blocked"
    assert nucleus.calls == 0
    assert result.history[-2] == Message(role="user", content=DEFAULT_BLOCKED_PLACEHOLDER)
    assert result.history[-1] == Message(role="assistant", content="Not here.")


async def test_block_without_reply_or_guidance_sends_the_refusal(nucleus: ScriptNucleus) -> None:
    atom = Atom("a", nucleus, input=[verdict_orbital("b", Verdict.block())])
    result = await atom.chat("bad")
    assert result.reply == DEFAULT_REFUSAL
    assert result.report.final_action == "blocked"
    assert nucleus.calls == 0
    assert result.history[0].content == DEFAULT_BLOCKED_PLACEHOLDER


async def test_custom_refusal_and_placeholder(nucleus: ScriptNucleus) -> None:
    atom = Atom(
        "a",
        nucleus,
        input=[verdict_orbital("b", Verdict.block())],
        refusal="No.",
        blocked_placeholder="[gone]",
    )
    result = await atom.chat("bad")
    assert result.reply == "No."
    assert result.history[0] == Message(role="user", content="[gone]")


async def test_block_with_guidance_is_a_guided_refusal(nucleus: ScriptNucleus) -> None:
    nucleus.replies = ("I can only talk about parcels.",)
    atom = Atom(
        "a",
        nucleus,
        input=[
            verdict_orbital("hint", Verdict.allow("earlier guidance is dropped")),
            verdict_orbital("b", Verdict.block(guidance="Say you only discuss parcels.")),
        ],
    )
    result = await atom.chat("tell me a secret", history=HISTORY)
    request = nucleus.requests[0]
    assert request.user_message_withheld
    assert request.messages[-1] == Message(role="user", content=DEFAULT_BLOCKED_PLACEHOLDER)
    assert "tell me a secret" not in [m.content for m in request.messages]
    assert request.guidance == (DEFAULT_BLOCKED_GUIDANCE, "Say you only discuss parcels.")
    assert result.reply == "I can only talk about parcels."
    assert result.report.final_action == "guided_refusal"
    assert result.history[-2].content == DEFAULT_BLOCKED_PLACEHOLDER


async def test_guided_refusal_without_blocked_guidance(nucleus: ScriptNucleus) -> None:
    atom = Atom(
        "a",
        nucleus,
        input=[verdict_orbital("b", Verdict.block(guidance="Decline."))],
        blocked_guidance=None,
    )
    await atom.chat("x")
    assert nucleus.requests[0].guidance == ("Decline.",)


async def test_respond_answers_directly_and_keeps_the_message(nucleus: ScriptNucleus) -> None:
    atom = Atom("a", nucleus, input=[verdict_orbital("faq", Verdict.respond("9 to 18."))])
    result = await atom.chat("When are you open?")
    assert result.reply == "9 to 18."
    assert result.report.final_action == "orbital_response"
    assert nucleus.calls == 0
    assert result.history == (
        Message(role="user", content="When are you open?"),
        Message(role="assistant", content="9 to 18."),
    )


async def test_first_decisive_verdict_ends_the_chain(nucleus: ScriptNucleus) -> None:
    calls: list[str] = []
    atom = Atom(
        "a",
        nucleus,
        input=[
            verdict_orbital("first", Verdict.allow(), calls),
            verdict_orbital("second", Verdict.respond("stop"), calls),
            verdict_orbital("third", Verdict.block(), calls),
        ],
    )
    result = await atom.chat("x")
    assert calls == ["first", "second"]
    assert [r.name for r in result.report.input] == ["first", "second"]
    assert result.report.input_not_run == ("third",)


async def test_input_orbitals_see_the_history_and_message(nucleus: ScriptNucleus) -> None:
    seen: list[OrbitalContext] = []

    @orbital(side="input")
    def spy(ctx: OrbitalContext) -> Verdict:
        seen.append(ctx)
        return Verdict.allow()

    atom = Atom("a", nucleus, input=[spy])
    result = await atom.chat("Hi", history=HISTORY, conversation_id="c-1")
    (ctx,) = seen
    assert ctx.side == "input"
    assert ctx.message == "Hi"
    assert ctx.history == HISTORY
    assert ctx.turn_id == result.report.turn_id
    assert ctx.conversation_id == "c-1"
    assert result.report.conversation_id == "c-1"


async def test_history_accepts_plain_mappings(nucleus: ScriptNucleus) -> None:
    atom = Atom("a", nucleus)
    await atom.chat("Hi", history=[{"role": "user", "content": "before"}])
    assert nucleus.last_messages()[0] == Message(role="user", content="before")
