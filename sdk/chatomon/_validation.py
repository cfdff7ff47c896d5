"""Configuration validated by pydantic models, and the one reading of their errors.

The settings (`chatomon.django.settings`) and the providers' configurations are pydantic
models with `extra="forbid"`. Each field's `description` says, in words, what it accepts
("a whole number of at least 1"); a validator that checks more than a type raises
`invalid(...)` with its own reason. `problem_of` turns pydantic's `ValidationError` into a
`Problem` (the key path, the value given, what is allowed, a "did you mean"), which each
caller turns into its exception with `Problem.message(label)`:

```
CHATOMON['rate_limit']['requests'] must be a whole number, or None, got '60'
OpenAIProvider setting 'modle' is unknown; did you mean 'model'? (known: api, api_key, ...)
```
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin
from urllib.parse import urlparse

from pydantic import AfterValidator, BaseModel, Field, ValidationError
from pydantic.dataclasses import is_pydantic_dataclass
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError

from chatomon._suggest import closest

__all__ = [
    "REDACTED",
    "Count",
    "HttpUrl",
    "Problem",
    "Seconds",
    "Secret",
    "Text",
    "invalid",
    "problem_of",
    "unknown_key",
    "unknown_key_problem",
]

REDACTED = "<redacted>"
"""What messages and errors show instead of the value of a `Secret` field."""

CUSTOM_ERROR = "chatomon_invalid"
"""The pydantic error type of `invalid`: its context carries the whole problem."""

_MAPPINGS = (Mapping, dict, typing.Mapping)
_SEQUENCES = (tuple, list, Sequence, typing.Sequence)


class Secret:
    """Field metadata (`Annotated[str | None, Secret()]`): never show this field's value."""


@dataclass(frozen=True)
class Problem:
    """The first thing wrong in a configuration mapping.

    Attributes:
        key: Where, as a dotted path below the mapping ("rate_limit.requests",
            "atom.input[1]", "provider_profiles.fast.trust_group").
        value: The value given there (REDACTED for a secret).
        allowed: What would be accepted: the closed set of names, or a description.
        suggestion: The closest known name to a misspelled key or choice, or None.
        reason: What is wrong, to follow the key's label in a message.
    """

    key: str
    value: object
    allowed: tuple[str, ...]
    suggestion: str | None
    reason: str

    def message(self, label: str) -> str:
        """The message, naming the key as `label` (e.g. "CHATOMON['url']")."""
        return f"{label} {self.reason}"


def invalid(
    reason: str,
    *,
    at: Sequence[str | int] = (),
    value: object = None,
    allowed: Sequence[str] = (),
    suggestion: str | None = None,
    show_value: bool = False,
) -> PydanticCustomError:
    """The error a validator raises for what types cannot say; `problem_of` reads it back.

    Args:
        reason: What is wrong, following the key's label ("names 'x', which cannot be ...").
        at: Where below the validated field the problem is, when deeper.
        value: The value to name, when `show_value`; else the input the validator got.
        allowed: What would be accepted (else the field's description).
        suggestion: The closest valid name, if any.
        show_value: Whether `value` replaces the validator's input in the Problem.
    """
    context: dict[str, object] = {
        "reason": reason,
        "at": tuple(at),
        "allowed": tuple(allowed),
        "suggestion": suggestion,
    }
    if show_value:
        context["value"] = value
    return PydanticCustomError(CUSTOM_ERROR, "{reason}", context)


def unknown_key_problem(key: str, known: Iterable[str]) -> Problem:
    """The problem of `key`, which is none of the `known` keys (with a "did you mean")."""
    names = sorted(known)
    match = closest(key, names)
    hint = f"; did you mean {match!r}?" if match else ""
    reason = f"is unknown{hint} (known: {', '.join(names) or 'none'})"
    return Problem(key, key, tuple(names), match, reason)


def unknown_key(key: str, known: Iterable[str]) -> PydanticCustomError:
    """The error for `key`, not one of `known`, in a mapping a validator checks itself."""
    problem = unknown_key_problem(key, known)
    return invalid(
        problem.reason,
        at=(key,),
        value=key,
        allowed=problem.allowed,
        suggestion=problem.suggestion,
        show_value=True,
    )


UNKNOWN_KEY_ERRORS = ("extra_forbidden", "unexpected_keyword_argument")
"""pydantic's error types for an unknown key: of a model, of a pydantic dataclass."""


def problem_of(error: ValidationError, model: type[Any]) -> Problem:
    """The first problem `error` reports, for data validated by `model`.

    `model` is a pydantic model or a pydantic dataclass. An unknown key comes first (a
    misspelled key often explains the rest); then the problems in the order of the fields.
    """
    details = sorted(error.errors(), key=lambda detail: detail["type"] not in UNKNOWN_KEY_ERRORS)
    detail = details[0]
    context: Mapping[str, Any] = detail.get("ctx") or {}
    loc = tuple(detail["loc"])
    if detail["type"] == CUSTOM_ERROR:
        loc += tuple(context["at"])
    place = _locate(model, loc)
    value = context.get("value", detail["input"])
    if place.secret:
        value = REDACTED
    if detail["type"] == CUSTOM_ERROR:
        allowed = tuple(context["allowed"]) or place.description
        return Problem(place.key, value, allowed, context["suggestion"], context["reason"])
    if detail["type"] in UNKNOWN_KEY_ERRORS:
        # The key path names the unknown key itself; the problem names it as the value.
        unknown = unknown_key_problem(str(loc[-1]), place.siblings)
        return dataclasses.replace(unknown, key=place.key)
    return _wrong_value(place, value, detail)


def _wrong_value(place: _Place, value: object, detail: ErrorDetails) -> Problem:
    if detail["type"] == "missing":
        needed = f": {place.description[0]}" if place.description else ""
        return Problem(place.key, None, place.description, None, f"is required{needed}")
    shown = REDACTED if place.secret else repr(value)
    if place.choices:
        names = tuple(str(choice) for choice in place.choices)
        match = closest(value, names) if isinstance(value, str) else None
        hint = f"; did you mean {match!r}?" if match else ""
        listed = ", ".join(map(repr, place.choices))
        return Problem(
            place.key, value, names, match, f"must be one of {listed}, got {shown}{hint}"
        )
    if place.description:
        return Problem(
            place.key,
            value,
            place.description,
            None,
            f"must be {place.description[0]}, got {shown}",
        )
    return Problem(place.key, value, (), None, f"is invalid ({detail['msg']}), got {shown}")


@dataclass
class _Place:
    """Where an error's location leads in the model: the key path and what the field says."""

    key: str = ""
    field: FieldInfo | None = None
    siblings: tuple[str, ...] = ()
    annotation: Any = None

    @property
    def description(self) -> tuple[str, ...]:
        text = self.field.description if self.field is not None else None
        return (text,) if text else ()

    @property
    def secret(self) -> bool:
        return self.field is not None and any(isinstance(m, Secret) for m in self.field.metadata)

    @property
    def choices(self) -> tuple[object, ...]:
        annotation = _without_none(self.annotation)
        return get_args(annotation) if get_origin(annotation) is Literal else ()


def _locate(model: type[Any], loc: tuple[str | int, ...]) -> _Place:
    """Follow `loc` through the model's fields, mappings and sequences.

    Parts that are none of these (a union's branch tag, pydantic's "[key]" for a mapping
    key) end the walk: the key path stops at the field they belong to.
    """
    place = _Place(annotation=model)
    for index, part in enumerate(loc):
        node = _without_none(place.annotation)
        fields = _fields_of(node)
        if fields is not None and isinstance(part, str):
            place.siblings = tuple(fields)
            place.key = f"{place.key}.{part}" if place.key else part
            place.field = fields.get(part)
            if place.field is None:
                break  # an unknown key
            place.annotation = place.field.annotation
        elif get_origin(node) in _MAPPINGS and loc[index + 1 : index + 2] != ("[key]",):
            place.key = f"{place.key}.{part}"
            place.annotation = (get_args(node) or (Any, Any))[-1]
        elif get_origin(node) in _SEQUENCES and isinstance(part, int):
            place.key = f"{place.key}[{part}]"
            place.annotation = (get_args(node) or (Any,))[0]
        else:
            break
    return place


def _fields_of(node: Any) -> Mapping[str, FieldInfo] | None:
    """The fields of a pydantic model or pydantic dataclass; None for anything else."""
    if isinstance(node, type) and issubclass(node, BaseModel):
        return node.model_fields
    if is_pydantic_dataclass(node):
        fields: Mapping[str, FieldInfo] = node.__pydantic_fields__
        return fields
    return None


def _without_none(annotation: Any) -> Any:
    """`X` for `X | None` (and for `Annotated[X, ...]`); other annotations unchanged."""
    if get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(rest) == 1:
            return _without_none(rest[0])
    return annotation


# The field types settings and provider configurations share. Strict: True is not 1, and
# "60" is not a number.

Text = Annotated[str, Field(strict=True, pattern=r"\S")]
"""A string with at least one character that is not a space."""

Seconds = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
"""A finite number above 0 (an int is accepted)."""

Count = Annotated[int, Field(strict=True, ge=0)]
"""A whole number of at least 0 (no bool)."""


def _http_url(value: str) -> str:
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise invalid(f"must be an http(s) URL such as http://host/v1, got {value!r}")
    return value


HttpUrl = Annotated[str, Field(strict=True), AfterValidator(_http_url)]
"""An http or https URL with a host."""
