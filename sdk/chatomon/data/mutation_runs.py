"""Running a validated mutation, and previewing what it will change.

`run_mutation` calls the function (in a transaction for Django-backed managers) and shows
what it returned as the manager's exposed fields; Django's `PermissionDenied` and
`ValidationError` raised by the function become permission_denied and invalid_input
results. `preview_mutation` describes a pending write for its confirmation: the mutation's
own preview, or for an update (its input names the target's id) each field it sets with
its value before and after, or for a create the new values. `unchanged_reason` reads a
preview that changes nothing (every field keeps its value, or the mutation's own preview
says `"unchanged": true`): the mutate tool then asks nobody and writes nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from chatomon.data.errors import DataError, PermissionDeniedError
from chatomon.data.serialization import json_value, serialize_value
from chatomon.redaction import DEFAULT_REDACTION

if TYPE_CHECKING:
    from chatomon.data.mutations import Mutation
    from chatomon.data.registration import ManagerRegistry
    from chatomon.data.schema import ManagerSchema, SchemaIndex

__all__ = [
    "change_summary",
    "json_ready",
    "preview_mutation",
    "run_mutation",
    "unchanged_reason",
]


def json_ready(value: Any) -> Any:
    """A returned value as JSON: mappings, lists, pydantic models, model instances (id)."""
    if isinstance(value, Mapping):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_ready(item) for item in value]
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if hasattr(value, "pk") and hasattr(value, "_meta"):
        return {"id": json_value(value.pk)}
    return json_value(value)


@contextmanager
def _django_errors() -> Iterator[None]:
    """Django's own permission and validation errors, as tool errors."""
    if "django" not in sys.modules:
        yield
        return
    from django.core.exceptions import PermissionDenied, ValidationError  # noqa: PLC0415

    try:
        yield
    except PermissionDenied as error:
        raise PermissionDeniedError(str(error) or "you may not do this") from None
    except ValidationError as error:
        messages = [str(message) for message in error.messages]
        raise DataError(
            "; ".join(messages) or "the input was refused",
            code="invalid_input",
            details={"errors": [{"field": "input", "message": m} for m in messages]},
        ) from None


def _transaction(registry: ManagerRegistry | None, definition: Mutation) -> Any:
    manager = registry.managers.get(definition.manager) if registry and definition.manager else None
    if manager is None or manager.model is None:
        return nullcontext()
    from django.db import router, transaction  # noqa: PLC0415 - Django-backed managers only

    return transaction.atomic(using=router.db_for_write(manager.model))


def _schema(registry: ManagerRegistry | None, definition: Mutation) -> ManagerSchema | None:
    if registry is None or definition.manager is None:
        return None
    return registry.schema_index().managers.get(definition.manager)


def run_mutation(
    registry: ManagerRegistry | None, definition: Mutation, data: BaseModel, actor: Any
) -> dict[str, Any]:
    """Perform a validated mutation; `{"status": "executed", "mutation", "result"}`."""
    schema = _schema(registry, definition)
    with _django_errors(), _transaction(registry, definition):
        returned = definition.function(actor, data)
        shown = schema.backend.serialize(schema, returned) if schema is not None else None
    return {
        "status": "executed",
        "mutation": definition.name,
        "result": shown if shown is not None else json_ready(returned),
    }


def preview_mutation(
    index: SchemaIndex, definition: Mutation, data: BaseModel, actor: Any
) -> dict[str, Any]:
    """What the mutation will change, JSON-ready, for its confirmation."""
    if definition.preview is not None:
        with _django_errors():
            return dict(json_ready(definition.preview(actor, data)))
    values = data.model_dump(mode="json")
    schema = index.managers.get(definition.manager) if definition.manager else None
    target = definition.target_field
    if schema is None or target is None or getattr(data, target, None) is None:
        shown: dict[str, Any] = {"action": "create", "values": values}
        if schema is not None:
            shown["manager"] = schema.name
        return shown
    object_id = getattr(data, target)
    before = schema.backend.fetch(schema, object_id, actor)
    if before is None:
        raise DataError(
            f"{schema.name} has no object with id {json_value(object_id)!r} that you can see",
            code="invalid_input",
            details={"errors": [{"field": target, "message": "no such object"}]},
        )
    given = [name for name in type(data).model_fields if name in data.model_fields_set]
    changes = [
        {
            "field": name,
            "before": before[name],
            "after": serialize_value(schema.fields[name], getattr(data, name)),
        }
        for name in given
        if name in schema.fields and name not in ("id", target)
    ]
    others = {name: values[name] for name in given if name not in schema.fields and name != target}
    shown = {"action": "update", "manager": schema.name, "id": before["id"], "changes": changes}
    if others:
        shown["input"] = others
    return shown


def unchanged_reason(
    preview: Any, sensitive: Callable[[str], bool] = DEFAULT_REDACTION.sensitive
) -> str | None:
    """Why the previewed write would change nothing, or None when it changes something.

    A preview changes nothing when it says so (`"unchanged": true`, the convention for a
    mutation's own preview, with an optional `"reason"` such as "part P-1002 is already
    assigned to project PRJ-101"), or when it lists its field changes and every field keeps
    its value (an update setting the cost a part already has). A preview that holds input
    beyond the fields it lists (`"input"`), or any other shape, is taken to change something:
    only a preview that shows what it writes can tell that nothing would change. So is one
    that lists no field at all: a write given only its target (archive, delete, approve)
    does what its function does, which no field shows. A field whose name is `sensitive`
    (the service's redaction rule; by default a password, a token) never reads as kept:
    "unchanged" would tell the asker whether a guessed value is the stored one, and the
    reason would repeat it.
    """
    if not isinstance(preview, Mapping):
        return None
    if preview.get("unchanged") is True:
        reason = preview.get("reason")
        return reason if isinstance(reason, str) and reason.strip() else "nothing would change"
    changes = preview.get("changes")
    if not isinstance(changes, list) or not changes or "input" in preview:
        return None
    for change in changes:
        if not isinstance(change, Mapping) or change.get("before") != change.get("after"):
            return None
        if sensitive(str(change.get("field", ""))):
            return None
    target = _target_label(preview)
    kept = ", ".join(f"{c.get('field')} {json_value(c.get('after'))}" for c in changes)
    return f"{target} already has {kept}"


def change_summary(
    preview: Any, sensitive: Callable[[str], bool] = DEFAULT_REDACTION.sensitive
) -> str | None:
    """The previewed change in words, or None for a preview that lists no field change.

    "name from Apollo to Artemis on ProjectManager #1", for a message read to the user:
    a `sensitive` field (the service's redaction rule) is named without its values.
    """
    if not isinstance(preview, Mapping):
        return None
    changes = preview.get("changes")
    if not isinstance(changes, list) or not changes:
        return None
    described = []
    for change in changes:
        if not isinstance(change, Mapping):
            return None
        field = str(change.get("field", ""))
        if sensitive(field):
            described.append(field)
        else:
            before, after = _shown(change.get("before")), _shown(change.get("after"))
            described.append(f"{field} from {before} to {after}")
    return f"{', '.join(described)} on {_target_label(preview)}"


_SHOWN = 40
"""The characters of a previewed value a sentence shows (`change_summary`)."""


def _shown(value: Any) -> str:
    """A previewed value in a sentence: none for None, long text cut to `_SHOWN` characters."""
    shown = "none" if value is None else str(json_value(value))
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 1] + "…"


def _target_label(preview: Mapping[str, Any]) -> str:
    """The preview's target as "PartManager #12" ("the object" when it names neither)."""
    manager, object_id = preview.get("manager"), preview.get("id")
    if manager is None:
        return "the object" if object_id is None else f"#{object_id}"
    return str(manager) if object_id is None else f"{manager} #{object_id}"
