"""A confirmation as the Approvals screen shows it: before→after rows, links, expiry state.

The input and the preview pass the project's redaction rule (`chatomon.django.audit.rule`)
before anything reads them: the queue, the history and the live updates show a password
or token field as "[redacted]", as the audit trail does. The before→after table is drawn
by `chatomon.preview`, the one preview renderer the notebook's widget uses too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import PendingConfirmation
from chatomon.preview import ParsedPreview, PreviewRow, parse_preview, preview_html

from .owners import owner_labels

__all__ = ["ApprovalCard", "PreviewRow", "cards", "preview_rows"]

MISSING = object()


@dataclass(frozen=True)
class ApprovalCard:
    """Everything one queue or history entry shows."""

    confirmation: PendingConfirmation
    owner: str
    action: str  # "create", "update" or what the mutation's own preview says
    manager: str | None
    rows: tuple[PreviewRow, ...]
    extra: Any  # preview content that is not field changes (custom previews)
    expired: bool
    decidable: bool  # staff approval, pending, not expired, and the viewer may decide
    input: Any  # the mutation input, redacted
    target_id: Any  # the preview's object id, when it names one
    preview: ParsedPreview  # the redacted preview, read into rows

    @property
    def preview_html(self) -> SafeString:
        """The before→after table, then the rest of the preview (chatomon.preview)."""
        return self._preview(with_rest=True)

    @property
    def preview_table_html(self) -> SafeString:
        """The before→after table alone; the template shows `extra` itself."""
        return self._preview(with_rest=False)

    def _preview(self, *, with_rest: bool) -> SafeString:
        return mark_safe(  # noqa: S308 - preview_html escapes each value it writes
            preview_html(
                self.preview,
                table_class="cc-table cc-preview",
                muted_class="cc-muted",
                extra_class="cc-json",
                with_rest=with_rest,
            )
        )


def preview_rows(preview: Any) -> tuple[str, str | None, tuple[PreviewRow, ...], Any]:
    """(action, manager, rows, rest) of a mutation preview (see chatomon.preview)."""
    parsed = parse_preview(preview)
    return parsed.action, parsed.manager, parsed.rows, parsed.rest


def cards(
    confirmations: Iterable[PendingConfirmation], *, now: datetime, may_decide: bool
) -> list[ApprovalCard]:
    """Cards of confirmations (with their conversation loaded), owners named in one query."""
    confirmations = list(confirmations)
    owners = owner_labels(c.conversation for c in confirmations)
    rule = current_redaction()
    result = []
    for confirmation in confirmations:
        parsed = parse_preview(rule.value(confirmation.preview))
        expired = confirmation.status == "expired" or (
            confirmation.status == "pending" and confirmation.expires_at <= now
        )
        decidable = (
            may_decide
            and confirmation.approver == "staff"
            and confirmation.status == "pending"
            and not expired
        )
        owner = owners.get(str(confirmation.conversation_id), "")
        result.append(
            ApprovalCard(
                confirmation,
                owner,
                parsed.action,
                parsed.manager,
                parsed.rows,
                parsed.rest,
                expired,
                decidable,
                input=rule.value(confirmation.input),
                target_id=parsed.target_id,
                preview=parsed,
            )
        )
    return result
