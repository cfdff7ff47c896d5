"""The HTML of a `ChatWidget`'s panels: the transcript, the status line, a confirmation.

Entries are the dicts of `ChatWidget.messages` (role "user", "assistant", "tool",
"confirmation", "error" or "notice"); everything they hold is escaped here. Tool calls
are `<details>` entries, closed, with their arguments and result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chatomon.notebook.markup import badge, details, escape, preformatted, value_text, view

__all__ = ["confirmation_html", "status_html", "transcript_html"]

_LABELS = {"user": "You", "assistant": "Assistant"}


def _tool_entry(entry: Mapping[str, Any]) -> str:
    status = str(entry.get("status") or "running")
    summary = f"tool {badge(str(entry.get('name', '')), tone='neutral')} {badge(status)}"
    body = f"<div><b>arguments</b>{preformatted(value_text(entry.get('args', {})))}</div>"
    if "result" in entry:
        body += f"<div><b>result</b>{preformatted(value_text(entry['result']))}</div>"
    return details(summary, body)


def _confirmation_entry(entry: Mapping[str, Any]) -> str:
    status = str(entry.get("status", "pending"))
    summary = (
        f"confirmation {badge(str(entry.get('mutation', '')), tone='neutral')} {badge(status)}"
    )
    body = f"<div><b>input</b>{preformatted(value_text(entry.get('input', {})))}</div>"
    if entry.get("preview") is not None:
        body += f"<div><b>preview</b>{preformatted(value_text(entry['preview']))}</div>"
    return details(summary, body, open=status == "pending")


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
    return f"<div><b>{escape(label)}</b>{flags}{preformatted(entry.get('text', ''))}</div>"


def transcript_html(entries: Sequence[Mapping[str, Any]], draft: str) -> str:
    """The conversation so far, then the reply being streamed (`draft`), if any."""
    parts = [_entry_html(entry) for entry in entries]
    if draft:
        parts.append(f"<div><b>Assistant</b> {badge('writing', tone='neutral')}")
        parts.append(f"{preformatted(draft)}</div>")
    if not parts:
        parts.append('<div class="cm-muted">No messages yet.</div>')
    return view("".join(parts))


def status_html(status: str, error: str) -> str:
    """The status line: a badge for the state, and the last error's message."""
    message = f" {escape(error)}" if error and status == "error" else ""
    return view(f"<div>{badge(status)}{message}</div>")


def confirmation_html(pending: Mapping[str, Any], *, can_decide: bool) -> str:
    """What the Approve / Reject row shows about the pending confirmation."""
    if not pending:
        return ""
    approver = str(pending.get("approver", "client"))
    waits = "" if can_decide else " (waits for a staff member)"
    text = (
        f"<div><b>Confirm {escape(pending.get('mutation', ''))}</b>{escape(waits)} "
        f'<span class="cm-muted">approver: {escape(approver)}'
        f"{', expires ' + escape(pending['expires_at']) if pending.get('expires_at') else ''}"
        "</span></div>"
    )
    shown = pending.get("preview") if pending.get("preview") is not None else pending.get("input")
    return view(text + preformatted(value_text(shown)))
