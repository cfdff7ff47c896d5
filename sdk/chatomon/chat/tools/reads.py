"""The read tools: query and aggregate (and the direct strategy's query_<manager>).

Arguments are validated against the schema index into a spec (no data touched on a
mistake), then the manager's backend executes it within the context's limits.

A read that finds nothing while text filters narrowed it carries a `hint`: a model told
only `total_count: 0` answers "there is none" with confidence, when the name was written
differently ("Apollo project" for Apollo, a part of a word). The hint names the
case-insensitive substring filter to try instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from chatomon.chat.tools.context import ToolContext
from chatomon.data.aggregate import parse_aggregate
from chatomon.data.errors import DataError
from chatomon.data.hints import example, label_field, shaped_field
from chatomon.data.query import Condition, parse_query
from chatomon.data.schema import ManagerSchema, SchemaIndex

__all__ = ["aggregate", "query"]


def query(index: SchemaIndex, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
    """`{"data": [...], "total_count": int, "has_more": bool}`.

    A read that matched nothing may add a `hint` (the call or spelling to try), and
    `found_in`, the manager holding a row of the name asked (`named_elsewhere`).
    """
    spec = parse_query(
        index,
        args.get("manager"),
        filters=args.get("filters"),
        fields=args.get("fields"),
        order_by=args.get("order_by"),
        limit=args.get("limit"),
        offset=args.get("offset"),
        max_results=context.settings.max_results,
    )
    page = spec.schema.backend.run_query(
        spec, context.actor, context.settings.query_timeout_seconds
    )
    result: dict[str, Any] = {
        "data": page.rows,
        "total_count": page.total_count,
        "has_more": spec.offset + len(page.rows) < page.total_count,
    }
    if page.total_count == 0:
        # The fields the model named (all of them by default: then none was asked for).
        selected = spec.selection.fields if args.get("fields") else ()
        asked = [field.name for field in selected if field.name != "id"]
        found = named_elsewhere(index, spec.schema, spec.conditions, context, asked)
        if found is not None:
            # `found_in`: the rows are there, under another call (a local model must make it).
            result["hint"], result["found_in"] = found.hint, found.manager
        elif (hint := empty_text_hint(spec.conditions, spec.schema)) is not None:
            result["hint"] = hint
    return result


class Elsewhere(NamedTuple):
    """Where a name that matched nothing is (`named_elsewhere`)."""

    manager: str
    """The manager holding a row so named."""
    hint: str
    """The call to make instead, for the model."""


NAME_LOOKUPS = 12
"""At most this many managers are asked for a name that matched nothing (one read each)."""


def named_elsewhere(
    index: SchemaIndex,
    schema: ManagerSchema,
    conditions: tuple[Condition, ...],
    context: ToolContext,
    asked: Sequence[str] = (),
) -> Elsewhere | None:
    """Where a name that matched nothing is: the other manager holding a row so named.

    A model asked "what is the gear made of?" reads MaterialManager by the name "gear":
    the gear is a part; asked "which materials does Apollo use?", it filters projects by
    their parts' name "Apollo": Apollo is a project. Each exposed manager but the one
    whose field the text filter compared, on the same kind of backend (a read here may
    not cross from a worker thread to the event loop), is asked for one row whose label
    field is the value, ignoring case, as the actor may see them (the first
    `NAME_LOOKUPS` managers of the index, within one query timeout for them all; a
    manager that refuses is skipped, and a sensitive label field is never asked).

    `asked`: the fields the read selected. When the other manager's row leads to the
    manager read through a to-one relation (the gear's material), the hint selects them
    through it: asked the density of a material named "gear", the model copied the
    filter onto PartManager with `fields: ["density"]`, an unknown field there.
    """
    condition = next(
        (
            c
            for c in conditions
            if c.field.type == "string" and c.lookup in _NARROWING and isinstance(c.value, str)
        ),
        None,
    )  # fmt: skip
    if condition is None:
        return None
    compared = condition.hops[-1].target.name if condition.hops else schema.name
    # One deadline for every lookup: the hint may not cost more than the read it follows.
    timeout = context.settings.query_timeout_seconds
    deadline = None if timeout is None else time.monotonic() + timeout
    for other in list(index.managers.values())[:NAME_LOOKUPS]:
        label = label_field(other)
        if other.name == compared or label is None or "iexact" not in other.filters.get(label, ()):
            continue
        if other.backend.runs_in_thread != schema.backend.runs_in_thread:
            continue
        if context.redaction.sensitive(label):
            continue  # a hint would tell whether a guessed secret is stored
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return None
        key = f"{label}__iexact"
        spec = parse_query(
            index, other.name, filters={key: condition.value}, fields=[label], limit=1,
            max_results=1,
        )  # fmt: skip
        try:
            page = other.backend.run_query(spec, context.actor, left)
        except DataError:  # that manager refused or timed out: only the hint is lost
            continue
        if page.total_count:
            how = "filter on" if other is schema else f"query {other.name} with"
            through = "" if other is schema else _through(other, schema, label, asked, context)
            return Elsewhere(
                other.name,
                f"no {schema.name} row has {condition.key} = {condition.value!r}, but a "
                f"{other.name} row is named so: {how} {example(key, condition.value)}{through}",
            )
    return None


def _through(
    other: ManagerSchema,
    read: ManagerSchema,
    label: str,
    asked: Sequence[str],
    context: ToolContext,
) -> str:
    """The fields that reach `asked` of `read` from a row of `other`, as a hint's tail; "".

    Only through one to-one relation of `other` that leads to `read` (several: none, as
    the hint could not say which).
    """
    wanted = [name for name in asked if name in read.fields]
    leading = [r for r in other.relations.values() if r.target == read.name and not r.to_many]
    if not wanted or len(leading) != 1:
        return ""
    target_label = label_field(read)
    if target_label is not None and context.redaction.sensitive(target_label):
        target_label = None
    nested = [*([target_label] if target_label and target_label not in wanted else []), *wanted]
    fields = [label, {leading[0].name: nested}]
    return f" and fields {json.dumps(fields)}"


def aggregate(index: SchemaIndex, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
    """`{"groups": [{"group": {...}, "values": {...}}], "has_more": bool}`."""
    spec = parse_aggregate(
        index,
        args.get("manager"),
        filters=args.get("filters"),
        group_by=args.get("group_by"),
        metrics=args.get("metrics"),
        max_groups=context.settings.max_results,
    )
    page = spec.schema.backend.run_aggregate(
        spec, context.actor, context.settings.query_timeout_seconds
    )
    result: dict[str, Any] = {"groups": page.groups, "has_more": page.has_more}
    empty = not page.groups or (
        not spec.group_by and page.groups[0].get("values", {}).get("count") == 0
    )
    hint = empty_text_hint(spec.conditions, spec.schema) if empty else None
    if hint is not None:
        result["hint"] = hint
    return result


_NARROWING = ("exact", "iexact", "contains", "startswith", "in")
"""Text lookups that miss a value written differently (icontains is the forgiving one)."""


def empty_text_hint(
    conditions: tuple[Condition, ...], schema: ManagerSchema | None = None
) -> str | None:
    """What to try when text filters matched nothing, or None when no text filter did.

    `schema` is the manager queried: a value with the form of another field's codes
    ("P-1002" asked of a part's name, whose number reads "such as P-1001") points there.
    """
    for condition in conditions:
        if condition.field.type != "string" or condition.on_relation:
            continue
        if condition.lookup not in _NARROWING:
            continue
        base = (
            condition.key.rsplit("__", 1)[0]
            if condition.key.endswith(tuple(f"__{lookup}" for lookup in _NARROWING))
            else condition.key
        )
        value = condition.value[0] if isinstance(condition.value, tuple) else condition.value
        owner = condition.hops[-1].target if condition.hops else schema
        shaped = shaped_field(owner, value) if owner is not None else None
        if owner is not None and shaped is not None and shaped != condition.field.name:
            key = base.removesuffix(condition.field.name) + shaped
            return (
                f"no row has {condition.key} = {value!r}; {value!r} has the form of "
                f"{owner.name}.{shaped}: {example(key, value)}"
            )
        shown = example(f"{base}__icontains", _word(value))
        return (
            f"no row has {condition.key} = {value!r}. If it may be written differently, "
            f"try one distinctive word, ignoring case: {shown}"
            "; otherwise the answer is that there is none."
        )
    return None


def _word(value: str) -> str:
    """The word of a name most likely to be in the stored one: a proper noun or a code."""
    words = value.split() or [value]
    marked = [w for w in words if w[:1].isupper() or any(c.isdigit() for c in w)]
    return (marked or [max(words, key=len)])[0]
