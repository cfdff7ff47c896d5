"""The audit trail of chat activity: sanitized events to a logger and to `AuditEvent` rows.

`AuditListener(settings)` is a ChatService activity listener (chatomon.chat.pipeline.activity).
With `audit.level` "messages" it records `message_received` and `assistant_message`; with
"all" also every tool call, mutation, confirmation, finished turn and error.

Each event is one mapping — `type`, `time` (ISO 8601), `actor` ("user:<pk>" or
"anonymous"), `conversation_id`, `turn_id`, `payload` — reduced by the one redaction rule
(chatomon.redaction, built from the settings by `chatomon.django.audit.rule`):

- a value whose key holds a configured term (`redact_fields`) as whole key segments is
  replaced by "[redacted]" (preview rows by their field name); secrets in text are masked;
  what the atom's orbitals hide in records (`PIIGuard`: personal data) is replaced;
- message texts (`message_received`, `assistant_message`) are kept as the atom's
  `capture_content` allows: none (None), their SHA-256, or the redacted text — the audit
  trail never holds more of the conversation than the TurnReport does;
- tool results longer than `max_result_size` serialized characters are cut;
- an exception becomes its type name; objects are reduced to JSON-ready values.

The configured logger is called with the event; the database row is written by a
background thread in batches, so writing never slows a turn, and a failing logger or
database is logged, never raised.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from chatomon._engine.capture import Capture
from chatomon.chat.pipeline.activity import Activity
from chatomon.data.actor import is_authenticated
from chatomon.django.audit.rule import redaction_of
from chatomon.django.audit.writer import AuditWriter
from chatomon.django.settings import AuditSettings, ChatSettings
from chatomon.redaction import REDACTED, Redaction, key_matches, key_segments, mask_secrets
from chatomon.schemas import CaptureContent

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

MESSAGE_KINDS = frozenset({"message_received", "assistant_message"})
"""What level "messages" records ("all" records every kind); their `text` is conversation
content, kept as `capture_content` allows."""


def sanitize(value: Any, terms: tuple[str, ...]) -> Any:
    """A JSON-ready copy of `value` under the redaction rule of key `terms`."""
    return Redaction(terms).value(value)


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


def audit_event(
    activity: Activity,
    settings: AuditSettings,
    *,
    redaction: Redaction | None = None,
    capture: CaptureContent = "full",
) -> dict[str, Any]:
    """The redacted event mapping of one activity.

    Args:
        activity: What happened.
        settings: The audit settings (`max_result_size`, `redact_fields`).
        redaction: The rule (default: `redact_fields` alone, no orbital filters).
        capture: How much of a message's text is kept ("none", "hash", "full").
    """
    rule = redaction or Redaction(settings.redact_fields)
    payload = rule.value(activity.payload)
    if activity.kind in MESSAGE_KINDS and isinstance(activity.payload.get("text"), str):
        payload["text"] = Capture(capture, rule).text(activity.payload["text"])
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
        settings: The chat settings: the audit part, the atom's `capture_content` and
            the orbitals whose record filters the redaction rule applies. Just the audit
            part: the key terms alone, and texts kept in full (a logger-only set-up).
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
        if isinstance(settings, ChatSettings):
            self.settings = settings.audit
            self.redaction = redaction_of(settings)
            self.capture: CaptureContent = settings.atom.capture_content
        else:
            self.settings = settings
            self.redaction = Redaction(settings.redact_fields)
            self.capture = "full"
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
            event = audit_event(
                activity, self.settings, redaction=self.redaction, capture=self.capture
            )
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
