"""show_turns: the table of reports and its filters."""

from __future__ import annotations

from chatomon import Atom, MaxLength, TurnReport, Verdict, orbital
from chatomon.notebook import TurnsTable, show_turns
from chatomon.notebook.turns_table import ANY, matching_reports


@orbital(side="input")
def no_refunds(ctx):
    if "refund" in ctx.message:
        return Verdict.block(reply="Refunds are handled by phone.", escalate=True)
    return Verdict.allow()


def reports() -> list[TurnReport]:
    shop = Atom(
        "shop",
        nucleus=lambda m, g: "Sure.",
        input=[MaxLength(40), no_refunds],
        capture_content="full",  # the messages reach the table, so its escaping shows
    )
    other = Atom("other", nucleus=lambda m, g: "Hi.")
    return [
        shop.chat_sync("a bolt please").report,
        shop.chat_sync("a refund <now>").report,
        shop.chat_sync("x" * 50).report,
        other.chat_sync("hello").report,
    ]


def test_filters_narrow_the_visible_reports() -> None:
    given = reports()
    table = show_turns(given)
    assert isinstance(table, TurnsTable)
    assert table.visible == given
    table.final_action = "blocked"
    assert [r.turn_id for r in table.visible] == [given[1].turn_id, given[2].turn_id]
    table.escalated_only = True
    assert table.visible == [given[1]]
    table.escalated_only = False
    table.orbital = "max_length"
    assert table.visible == [given[2]]
    table.final_action = table.orbital = ANY
    table.atom_name = "other"
    assert table.visible == [given[3]]


def test_the_dropdowns_offer_what_the_reports_hold_and_drive_the_filters() -> None:
    given = reports()
    table = show_turns(given)
    action, atom, orbital_choice, escalated = table.children[0].children
    assert list(action.options) == [ANY, "answered", "blocked"]
    assert list(atom.options) == [ANY, "other", "shop"]
    assert list(orbital_choice.options) == [ANY, "max_length", "no_refunds"]
    action.value = "answered"
    assert table.final_action == "answered"
    assert len(table.visible) == 2
    html = table.children[1].value
    assert html.count("<details><summary>Turn ") == 2
    escalated.value = True
    assert "No turn matches." in table.children[1].value


def test_the_table_escapes_and_keeps_each_report_in_a_section() -> None:
    table = show_turns(reports())
    html = table.children[1].value
    assert "4 turns" in html and html.count("<details><summary>Turn ") == 4
    assert '<span class="cm-badge cm-bad">blocked</span>' in html
    assert "<now>" not in html and "a refund &lt;now&gt;" in html


def test_matching_reports_with_no_filter_keeps_every_report() -> None:
    given = reports()
    assert matching_reports(given) == given
    assert matching_reports(given, final_action="aborted") == []
