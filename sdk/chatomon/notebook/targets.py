"""What a `ChatWidget` talks to: an Atom or a ChatService, behind one small interface.

Both sessions yield the chat event contract's dicts (`text_chunk`, `tool_call`,
`tool_result`, `confirm_mutation`, `confirmation_resolved`, `done`, `error`); `done` and
an aborted turn's `error` also carry the turn's `TurnReport` under "report", which the
widget keeps.

- `AtomSession` keeps the conversation history between turns. An atom whose nucleus is a
  tool loop asks its `confirmer` about mutations: pass the session's `confirm` (through
  `ChatWidget.confirm`) and the widget's Approve / Reject buttons decide them.
- `ServiceSession` continues one conversation of a ChatService. A turn that needs a
  confirmation ends at `confirm_mutation`; deciding it streams the resumed turn's events
  from `resolve_confirmation`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from chatomon.chat.events import ConfirmMutation
from chatomon.chat.pipeline.wire import (
    INVALID_CONFIRMATION_MESSAGE,
    UNAVAILABLE_MESSAGE,
    answered_event,
    asked_confirmation_event,
    done_event,
    error_event,
    streamed_event,
)
from chatomon.errors import ToolLoopError, TurnError
from chatomon.events import TurnDone
from chatomon.public_errors import GENERIC_ERROR_CODE, public_chat_error
from chatomon.schemas import Message, TurnReport

if TYPE_CHECKING:
    from chatomon.atom import Atom
    from chatomon.chat.pipeline import ChatService
    from chatomon.chat.store.records import Owner

__all__ = ["AtomSession", "ChatSession", "ServiceSession", "session_for"]

Event = dict[str, Any]


class ChatSession(Protocol):
    """One conversation with a target, as the widget drives it."""

    def turn(self, text: str) -> AsyncIterator[Event]:
        """Run a turn for the user message `text`, yielding its events."""
        ...

    def decide(self, confirmation: Mapping[str, Any], approved: bool) -> AsyncIterator[Event]:
        """Approve or reject the `confirm_mutation` event `confirmation`, yielding events."""
        ...


def _failure(error: TurnError) -> Event:
    cause = error.__cause__
    if isinstance(cause, ToolLoopError):
        code, message = cause.code, cause.public_message
    else:
        # The public code, as a ChatService turn would end; the message keeps the detail
        # (the notebook's user is the developer of the atom, not an end user).
        code = GENERIC_ERROR_CODE if cause is None else public_chat_error(cause).code
        message = str(error)
        if cause is not None:
            message += f": {cause}"
    return error_event(code, message, report=error.report)


class AtomSession:
    """Turns of an Atom with the history it hands back, and its pending confirmations.

    Its events are the pipeline's wire forms (`chatomon.chat.pipeline.wire`), as a
    ChatService turn's are: tool payloads, mutation inputs and previews pass the atom's
    `record_redaction` (a `PIIGuard` hides personal data here too).
    """

    def __init__(self, atom: Atom) -> None:
        self.atom = atom
        self.history: tuple[Message, ...] = ()
        self._decisions: dict[str, tuple[ConfirmMutation, asyncio.Future[bool]]] = {}
        self._closed: set[str] = set()  # asked here, then decided or dropped

    async def turn(self, text: str) -> AsyncGenerator[Event, None]:
        """Run a turn; the history advances when it answers."""
        stream = self.atom.stream(text, history=self.history)
        try:
            async for event in stream:
                if isinstance(event, TurnDone):
                    self.history = event.history
                    yield {**done_event(event, None), "report": event.report}
                elif isinstance(event, ConfirmMutation):
                    yield asked_confirmation_event(event, self.atom.record_redaction)
                elif (wire := streamed_event(event, self.atom.record_redaction)) is not None:
                    yield wire
        except TurnError as error:
            yield _failure(error)
        finally:
            await _close(stream)

    async def confirm(self, pending: ConfirmMutation) -> bool:
        """A tool loop `Confirmer`: waits until `decide` answers for `pending`."""
        decision: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._decisions[pending.id] = (pending, decision)
        try:
            return await decision
        finally:
            self._decisions.pop(pending.id, None)
            self._closed.add(pending.id)

    async def decide(
        self, confirmation: Mapping[str, Any], approved: bool
    ) -> AsyncGenerator[Event, None]:
        """Answer the waiting confirmer; the turn goes on in its own stream."""
        key = str(confirmation.get("id"))
        waiting = self._decisions.get(key)
        if waiting is None or waiting[1].done():
            # As ChatService answers: a confirmation asked here and already decided (or
            # dropped) is unavailable; an id never asked here is invalid.
            known = key in self._closed or waiting is not None
            code = "confirmation_unavailable" if known else "bad_event"
            message = UNAVAILABLE_MESSAGE if known else INVALID_CONFIRMATION_MESSAGE
            yield error_event(code, message)
            return
        pending, decision = waiting
        decision.set_result(approved)
        yield answered_event(pending, approved)

    def cancel_waiting(self) -> None:
        """Drop the confirmations a stopped turn waited for (their waiters are cancelled)."""
        for _, decision in self._decisions.values():
            decision.cancel()
        self._closed.update(self._decisions)
        self._decisions.clear()


class ServiceSession:
    """One conversation of a ChatService, continued turn after turn.

    Args:
        service: The chat service.
        actor: Who asks (tool scopes and mutation permissions use it).
        owner: The conversation owner; default `Owner.user(actor.id)`.
        staff_label: When set, staff approvals are decided from the widget as this staff
            member (`decided_by`); otherwise they wait for the console.
    """

    def __init__(
        self,
        service: ChatService,
        actor: Any,
        *,
        owner: Owner | None = None,
        staff_label: str | None = None,
    ) -> None:
        self.service = service
        self.actor = actor
        self.owner = owner
        self.staff_label = staff_label
        self.conversation_id: str | None = None

    async def turn(self, text: str) -> AsyncGenerator[Event, None]:
        """Run a turn in this session's conversation (started by the first turn)."""
        events = self.service.run_turn(
            self.actor,
            text,
            self.conversation_id,
            owner=self.owner,
            new_conversation=self.conversation_id is None,  # a widget starts its own
        )
        async for event in self._relay(events):
            yield event

    async def decide(
        self, confirmation: Mapping[str, Any], approved: bool
    ) -> AsyncGenerator[Event, None]:
        """Resolve the confirmation and stream the resumed turn."""
        staff = confirmation.get("approver") == "staff"
        events = self.service.resolve_confirmation(
            self.actor,
            str(confirmation.get("id")),
            approved,
            self.staff_label if staff else None,
            owner=None if staff else self.owner,
        )
        async for event in self._relay(events):
            yield event

    async def _relay(self, events: AsyncIterator[Event]) -> AsyncGenerator[Event, None]:
        try:
            async for event in events:
                self.conversation_id = event.get("conversation_id") or self.conversation_id
                if event.get("type") == "done" and event.get("turn_id"):
                    yield {**event, "report": await self._report(str(event["turn_id"]))}
                else:
                    yield event
        finally:
            await _close(events)

    async def _report(self, turn_id: str) -> TurnReport | None:
        record = await self.service.store.get_turn(turn_id)
        if record is None or record.report is None:
            return None
        return TurnReport.model_validate(record.report)


async def _close(stream: object) -> None:
    # Close now, not when the loop collects the generator: a ChatService turn that is not
    # read to its end is recorded as aborted when its stream closes.
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


def session_for(
    target: object,
    *,
    actor: Any = None,
    owner: Owner | None = None,
    staff_label: str | None = None,
) -> ChatSession:
    """The session for an Atom or a ChatService.

    Raises:
        TypeError: For any other target.
    """
    from chatomon.atom import Atom  # noqa: PLC0415 - the widget module loads lazily

    if isinstance(target, Atom):
        return AtomSession(target)
    # Duck-typed: anything with the ChatService contract's two methods is a service.
    if hasattr(target, "run_turn") and hasattr(target, "resolve_confirmation"):
        service = cast("ChatService", target)
        return ServiceSession(service, actor, owner=owner, staff_label=staff_label)
    raise TypeError(f"ChatWidget chats with an Atom or a ChatService, got {type(target).__name__}")
