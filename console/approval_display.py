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
from chatomon.preview import ParsedPreview, parse_preview, preview_html

from .owners import owner_labels

__all__ = ["ApprovalCard", "cards", "console_preview_html"]


def console_preview_html(preview: Any, *, with_rest: bool = True) -> SafeString:
    """A (redacted) preview as the console draws it: `chatomon.preview` with its classes.

    `with_rest=False` draws the before→after table alone, for a template that shows the
    rest of the preview itself.
    """
    return mark_safe(  # noqa: S308 - preview_html escapes each value it writes
        preview_html(
            preview,
            table_class="cc-table cc-preview",
            muted_class="cc-muted",
            extra_class="cc-json",
            with_rest=with_rest,
        )
    )


@dataclass(frozen=True)
class ApprovalCard:
    """Everything one queue or history entry shows."""

    confirmation: PendingConfirmation
    owner: str
    preview: ParsedPreview  # the redacted preview, read into rows
    expired: bool
    decidable: bool  # staff approval, pending, not expired, and the viewer may decide
    input: Any  # the mutation input, redacted

    @property
    def extra(self) -> Any:
        """What the preview holds besides field changes (a custom preview), or None."""
        return self.preview.rest

    @property
    def preview_table_html(self) -> SafeString:
        """The before→after table alone; the template shows `extra` itself."""
        return console_preview_html(self.preview, with_rest=False)


def cards(
    confirmations: Iterable[PendingConfirmation], *, now: datetime, may_decide: bool
) -> list[ApprovalCard]:
    """Cards of confirmations (with their conversation loaded), owners named in one query."""
    confirmations = list(confirmations)
    owners = owner_labels(c.conversation for c in confirmations)
    rule = current_redaction()
    result = []
    for confirmation in confirmations:
        expired = confirmation.status == "expired" or (
            confirmation.status == "pending" and confirmation.expires_at <= now
        )
        decidable = (
            may_decide
            and confirmation.approver == "staff"
            and confirmation.status == "pending"
            and not expired
        )
        result.append(
            ApprovalCard(
                confirmation,
                owner=owners.get(str(confirmation.conversation_id), ""),
                preview=parse_preview(rule.value(confirmation.preview)),
                expired=expired,
                decidable=decidable,
                input=rule.value(confirmation.input),
            )
        )
    return result
