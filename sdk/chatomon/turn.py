"""`Turn`: one guarded conversation turn, step by step.

Frameworks that call the LLM themselves (connectors) drive a turn through these steps;
`Atom.chat` and `Atom.stream` drive the same object, so both paths share one set of rules.

```python
turn = atom.begin("Where is my parcel?", history=history)
decision = await turn.check_input()              # InputDecision
if decision.kind == "reply":
    reply = decision.reply
else:
    reply = my_llm(turn.nucleus_request().messages, decision.guidance)
    while (out := await turn.check_output(reply)).kind == "regenerate":
        reply = my_llm(turn.nucleus_request(decision.guidance + out.guidance).messages, ...)
    reply = out.text if out.kind == "replace" else reply
report = await turn.finish(reply)                # TurnReport, delivered to on_turn
```
"""

from __future__ import annotations

import inspect
import logging
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from chatomon._engine.capture import Capture
from chatomon._engine.chain import ChainRun, run_chain
from chatomon._engine.decisions import InputRuling, decide_input, decide_output
from chatomon.errors import TurnStateError
from chatomon.nucleus import NucleusRequest, StepTiming
from chatomon.schemas import (
    FinalAction,
    InputDecision,
    Message,
    NucleusStep,
    OrbitalContext,
    OrbitalResult,
    OutputAttempt,
    OutputDecision,
    PlannedTurnReport,
    TokenUsage,
    TurnPause,
    TurnReport,
)

if TYPE_CHECKING:
    from chatomon.atom import Atom

__all__ = ["Turn", "TurnState"]

logger = logging.getLogger("chatomon")

TurnState = Literal["new", "input_checked", "suspended", "finished"]


class Turn:
    """One turn of an atom: the input chain, the output chain per reply, the report.

    Create it with `Atom.begin`. Methods must be called in order: `check_input` once,
    then `check_output` for each reply of the nucleus (unless the input decision was
    `reply`), then `finish` with the text sent to the user, or `abort` when the turn
    cannot be completed. Every turn that was begun should end with one of the two, so
    that it leaves a TurnReport.
    """

    def __init__(
        self,
        atom: Atom,
        text: str,
        *,
        history: Sequence[Message] = (),
        conversation_id: str | None = None,
        turn_id: str | None = None,
    ) -> None:
        self.atom = atom
        self.text = text
        self.history = tuple(history)
        self.conversation_id = conversation_id
        self.turn_id = turn_id or os.urandom(16).hex()
        self.started_at = datetime.now(UTC)
        self._started = time.perf_counter()
        self._capture = Capture(atom.capture_content, atom.record_redaction)
        self._annotations: dict[str, Any] = {}
        self._input: InputRuling | None = None
        self._input_results: tuple[OrbitalResult, ...] = ()
        self._input_not_run: tuple[str, ...] = ()
        self._attempts: list[OutputAttempt] = []
        self._last_output: OutputDecision | None = None
        self._ending: FinalAction | None = None
        self._escalated = False
        self._report: TurnReport | None = None
        self._final_reply: str | None = None
        self._usage = TokenUsage()
        self._steps: list[NucleusStep] = []
        self._planned: PlannedTurnReport | None = None
        self._tool_results: list[Any] = []
        self._pauses: list[TurnPause] = []
        self._suspended = False
        # What history records of the user message: the text, until a block replaces it.
        self._current_message = Message(role="user", content=text)

    # -- state -------------------------------------------------------------------------

    @property
    def state(self) -> TurnState:
        """The state of the turn: "new", "input_checked", "suspended" or "finished".

        A suspended turn was saved by `Atom.stream` to be resumed with `Atom.resume`;
        this object is done with, the restored one carries on.
        """
        if self._report is not None:
            return "finished"
        if self._suspended:
            return "suspended"
        return "new" if self._input is None else "input_checked"

    @property
    def input_decision(self) -> InputDecision | None:
        """The decision of the input chain, once `check_input` ran."""
        return None if self._input is None else self._input.decision

    @property
    def report(self) -> TurnReport | None:
        """The TurnReport, once the turn finished or was aborted."""
        return self._report

    def _require(self, operation: str, *states: TurnState) -> None:
        if self.state not in states:
            raise TurnStateError(
                f"Turn.{operation}() cannot be called when the turn is {self.state!r} "
                f"(allowed: {', '.join(states)})",
                state=self.state,
                operation=operation,
            )

    # -- the conversation as the nucleus and the orbitals see it -------------------------

    @property
    def redacted(self) -> bool:
        """Whether the user message is replaced by the placeholder (after a block)."""
        return self._input is not None and self._input.decision.redact_user_message

    @property
    def current_message(self) -> Message:
        """The user message as history records it: the text, or the placeholder."""
        return self._current_message

    def nucleus_request(self, guidance: tuple[str, ...] | None = None) -> NucleusRequest:
        """The request for the next reply; guidance defaults to the input decision's."""
        self._require("nucleus_request", "input_checked")
        assert self._input is not None
        return NucleusRequest(
            messages=(*self.history, self.current_message),
            guidance=self._input.decision.guidance if guidance is None else guidance,
            turn_id=self.turn_id,
            conversation_id=self.conversation_id,
            attempt=len(self._attempts) + 1,
            user_message_withheld=self.redacted,
        )

    def next_history(self, final_reply: str) -> tuple[Message, ...]:
        """The conversation as the next turn should receive it."""
        reply = Message(role="assistant", content=final_reply)
        return (*self.history, self.current_message, reply)

    def _context(
        self, side: Literal["input", "output"], message: str, attempt: int = 1
    ) -> Callable[[dict[str, Any]], OrbitalContext]:
        history = self.history if side == "input" else (*self.history, self.current_message)
        tool_results = tuple(self._tool_results) if side == "output" else ()

        def make(annotations: dict[str, Any]) -> OrbitalContext:
            return OrbitalContext(
                side=side,
                message=message,
                history=history,
                annotations=annotations,
                attempt=attempt,
                turn_id=self.turn_id,
                conversation_id=self.conversation_id,
                tool_results=tool_results,
            )

        return make

    def record_usage(self, usage: TokenUsage) -> None:
        """Add the tokens of a model call to the turn's usage (reported in the TurnReport)."""
        self._usage = self._usage + usage

    def record_tool_result(self, result: Any) -> None:
        """Keep a tool result of the nucleus for the output orbitals (`ctx.tool_results`)."""
        self._tool_results.append(result)

    def record_planned(self, planned: PlannedTurnReport) -> None:
        """Keep what a planned nucleus reports of its plan (the TurnReport's `planned`)."""
        self._planned = planned

    def record_step(self, timing: StepTiming) -> None:
        """Add a timed provider round or tool call of the nucleus to the report's steps."""
        self._steps.append(
            NucleusStep(
                kind=timing.kind,
                name=timing.name,
                started_ms=(timing.started - self._started) * 1000,
                duration_ms=(timing.ended - timing.started) * 1000,
                status=timing.status,
                model=timing.model,
                usage=timing.usage,
            )
        )

    def record_pause(self, pause: TurnPause) -> None:
        """Add a wait for a mutation decision to the report's pauses."""
        self._pauses.append(pause)

    # -- the steps -----------------------------------------------------------------------

    async def check_input(self) -> InputDecision:
        """Run the input chain on the user message and return what to do next."""
        self._require("check_input", "new")
        run = await run_chain(
            self.atom.input_steps, self._context("input", self.text), self._annotations
        )
        self._input_results = self._results(run, "input", 1)
        self._input_not_run = run.not_run
        self._input = decide_input(
            run, refusal=self.atom.refusal, blocked_guidance=self.atom.blocked_guidance
        )
        if self._input.decision.redact_user_message:
            self._current_message = Message(role="user", content=self.atom.blocked_placeholder)
        return self._input.decision

    async def check_output(self, reply: str) -> OutputDecision:
        """Run the output chain on a reply of the nucleus and return what to do with it."""
        self._require("check_output", "input_checked")
        assert self._input is not None
        if self._input.final_action is not None:
            raise TurnStateError(
                "Turn.check_output() after an input decision of kind 'reply': "
                "the nucleus was not to be called",
                state=self.state,
                operation="check_output",
            )
        attempt = len(self._attempts) + 1
        if self._last_output is not None and self._last_output.kind != "regenerate":
            raise TurnStateError(
                f"Turn.check_output(): the last reply was already decided "
                f"({self._last_output.kind!r}); call finish()",
                state=self.state,
                operation="check_output",
            )
        run = await run_chain(
            self.atom.output_steps, self._context("output", reply, attempt), self._annotations
        )
        ruling = decide_output(
            run, attempt=attempt, max_attempts=self.atom.max_attempts, refusal=self.atom.refusal
        )
        self._attempts.append(
            OutputAttempt(
                nucleus_reply=self._capture.text(reply),
                results=self._results(run, "output", attempt),
                decision=ruling.decision.kind,
                not_run=run.not_run,
            )
        )
        self._last_output = ruling.decision
        self._ending = ruling.final_action
        return ruling.decision

    async def prefix_passes(self, prefix: str) -> bool:
        """Whether the output chain lets a prefix of the next reply through (not recorded).

        Used by `Atom.stream` to release text of a reply that is still being written,
        when every output orbital declares `streaming = True`.
        """
        self._require("prefix_passes", "input_checked")
        attempt = len(self._attempts) + 1
        scratch = dict(self._annotations)
        run = await run_chain(
            self.atom.output_steps, self._context("output", prefix, attempt), scratch
        )
        return run.decisive is None

    async def finish(self, final_reply: str) -> TurnReport:
        """End the turn with the text sent to the user; deliver and return the report."""
        self._require("finish", "input_checked")
        assert self._input is not None
        if (
            self._input.final_action is None
            and self._last_output is None
            and (self.atom.output_steps)
        ):
            raise TurnStateError(
                "Turn.finish(): the nucleus reply was never checked; call check_output() "
                "first (the atom has output orbitals)",
                state=self.state,
                operation="finish",
            )
        if self._last_output is not None and self._last_output.kind == "regenerate":
            raise TurnStateError(
                "Turn.finish(): the last reply was to be regenerated; check the new reply "
                "with check_output() or end the turn with abort()",
                state=self.state,
                operation="finish",
            )
        return await self._end(self._final_action(), final_reply, None)

    async def abort(self, error: BaseException) -> TurnReport:
        """End the turn without an answer (final_action "aborted"); returns the report."""
        if self._report is not None:
            return self._report
        return await self._end("aborted", None, error)

    # -- the report ----------------------------------------------------------------------

    def _results(
        self, run: ChainRun, side: Literal["input", "output"], attempt: int
    ) -> tuple[OrbitalResult, ...]:
        for outcome in run.outcomes:
            self._escalated = self._escalated or outcome.verdict.escalate
        return tuple(self._capture.orbital_result(o, side, attempt) for o in run.outcomes)

    def _final_action(self) -> FinalAction:
        assert self._input is not None
        if self._input.final_action is not None:
            return self._input.final_action
        if self._ending is not None:
            return self._ending
        return "guided_refusal" if self._input.decision.kind == "guided_refusal" else "answered"

    async def _end(
        self, final_action: FinalAction, final_reply: str | None, error: BaseException | None
    ) -> TurnReport:
        capture = self._capture
        duration_ms = (time.perf_counter() - self._started) * 1000
        self._final_reply = final_reply
        self._report = TurnReport(
            turn_id=self.turn_id,
            conversation_id=self.conversation_id,
            atom_name=self.atom.name,
            started_at=self.started_at,
            duration_ms=duration_ms,
            final_action=final_action,
            escalated=self._escalated,
            input=self._input_results,
            output=tuple(self._attempts),
            user_message=capture.text(self.text),
            final_reply=capture.text(final_reply),
            error_type=None if error is None else type(error).__name__,
            error_message=capture.error_message(error),
            input_not_run=self._input_not_run,
            capture_content=capture.level,
            usage=self._usage,
            steps=tuple(self._steps),
            pauses=tuple(self._pauses),
            planned=self._planned,
        )
        if logger.isEnabledFor(logging.INFO):
            logger.info(
                "turn %s atom=%s final_action=%s escalated=%s attempts=%d in %.2f ms",
                self.turn_id,
                self.atom.name,
                final_action,
                self._escalated,
                len(self._attempts),
                duration_ms,
            )
        await self._deliver(self._report)
        return self._report

    async def _deliver(self, report: TurnReport) -> None:
        for sink in self.atom.on_turn:
            try:
                result = sink(report)
                if inspect.isawaitable(result):
                    await result
            except Exception as error:  # noqa: BLE001 - a failing sink never breaks the turn
                # Labels only: the exception's message and traceback may quote content.
                logger.error(
                    "on_turn sink %s failed with %s",
                    getattr(sink, "__qualname__", type(sink).__name__),
                    type(error).__name__,
                )
