"""Which writes the local model may make (private to `local`).

Four rules, measured on the eval datasets with Qwen2.5-Coder-1.5B (temperature 0, one
seed), where the model wrote with ids it guessed: asked to rename the Mercury project, it
renamed project 1 (Apollo) at once, and a staff member approving the change would have
renamed the wrong project; asked to make the Bolt out of Aluminum, it proposed renaming
project 1 "New Bolt Project"; asked to delete every project (no mutation deletes), it
sent a rename with empty fields three times.

- **A write only when the user asks for one.** `mutate` is offered only when the user's
  latest message asks for a change (`asks_for_write`: one of `CHANGE_VERBS`, or the
  verb an allowed mutation's name starts with). A change asked for in other words ("P-1001
  should cost 14.50") gets an answer without a write; the user then asks with such a word.
- **A write names rows the conversation has seen.** A `mutate` call whose input names a
  row by a number (a field `id` or `..._id`) that no tool result of the conversation
  holds as the `id` of a row of that kind (`seen_rows`), and the user did not write, is
  a guess (`guessed_fields`): the provider withholds it and asks the model again with
  the reads only (`reads_only`), so it looks the row up first. A natural key written as
  text (a part number, a code) is the mutation's to resolve, and passes.
- **After a lookup, the write it was for.** Once a round brought rows back the model is
  offered no more reads (`local_template.offered_tools`: it asked for the same rows
  again), so a write needing a lookup first could not follow it. When the user asked
  for a change, `mutate` alone is offered after the rows (`writes_only`). Offered after
  rows the tools that read no rows, `mutate` among them, whatever the question, the
  model wrote an invented rename after 3 of the 14 read-only basic_queries questions.
- **No tool for a removal nothing can make.** Asked to delete every project while no
  mutation deletes, the model read the projects with a limit of 0, met the error and
  repeated it to the user: 14 to 18 s for a turn that can only decline. When the latest
  message asks to delete or remove (`REMOVAL_VERBS`) and for no other change, and no
  allowed mutation's name holds such a verb (`asks_for_missing_removal`), no tool is
  offered: the model answers in text, with the allowed mutations still in its prompt.
  The words are read without their context: "don't delete anything, list the parts"
  is declined too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.local_template import MUTATE, calls_by_id, latest_user_text, tool_result

__all__ = [
    "CHANGE_VERBS",
    "REMOVAL_VERBS",
    "SeenRows",
    "asks_for_missing_removal",
    "asks_for_write",
    "guessed_fields",
    "reads_only",
    "seen_rows",
    "writes_only",
]

CHANGE_VERBS = frozenset(
    {
        "assign",
        "change",
        "create",
        "edit",
        "make",
        "mark",
        "modify",
        "move",
        "put",
        "rename",
        "replace",
        "set",
        "switch",
        "update",
    }
)
"""Words asking for a change, anywhere in the message. Not "add" nor "give" ("what do
the densities add up to?", "give me the part list" are reads): a project whose mutation
is named `addPart...` gets "add" from the mutation's name (`asks_for_write`). A word is
no sure sign: "the latest update" offers `mutate` to a read question too, whose write
would still wait for a confirmation."""

REMOVAL_VERBS = frozenset({"delete", "destroy", "drop", "erase", "purge", "remove", "wipe"})
"""Words asking to delete data (`asks_for_missing_removal`). Whole words only: "removed"
and "dropped" ask about the data ("which parts were removed?"), not for a removal."""

_WORD = re.compile(r"[a-z]+")
_NUMBER = re.compile(r"(?<![\w.,:/-])\d+(?!\w|[.,:/-]\d)")
"""A number standing alone: "project 2." holds 2; "P-1001", "14.50", "v2", "1,000",
"10:30" and "2024-01-05" hold none."""

_VERB = re.compile(r"[A-Za-z][a-z]*")
"""The first word of a mutation's name (`renameProject`, `ArchiveProject`)."""
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+")
"""The words of a mutation's name: `softDeleteProject` → soft, Delete, Project."""


def _mutations(tools: Sequence[ToolDefinition]) -> list[str]:
    """The mutation names `mutate` allows (its `mutation` enum), or [] without mutate."""
    for tool in tools:
        if tool.name == MUTATE:
            enum = tool.input_schema.get("properties", {}).get("mutation", {}).get("enum", ())
            return [name for name in enum if isinstance(name, str)]
    return []


def _mutation_verbs(tools: Sequence[ToolDefinition]) -> set[str]:
    """The verbs the allowed mutations' names start with (`renameProject`: "rename")."""
    leading = (_VERB.match(name) for name in _mutations(tools))
    return {verb.group().casefold() for verb in leading if verb}


def _words(messages: Sequence[Message]) -> set[str]:
    return set(_WORD.findall(latest_user_text(messages).casefold()))


def asks_for_write(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> bool:
    """Whether `mutate` is offered and the latest user message asks for a change."""
    if not any(tool.name == MUTATE for tool in tools):
        return False
    return bool(_words(messages) & (CHANGE_VERBS | _mutation_verbs(tools)))


def asks_for_missing_removal(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> bool:
    """Whether the latest user message asks only to delete or remove, and no mutation does.

    A word of `REMOVAL_VERBS` in the message, none of `CHANGE_VERBS` nor an allowed
    mutation's verb (a change the message asks beside it is still made), and no allowed
    mutation's name holding such a word (`deletePart`, `productDelete`, `bulk_remove`):
    a small model has nothing to call that could serve the request, and the only right
    answer declines it.
    """
    words = _words(messages)
    if not words & REMOVAL_VERBS or words & (CHANGE_VERBS | _mutation_verbs(tools)):
        return False
    named = {word.casefold() for name in _mutations(tools) for word in _NAME_WORD.findall(name)}
    return not named & REMOVAL_VERBS


def writes_only(tools: Sequence[ToolDefinition]) -> list[ToolDefinition]:
    """`mutate` alone, when it is among `tools`."""
    return [tool for tool in tools if tool.name == MUTATE]


def reads_only(tools: Sequence[ToolDefinition]) -> list[ToolDefinition]:
    """Every tool but `mutate`."""
    return [tool for tool in tools if tool.name != MUTATE]


@dataclass(frozen=True, slots=True)
class SeenRows:
    """The row ids a conversation has shown, by the kind of row they belong to.

    Attributes:
        by_kind: Ids of rows per kind: "part" for a row a PartManager read returned, or a
            row under a `part` or `parts` key of another row, or a `part__id` group key
            (`_kind`); a tool without a `manager` argument files its rows under its own
            name's kind (`query_part_manager` → "part").
        any_kind: Ids that may name a row of any kind: numbers the user wrote ("rename
            project 2"), rows a write returned (a created row, of the mutation's kind).
        managers: The kinds of the managers the tools read (`_managers`): a field of
            such a kind names a row only once a row of it was read.
    """

    by_kind: Mapping[str, frozenset[int]]
    any_kind: frozenset[int]
    managers: frozenset[str] = frozenset()

    def holds(self, field: str, number: int) -> bool:
        """Whether the input field `field` (`material_id`) names a row shown as `number`.

        A field of a manager's kind none of whose rows was read names none (`project_id`
        after reading parts only); a field of no known kind (a plain `id`, a relation
        named otherwise) is checked against the rows of every kind.
        """
        if number in self.any_kind:
            return True
        kind = _kind(field.removesuffix("_id")) if field.endswith("_id") else None
        if kind is not None and (kind in self.by_kind or kind in self.managers):
            return number in self.by_kind.get(kind, ())
        return any(number in ids for ids in self.by_kind.values())


def seen_rows(messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> SeenRows:
    """The rows the conversation has shown: ids in tool results, numbers the user wrote.

    `tools`: the tools offered, naming the managers they read (`SeenRows.managers`).
    """
    calls = calls_by_id(messages)
    by_kind: dict[str, set[int]] = {}
    any_kind: set[int] = set()
    for message in messages:
        if message.role == "tool" and message.tool_name == MUTATE:
            # A write's result is a row of the mutation's kind, which no argument names.
            found: dict[str, set[int]] = {}
            _collect(tool_result(message), "", found)
            any_kind.update(*found.values())
        elif message.role == "tool":
            call = calls.get(message.tool_call_id or "")
            manager = call.args.get("manager") if call is not None else None
            source = manager if isinstance(manager, str) else (message.tool_name or "")
            _collect(tool_result(message), _kind(source), by_kind)
        elif message.role == "user":
            any_kind.update(int(number) for number in _NUMBER.findall(message.content))
    seen = {kind: frozenset(ids) for kind, ids in by_kind.items()}
    return SeenRows(seen, frozenset(any_kind), _managers(tools))


def _managers(tools: Sequence[ToolDefinition]) -> frozenset[str]:
    """The kinds of the managers the tools read: a `manager` argument's enum, direct tools."""
    kinds: set[str] = set()
    for tool in tools:
        if tool.name.startswith("query_") and tool.name.endswith("_manager"):
            kinds.add(_kind(tool.name))
        properties = tool.input_schema.get("properties", {})
        for name, schema in properties.items() if isinstance(properties, Mapping) else ():
            if name.endswith("manager") and isinstance(schema, Mapping):
                kinds.update(
                    _kind(item) for item in schema.get("enum", ()) if isinstance(item, str)
                )
    return frozenset(kinds)


_CONTAINERS = frozenset({"data", "result", "groups", "group", "values"})
"""Keys of a tool result that hold rows of the tool's own kind."""


def _collect(value: Any, kind: str, by_kind: dict[str, set[int]]) -> None:
    """Add the ids held at any depth: a row's relation names its rows' kind.

    An `id` key is a row of `kind`; a path ending in `__id` (an aggregate's group key,
    `material__id`) a row of its last relation's kind.
    """
    if isinstance(value, list):
        for item in value:
            _collect(item, kind, by_kind)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            name = str(key)
            if isinstance(item, int) and not isinstance(item, bool):
                if name == "id":
                    by_kind.setdefault(kind, set()).add(item)
                elif name.endswith("__id"):
                    relation = name.removesuffix("__id").rpartition("__")[2]
                    by_kind.setdefault(_kind(relation), set()).add(item)
            elif isinstance(item, Mapping | list):
                _collect(item, kind if name in _CONTAINERS else _kind(name), by_kind)


_SIBILANT_E = re.compile(r"(?:[sxz]|[cs]h)e$")
"""A stem's "e" after a sibilant: "boxe", "case", "batche" (see `_kind`)."""


def _kind(name: str) -> str:
    """The kind of row a name speaks of: PartManager, query_part_manager, parts → "part".

    A form the singular and the plural share, for comparing, not for reading:
    "category" and "categories" → "category", "box" and "boxes" → "box", "status" and
    "statuses" → "statu", "address" and "addresses" → "address". An irregular plural
    ("people") names a kind of its own.
    """
    kind = name.casefold().removeprefix("query_").replace("_", "").removesuffix("manager")
    if kind.endswith("ies") and len(kind) > 3:
        return kind[:-3] + "y"
    kind = _without_s(kind)
    return _without_s(kind[:-1]) if _SIBILANT_E.search(kind) else kind


def _without_s(kind: str) -> str:
    """`kind` without a final "s" (but "ss": "glass" stays)."""
    return kind[:-1] if kind.endswith("s") and not kind.endswith("ss") and len(kind) > 1 else kind


def guessed_fields(arguments: Mapping[str, Any], seen: SeenRows) -> list[str]:
    """The input fields of a `mutate` call naming a row by a number not in `seen`.

    A field named `id` or ending in `_id` whose value is an integer, or decimal digits
    (a mutation may read those as an id), that no row of its kind showed
    (`SeenRows.holds`: `project_id` 1 after reading part 1 is a guess); anything else (a
    natural key, None for an optional reference) is left to the mutation's own checks,
    and so are lists of ids and rows named inside nested objects.
    """
    data = arguments.get("input")
    if not isinstance(data, Mapping):
        return []
    guessed: list[str] = []
    for name, value in data.items():
        if not (name == "id" or name.endswith("_id")):
            continue
        number = int(value) if isinstance(value, str) and value.strip().isdecimal() else value
        is_number = isinstance(number, int) and not isinstance(number, bool)
        if is_number and not seen.holds(name, number):
            guessed.append(name)
    return guessed
