"""Who is asking: the actor every read scope and mutation receives.

Any object with `is_authenticated` and `id` is an actor: a Django user (or
`AnonymousUser`) works as is. `SimpleActor` serves notebooks, tests and services.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["Actor", "SimpleActor", "is_authenticated"]


@runtime_checkable
class Actor(Protocol):
    """The person (or service) a tool call acts for."""

    @property
    def is_authenticated(self) -> bool:
        """Whether the actor has logged in; mutations require it."""
        ...

    @property
    def id(self) -> Any:
        """The actor's identifier (None for an anonymous actor)."""
        ...


@dataclass(frozen=True, slots=True)
class SimpleActor:
    """A plain actor: an id, and whether it is authenticated and staff.

    Attributes:
        id: The actor's identifier.
        is_authenticated: Whether the actor has logged in.
        is_staff: Whether the actor may approve staff-approval mutations.
    """

    id: Any = None
    is_authenticated: bool = True
    is_staff: bool = False


def is_authenticated(actor: object | None) -> bool:
    """Whether `actor` is present and authenticated (a missing attribute counts as no)."""
    return actor is not None and getattr(actor, "is_authenticated", False) is True
