"""`ChatService`: the one turn pipeline every surface runs (DESIGN.md §2, §4b).

A turn opens (or starts) the owner's conversation, builds its bounded context, runs the
Atom around a per-turn `ToolLoop`, streams the events, and records the messages and the
turn with its TurnReport. A mutation that needs a decision suspends the turn: its state
is stored with the `PendingConfirmation` and `run_turn` ends with `confirm_mutation`.
`resolve_confirmation` (the end user, or staff for staff approvals; any process and any
service instance sharing the store) claims it once, rebuilds the turn from the store and
continues it; `expire_due` resolves overdue ones as timed out. One turn, one TurnReport,
its waits in `pauses`.

Events are plain JSON-ready dicts, each carrying `conversation_id` and `turn_id`:
`text_chunk`, `tool_call`, `tool_result`, `confirm_mutation`, `done`, `error` and, from
`resolve_confirmation`, `confirmation_resolved`. Error codes: a `ToolLoopError`'s code
(`rate_limited` among them), `chat_error` (any other failure; the exception never reaches
the client, it goes to the listeners and the logs), `conversation_not_found` (unknown or
another owner's conversation id), `bad_event` (a confirmation id that is malformed,
unknown, another owner's, or not the decider's to decide), `confirmation_unavailable`
(a known confirmation already decided or expired) and `confirmation_pending` (a message to
a conversation whose client confirmation is still open: decide it first).

A store that cannot be reached (`StoreUnavailableError`: the database is down) gives
`chat_error` with `reason: "store_unavailable"`, whether the turn could not open or could
not be recorded at its end; a turn whose end could not be stored is recorded as aborted
once the store answers again (`chatomon.chat.pipeline.recovery`).

The tool loop gets the stored conversation natively (tool call groups with their
results); the orbitals read it as text. A turn aborted before it suspended stores no
messages, only its TurnRecord with the report.

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
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, cast
from uuid import UUID

from chatomon.atom import Atom
from chatomon.chat.budget import TurnBudget
from chatomon.chat.context import build_context, text_history
from chatomon.chat.loop import LoopLimits, LoopResume, Outcome, ToolLoop
from chatomon.chat.pipeline.activity import ActivityListener
from chatomon.chat.pipeline.driver import EventPublisher, TurnDriver
from chatomon.chat.pipeline.run import TurnItems, TurnRun
from chatomon.chat.pipeline.wire import (
    GENERIC_ERROR_MESSAGE,
    INVALID_CONFIRMATION_MESSAGE,
    UNAVAILABLE_MESSAGE,
    error_event,
    pending_event,
    resolved_event,
    store_unavailable_event,
)
from chatomon.chat.store.protocol import ConversationStore
from chatomon.chat.store.records import (
    Conversation,
    OpenedTurn,
    Owner,
    PendingConfirmation,
    StoredMessage,
)
from chatomon.chat.tools.context import AuditHook
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor, is_authenticated
from chatomon.errors import StoreUnavailableError
from chatomon.nucleus import Nucleus
from chatomon.orbitals.base import Orbital, ParallelGroup
from chatomon.redaction import DEFAULT_REDACTION, Redaction
from chatomon.schemas import CaptureContent, TurnPause
from chatomon.storable import unstorable

__all__ = ["AtomConfig", "ChatService", "TurnNucleusFactory", "owner_of"]

logger = logging.getLogger(__name__)

SUSPENDING = ("client", "staff")
"""The approvers whose decisions suspend a turn when the transport can confirm."""


class TurnNucleusFactory(Protocol):
    """Builds a turn's nucleus in place of the tool loop (`chatomon.planned.PlannedTurns`).

    `fallback` is the turn's tool loop: the nucleus hands it what it does not answer
    itself (a mutation, a guided refusal), so confirmations work as in any turn.
    """

    def nucleus(
        self,
        toolset: Toolset,
        *,
        actor: Any = None,
        fallback: Nucleus | None = None,
        budget: TurnBudget | None = None,
        audit: AuditHook | None = None,
        capture_questions: bool = False,
    ) -> Nucleus:
        """The nucleus of one turn."""
        ...


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


def _not_found(conversation_id: str | UUID | None) -> dict[str, Any]:
    """The refusal of a message to an unknown (or another owner's) conversation."""
    return error_event(
        "conversation_not_found",
        "This conversation does not exist.",
        conversation_id=None if conversation_id is None else str(conversation_id),
    )


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
        summarize_after: The stored item count beyond which the items older than the
            recent ones are summarized.
        confirm_timeout_seconds: How long a client confirmation stays open.
        staff_approval_timeout_seconds: How long a staff approval stays open.
        listeners: Receive an `Activity` for every observable step of every turn.
        publisher: Receives the events of turns resumed by a decision or an expiry, for
            the asker's other connections (a channel group).
        actor_loader: Rebuilds the asking actor from the conversation owner when someone
            else resumes the turn (a staff member, an expiry). The default gives a
            `SimpleActor` with the owner's user id (unauthenticated for a session).
        budget_for: The conversation owner's rate-limit budget, for the turns someone
            else resumes (a staff decision, an expiry): the asker's usage is counted
            whoever decides. None: such turns spend the decider's budget, if given.
        redaction: The rule the events' tool arguments, tool results and
            `confirm_mutation` input and preview pass (chatomon.redaction; default: the
            default key terms). Stored items and confirmations keep the real values.
        planned: Planned read orchestration (`chatomon.planned.PlannedTurns`): every
            message is planned, read plans answered from gathered evidence, mutation
            plans (and resumed turns) run by the tool loop. None: the tool loop only.
        audit: Receives the tools' and the planned turns' audit events (a planned
            turn's with its `conversation_id` and `turn_id`).
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
        listeners: Sequence[ActivityListener] = (),
        publisher: EventPublisher | None = None,
        actor_loader: Callable[[Owner], Awaitable[Any]] | None = None,
        budget_for: Callable[[Owner], TurnBudget | None] | None = None,
        redaction: Redaction = DEFAULT_REDACTION,
        planned: TurnNucleusFactory | None = None,
        audit: AuditHook | None = None,
    ) -> None:
        self.store = store
        self.planned = planned
        self.audit = audit
        self.provider = provider
        self.toolset = toolset
        self.atom_config = atom_config or AtomConfig()
        self.limits = limits or LoopLimits()
        self.system_prompt = system_prompt
        self.max_recent_messages = max_recent_messages
        self.summarize_after = summarize_after
        self.actor_loader = actor_loader or _simple_actor
        self.budget_for = budget_for
        self.driver = TurnDriver(
            store,
            listeners=tuple(listeners),
            publisher=publisher,
            timeouts={"client": confirm_timeout_seconds, "staff": staff_approval_timeout_seconds},
            is_mutation=toolset.is_mutation,
            redaction=redaction,
        )

    async def run_turn(
        self,
        actor: Any,
        text: str,
        conversation_id: str | UUID | None = None,
        *,
        owner: Owner | None = None,
        budget: TurnBudget | None = None,
        can_confirm: bool = True,
        new_conversation: bool = False,
    ) -> AsyncIterator[dict[str, Any]]:
        """Run one turn, yielding its events as JSON-ready dicts.

        The last event is `done`, `error`, or `confirm_mutation`: the turn then waits,
        stored, for `resolve_confirmation` (or expiry) to resume it.

        Args:
            actor: Who asks (tool scopes and mutation permissions use it).
            text: The user message.
            conversation_id: The conversation to continue; None continues the owner's
                current one (where its latest turn started; a new one when there is none).
            owner: The conversation owner; default `Owner.user(actor.id)`.
            budget: The asker's rate-limit budget, checked before every provider round,
                round of tool calls, confirmed write and summary, and told their usage.
            can_confirm: False for a transport that cannot ask the user (plain HTTP): a
                client confirmation ends the turn with `confirmation_required_transport`;
                staff approvals still suspend it.
            new_conversation: Start a new conversation (with no `conversation_id`).

        Raises:
            ValueError: Both `new_conversation` and a `conversation_id`; a `text` holding a
                character no store can keep (U+0000, an unpaired surrogate), refused
                before anything is stored.
        """
        if new_conversation and conversation_id is not None:
            raise ValueError("new_conversation starts a conversation: give no conversation_id")
        if (found := unstorable(text)) is not None:
            raise ValueError(found.describe("The message text"))
        who = owner_of(actor, owner)
        try:
            key = None if conversation_id is None else UUID(str(conversation_id))
        except ValueError:
            yield _not_found(conversation_id)  # no conversation has such an id
            return
        try:
            # The confirmation belongs to the conversation, not to the socket or page that
            # showed it: a reloaded page, a second tab, a plain HTTP client, the console's
            # chat or a notebook cannot slip a message past it. Staff approvals do not
            # block (the user cannot decide them); a new conversation has none to wait on.
            waiting = None
            if not new_conversation:
                waiting = await self.store.pending_client_confirmation(who, key, latest=True)
            opened = None
            if waiting is None:
                opened = await self._open(who, key, latest=not new_conversation)
        except StoreUnavailableError as error:
            logger.error("opening a chat turn failed: its store is unavailable: %s", error)
            yield store_unavailable_event()
            return
        except Exception:
            logger.exception("opening a chat turn failed")
            yield error_event("chat_error", GENERIC_ERROR_MESSAGE)
            return
        if waiting is not None:
            yield pending_event(waiting.id, waiting.conversation_id)
            return
        if opened is None:
            yield _not_found(conversation_id)
            return
        conversation = opened.conversation
        start = opened.messages[-1].position + 1 if opened.messages else 0
        run = TurnRun(who, conversation.id, opened.turn.id, actor, text, position=start)
        try:
            native = await self._history(who, conversation, opened.messages, budget)
            await self.driver.tell(run, "message_received", text=text)
        except Exception as error:  # noqa: BLE001 - failed() logs it; the client gets chat_error
            yield await self.driver.emit(run, await self.driver.failed(run, None, error))
            return
        except BaseException:
            # Cancelled (or failed) before the driver took over: record the turn as ended.
            await self.driver.closer.abort(run.turn_id)
            raise
        loop = self._loop(
            actor, budget, history=native, suspend_for=SUSPENDING if can_confirm else ("staff",)
        )
        nucleus: Nucleus = loop
        if self.planned is not None:
            nucleus = self.planned.nucleus(
                self.toolset,
                actor=actor,
                fallback=loop,
                budget=budget,
                audit=self._turn_audit(run),
                capture_questions=self.atom_config.capture_content == "full",
            )
        # The orbitals read the conversation as text; the tool loop gets it natively.
        stream = self._atom(nucleus).stream(
            text,
            history=text_history(native),
            conversation_id=str(conversation.id),
            turn_id=run.turn_id,
        )
        # aclosing: a consumer that stops reading ends the turn now, not at garbage collection.
        async with contextlib.aclosing(self.driver.drive(run, stream)) as events:
            async for event in events:
                yield event

    async def resolve_confirmation(
        self,
        actor: Any,
        confirmation_id: str | UUID,
        confirmed: bool,
        decided_by: str | None = None,
        *,
        owner: Owner | None = None,
        reason: str | None = None,
        budget: TurnBudget | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Decide a pending confirmation and continue its turn, yielding the turn's events.

        A client decision (no `decided_by`) is scoped to the actor's conversations and
        only decides `approver="client"` confirmations; a staff decision passes
        `decided_by` and decides only `approver="staff"` ones. An id that is malformed,
        unknown, another owner's or not this decider's kind gets `bad_event` (the seed's
        "confirmation ID is invalid"). Exactly one claim of a known confirmation wins;
        every other gets `confirmation_unavailable` (already decided, or expired). The
        winner gets `confirmation_resolved`, then the resumed turn:
        the mutation's `tool_result` (executed, or rejected), the answer, and `done` —
        or `error`, or another `confirm_mutation`. Works in any process sharing the store.

        Args:
            actor: Who decides.
            confirmation_id: The `id` of the `confirm_mutation` event.
            confirmed: True approves, False rejects.
            decided_by: The staff member's label for a staff approval.
            owner: The client's conversation owner; default `Owner.user(actor.id)`.
            reason: Why (a rejection's reason), stored with the decision.
            budget: The decider's rate-limit budget for the resumed turn's confirmed write
                and provider rounds, unless `budget_for` gives the owner's.
        """
        try:
            key = (
                confirmation_id if isinstance(confirmation_id, UUID) else UUID(str(confirmation_id))
            )
        except ValueError:
            yield error_event("bad_event", INVALID_CONFIRMATION_MESSAGE)
            return
        staff = decided_by is not None
        scope = None if staff else owner_of(actor, owner)
        try:
            claimed = await self._claim(key, confirmed, decided_by, scope, reason)
        except StoreUnavailableError as error:
            logger.error("claiming confirmation %s failed: store unavailable: %s", key, error)
            yield store_unavailable_event()
            return
        except Exception:
            logger.exception("claiming confirmation %s failed", key)
            yield error_event("chat_error", GENERIC_ERROR_MESSAGE)
            return
        if not isinstance(claimed, PendingConfirmation):
            yield claimed  # the refusal: bad_event or confirmation_unavailable
            return
        resumer = None if staff else actor
        async with contextlib.aclosing(self._resume(claimed, resumer, budget)) as events:
            async for event in events:
                yield event

    async def expire_due(self) -> int:
        """Resolve every expired pending confirmation as rejected and resume its turn.

        The model is told the change timed out (`confirmation_timed_out`) and answers;
        the turn's events go to the publisher. Returns how many were resolved.
        """
        return await self._expire()

    async def expire_confirmation(
        self, confirmation_id: str | UUID, *, now: datetime | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Expire one overdue pending confirmation and yield its resumed turn's events.

        For a transport whose client waits on the confirmation: when its `expires_at` has
        come, the turn resumes at once (`confirmation_resolved` with status "expired", the
        mutation's timed-out `tool_result`, the model's answer, then `done`, `error` or
        another `confirm_mutation`), without waiting for `expire_due`'s sweep. Yields
        nothing when it is not overdue, or was decided meanwhile: the one claim that wins
        resolves it, whoever makes it.
        """
        try:
            key = UUID(str(confirmation_id))
        except ValueError:
            return
        for confirmation in await self.store.expire_due(now, confirmation_id=key):
            async with contextlib.aclosing(self._resume(confirmation, None, None)) as events:
                async for event in events:
                    yield event

    async def _expire(self, confirmation_id: UUID | None = None) -> int:
        expired = await self.store.expire_due(confirmation_id=confirmation_id)
        for confirmation in expired:
            async with contextlib.aclosing(self._resume(confirmation, None, None)) as events:
                async for _event in events:
                    pass  # published by the driver; nobody waits for them here
        return len(expired)

    async def _resume(
        self, confirmation: PendingConfirmation, actor: Any, budget: TurnBudget | None
    ) -> AsyncGenerator[dict[str, Any]]:
        state, snapshot = confirmation.state, confirmation.state["snapshot"]
        run = TurnRun(
            Owner(**state["owner"]),
            confirmation.conversation_id,
            confirmation.turn_id,
            actor,
            snapshot["text"],
            items=TurnItems.from_dict(state["items"]),
            publish=True,
        )
        # A claimed or expired confirmation's status is the decision.
        outcome = cast("Outcome", confirmation.status)
        try:
            if run.actor is None:
                run.actor = await self.actor_loader(run.owner)
            await self.driver.tell(
                run,
                "confirmation_resolved",
                id=str(confirmation.id),
                status=confirmation.status,
                decided_by=confirmation.decided_by,
                reason=confirmation.reason,
            )
            yield await self.driver.emit(run, resolved_event(confirmation))
            await self.store.update_turn(run.turn_id, status="running")
        except Exception as error:  # noqa: BLE001 - failed() logs it; the client gets chat_error
            yield await self.driver.emit(run, await self.driver.failed(run, None, error))
            return
        except BaseException:
            # Cancelled, or the consumer stopped reading, before the driver took over: the
            # decision is claimed and will not be made again, so the turn ends here.
            await self.driver.closer.abort(run.turn_id)
            raise
        decided_at = confirmation.decided_at or datetime.now(UTC)
        pause = TurnPause(
            mutation=confirmation.mutation,
            approver=confirmation.approver,
            waited_seconds=max(0.0, (decided_at - confirmation.created_at).total_seconds()),
            outcome=outcome,
        )
        if self.budget_for is not None:
            budget = self.budget_for(run.owner) or budget  # the asker's, whoever decided
        resume = LoopResume(state["loop"], outcome, confirmation.preview)
        loop = self._loop(run.actor, budget, resume=resume)
        stream = self._atom(loop).resume(snapshot, pause=pause)
        async with contextlib.aclosing(self.driver.drive(run, stream)) as events:
            async for event in events:
                yield event

    def _loop(
        self,
        actor: Any,
        budget: TurnBudget | None,
        *,
        history: list[Any] | None = None,
        suspend_for: Collection[str] = SUSPENDING,
        resume: LoopResume | None = None,
    ) -> ToolLoop:
        return ToolLoop(
            self.provider,
            self.toolset,
            actor=actor,
            system_prompt=self.system_prompt,
            limits=self.limits,
            suspend_for=suspend_for,
            resume=resume,
            history=history,
            budget=budget,
            audit=self.audit,
        )

    def _turn_audit(self, run: TurnRun) -> AuditHook | None:
        """The audit hook of one turn: each event names its conversation and turn."""
        hook = self.audit
        if hook is None:
            return None
        ids = run.ids

        def audit(kind: str, payload: Mapping[str, Any]) -> None:
            hook(kind, {**payload, **ids})

        return audit

    def _atom(self, nucleus: Nucleus) -> Atom:
        config = self.atom_config
        return Atom(
            config.name,
            nucleus,
            input=config.input,
            output=config.output,
            capture_content=config.capture_content,
            **config.options,
        )

    async def _open(self, owner: Owner, key: UUID | None, *, latest: bool) -> OpenedTurn | None:
        # A store call runs on in its worker thread when the caller is cancelled: wait for
        # it, so that the turn it opened is recorded as aborted rather than left running.
        opening = asyncio.ensure_future(self.store.open_turn(owner, key, latest=latest))
        try:
            return await asyncio.shield(opening)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):  # an open that failed left nothing running
                opened = await opening
                if opened is not None:
                    await self.driver.closer.abort(opened.turn.id)
            raise

    async def _history(
        self,
        owner: Owner,
        conversation: Conversation,
        stored: list[StoredMessage],
        budget: TurnBudget | None,
    ) -> list[Any]:
        if not stored:
            return []
        # A summary spends the asker's budget: refused once it is exhausted, its usage recorded.
        built = await build_context(
            stored,
            provider=self.provider,
            summary=conversation.summary,
            max_recent_messages=self.max_recent_messages,
            summarize_after=self.summarize_after,
            budget=budget,
        )
        if built.summary_changed and built.summary is not None:
            await self.store.save_summary(owner, conversation.id, built.summary)
        return list(built.messages)

    async def _claim(
        self,
        key: UUID,
        confirmed: bool,
        decided_by: str | None,
        scope: Owner | None,
        reason: str | None,
    ) -> PendingConfirmation | dict[str, Any]:
        """The claimed confirmation, or the error event refusing the claim."""
        found = await self.store.get_confirmation(key, owner=scope)
        if found is None or found.approver != ("client" if scope is not None else "staff"):
            # Unknown and foreign ids read alike, so an id reveals nothing of others.
            return error_event("bad_event", INVALID_CONFIRMATION_MESSAGE)
        unavailable = error_event("confirmation_unavailable", UNAVAILABLE_MESSAGE)
        if found.status == "expired":
            await self._expire(key)  # the first touch resolves it (and only it) as timed out
            return unavailable
        if scope is not None:
            decided_by = f"{scope.kind}:{scope.key}"
        assert decided_by is not None
        claimed = await self.store.claim(
            key,
            decision="approved" if confirmed else "rejected",
            decided_by=decided_by,
            reason=reason,
            owner=scope,
        )
        return unavailable if claimed is None else claimed  # None: decided by someone else


async def _simple_actor(owner: Owner) -> SimpleActor:
    if owner.kind == "user":
        return SimpleActor(id=owner.key)
    return SimpleActor(is_authenticated=False)
