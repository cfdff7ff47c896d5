"""How a turn runs planned reads: `PlannedTurns` (the configuration) and `PlannedNucleus`.

`PlannedTurns` holds the planned settings, one provider per role (one instance per
profile) and the catalog source, shared by every turn. `ChatService(planned=...)` asks it
for a `PlannedNucleus` per turn; a `PlannedNucleus` runs inside any `Atom` too.

For each user message the nucleus asks the planner for a plan; a plan the planner
classifies as a mutation goes on through the tool loop unchanged (so executors never get
`mutate`), and a read plan runs its tasks (`PlannedRead`) and streams the synthesized
answer. The atom's orbitals check that answer like any other; a regeneration writes a new
answer from the same evidence. Without Django:

```python
from chatomon import Atom
from chatomon.chat.tools import Toolset
from chatomon.data.fixtures import toy_registry
from chatomon.planned import PlannedNucleus, PlannedTurns

planned = PlannedTurns.with_provider(provider)
atom = Atom("planned", PlannedNucleus(planned, Toolset(toy_registry())))
```
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Mapping
from types import MappingProxyType
from typing import Any

from chatomon._engine.closing import closing_stream
from chatomon.chat.budget import TurnBudget, require_room
from chatomon.chat.loop import ToolLoop
from chatomon.chat.tools.context import AuditHook
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.schema import SchemaIndex
from chatomon.errors import ChatConfigurationError
from chatomon.nucleus import Nucleus, NucleusRequest, StepTiming, provider_model
from chatomon.planned.budget import RoundBudget
from chatomon.planned.catalog import ManagerCatalog, load_manager_catalog
from chatomon.planned.config import (
    REQUIRED_ROLES,
    PlannedChatSettings,
    build_role_providers,
    get_planned_chat_settings,
)
from chatomon.planned.execution import Execution
from chatomon.planned.read import PlannedRead
from chatomon.planned.resolver import ManagerResolver
from chatomon.planned.scheduler import PreparedPlannedTurn, SchedulerCallbacks, prepare_planned_turn
from chatomon.schemas import PlannedTurnReport, TokenUsage

__all__ = ["PlannedNucleus", "PlannedTurns"]


class PlannedTurns:
    """Planned read orchestration: its settings, a provider per role and a catalog.

    Args:
        providers: The provider of each of the five roles (REQUIRED_ROLES); roles may
            share one instance.
        settings: Concurrency, time limits and round budgets (default: the defaults of
            an enabled `PlannedChatSettings`).
        catalog: The manager catalog source (a mapping, a callable or a dotted path;
            see `load_manager_catalog`), loaded against each registry's schema index.

    Raises:
        ChatConfigurationError: A role without a provider.
    """

    def __init__(
        self,
        providers: Mapping[str, Any],
        *,
        settings: PlannedChatSettings | None = None,
        catalog: Any = None,
    ) -> None:
        missing = [role for role in REQUIRED_ROLES if providers.get(role) is None]
        if missing:
            raise ChatConfigurationError.invalid_planned_settings(
                f"every role needs a provider; missing: {', '.join(missing)}"
            )
        self.providers: Mapping[str, Any] = MappingProxyType(
            {role: providers[role] for role in REQUIRED_ROLES}
        )
        self.settings = settings or get_planned_chat_settings({"planned": {"enabled": True}})
        self.catalog_source = catalog if catalog is not None else self.settings.catalog
        self._catalogs: dict[int, tuple[SchemaIndex, ManagerCatalog]] = {}
        self._lock = threading.Lock()

    @classmethod
    def with_provider(cls, provider: Any, **settings: Any) -> PlannedTurns:
        """Every role on one provider; `settings` are keys of the `planned` settings section.

        Example:
            `PlannedTurns.with_provider(provider, max_concurrent_tasks=2)`

        Raises:
            ChatConfigurationError: An unknown key, or a value out of range.
        """
        planned = get_planned_chat_settings({"planned": {**settings, "enabled": True}})
        return cls(dict.fromkeys(REQUIRED_ROLES, provider), settings=planned)

    @classmethod
    def from_settings(cls, settings: PlannedChatSettings) -> PlannedTurns:
        """Build every role's provider from validated settings (one per profile)."""
        return cls(build_role_providers(settings), settings=settings)

    def nucleus(
        self,
        toolset: Toolset,
        *,
        actor: Any = None,
        fallback: Nucleus | None = None,
        budget: TurnBudget | None = None,
        audit: AuditHook | None = None,
        capture_questions: bool = False,
    ) -> Nucleus:
        """A `PlannedNucleus` for one turn (what `ChatService(planned=...)` asks for)."""
        return PlannedNucleus(
            self,
            toolset,
            actor=actor,
            fallback=fallback,
            budget=budget,
            audit=audit,
            capture_questions=capture_questions,
        )

    def catalog_for(self, index: SchemaIndex) -> ManagerCatalog:
        """The catalog validated against `index` (loaded once per index)."""
        with self._lock:
            cached = self._catalogs.get(id(index))
            if cached is not None and cached[0] is index:
                return cached[1]
        catalog = load_manager_catalog(self.catalog_source, index)
        with self._lock:
            self._catalogs = {id(index): (index, catalog)}  # the registry's current index only
        return catalog

    def __repr__(self) -> str:
        shared = len({id(p) for p in self.providers.values()})
        return f"<PlannedTurns providers={shared} roles={len(self.providers)}>"


PLANNER_CANDIDATES = 5
"""Managers the planner is shown: the resolver's best for the message, not the whole index."""


class PlannedNucleus:
    """Answers each message with a planned read (or the tool loop, for a mutation).

    Args:
        planned: The configured orchestration (settings, providers per role, catalog).
        toolset: The chat tools over the manager registry; executors get its read tools.
        actor: Who asks (the tools' row scopes).
        fallback: The nucleus for mutation plans and guided refusals; default a
            `ToolLoop` over `toolset` with the fallback executor's provider.
        budget: The asker's rate-limit budget, asked before every provider request.
        audit: Receives the allowlisted planned audit events.
        capture_questions: Whether the report keeps each task's question (it restates
            the user's words: the service sets it for capture_content="full").
    """

    def __init__(
        self,
        planned: PlannedTurns,
        toolset: Toolset,
        *,
        actor: Any = None,
        fallback: Nucleus | None = None,
        budget: TurnBudget | None = None,
        audit: AuditHook | None = None,
        capture_questions: bool = False,
    ) -> None:
        self.planned = planned
        self.toolset = toolset
        self.actor = actor
        self.budget = budget
        self.audit = audit
        self.capture_questions = capture_questions
        if fallback is None:
            fallback = ToolLoop(
                planned.providers["fallback_executor"], toolset, actor=actor, budget=budget
            )
        self.fallback = fallback
        self._read: PlannedRead | None = None
        self._mutation = False  # the plan was a mutation: every attempt is the tool loop's

    async def run(self, request: NucleusRequest) -> AsyncIterator[Any]:
        """Plan, then gather evidence and answer; or hand the turn to the tool loop."""
        if request.user_message_withheld:  # a guided refusal: nothing to plan
            async with closing_stream(self.fallback.run(request)) as events:
                async for event in events:
                    yield event
            return
        text = request.messages[-1].content
        if self._mutation:  # a regeneration of a mutation plan's answer: the tool loop again
            async with closing_stream(self.fallback.run(request)) as events:
                async for event in events:
                    yield event
            return
        if self._read is not None:  # a regeneration: the evidence is gathered already
            async with closing_stream(self._read.answer(text, request.guidance)) as events:
                async for event in events:
                    yield event
            return
        settings = self.planned.settings
        budget = RoundBudget(settings.max_rounds, settings.max_rounds_per_root)
        try:
            prepared = await self._prepare(request, budget)
        except Exception as error:  # the report says why; the pipeline sends the error
            reason = getattr(error, "public_reason", None)
            spent = getattr(error, "usage", None)  # an invalid plan's requests were made
            if isinstance(spent, TokenUsage):
                if self.budget is not None:
                    await self.budget.record(spent)
                yield spent
            yield PlannedTurnReport(
                intent="read",
                roles_used=budget.roles_used,
                rounds_used=budget.used,
                rounds_limit=budget.limit,
                terminal_reason=reason if isinstance(reason, str) else None,
            )
            raise
        async for event in self._planning_events(prepared):
            yield event
        if prepared.mutation_plan is not None:
            self._mutation = True
            yield self._mutation_report(prepared)
            async with closing_stream(self.fallback.run(request)) as events:
                async for event in events:
                    yield event
            return
        read = self._read = PlannedRead(
            prepared,
            self._execution(request, prepared.budget),
            callbacks=SchedulerCallbacks(rate_budget=self.budget, audit=self.audit),
            with_questions=self.capture_questions,
        )
        # Closed with this nucleus: a turn that ends early cancels and awaits its tasks.
        async with closing_stream(read.gather()) as events:
            async for event in events:
                yield event
        async with closing_stream(read.answer(text, request.guidance)) as events:
            async for event in events:
                yield event

    async def _prepare(self, request: NucleusRequest, budget: RoundBudget) -> PreparedPlannedTurn:
        text = request.messages[-1].content
        index = self.toolset.registry.schema_index()
        catalog = self.planned.catalog_for(index)
        resolver = ManagerResolver(index, catalog)
        # The resolver's best for the message; with no match, the first managers of the index.
        shown = [c.manager for c in resolver.resolve(text)] or list(index.names)
        lines = [
            f"{name}: {index.get(name).description}".rstrip(": ")
            for name in shown[:PLANNER_CANDIDATES]
        ]
        # The catalog's lines of the managers shown only: a slice, as for the schema.
        catalog_lines = [
            entry.summary_line()
            for name in shown[:PLANNER_CANDIDATES]
            if (entry := catalog.get(name)) is not None
        ]
        await require_room(self.budget)
        return await prepare_planned_turn(
            text,
            request.messages[:-1],
            self.planned.settings,
            catalog_lines,
            providers=self.planned.providers,
            manager_lines=lines,
            budget=budget,
        )

    async def _planning_events(self, prepared: PreparedPlannedTurn) -> AsyncIterator[Any]:
        usage = prepared.planning.usage
        if self.budget is not None:
            await self.budget.record(usage)
        yield usage
        model = provider_model(self.planned.providers.get("planner"))
        yield StepTiming(
            "provider_round",
            "planner",
            prepared.started,
            time.perf_counter(),
            model=model,
            usage=usage,
        )

    def _execution(self, request: NucleusRequest, budget: RoundBudget) -> Execution:
        index = self.toolset.registry.schema_index()

        async def nowhere(event: Any) -> None:  # PlannedRead.gather sets the real sink
            del event

        return Execution(
            turn_id=request.turn_id,
            providers=self.planned.providers,
            settings=self.planned.settings,
            toolset=self.toolset,
            tool_context=self.toolset.context(self.actor, self.audit),
            resolver=ManagerResolver(index, self.planned.catalog_for(index)),
            budget=budget,
            emit=nowhere,
            rate_budget=self.budget,
        )

    def _mutation_report(self, prepared: PreparedPlannedTurn) -> PlannedTurnReport:
        budget = prepared.budget
        return PlannedTurnReport(
            intent="mutation",
            roles_used=budget.roles_used,
            planner_attempts=prepared.planning.attempts,
            rounds_used=budget.used,
            rounds_limit=budget.limit,
            prompt_chars=prepared.planning.prompt_chars,
        )

    def __repr__(self) -> str:
        return f"<PlannedNucleus {self.planned!r}>"
