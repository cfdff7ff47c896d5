"""Atom.stream: passthrough, buffered and windowed release of the reply."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatomon import (
    Atom,
    NucleusError,
    NucleusReply,
    NucleusRequest,
    Orbital,
    OrbitalContext,
    TextChunk,
    TokenUsage,
    TurnDone,
    TurnReport,
    Verdict,
    orbital,
)
from tests.engine.conftest import ScriptNucleus


async def collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in stream]


def texts(events: list[Any]) -> list[str]:
    return [e.content for e in events if isinstance(e, TextChunk)]


class Banned(Orbital):
    """Blocks a word; can judge prefixes, so it declares streaming."""

    side = "output"
    streaming = True

    def __init__(self, word: str, verdict: Verdict | None = None) -> None:
        self.word = word
        self.verdict = verdict or Verdict.block(reply="[withheld]")
        self.prefixes: list[str] = []

    def check(self, ctx: OrbitalContext) -> Verdict:
        self.prefixes.append(ctx.message)
        return self.verdict if self.word in ctx.message else Verdict.allow()


async def test_no_output_orbitals_passes_chunks_straight_through() -> None:
    nucleus = ScriptNucleus(replies=("Hello there, friend",), chunk_size=5)
    events = await collect(Atom("a", nucleus).stream("Hi"))
    assert texts(events) == ["Hello", " ther", "e, fr", "iend"]
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert done.reply == "Hello there, friend"
    assert done.report.final_action == "answered"
    assert done.to_dict() == {
        "type": "done",
        "turn_id": done.report.turn_id,
        "final_action": "answered",
        "reply": "Hello there, friend",
    }


async def test_non_streaming_orbitals_hold_the_reply_until_accepted() -> None:
    nucleus = ScriptNucleus(replies=("Hello there, friend",), chunk_size=5)
    plain = orbital(side="output", name="plain")(lambda ctx: Verdict.allow())
    events = await collect(Atom("a", nucleus, output=[plain]).stream("Hi"))
    assert texts(events) == ["Hello there, friend"]


async def test_rejected_buffered_reply_is_never_shown() -> None:
    nucleus = ScriptNucleus(replies=("Acme rocks", "We rock"), chunk_size=3)
    guard = orbital(side="output", name="g")(
        lambda ctx: Verdict.block(guidance="no") if "Acme" in ctx.message else Verdict.allow()
    )
    events = await collect(Atom("a", nucleus, output=[guard]).stream("Hi"))
    assert texts(events) == ["We rock"]
    assert not any(isinstance(e, TextChunk) and e.reset for e in events)


async def test_streaming_orbitals_release_window_by_window() -> None:
    reply = "one two three four five six seven eight nine ten"
    nucleus = ScriptNucleus(replies=(reply,), chunk_size=4)
    banned = Banned("eleven")
    events = await collect(Atom("a", nucleus, output=[banned], stream_window=10).stream("Hi"))
    shown = texts(events)
    assert len(shown) > 2, "text is released before the reply is complete"
    assert "".join(shown) == reply
    for piece in shown[:-1]:
        assert piece.endswith(" "), "windows are cut at whitespace, never inside a word"
    assert banned.prefixes[-1] == reply, "the whole reply is checked last"
    assert len(events[-1].report.output) == 1, "prefix checks are not recorded as attempts"


async def test_a_failing_window_halts_release_and_the_reply_is_replaced() -> None:
    reply = "alpha beta gamma secret delta epsilon zeta"
    nucleus = ScriptNucleus(replies=(reply,), chunk_size=6)
    events = await collect(
        Atom("a", nucleus, output=[Banned("secret")], stream_window=6).stream("Hi")
    )
    chunks = [e for e in events if isinstance(e, TextChunk)]
    shown_before = "".join(c.content for c in chunks[:-1])
    assert "secret" not in shown_before
    assert shown_before, "the safe prefix was shown"
    assert chunks[-1].content == "[withheld]"
    assert chunks[-1].reset is True
    assert chunks[-1].to_dict() == {"type": "text_chunk", "content": "[withheld]", "reset": True}
    assert events[-1].reply == "[withheld]"


async def test_shown_text_rejected_later_resets_before_the_regenerated_reply() -> None:
    nucleus = ScriptNucleus(replies=("fine words then secret", "clean answer here"), chunk_size=5)
    banned = Banned("secret", Verdict.block(guidance="avoid it"))
    events = await collect(Atom("a", nucleus, output=[banned], stream_window=5).stream("Hi"))
    chunks = [e for e in events if isinstance(e, TextChunk)]
    resets = [c for c in chunks if c.reset]
    assert len(resets) == 1
    after = chunks[chunks.index(resets[0]) :]
    assert "".join(c.content for c in after) == "clean answer here"
    assert events[-1].reply == "clean answer here"


async def test_other_nucleus_events_pass_through_and_nucleus_reply_wins() -> None:
    marker = {"type": "tool_call", "id": "1"}

    class Tooling:
        async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
            yield TextChunk("thinking... ")
            yield marker
            yield NucleusReply("final text")

    events = await collect(Atom("a", Tooling()).stream("Hi"))
    assert marker in events
    assert events[-1].reply == "final text"
    chunks = [e for e in events if isinstance(e, TextChunk)]
    assert chunks[-1].content == "final text"
    assert chunks[-1].reset is True


async def test_async_generator_functions_stream_as_a_nucleus() -> None:
    async def writer(messages, guidance):
        for word in ("a", "b", "c"):
            yield word

    events = await collect(Atom("a", writer).stream("Hi"))
    assert texts(events) == ["a", "b", "c"]
    assert events[-1].reply == "abc"


async def test_input_reply_is_streamed_as_one_chunk() -> None:
    faq = orbital(side="input", name="faq")(lambda ctx: Verdict.respond("Open 9-18."))
    events = await collect(Atom("a", ScriptNucleus(), input=[faq]).stream("Hi"))
    assert texts(events) == ["Open 9-18."]
    assert events[-1].report.final_action == "orbital_response"


async def test_closing_the_stream_early_aborts_the_turn_with_a_report() -> None:
    reports: list[TurnReport] = []
    nucleus = ScriptNucleus(replies=("a b c d e f",), chunk_size=1)
    stream = Atom("a", nucleus, on_turn=[reports.append]).stream("Hi")
    first = await anext(stream)
    assert isinstance(first, TextChunk)
    await stream.aclose()
    (report,) = reports
    assert report.final_action == "aborted"
    assert report.error_type == "GeneratorExit"


async def test_nucleus_failure_midstream_raises_nucleus_error() -> None:
    async def broken(messages, guidance):
        yield "partial "
        raise RuntimeError("lost connection")

    with pytest.raises(NucleusError) as caught:
        await collect(Atom("a", broken).stream("Hi"))
    assert caught.value.report.final_action == "aborted"
    assert caught.value.report.error_type == "RuntimeError"


async def test_usage_yielded_by_the_nucleus_is_summed_into_the_report() -> None:
    async def metered(messages, guidance):
        yield TokenUsage(input_tokens=10, output_tokens=2)
        yield "answer"
        yield TokenUsage(input_tokens=5, output_tokens=1)

    events = await collect(Atom("a", metered).stream("Hi"))
    assert not any(isinstance(e, TokenUsage) for e in events)
    assert events[-1].report.usage == TokenUsage(input_tokens=15, output_tokens=3)
    assert events[-1].report.usage.total_tokens == 18


async def test_closing_the_stream_closes_the_nucleus_stream_at_once() -> None:
    closed: list[bool] = []

    class Endless:
        async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
            try:
                while True:
                    yield TextChunk("x ")
            finally:
                closed.append(True)

    stream = Atom("a", Endless()).stream("Hi")
    await anext(stream)
    await stream.aclose()
    assert closed == [True]
