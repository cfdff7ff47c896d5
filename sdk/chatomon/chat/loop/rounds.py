"""`ToolLoop`: the nucleus of a data turn — provider rounds with the chat tools.

Each round sends the conversation (and the tool results so far) to the provider, streams
its text, and collects its tool calls. Read-only calls of one completion run concurrently,
their results given back in call order. A completion that asks for `mutate` together with
any other call is refused before any tool runs (`mutation_batch_unsupported`). A mutation
that needs approval is handed to the loop's `confirmer` and the turn waits for its answer;
without a confirmer the loop suspends the turn (its state saved as `LoopState`) and a loop
built with `resume=LoopResume(state, outcome, preview)` continues it once the decision is in.

Limits, as the chat settings define them, end the turn with a `ToolLoopError`:
`max_retries_per_message` ("Maximum non-mutation tool-loop retries in one user turn": each
round whose non-mutation tool calls send the loop back to the provider is one retry, and the
round after the last allowed one is refused before its tools run; with
`max_retries_counts="failed_tool_rounds"`, only rounds whose tool results held an error
count), `max_mutations_per_message` (0 forbids writes) and `max_total_rounds_per_message`
(default: retries + mutations + 2). A `TurnBudget` is asked before every provider round,
every round of tool calls and every confirmed write (`rate_limited` once exhausted), and
told the usage of every completed round.

```python
loop = ToolLoop(provider, Toolset(toy_registry()), actor=user)
atom = Atom("data", loop)
result = await atom.chat("Which projects use aluminum parts?")
```
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Literal, get_args

from chatomon.chat.budget import TurnBudget, require_room
from chatomon.chat.events import ConfirmMutation, ToolCallStarted, ToolResult
from chatomon.chat.loop.suspension import (
    LoopResume,
    LoopState,
    Outcome,
    PendingCall,
    declined_result,
)
from chatomon.chat.prompts import NO_ANSWER_RECOVERY, NO_TOOLS_RECOVERY, system_prompt
from chatomon.chat.tools.toolset import Toolset
from chatomon.errors import ConfigurationError, ToolLoopError
from chatomon.events import TextChunk
from chatomon.nucleus import (
    NucleusReply,
    NucleusRequest,
    NucleusSuspend,
    StepTiming,
    provider_model,
)
from chatomon.providers.base import (
    DoneEvent,
    Message,
    TextChunkEvent,
    ToolCall,
    ToolCallEvent,
)
from chatomon.providers.contract import run_completion

__all__ = ["Confirmer", "LoopLimits", "RetryCounting", "ToolLoop"]

Confirmer = Callable[[ConfirmMutation], Awaitable[bool]]
"""Decides a pending mutation: resolves to True to run it, False to reject it."""

RetryCounting = Literal["tool_rounds", "failed_tool_rounds"]
"""What `max_retries_per_message` counts.

"tool_rounds" (the reference's meaning, the default): every round of non-mutation tool
calls. "failed_tool_rounds" (chatomon's option): only rounds whose tool results held an
error the model had to correct, so that a long but successful discovery (search, schema,
path, query) is bounded by the round cap alone.
"""


@dataclass(frozen=True, slots=True)
class LoopLimits:
    """The per-message limits of the chat settings, with their defaults.

    Attributes:
        max_retries_per_message: Non-mutation tool-loop retries allowed in one turn.
        max_mutations_per_message: Mutation executions allowed in one turn (0: none).
        max_total_rounds_per_message: The provider round cap (None: the default one).
        recover_missing_tool_calls: Whether an answer without tools is sent back once.
        max_retries_counts: What counts as a retry (see `RetryCounting`).
    """

    max_retries_per_message: int = 3
    max_mutations_per_message: int = 8
    max_total_rounds_per_message: int | None = None
    recover_missing_tool_calls: bool = False
    max_retries_counts: RetryCounting = "tool_rounds"

    def __post_init__(self) -> None:
        if self.max_retries_counts not in get_args(RetryCounting):
            raise ConfigurationError(
                f"max_retries_counts must be one of {', '.join(get_args(RetryCounting))}, "
                f"got {self.max_retries_counts!r}",
                field="max_retries_counts",
                value=self.max_retries_counts,
            )
        for name in ("max_retries_per_message", "max_mutations_per_message"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(
                    f"{name} must be a whole number of at least 0, got {value!r}",
                    field=name,
                    value=value,
                )
        cap = self.max_total_rounds_per_message
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ConfigurationError(
                f"max_total_rounds_per_message must be a positive whole number or None, "
                f"got {cap!r}",
                field="max_total_rounds_per_message",
                value=cap,
            )

    @property
    def total_rounds(self) -> int:
        """The round cap in force."""
        if self.max_total_rounds_per_message is not None:
            return self.max_total_rounds_per_message
        return self.max_retries_per_message + self.max_mutations_per_message + 2


class ToolLoop:
    """A nucleus that answers from application data by calling tools.

    Args:
        provider: The LLM provider (any object with the provider protocol).
        toolset: The chat tools over the application's managers.
        actor: Who is asking (row scopes and mutation permissions use it).
        system_prompt: Project instructions appended to the built-in system prompt.
        limits: The per-message limits.
        confirmer: Decides mutations that need approval while the turn waits in this
            process. Without one, a mutation whose approver is in `suspend_for` suspends
            the turn (`NucleusSuspend`, resumed with `resume`), and any other ends the
            turn with `confirmation_required_transport`.
        suspend_for: The approvers ("client", "staff") whose decisions suspend the turn.
        resume: Continue a suspended reply with this decision instead of starting one.
        history: The earlier conversation in provider-native form (tool call groups with
            their linked results, a summary as a system message), as a conversation store
            keeps it. When given, it replaces the text history of the atom's request; the
            current user message (or its placeholder) still comes from the request.
        budget: Consulted before every provider round, round of tool calls and confirmed
            write; told the usage of every completed round.
        audit: Optional hook receiving tool audit events.
        timeout_seconds: Wait for a round's first provider event (default: the provider's).
        stream_timeout_seconds: Wait between provider events (default: the provider's).
    """

    def __init__(
        self,
        provider: Any,
        toolset: Toolset,
        *,
        actor: Any = None,
        system_prompt: str = "",
        limits: LoopLimits | None = None,
        confirmer: Confirmer | None = None,
        suspend_for: Collection[str] = (),
        resume: LoopResume | None = None,
        history: Sequence[Message] | None = None,
        budget: TurnBudget | None = None,
        audit: Callable[[str, Any], None] | None = None,
        timeout_seconds: float | None = None,
        stream_timeout_seconds: float | None = None,
    ) -> None:
        self.provider = provider
        self.toolset = toolset
        self.actor = actor
        self.system_prompt = system_prompt
        self.limits = limits or LoopLimits()
        self.confirmer = confirmer
        self.suspend_for = frozenset(suspend_for)
        self.resume = resume
        self.history = None if history is None else tuple(history)
        self.budget = budget
        self.audit = audit
        self.timeout_seconds = timeout_seconds
        self.stream_timeout_seconds = stream_timeout_seconds

    def initial_messages(self, request: NucleusRequest) -> list[Message]:
        """The provider request of the first round: system prompt, then the conversation."""
        catalogue = self.toolset.catalogue
        system = Message.system(system_prompt(self.system_prompt, request.guidance, catalogue))
        current = [Message(role=m.role, content=m.content) for m in request.messages]
        if self.history is None:
            return [system, *current]
        return [system, *self.history, current[-1]]

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        """Run provider rounds and tools until the model answers; yield the turn's events."""
        context = self.toolset.context(self.actor, self.audit)
        if self.resume is None:
            state = LoopState(messages=self.initial_messages(request))
        else:
            state = LoopState.from_dict(self.resume.state)
            async for event in self._decided(self.resume, state, context):
                yield event
        while True:
            if state.rounds >= self.limits.total_rounds:
                raise ToolLoopError("turn_limit")
            await require_room(self.budget)
            state.rounds += 1
            # Text of an answer that may still be sent back for recovery is held back.
            hold = self.limits.recover_missing_tool_calls and not state.recovered
            text, calls = [], []
            usage = None
            started = time.perf_counter()
            # aclosing: a consumer that stops reading closes the provider stream at once.
            async with contextlib.aclosing(self._complete(state.messages)) as events:
                async for event in events:
                    if isinstance(event, TextChunkEvent):
                        text.append(event.content)
                        if not hold:
                            yield TextChunk(event.content)
                    elif isinstance(event, ToolCallEvent):
                        calls.append(event)
                    elif isinstance(event, DoneEvent):
                        usage = event.usage
                        yield event.usage
                        if self.budget is not None:
                            await self.budget.record(event.usage)
            name = type(self.provider).__name__
            yield StepTiming(
                "provider_round", name, started, time.perf_counter(),
                model=provider_model(self.provider), usage=usage,
            )  # fmt: skip
            answer = "".join(text)
            if not calls:
                recovery = self._recovery(state, answer)
                if recovery is None:
                    if hold and answer:
                        yield TextChunk(answer)
                    yield NucleusReply(answer)
                    return
                state.recovered = True
                state.messages += [Message.assistant(answer), Message.user(recovery)]
                continue
            async for event in self._run_tools(calls, answer, state, context):
                yield event
                if isinstance(event, NucleusSuspend):
                    return

    def _recovery(self, state: LoopState, answer: str) -> str | None:
        """The recovery prompt this answer calls for, if any (at most once per turn)."""
        if not self.limits.recover_missing_tool_calls or state.recovered:
            return None
        if state.tool_calls == 0:
            return NO_TOOLS_RECOVERY
        return None if answer.strip() else NO_ANSWER_RECOVERY

    def _complete(self, messages: Sequence[Message]) -> AsyncGenerator[Any, None]:
        return run_completion(
            self.provider,
            messages,
            self.toolset.definitions,
            timeout_seconds=self.timeout_seconds,
            stream_timeout_seconds=self.stream_timeout_seconds,
        )

    async def _run_tools(
        self, calls: list[ToolCallEvent], answer: str, state: LoopState, context: Any
    ) -> AsyncIterator[Any]:
        if len(calls) > 1 and any(self.toolset.is_mutation(call.name) for call in calls):
            raise ToolLoopError("mutation_batch_unsupported")
        if not self.toolset.is_mutation(calls[0].name):
            self._count_tool_round(state)
        # The round that asked for these calls may have exhausted the budget: none of them runs.
        await require_room(self.budget)
        state.tool_calls += len(calls)
        for call in calls:
            yield ToolCallStarted(id=call.id, name=call.name, args=call.arguments)
        held = [ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in calls]
        started = time.perf_counter()
        if self.toolset.is_mutation(calls[0].name):
            result, pending = await self._mutate(calls[0], state, context)
            if pending is not None:
                yield StepTiming("tool_call", held[0].name, started, time.perf_counter(), "waiting")
                yield pending
                if self.confirmer is None:
                    waiting = PendingCall(held[0], answer, pending.mutation, pending.input)
                    yield NucleusSuspend(state.to_dict(waiting))
                    return
                outcome: Outcome = "approved" if await self.confirmer(pending) else "rejected"
                started = time.perf_counter()
                result = await self._decision_result(
                    outcome,
                    pending.mutation,
                    pending.input,
                    state,
                    context,
                    preview=pending.preview,
                )
            results = [result]
        else:
            results = await self._read_all(calls, context)
        ended = time.perf_counter()
        for done, result in zip(held, results, strict=True):
            yield StepTiming("tool_call", done.name, started, ended, _status(result))
        for event in self._record(held, results, answer, state):
            yield event

    def _count_tool_round(self, state: LoopState) -> None:
        """Count a round of non-mutation calls as a retry, refusing one beyond the limit."""
        if self.limits.max_retries_counts != "tool_rounds":
            return
        if state.retries >= self.limits.max_retries_per_message:
            raise ToolLoopError("tool_retry_limit")
        state.retries += 1

    async def _read_all(self, calls: list[ToolCallEvent], context: Any) -> list[Any]:
        # Every call settles before a failure propagates: none keeps running unseen.
        settled = await asyncio.gather(
            *(self.toolset.call(call.name, call.arguments, context) for call in calls),
            return_exceptions=True,
        )
        for outcome in settled:
            if isinstance(outcome, BaseException):
                raise outcome
        return list(settled)

    def _record(
        self, held: list[ToolCall], results: list[Any], answer: str, state: LoopState
    ) -> list[ToolResult]:
        """The results' events, counted and added to the next round's messages."""
        events = [
            ToolResult(id=c.id, name=c.name, result=r) for c, r in zip(held, results, strict=True)
        ]
        counts_errors = self.limits.max_retries_counts == "failed_tool_rounds"
        if counts_errors and any(event.is_error for event in events):
            state.retries += 1
            if state.retries > self.limits.max_retries_per_message:
                raise ToolLoopError("tool_retry_limit")
        state.messages.append(Message.assistant(answer, held))
        state.messages += [Message.tool(c, e.result) for c, e in zip(held, events, strict=True)]
        return events

    async def _mutate(
        self, call: ToolCallEvent, state: LoopState, context: Any
    ) -> tuple[dict[str, Any], ConfirmMutation | None]:
        """Run the mutate call: its result, and the confirmation it waits for, if any."""
        if state.mutations >= self.limits.max_mutations_per_message:
            raise ToolLoopError("mutation_limit")
        result = await self.toolset.call(call.name, call.arguments, context)
        if result.get("status") == "executed":
            state.mutations += 1
        if result.get("status") != "confirmation_required":
            return result, None
        approver = result.get("approver", "client")
        if self.confirmer is None and approver not in self.suspend_for:
            raise ToolLoopError("confirmation_required_transport")
        pending = ConfirmMutation(
            id=call.id,
            mutation=result["mutation"],
            input=result["input"],
            preview=result.get("preview"),
            approver=approver,
        )
        return result, pending

    async def _decided(
        self, resume: LoopResume, state: LoopState, context: Any
    ) -> AsyncIterator[Any]:
        """The events of the waiting mutation once decided: its result, then the next round."""
        waiting = resume.pending
        started = time.perf_counter()
        result = await self._decision_result(
            resume.outcome, waiting.mutation, waiting.input, state, context,
            preview=resume.preview,
        )  # fmt: skip
        yield StepTiming(
            "tool_call", waiting.call.name, started, time.perf_counter(), _status(result)
        )
        for event in self._record([waiting.call], [result], waiting.answer, state):
            yield event

    async def _decision_result(
        self,
        outcome: Outcome,
        mutation: str,
        data: Mapping[str, Any],
        state: LoopState,
        context: Any,
        *,
        preview: Any,
    ) -> dict[str, Any]:
        if outcome != "approved":
            result = declined_result(mutation, outcome, preview, context.redaction.sensitive)
        else:
            # The reference rejects a confirmation write too once the budget is exhausted.
            await require_room(self.budget)
            result = await self.toolset.execute_approved(mutation, data, self.actor)
            if result.get("status") == "executed":
                state.mutations += 1
        context.emit("mutation_executed", {"mutation": mutation, "status": result["status"]})
        return result


def _status(result: Any) -> str | None:
    if isinstance(result, Mapping):
        status = result.get("status")
        return status if isinstance(status, str) else "ok"
    return "ok"
