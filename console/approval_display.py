"""A confirmation as the Approvals screen shows it: before→after rows, links, expiry state.

The input and the preview pass the project's redaction rule (`chatomon.django.audit.rule`)
before anything reads them: the queue, the history and the live updates show a password
or token field as "[redacted]", as the audit trail does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import PendingConfirmation

from .owners import owner_labels

__all__ = ["ApprovalCard", "PreviewRow", "cards", "preview_rows"]

MISSING = object()


@dataclass(frozen=True)
class PreviewRow:
    """One field of the preview: its value before and after the write."""

    field: str
    before: Any
    after: Any
    has_before: bool


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


def preview_rows(preview: Any) -> tuple[str, str | None, tuple[PreviewRow, ...], Any]:
    """(action, manager, rows, rest) of a mutation preview (see chatomon.data.mutation_runs)."""
    if not isinstance(preview, dict):
        return "change", None, (), preview
    action = str(preview.get("action", "change"))
    manager = preview.get("manager")
    if isinstance(preview.get("changes"), list):
        rows = tuple(
            PreviewRow(str(c.get("field")), c.get("before"), c.get("after"), has_before=True)
            for c in preview["changes"]
            if isinstance(c, dict)
        )
        rest = {k: v for k, v in preview.items() if k not in ("action", "manager", "changes")}
    elif isinstance(preview.get("values"), dict):
        rows = tuple(
            PreviewRow(str(k), None, v, has_before=False) for k, v in preview["values"].items()
        )
        rest = {k: v for k, v in preview.items() if k not in ("action", "manager", "values")}
    else:
        rows, rest = (), {k: v for k, v in preview.items() if k not in ("action", "manager")}
    return action, manager, rows, rest or None


def cards(
    confirmations: Iterable[PendingConfirmation], *, now: datetime, may_decide: bool
) -> list[ApprovalCard]:
    """Cards of confirmations (with their conversation loaded), owners named in one query."""
    confirmations = list(confirmations)
    owners = owner_labels(c.conversation for c in confirmations)
    rule = current_redaction()
    result = []
    for confirmation in confirmations:
        preview = rule.value(confirmation.preview)
        action, manager, rows, extra = preview_rows(preview)
        target_id = preview.get("id") if isinstance(preview, dict) else None
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
                action,
                manager,
                rows,
                extra,
                expired,
                decidable,
                input=rule.value(confirmation.input),
                target_id=target_id,
            )
        )
    return result
