"""The exceptions chatomon raises, as one tree.

```
ChatomonError                 base of everything chatomon raises on purpose
├── ConfigurationError        an atom, orbital, provider or setting is built wrong
│   ├── DataConfigurationError    managers/mutations declared wrong (chatomon.data.errors;
│   │                             `.problems` lists every one found)
│   └── ChatConfigurationError    settings.CHATOMON is wrong (chatomon.django.settings); `.key`,
│                                 `.value`, `.allowed`, `.suggestion` name the mistake
├── DataError                 a tool call the model can correct (chatomon.data.errors);
│   │                         `.code` is the tool error code, `.to_result()` its result
│   ├── QueryTimeoutError         a read exceeded query_timeout_seconds (query_timeout)
│   └── PermissionDeniedError     the actor may not do this (permission_denied)
├── OptionalDependencyError   an optional package of a feature is not installed (also an
│   │                         ImportError; `.extra` names the chatomon extra to install)
│   └── ProviderDependencyError   a provider's vendor SDK is missing (each vendor module
│                                 has its own subclass naming its extra)
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
├── TurnError                 a turn ended without an answer; carries its TurnReport
│   └── NucleusError          the nucleus raised; the original exception is the __cause__
└── StoreError                a conversation store refused an operation (chatomon.chat.store)
    ├── ConversationNotFoundError   no such conversation of this owner (also a LookupError)
    ├── TurnTransitionError         a turn's status may not move there (also a ValueError);
    │                               `.turn_id`, `.current`, `.requested`, `.allowed`
    └── StoreUnavailableError       the store's database could not be reached (retry later)
```

Every error carries structured fields beside its message, so callers never parse text.
Messages name what is wrong and what is allowed; they never contain conversation text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar

from chatomon._suggest import closest

if TYPE_CHECKING:
    from chatomon._validation import Problem
    from chatomon.schemas import TurnReport

__all__ = [
    "ChatConfigurationError",
    "ChatomonError",
    "ConfigurationError",
    "ConversationNotFoundError",
    "NucleusError",
    "OptionalDependencyError",
    "ProviderAuthError",
    "ProviderBadRequestError",
    "ProviderContextLengthError",
    "ProviderDependencyError",
    "ProviderError",
    "ProviderProtocolError",
    "ProviderRateLimitError",
    "ProviderTimeoutError",
    "ProviderUnavailableError",
    "StoreError",
    "StoreUnavailableError",
    "ToolLoopError",
    "TurnError",
    "TurnStateError",
    "TurnTransitionError",
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

    @staticmethod
    def from_problem(problem: Problem, label: str) -> ConfigurationError:
        """The error of the first problem pydantic found in a configuration mapping.

        The one conversion of `chatomon._validation.problem_of`'s `Problem` for the
        configurations outside CHATOMON (a provider's, CHATOMON_CONSOLE): the message
        names the key as `label` (with its "did you mean", if any), and the error keeps
        the key, the value and what is allowed. CHATOMON's own errors keep the suggestion
        as an attribute too (`ChatConfigurationError.from_problem`).

        Args:
            problem: What `problem_of` read from the `ValidationError`.
            label: How the message names the key (e.g. "OpenAIProvider setting 'modle'").
        """
        return ConfigurationError(
            problem.message(label), field=problem.key, value=problem.value, allowed=problem.allowed
        )


def setting_label(key: str) -> str:
    """How messages spell a setting: "rate_limit.requests" -> CHATOMON['rate_limit']['requests']."""
    label = "CHATOMON"
    for part in key.split("."):
        name, bracket, index = part.partition("[")
        label += f"[{name!r}]" + (bracket + index if bracket else "")
    return label


class ChatConfigurationError(ConfigurationError):
    """`settings.CHATOMON` holds a value chatomon cannot run with.

    The classmethods build the error of each kind of mistake; messages name the setting,
    the offending value and what would be accepted.

    Attributes:
        key: The setting, as a dotted path below CHATOMON (e.g. "rate_limit.requests").
        value: The offending value (names and labels, never credentials or content).
        allowed: What would have been accepted: the closed set, or a description.
        suggestion: The closest known name for a misspelled key or mutation, or None.
    """

    PLANNED_MESSAGE_PREFIX: ClassVar[str] = "planned settings are invalid: "
    """How the message of every error in the planned section begins."""

    def __init__(
        self,
        message: str,
        *,
        key: str | None = None,
        value: object = None,
        allowed: Sequence[str] = (),
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message, field=key, value=value, allowed=allowed)
        self.suggestion = suggestion

    @property
    def key(self) -> str | None:
        """The setting's dotted path: the `field` of a ConfigurationError, named for settings."""
        return self.field

    @staticmethod
    def from_problem(
        problem: Problem, label: str, *, key: str | None = None
    ) -> ChatConfigurationError:
        """The error of the first problem pydantic found in a settings mapping.

        The conversion of `chatomon._validation.problem_of`'s `Problem` for every reader of
        CHATOMON (its sections, its planned section, a planned catalog): the message names
        the key as `label`, and the error keeps the value, what is allowed and the "did
        you mean".

        Args:
            problem: What `problem_of` read from the `ValidationError`.
            label: How the message names the key (e.g. "CHATOMON['rate_limit']['requests']").
            key: The error's `key`, when it is not the problem's own path.
        """
        return ChatConfigurationError(
            problem.message(label),
            key=problem.key if key is None else key,
            value=problem.value,
            allowed=problem.allowed,
            suggestion=problem.suggestion,
        )

    @classmethod
    def invalid_settings_mapping(cls, value: object = None) -> ChatConfigurationError:
        """settings.CHATOMON is not a mapping (a nested one is `invalid_value`)."""
        return cls(
            f"settings.CHATOMON must be a mapping (dict), got {type(value).__name__}",
            value=type(value).__name__,
            allowed=("a mapping",),
        )

    @classmethod
    def invalid_permission(cls, value: object, reason: str = "") -> ChatConfigurationError:
        """The permission setting is neither None, a callable nor a dotted path to one."""
        detail = f": {reason}" if reason else ""
        return cls(
            f"permission must be None, a callable or a dotted path to a callable "
            f"receiving (user, scope), got {value!r}{detail}",
            key="permission",
            value=value,
            allowed=("None", "a callable", "a dotted path to a callable"),
        )

    @classmethod
    def missing_graphql_schema(cls) -> ChatConfigurationError:
        """Chat is enabled but no manager with chat_exposed = True is registered.

        The seed's name is kept; in chatomon the schema is the manager registry.
        """
        return cls(
            "chat is enabled but no manager with chat_exposed = True is registered; "
            "register one in an app's chat.py (chatomon.data.registry) or set "
            "CHATOMON['registry']",
            key="registry",
        )

    @classmethod
    def unknown_allowed_mutations(
        cls, names: Sequence[str], known: Iterable[str] = ()
    ) -> ChatConfigurationError:
        """allowed_mutations names mutations that are not registered."""
        registered_names = sorted(known)
        hints = []
        suggestion = None
        for name in names:
            close = closest(name, registered_names)
            if close is not None:
                suggestion = suggestion or close
                hints.append(f"{name!r} (did you mean {close!r}?)")
            else:
                hints.append(repr(name))
        registered = ", ".join(registered_names) if registered_names else "none"
        return cls(
            f"allowed_mutations names mutations that are not registered: {', '.join(hints)}; "
            f"registered mutations: {registered}",
            key="allowed_mutations",
            value=list(names),
            allowed=registered_names,
            suggestion=suggestion,
        )

    @classmethod
    def invalid_confirm_mutations(
        cls,
        names: Sequence[str],
        allowed: Iterable[str] = (),
        *,
        key: str = "confirm_mutations",
    ) -> ChatConfigurationError:
        """confirm_mutations (or staff_approval_mutations) names mutations not allowed."""
        permitted = sorted(allowed)
        return cls(
            f"{key} names mutations missing from allowed_mutations: {', '.join(names)}; "
            f"every confirmed mutation must also be allowed "
            f"(allowed_mutations: {', '.join(permitted) if permitted else 'empty'})",
            key=key,
            value=list(names),
            allowed=permitted,
        )

    @classmethod
    def invalid_planned_settings(cls, detail: str) -> ChatConfigurationError:
        """The planned mapping is malformed; `detail` says how."""
        return cls(cls.PLANNED_MESSAGE_PREFIX + detail, key="planned")

    @classmethod
    def invalid_turn_limit(
        cls, name: str, expected: str, value: object = None
    ) -> ChatConfigurationError:
        """A bounded-turn setting (e.g. max_total_rounds_per_message) is out of range."""
        return cls(
            f"{name} must be {expected}, got {value!r}",
            key=name,
            value=value,
            allowed=(expected,),
        )

    @classmethod
    def invalid_value(cls, key: str, value: object, expected: str) -> ChatConfigurationError:
        """The setting `key` holds `value`, which is not `expected`."""
        return cls(
            f"{setting_label(key)} must be {expected}, got {value!r}",
            key=key,
            value=value,
            allowed=(expected,),
        )


class OptionalDependencyError(ChatomonError, ImportError):
    """A feature needs an optional package that is not installed.

    Attributes:
        package: The import name that failed (e.g. "pandas").
        extra: The chatomon extra that installs it (``pip install "chatomon[pandas]"``).
        feature: What needs it, as the message names it (e.g. "report.to_dataframe()").
    """

    def __init__(self, package: str, extra: str, *, feature: str) -> None:
        super().__init__(
            f"{feature} needs the {package!r} package; "
            f'install it with: pip install "chatomon[{extra}]"',
            name=package,
        )
        self.package = package
        self.extra = extra
        self.feature = feature


class ProviderDependencyError(OptionalDependencyError):
    """A provider's optional vendor SDK is not installed.

    Attributes:
        package: The import name that failed (e.g. "openai").
        extra: The chatomon extra that installs it (``pip install "chatomon[openai]"``).
    """

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(package, extra, feature="this provider")


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
        retry_after_seconds: For "rate_limited", seconds until the budget frees.
    """

    MESSAGES: ClassVar[dict[str, str]] = {
        "rate_limited": "Chat rate limit exceeded. Try again later.",
        "tool_retry_limit": "The assistant could not get a valid answer from the data tools.",
        "mutation_limit": "This message reached its limit of data changes.",
        "turn_limit": "This message reached its limit of assistant steps.",
        "mutation_batch_unsupported": "Data changes must be requested one at a time.",
        "confirmation_required_transport": (
            "This change needs a confirmation: use the streaming or WebSocket chat."
        ),
    }

    def __init__(self, code: str, *, retry_after_seconds: int | None = None) -> None:
        super().__init__(self.MESSAGES[code])
        self.code = code
        self.public_message = self.MESSAGES[code]
        self.retry_after_seconds = retry_after_seconds


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


class StoreError(ChatomonError):
    """A conversation store refused an operation."""


class ConversationNotFoundError(StoreError, LookupError):
    """No conversation with this id belongs to this owner.

    Raised alike for unknown ids and for another owner's conversation, so that an actor
    learns nothing about conversations that are not theirs.
    """


class StoreUnavailableError(StoreError):
    """The store's database could not be reached: refused, cut, or out of connections.

    The operation may or may not have been stored (a commit whose answer was lost); the
    same operation may succeed later. Raised by
    `chatomon.django.persistence.store.DjangoStore` for Django's connection-level errors
    (`OperationalError`, `InterfaceError`; the original is the `__cause__`).
    """


class TurnTransitionError(StoreError, ValueError):
    """A turn was asked to move to a status its current status does not allow.

    Attributes:
        turn_id: The turn.
        current: Its status.
        requested: The status it was asked to move to.
        allowed: The statuses it may move to from `current` (empty: it is finished).
    """

    def __init__(
        self, turn_id: str, current: str, requested: str, allowed: Iterable[str] = ()
    ) -> None:
        self.allowed = tuple(sorted(allowed))
        listed = ", ".join(self.allowed) or "none (finished)"
        super().__init__(
            f"turn {turn_id!r} cannot go from {current!r} to {requested!r} "
            f"(allowed from {current!r}: {listed})"
        )
        self.turn_id, self.current, self.requested = turn_id, current, requested
