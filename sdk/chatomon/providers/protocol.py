"""The provider protocol's values: history messages, tool definitions, and stream events.

The field names are the reference's, so that a provider written for it runs unchanged:
`ToolDefinition.input_schema`, `ToolCallEvent(id=..., name=..., args=...)`, and the tool
fields of `Message` (`tool_calls`, `tool_call_id`, `tool_name`, and the structured
`tool_result`). chatomon's earlier names are exact aliases of them, in both directions:
each class takes either name when constructed (by itself or through pydantic validation)
and answers to either when read; equality, `repr`, `dataclasses.asdict` and
`dataclasses.replace` use the reference's name.

| reference (field)            | alias                   |
|------------------------------|-------------------------|
| `ToolDefinition.input_schema` | `ToolDefinition.parameters` |
| `ToolCallEvent.args`          | `ToolCallEvent.arguments`   |
| `Message.tool_name`           | `Message.name`              |

`ToolCall`, the type of `Message.tool_calls`, is `ToolCallEvent` itself, as in the reference.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Final, Literal

from pydantic import AliasChoices, Field

from chatomon.schemas import TokenUsage

__all__ = [
    "TOOL_RESULT_MISSING",
    "ChatEvent",
    "DoneEvent",
    "Message",
    "Role",
    "TextChunkEvent",
    "ToolCall",
    "ToolCallEvent",
    "ToolDefinition",
    "result_text",
]

Role = Literal["system", "user", "assistant", "tool"]


class _ToolResultMissing:
    """The type of `TOOL_RESULT_MISSING`: one instance, kept through copies and pickling."""

    _instance: ClassVar[_ToolResultMissing | None] = None

    def __new__(cls) -> _ToolResultMissing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "TOOL_RESULT_MISSING"

    def __copy__(self) -> _ToolResultMissing:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _ToolResultMissing:
        # dataclasses.asdict deep-copies field values: the marker must stay itself.
        return self

    def __reduce__(self) -> str:
        return "TOOL_RESULT_MISSING"


TOOL_RESULT_MISSING: Final[Any] = _ToolResultMissing()
"""`Message.tool_result` of a message that carries no structured tool result.

A tool result may itself be `None`, so absence needs its own marker (the reference's).
"""


class _Unset:
    """The type of `_UNSET`, the default of a keyword the caller did not pass."""

    def __repr__(self) -> str:
        return "<not given>"


_UNSET: Final[Any] = _Unset()  # None is a real value of some fields: absence needs its own


def _either(owner: str, primary: tuple[str, Any], alias: tuple[str, Any], default: Any) -> Any:
    """The value passed under the primary name or its alias ((name, value) pairs).

    Passing both is an error, as passing one argument twice is.
    """
    (primary_name, given), (alias_name, aliased) = primary, alias
    if given is not _UNSET and aliased is not _UNSET:
        raise TypeError(
            f"{owner}() got both {primary_name!r} and its alias {alias_name!r}: pass one"
        )
    if given is not _UNSET:
        return given
    return default if aliased is _UNSET else aliased


def _empty_object_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True, init=False)
class ToolDefinition:
    """Provider-agnostic tool schema exposed to an LLM provider.

    Attributes:
        name: The tool name the model calls.
        description: What the tool does, written for the model.
        input_schema: JSON Schema of the arguments: an object schema without `$ref` or
            `oneOf`, so that every vendor accepts it. `parameters` is an exact alias.
    """

    name: str
    description: str
    input_schema: Annotated[
        Mapping[str, Any], Field(validation_alias=AliasChoices("input_schema", "parameters"))
    ] = field(default_factory=_empty_object_schema)

    def __init__(
        self,
        name: str,
        description: str,
        input_schema: Mapping[str, Any] = _UNSET,
        *,
        parameters: Mapping[str, Any] = _UNSET,
    ) -> None:
        schema = _either(
            "ToolDefinition", ("input_schema", input_schema), ("parameters", parameters), _UNSET
        )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description)
        object.__setattr__(
            self, "input_schema", _empty_object_schema() if schema is _UNSET else schema
        )

    @property
    def parameters(self) -> Mapping[str, Any]:
        """Alias of `input_schema`."""
        return self.input_schema


@dataclass(frozen=True, slots=True)
class TextChunkEvent:
    """Streaming assistant text emitted by a provider."""

    content: str
    type: ClassVar[str] = "text_chunk"


@dataclass(frozen=True, slots=True, init=False)
class ToolCallEvent:
    """Provider request to execute one configured chat tool.

    The same value is kept in the history, in `Message.tool_calls` (`ToolCall` is this
    class).

    Attributes:
        id: A stable id, unique within the conversation; the tool result answers it.
        name: The tool to run.
        args: The decoded argument mapping. `arguments` is an exact alias.
    """

    id: str
    name: str
    args: Annotated[
        Mapping[str, Any], Field(validation_alias=AliasChoices("args", "arguments"))
    ] = field(default_factory=dict)
    type: ClassVar[str] = "tool_call"

    def __init__(
        self,
        id: str,
        name: str,
        args: Mapping[str, Any] = _UNSET,
        *,
        arguments: Mapping[str, Any] = _UNSET,
    ) -> None:
        value = _either("ToolCallEvent", ("args", args), ("arguments", arguments), _UNSET)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", {} if value is _UNSET else value)

    @property
    def arguments(self) -> Mapping[str, Any]:
        """Alias of `args`."""
        return self.args

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored with conversations and suspended turns.

        Its keys are `id`, `name` and `arguments`: the form stored rows already hold.
        """
        return {"id": self.id, "name": self.name, "arguments": dict(self.args)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCallEvent:
        """The tool call of a JSON form: `to_dict`'s, or one keyed `args` (the reference's)."""
        arguments = data["args"] if "args" in data else data["arguments"]
        return cls(id=data["id"], name=data["name"], args=dict(arguments))


ToolCall = ToolCallEvent
"""One tool call the assistant requested, as kept in the history (`Message.tool_calls`)."""


@dataclass(frozen=True, slots=True, init=False)
class Message:
    """Provider-neutral chat history, including structured tool exchanges.

    Attributes:
        role: "system", "user", "assistant" or "tool".
        content: The text. On a tool message, the result as JSON text (a text result as it
            is); given only `tool_result`, it is written from it.
        tool_calls: On an assistant message, the tool calls it requested.
        tool_call_id: On a tool message, the id of the call it answers.
        tool_name: On a tool message, the name of the tool that ran. `name` is an exact
            alias.
        tool_result: On a tool message, the structured result; `TOOL_RESULT_MISSING` on
            other messages and on tool messages built from text alone.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCallEvent, ...] = ()
    tool_call_id: str | None = None
    tool_name: Annotated[str | None, Field(validation_alias=AliasChoices("tool_name", "name"))] = (
        None
    )
    tool_result: Any = TOOL_RESULT_MISSING

    def __init__(  # noqa: PLR0917 - positional in the reference's field order
        self,
        role: Role,
        content: str = "",
        tool_calls: Sequence[ToolCallEvent] = (),
        tool_call_id: str | None = None,
        tool_name: str | None = _UNSET,
        tool_result: Any = TOOL_RESULT_MISSING,
        *,
        name: str | None = _UNSET,
    ) -> None:
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "content", content)
        object.__setattr__(self, "tool_calls", tuple(tool_calls))
        object.__setattr__(self, "tool_call_id", tool_call_id)
        object.__setattr__(
            self, "tool_name", _either("Message", ("tool_name", tool_name), ("name", name), None)
        )
        object.__setattr__(self, "tool_result", tool_result)
        self.__post_init__()

    def __post_init__(self) -> None:
        # Also run by pydantic, which validates the fields without calling __init__.
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ValueError("only tool messages carry a tool_call_id")
        if self.role != "tool" and self.tool_result is not TOOL_RESULT_MISSING:
            raise ValueError("only tool messages carry a tool_result")
        if self.role == "tool" and not self.content and self.tool_result is not TOOL_RESULT_MISSING:
            object.__setattr__(self, "content", result_text(self.tool_result))

    @property
    def name(self) -> str | None:
        """Alias of `tool_name`."""
        return self.tool_name

    @classmethod
    def system(cls, content: str) -> Message:
        """A system instruction."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: Sequence[ToolCallEvent] = ()) -> Message:
        """An assistant message, optionally with the tool calls it requested."""
        return cls(role="assistant", content=content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(cls, call: ToolCallEvent, result: Any) -> Message:
        """The tool message answering `call`: the structured result, and its JSON text."""
        return cls(
            role="tool",
            content=result_text(result),
            tool_call_id=call.id,
            tool_name=call.name,
            tool_result=result,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (`tool_result` only when present, since JSON has no marker)."""
        data: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
        }
        if self.tool_result is not TOOL_RESULT_MISSING:
            data["tool_result"] = self.tool_result
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """The message of a JSON form: `to_dict`'s, or one with `name` for `tool_name`."""
        return cls(
            role=data["role"],
            content=data.get("content", ""),
            tool_calls=tuple(ToolCallEvent.from_dict(c) for c in data.get("tool_calls", ())),
            tool_call_id=data.get("tool_call_id"),
            tool_name=data["tool_name"] if "tool_name" in data else data.get("name"),
            tool_result=data.get("tool_result", TOOL_RESULT_MISSING),
        )


def result_text(result: Any) -> str:
    """A tool result as the text of its message: a string as it is, anything else as JSON."""
    return result if isinstance(result, str) else json.dumps(result, default=str)


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """Terminal provider event carrying optional usage metadata."""

    usage: TokenUsage = field(default_factory=TokenUsage)
    type: ClassVar[str] = "done"


ChatEvent = TextChunkEvent | ToolCallEvent | DoneEvent
"""What `complete(messages, tools)` yields."""
