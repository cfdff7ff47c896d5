"""The nucleus: what an atom wraps and guards.

A nucleus receives a `NucleusRequest` (the conversation with blocked messages replaced,
the user message or the placeholder that stands in for it, and this attempt's guidance)
and yields events: `TextChunk`s that make up the reply, `TokenUsage` values for the
model calls it made, other events the surface should see (a tool loop's tool calls, for
example), and optionally a final `NucleusReply` whose text is the reply when it differs
from the concatenated chunks.

Any sync or async callable `(messages: list[Message], guidance: tuple[str, ...]) -> str`
is a nucleus too (`CallableNucleus`); so is an async generator function of the same
arguments that yields strings as they are written.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from chatomon.errors import ConfigurationError
from chatomon.events import TextChunk
from chatomon.schemas import Message

__all__ = ["CallableNucleus", "Nucleus", "NucleusReply", "NucleusRequest", "as_nucleus"]


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
