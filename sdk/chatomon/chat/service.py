"""`ChatService`: the one turn pipeline every surface runs (DESIGN.md §2, §4b).

A turn loads (or starts) the owner's conversation, builds its bounded context, runs the
Atom around a per-turn `ToolLoop`, streams the events, persists the messages and records
the turn with its TurnReport. A mutation that needs approval is stored as a
`PendingConfirmation`; the turn waits, polling the store, until someone resolves it
through `resolve_confirmation` (from any process sharing the store) or it expires.

Events are plain JSON-ready dicts, each carrying `conversation_id`:
`text_chunk`, `tool_call`, `tool_result`, `confirm_mutation`, `done`, `error` and, from
`resolve_confirmation`, `confirmation_resolved`. Error codes: a `ToolLoopError`'s code,
`chat_error` (any other failure; the exception never reaches the client),
`conversation_not_found` (unknown or another owner's conversation id) and
`confirmation_unavailable` (unknown, foreign, already decided or expired confirmation).

Limitations: the events of a turn stream from the `run_turn` call that started it; a
resolution only wakes that waiting turn. Durable resume after a process restart (rebuilding
the loop from the stored state) is not implemented yet. The tool loop gets the stored
conversation natively (tool call groups with their results); the orbitals read it as text.
A turn that is aborted stores no messages, only its TurnRecord with the report.

```python
service = ChatService(store=MemoryStore(), provider=provider, toolset=Toolset(registry))
async for event in service.run_turn(user, "Which parts are there?"):
    send(event)
```
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from chatomon._engine.closing import close_stream
from chatomon.atom import Atom
from chatomon.chat.context import build_context
from chatomon.chat.events import ConfirmMutation, ToolCallStarted, ToolResult
from chatomon.chat.loop import LoopLimits, ToolLoop
from chatomon.chat.service_events import (
    GENERIC_ERROR_MESSAGE,
    TurnItems,
    confirmation_event,
    done_event,
    error_event,
    text_history,
)
from chatomon.chat.store.protocol import ConversationStore
from chatomon.chat.store.records import Approver, Conversation, Owner, PendingConfirmation
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import is_authenticated
from chatomon.errors import NucleusError, ToolLoopError
from chatomon.events import TextChunk, TurnDone
from chatomon.orbitals.base import Orbital, ParallelGroup
from chatomon.schemas import CaptureContent, TurnReport

__all__ = ["AtomConfig", "ChatService", "owner_of"]

logger = logging.getLogger(__name__)

UNAVAILABLE = "This confirmation is no longer available."


@dataclass(frozen=True)
class AtomConfig:
    """How the service builds each turn's Atom.

    Attributes:
        name: The atom's name in reports.
        input: Input orbitals.
        output: Output orbitals.
        capture_content: How much text reports hold ("none", "hash", "full").
        options: Any other `Atom` keyword arguments (refusal, on_turn, ...).
    """

    name: str = "chat"
    input: Sequence[Orbital | ParallelGroup] = ()
    output: Sequence[Orbital | ParallelGroup] = ()
    capture_content: CaptureContent = "none"
    options: Mapping[str, Any] = field(default_factory=dict)


def owner_of(actor: Any, owner: Owner | None = None) -> Owner:
    """The conversation owner: `owner` when given, else the authenticated actor's user id.

    Raises:
        ValueError: For an anonymous actor without an explicit (session) owner.
    """
    if owner is not None:
        return owner
    if is_authenticated(actor):
        return Owner.user(actor.id)
    raise ValueError("an anonymous actor needs owner=Owner.session(session_key)")


@dataclass
class _Turn:
    """One running turn: where it is stored and the confirmations it created."""

    owner: Owner
    conversation: Conversation
    turn_id: str
    confirmations: dict[str, PendingConfirmation] = field(default_factory=dict)

    @property
    def conversation_id(self) -> str:
        return str(self.conversation.id)


class ChatService:
    """Runs chat turns over application data and resolves their confirmations.

    Args:
        store: Where conversations, messages, turns and confirmations live.
        provider: The LLM provider of the tool loop (and of context summaries).
        toolset: The chat tools.
        atom_config: The orbitals and options of each turn's Atom.
        limits: The tool loop's per-message limits.
        system_prompt: Project instructions added to the built-in system prompt.
        max_recent_messages: Stored items kept verbatim in the context.
        summarize_after: Older items beyond which the rest is summarized.
        confirm_timeout_seconds: How long a client confirmation stays open.
        staff_approval_timeout_seconds: How long a staff approval stays open.
        poll_interval_seconds: How often a waiting turn reads its confirmation.
    """

    def __init__(
        self,
        *,
        store: ConversationStore,
        provider: Any,
        toolset: Toolset,
        atom_config: AtomConfig | None = None,
        limits: LoopLimits | None = None,
        system_prompt: str = "",
        max_recent_messages: int = 20,
        summarize_after: int = 10,
        confirm_timeout_seconds: float = 30,
        staff_approval_timeout_seconds: float = 86400,
        poll_interval_seconds: float = 0.1,
    ) -> None:
        self.store = store
        self.provider = provider
        self.toolset = toolset
        self.atom_config = atom_config or AtomConfig()
        self.limits = limits or LoopLimits()
        self.system_prompt = system_prompt
        self.max_recent_messages = max_recent_messages
        self.summarize_after = summarize_after
        self.timeouts = {"client": confirm_timeout_seconds, "staff": staff_approval_timeout_seconds}
        self.poll_interval_seconds = poll_interval_seconds

    async def run_turn(
        self,
        actor: Any,
        text: str,
        conversation_id: str | UUID | None = None,
        *,
        owner: Owner | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Run one turn, yielding its events as JSON-ready dicts; the last is done or error.

        Args:
            actor: Who asks (tool scopes and mutation permissions use it).
            text: The user message.
            conversation_id: The conversation to continue; None starts a new one.
            owner: The conversation owner; default `Owner.user(actor.id)`.
        """
        who = owner_of(actor, owner)
        conversation = await self._conversation(who, conversation_id)
        if conversation is None:
            yield error_event(
                "conversation_not_found",
                "This conversation does not exist.",
                conversation_id=None if conversation_id is None else str(conversation_id),
            )
            return
        native = await self._history(who, conversation)
        record = await self.store.start_turn(who, conversation.id)
        turn = _Turn(who, conversation, record.id)
        # aclosing: a consumer that stops reading ends the turn now, not at garbage collection.
        async with contextlib.aclosing(self._stream(turn, actor, text, native)) as events:
            async for event in events:
                yield event

    async def _stream(
        self, turn: _Turn, actor: Any, text: str, native: list[Any]
    ) -> AsyncGenerator[dict[str, Any], None]:
        items, finished = TurnItems(), False
        atom = self._atom(turn, actor, native)
        # The orbitals read the conversation as text; the tool loop gets it natively.
        stream = atom.stream(
            text,
            history=text_history(native),
            conversation_id=turn.conversation_id,
            turn_id=turn.turn_id,
        )
        try:
            async for event in stream:
                if isinstance(event, TurnDone):
                    await self.store.append_messages(
                        turn.owner, turn.conversation.id, items.finished(text, event)
                    )
                    await self._finish(turn, "completed", event.report)
                    finished = True
                    yield done_event(event, turn.conversation_id)
                    return
                items.observe(event)
                wire = await self._wire(turn, event)
                if wire is not None:
                    yield wire
        except NucleusError as error:
            await self._finish(turn, "aborted", error.report)
            finished = True
            yield self._failure(turn, error.__cause__)
        except Exception as error:
            logger.exception("chat turn %s failed", turn.turn_id)
            await self._finish(turn, "aborted", None)
            finished = True
            yield self._failure(turn, error)
        finally:
            if not finished:  # the consumer stopped reading: the turn ends here
                await close_stream(stream)
                await self._finish(turn, "aborted", None)

    def _atom(self, turn: _Turn, actor: Any, native: list[Any]) -> Atom:
        async def confirmer(pending: ConfirmMutation) -> bool:
            return await self._confirm(turn, pending)

        loop = ToolLoop(
            self.provider,
            self.toolset,
            actor=actor,
            system_prompt=self.system_prompt,
            limits=self.limits,
            confirmer=confirmer,
            history=native,
        )
        config = self.atom_config
        return Atom(
            config.name,
            loop,
            input=config.input,
            output=config.output,
            capture_content=config.capture_content,
            **config.options,
        )

    async def _wire(self, turn: _Turn, event: Any) -> dict[str, Any] | None:
        if isinstance(event, ConfirmMutation):
            confirmation = await self._pending(turn, event)
            return confirmation_event(confirmation, event.preview)
        if isinstance(event, TextChunk | ToolCallStarted | ToolResult):
            return {**event.to_dict(), "conversation_id": turn.conversation_id}
        return None  # nothing else of the engine is part of the event contract

    def _failure(self, turn: _Turn, cause: BaseException | None) -> dict[str, Any]:
        ids = {"conversation_id": turn.conversation_id, "turn_id": turn.turn_id}
        if isinstance(cause, ToolLoopError):
            return error_event(cause.code, cause.public_message, **ids)
        if cause is not None:
            logger.error("chat turn %s aborted", turn.turn_id, exc_info=cause)
        return error_event("chat_error", GENERIC_ERROR_MESSAGE, **ids)

    async def _finish(self, turn: _Turn, status: Any, report: TurnReport | None) -> None:
        await self.store.update_turn(turn.turn_id, status=status, report=report)

    async def _conversation(
        self, owner: Owner, conversation_id: str | UUID | None
    ) -> Conversation | None:
        if conversation_id is None:
            return await self.store.create_conversation(owner)
        try:
            key = conversation_id if isinstance(conversation_id, UUID) else UUID(conversation_id)
        except ValueError:
            return None
        return await self.store.get_conversation(owner, key)

    async def _history(self, owner: Owner, conversation: Conversation) -> list[Any]:
        stored = await self.store.messages(owner, conversation.id)
        built = await build_context(
            stored,
            provider=self.provider,
            summary=conversation.summary,
            max_recent_messages=self.max_recent_messages,
            summarize_after=self.summarize_after,
        )
        if built.summary_changed and built.summary is not None:
            await self.store.save_summary(owner, conversation.id, built.summary)
        return list(built.messages)

    async def _pending(self, turn: _Turn, event: ConfirmMutation) -> PendingConfirmation:
        """The stored confirmation of `event`, created the first time it is needed."""
        known = turn.confirmations.get(event.id)
        if known is not None:
            return known
        approver: Approver = "staff" if event.approver == "staff" else "client"
        expires_at = datetime.now(UTC) + timedelta(seconds=self.timeouts[approver])
        confirmation = await self.store.create_confirmation(
            turn.owner,
            turn.conversation.id,
            turn_id=turn.turn_id,
            call_id=event.id,
            mutation=event.mutation,
            input=event.input,
            preview=event.preview,
            approver=approver,
            expires_at=expires_at,
            state={"call_id": event.id, "mutation": event.mutation, "input": dict(event.input)},
        )
        turn.confirmations[event.id] = confirmation
        return confirmation

    async def _confirm(self, turn: _Turn, event: ConfirmMutation) -> bool:
        """The loop's confirmer: wait for the stored decision; True runs the mutation."""
        confirmation = await self._pending(turn, event)
        await self.store.update_turn(turn.turn_id, status="awaiting_confirmation")
        try:
            return await self._decision(confirmation.id)
        finally:
            await self.store.update_turn(turn.turn_id, status="running")

    async def _decision(self, confirmation_id: UUID) -> bool:
        while True:
            current = await self.store.get_confirmation(confirmation_id)
            status = current.status if current is not None else "cancelled"
            if status == "approved":
                return True
            if status == "expired":
                await self.store.expire_due()  # record the timeout as the final state
                return False
            if status != "pending":
                return False
            await asyncio.sleep(self.poll_interval_seconds)

    async def resolve_confirmation(
        self,
        actor: Any,
        confirmation_id: str | UUID,
        confirmed: bool,
        decided_by: str | None = None,
        *,
        owner: Owner | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Decide a pending confirmation; the waiting turn continues in its own `run_turn`.

        A client decision (no `decided_by`) is scoped to the actor's conversations and
        only decides `approver="client"` confirmations; a staff decision passes
        `decided_by` and decides only `approver="staff"` ones. Exactly one claim wins;
        every other gets `confirmation_unavailable`. The resumed turn's events flow from
        the `run_turn` that started it, not from here; resuming after a process restart
        is not implemented yet.

        Args:
            actor: Who decides.
            confirmation_id: The `id` of the `confirm_mutation` event.
            confirmed: True approves, False rejects.
            decided_by: The staff member's label for a staff approval.
            owner: The client's conversation owner; default `Owner.user(actor.id)`.
        """
        staff = decided_by is not None
        scope = None if staff else owner_of(actor, owner)
        claimed = await self._claim(confirmation_id, confirmed, decided_by, scope)
        if claimed is None:
            yield error_event("confirmation_unavailable", UNAVAILABLE)
            return
        yield {
            "type": "confirmation_resolved",
            "id": str(claimed.id),
            "status": claimed.status,
            "conversation_id": str(claimed.conversation_id),
        }

    async def _claim(
        self,
        confirmation_id: str | UUID,
        confirmed: bool,
        decided_by: str | None,
        scope: Owner | None,
    ) -> PendingConfirmation | None:
        try:
            key = confirmation_id if isinstance(confirmation_id, UUID) else UUID(confirmation_id)
        except ValueError:
            return None
        found = await self.store.get_confirmation(key, owner=scope)
        if found is None or found.approver != ("client" if scope is not None else "staff"):
            return None
        if scope is not None:
            decided_by = f"{scope.kind}:{scope.key}"
        assert decided_by is not None
        return await self.store.claim(
            key,
            decision="approved" if confirmed else "rejected",
            decided_by=decided_by,
            owner=scope,
        )
