"""Rich display: every object's HTML escapes what it shows, badges read as text, and the
mimebundle carries text/plain and text/markdown."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest

from chatomon import (
    Atom,
    ChatResult,
    InputDecision,
    OrbitalResult,
    OutputAttempt,
    OutputDecision,
    TurnReport,
    Verdict,
    orbital,
)
from chatomon.data.backend import AggregatePage, QueryPage
from chatomon.data.fixtures import toy_registry
from chatomon.notebook.display import render_html, render_markdown, render_mimebundle
from chatomon.notebook.markup import SCOPE, duration_bar, md_escape

HOSTILE = "<script>alert('x')</script> & **bold** | pipe"


def hostile_result(**overrides: object) -> OrbitalResult:
    fields: dict[str, object] = {
        "name": "<b>guard</b>",
        "side": "input",
        "kind": "Guard<T>",
        "fingerprint": "f",
        "action": "block",
        "reason": HOSTILE,
        "duration_ms": 12.5,
        "reply": HOSTILE,
        "error_type": "<TimeoutError>",
        "error_policy": "block",
        "error_message": HOSTILE,
    }
    fields.update(overrides)
    return OrbitalResult.model_validate(fields)


def hostile_report() -> TurnReport:
    return TurnReport(
        turn_id="t<1>",
        conversation_id="c&1",
        atom_name="<atom>",
        started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        duration_ms=40.0,
        final_action="blocked",
        escalated=True,
        input=(hostile_result(), hostile_result(name="fast", action="allow", duration_ms=1.0)),
        output=(
            OutputAttempt(
                nucleus_reply=HOSTILE,
                results=(hostile_result(side="output"),),
                decision="replace",
            ),
        ),
        user_message=HOSTILE,
        final_reply=HOSTILE,
        capture_content="full",
        error_type="<Boom>",
    )


class TagCollector(HTMLParser):
    """Collects the tags of a rendering, and the text of script elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def tags_of(html: str) -> list[str]:
    collector = TagCollector()
    collector.feed(html)
    return collector.tags


def samples() -> list[object]:
    index = toy_registry().schema_index()
    report = hostile_report()
    return [
        report,
        hostile_result(),
        Verdict.block(reply=HOSTILE, reason="<r>", escalate=True),
        Verdict.allow(guidance=HOSTILE, annotations={"k": "<v>"}),
        InputDecision(kind="reply", reply=HOSTILE),
        InputDecision(kind="guided_refusal", guidance=(HOSTILE,), redact_user_message=True),
        OutputDecision(kind="replace", text=HOSTILE),
        OutputDecision(kind="regenerate", guidance=(HOSTILE,)),
        ChatResult(reply=HOSTILE, report=report, history=()),
        index.get("PartManager"),
        QueryPage(rows=[{"id": 1, "name": HOSTILE, "tags": ["<a>"]}], total_count=7),
        AggregatePage(groups=[{"group": {"name": HOSTILE}, "values": {"count": 2}}], has_more=True),
    ]


THEMED_SCOPE = (
    r'(body(\[data-jp-theme-light="(true|false)"\]|\.vscode-[a-z-]+) )?'
    rf"\.{SCOPE}\.cm-scoped( [^,]+)?"
)


def style_selectors(css: str) -> list[str]:
    """Every selector of a style sheet, at-rule wrappers (@media) left out."""
    css = re.sub(r"@media[^{]*\{", "", css)
    rules = [rule.split("{")[0] for rule in css.split("}") if "{" in rule]
    return [part.strip() for rule in rules for part in rule.split(",") if part.strip()]


@pytest.mark.parametrize("obj", samples(), ids=lambda obj: type(obj).__name__)
def test_html_is_scoped_and_escapes_every_text(obj: object) -> None:
    html = obj._repr_html_()
    assert html == render_html(obj)
    assert f'<div class="{SCOPE} cm-scoped">' in html
    # The only tags are chatomon's own: nothing of the content became markup.
    assert set(tags_of(html)) <= {
        "style",
        "div",
        "span",
        "b",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "pre",
        "details",
        "summary",
        "caption",
        "del",
        "ins",
    }
    assert "<script>" not in html and "<b>guard</b>" not in html
    # The style sheet's rules all live under the scope: both classes of the wrapper, after
    # at most the theme marker of JupyterLab or VS Code on <body>.
    style = re.search(r"<style>(.*)</style>", html, re.S)
    assert style is not None
    for selector in style_selectors(style.group(1)):
        assert re.fullmatch(THEMED_SCOPE, selector), selector


@pytest.mark.parametrize("obj", samples(), ids=lambda obj: type(obj).__name__)
def test_the_mimebundle_has_plain_text_and_escaped_markdown(obj: object) -> None:
    bundle = obj._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/markdown"}
    assert bundle["text/plain"].strip()
    markdown = bundle["text/markdown"]
    assert "<script>" not in markdown and "<b>" not in markdown
    assert "**bold**" not in markdown  # content's emphasis is literal text
    assert bundle == render_mimebundle(obj)


def test_include_and_exclude_select_mime_types() -> None:
    verdict = Verdict.allow()
    assert set(verdict._repr_mimebundle_(include={"text/markdown"})) == {"text/markdown"}
    assert set(verdict._repr_mimebundle_(exclude={"text/markdown"})) == {"text/plain"}


def test_badges_carry_the_action_as_text() -> None:
    html = render_html(hostile_report())
    for label in ("blocked", "escalated", "block", "allow", "replace", "error"):
        assert re.search(rf'<span class="cm-badge cm-\w+"[^>]*>{label}</span>', html), label
    # The colour class repeats the meaning; the text alone tells it.
    assert '<span class="cm-badge cm-bad">block</span>' in html
    assert '<span class="cm-badge cm-ok">allow</span>' in html


def test_durations_are_bars_relative_to_the_slowest_run() -> None:
    html = render_html(hostile_report())
    widths = [int(w) for w in re.findall(r'class="cm-bar" style="width:(\d+)px"', html)]
    assert 120 in widths and 10 in widths  # 12.5 ms of 12.5 ms, and 1 ms of 12.5 ms
    assert 'aria-label="12.5 ms"' in html
    assert '<span class="cm-bar" style="width:1px"' in duration_bar(0.0, 0.0)


def test_report_sections_are_details_and_say_what_was_not_captured() -> None:
    full = hostile_report()
    attempt = full.output[0].model_copy(update={"nucleus_reply": None})
    report = full.model_copy(
        update={"capture_content": "none", "user_message": None, "output": (attempt,)}
    )
    html = render_html(report)
    assert html.count("<details") >= 2
    assert "Input chain (2)" in html and "Output attempt 1" in html
    assert "user message" not in html  # nothing is captured at "none": nothing to show
    assert "nucleus reply: not captured (capture=none)" in html  # said, not an empty box
    hashed = hostile_report().model_copy(update={"capture_content": "hash", "user_message": "ab12"})
    assert "sha256 ab12" in render_html(hashed)


def test_markdown_escapes_punctuation_and_flattens_lines() -> None:
    assert md_escape("a|b *c* _d_ `e` [f](g) <h>\nnext") == (
        r"a\|b \*c\* \_d\_ \`e\` \[f\](g) &lt;h&gt; next"
    )
    table = render_markdown(hostile_report())
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert all(line.count(" | ") == 5 for line in rows)  # no cell added by a "|" in content


def test_text_plain_summarises_a_report_in_lines() -> None:
    text = hostile_report()._repr_mimebundle_()["text/plain"]
    lines = text.splitlines()
    assert lines[0].startswith("TurnReport <atom>: blocked, escalated in 40.0 ms")
    assert len(lines) == 1 + 3 + 1  # summary, three orbital runs, the error


def test_a_real_turn_renders_its_report_and_chat_result() -> None:
    @orbital(side="input")
    def hours(ctx):
        return Verdict.respond("Open <9-18>")

    atom = Atom("support", nucleus=lambda messages, guidance: "unused", input=[hours])
    result = atom.chat_sync("When?")
    html = result._repr_html_()
    assert "Open &lt;9-18&gt;" in html and "orbital_response" in html
    assert "Turn report" in html
    assert result._repr_mimebundle_()["text/plain"].startswith("Open <9-18>")


def test_a_schema_shows_fields_relations_and_filters() -> None:
    schema = toy_registry().schema_index().get("PartManager")
    html = render_html(schema)
    assert "Designed or purchased components." in html
    assert ">material<" in html and ">MaterialManager<" in html and ">to_one<" in html
    assert "Filters (" in html
    assert (
        "ManagerSchema PartManager(id: integer, name: string)"
        in schema._repr_mimebundle_()["text/plain"]
    )


def test_a_long_query_page_counts_the_rows_it_does_not_show() -> None:
    page = QueryPage(rows=[{"id": n} for n in range(60)], total_count=75)
    html = render_html(page)
    assert html.count("<tr>") == 1 + 50
    assert "25 more not shown" in html
    assert "60 of 75 rows" in page._repr_mimebundle_()["text/markdown"]


def test_an_unknown_type_has_no_view() -> None:
    with pytest.raises(TypeError, match="no rich display for int"):
        render_html(3)


def test_displaying_needs_no_ipywidgets_and_importing_loads_no_renderer() -> None:
    code = (
        "import sys; sys.modules['ipywidgets'] = None; sys.modules['pandas'] = None;"
        "import chatomon, chatomon.data.schema;"
        "print(any(m.startswith('chatomon.notebook') for m in sys.modules));"
        "print('cm-badge' in chatomon.Verdict.allow()._repr_html_())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={}
    )
    assert result.stdout.split() == ["False", "True"]
