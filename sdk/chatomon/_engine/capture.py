"""What a report may hold of the conversation: nothing, a hash, or the text.

`capture_content` applies to every text field of a report (user message, replies,
guidance, annotations, error messages). "hash" records the hex SHA-256 of the UTF-8 text,
enough to match a report against a stored message without keeping the message. "full"
records the text as the redaction rule leaves it (chatomon.redaction): secrets masked and
what the atom's orbitals hide in records (e.g. `PIIGuard`'s personal data) replaced, so a
message an orbital blocked for personal data is never kept verbatim.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from chatomon._engine.chain import Outcome
from chatomon.redaction import DEFAULT_REDACTION, Redaction
from chatomon.schemas import CaptureContent, OrbitalResult, Side

__all__ = ["Capture"]


class Capture:
    """Applies one capture level, and the redaction rule, to the texts going into a report.

    Args:
        level: "none", "hash" or "full".
        redaction: The rule "full" texts pass through (default: secrets masked).
    """

    __slots__ = ("level", "redaction")

    def __init__(self, level: CaptureContent, redaction: Redaction = DEFAULT_REDACTION) -> None:
        self.level = level
        self.redaction = redaction

    @property
    def full(self) -> bool:
        """Whether texts are kept verbatim."""
        return self.level == "full"

    def text(self, value: str | None) -> str | None:
        """The form of `value` this level records."""
        if value is None or self.level == "none":
            return None
        if self.level == "hash":
            return hashlib.sha256(value.encode("utf-8")).hexdigest()
        return self.redaction.text(value)

    def annotations(self, value: Any) -> str | None:
        """Annotations as JSON text (values JSON cannot hold are written as their repr)."""
        if value is None or self.level == "none":
            return None
        return self.text(json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False))

    def error_message(self, error: BaseException | None) -> str | None:
        """An exception's message, redacted: only with "full" (messages can quote content)."""
        if error is None or not self.full:
            return None
        return self.redaction.error(error)

    def orbital_result(self, outcome: Outcome, side: Side, attempt: int) -> OrbitalResult:
        """The audit record of one orbital execution."""
        verdict = outcome.verdict
        compiled = outcome.orbital
        fields: dict[str, Any] = {
            "name": compiled.name,
            "side": side,
            "kind": compiled.kind,
            "fingerprint": compiled.fingerprint,
            "action": verdict.action,
            "reason": verdict.reason,
            "has_guidance": verdict.guidance is not None,
            "escalate": verdict.escalate,
            "attempt": attempt,
            "duration_ms": outcome.duration_ms,
        }
        if outcome.error is not None:
            fields["error_type"] = type(outcome.error).__name__
            fields["error_message"] = self.error_message(outcome.error)
            fields["error_policy"] = compiled.on_error
        # Content fields stay at their None default unless captured: fewer fields to validate.
        if self.level != "none":
            fields["guidance"] = self.text(verdict.guidance)
            fields["reply"] = self.text(verdict.reply)
            fields["annotations"] = self.annotations(verdict.annotations)
        return OrbitalResult(**fields)
