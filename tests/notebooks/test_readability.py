"""Notebooks that read well everywhere (issue 25): static copies of the widgets, one preview
renderer for the console and the notebook, a readable confirmation panel, theme-proof
styles at WCAG AA contrast, Enter to send."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from chatomon import Atom, Blocklist, MaxLength
from chatomon.chat.loop import ToolLoop
from chatomon.data.actor import SimpleActor
from chatomon.notebook import ChatWidget, show_turns
from chatomon.notebook.chat_markup import confirmation_html, expires_in
from chatomon.notebook.chat_state import TOOL_WAITING
from chatomon.notebook.markup import BADGE_COLOURS, STYLE, plural
from chatomon.preview import parse_preview, preview_html, preview_text
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call
from tests.chat.services import RENAME
from tests.notebooks.test_widget import chat_service

ROOT = Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
UPDATE = {
    "action": "update",
    "manager": "MaterialManager",
    "id": 1,
    "changes": [{"field": "name", "before": "Steel", "after": "Iron"}],
}


# Contrast (WCAG 2.x relative luminance) ------------------------------------------------


def luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(first: str, second: str) -> float:
    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_formula_matches_known_pairs() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_badge_is_at_wcag_aa_contrast_in_both_themes(theme: str) -> None:
    pairs = BADGE_COLOURS[theme]
    assert set(pairs) == {"ok", "bad", "notice", "neutral"}
    for tone, (text, background) in pairs.items():
        assert contrast(text, background) >= 4.5, (theme, tone, contrast(text, background))


def test_the_style_sheet_switches_palettes_for_dark_themes_and_keeps_tables_left() -> None:
    dark = "--cm-ok-fg: " + BADGE_COLOURS["dark"]["ok"][0]
    light = "--cm-ok-fg: " + BADGE_COLOURS["light"]["ok"][0]
    assert re.search(r"@media \(prefers-color-scheme: dark\) \{[^}]*" + re.escape(dark), STYLE)
    # JupyterLab's and VS Code's own theme markers win over the system preference.
    assert re.search(r'body\[data-jp-theme-light="false"\][^{]*\{[^}]*' + re.escape(dark), STYLE)
    assert re.search(r'body\[data-jp-theme-light="true"\][^{]*\{[^}]*' + re.escape(light), STYLE)
    assert "body.vscode-dark" in STYLE and "var(--jp-border-color2" in STYLE
    # Cells left-aligned, rows and <pre> without the front end's stripes and backgrounds,
    # with two classes of specificity over `.jp-RenderedHTMLCommon td`.
    assert re.search(r"\.chatomon-view\.cm-scoped td \{[^}]*text-align: left", STYLE)
    assert re.search(r"tbody tr:nth-child\(odd\)[^{]*\{background: transparent", STYLE)
    assert re.search(r"\.chatomon-view\.cm-scoped pre \{[^}]*background: transparent", STYLE)
    assert re.search(r"\.cm-text \{[^}]*font-family: inherit", STYLE)


def test_chat_text_is_prose_not_monospace_and_one_turn_is_singular() -> None:
    atom = Atom("shop", nucleus=lambda messages, guidance: "We sell bolts.")
    result = atom.chat_sync("hi")
    html = result._repr_html_()
    assert '<div class="cm-text">We sell bolts.</div>' in html
    assert "<pre>We sell bolts.</pre>" not in html
    table = show_turns([result.report])
    assert "<b>1 turn</b>" in table._table.value
    assert (plural(1, "turn"), plural(2, "turn")) == ("1 turn", "2 turns")


# One preview renderer -------------------------------------------------------------------


def test_the_preview_renderer_draws_before_and_after_and_escapes() -> None:
    html = preview_html(UPDATE)
    assert "<caption>Update MaterialManager #1</caption>" in html
    assert "<del>Steel</del>" in html and "<ins>Iron</ins>" in html
    created = preview_html({"action": "create", "values": {"name": "<b>x</b>"}}, muted_class="m")
    assert '<span class="m">(new)</span>' in created and "&lt;b&gt;x&lt;/b&gt;" in created
    assert preview_text(UPDATE) == "Update MaterialManager #1\n  name: Steel → Iron"
    assert parse_preview("free text").rest == "free text"


def test_the_console_draws_its_approvals_with_the_sdk_renderer() -> None:
    # One renderer: the console's card template no longer draws rows itself.
    card = (ROOT / "templates/chatomon_console/approvals/card.html").read_text()
    assert "{{ card.preview_" in card and "<del>" not in card and "card.rows" not in card
    display = (ROOT / "console/approval_display.py").read_text()
    assert "from chatomon.preview import" in display and "<del>" not in display


# The confirmation panel -----------------------------------------------------------------


def test_the_expiry_is_relative() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    at = (now + timedelta(seconds=29, microseconds=512_345)).isoformat()
    assert expires_in(at, now) == "expires in 29 s"
    assert expires_in((now + timedelta(minutes=4, seconds=10)).isoformat(), now) == (
        "expires in 4 min 10 s"
    )
    assert expires_in((now - timedelta(seconds=1)).isoformat(), now) == "expired"
    assert expires_in(None, now) == "" and expires_in("soon", now) == ""
    pending = {"mutation": "renameMaterial", "preview": UPDATE, "input": {}, "expires_at": at}
    html = confirmation_html(pending, can_decide=True, now=now)
    assert "expires in 29 s (at 12:00:29 UTC)" in html
    assert at not in html and ".512345" not in html


async def test_a_pending_confirmation_shows_its_preview_once_and_the_tool_waits() -> None:
    widget = ChatWidget(chat_service(ScriptedProvider([[RENAME], ["Renamed."]]), []))
    widget.send("Rename Steel to Iron")
    await widget.wait()
    assert widget.status == "awaiting_confirmation"
    panel = widget._confirm_text.value
    assert panel.count("<del>Steel</del>") == 1 and "<ins>Iron</ins>" in panel
    assert re.search(r"expires in \d+ (s|min)", panel)
    assert widget.pending["expires_at"] not in panel
    # The transcript says that it waits; the preview is the panel's alone.
    transcript = widget._transcript.value
    assert "<del>" not in transcript and "decide below" in transcript
    tool = next(entry for entry in widget.messages if entry["role"] == "tool")
    assert tool["status"] == TOOL_WAITING
    assert TOOL_WAITING in transcript and ">running<" not in transcript
    widget.approve()
    await widget.wait()
    tool = next(entry for entry in widget.messages if entry["role"] == "tool")
    assert tool["status"] == "executed"


async def test_the_last_report_is_hidden_while_a_turn_is_suspended() -> None:
    provider = ScriptedProvider([["Hello."], [RENAME], ["Renamed."]])
    widget = ChatWidget(chat_service(provider, []))
    widget.send("hi")
    await widget.wait()
    assert "Last turn report" in widget._report_panel.value
    widget.send("Rename Steel to Iron")
    await widget.wait()
    assert widget.status == "awaiting_confirmation"
    assert widget._report_panel.value == ""  # the previous turn's report is not this one
    widget.approve()
    await widget.wait()
    assert "Last turn report" in widget._report_panel.value


async def test_an_atom_confirmation_is_redacted_by_the_one_rule() -> None:
    secret = tool_call(
        "mutate",
        {"mutation": "renameMaterial", "input": {"material_id": 1, "name": "Iron"}},
    )
    toolset = chat_service(ScriptedProvider([]), []).toolset
    loop = ToolLoop(ScriptedProvider([[secret], ["Done."]]), toolset, actor=SimpleActor(id=3))
    widget = ChatWidget(Atom("data", loop))
    loop.confirmer = widget.confirm
    widget.send("Rename")
    await widget.wait()
    pending = {
        **widget.pending,
        "input": {"material_id": 1, "api_token": "tok-123456"},
        "preview": {"action": "update", "changes": [{"field": "password", "after": "hunter2"}]},
    }
    html = confirmation_html(pending, can_decide=True)
    assert "hunter2" not in html and "tok-123456" not in html
    assert html.count("[redacted]") == 2
    widget.approve()
    await widget.wait()


# Static copies ------------------------------------------------------------------------


async def test_the_widget_leaves_a_static_html_and_text_copy_beside_its_view() -> None:
    atom = Atom("shop", nucleus=lambda m, g: "Acme is best.", output=[Blocklist(["Acme"])])
    widget = ChatWidget(atom)
    widget.send("<b>Who</b> is best?")
    await widget.wait()
    bundle = widget._repr_mimebundle_()
    assert bundle is not None
    assert WIDGET_VIEW in bundle and bundle[WIDGET_VIEW]["model_id"] == widget.model_id
    html, text = bundle["text/html"], bundle["text/plain"]
    assert "chatomon-view" in html and "&lt;b&gt;Who&lt;/b&gt; is best?" in html
    assert "Last turn report" in html and "fallback_refusal" in html
    assert "<style>" not in text and "children=" not in text
    assert "You: <b>Who</b> is best?" in text
    assert "Assistant (fallback_refusal):" in text


def test_the_turns_table_leaves_a_static_copy_of_what_it_shows() -> None:
    reports = [Atom("a", nucleus=lambda m, g: "x" * 30, output=[MaxLength(10)]).chat_sync("hi")]
    reports.append(Atom("b", nucleus=lambda m, g: "ok").chat_sync("hi"))
    table = show_turns(report.report for report in reports)
    table.atom_name = "b"
    bundle = table._repr_mimebundle_()
    assert bundle is not None
    assert WIDGET_VIEW in bundle
    # The filter applied in the widget is named above the copy of what it lets through.
    caption = "1 of 2 turns · filtered by atom b"
    assert f"<b>{caption}</b>" in bundle["text/html"] and "chatomon-view" in bundle["text/html"]
    assert bundle["text/plain"].startswith(f"{caption}\n") and " b " in bundle["text/plain"]
    assert "<style>" not in bundle["text/plain"]


# Enter sends ----------------------------------------------------------------------------


async def test_enter_in_the_input_sends() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    widget._input.value = "hello"
    # What the front end sends when Enter is pressed in a Text input.
    widget._input._handle_custom_msg({"event": "submit"}, [])
    assert widget._input.value == "" and widget.status == "running"
    await widget.wait()
    assert [entry["role"] for entry in widget.messages] == ["user", "assistant"]
