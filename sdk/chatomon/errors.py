"""The exceptions chatomon raises, as one tree.

```
ChatomonError                 base of everything chatomon raises on purpose
├── ConfigurationError        an atom, orbital, provider or setting is built wrong
│   └── DataConfigurationError    managers/mutations declared wrong (chatomon.data.errors;
│                                 `.problems` lists every one found)
├── DataError                 a tool call the model can correct (chatomon.data.errors);
│   │                         `.code` is the tool error code, `.to_result()` its result
│   ├── QueryTimeoutError         a read exceeded query_timeout_seconds (query_timeout)
│   └── PermissionDeniedError     the actor may not do this (permission_denied)
├── ProviderDependencyError   a provider's optional SDK is not installed (also an ImportError;
│                             each vendor module has its own subclass naming its extra)
├── ProviderError             a provider call failed; `public_reason` is a stable code
│   ├── ProviderAuthError            credentials missing or refused    (provider_auth)
│   ├── ProviderRateLimitError       the vendor throttled the call     (provider_rate_limited)
│   ├── ProviderContextLengthError   the request is too long           (provider_context_length)
│   ├── ProviderTimeoutError         no first event / a stalled stream (provider_timeout)
│   ├── ProviderUnavailableError     server error or lost connection   (provider_unavailable)
│   ├── ProviderBadRequestError      the vendor rejected the request   (provider_bad_request)
│   └── ProviderProtocolError        the stream broke the contract     (provider_protocol)
├── ToolLoopError             the tool loop ended the turn on a limit or a forbidden batch;
│                             `code` is the chat error code (tool_retry_limit, mutation_limit,
│                             turn_limit, mutation_batch_unsupported,
│                             confirmation_required_transport)
├── TurnStateError            the connector API was called out of order
└── TurnError                 a turn ended without an answer; carries its TurnReport
    └── NucleusError          the nucleus raised; the original exception is the __cause__
```

Every error carries structured fields beside its message, so callers never parse text.
Messages name what is wrong and what is allowed; they never contain conversation text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from chatomon.schemas import TurnReport

__all__ = [
    "ChatomonError",
    "ConfigurationError",
    "NucleusError",
    "ProviderAuthError",
    "ProviderBadRequestError",
    "ProviderContextLengthError",
    "ProviderDependencyError",
    "ProviderError",
    "ProviderProtocolError",
    "ProviderRateLimitError",
    "ProviderTimeoutError",
    "ProviderUnavailableError",
    "ToolLoopError",
    "TurnError",
    "TurnStateError",
]


class ChatomonError(Exception):
    """Base class of every exception chatomon raises on purpose."""


class ConfigurationError(ChatomonError, ValueError):
    """Something is configured wrong: raised when the object is built, not mid-turn.

    Attributes:
        field: The configuration key or argument that is wrong.
        value: The offending value (a label, never conversation content).
        allowed: What would have been accepted, when that is a closed set.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        value: object = None,
        allowed: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.field = field
        self.value = value
        self.allowed = tuple(allowed)


class ProviderDependencyError(ChatomonError, ImportError):
    """A provider's optional vendor SDK is not installed.

    Attributes:
        package: The import name that failed (e.g. "openai").
        extra: The chatomon extra that installs it (``pip install "chatomon[openai]"``).
    """

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"the {package!r} package is needed for this provider; "
            f'install it with: pip install "chatomon[{extra}]"',
            name=package,
        )
        self.package = package
        self.extra = extra


class ProviderError(ChatomonError):
    """A call to an LLM provider failed.

    Messages and fields never contain credentials or conversation text.

    Attributes:
        provider: Label of the provider (e.g. "openai").
        public_reason: Stable code safe to show to clients and to branch on.
        status_code: The vendor's HTTP status, when there was one.
        retry_after_seconds: How long the vendor asked to wait, when it said.
    """

    public_reason: str = "provider_failed"

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status_code: int | None = None,
        retry_after_seconds: float | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code
        self.retry_after_seconds = retry_after_seconds


class ProviderAuthError(ProviderError):
    """The vendor refused the credentials, or none were configured."""

    public_reason = "provider_auth"


class ProviderRateLimitError(ProviderError):
    """The vendor throttled the call; `retry_after_seconds` says for how long, when known."""

    public_reason = "provider_rate_limited"


class ProviderContextLengthError(ProviderError):
    """The request (history, tools, prompt) exceeds the model's context window."""

    public_reason = "provider_context_length"


class ProviderTimeoutError(ProviderError, TimeoutError):
    """No first event within `timeout_seconds`, or a stall beyond `stream_timeout_seconds`."""

    public_reason = "provider_timeout"


class ProviderUnavailableError(ProviderError):
    """The vendor answered with a server error, or the connection was lost."""

    public_reason = "provider_unavailable"


class ProviderBadRequestError(ProviderError):
    """The vendor rejected the request as invalid (unknown model, bad parameters)."""

    public_reason = "provider_bad_request"


class ProviderProtocolError(ProviderError):
    """The completion broke the provider contract.

    A stream that ends without its done event, events after done, or a tool call whose
    arguments are not a JSON object.
    """

    public_reason = "provider_protocol"


class ToolLoopError(ChatomonError):
    """The tool loop stopped the turn: a limit was reached or a batch is not allowed.

    Attributes:
        code: The chat error code, stable for clients.
        public_message: The message a client may show.
    """

    MESSAGES: ClassVar[dict[str, str]] = {
        "tool_retry_limit": "The assistant could not get a valid answer from the data tools.",
        "mutation_limit": "This message reached its limit of data changes.",
        "turn_limit": "This message reached its limit of assistant steps.",
        "mutation_batch_unsupported": "Data changes must be requested one at a time.",
        "confirmation_required_transport": (
            "This change needs a confirmation: use the streaming or WebSocket chat."
        ),
    }

    def __init__(self, code: str) -> None:
        super().__init__(self.MESSAGES[code])
        self.code = code
        self.public_message = self.MESSAGES[code]


class TurnStateError(ChatomonError, RuntimeError):
    """A `Turn` method was called in a state that does not allow it.

    Attributes:
        state: The state the turn was in.
        operation: The method that was called.
    """

    def __init__(self, message: str, *, state: str, operation: str) -> None:
        super().__init__(message)
        self.state = state
        self.operation = operation


class TurnError(ChatomonError):
    """A turn ended without an answer for the user.

    Attributes:
        report: The TurnReport of the aborted turn (final_action "aborted"); it was
            already delivered to the atom's on_turn sinks.
    """

    def __init__(self, message: str, *, report: TurnReport) -> None:
        super().__init__(message)
        self.report = report


class NucleusError(TurnError):
    """The nucleus raised while writing a reply; the original exception is `__cause__`."""
