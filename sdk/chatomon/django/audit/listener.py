"""The audit trail of chat activity: sanitized events to a logger and to `AuditEvent` rows.

`AuditListener(settings)` is a ChatService activity listener (chatomon.chat.pipeline.activity).
With `audit.level` "messages" it records `message_received` and `assistant_message`; with
"all" also every tool call, mutation, confirmation, finished turn and error.

Each event is one mapping — `type`, `time` (ISO 8601), `actor` ("user:<pk>" or
"anonymous"), `conversation_id`, `turn_id`, `payload` — sanitized first:

- a value whose key contains a configured term (`redact_fields`) as whole key segments is
  replaced by "[redacted]": `api_key`, `apiKey` and `x-api-key` all match "key", while
  `input_tokens` does not match "token";
- text that looks like a secret is masked wherever it appears: bearer tokens, `sk-...`
  keys, the password of a URL (`scheme://user:pass@host`), `password=` style parameters;
- tool results longer than `max_result_size` serialized characters are cut;
- an exception becomes its type name; objects are reduced to JSON-ready values.

The configured logger is called with the event; the database row is written by a
background thread in batches, so writing never slows a turn, and a failing logger or
database is logged, never raised.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from typing import Any

from chatomon.chat.pipeline.activity import Activity
from chatomon.data.actor import is_authenticated
from chatomon.django.audit.writer import AuditWriter
from chatomon.django.settings import AuditSettings, ChatSettings

__all__ = [
    "MESSAGE_KINDS",
    "REDACTED",
    "AuditListener",
    "audit_event",
    "key_matches",
    "key_segments",
    "mask_secrets",
    "sanitize",
]

logger = logging.getLogger(__name__)

REDACTED = "[redacted]"

MESSAGE_KINDS = frozenset({"message_received", "assistant_message"})
"""What level "messages" records; "all" records every activity kind."""

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


def key_segments(key: str) -> tuple[str, ...]:
    """The lower-case words of a key: "x-api-key", "apiKey", "API_KEY" -> ("api", "key")."""
    return tuple(part.lower() for part in _SEGMENT.findall(key))


def key_matches(key: str, terms: tuple[str, ...]) -> bool:
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


def mask_secrets(text: str) -> str:
    """`text` with bearer tokens, API keys and URL passwords replaced by "[redacted]"."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def sanitize(value: Any, terms: tuple[str, ...]) -> Any:
    """A JSON-ready copy of `value`, redacted by key `terms` and with secrets masked."""
    if isinstance(value, str):
        return mask_secrets(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, BaseException):
        return type(value).__name__  # never the message: it may quote content or secrets
    if isinstance(value, Mapping):
        return {
            str(key): REDACTED if key_matches(str(key), terms) else sanitize(item, terms)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [sanitize(item, terms) for item in value]
    return sanitize(_plain(value), terms)


def _plain(value: Any) -> Any:
    """A JSON-ready form of an object: pydantic models, dataclasses, dates, the rest as str."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _truncated(result: Any, limit: int) -> Any:
    serialized = json.dumps(result, ensure_ascii=False, default=str)
    if len(serialized) <= limit:
        return result
    return {"truncated": True, "size": len(serialized), "preview": serialized[:limit]}


def actor_label(actor: Any) -> str:
    """How the audit trail names an actor: "user:<pk>", or "anonymous"."""
    if is_authenticated(actor) and getattr(actor, "id", None) is not None:
        return f"user:{actor.id}"
    return "anonymous"


def audit_event(activity: Activity, settings: AuditSettings) -> dict[str, Any]:
    """The sanitized event mapping of one activity."""
    payload = sanitize(activity.payload, settings.redact_fields)
    if "result" in payload:  # a tool call's or mutation's result: cut at max_result_size
        payload["result"] = _truncated(payload["result"], settings.max_result_size)
    return {
        "type": activity.kind,
        "time": datetime.now(UTC).isoformat(),
        "actor": actor_label(activity.actor),
        "conversation_id": str(activity.conversation_id or ""),
        "turn_id": str(activity.turn_id or ""),
        "payload": payload,
    }


class AuditListener:
    """Records chat activity per the audit settings: to the logger and to AuditEvent rows.

    Args:
        settings: The chat settings (or just their audit part).
        store_events: Whether to write AuditEvent rows (off for logger-only setups).
        writer: The database writer (default: a background AuditWriter).
    """

    def __init__(
        self,
        settings: ChatSettings | AuditSettings,
        *,
        store_events: bool = True,
        writer: AuditWriter | None = None,
    ) -> None:
        self.settings = settings.audit if isinstance(settings, ChatSettings) else settings
        self.writer = writer or (AuditWriter() if store_events else None)

    def records(self, kind: str) -> bool:
        """Whether the settings record activities of `kind`."""
        if not self.settings.active:
            return False
        return self.settings.level == "all" or kind in MESSAGE_KINDS

    def __call__(self, activity: Activity) -> None:
        """Record `activity` (sync and quick: the row is written in the background)."""
        if not self.records(activity.kind):
            return
        try:
            event = audit_event(activity, self.settings)
        except Exception as error:  # noqa: BLE001 - auditing never breaks a turn
            logger.error("audit event of %s not built: %s", activity.kind, type(error).__name__)
            return
        self._log(event)
        if self.writer is not None:
            self.writer.submit(event)

    def _log(self, event: Mapping[str, Any]) -> None:
        sink: Callable[[Mapping[str, Any]], Any] | None = self.settings.logger
        if sink is None:
            return
        try:
            sink(event)
        except Exception as error:  # noqa: BLE001 - a failing logger never breaks a turn
            logger.error("audit logger failed on %s: %s", event["type"], type(error).__name__)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every submitted event is written; False when `timeout` ran out."""
        return True if self.writer is None else self.writer.flush(timeout)

    def close(self) -> None:
        """Write what is pending and stop the background writer."""
        if self.writer is not None:
            self.writer.close()
