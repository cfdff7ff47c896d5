"""The nucleus: what an atom wraps and guards.

A nucleus receives a `NucleusRequest` (the conversation with blocked messages replaced,
the user message or the placeholder that stands in for it, and this attempt's guidance)
and yields events: `TextChunk`s that make up the reply, `TokenUsage` values for the
model calls it made, `StepTiming`s of its provider rounds and tool calls, other events the
surface should see (a tool loop's tool calls, for example), and optionally a final
`NucleusReply` whose text is the reply when it differs from the concatenated chunks, or a
final `NucleusSuspend` when it must wait for a decision before going on.

Any sync or async callable `(messages: list[Message], guidance: tuple[str, ...]) -> str`
is a nucleus too (`CallableNucleus`); so is an async generator function of the same
arguments that yields strings as they are written.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from chatomon.errors import ConfigurationError
from chatomon.events import TextChunk
from chatomon.schemas import Message, TokenUsage

__all__ = [
    "CallableNucleus",
    "Nucleus",
    "NucleusReply",
    "NucleusRequest",
    "NucleusSuspend",
    "StepTiming",
    "as_nucleus",
    "provider_model",
]


@dataclass(frozen=True, slots=True)
class NucleusRequest:
    """What the atom asks of its nucleus for one reply.

    Attributes:
        messages: The history followed by the current user message, or by the placeholder
            when the user message is withheld (a guided refusal).
        guidance: Instructions for this reply, in order (input guidance, the blocked
            guidance of a guided refusal, the guidance of a regeneration).
        turn_id: Identifier of the turn.
        conversation_id: Identifier of the conversation, when known.
        attempt: 1 for the first reply of the turn, then one more per regeneration.
        user_message_withheld: True in a guided refusal.
    """

    messages: tuple[Message, ...]
    guidance: tuple[str, ...]
    turn_id: str
    conversation_id: str | None
    attempt: int
    user_message_withheld: bool = False


@dataclass(frozen=True, slots=True)
class NucleusReply:
    """Optional last event of a nucleus: the complete reply text."""

    text: str


@dataclass(frozen=True, slots=True)
class NucleusSuspend:
    """Last event of a nucleus that must wait (for a confirmation) before it can go on.

    The turn is suspended rather than finished: the atom yields `TurnSuspended` with a
    snapshot of the turn and this `state`, and `Atom.resume` continues it later, in any
    process, with a nucleus rebuilt from `state`.

    Attributes:
        state: JSON-ready data the nucleus needs to continue.
    """

    state: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class StepTiming:
    """A timed step of the nucleus, recorded in the TurnReport's `steps`.

    Attributes:
        kind: "provider_round" or "tool_call".
        name: The provider's class name, or the tool's name.
        started: `time.perf_counter()` when the step started.
        ended: `time.perf_counter()` when it ended.
        status: The tool result's status, when there is one.
        model: The model a provider round asked, when its provider names one.
        usage: The tokens of a provider round, when the provider reported them.
    """

    kind: Literal["provider_round", "tool_call"]
    name: str
    started: float
    ended: float
    status: str | None = None
    model: str | None = None
    usage: TokenUsage | None = None


def provider_model(provider: object) -> str | None:
    """The model a provider asks (its ``model`` setting), or None when it names none."""
    settings = getattr(provider, "settings", None)
    model = settings.get("model") if isinstance(settings, Mapping) else None
    return model if isinstance(model, str) and model else None


@runtime_checkable
class Nucleus(Protocol):
    """Anything that writes replies for an atom."""

    def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        """Yield the events of one reply: TextChunk, other events, optionally NucleusReply."""
        ...


NucleusFunction = Callable[[list[Message], tuple[str, ...]], Any]


class CallableNucleus:
    """Adapts a plain function, coroutine function or async generator function to `Nucleus`.

    The function receives `(messages, guidance)` and returns the reply text, an awaitable
    of it, or an (async) iterable of text fragments.
    """

    def __init__(self, function: NucleusFunction) -> None:
        self.function = function

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        """Call the function and yield what it wrote as text chunks."""
        result = self.function(list(request.messages), request.guidance)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, str):
            yield TextChunk(result)
        elif hasattr(result, "__aiter__"):
            async for item in result:
                yield TextChunk(item) if isinstance(item, str) else item
        elif isinstance(result, Iterable):
            for item in result:
                yield TextChunk(item) if isinstance(item, str) else item
        else:
            raise TypeError(
                f"the nucleus function returned {type(result).__name__}; "
                "expected the reply text (str) or an iterable of text fragments"
            )

    def __repr__(self) -> str:
        return f"CallableNucleus({getattr(self.function, '__qualname__', self.function)!r})"


def as_nucleus(value: object) -> Nucleus:
    """Return `value` as a Nucleus: itself when it has `run`, else a CallableNucleus."""
    if isinstance(value, Nucleus):
        return value
    if callable(value):
        return CallableNucleus(value)
    raise ConfigurationError(
        f"nucleus must be a Nucleus (an object with run(request)) or a callable "
        f"(messages, guidance) -> str; got {type(value).__name__}",
        field="nucleus",
        value=type(value).__name__,
    )
