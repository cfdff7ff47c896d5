"""The value checks behind chatomon.django.settings, and the resolution of the `atom` setting.

Each check takes the setting's dotted key (for the message) and the raw value, and returns
the normalized value or raises a `ChatConfigurationError` naming key, value and what is
allowed.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, get_args

from django.utils.module_loading import import_string

from chatomon.atom import Atom
from chatomon.errors import ChatConfigurationError, ConfigurationError, setting_label
from chatomon.orbitals.base import Orbital, ParallelGroup
from chatomon.schemas import CaptureContent

__all__ = [
    "AtomSettings",
    "checked_mapping",
    "positive_number",
    "reject_unknown_keys",
    "resolve_atom",
    "resolve_callable",
    "resolve_orbital",
    "text",
    "truth",
    "whole_number",
]

CAPTURE_CONTENT: tuple[CaptureContent, ...] = get_args(CaptureContent)

ORBITAL_FORMS = (
    "an Orbital or ParallelGroup instance",
    "an Orbital class (built with no arguments)",
    "a factory returning one",
    "a dotted path to any of these",
)

_ATOM_OWN_KEYS = frozenset({"self", "name", "nucleus", "input", "output", "capture_content"})
ATOM_OPTIONS = tuple(
    name for name in inspect.signature(Atom.__init__).parameters if name not in _ATOM_OWN_KEYS
)
"""The Atom keyword arguments `atom.options` may set (refusal may also be set directly)."""


@dataclass(frozen=True)
class AtomSettings:
    """The `atom` setting, resolved: orbital instances, not paths.

    Attributes:
        name: The atom's name in reports.
        input: Input orbitals (and parallel groups), built.
        output: Output orbitals (and parallel groups), built.
        refusal: The refusal text, or None for the Atom's default.
        capture_content: How much text reports hold ("none", "hash", "full").
        options: Other Atom keyword arguments.
    """

    name: str = "chat"
    input: tuple[Orbital | ParallelGroup, ...] = ()
    output: tuple[Orbital | ParallelGroup, ...] = ()
    refusal: str | None = None
    capture_content: CaptureContent = "none"
    options: Mapping[str, Any] = field(default_factory=dict)


def reject_unknown_keys(mapping: Mapping[str, Any], known: Collection[str], *, prefix: str) -> None:
    """Raise for the first key of `mapping` not in `known`, with a "did you mean"."""
    for key in mapping:
        if key not in known:
            raise ChatConfigurationError.unknown_key(f"{prefix}{key}", known)


def checked_mapping(key: str, value: Any) -> Mapping[str, Any]:
    """`value` when it is a mapping with string keys."""
    if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
        raise ChatConfigurationError.invalid_value(key, value, "a mapping with string keys")
    return value


def truth(key: str, value: Any) -> bool:
    """`value` when it is True or False (no truthy strings or numbers)."""
    if not isinstance(value, bool):
        raise ChatConfigurationError.invalid_value(key, value, "True or False")
    return value


def text(key: str, value: Any, *, allow_empty: bool = False) -> str:
    """`value` when it is a string (non-blank unless `allow_empty`)."""
    if not isinstance(value, str) or not (allow_empty or value.strip()):
        expected = "a string" if allow_empty else "a non-empty string"
        raise ChatConfigurationError.invalid_value(key, value, expected)
    return value


def whole_number(key: str, value: Any, *, minimum: int | None) -> int:
    """`value` when it is an int (not a bool) of at least `minimum`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (minimum is not None and value < minimum)
    ):
        expected = "a whole number" if minimum is None else f"a whole number of at least {minimum}"
        raise ChatConfigurationError.invalid_value(key, value, expected)
    return value


def positive_number(key: str, value: Any) -> float:
    """`value` when it is an int or float above zero (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ChatConfigurationError.invalid_value(key, value, "a number above 0")
    return value


def resolve_callable(key: str, value: Any, *, callable_only: bool = True) -> Any:
    """`value`, or what its dotted path names; a callable unless `callable_only` is False."""
    target = value
    if isinstance(value, str):
        try:
            target = import_string(value)
        except ImportError as error:
            raise ChatConfigurationError(
                f"{setting_label(key)} names {value!r}, which cannot be imported: {error}",
                key=key,
                value=value,
                allowed=("a callable", "a dotted path to a callable"),
            ) from error
    if callable_only and not callable(target):
        raise ChatConfigurationError.invalid_value(
            key, value, "a callable or a dotted path to a callable"
        )
    return target


def resolve_orbital(key: str, spec: Any) -> Orbital | ParallelGroup:
    """The orbital `spec` stands for: an instance, a class, a factory, or a dotted path."""
    target = resolve_callable(key, spec, callable_only=False)
    if isinstance(target, Orbital | ParallelGroup):
        return target
    if callable(target):
        try:
            built = target()
        except Exception as error:
            raise ChatConfigurationError(
                f"{setting_label(key)}: building {spec!r} with no arguments failed: "
                f"{type(error).__name__}: {error}",
                key=key,
                value=spec,
                allowed=ORBITAL_FORMS,
            ) from error
        if isinstance(built, Orbital | ParallelGroup):
            return built
        target = built
    raise ChatConfigurationError(
        f"{setting_label(key)} must be an orbital: {', '.join(ORBITAL_FORMS)}; "
        f"{spec!r} gave {type(target).__name__}",
        key=key,
        value=spec,
        allowed=ORBITAL_FORMS,
    )


def _orbitals(key: str, value: Any) -> tuple[Orbital | ParallelGroup, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ChatConfigurationError.invalid_value(key, value, "a list of orbitals")
    return tuple(resolve_orbital(f"{key}[{index}]", spec) for index, spec in enumerate(value))


def resolve_atom(value: Any, defaults: Mapping[str, Any]) -> AtomSettings:
    """The `atom` setting (merged over `defaults`), checked and with its orbitals built."""
    mapping = checked_mapping("atom", value)
    reject_unknown_keys(mapping, defaults, prefix="atom.")
    capture = mapping["capture_content"]
    if capture not in CAPTURE_CONTENT:
        raise ChatConfigurationError.invalid_choice(
            "atom.capture_content", capture, CAPTURE_CONTENT
        )
    options = checked_mapping("atom.options", mapping["options"])
    reject_unknown_keys(options, ATOM_OPTIONS, prefix="atom.options.")
    refusal = mapping["refusal"]
    atom = AtomSettings(
        name=text("atom.name", mapping["name"]),
        input=_orbitals("atom.input", mapping["input"]),
        output=_orbitals("atom.output", mapping["output"]),
        refusal=None if refusal is None else text("atom.refusal", refusal),
        capture_content=capture,
        options=MappingProxyType(dict(options)),
    )
    _probe_atom(atom)
    return atom


def _probe_atom(atom: AtomSettings) -> None:
    """Build the Atom once, so that what only it checks fails at startup, not every turn.

    Two orbitals with one name, or an option's value, are the Atom's to judge.
    """
    extra: dict[str, Any] = {} if atom.refusal is None else {"refusal": atom.refusal}
    try:
        Atom(
            atom.name,
            lambda messages, guidance: "",
            input=atom.input,
            output=atom.output,
            capture_content=atom.capture_content,
            **extra,
            **atom.options,
        )
    except ConfigurationError as error:
        field = getattr(error, "field", None)
        key = f"atom.options.{field}" if field in ATOM_OPTIONS else "atom"
        raise ChatConfigurationError(
            f"{setting_label(key)} is invalid: {error}",
            key=key,
            value=getattr(error, "value", None),
        ) from error
