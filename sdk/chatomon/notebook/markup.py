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
import re
from collections.abc import Iterable, Sequence
from typing import Literal

from chatomon.preview import value_text

__all__ = [
    "BADGE_COLOURS",
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
    "plural",
    "preformatted",
    "prose",
    "table",
    "tone_of",
    "value_text",
    "view",
]

SCOPE = "chatomon-view"
"""The class of the element every rendering is wrapped in; the style sheet's scope."""

_S = f".{SCOPE}.cm-scoped"
# Two classes on the wrapper, and every rule starts with both: (0,2,x) beats the rendered-
# output rules of JupyterLab (`.jp-RenderedHTMLCommon td`), classic Notebook
# (`.rendered_html td`), VS Code and nbconvert's export, which right-align table cells,
# stripe rows and give <pre> a background of its own. The scope keeps the rules off the
# notebook around the rendering.

BADGE_COLOURS: dict[str, dict[str, tuple[str, str]]] = {
    "light": {
        "ok": ("#116329", "#dafbe1"),
        "bad": ("#a40e26", "#ffebe9"),
        "notice": ("#7d4e00", "#fff8c5"),
        "neutral": ("#424a53", "#eaeef2"),
    },
    "dark": {
        "ok": ("#7ee787", "#0f2d1a"),
        "bad": ("#ffa198", "#3c1618"),
        "notice": ("#f2cc60", "#342a0e"),
        "neutral": ("#d0d7de", "#2d333b"),
    },
}
"""Each badge tone's (text, background) colours per theme; every pair is at WCAG AA
(4.5:1 or more), on any page, since a badge draws its own background."""


def _palette(theme: str) -> str:
    return "; ".join(
        f"--cm-{tone}-fg: {fg}; --cm-{tone}-bg: {bg}"
        for tone, (fg, bg) in BADGE_COLOURS[theme].items()
    )


STYLE = f"""<style>
{_S} {{{_palette("light")}; --cm-bar: #4a72c4}}
@media (prefers-color-scheme: dark) {{ {_S} {{{_palette("dark")}; --cm-bar: #7d9fe0}} }}
body[data-jp-theme-light="true"] {_S}, body.vscode-light {_S} {{{_palette("light")}}}
body[data-jp-theme-light="false"] {_S}, body.vscode-dark {_S},
body.vscode-high-contrast {_S} {{{_palette("dark")}; --cm-bar: #7d9fe0}}
{_S} {{font-family: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", sans-serif);
  font-size: 13px; line-height: 1.45; text-align: left}}
{_S} table {{border-collapse: collapse; margin: 4px 0; table-layout: auto; width: auto}}
{_S} caption {{text-align: left; font-weight: 600; padding: 2px 0; white-space: nowrap}}
{_S} .cm-nowrap {{white-space: nowrap}}
{_S} th, {_S} td {{border: none; border-bottom: 1px solid var(--jp-border-color2, #8886);
  padding: 2px 8px; text-align: left; vertical-align: top; white-space: normal}}
{_S} th {{font-weight: 600}}
{_S} tbody tr, {_S} tbody tr:nth-child(odd), {_S} tbody tr:nth-child(even),
{_S} tbody tr:hover {{background: transparent}}
{_S} details {{margin: 4px 0}}
{_S} summary {{cursor: pointer; font-weight: 600}}
{_S} pre {{white-space: pre-wrap; margin: 2px 0; padding: 0; font-size: 12px;
  background: transparent; border: none;
  font-family: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, monospace)}}
{_S} .cm-text {{white-space: pre-wrap; margin: 2px 0; font-family: inherit}}
{_S} .cm-muted {{opacity: 0.75}}
{_S} .cm-badge {{display: inline-block; padding: 0 6px; border-radius: 8px;
  font-size: 11px; font-weight: 600; line-height: 1.5}}
{_S} .cm-ok {{color: var(--cm-ok-fg); background: var(--cm-ok-bg)}}
{_S} .cm-bad {{color: var(--cm-bad-fg); background: var(--cm-bad-bg)}}
{_S} .cm-notice {{color: var(--cm-notice-fg); background: var(--cm-notice-bg)}}
{_S} .cm-neutral {{color: var(--cm-neutral-fg); background: var(--cm-neutral-bg)}}
{_S} .cm-duration {{white-space: nowrap}}
{_S} .cm-bar {{display: inline-block; height: 8px; min-width: 1px;
  background: var(--cm-bar); vertical-align: middle; margin-right: 4px}}
{_S} del {{text-decoration: line-through; opacity: 0.8}}
{_S} ins {{text-decoration: underline}}
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
    """`text` kept as written (line breaks, spaces), escaped, in the code font (for JSON)."""
    return f"<pre>{escape(text)}</pre>"


def prose(text: object) -> str:
    """Chat text, escaped: line breaks kept, in the proportional font of the page."""
    return f'<div class="cm-text">{escape(text)}</div>'


def plural(count: int, word: str, words: str | None = None) -> str:
    """`count` and the word, singular for one: "1 turn", "2 turns" ("2 matches": `words`)."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """An HTML table; `headers` are plain text, the cells of `rows` are HTML already."""
    head = "".join(f"<th>{escape(name)}</th>" for name in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def view(body: str) -> str:
    """A whole rendering: the scoped style sheet and `body` inside the scope element."""
    return f'{STYLE}<div class="{SCOPE} cm-scoped">{body}</div>'


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
