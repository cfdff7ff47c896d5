"""`ManagerRegistry`: the managers and mutations an application declares, and their index.

```python
from chatomon.data import ManagerRegistry, registry

registry.register(PartManager)          # or @registry.register above the class

@registry.register                      # mutations register in the same registry
@mutation(name="createPart", input=CreatePartInput, manager="PartManager")
def create_part(actor, data): ...
```

`registry` is the default instance Django apps fill from their `chat.py` modules
(`chatomon.data.autodiscover()`); the tools and the schema index always take a registry
explicitly, so tests and notebooks build their own and nothing global needs resetting.

Registering a second manager (or mutation) under a taken name fails at once; every other
mistake (unknown fields, filters, relation targets, mismatched models) is found by
`validate()`, which `schema_index()` runs, and reported all together.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from chatomon.data.declarations import describe_names
from chatomon.data.errors import DataConfigurationError, did_you_mean
from chatomon.data.manager import NAME_PATTERN, Manager
from chatomon.data.mutations import Mutation
from chatomon.data.schema import ManagerSchema, SchemaIndex

__all__ = ["ManagerRegistry", "registry"]

_LEADING_NAME = re.compile(r"^(?:mutation )?\w+")

Registered = TypeVar("Registered", bound="type[Manager] | Mutation")


class ManagerRegistry:
    """Managers and mutations by name, with the schema index of the current version.

    Args:
        items: Managers and mutations to register at once.

    Attributes:
        version: Increases with every change; the schema index is rebuilt when it does.
    """

    def __init__(self, items: Iterable[type[Manager] | Mutation] = ()) -> None:
        self._managers: dict[str, type[Manager]] = {}
        self._mutations: dict[str, Mutation] = {}
        self._lock = threading.Lock()
        self._index: SchemaIndex | None = None
        self.version = 0
        for item in items:
            self.register(item)

    @property
    def managers(self) -> Mapping[str, type[Manager]]:
        """Every registered manager (exposed or not) by name."""
        return MappingProxyType(self._managers)

    @property
    def mutations(self) -> Mapping[str, Mutation]:
        """Every registered mutation by name."""
        return MappingProxyType(self._mutations)

    def register(self, item: Registered) -> Registered:
        """Register a Manager subclass or a Mutation; returns it, so it works as a decorator.

        Raises:
            DataConfigurationError: When the name is taken or `item` is neither.
        """
        if isinstance(item, Mutation):
            self._add(self._mutations, item.name, item, "mutation")
        elif isinstance(item, type) and issubclass(item, Manager) and item is not Manager:
            if not NAME_PATTERN.match(item.name):
                raise DataConfigurationError(
                    [f"manager name {item.name!r} must be a Python identifier"], manager=item.name
                )
            self._add(self._managers, item.name, item, "manager")
        else:
            raise DataConfigurationError(
                [f"register() takes a Manager subclass or a Mutation, not {item!r}"]
            )
        return item

    def _add(self, table: dict[str, Any], name: str, item: object, kind: str) -> None:
        with self._lock:
            existing = table.get(name)
            if existing is item:
                return
            if existing is not None:
                raise DataConfigurationError(
                    [f"a {kind} named {name!r} is already registered ({existing!r})"],
                    manager=name,
                )
            table[name] = item
            self.version += 1

    def unregister(self, name: str) -> None:
        """Remove the manager or mutation `name` (a KeyError when there is none)."""
        with self._lock:
            if name in self._managers:
                del self._managers[name]
            else:
                del self._mutations[name]
            self.version += 1

    def resolve(self) -> dict[str, ManagerSchema]:
        """Every manager's resolved schema, after checking all declarations.

        Raises:
            DataConfigurationError: Listing every problem found.
        """
        problems: list[str] = []
        schemas: dict[str, ManagerSchema] = {}
        for name, manager in self._managers.items():
            kind = manager.backend_kind()
            if kind is None or (manager.model is not None and manager.records is not None):
                problems.append(f"{name}: declare exactly one of model (Django) or records")
                continue
            schema = manager.backend().describe(manager, problems)
            if schema is not None:
                schemas[name] = schema
        for schema in schemas.values():
            self._check_relations(schema, schemas, problems)
        self._check_mutations(problems)
        if problems:
            first = _LEADING_NAME.match(problems[0])
            raise DataConfigurationError(problems, manager=first.group(0) if first else None)
        return schemas

    def _check_relations(
        self, schema: ManagerSchema, schemas: Mapping[str, ManagerSchema], problems: list[str]
    ) -> None:
        for relation in schema.relations.values():
            target = schemas.get(relation.target)
            if relation.target not in self._managers:
                hint = did_you_mean(relation.target, self._managers, cutoff=0.8)
                problems.append(
                    f"{schema.name}.relations[{relation.name!r}]: no manager named "
                    f"{relation.target!r} is registered{hint} "
                    f"(managers: {describe_names(self._managers)})"
                )
            elif target is not None:
                mismatch = schema.backend.check_relation(schema, relation.name, target)
                if mismatch:
                    problems.append(mismatch)

    def _check_mutations(self, problems: list[str]) -> None:
        for definition in self._mutations.values():
            if definition.manager is not None and definition.manager not in self._managers:
                problems.append(
                    f"mutation {definition.name}: no manager named {definition.manager!r}"
                    f"{did_you_mean(definition.manager, self._managers, cutoff=0.8)}"
                )
            target = definition.target_id
            if target is not None and target not in definition.input.model_fields:
                problems.append(
                    f"mutation {definition.name}: target_id {target!r} is not a field of "
                    f"{definition.input.__name__} (fields: "
                    f"{describe_names(definition.input.model_fields)})"
                )

    def validate(self) -> None:
        """Check every declaration; raise one DataConfigurationError listing all problems."""
        self.resolve()

    def schema_index(self) -> SchemaIndex:
        """The schema index of the current version (built, after validation, on first use)."""
        with self._lock:
            version = self.version
            if self._index is not None and self._index.version == version:
                return self._index
        schemas = self.resolve()
        exposed = frozenset(name for name in schemas if self._managers[name].chat_exposed)
        index = SchemaIndex(
            version=version,
            managers=MappingProxyType(
                {name: schemas[name].restricted_to(exposed) for name in sorted(exposed)}
            ),
        )
        with self._lock:
            if self.version == version:
                self._index = index
        return index

    def __repr__(self) -> str:
        return (
            f"<ManagerRegistry managers={len(self._managers)} "
            f"mutations={len(self._mutations)} version={self.version}>"
        )


registry = ManagerRegistry()
"""The default registry; Django apps register into it from their chat.py modules."""
