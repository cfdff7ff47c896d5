"""Mutations: named writes with a validated pydantic input, a function and a preview.

```python
@registry.register
@mutation(name="updatePartCost", input=UpdatePartCostInput, manager="PartManager")
def update_part_cost(actor, data: UpdatePartCostInput) -> Part:
    part = Part.objects.get(pk=data.part_id)
    part.unit_cost = data.unit_cost
    part.save()
    return part
```

`@mutation` builds a `Mutation`; registering it (in the same `ManagerRegistry` as the
managers) makes it known by name. Being known is not being callable: the mutate tool runs
only names in `allowed_mutations`, asks for confirmation for names in `confirm_mutations`
and `staff_approval_mutations`, and only `execute_mutation` (called by the confirmation
flow once a person approved) runs one of those.

A mutation of a Django-backed manager runs in a database transaction. A returned model
instance or record is shown as the manager's exposed fields and id.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from chatomon.data.actor import is_authenticated
from chatomon.data.errors import DataError, did_you_mean
from chatomon.errors import ConfigurationError

if TYPE_CHECKING:
    from chatomon.data.registration import ManagerRegistry

__all__ = [
    "Mutation",
    "MutationFunction",
    "PreviewFunction",
    "aexecute_mutation",
    "execute_mutation",
    "input_errors",
    "mutation",
    "mutations_of",
    "validate_input",
]

MutationFunction = Callable[[Any, Any], Any]
"""`function(actor, data)`: performs the write; returns the created or changed object."""

PreviewFunction = Callable[[Any, Any], Mapping[str, Any]]
"""`preview(actor, data)`: JSON-ready description of what the write will change."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Mutation:
    """A named write.

    Attributes:
        name: The name the model passes to mutate (e.g. "createPart").
        input: The pydantic model validating the input.
        function: `function(actor, data)` performing the write.
        description: What it does, for the model.
        manager: The manager whose objects it creates or changes.
        preview: Optional `preview(actor, data)`; default: the new values of a create, or
            field / before / after of an update.
        target_id: The input field holding the id of the object an update changes
            (default: "id", else "<manager stem>_id" such as "part_id", when present).
    """

    name: str
    input: type[BaseModel]
    function: MutationFunction = field(repr=False)
    description: str = ""
    manager: str | None = None
    preview: PreviewFunction | None = field(default=None, repr=False)
    target_id: str | None = None

    def __call__(self, actor: Any, data: Any) -> Any:
        """Run the function directly (no checks: the tools call `execute_mutation`)."""
        return self.function(actor, data)

    @property
    def target_field(self) -> str | None:
        """The input field naming the object an update changes, or None for a create."""
        if self.target_id is not None:
            return self.target_id
        names = self.input.model_fields
        if "id" in names:
            return "id"
        if self.manager:
            stem = re.sub(r"Manager$", "", self.manager) or self.manager
            snake = re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()
            if f"{snake}_id" in names:
                return f"{snake}_id"
        return None

    def signature(self) -> str:
        """A compact call signature for the model: `updatePartCost(part_id: integer, ...)`."""
        schema = self.input.model_json_schema()
        required = set(schema.get("required", ()))
        parts = []
        for name, prop in schema.get("properties", {}).items():
            kinds = [
                p.get("type", "any") for p in prop.get("anyOf", [prop]) if p.get("type") != "null"
            ]
            optional = "" if name in required else "?"
            parts.append(f"{name}{optional}: {'|'.join(kinds) or 'any'}")
        return f"{self.name}({', '.join(parts)})"


def mutation(
    *,
    name: str,
    input: type[BaseModel],
    description: str | None = None,
    manager: str | None = None,
    preview: PreviewFunction | None = None,
    target_id: str | None = None,
) -> Callable[[MutationFunction], Mutation]:
    """Declare a function as a mutation (register the result in a ManagerRegistry).

    Args:
        name: The mutation name (letters, digits, underscores).
        input: A pydantic model class validating the input.
        description: What it does (default: the function's docstring, first line).
        manager: The manager whose objects it writes.
        preview: Optional `preview(actor, data)` for confirmations.
        target_id: The input field with the id of the object an update changes.

    Raises:
        ConfigurationError: For a bad name, input model or function.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigurationError(
            f"mutation name {name!r} must start with a letter and hold only letters, "
            "digits and underscores",
            field="name",
            value=name,
        )
    if not (isinstance(input, type) and issubclass(input, BaseModel)):
        raise ConfigurationError(
            f"mutation {name!r}: input must be a pydantic BaseModel class, got {input!r}",
            field="input",
            value=repr(input),
        )

    def declare(function: MutationFunction) -> Mutation:
        if inspect.iscoroutinefunction(function):
            raise ConfigurationError(
                f"mutation {name!r} must be a plain function; the tools run it in a thread",
                field="function",
                value=name,
            )
        doc = (inspect.getdoc(function) or "").strip().splitlines()
        return Mutation(
            name=name,
            input=input,
            function=function,
            description=description if description is not None else (doc[0] if doc else ""),
            manager=manager,
            preview=preview,
            target_id=target_id,
        )

    return declare


def mutations_of(
    source: ManagerRegistry | Mapping[str, Mutation] | Iterable[Mutation],
) -> dict[str, Mutation]:
    """The mutations of a registry, a name → Mutation mapping, or an iterable of them."""
    if hasattr(source, "mutations"):
        return dict(source.mutations)
    if isinstance(source, Mapping):
        return dict(source)
    return {item.name: item for item in source}


def input_errors(error: ValidationError) -> list[dict[str, str]]:
    """Pydantic's errors as `[{"field": "unit_cost", "message": "..."}]`."""
    return [
        {"field": ".".join(str(part) for part in item["loc"]) or "input", "message": item["msg"]}
        for item in error.errors(include_url=False)
    ]


def validate_input(definition: Mutation, raw: Any) -> BaseModel:
    """The mutation input validated by its pydantic model, or an invalid_input DataError."""
    if not isinstance(raw, Mapping):
        raise DataError(
            f"input of {definition.name} must be an object: {definition.signature()}",
            code="invalid_input",
        )
    try:
        return definition.input.model_validate(dict(raw))
    except ValidationError as error:
        errors = input_errors(error)
        fields = ", ".join(item["field"] for item in errors)
        raise DataError(
            f"input of {definition.name} is invalid ({fields}); expected {definition.signature()}",
            code="invalid_input",
            details={"errors": errors},
        ) from None


def execute_mutation(
    registry_or_mutations: ManagerRegistry | Mapping[str, Mutation] | Iterable[Mutation],
    name: str,
    input: Any,
    actor: Any,
) -> dict[str, Any]:
    """Run an approved mutation and return its result (errors are results too).

    Only the confirmation flow (and the mutate tool, for mutations that need no
    confirmation) calls this. It checks the actor and the input again, since both reach it
    from stored state. Synchronous: from async code call `aexecute_mutation`.

    Returns:
        `{"status": "executed", "mutation": name, "result": ...}`, or an error result
        (not_authenticated, invalid_input, permission_denied, ...).
    """
    # Imported here: mutation_runs needs the registry module, which imports this one.
    from chatomon.data.mutation_runs import run_mutation  # noqa: PLC0415

    mutations = mutations_of(registry_or_mutations)
    definition = mutations.get(name)
    if definition is None:
        return DataError(
            f"there is no mutation {name!r}{did_you_mean(name, mutations)}",
            code="mutation_not_allowed",
        ).to_result()
    if not is_authenticated(actor):
        return DataError("sign in to change data", code="not_authenticated").to_result()
    registry = registry_or_mutations if hasattr(registry_or_mutations, "schema_index") else None
    try:
        data = validate_input(definition, input)
        return run_mutation(registry, definition, data, actor)  # type: ignore[arg-type]
    except DataError as error:
        return error.to_result()


async def aexecute_mutation(
    registry_or_mutations: ManagerRegistry | Mapping[str, Mutation] | Iterable[Mutation],
    name: str,
    input: Any,
    actor: Any,
) -> dict[str, Any]:
    """`execute_mutation` in a worker thread (the Django ORM is synchronous).

    asgiref's thread-sensitive mode, as `chatomon.chat.tools.in_callers_thread` (a
    toolset's default runner) gives it; the tool loop runs its approved writes through its
    toolset's own runner instead.
    """
    from asgiref.sync import sync_to_async  # noqa: PLC0415 - only async callers need it

    return await sync_to_async(execute_mutation, thread_sensitive=True)(
        registry_or_mutations, name, input, actor
    )
