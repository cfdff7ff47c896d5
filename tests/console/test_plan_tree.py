"""The turn page's plan tree: a planned turn's tasks under their roots, with status, role,
tool calls linked to their cards, evidence and the reason of what stayed unresolved; the
turns list marks planned turns; a tool-loop turn shows no plan."""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User

from chatomon.chat.pipeline import AtomConfig
from chatomon.chat.store import Owner
from chatomon.django.models import ChatMessage, Turn
from chatomon.django.persistence.store import DjangoStore
from chatomon.planned import PlannedTurns
from chatomon.providers.testing import ScriptedProvider, tool_call
from chatomon.schemas import (
    PlannedTaskReport,
    PlannedTurnReport,
)
from tests.chat.services import collect, service
from tests.console.conftest import NOW, conversation, make_turn
from tests.planned.reports import sample_plan

pytestmark = pytest.mark.django_db

# The console is installed as chatomon.console (mypy knows it as the folder `console`).
_items = importlib.import_module("chatomon.console.conversation_items")
ConversationItem, ToolCard = _items.ConversationItem, _items.ToolCard
_tree = importlib.import_module("chatomon.console.plan_tree")
plan_tree, task_anchor, tool_anchor = _tree.plan_tree, _tree.task_anchor, _tree.tool_anchor


planned = sample_plan


def planned_turn(plan: PlannedTurnReport | None = None, *, capture: str = "full") -> Turn:
    """A stored planned turn whose conversation holds the cards of calls c1 and c2."""
    stored = (plan or planned()).model_dump(mode="json")
    turn = make_turn(conversation(), capture_content=capture, planned=stored)
    rows = [
        {"kind": "user", "content": "Which parts use steel, and who supplies them?"},
        {"kind": "tool_calls", "tool_calls": [
            {"id": "c1", "name": "query", "arguments": {"manager": "PartManager"}},
            {"id": "c2", "name": "describe", "arguments": {"manager": "MaterialManager"}}]},
        {"kind": "tool_result", "call_id": "c1", "name": "query", "result": {"rows": []}},
    ]  # fmt: skip
    for position, fields in enumerate(rows):
        ChatMessage.objects.create(
            conversation_id=turn.conversation_id, position=position, created_at=NOW, **fields
        )
    return turn


def task_html(html: str, task_id: str) -> str:
    """The markup of one task's list item, the tasks drawn under it included."""
    start = html.index(f'<li id="{task_anchor(task_id)}"')
    depth, position = 0, start
    for match in re.finditer(r"<(/?)li\b", html[start:]):
        depth += -1 if match.group(1) else 1
        if depth == 0:
            position = start + match.end()
            break
    return html[start:position]


def test_the_turn_page_draws_the_plan_as_a_tree(staff_client):
    turn = planned_turn()
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    plan = html[html.index('id="cc-plan"') :]
    plan = plan[: plan.index("</section>")]
    # The header: coverage, the budget used of its limit, planner attempts, prompt size.
    assert "2 of 4 tasks resolved" in plan and "cc-badge--partial" in plan
    assert "14 of 24 provider rounds used" in plan and 'value="58"' in plan
    assert "2 attempts" in plan and "9876 characters" in plan
    # The dependent t3 and the dynamic child t1a are drawn inside t1; t2 is not.
    t1 = task_html(plan, "t1")
    assert task_anchor("t3") in t1 and task_anchor("t1a") in t1 and task_anchor("t2") not in t1
    assert "needs t1" in task_html(plan, "t3") and "added by t1" in task_html(plan, "t1a")
    # Status, role, manager, question, evidence of each task.
    assert "cc-badge--resolved" in t1 and "simple_executor" in t1 and "PartManager" in t1
    assert "Which parts use steel?" in t1 and "3 rows" in t1 and "count = 3" in t1
    assert ">reused</span>" in task_html(plan, "t1a")
    # The reason of each unresolved task: its own, or the coverage's.
    assert "Unresolved: <code>budget_exhausted</code>" in task_html(plan, "t2")
    assert "Unresolved: <code>dependency_blocked</code>" in task_html(plan, "t3")
    assert "Unresolved" not in task_html(plan, "t1a")


def test_tool_calls_link_to_their_cards_on_the_page(staff_client):
    turn = planned_turn()
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    for call_id in ("c1", "c2"):
        assert f'<li class="cc-message cc-message--tool" id="{tool_anchor(call_id)}">' in html
    own = task_html(html, "t1")
    own = own[: own.index(task_anchor("t3"))]  # t1's own calls, before the tasks under it
    assert f'<a href="#{tool_anchor("c1")}">query <code>c1</code></a>' in own
    # c9's card is not among the messages shown: named, not linked.
    assert "<code>c9</code>" in own and f'href="#{tool_anchor("c9")}"' not in html
    assert f'<a href="#{tool_anchor("c2")}">describe <code>c2</code></a>' in task_html(html, "t1a")


def test_withheld_questions_and_hostile_text_stay_out_of_the_markup(staff_client):
    hostile = planned(tasks=(PlannedTaskReport(id="t1", question="<script>x()</script>",
                                               status="pending"),
                             PlannedTaskReport(id="t2", status="resolved")))  # fmt: skip
    html = staff_client.get(f"/console/turns/{planned_turn(hostile).id}/").content.decode()
    assert "<script>x()</script>" not in html and "&lt;script&gt;x()&lt;/script&gt;" in html
    assert 'class="cc-plan__question"' in task_html(html, "t1")
    assert 'class="cc-plan__question"' not in task_html(html, "t2")  # question not captured


def test_a_mutation_plan_shows_its_intent_and_no_tasks(staff_client):
    mutation = planned(intent="mutation", tasks=(), coverage=None, rounds_used=1)
    html = staff_client.get(f"/console/turns/{planned_turn(mutation).id}/").content.decode()
    assert "(the turn went on through the tool loop)" in html
    assert "cc-plan__tree" not in html and "Coverage" not in html


def test_a_tool_loop_turn_shows_no_plan(staff_client):
    turn = make_turn(conversation(), capture_content="full")
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    assert 'id="cc-plan"' not in html and "Conversation context" in html


def test_the_turns_list_marks_planned_turns(staff_client):
    planned_id = planned_turn().id
    plain_id = make_turn(conversation()).id
    html = staff_client.get("/console/turns/").content.decode()
    rows = {
        turn_id: html[html.index(f'value="{turn_id}"') :].split("</tr>", 1)[0]
        for turn_id in (planned_id, plain_id)
    }
    assert ">planned</span>" in rows[planned_id] and ">planned</span>" not in rows[plain_id]


def stored(plan: PlannedTurnReport) -> dict[str, Any]:
    return {"planned": plan.model_dump(mode="json")}


def test_a_dependent_of_two_roots_sits_under_the_first_and_names_both():
    plan = planned(tasks=(
        PlannedTaskReport(id="a"), PlannedTaskReport(id="b"),
        PlannedTaskReport(id="c", depends_on=("b", "a")),
    ))  # fmt: skip
    tree = plan_tree(stored(plan))
    assert tree is not None
    assert [node.task.id for node in tree.roots] == ["a", "b"]
    (dependent,) = tree.roots[1].children
    assert dependent.relation == "dependent" and dependent.task.depends_on == ("b", "a")


def test_a_stored_plan_that_loops_is_drawn_once_at_the_top():
    plan = planned(tasks=(
        PlannedTaskReport(id="a", parent_id="b"), PlannedTaskReport(id="b", parent_id="a"),
    ))  # fmt: skip
    tree = plan_tree(stored(plan))
    assert tree is not None
    (top,) = tree.roots
    assert top.task.id == "a" and [c.task.id for c in top.children] == ["b"]
    assert top.children[0].children == ()


@pytest.mark.parametrize(
    "report", [{}, {"planned": None}, {"planned": "read"}, {"planned": {"intent": "guess"}}]
)
def test_no_plan_or_one_that_does_not_validate_draws_no_tree(report):
    assert plan_tree(report) is None


def test_anchors_are_valid_ids_whatever_the_call_id():
    assert tool_anchor("call_1") == "cc-tool-call_1"
    assert tool_anchor("t1.call-1") == "cc-tool-t1.call-1"  # a planned task's call
    odd = tool_anchor('a "b" #c')
    assert re.fullmatch(r"cc-tool--[0-9a-f]{16}", odd) and odd == tool_anchor('a "b" #c')
    assert tool_anchor("x y") != tool_anchor("x_y")


def test_only_calls_whose_card_is_shown_get_an_anchor():
    items = [ConversationItem("tools", None, tools=[ToolCard("c1", "query", None)])]
    tree = plan_tree(stored(planned()), items)
    assert tree is not None and tree.budget_percent == 58
    calls = {call.call_id: call for call in tree.roots[0].tool_calls}
    assert calls["c1"].anchor == tool_anchor("c1") and calls["c9"].anchor is None
    assert calls["c9"].name is None  # neither a card nor an evidence record names it
    assert [row.anchor for row in tree.roots[0].evidence] == [tool_anchor("c1"), None]


@pytest.mark.django_db(transaction=True)  # the store writes from its own thread
def test_a_planned_turn_run_on_the_django_store_links_its_stored_calls(staff_client):
    """A real planned read (scripted roles) stored by DjangoStore, then its turn page."""
    plan = {"intent": "read", "tasks": [{
        "id": "t1", "question": "Which parts are made of steel?", "manager": "PartManager",
        "needs": [{"kind": "query", "description": "parts made of steel"}]}]}  # fmt: skip
    query = {"manager": "PartManager", "filters": {"material__name": "Steel"}, "fields": ["name"]}
    executor = ScriptedProvider([[tool_call("query", query)]])
    planned = PlannedTurns({
        "planner": ScriptedProvider([[json.dumps(plan)]]), "simple_executor": executor,
        "complex_executor": executor, "fallback_executor": executor,
        "synthesizer": ScriptedProvider([["The bolt."]]),
    })  # fmt: skip
    user = User.objects.create_user("carol")
    chat = service(DjangoStore(), ScriptedProvider([]), planned=planned,
                   atom_config=AtomConfig(capture_content="full"))  # fmt: skip
    events = async_to_sync(collect)(chat.run_turn(user, "Steel parts?", owner=Owner.user(user.pk)))
    assert events[-1]["coverage"]["status"] == "complete", events
    turn = Turn.objects.get(pk=events[-1]["turn_id"])
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    (call_id,) = turn.report["planned"]["tasks"][0]["tool_call_ids"]
    assert f'id="{tool_anchor(call_id)}"' in html  # the stored call's card
    assert f'<a href="#{tool_anchor(call_id)}">query <code>{call_id}</code></a>' in html
    assert "1 of 1 task resolved" in html and "Which parts are made of steel?" in html
