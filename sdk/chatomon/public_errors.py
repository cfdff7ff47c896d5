"""Public chat errors: the stable code and message a client may see for a failed turn.

A failure reaches a client as a `PublicChatError`, never as the exception's text (which
goes to the logs and the `chat_error` signal). The seed's rules:

- `planned_public_error(reason)` accepts only the seven stable planned reasons
  (`PLANNED_REASONS`); any other reason is the generic `chat_error`.
- `public_chat_error(exc)` keeps an exception's valid `public_reason` (one that has a
  public message in `PLANNED_PUBLIC_MESSAGES`), maps a plain `TimeoutError` to
  `deadline_exceeded`, and everything else to `chat_error`.

Beyond the seed, a `ProviderError` whose own reason refines the seed's (chatomon's
`provider_auth`, `provider_rate_limited`, ...) is reported under the seed's code
(`provider_failed`, or `deadline_exceeded` for `provider_timeout`, which is also a
`TimeoutError`) and carries the finer reason in `reason`, a stable code as well.

Importing this module needs no Django: the planned-turn package and the pipeline share it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

from chatomon.errors import ProviderError

__all__ = [
    "GENERIC_ERROR_CODE",
    "GENERIC_ERROR_MESSAGE",
    "GENERIC_PUBLIC_ERROR",
    "PLANNED_PUBLIC_MESSAGES",
    "PLANNED_REASONS",
    "PlannedReason",
    "PublicChatError",
    "planned_public_error",
    "public_chat_error",
]

GENERIC_ERROR_CODE = "chat_error"
GENERIC_ERROR_MESSAGE = "Something went wrong. Please try again."
"""The message of `chat_error`: says nothing about what failed."""

PlannedReason = Literal[
    "invalid_plan",
    "manager_unresolved",
    "dependency_blocked",
    "budget_exhausted",
    "deadline_exceeded",
    "provider_failed",
    "synthesis_failed",
]
"""A stable planned terminal reason (the reference's `TerminalReason`)."""

PLANNED_REASONS: tuple[str, ...] = get_args(PlannedReason)
"""The seed's stable planned terminal reasons, the only ones `planned_public_error` takes."""

PLANNED_PUBLIC_MESSAGES: Mapping[str, str] = MappingProxyType(
    {
        "invalid_plan": "I could not prepare a safe plan for that request.",
        "manager_unresolved": "I could not resolve the required application data.",
        "dependency_blocked": "A required part of the request could not be completed.",
        "budget_exhausted": "The request reached its execution limit.",
        "deadline_exceeded": "The request reached its time limit.",
        "provider_failed": "The provider could not complete the request.",
        "synthesis_failed": "I could not produce a grounded answer from the available data.",
        "rate_limited": "Chat rate limit exceeded. Try again later.",
    }
)
"""The seed's public message of each stable reason (read-only); none names an exception."""


@dataclass(frozen=True, slots=True)
class PublicChatError:
    """A sanitized chat error, safe to return to clients.

    Attributes:
        code: The stable error code of the event contract (e.g. "provider_failed").
        message: The public message for `code`; never an exception's text.
        reason: chatomon's finer stable reason when it refines `code` (a ProviderError's
            `public_reason` such as "provider_rate_limited"), else None.
    """

    code: str
    message: str
    reason: str | None = None


GENERIC_PUBLIC_ERROR = PublicChatError(GENERIC_ERROR_CODE, GENERIC_ERROR_MESSAGE)
"""The generic `chat_error`, for a failure without a stable public reason."""


def planned_public_error(reason: object) -> PublicChatError:
    """The public error of a stable planned terminal reason; `chat_error` for any other.

    Examples:
        >>> planned_public_error("budget_exhausted").message
        'The request reached its execution limit.'
        >>> planned_public_error("the planner crashed").code
        'chat_error'
    """
    if isinstance(reason, str) and reason in PLANNED_REASONS:
        return PublicChatError(reason, PLANNED_PUBLIC_MESSAGES[reason])
    return GENERIC_PUBLIC_ERROR


def public_chat_error(exc: BaseException) -> PublicChatError:
    """Map an internal exception to the public error a client may see.

    Examples:
        >>> public_chat_error(TimeoutError("db")).code
        'deadline_exceeded'
        >>> public_chat_error(KeyError("secret")).message
        'Something went wrong. Please try again.'
    """
    reason = getattr(exc, "public_reason", None)
    if isinstance(reason, str) and reason in PLANNED_PUBLIC_MESSAGES:
        return PublicChatError(reason, PLANNED_PUBLIC_MESSAGES[reason])
    # A provider's finer reason is chatomon's own: the client gets the seed's code first.
    refined = reason if isinstance(exc, ProviderError) and isinstance(reason, str) else None
    if isinstance(exc, TimeoutError):
        code = "deadline_exceeded"
    elif isinstance(exc, ProviderError):
        code = "provider_failed"
    else:
        return GENERIC_PUBLIC_ERROR
    return PublicChatError(code, PLANNED_PUBLIC_MESSAGES[code], refined)
