"""Driving one turn's engine events into wire events, stored rows and activities.

`ChatService` opens and resumes turns; the driver does what every turn does with the
atom's events, however it started: stream the contract's events (each with the
conversation and turn ids), keep the conversation items, store the confirmation of a
turn that suspends, close the turn as it ends (completed, awaiting confirmation or
aborted), and tell the listeners and the publisher. A turn ends here and nowhere else.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from chatomon._engine.closing import close_stream
from chatomon.chat.events import ConfirmMutation, ToolCallStarted, ToolResult
from chatomon.chat.pipeline.activity import Activity, ActivityKind, ActivityListener, deliver
from chatomon.chat.pipeline.recovery import TurnCloser
from chatomon.chat.pipeline.run import TurnRun
from chatomon.chat.pipeline.wire import (
    confirmation_event,
    done_event,
    error_event,
    public_error_event,
    store_unavailable_event,
    streamed_event,
)
from chatomon.chat.store.protocol import ConversationStore
from chatomon.chat.store.records import Approver, NewConfirmation, TurnStatus
from chatomon.errors import NucleusError, StoreUnavailableError, ToolLoopError
from chatomon.events import TurnDone, TurnSuspended
from chatomon.public_errors import GENERIC_PUBLIC_ERROR, public_chat_error
from chatomon.redaction import DEFAULT_REDACTION, Redaction
from chatomon.schemas import TurnReport

__all__ = ["EventPublisher", "TurnDriver"]

logger = logging.getLogger(__name__)

EventPublisher = Callable[[dict[str, Any]], Awaitable[None]]
"""Receives the events of turns resumed by someone other than the asker (a channel group)."""


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
        redaction: Redaction = DEFAULT_REDACTION,
    ) -> None:
        self.store = store
        self.closer = TurnCloser(store)
        """Records a turn as aborted when the store failed at its end (now or later)."""
        self.redaction = redaction  # for the wire events' tool payloads and confirmations
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

        A consumer that stops reading (a client gone) ends the turn as aborted.
        """
        finished = False
        try:
            async for event in stream:
                if isinstance(event, TurnDone):
                    finished = True
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
            yield await self.emit(run, await self.failed(run, error.report, error.__cause__))
        except Exception as error:
            if not isinstance(error, StoreUnavailableError):  # failed() says that one
                logger.exception("chat turn %s failed", run.turn_id)
            finished = True
            yield await self.emit(run, await self.failed(run, None, error))
        finally:
            # Also once finished: the engine's stream still sits at its last yield, and
            # would otherwise be closed by a task the loop starts when it collects it.
            await close_stream(stream)
            if not finished:  # the consumer stopped reading: the turn ends here
                await self._abort(run, None)

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
        return streamed_event(event, self.redaction)

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

    async def _completed(self, run: TurnRun, done: TurnDone) -> dict[str, Any]:
        await self.store.close_turn(
            run.owner,
            run.conversation_id,
            run.turn_id,
            items=run.items.finished(run.text, done),
            status="completed",
            report=done.report,
            position=run.position,
        )
        await self.tell(run, "turn_finished", **_finished_payload("completed", done.report))
        await self.tell(run, "assistant_message", **_reply_payload(done))
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
        # One unit of work: the items, the confirmation and the turn's move are stored
        # together (one trip to the store and one commit), or not at all.
        confirmation = await self.store.suspend_turn(
            run.owner,
            run.conversation_id,
            run.turn_id,
            items=stored,
            position=run.position,
            confirmation=NewConfirmation(
                pending.id, pending.mutation, pending.input, pending.preview, approver,
                expires_at, state,
            ),
        )  # fmt: skip
        await self.tell(
            run,
            "confirmation_requested",
            id=str(confirmation.id),
            mutation=confirmation.mutation,
            input=dict(confirmation.input),
            approver=approver,
            expires_at=confirmation.expires_at.isoformat(),
        )
        return confirmation_event(confirmation, pending.preview, self.redaction)

    async def failed(
        self, run: TurnRun, report: TurnReport | None, cause: BaseException | None
    ) -> dict[str, Any]:
        """End `run` as aborted: its error event, never with the exception's text.

        A ToolLoopError's code; else `public_chat_error(cause)`: a provider failure's
        stable reason (`provider_failed`, `deadline_exceeded`), or `chat_error`.
        """
        await self._abort(run, report)
        if isinstance(cause, ToolLoopError):
            extra = {}
            if cause.retry_after_seconds is not None:
                extra["retry_after_seconds"] = cause.retry_after_seconds
            event = error_event(cause.code, cause.public_message, **extra)
        elif isinstance(cause, StoreUnavailableError):
            logger.error("chat turn %s aborted: its store is unavailable: %s", run.turn_id, cause)
            event = store_unavailable_event()
        else:
            if cause is not None:
                logger.error("chat turn %s aborted", run.turn_id, exc_info=cause)
            public = GENERIC_PUBLIC_ERROR if cause is None else public_chat_error(cause)
            event = public_error_event(public)
        await self.tell(run, "error", code=event["code"], message=event["message"], exception=cause)
        return event

    async def _abort(self, run: TurnRun, report: TurnReport | None) -> None:
        # A store that fails now records it when it answers again (`TurnCloser`): the
        # client still gets its terminal event, and the turn does not stay running.
        await self.closer.abort(run.turn_id, report)
        await self.tell(run, "turn_finished", **_finished_payload("aborted", report))


def _finished_payload(status: TurnStatus, report: TurnReport | None) -> dict[str, Any]:
    """The payload of a `turn_finished` activity."""
    return {
        "status": status,
        "final_action": None if report is None else report.final_action,
        "duration_ms": None if report is None else report.duration_ms,
        "usage": None if report is None else report.usage.model_dump(),
        "report": report,
    }


def _reply_payload(done: TurnDone) -> dict[str, Any]:
    """The payload of the `assistant_message` activity of a completed turn."""
    return {"text": done.reply, "final_action": done.report.final_action}
