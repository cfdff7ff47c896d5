"""Driving one turn's engine events into wire events, stored rows and activities.

`ChatService` starts and resumes turns; this module does what every turn does with the
atom's events, wherever it started: stream the contract's events (each with the
conversation and turn ids), keep the conversation items, store the confirmation of a
turn that suspends, record how the turn ended, and tell listeners and the publisher.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from chatomon._engine.closing import close_stream
from chatomon.chat.activity import (
    Activity,
    ActivityKind,
    ActivityListener,
    deliver,
    deliver_now,
)
from chatomon.chat.events import ConfirmMutation, ToolCallStarted, ToolResult
from chatomon.chat.service_events import (
    GENERIC_ERROR_MESSAGE,
    TurnItems,
    confirmation_event,
    done_event,
    error_event,
)
from chatomon.chat.store.protocol import ConversationStore
from chatomon.chat.store.records import Approver, Owner, PlannedTurn, TurnStatus
from chatomon.errors import NucleusError, ToolLoopError
from chatomon.events import TextChunk, TurnDone, TurnSuspended
from chatomon.schemas import TurnReport

if TYPE_CHECKING:
    from chatomon.chat.turn_ending import TurnEnding

__all__ = [
    "RECORD_RUNNING_AFTER",
    "EventPublisher",
    "TurnDriver",
    "TurnRun",
    "closing_fields",
    "finished_payload",
    "reply_payload",
]

logger = logging.getLogger("chatomon.chat.service")

RECORD_RUNNING_AFTER = 0.25
"""Seconds after which a turn that is only planned is written as running (see `drive`)."""

EventPublisher = Callable[[dict[str, Any]], Awaitable[None]]
"""Receives the events of turns resumed by someone other than the asker (a channel group)."""


@dataclass
class TurnRun:
    """One turn being driven: who asked, where it is stored, what it collected."""

    owner: Owner
    conversation_id: UUID
    turn_id: str
    actor: Any
    text: str
    items: TurnItems = field(default_factory=TurnItems)
    publish: bool = False
    pending: ConfirmMutation | None = None
    position: int | None = None
    """Where the turn's items are expected to start in the conversation, when known."""
    ending: TurnEnding | None = None
    """Set when the caller records and announces the completed turn itself (see
    `TurnEnding`): the stream then ends without `done`."""
    planned: PlannedTurn | None = None
    """The turn while it is only planned (`ConversationStore.plan_turn`): written as it
    ends, or as running before any other write that needs it (see `TurnDriver.record`)."""

    @property
    def ids(self) -> dict[str, str]:
        """The ids every event of the turn carries."""
        return {"conversation_id": str(self.conversation_id), "turn_id": self.turn_id}


class TurnDriver:
    """Turns the atom's events of one turn into the service's events and records."""

    def __init__(
        self,
        store: ConversationStore,
        *,
        listeners: tuple[ActivityListener, ...],
        publisher: EventPublisher | None,
        timeouts: Mapping[str, float],
        is_mutation: Callable[[str], bool],
    ) -> None:
        self.store = store
        self.listeners = listeners
        self.publisher = publisher
        self.timeouts = timeouts
        self.is_mutation = is_mutation

    async def tell(self, run: TurnRun, kind: ActivityKind, **payload: Any) -> None:
        """Deliver an activity of `run` to the listeners."""
        if self.listeners:
            activity = Activity(kind, str(run.conversation_id), run.turn_id, run.actor, payload)
            await deliver(self.listeners, activity)

    async def drive(
        self, run: TurnRun, stream: AsyncIterator[Any]
    ) -> AsyncGenerator[dict[str, Any]]:
        """Yield the wire events of `stream`; the last is done, error or confirm_mutation.

        A turn that is only planned is written as running once it has lasted
        `RECORD_RUNNING_AFTER` seconds, so that readers (the console) see a turn that waits
        on its model; a quicker one is written once, as it ends.
        """
        late = _LateRecord(self, run)  # settled before any write of the ending turn
        finished = False
        try:
            async for event in stream:
                if isinstance(event, TurnDone | TurnSuspended):
                    await late.settle()
                if isinstance(event, TurnDone):
                    finished = True
                    if run.ending is not None:
                        run.ending.hand_over(self, run, event)
                        return
                    yield await self.emit(run, await self._completed(run, event))
                    return
                if isinstance(event, TurnSuspended):
                    finished = True
                    yield await self.emit(run, await self._suspended(run, event))
                    return
                wire = await self._observe(run, event)
                if wire is not None:
                    yield await self.emit(run, wire)
        except NucleusError as error:
            finished = True
            await late.settle()
            yield await self.emit(run, await self.failed(run, error.report, error.__cause__))
        except Exception as error:
            logger.exception("chat turn %s failed", run.turn_id)
            finished = True
            await late.settle()
            yield await self.emit(run, await self.failed(run, None, error))
        finally:
            # Also once finished: the engine's stream still sits at its last yield, and
            # would otherwise be closed by a task the loop starts when it collects it.
            await close_stream(stream)
            if not finished:  # the consumer stopped reading: the turn ends here
                await late.settle()
                await self._finish(run, "aborted", None)

    async def emit(self, run: TurnRun, event: dict[str, Any]) -> dict[str, Any]:
        """`event` with the turn's ids, published first when the turn is a resumed one."""
        event = {**event, **run.ids}
        if run.publish and self.publisher is not None:
            try:
                await self.publisher(event)
            except Exception as error:  # noqa: BLE001 - a lost push never breaks the turn
                logger.error("publishing an event of turn %s failed: %s", run.turn_id, error)
        return event

    async def _observe(self, run: TurnRun, event: Any) -> dict[str, Any] | None:
        if isinstance(event, ConfirmMutation):
            run.pending = event  # sent as confirm_mutation once stored, at the suspension
            return None
        if isinstance(event, ToolCallStarted | ToolResult):
            run.items.observe(event)
        if isinstance(event, ToolResult):
            await self._tool_activity(run, event)
        if isinstance(event, TextChunk | ToolCallStarted | ToolResult):
            return event.to_dict()
        return None  # nothing else of the engine is part of the event contract

    async def _tool_activity(self, run: TurnRun, event: ToolResult) -> None:
        args = run.items.arguments_of(event.id)
        await self.tell(
            run, "tool_called", id=event.id, name=event.name, args=args, result=event.result
        )
        if self.is_mutation(event.name) and isinstance(event.result, Mapping):
            await self.tell(
                run,
                "mutation_executed",
                id=event.id,
                mutation=event.result.get("mutation", args.get("mutation")),
                input=args.get("input", {}),
                result=event.result,
            )

    def tell_now(self, run: TurnRun, kind: ActivityKind, **payload: Any) -> None:
        """`tell` for sync code (see `deliver_now`)."""
        if self.listeners:
            activity = Activity(kind, str(run.conversation_id), run.turn_id, run.actor, payload)
            deliver_now(self.listeners, activity)

    async def record(self, run: TurnRun) -> None:
        """Write `run`'s turn as running if it is only planned (before a write needing it)."""
        if run.planned is not None:
            await self.store.record_turn(run.planned)
            run.planned = None

    async def _completed(self, run: TurnRun, done: TurnDone) -> dict[str, Any]:
        await self.store.close_turn(
            run.owner, run.conversation_id, run.turn_id, **closing_fields(run, done)
        )
        run.planned = None
        await self.tell(run, "turn_finished", **finished_payload("completed", done.report))
        await self.tell(run, "assistant_message", **reply_payload(done))
        return done_event(done, str(run.conversation_id))

    async def _suspended(self, run: TurnRun, suspended: TurnSuspended) -> dict[str, Any]:
        pending = run.pending
        if pending is None:
            raise RuntimeError("the nucleus suspended without asking for a confirmation")
        approver: Approver = "staff" if pending.approver == "staff" else "client"
        expires_at = datetime.now(UTC) + timedelta(seconds=self.timeouts[approver])
        stored = run.items.take_stored(run.text, suspended.user_message)
        state = {
            "owner": {"kind": run.owner.kind, "key": run.owner.key},
            "snapshot": dict(suspended.snapshot),
            "loop": dict(suspended.state),
            "items": run.items.to_dict(),
        }
        await self.record(run)
        confirmation = await self.store.create_confirmation(
            run.owner,
            run.conversation_id,
            turn_id=run.turn_id,
            call_id=pending.id,
            mutation=pending.mutation,
            input=pending.input,
            preview=pending.preview,
            approver=approver,
            expires_at=expires_at,
            state=state,
        )
        if stored:
            await self.store.append_messages(run.owner, run.conversation_id, stored)
        await self.store.update_turn(run.turn_id, status="awaiting_confirmation")
        await self.tell(
            run,
            "confirmation_requested",
            id=str(confirmation.id),
            mutation=confirmation.mutation,
            input=dict(confirmation.input),
            approver=approver,
            expires_at=confirmation.expires_at.isoformat(),
        )
        return confirmation_event(confirmation, pending.preview)

    async def failed(
        self, run: TurnRun, report: TurnReport | None, cause: BaseException | None
    ) -> dict[str, Any]:
        """End `run` as aborted: its error event (a ToolLoopError's code, else chat_error)."""
        await self._finish(run, "aborted", report)
        if isinstance(cause, ToolLoopError):
            extra = {}
            if cause.retry_after_seconds is not None:
                extra["retry_after_seconds"] = cause.retry_after_seconds
            event = error_event(cause.code, cause.public_message, **extra)
        else:
            if cause is not None:
                logger.error("chat turn %s aborted", run.turn_id, exc_info=cause)
            event = error_event("chat_error", GENERIC_ERROR_MESSAGE)
        await self.tell(run, "error", code=event["code"], message=event["message"], exception=cause)
        return event

    async def _finish(self, run: TurnRun, status: TurnStatus, report: TurnReport | None) -> None:
        await self.record(run)
        await self.store.update_turn(run.turn_id, status=status, report=report)
        await self._reported(run, status, report)

    async def _reported(self, run: TurnRun, status: TurnStatus, report: TurnReport | None) -> None:
        await self.tell(run, "turn_finished", **finished_payload(status, report))


class _LateRecord:
    """The write of a planned turn as running, `RECORD_RUNNING_AFTER` seconds on.

    Settling stops it if it has not begun, and waits for it if it has. A timer, not a
    task, until then: most turns settle first. Nothing is timed for a turn already written.
    """

    def __init__(self, driver: TurnDriver, run: TurnRun) -> None:
        self._driver, self._run = driver, run
        self._writing: asyncio.Task[None] | None = None
        self._timer = (
            None
            if run.planned is None
            else asyncio.get_running_loop().call_later(RECORD_RUNNING_AFTER, self._begin)
        )

    def _begin(self) -> None:
        self._writing = asyncio.create_task(self._driver.record(self._run))

    async def settle(self) -> None:
        """Stop the write if not begun, else wait for it (a failed one is logged)."""
        if self._timer is not None:
            self._timer.cancel()
        if self._writing is None:
            return
        await asyncio.wait([self._writing])
        if not self._writing.cancelled() and self._writing.exception() is not None:
            # The turn is then written as it ends, as a quick one is.
            logger.warning(
                "writing turn %s as running failed", self._run.turn_id,
                exc_info=self._writing.exception(),
            )  # fmt: skip


def closing_fields(run: TurnRun, done: TurnDone) -> dict[str, Any]:
    """The `close_turn` fields of a completed turn (after its owner and ids)."""
    fields: dict[str, Any] = {
        "items": run.items.finished(run.text, done),
        "status": "completed",
        "report": done.report,
        "position": run.position,
    }
    if run.planned is not None:  # stores without planned turns never see the keyword
        fields["planned"] = run.planned
    return fields


def finished_payload(status: TurnStatus, report: TurnReport | None) -> dict[str, Any]:
    """The payload of a `turn_finished` activity."""
    return {
        "status": status,
        "final_action": None if report is None else report.final_action,
        "duration_ms": None if report is None else report.duration_ms,
        "usage": None if report is None else report.usage.model_dump(),
        "report": report,
    }


def reply_payload(done: TurnDone) -> dict[str, Any]:
    """The payload of the `assistant_message` activity of a completed turn."""
    return {"text": done.reply, "final_action": done.report.final_action}
