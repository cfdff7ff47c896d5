"""A stand-in for llama_cpp, to test LocalProvider's own logic without the model.

`FakeLlamaCpp` is a module-shaped stand-in whose `Llama` replays scripted pieces
(optionally slowly, from the worker thread) and records what it was asked; the `fake`
fixture (tests/providers/conftest.py) installs it. The real model runs in
tests/providers/real_llm/.
"""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Iterable
from typing import Any

from chatomon.providers import LocalProvider, run_completion
from chatomon.providers.base import ToolDefinition

__all__ = ["VOCAB", "FakeLlama", "FakeLlamaCpp", "Logits", "events", "grammar_names"]

VOCAB = [b"Hi", b" there", b"{", b' {"', b"", b"  "]
"""The stand-in's vocabulary: tokens 2-5 may not start a text-only answer."""


class Logits:
    """Records what a logits processor masked."""

    def __init__(self) -> None:
        self.masked: list[tuple[list[int], float]] = []

    def __setitem__(self, key: list[int], value: float) -> None:
        self.masked.append((list(key), value))


class FakeLlama:
    """Replays `script` (a list of outputs, each a list of pieces) one completion each."""

    def __init__(self, owner: FakeLlamaCpp, **kwargs: Any) -> None:
        self.owner = owner
        self.kwargs = kwargs
        self.closed = False

    def n_ctx(self) -> int:
        return int(self.kwargs["n_ctx"])

    def n_vocab(self) -> int:
        return len(VOCAB)

    def detokenize(self, tokens: list[int]) -> bytes:
        return b"".join(VOCAB[t] for t in tokens)

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(range(len(text.split())))  # one "token" per word is enough here

    def create_completion(self, prompt: str, **kwargs: Any) -> Any:
        self.owner.calls.append({"prompt": prompt, **kwargs})
        pieces = self.owner.script.pop(0)
        processor = kwargs["logits_processor"][0]

        def sample() -> None:
            logits = Logits()
            processor([], logits)
            self.owner.logits.append(logits)

        def chunks() -> Any:
            self.owner.threads.add(threading.current_thread().name)
            for piece in pieces:
                if self.owner.delay:
                    time.sleep(self.owner.delay)  # blocks the worker thread, not the loop
                sample()
                self.owner.produced += 1
                yield {"choices": [{"text": piece}]}
            sample()  # the end-of-turn token is sampled too

        return chunks()

    def close(self) -> None:
        self.closed = True


class FakeLlamaCpp(types.ModuleType):
    """The `llama_cpp` module's stand-in: `script` holds each completion's pieces.

    It records the completions asked (`calls`), the models loaded, the threads that ran
    them and what the logits processors masked.
    """

    def __init__(self) -> None:
        super().__init__("llama_cpp")
        self.script: list[list[str]] = []
        self.calls: list[dict[str, Any]] = []
        self.models: list[FakeLlama] = []
        self.threads: set[str] = set()
        self.logits: list[Logits] = []
        self.delay = 0.0
        self.produced = 0
        self.load_error: Exception | None = None
        self.llama_grammar = types.SimpleNamespace(json_schema_to_gbnf=self._to_gbnf)
        self.LlamaGrammar = types.SimpleNamespace(from_string=self._grammar)
        self.LogitsProcessorList = list

    def Llama(self, **kwargs: Any) -> FakeLlama:
        if self.load_error is not None:
            raise self.load_error
        model = FakeLlama(self, **kwargs)
        self.models.append(model)
        return model

    @staticmethod
    def _to_gbnf(schema: str, prop_order: list[str] | None = None) -> str:
        return f"root ::= object\n# {schema}"

    @staticmethod
    def _grammar(text: str, verbose: bool = True) -> dict[str, str]:
        return {"gbnf": text}


async def events(provider: LocalProvider, messages: Any, tools: Any = ()) -> list[Any]:
    """The events of one completion."""
    return [e async for e in run_completion(provider, messages, list(tools))]


def grammar_names(completion: dict[str, Any], tools: Iterable[ToolDefinition]) -> set[str]:
    """Which of `tools` the grammar of one completion lets the model call."""
    gbnf = completion["grammar"]["gbnf"]
    return {tool.name for tool in tools if f'\\"{tool.name}\\"' in gbnf}
