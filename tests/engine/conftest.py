"""Nuclei and helpers for the engine tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from chatomon import Message, NucleusRequest, TextChunk


@dataclass
class ScriptNucleus:
    """Answers with the given replies in order (the last one repeats) and records requests."""

    replies: Sequence[str] = ("Hello!",)
    chunk_size: int | None = None
    requests: list[NucleusRequest] = field(default_factory=list)

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if self.chunk_size is None:
            yield TextChunk(reply)
            return
        for start in range(0, len(reply), self.chunk_size):
            yield TextChunk(reply[start : start + self.chunk_size])

    @property
    def calls(self) -> int:
        return len(self.requests)

    def last_messages(self) -> list[Message]:
        return list(self.requests[-1].messages)


@pytest.fixture
def nucleus() -> ScriptNucleus:
    return ScriptNucleus()
