"""`ProviderNucleus`: a bare provider as an atom's nucleus, with a system prompt."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from chatomon.errors import ProviderProtocolError
from chatomon.events import TextChunk
from chatomon.nucleus import NucleusRequest
from chatomon.providers.base import DoneEvent, Message, TextChunkEvent, ToolCallEvent
from chatomon.providers.contract import provider_label, run_completion

__all__ = ["ProviderNucleus"]


class ProviderNucleus:
    """Writes an atom's replies with one provider completion per attempt, without tools.

    The request sent is: the system prompt, the turn's guidance (one system message,
    each instruction on its own line), then the conversation. Text streams as it arrives;
    the completion's usage is reported to the turn.

    Examples:
        >>> from chatomon import Atom
        >>> from chatomon.providers import ProviderNucleus, ScriptedProvider
        >>> provider = ScriptedProvider([["Hello!"]])
        >>> atom = Atom("greeter", ProviderNucleus(provider, system_prompt="Be brief."))
        >>> atom.chat_sync("Hi").reply
        'Hello!'
        >>> [m.role for m in provider.requests[0].messages]
        ['system', 'user']
    """

    def __init__(
        self,
        provider: Any,
        *,
        system_prompt: str = "",
        timeout_seconds: float | None = None,
        stream_timeout_seconds: float | None = None,
    ) -> None:
        self.provider = provider
        self.system_prompt = system_prompt
        self.timeout_seconds = timeout_seconds
        self.stream_timeout_seconds = stream_timeout_seconds

    def messages_for(self, request: NucleusRequest) -> list[Message]:
        """The provider-neutral request for one reply."""
        system = [self.system_prompt] if self.system_prompt else []
        if request.guidance:
            system.append(
                "Follow this guidance for your next reply:\n" + "\n".join(request.guidance)
            )
        messages = [Message.system("\n\n".join(system))] if system else []
        messages.extend(Message(role=m.role, content=m.content) for m in request.messages)
        return messages

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        """Stream one completion as text chunks and report its usage."""
        async for event in run_completion(
            self.provider,
            self.messages_for(request),
            [],
            timeout_seconds=self.timeout_seconds,
            stream_timeout_seconds=self.stream_timeout_seconds,
        ):
            if isinstance(event, TextChunkEvent):
                yield TextChunk(event.content)
            elif isinstance(event, DoneEvent):
                yield event.usage
            elif isinstance(event, ToolCallEvent):
                label = provider_label(self.provider)
                raise ProviderProtocolError(
                    f"{label} requested tool {event.name!r} but no tools were offered",
                    provider=label,
                )

    def __repr__(self) -> str:
        return f"ProviderNucleus({self.provider!r})"
