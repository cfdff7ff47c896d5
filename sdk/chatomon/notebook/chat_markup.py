"""The HTML and text of a `ChatWidget`'s panels: the transcript, the status line, a confirmation.

Entries are the dicts of `ChatWidget.messages` (role "user", "assistant", "tool",
"confirmation", "error" or "notice"); everything they hold is escaped here. Tool calls
are `<details>` entries, closed, with their arguments and result. Chat text is prose (the
page's proportional font); arguments and results are JSON in the code font.

A pending confirmation's before → after preview is drawn once, in the confirmation panel,
by `chatomon.preview` (the renderer the staff console uses too); its transcript entry only
says that it waits. Mutation inputs and previews pass `chatomon.redaction` before they are
drawn: a ChatService's event is redacted already, an Atom's tool loop hands them over as
the model wrote them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from chatomon.notebook.chat_state import TOOL_WAITING
from chatomon.notebook.markup import (
    badge,
    details,
    escape,
    preformatted,
    prose,
    tone_of,
    value_text,
    view,
)
from chatomon.preview import preview_html, preview_text
from chatomon.redaction import DEFAULT_REDACTION

__all__ = [
    "confirmation_html",
    "confirmation_text",
    "expires_in",
    "status_html",
    "transcript_html",
    "transcript_text",
]

_LABELS = {"user": "You", "assistant": "Assistant"}


def _redacted(value: Any) -> Any:
    return DEFAULT_REDACTION.value(value)


def _tool_entry(entry: Mapping[str, Any]) -> str:
    status = str(entry.get("status") or "running")
    shown = badge(status, tone="notice" if status == TOOL_WAITING else None)
    summary = f"tool {badge(str(entry.get('name', '')), tone='neutral')} {shown}"
    arguments = value_text(_redacted(entry.get("args", {})))
    body = f"<div><b>arguments</b>{preformatted(arguments)}</div>"
    if "result" in entry:
        body += f"<div><b>result</b>{preformatted(value_text(_redacted(entry['result'])))}</div>"
    return details(summary, body)


def _confirmation_entry(entry: Mapping[str, Any]) -> str:
    status = str(entry.get("status", "pending"))
    summary = (
        f"confirmation {badge(str(entry.get('mutation', '')), tone='neutral')} {badge(status)}"
    )
    if status == "pending":
        # The preview is in the confirmation panel below, once.
        return f'<div>{summary} <span class="cm-muted">decide below</span></div>'
    body = preview_html(_redacted(entry.get("preview")), muted_class="cm-muted")
    return details(summary, body)


def _entry_html(entry: Mapping[str, Any]) -> str:
    role = str(entry.get("role", ""))
    if role == "tool":
        return _tool_entry(entry)
    if role == "confirmation":
        return _confirmation_entry(entry)
    if role == "error":
        code = str(entry.get("code", "error"))
        return (
            f"<div>{badge('error')} {badge(code, tone='neutral')} {escape(entry['message'])}</div>"
        )
    if role == "notice":
        return f'<div class="cm-muted">{escape(entry.get("text", ""))}</div>'
    label = _LABELS.get(role, role)
    flags = " " + badge("stopped") if entry.get("stopped") else ""
    action = entry.get("final_action")
    if action and action != "answered":
        flags += " " + badge(str(action))
    return f"<div><b>{escape(label)}</b>{flags}{prose(entry.get('text', ''))}</div>"


def transcript_html(entries: Sequence[Mapping[str, Any]], draft: str) -> str:
    """The conversation so far, then the reply being streamed (`draft`), if any."""
    parts = [_entry_html(entry) for entry in entries]
    if draft:
        parts.append(f"<div><b>Assistant</b> {badge('writing', tone='neutral')}")
        parts.append(f"{prose(draft)}</div>")
    if not parts:
        parts.append('<div class="cm-muted">No messages yet.</div>')
    return view("".join(parts))


def _entry_text(entry: Mapping[str, Any]) -> str:
    role = str(entry.get("role", ""))
    if role == "tool":
        return f"[tool {entry.get('name', '')}: {entry.get('status') or 'running'}]"
    if role == "confirmation":
        return f"[confirmation {entry.get('mutation', '')}: {entry.get('status', 'pending')}]"
    if role == "error":
        return f"[error {entry.get('code', 'error')}] {entry.get('message', '')}"
    if role == "notice":
        return f"({entry.get('text', '')})"
    flags = " (stopped)" if entry.get("stopped") else ""
    action = entry.get("final_action")
    if action and action != "answered":
        flags += f" ({action})"
    return f"{_LABELS.get(role, role)}{flags}: {entry.get('text', '')}"


def transcript_text(entries: Sequence[Mapping[str, Any]], draft: str) -> str:
    """The conversation as plain text, one entry per line (a message may span lines)."""
    lines = [_entry_text(entry) for entry in entries]
    if draft:
        lines.append(f"Assistant (writing): {draft}")
    return "\n".join(lines) or "No messages yet."


def status_html(status: str, error: str) -> str:
    """The status line: a badge for the state, and the last error's message."""
    message = f" {escape(error)}" if error and status == "error" else ""
    return view(f"<div>{badge(status.replace('_', ' '), tone=tone_of(status))}{message}</div>")


def expires_in(expires_at: object, now: datetime | None = None) -> str:
    """How long until the ISO 8601 `expires_at`: "expires in 29 s", "expired".

    Returns "" when `expires_at` is missing or unreadable.
    """
    if not isinstance(expires_at, str) or not expires_at:
        return ""
    try:
        when = datetime.fromisoformat(expires_at)
    except ValueError:
        return ""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    left = int((when - (now or datetime.now(UTC))).total_seconds())
    if left <= 0:
        return "expired"
    if left < 60:
        return f"expires in {left} s"
    minutes, seconds = divmod(left, 60)
    if minutes < 60:
        return f"expires in {minutes} min" + (f" {seconds} s" if seconds else "")
    hours, minutes = divmod(minutes, 60)
    return f"expires in {hours} h" + (f" {minutes} min" if minutes else "")


def _expiry(expires_at: object, now: datetime | None) -> str:
    """The relative expiry, and the clock time it means (a saved copy stays true)."""
    relative = expires_in(expires_at, now)
    if not relative.startswith("expires in"):
        return relative
    when = datetime.fromisoformat(str(expires_at))
    when = (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)
    return f"{relative} (at {when:%H:%M:%S} UTC)"


def _heading(pending: Mapping[str, Any], *, can_decide: bool, now: datetime | None) -> str:
    approver = str(pending.get("approver", "client"))
    waits = "" if can_decide else " (waits for a staff member)"
    expiry = _expiry(pending.get("expires_at"), now)
    facts = " · ".join(part for part in (f"approver: {approver}", expiry) if part)
    return (
        f"<div><b>Confirm {escape(pending.get('mutation', ''))}</b>{escape(waits)} "
        f'<span class="cm-muted">{escape(facts)}</span></div>'
    )


def confirmation_html(
    pending: Mapping[str, Any], *, can_decide: bool, now: datetime | None = None
) -> str:
    """What the Approve / Reject row shows about the pending confirmation.

    The mutation, who decides and a relative expiry; the before → after preview
    (`chatomon.preview`, redacted), and the mutation input folded below it.
    """
    if not pending:
        return ""
    preview = pending.get("preview")
    shown = (
        preview_html(_redacted(preview), muted_class="cm-muted")
        if preview is not None
        else '<div class="cm-muted">No preview.</div>'
    )
    mutation_input = preformatted(value_text(_redacted(pending.get("input", {}))))
    return view(
        _heading(pending, can_decide=can_decide, now=now)
        + shown
        + details("Mutation input", mutation_input)
    )


def confirmation_text(pending: Mapping[str, Any], now: datetime | None = None) -> str:
    """The pending confirmation as text: the mutation, its expiry and its preview."""
    if not pending:
        return ""
    expiry = _expiry(pending.get("expires_at"), now)
    heading = f"Confirm {pending.get('mutation', '')}" + (f" ({expiry})" if expiry else "")
    preview = pending.get("preview")
    if preview is None:
        return heading
    return heading + "\n" + preview_text(_redacted(preview))
