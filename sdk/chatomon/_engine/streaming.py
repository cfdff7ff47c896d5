"""Driving a nucleus through a Turn while streaming, and when to show the text.

The nucleus yields TextChunk events (the reply), TokenUsage values (added to the turn's
usage), an optional NucleusReply (the authoritative text) and any other event, which is
passed on to the surface as it comes.

How much of a reply the user sees before the output chain accepts it:

- no output orbitals: every chunk passes straight through;
- every output orbital declares `streaming = True`: the reply is released window by window
  (at least `window` new characters, cut at the last whitespace so that no word is split)
  once the chain lets the prefix written so far through; the final check still runs on the
  whole reply;
- otherwise: the reply is held until the chain accepts it.

When text already shown is rejected after all, the next chunk carries `reset=True`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from chatomon._engine.chain import Step
from chatomon._engine.closing import close_stream
from chatomon._engine.snapshot import ReplyProgress, snapshot_turn
from chatomon.errors import NucleusError
from chatomon.events import TextChunk, TurnDone, TurnSuspended
from chatomon.nucleus import Nucleus, NucleusReply, NucleusSuspend, StepTiming
from chatomon.schemas import PlannedTurnReport, TokenUsage

if TYPE_CHECKING:
    from chatomon.turn import Turn

__all__ = ["Release", "release_mode", "stream_turn"]

_LAST_SPACE = re.compile(r"\s(?=\S*$)")


class Release:
    """Decides which part of the reply being written may be shown now."""

    def __init__(self, turn: Turn, *, mode: str, window: int) -> None:
        self.turn = turn
        self.mode = mode
        self.window = window
        self.written = ""
        self.released = ""
        self.halted = False

    async def feed(self, text: str) -> str:
        """Take a new fragment; return the text that may be shown now (maybe empty)."""
        self.written += text
        if self.mode == "passthrough":
            self.released = self.written
            return text
        if self.mode == "buffered" or self.halted:
            return ""
        if len(self.written) - len(self.released) < self.window:
            return ""
        match = _LAST_SPACE.search(self.written, len(self.released))
        if match is None:
            return ""
        prefix = self.written[: match.end()]
        if not await self.turn.prefix_passes(prefix):
            self.halted = True
            return ""
        fresh = prefix[len(self.released) :]
        self.released = prefix
        return fresh

    def rest_of(self, reply: str) -> tuple[str, bool]:
        """What remains to show of an accepted reply, and whether the client must reset."""
        if reply.startswith(self.released):
            return reply[len(self.released) :], False
        return reply, True


def release_mode(steps: tuple[Step, ...]) -> str:
    """The release mode an output chain allows (see the module docstring)."""
    if not steps:
        return "passthrough"
    members = [m for step in steps for m in (step if isinstance(step, tuple) else (step,))]
    return "windowed" if all(member.streaming for member in members) else "buffered"


async def stream_turn(
    turn: Turn, nucleus: Nucleus, *, window: int, progress: ReplyProgress | None = None
) -> AsyncIterator[Any]:
    """Run a turn, yielding TextChunk events, the nucleus' own events, then TurnDone.

    With `progress` (a restored turn), the input chain is not run again: the nucleus
    continues the reply that was being written when the turn suspended. A nucleus that
    suspends ends the stream with `TurnSuspended` instead of `TurnDone`.
    """
    try:
        if progress is None:
            decision = await turn.check_input()
            if decision.reply is not None:
                yield TextChunk(decision.reply)
                yield await _done(turn, decision.reply)
                return
            progress = ReplyProgress(guidance=decision.guidance)
        # aclosing: closing this stream closes the nucleus' stream at once, not at GC.
        async with contextlib.aclosing(_replies(turn, nucleus, progress, window)) as replies:
            async for event in replies:
                yield event
    except BaseException as error:
        # Whatever stops the turn (nucleus failure, cancellation, a closed stream) still
        # leaves a report; abort() is a no-op when the turn already finished. A suspended
        # turn is reported by the turn that resumes it.
        if turn.state != "suspended":
            await turn.abort(error)
        raise


def _recorded(turn: Turn, event: object) -> bool:
    """Record what the report keeps of a nucleus event; True when the surface gets none of it."""
    if isinstance(event, TokenUsage):
        turn.record_usage(event)
    elif isinstance(event, StepTiming):
        turn.record_step(event)
    elif isinstance(event, PlannedTurnReport):
        turn.record_planned(event)
    else:
        if getattr(event, "type", None) == "tool_result":
            # A tool loop's (or planned executor's) result: output orbitals check the
            # reply against what the tools returned (GroundingGuard).
            turn.record_tool_result(getattr(event, "result", None))
        return False
    return True


async def _replies(
    turn: Turn, nucleus: Nucleus, progress: ReplyProgress, window: int
) -> AsyncGenerator[Any]:
    """Write replies until the output chain settles one (or the nucleus suspends)."""
    base_guidance = turn.input_decision.guidance if turn.input_decision else ()
    guidance, reset = progress.guidance, progress.reset
    release = Release(turn, mode=turn.atom.release_mode, window=window)
    release.written, release.released = progress.written, progress.released
    release.halted = progress.halted
    while True:
        reply: str | None = None
        events = nucleus.run(turn.nucleus_request(guidance))
        try:
            async for event in events:
                if isinstance(event, TextChunk):
                    shown = await release.feed(event.content)
                    if shown:
                        yield TextChunk(shown, reset=reset)
                        reset = False
                elif isinstance(event, NucleusReply):
                    reply = event.text
                elif _recorded(turn, event):
                    continue
                elif isinstance(event, NucleusSuspend):
                    now = ReplyProgress(
                        guidance, reset, release.written, release.released, release.halted
                    )
                    yield TurnSuspended(
                        snapshot=snapshot_turn(turn, now),
                        state=event.state,
                        user_message=turn.current_message.content,
                    )
                    return
                else:
                    yield event
        except Exception as error:
            report = await turn.abort(error)
            raise NucleusError(
                f"the nucleus of atom {turn.atom.name!r} failed with {type(error).__name__}",
                report=report,
            ) from error
        finally:
            await close_stream(events)
        text = release.written if reply is None else reply
        outcome = await turn.check_output(text)
        if outcome.kind == "regenerate":
            guidance = base_guidance + outcome.guidance
            reset = reset or bool(release.released)
            release = Release(turn, mode=turn.atom.release_mode, window=window)
            continue
        if outcome.kind == "replace":
            assert outcome.text is not None
            text = outcome.text
            rest, must_reset = text, bool(release.released)
        else:
            rest, must_reset = release.rest_of(text)
        if rest:
            yield TextChunk(rest, reset=reset or must_reset)
        yield await _done(turn, text)
        return


async def _done(turn: Turn, reply: str) -> TurnDone:
    report = await turn.finish(reply)
    return TurnDone(reply=reply, report=report, history=turn.next_history(reply))
