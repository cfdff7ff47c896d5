"""`ToolLoop`: the nucleus of a data turn — provider rounds with the chat tools.

Each round sends the conversation (and the tool results so far) to the provider, streams
its text, and collects its tool calls. Read-only calls of one completion run concurrently,
their results given back in call order. A completion that asks for `mutate` together with
any other call is refused before any tool runs (`mutation_batch_unsupported`). A mutation
that needs approval is handed to the loop's `confirmer` and the turn waits for its answer.

Limits, as the chat settings define them, end the turn with a `ToolLoopError`:
`max_retries_per_message` (rounds whose tool results were errors the model had to
correct), `max_mutations_per_message` (0 forbids writes) and `max_total_rounds_per_message`
(default: retries + mutations + 2).

```python
loop = ToolLoop(provider, Toolset(toy_registry()), actor=user)
atom = Atom("data", loop)
result = await atom.chat("Which projects use aluminum parts?")
```
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatomon.chat.events import ConfirmMutation, ToolCallStarted, ToolResult
from chatomon.chat.prompts import (
    NO_ANSWER_RECOVERY,
    NO_TOOLS_RECOVERY,
    REJECTED_RESULT,
    system_prompt,
)
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.mutations import aexecute_mutation
from chatomon.errors import ConfigurationError, ToolLoopError
from chatomon.events import TextChunk
from chatomon.nucleus import NucleusReply, NucleusRequest
from chatomon.providers.base import (
    DoneEvent,
    Message,
    TextChunkEvent,
    ToolCall,
    ToolCallEvent,
)
from chatomon.providers.contract import run_completion

__all__ = ["Confirmer", "LoopLimits", "ToolLoop"]

Confirmer = Callable[[ConfirmMutation], Awaitable[bool]]
"""Decides a pending mutation: resolves to True to run it, False to reject it."""


@dataclass(frozen=True, slots=True)
class LoopLimits:
    """The per-message limits of the chat settings, with their defaults."""

    max_retries_per_message: int = 3
    max_mutations_per_message: int = 8
    max_total_rounds_per_message: int | None = None
    recover_missing_tool_calls: bool = False

    def __post_init__(self) -> None:
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


@dataclass
class _TurnState:
    """What the loop counts while one reply is written."""

    rounds: int = 0
    retries: int = 0
    mutations: int = 0
    tool_calls: int = 0
    recovered: bool = False
    messages: list[Message] = field(default_factory=list)


class ToolLoop:
    """A nucleus that answers from application data by calling tools.

    Args:
        provider: The LLM provider (any object with the provider protocol).
        toolset: The chat tools over the application's managers.
        actor: Who is asking (row scopes and mutation permissions use it).
        system_prompt: Project instructions appended to the built-in system prompt.
        limits: The per-message limits.
        confirmer: Decides mutations that need approval; without one such a mutation
            ends the turn with `confirmation_required_transport`.
        history: The earlier conversation in provider-native form (tool call groups with
            their linked results, a summary as a system message), as a conversation store
            keeps it. When given, it replaces the text history of the atom's request; the
            current user message (or its placeholder) still comes from the request.
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
        history: Sequence[Message] | None = None,
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
        self.history = None if history is None else tuple(history)
        self.audit = audit
        self.timeout_seconds = timeout_seconds
        self.stream_timeout_seconds = stream_timeout_seconds

    def initial_messages(self, request: NucleusRequest) -> list[Message]:
        """The provider request of the first round: system prompt, then the conversation."""
        system = Message.system(system_prompt(self.system_prompt, request.guidance))
        current = [Message(role=m.role, content=m.content) for m in request.messages]
        if self.history is None:
            return [system, *current]
        return [system, *self.history, current[-1]]

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        """Run provider rounds and tools until the model answers; yield the turn's events."""
        state = _TurnState(messages=self.initial_messages(request))
        context = self.toolset.context(self.actor, self.audit)
        while True:
            if state.rounds >= self.limits.total_rounds:
                raise ToolLoopError("turn_limit")
            state.rounds += 1
            # Text of an answer that may still be sent back for recovery is held back.
            hold = self.limits.recover_missing_tool_calls and not state.recovered
            text, calls = [], []
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
                        yield event.usage
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

    def _recovery(self, state: _TurnState, answer: str) -> str | None:
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
        self, calls: list[ToolCallEvent], answer: str, state: _TurnState, context: Any
    ) -> AsyncIterator[Any]:
        if len(calls) > 1 and any(self.toolset.is_mutation(call.name) for call in calls):
            raise ToolLoopError("mutation_batch_unsupported")
        state.tool_calls += len(calls)
        for call in calls:
            yield ToolCallStarted(id=call.id, name=call.name, args=call.arguments)
        if self.toolset.is_mutation(calls[0].name):
            result, pending = await self._mutate(calls[0], state, context)
            if pending is not None:
                yield pending
                result = await self._decide(pending, state)
                context.emit(
                    "mutation_executed", {"mutation": pending.mutation, "status": result["status"]}
                )
            results = [result]
        else:
            # Every call settles before a failure propagates: none keeps running unseen.
            settled = await asyncio.gather(
                *(self.toolset.call(call.name, call.arguments, context) for call in calls),
                return_exceptions=True,
            )
            results = []
            for outcome in settled:
                if isinstance(outcome, BaseException):
                    raise outcome
                results.append(outcome)
        events = [
            ToolResult(id=c.id, name=c.name, result=r) for c, r in zip(calls, results, strict=True)
        ]
        for event in events:
            yield event
        if any(event.is_error for event in events):
            state.retries += 1
            if state.retries > self.limits.max_retries_per_message:
                raise ToolLoopError("tool_retry_limit")
        held = [ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in calls]
        state.messages.append(Message.assistant(answer, held))
        state.messages += [
            Message.tool_result(c, e.result) for c, e in zip(held, events, strict=True)
        ]

    async def _mutate(
        self, call: ToolCallEvent, state: _TurnState, context: Any
    ) -> tuple[dict[str, Any], ConfirmMutation | None]:
        """Run the mutate call: its result, and the confirmation it waits for, if any."""
        if state.mutations >= self.limits.max_mutations_per_message:
            raise ToolLoopError("mutation_limit")
        result = await self.toolset.call(call.name, call.arguments, context)
        if result.get("status") == "executed":
            state.mutations += 1
        if result.get("status") != "confirmation_required":
            return result, None
        pending = ConfirmMutation(
            id=call.id,
            mutation=result["mutation"],
            input=result["input"],
            preview=result.get("preview"),
            approver=result.get("approver", "client"),
        )
        return result, pending

    async def _decide(self, pending: ConfirmMutation, state: _TurnState) -> dict[str, Any]:
        if self.confirmer is None:
            raise ToolLoopError("confirmation_required_transport")
        if not await self.confirmer(pending):
            return {"status": "rejected", "mutation": pending.mutation, "message": REJECTED_RESULT}
        result = await aexecute_mutation(
            self.toolset.registry, pending.mutation, dict(pending.input), self.actor
        )
        if result.get("status") == "executed":
            state.mutations += 1
        return result
