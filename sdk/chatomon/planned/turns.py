"""`PlannedTurns`: planned read orchestration, configured once and shared by every turn.

It holds the planned settings, one provider per role (one instance per profile) and the
catalog source. `ChatService(planned=...)` runs a planned turn for every message with it;
`PlannedNucleus` runs one inside any `Atom`.

```python
planned = PlannedTurns.with_provider(ScriptedProvider([...]))
service = ChatService(store=MemoryStore(), provider=legacy, toolset=toolset, planned=planned)
```
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from chatomon.chat.budget import TurnBudget
from chatomon.chat.tools.context import AuditHook
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.schema import SchemaIndex
from chatomon.errors import ChatConfigurationError
from chatomon.nucleus import Nucleus
from chatomon.planned.catalog import ManagerCatalog, load_manager_catalog
from chatomon.planned.config import (
    REQUIRED_ROLES,
    PlannedChatSettings,
    build_role_providers,
    get_planned_chat_settings,
)
from chatomon.planned.nucleus import PlannedNucleus

__all__ = ["PlannedTurns"]


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
        """Every role on one provider; `settings` override the planned defaults.

        Example:
            `PlannedTurns.with_provider(provider, max_concurrent_tasks=2)`
        """
        planned = get_planned_chat_settings({"planned": {"enabled": True}})
        if settings:
            planned = dataclasses.replace(planned, **settings)
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
