"""One redaction rule for everything that shows or stores a mutation input or tool payload.

The audit trail (its rows and its logger), the console (approvals queue and history, turn
pages, exports, its own chat), the `confirm_mutation` event every surface sends (HTTP,
SSE, WebSocket, the widget, the notebook) and the `error_message` of a TurnReport all go
through a `Redaction`:

- a value whose key holds a configured term as whole key segments is replaced by
  "[redacted]": `api_key`, `apiKey` and `x-api-key` all match "key", while `input_tokens`
  does not match "token" (Django: `CHATOMON["audit"]["redact_fields"]`);
- a mutation preview's field rows (`{"field": "password", "before": ..., "after": ...}`)
  are judged by their field name, as a mapping is by its key;
- text that looks like a secret is masked wherever it appears: bearer tokens, `sk-...`
  keys, the password of a URL (`scheme://user:pass@host`), `password=` style parameters;
- text filters given by orbitals (`RecordRedactor`, e.g. `PIIGuard`) hide what those
  orbitals look for, so a message an orbital blocked for personal data is never kept
  verbatim in a record;
- an exception becomes its type name; other objects are reduced to JSON-ready values.

The end user's own `confirm_mutation` preview is redacted too: they typed the value, and
the preview shows which fields change, not the secret again (the event also travels
through the channel layer and is kept by clients). The stored confirmation keeps the
real input, which the mutation needs when it is approved.

Examples:
    >>> rule = Redaction()
    >>> rule.value({"user": "ada", "password": "hunter2", "note": "Bearer abcdefgh1234"})
    {'user': 'ada', 'password': '[redacted]', 'note': 'Bearer [redacted]'}
    >>> rule.value({"changes": [{"field": "api_token", "before": "a", "after": "b"}]})
    {'changes': [{'field': 'api_token', 'before': '[redacted]', 'after': '[redacted]'}]}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from datetime import date, datetime
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_REDACTION",
    "REDACTED",
    "SENSITIVE_KEYS",
    "RecordRedactor",
    "Redaction",
    "key_matches",
    "key_segments",
    "mask_secrets",
    "record_filters",
]

REDACTED = "[redacted]"
"""What stands in place of a redacted value."""

SENSITIVE_KEYS: tuple[str, ...] = ("password", "secret", "token", "key", "credential")
"""The key terms redacted by default (the documented default of `audit.redact_fields`)."""

_SEGMENT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9\-._~+/]{8,}=*"), rf"\1 {REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), REDACTED),
    (re.compile(r"\b(?:ghp|gho|ghs|github_pat|xox[abprs])[_-][A-Za-z0-9_\-]{10,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@]*:)[^\s/@]+@"), rf"\1{REDACTED}@"),
    (
        re.compile(
            r"(?i)\b((?:api[_-]?key|access[_-]?token|token|password|passwd|secret)=)[^&\s\"']+"
        ),
        rf"\1{REDACTED}",
    ),
)

_ANY_SECRET = re.compile(
    "|".join(pattern.pattern.removeprefix("(?i)") for pattern, _ in _SECRET_PATTERNS),
    re.IGNORECASE,
)
"""One search that finds no secret in most texts, so that they skip the substitutions."""

_PREVIEW_ROW_VALUES = ("before", "after")


@lru_cache(maxsize=4096)  # tool results repeat the same few keys row after row
def key_segments(key: str) -> tuple[str, ...]:
    """The lower-case words of a key: "x-api-key", "apiKey", "API_KEY" -> ("api", "key")."""
    return tuple(part.lower() for part in _SEGMENT.findall(key))


def key_matches(key: str, terms: Iterable[str]) -> bool:
    """Whether `key` holds one of `terms` as whole segments ("api_key" matches "key").

    A term of several words ("api_key") matches those words in a row.
    """
    segments = key_segments(key)
    for term in terms:
        words = key_segments(term)
        width = len(words)
        if width and any(
            segments[start : start + width] == words for start in range(len(segments) - width + 1)
        ):
            return True
    return False


@lru_cache(maxsize=4096)  # one decision per key and rule, however many rows repeat it
def _sensitive(key: str, terms: tuple[str, ...]) -> bool:
    return key_matches(key, terms)


def mask_secrets(text: str) -> str:
    """`text` with bearer tokens, API keys and URL passwords replaced by "[redacted]"."""
    if _ANY_SECRET.search(text) is None:
        return text
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


@runtime_checkable
class RecordRedactor(Protocol):
    """An orbital that says how records hide what it looks for (e.g. `PIIGuard`)."""

    def redact_record(self, text: str) -> str:
        """`text` as a record may keep it."""
        ...


def record_filters(orbitals: Iterable[Any]) -> tuple[Callable[[str], str], ...]:
    """The `redact_record` of each orbital that has one (parallel groups looked into).

    Accepts orbitals, `ParallelGroup`s (their `members`) and compiled chain steps (their
    `orbital`), so an atom's configuration or its compiled chains both serve.
    """
    found: list[Callable[[str], str]] = []
    for item in orbitals:
        if isinstance(item, tuple):
            found += record_filters(item)
            continue
        members = getattr(item, "members", None)
        if isinstance(members, tuple):
            found += record_filters(members)
            continue
        orbital = getattr(item, "orbital", item)
        if isinstance(orbital, RecordRedactor):
            found.append(orbital.redact_record)
    return tuple(found)


@dataclass(frozen=True)
class Redaction:
    """The redaction rule: sensitive key terms, secret masking and orbitals' text filters.

    Attributes:
        keys: Key terms whose values are replaced by "[redacted]" (whole key segments).
        text_filters: Applied to every text after secret masking (see `record_filters`).
    """

    keys: tuple[str, ...] = SENSITIVE_KEYS
    text_filters: tuple[Callable[[str], str], ...] = field(default=(), compare=False)

    def sensitive(self, key: str) -> bool:
        """Whether the value of `key` is hidden."""
        return _sensitive(key, self.keys)

    def with_filters(self, filters: Iterable[Callable[[str], str]]) -> Redaction:
        """This rule with more text filters."""
        return Redaction(self.keys, (*self.text_filters, *filters))

    def text(self, text: str) -> str:
        """`text` with secrets masked and the text filters applied."""
        text = mask_secrets(text)
        for redact in self.text_filters:
            text = redact(text)
        return text

    def error(self, error: BaseException) -> str:
        """An exception's message, redacted (for reports captured in full)."""
        return self.text(str(error))

    def value(self, value: Any) -> Any:
        """A JSON-ready copy of `value`: sensitive keys, secrets and filtered texts hidden."""
        if isinstance(value, str):
            return self.text(value)
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, BaseException):
            return type(value).__name__  # never the message: it may quote content or secrets
        if isinstance(value, Mapping):
            return self._mapping(value)
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(item) for item in value]
        return self.value(_plain(value))

    def _mapping(self, value: Mapping[Any, Any]) -> dict[str, Any]:
        # A preview row names its field in "field": its before/after are that field's values.
        row_field = value.get("field")
        hidden_row = isinstance(row_field, str) and self.sensitive(row_field)
        result: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            if self.sensitive(name) or (hidden_row and name in _PREVIEW_ROW_VALUES):
                result[name] = REDACTED
            else:
                result[name] = self.value(item)
        return result


DEFAULT_REDACTION = Redaction()
"""The rule with the default key terms and no text filters."""


def _plain(value: Any) -> Any:
    """A JSON-ready form of an object: pydantic models, dataclasses, dates, the rest as str."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)
