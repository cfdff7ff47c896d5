"""Suspending a turn inside its nucleus and resuming it from the JSON snapshot."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatomon import (
    Atom,
    Blocklist,
    MaxLength,
    Orbital,
    OrbitalContext,
    TokenUsage,
    TurnDone,
    Verdict,
)
from chatomon.errors import TurnStateError
from chatomon.events import TextChunk, TurnSuspended
from chatomon.nucleus import NucleusRequest, NucleusSuspend, StepTiming
from chatomon.schemas import TurnPause


class Pausing:
    """Writes "Let me check. ", then suspends with its request's guidance as state."""

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        yield TextChunk("Let me check. ")
        yield TokenUsage(input_tokens=5)
        now = time.perf_counter()
        yield StepTiming("tool_call", "lookup", now, now + 0.001, "waiting")
        yield NucleusSuspend({"guidance": list(request.guidance), "attempt": request.attempt})


class Continuing:
    """Continues a suspended reply: writes the rest, then the given replies per attempt."""

    def __init__(self, *rest: str) -> None:
        self.rest = list(rest)
        self.requests: list[NucleusRequest] = []

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        yield TextChunk(self.rest.pop(0))
        yield TokenUsage(output_tokens=3)


async def suspend(atom: Atom, text: str = "How many parts?") -> TurnSuspended:
    events = [event async for event in atom.stream(text, turn_id="t-1")]
    assert isinstance(events[-1], TurnSuspended)
    return events[-1]


async def test_a_suspended_turn_resumes_into_one_report() -> None:
    reports: list[Any] = []
    paused = await suspend(Atom("data", Pausing(), on_turn=[reports.append]))
    assert reports == []  # nothing is reported while the turn waits
    assert paused.state == {"guidance": [], "attempt": 1}
    snapshot = json.loads(json.dumps(paused.snapshot))  # it survives a trip through JSON
    pause = TurnPause(
        mutation="createPart", approver="client", waited_seconds=2.5, outcome="approved"
    )
    atom = Atom("data", Continuing("There are 3."), on_turn=[reports.append])
    events = [event async for event in atom.resume(snapshot, pause=pause)]
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert done.reply == "Let me check. There are 3."
    (report,) = reports
    assert report.turn_id == "t-1" and report.final_action == "answered"
    assert report.usage == TokenUsage(input_tokens=5, output_tokens=3)
    assert report.pauses == (pause,)
    assert [(s.kind, s.name, s.status) for s in report.steps] == [
        ("tool_call", "lookup", "waiting")
    ]


async def test_the_input_chain_is_not_run_again_on_resume() -> None:
    length = MaxLength(100)
    paused = await suspend(Atom("data", Pausing(), input=[length]))
    resumed = Atom("data", Continuing("Three."), input=[length])
    events = [event async for event in resumed.resume(paused.snapshot)]
    report = events[-1].report
    assert [r.kind for r in report.input] == ["MaxLength"]  # the one result from before


async def test_the_output_chain_checks_the_whole_reply_and_may_regenerate() -> None:
    guard = Blocklist(["secret"], guidance="Never say secret.")
    paused = await suspend(Atom("data", Pausing(), output=[guard]))
    nucleus = Continuing("The secret is 3.", "There are 3.")
    resumed = Atom("data", nucleus, output=[guard])
    events = [event async for event in resumed.resume(paused.snapshot)]
    done = events[-1]
    assert done.reply == "There are 3."
    assert nucleus.requests[1].guidance == ("Never say secret.",)
    assert [a.decision for a in done.report.output] == ["regenerate", "accept"]


class Checked(Orbital):
    """Blocks "check"; judges prefixes (streaming) and records every text it checks."""

    side = "output"
    streaming = True

    def __init__(self) -> None:
        self.checked: list[str] = []

    def check(self, ctx: OrbitalContext) -> Verdict:
        self.checked.append(ctx.message)
        return Verdict.block(reply="[withheld]") if "check" in ctx.message else Verdict.allow()


async def test_a_release_halted_before_the_suspension_stays_halted() -> None:
    guard = Checked()
    paused = await suspend(Atom("data", Pausing(), output=[guard], stream_window=4))
    assert guard.checked == ["Let me check. "]  # the prefix failed: release halted
    guard.checked.clear()
    resumed = Atom("data", Continuing("There are three of them."), output=[guard], stream_window=4)
    events = [event async for event in resumed.resume(json.loads(json.dumps(paused.snapshot)))]
    assert guard.checked == ["Let me check. There are three of them."]  # only the final check
    assert [e.content for e in events if isinstance(e, TextChunk)] == ["[withheld]"]


async def test_a_resumed_turn_can_suspend_again() -> None:
    paused = await suspend(Atom("data", Pausing()))
    again = [event async for event in Atom("data", Pausing()).resume(paused.snapshot)]
    assert isinstance(again[-1], TurnSuspended)
    final = Atom("data", Continuing("Done."))
    events = [event async for event in final.resume(again[-1].snapshot)]
    assert events[-1].reply == "Let me check. Let me check. Done."
    assert events[-1].report.usage.input_tokens == 10


async def test_a_snapshot_of_another_atom_is_refused() -> None:
    paused = await suspend(Atom("data", Pausing()))
    with pytest.raises(TurnStateError, match="atom 'data'"):
        Atom("other", Continuing("x")).resume(paused.snapshot)


async def test_closing_a_suspended_stream_does_not_abort_the_turn() -> None:
    reports: list[Any] = []
    stream = Atom("data", Pausing(), on_turn=[reports.append]).stream("Hi")
    async for event in stream:
        if isinstance(event, TurnSuspended):
            break
    await stream.aclose()
    assert reports == []
