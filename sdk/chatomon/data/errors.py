"""The errors of the data layer: declarations built wrong, and requests the model can correct.

```
ChatomonError
├── ConfigurationError
│   └── DataConfigurationError   a manager, relation, filter or mutation is declared wrong
└── DataError                    a tool request that cannot run; `code` is the tool error code
    ├── QueryTimeoutError        the database exceeded query_timeout_seconds  (query_timeout)
    └── PermissionDeniedError    the actor may not do this                    (permission_denied)
```

`DataConfigurationError` is for developers: it is raised by `ManagerRegistry.validate()` and
names every declaration at fault. `DataError` is for the model: the tools turn it into an
error result (`{"status": "error", "code": ..., "message": ..., "allowed": [...]}`), so its
message never names a manager that is not chat-exposed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatomon._suggest import did_you_mean
from chatomon.errors import ChatomonError, ConfigurationError

__all__ = [
    "DataConfigurationError",
    "DataError",
    "PermissionDeniedError",
    "QueryTimeoutError",
    "did_you_mean",
]


class DataConfigurationError(ConfigurationError):
    """Managers or mutations are declared wrong; the message lists every problem found.

    Attributes:
        problems: One precise line per problem (which manager, which name, what exists).
        manager: The manager (or mutation) of the first problem.
    """

    def __init__(
        self,
        problems: Sequence[str],
        *,
        manager: str | None = None,
        field: str | None = None,
        allowed: Sequence[str] = (),
    ) -> None:
        lines = list(problems)
        message = lines[0] if len(lines) == 1 else "\n  ".join([f"{len(lines)} problems:", *lines])
        super().__init__(message, field=field, value=manager, allowed=allowed)
        self.problems = tuple(lines)
        self.manager = manager


class DataError(ChatomonError):
    """A tool request that cannot run as asked; the tools return it as an error result.

    Attributes:
        code: The stable tool error code (unknown_field, invalid_value, ...).
        allowed: What would have been accepted, when that is a closed set.
        details: Extra JSON-ready keys for the error result (e.g. per-field input errors).
    """

    code: str = "invalid_value"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        allowed: Iterable[str] = (),
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.allowed = tuple(allowed)
        self.details: Mapping[str, Any] = dict(details or {})

    def to_result(self) -> dict[str, Any]:
        """The JSON-ready error result the model reads."""
        result: dict[str, Any] = {"status": "error", "code": self.code, "message": str(self)}
        if self.allowed:
            result["allowed"] = list(self.allowed)
        result.update(self.details)
        return result


class QueryTimeoutError(DataError, TimeoutError):
    """The database did not answer within query_timeout_seconds; the query was cancelled."""

    code = "query_timeout"


class PermissionDeniedError(DataError):
    """The actor may not read or change this; raise it from a mutation or a scope."""

    code = "permission_denied"
