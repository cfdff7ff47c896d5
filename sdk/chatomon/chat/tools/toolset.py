"""`Toolset`: the chat tools over one registry, as the tool loop calls them.

```python
toolset = Toolset(registry, ToolSettings(allowed_mutations=["createPart"]))
toolset.definitions                      # ToolDefinitions for the provider
result = await toolset.call("query", {"manager": "PartManager"}, toolset.context(actor))
```

`call` never raises for anything the model sent: an unknown tool, arguments that do not
match the schema, unknown names, bad values, limits, timeouts, refused mutations all come
back as `{"status": "error", "code", "message", ...}`. Exceptions that are bugs or outages
(a mutation function crashing, the database down) propagate, for the turn's error path.

Work on Django-backed managers (reads, and every mutation but a records manager's) runs
off the event loop through the toolset's `run_blocking`: by default asgiref's
thread-sensitive `sync_to_async` (the caller's thread, and any transaction it holds);
`chatomon.django` gives its own, a unit of work on threads of its own
(`chatomon.django.persistence.connections.in_tool_worker`). Records and the schema-only
tools run inline. Definitions follow the registry: registering a manager rebuilds them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, Protocol, TypeVar

from asgiref.sync import sync_to_async

from chatomon.chat.tools import discovery, reads
from chatomon.chat.tools.arguments import check_arguments
from chatomon.chat.tools.context import AuditHook, ToolContext, ToolSettings
from chatomon.chat.tools.definitions import (
    direct_query_definition,
    discovery_definitions,
    mutate_definition,
)
from chatomon.chat.tools.mutate import mutate
from chatomon.data.errors import DataConfigurationError, DataError, did_you_mean
from chatomon.data.mutations import execute_mutation
from chatomon.data.registration import ManagerRegistry
from chatomon.data.schema import SchemaIndex
from chatomon.providers.base import ToolDefinition
from chatomon.redaction import DEFAULT_REDACTION, Redaction

__all__ = ["MUTATE", "BlockingRunner", "Tool", "Toolset", "in_callers_thread"]

MUTATE = "mutate"

Executor = Callable[[Mapping[str, Any], ToolContext], Any]

P = ParamSpec("P")
T = TypeVar("T")


class BlockingRunner(Protocol):
    """Runs a blocking (synchronous) function off the event loop."""

    def __call__(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Awaitable[T]:
        """`await run(function, *args, **kwargs)`: what `function` returns or raises."""
        ...


def _call(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    return function(*args, **kwargs)


# Built once: building it per call would run asgiref's inspection every time.
_in_callers_thread = sync_to_async(_call, thread_sensitive=True)


async def in_callers_thread(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)` through asgiref's thread-sensitive `sync_to_async`.

    The default `BlockingRunner`: the thread that runs the caller's other sync code (under
    `async_to_sync`, the caller's own), so the work sees a transaction the caller holds.
    """
    result: T = await _in_callers_thread(function, *args, **kwargs)
    return result


def _always(answer: bool) -> Callable[[Mapping[str, Any]], bool]:
    return lambda args: answer


@dataclass(frozen=True)
class Tool:
    """One tool: its definition, its executor, and whether a call runs off the event loop.

    Attributes:
        definition: What the provider is told.
        execute: `execute(args, context)` returning the JSON-ready result; raises
            DataError for anything the model can correct.
        in_thread: `in_thread(args)`: whether this call touches a synchronous database
            (the toolset's `run_blocking` then runs it).
        is_mutation: Whether the tool writes.
    """

    definition: ToolDefinition
    execute: Executor
    in_thread: Callable[[Mapping[str, Any]], bool]
    is_mutation: bool = False

    @property
    def name(self) -> str:
        """The tool name."""
        return self.definition.name


class Toolset:
    """The chat tools over `registry`, shaped by `settings`.

    Args:
        registry: The managers and mutations the tools serve.
        settings: Which tools exist (tool_strategy, allowed_mutations) and the limits a
            context made by `context()` carries.
        redaction: The sensitive keys a context carries (the service's own rule: pass
            the same `Redaction` to both).
        run_blocking: Runs a call's synchronous database work off the event loop (and the
            tool loop's confirmed writes); default `in_callers_thread`.

    Raises:
        DataConfigurationError: When the registry is invalid, an allowed mutation is not
            registered, or one writes a manager that is not chat-exposed.
    """

    def __init__(
        self,
        registry: ManagerRegistry,
        settings: ToolSettings | None = None,
        *,
        redaction: Redaction = DEFAULT_REDACTION,
        run_blocking: BlockingRunner = in_callers_thread,
    ) -> None:
        self.registry = registry
        self.settings = settings or ToolSettings()
        self.redaction = redaction
        self.run_blocking = run_blocking
        self._lock = threading.Lock()
        self._built: tuple[int, dict[str, Tool], str] | None = None
        self._check_mutations()
        self.tools  # noqa: B018 - build now, so a broken registry fails here, not mid-turn

    def _check_mutations(self) -> None:
        index = self.registry.schema_index()
        problems = []
        for name in self.settings.allowed_mutations:
            definition = self.registry.mutations.get(name)
            if definition is None:
                problems.append(
                    f"allowed_mutations: no mutation {name!r} is registered"
                    f"{did_you_mean(name, self.registry.mutations)}"
                )
            elif definition.manager is not None and definition.manager not in index.managers:
                problems.append(
                    f"allowed_mutations: {name} writes {definition.manager}, which is not "
                    "chat_exposed; expose the manager or do not allow the mutation"
                )
        if problems:
            raise DataConfigurationError(problems, field="allowed_mutations")

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The tools by name, for the registry's current version."""
        return self._current()[1]

    @property
    def catalogue(self) -> str:
        """The managers as system-prompt lines (`discovery.data_catalogue`); "" when many."""
        return self._current()[2]

    def _current(self) -> tuple[int, dict[str, Tool], str]:
        version = self.registry.version
        with self._lock:
            if self._built is not None and self._built[0] == version:
                return self._built
        index = self.registry.schema_index()
        built = (version, self._build(index), discovery.data_catalogue(index))
        with self._lock:
            self._built = built
        return built

    def _build(self, index: SchemaIndex) -> dict[str, Tool]:
        limit = self.settings.max_results
        schema_only = [discovery.search_managers, discovery.get_manager_schema, discovery.find_path]
        definitions = discovery_definitions(limit, index.names)
        tools: dict[str, Tool] = {}
        for definition, function in zip(definitions[:3], schema_only, strict=True):
            tools[definition.name] = Tool(definition, self._schema_tool(function), _always(False))
        tools["query"] = Tool(definitions[3], self._read(reads.query), self._reads_database)
        tools["aggregate"] = Tool(definitions[4], self._read(reads.aggregate), self._reads_database)
        if self.settings.tool_strategy == "direct":
            for schema in index.managers.values():
                direct = direct_query_definition(schema, limit)
                if direct.name in tools:
                    raise DataConfigurationError(
                        [f"{schema.name}: its direct tool name {direct.name} is taken"]
                    )
                fixed = schema.name
                tools[direct.name] = Tool(
                    direct,
                    self._read(reads.query, manager=fixed),
                    _always(schema.backend.runs_in_thread),
                )
        allowed = [
            self.registry.mutations[name]
            for name in self.settings.allowed_mutations
            if name in self.registry.mutations
        ]
        if allowed:
            tools[MUTATE] = Tool(
                mutate_definition(allowed),
                lambda args, context: mutate(self.registry, args, context),
                self._mutation_in_thread,
                is_mutation=True,
            )
        return tools

    def _schema_tool(self, function: Callable[[Any, Mapping[str, Any]], Any]) -> Executor:
        return lambda args, context: function(self.registry.schema_index(), args)

    def _read(self, function: Callable[..., Any], manager: str | None = None) -> Executor:
        def execute(args: Mapping[str, Any], context: ToolContext) -> Any:
            fixed = {**args, "manager": manager} if manager is not None else args
            return function(self.registry.schema_index(), fixed, context)

        return execute

    def _reads_database(self, args: Mapping[str, Any]) -> bool:
        schema = self.registry.schema_index().managers.get(args.get("manager"))  # type: ignore[arg-type]
        return schema is not None and schema.backend.runs_in_thread

    def _mutation_in_thread(self, args: Mapping[str, Any]) -> bool:
        definition = self.registry.mutations.get(args.get("mutation"))  # type: ignore[arg-type]
        if definition is None:
            return False
        manager = self.registry.managers.get(definition.manager or "")
        # A mutation of a records manager needs no thread; anything else may do I/O.
        return manager is None or manager.backend_kind() != "records"

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The tool definitions to send to the provider."""
        return [tool.definition for tool in self.tools.values()]

    def is_mutation(self, name: str) -> bool:
        """Whether tool `name` writes (the tool loop runs such a call alone)."""
        tool = self.tools.get(name)
        return tool.is_mutation if tool is not None else name == MUTATE

    def context(self, actor: Any = None, audit: AuditHook | None = None) -> ToolContext:
        """A ToolContext with this toolset's settings and redaction rule."""
        return ToolContext(
            actor=actor, settings=self.settings, audit=audit, redaction=self.redaction
        )

    def _prepare(self, name: str, args: Any) -> tuple[Tool, Mapping[str, Any]]:
        tool = self.tools.get(name)
        if tool is None:
            raise DataError(
                f"there is no tool {name!r}{did_you_mean(str(name), self.tools, cutoff=0.8)}",
                code="unknown_tool",
                allowed=list(self.tools),
            )
        if isinstance(args, Mapping):
            for key in ("manager", "from_manager", "to_manager"):
                named = args.get(key)
                if isinstance(named, str) and named not in self.registry.schema_index().managers:
                    # The index's own unknown_manager (nearest names, search_managers),
                    # rather than the schema's enum mismatch.
                    self.registry.schema_index().get(args[key])
        allowed = self.settings.allowed_mutations
        if tool.is_mutation and isinstance(args, Mapping) and args.get("mutation") not in allowed:
            # Left to mutate, which refuses with mutation_not_allowed and a near name,
            # rather than the schema's enum mismatch.
            return tool, args
        check_arguments(tool.definition.parameters, args if args is not None else {})
        return tool, args if args is not None else {}

    def call_sync(self, name: str, args: Any, context: ToolContext) -> dict[str, Any]:
        """Run a tool in this thread (scripts, notebooks, tests); errors are results."""
        started = time.perf_counter()
        try:
            tool, checked = self._prepare(name, args)
            result = tool.execute(checked, context)
        except DataError as error:
            result = error.to_result()
        self._audit(name, result, started, context)
        return result  # type: ignore[no-any-return]

    async def execute_approved(
        self, mutation: str, data: Mapping[str, Any], actor: Any
    ) -> dict[str, Any]:
        """Run a mutation a person approved, where `mutate` would run it.

        Through `run_blocking` when it may do I/O; a records manager's mutation inline.
        """
        if self._mutation_in_thread({"mutation": mutation}):
            return await self.run_blocking(
                execute_mutation, self.registry, mutation, dict(data), actor
            )
        return execute_mutation(self.registry, mutation, dict(data), actor)

    async def call(self, name: str, args: Any, context: ToolContext) -> dict[str, Any]:
        """Run a tool; database work runs off the event loop. Errors are results."""
        started = time.perf_counter()
        try:
            tool, checked = self._prepare(name, args)
            if tool.in_thread(checked):
                result = await self.run_blocking(tool.execute, checked, context)
            else:
                result = tool.execute(checked, context)
        except DataError as error:
            result = error.to_result()
        self._audit(name, result, started, context)
        return result  # type: ignore[no-any-return]

    @staticmethod
    def _audit(name: str, result: Any, started: float, context: ToolContext) -> None:
        status = result.get("status", "ok") if isinstance(result, Mapping) else "ok"
        payload: dict[str, Any] = {
            "tool": name,
            "status": status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        if status == "error":
            payload["code"] = result.get("code")
        context.emit("tool_called", payload)

    def __repr__(self) -> str:
        return f"<Toolset tools={list(self.tools)}>"
