"""The `atom` section of settings.CHATOMON: the orbitals, built from what the settings give.

An orbital may be given as an instance, a class (built with no arguments), a factory
returning one, or the dotted path of any of these. The Atom is built once during
validation, so that what only it checks (two orbitals with one name, an option's value)
fails at startup rather than at every turn.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field, PlainValidator, model_validator
from pydantic.dataclasses import dataclass

from chatomon._validation import Text, invalid, unknown_key
from chatomon.atom import Atom
from chatomon.django.settings.sections import SECTION, frozen, resolve_dotted
from chatomon.errors import ConfigurationError
from chatomon.orbitals.base import Orbital, ParallelGroup
from chatomon.schemas import CaptureContent

__all__ = ["ATOM_OPTIONS", "ORBITAL_FORMS", "AtomSettings", "resolve_orbital"]

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


def resolve_orbital(spec: Any) -> Orbital | ParallelGroup:
    """The orbital `spec` stands for: an instance, a class, a factory, or a dotted path.

    Raises:
        PydanticCustomError: The path cannot be imported, building fails, or the result
            is no orbital.
    """
    target = resolve_dotted(spec, callable_only=False)
    if isinstance(target, Orbital | ParallelGroup):
        return target
    if callable(target):
        try:
            built = target()
        except Exception as error:
            raise invalid(
                f"is {spec!r}; building it with no arguments failed: "
                f"{type(error).__name__}: {error}",
                allowed=ORBITAL_FORMS,
            ) from error
        if isinstance(built, Orbital | ParallelGroup):
            return built
        target = built
    raise invalid(
        f"must be an orbital: {', '.join(ORBITAL_FORMS)}; {spec!r} gave {type(target).__name__}",
        allowed=ORBITAL_FORMS,
    )


OrbitalSpec = Annotated[Orbital | ParallelGroup, PlainValidator(resolve_orbital)]


def _atom_options(options: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in options:
        if key not in ATOM_OPTIONS:
            raise unknown_key(key, ATOM_OPTIONS)
    return frozen(options)


@dataclass(frozen=True, config=SECTION)
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

    name: Text = Field(default="chat", description="a non-empty string")
    input: tuple[OrbitalSpec, ...] = Field(default=(), description="a list of orbitals")
    output: tuple[OrbitalSpec, ...] = Field(default=(), description="a list of orbitals")
    refusal: Text | None = Field(default=None, description="a non-empty string, or None")
    capture_content: CaptureContent = "none"
    options: Annotated[Mapping[str, Any], AfterValidator(_atom_options)] = Field(
        default_factory=dict,
        validate_default=True,
        description="a mapping of Atom keyword arguments",
    )

    @model_validator(mode="after")
    def _probe(self) -> AtomSettings:
        """Build the Atom once: it judges two orbitals with one name, or an option's value."""
        refusal: dict[str, Any] = {} if self.refusal is None else {"refusal": self.refusal}
        try:
            Atom(
                self.name,
                lambda messages, guidance: "",
                input=self.input,
                output=self.output,
                capture_content=self.capture_content,
                **refusal,
                **self.options,
            )
        except ConfigurationError as error:
            at = ("options", error.field) if error.field in ATOM_OPTIONS else ()
            raise invalid(
                f"is invalid: {error}", at=at, value=error.value, show_value=True
            ) from error
        return self
