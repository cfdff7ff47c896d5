"""HTML and Markdown building blocks of chatomon's notebook display.

Every text that reaches the output goes through `escape` (HTML) or `md_escape`
(Markdown): report fields may hold user and model text, and a notebook renders what a
cell outputs. The style sheet is scoped to `.chatomon-view`, so it never restyles the
notebook around it, and uses no JavaScript.

Badges carry their meaning in their text ("block", "answered"); the colour only repeats
it, so the display reads the same without colour.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

__all__ = [
    "SCOPE",
    "STYLE",
    "Tone",
    "badge",
    "details",
    "duration_bar",
    "escape",
    "format_ms",
    "md_escape",
    "md_table",
    "preformatted",
    "table",
    "tone_of",
    "value_text",
    "view",
]

SCOPE = "chatomon-view"
"""The class of the element every rendering is wrapped in; the style sheet's scope."""

STYLE = f"""<style>
.{SCOPE} {{font-family: system-ui, sans-serif; font-size: 13px; line-height: 1.45}}
.{SCOPE} table {{border-collapse: collapse; margin: 4px 0}}
.{SCOPE} th, .{SCOPE} td {{border-bottom: 1px solid #8884; padding: 2px 8px;
  text-align: left; vertical-align: top}}
.{SCOPE} th {{font-weight: 600}}
.{SCOPE} details {{margin: 4px 0}}
.{SCOPE} summary {{cursor: pointer; font-weight: 600}}
.{SCOPE} pre {{white-space: pre-wrap; margin: 2px 0; font-size: 12px}}
.{SCOPE} .cm-muted {{opacity: 0.7}}
.{SCOPE} .cm-badge {{display: inline-block; padding: 0 6px; border-radius: 8px;
  border: 1px solid currentColor; font-size: 11px; font-weight: 600}}
.{SCOPE} .cm-ok {{color: #1a7f37}}
.{SCOPE} .cm-bad {{color: #cf222e}}
.{SCOPE} .cm-notice {{color: #9a6700}}
.{SCOPE} .cm-neutral {{color: #57606a}}
.{SCOPE} .cm-duration {{white-space: nowrap}}
.{SCOPE} .cm-bar {{display: inline-block; height: 8px; min-width: 1px;
  background: #6b8fd6; vertical-align: middle; margin-right: 4px}}
</style>"""
"""The scoped style sheet, included once per rendering."""

Tone = Literal["ok", "bad", "notice", "neutral"]
"""The colour family of a badge."""

_TONES: dict[str, Tone] = {
    **dict.fromkeys(("allow", "accept", "answered", "proceed", "executed", "ok"), "ok"),
    **dict.fromkeys(("approved", "completed", "to_one", "to_many"), "ok"),
    **dict.fromkeys(("block", "blocked", "aborted", "rejected", "error", "failed"), "bad"),
    **dict.fromkeys(("expired", "timed_out", "cancelled", "stopped", "escalated"), "bad"),
    **dict.fromkeys(("respond", "replace", "regenerate", "reply", "guided_refusal"), "notice"),
    **dict.fromkeys(("orbital_response", "fallback_refusal", "confirmation_required"), "notice"),
    **dict.fromkeys(("awaiting_confirmation", "redacted", "pending"), "notice"),
}

# Inline Markdown punctuation; "<" and ">" are HTML-escaped before this applies.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#!|~])")
_BAR_PIXELS = 120


def escape(value: object) -> str:
    """`value` as text safe inside HTML elements and attribute values."""
    return html.escape(str(value), quote=True)


def tone_of(label: str) -> Tone:
    """The colour family of a badge label (an action, decision or status)."""
    return _TONES.get(label, "neutral")


def badge(label: str, *, tone: Tone | None = None, title: str = "") -> str:
    """A badge reading `label`; its colour (from `tone_of` unless given) only repeats it."""
    shown = tone or tone_of(label)
    hint = f' title="{escape(title)}"' if title else ""
    return f'<span class="cm-badge cm-{shown}"{hint}>{escape(label)}</span>'


def format_ms(milliseconds: float) -> str:
    """A duration for people: "0.42 ms", "12.3 ms", "1.25 s"."""
    if milliseconds >= 1000:
        return f"{milliseconds / 1000:.2f} s"
    if milliseconds >= 10:
        return f"{milliseconds:.1f} ms"
    return f"{milliseconds:.2f} ms"


def duration_bar(milliseconds: float, longest: float) -> str:
    """A small bar as long as `milliseconds` is against `longest`, then the duration."""
    share = milliseconds / longest if longest > 0 else 0.0
    width = max(1, round(min(share, 1.0) * _BAR_PIXELS))
    label = escape(format_ms(milliseconds))
    return (
        f'<span class="cm-duration"><span class="cm-bar" style="width:{width}px" role="img" '
        f'aria-label="{label}"></span>{label}</span>'
    )


def details(summary: str, body: str, *, open: bool = False) -> str:
    """A collapsible section; `summary` and `body` are HTML already."""
    state = " open" if open else ""
    return f"<details{state}><summary>{summary}</summary>{body}</details>"


def preformatted(text: object) -> str:
    """`text` kept as written (line breaks, spaces), escaped."""
    return f"<pre>{escape(text)}</pre>"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """An HTML table; `headers` are plain text, the cells of `rows` are HTML already."""
    head = "".join(f"<th>{escape(name)}</th>" for name in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def view(body: str) -> str:
    """A whole rendering: the scoped style sheet and `body` inside the scope element."""
    return f'{STYLE}<div class="{SCOPE}">{body}</div>'


def value_text(value: Any) -> str:
    """A cell value as plain text: strings as they are, other values as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # a circular structure: its repr still tells what it is
        return repr(value)


def md_escape(value: object) -> str:
    """`value` as literal Markdown text: HTML escaped, Markdown punctuation backslashed.

    Line breaks become spaces, so a value cannot end a table row or start a block.
    """
    flat = " ".join(str(value).split())
    return _MD_SPECIAL.sub(r"\\\1", html.escape(flat, quote=False))


def md_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; every header and cell is escaped here."""
    lines = [
        "| " + " | ".join(md_escape(name) for name in headers) + " |",
        "|" + "---|" * len(headers),
    ]
    lines += ["| " + " | ".join(md_escape(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
