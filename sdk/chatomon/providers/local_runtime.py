"""The llama.cpp side of the local provider (private to `local`): load, grammar, stream.

`LocalModel` owns one `llama_cpp.Llama`. llama.cpp calls block, so a completion runs in a
worker thread that hands text pieces to the event loop through an asyncio queue; a lock
lets one completion at a time use the model (its KV cache is shared state), and a
cancelled completion stops at the next token.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chatomon.errors import (
    ProviderContextLengthError,
    ProviderError,
    ProviderUnavailableError,
)
from chatomon.providers.base import ToolDefinition
from chatomon.providers.local_grammar import UnsupportedSchemaError, tool_call_rules
from chatomon.providers.local_states import SavedPrompts
from chatomon.providers.local_template import (
    STOP,
    assemble_grammar,
    tool_call_schema,
)

__all__ = ["PREFILL_CHUNK", "CompletionStream", "LocalModel"]

logger = logging.getLogger(__name__)

_END = object()
_GRAMMAR_CACHE_SIZE = 16
PREFILL_CHUNK = 128
"""Tokens read per step of `LocalModel.prefill` (each step ends in Python, where it can stop)."""
_LIVE: weakref.WeakSet[LocalModel] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # Safety net: stop worker threads before the interpreter tears llama.cpp down under
    # them (a daemon thread inside a native call at exit can crash the process).
    for model in list(_LIVE):
        model.close()


class LocalModel:
    """One loaded GGUF model and the settings its completions use."""

    def __init__(self, llama_cpp: Any, llm: Any, settings: Mapping[str, Any], label: str) -> None:
        self.llama_cpp = llama_cpp
        self.llm: Any = llm
        self.settings = settings
        self.label = label
        self.lock = threading.Lock()
        self._grammars: dict[tuple[str, bool], Any] = {}
        self._answer_ban: list[int] | None = None
        self.closing = threading.Event()
        _LIVE.add(self)

    @classmethod
    def load(
        cls, llama_cpp: Any, path: Path, settings: Mapping[str, Any], label: str
    ) -> LocalModel:
        """Load `path` (blocking: call it in a thread)."""
        try:
            llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=settings["context_size"],
                n_threads=settings["threads"],
                n_threads_batch=settings["threads"],
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as error:
            raise ProviderUnavailableError(
                f"{label} could not load the model file {path.name!r} ({type(error).__name__})",
                provider=label,
            ) from None
        return cls(llama_cpp, llm, settings, label)

    def grammar_for(self, tools: Sequence[ToolDefinition], *, text: bool = True) -> Any:
        """A `LlamaGrammar` for plain text or one call of `tools` (`text=False`: the call).

        The bounded grammar of `local_grammar`; for a schema it cannot express, llama.cpp's
        own converter. None when neither converts the schemas: the completion then runs
        unconstrained and the output is still checked against the offered names.
        """
        schema = json.dumps(tool_call_schema(tools), sort_keys=True)
        key = (schema, text)
        if key in self._grammars:
            return self._grammars[key]
        try:
            grammar = self.llama_cpp.LlamaGrammar.from_string(
                assemble_grammar(self._call_rules(tools, schema), text=text), verbose=False
            )
        except Exception as error:  # noqa: BLE001 - unconvertible schema: run unconstrained
            logger.warning("local: no tool grammar for these tools (%s)", type(error).__name__)
            grammar = None
        if len(self._grammars) >= _GRAMMAR_CACHE_SIZE:
            self._grammars.pop(next(iter(self._grammars)))
        self._grammars[key] = grammar
        return grammar

    def _call_rules(self, tools: Sequence[ToolDefinition], schema: str) -> str:
        # The bounded grammar first: llama.cpp's converter admits calls of any length.
        try:
            return tool_call_rules(tools)
        except UnsupportedSchemaError as error:
            logger.info("local: unbounded tool grammar (%s)", error)
        converter = self.llama_cpp.llama_grammar.json_schema_to_gbnf
        return str(converter(schema, prop_order=["name", "arguments"]))

    def stream(
        self,
        prompt: str,
        *,
        grammar: Any,
        text_only: bool = False,
        max_tokens: int | None = None,
    ) -> CompletionStream:
        """The text pieces of one completion of `prompt`, generated in a worker thread.

        With `text_only`, the first token may not open a JSON object nor be blank;
        `max_tokens` overrides the setting.
        """
        return CompletionStream(self, prompt, grammar, text_only=text_only, max_tokens=max_tokens)

    def prefill(
        self, prompt: str, *, chunk: int = PREFILL_CHUNK, saved: SavedPrompts | None = None
    ) -> int:
        """Read `prompt` into the KV cache without generating; returns its token count.

        Blocking: call it in a thread. The prompt is read `chunk` tokens at a time after
        the prefix the cache already holds, stopping between chunks once the model is
        closing (a warm-up must not hold up the process' exit for the whole prompt). A
        later completion whose prompt starts the same reads only the rest (llama.cpp's
        prefix match), so the tokens are made as `create_completion` makes them.
        With `saved`, a state of the same tokens saved earlier is loaded instead of
        reading, and a prompt read to its end is saved.
        """
        label = self.label
        with self.lock:
            llm = self.llm
            if llm is None or self.closing.is_set():
                raise ProviderUnavailableError(f"{label} model was closed", provider=label)
            tokens = list(llm.tokenize(prompt.encode("utf-8"), special=True))
            if len(tokens) >= int(llm.n_ctx()):
                raise ProviderContextLengthError(
                    f"{label} prompt has {len(tokens)} tokens; context_size is {llm.n_ctx()}",
                    provider=label,
                )
            cached = list(llm.input_ids[: llm.n_tokens])
            kept = 0
            while kept < min(len(cached), len(tokens)) and cached[kept] == tokens[kept]:
                kept += 1
            if saved is not None and kept < len(tokens):
                if saved.load(self.llama_cpp, llm, tokens):
                    return len(tokens)
                kept = min(kept, llm.n_tokens)  # a failed load leaves nothing cached
            llm.n_tokens = kept  # eval drops whatever the cache held after the shared prefix
            for start in range(kept, len(tokens), chunk):
                if self.closing.is_set():
                    return len(tokens)
                llm.eval(tokens[start : start + chunk])
            if saved is not None and kept < len(tokens):
                saved.save(self.llama_cpp, llm, tokens)
            return len(tokens)

    def answer_start_ban(self) -> list[int]:
        """Token ids a text-only answer may not start with (blank, special, or `{`...).

        A grammar would do the same but constrains every later token too, which costs
        about 40% of the generation speed; this mask acts on the first token only.
        Blocking (one pass over the vocabulary, ~0.2 s for SmolLM2): call it in a thread.
        """
        if self._answer_ban is None:
            llm = self.llm
            self._answer_ban = [
                token
                for token in range(int(llm.n_vocab()))
                if not (piece := bytes(llm.detokenize([token])).strip()) or piece[:1] == b"{"
            ]
        return self._answer_ban

    def close(self) -> None:
        """Stop a running completion at its next token, then free the model."""
        self.closing.set()
        with self.lock:
            llm, self.llm = self.llm, None
            if llm is not None:
                llm.close()


class CompletionStream:
    """Async iterator of one completion's text pieces; token counts are set at the end."""

    def __init__(
        self,
        model: LocalModel,
        prompt: str,
        grammar: Any,
        *,
        text_only: bool,
        max_tokens: int | None = None,
    ) -> None:
        self._model = model
        self._max_tokens = max_tokens or int(model.settings["max_tokens"])
        self._prompt = prompt
        self._grammar = grammar
        self._text_only = text_only
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._cancel = threading.Event()
        self._started = False
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def __aiter__(self) -> CompletionStream:
        return self

    async def __anext__(self) -> str:
        if not self._started:
            self._started = True
            loop = asyncio.get_running_loop()
            threading.Thread(target=self._run, args=(loop,), daemon=True).start()
        item = await self._queue.get()
        if item is _END:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return str(item)

    async def aclose(self) -> None:
        """Stop generating at the next token (the worker ends on its own)."""
        self._cancel.set()

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        def put(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(self._queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                self._cancel.set()

        try:
            with self._model.lock:
                if not self._cancel.is_set():
                    for piece in self._generate():
                        put(piece)
        except ProviderError as error:
            put(error)
        except Exception as error:  # noqa: BLE001 - any llama.cpp failure is the provider's
            label = self._model.label
            put(
                ProviderUnavailableError(f"{label} failed ({type(error).__name__})", provider=label)
            )
        finally:
            put(_END)

    def _generate(self) -> Any:
        model, label = self._model, self._model.label
        llm = model.llm
        if llm is None or model.closing.is_set():
            raise ProviderUnavailableError(f"{label} model was closed", provider=label)
        context = int(llm.n_ctx())
        prompt_tokens = len(llm.tokenize(self._prompt.encode("utf-8"), add_bos=False, special=True))
        if prompt_tokens >= context:
            raise ProviderContextLengthError(
                f"{label} prompt has {prompt_tokens} tokens; context_size is {context}",
                provider=label,
            )
        sampled = [0]
        banned = model.answer_start_ban() if self._text_only else None

        def process(_ids: Any, logits: Any) -> Any:
            if banned and not sampled[0]:
                logits[banned] = float("-inf")
            sampled[0] += 1  # called once per sampled token: the exact completion count
            return logits

        chunks = llm.create_completion(
            self._prompt,
            max_tokens=min(self._max_tokens, context - prompt_tokens),
            temperature=float(model.settings["temperature"]),
            seed=model.settings["seed"],
            stop=list(STOP),
            grammar=self._grammar,
            stream=True,
            logits_processor=model.llama_cpp.LogitsProcessorList([process]),
        )
        try:
            for chunk in chunks:
                if self._cancel.is_set():
                    break
                if model.closing.is_set():
                    raise ProviderUnavailableError(
                        f"{label} model was closed mid-completion", provider=label
                    )
                text = chunk["choices"][0]["text"]
                if text:
                    yield text
        finally:
            chunks.close()
            self.prompt_tokens, self.completion_tokens = prompt_tokens, sampled[0]
