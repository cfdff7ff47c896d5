"""Turn page: usage and cost per model round, priced by CHATOMON_CONSOLE['prices']."""

from __future__ import annotations

import importlib
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from chatomon.errors import ConfigurationError
from tests.console.conftest import NOW, make_turn

costs = importlib.import_module("chatomon.console.usage_costs")
conf = importlib.import_module("chatomon.console.conf")

PRICES = conf.build_console_settings(
    {
        "prices": {
            "gpt-x": {"input": "2.00", "output": "8.00"},
            "ScriptedProvider": {"input": 1, "output": 1},
        }
    }
).prices


def model_round(name: str, usage: tuple[int, int] | None = None, **more: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"kind": "provider_round", "name": name, "started_ms": 0.0,
                            "duration_ms": 5.0, **more}  # fmt: skip
    if usage is not None:
        step["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
    return step


TOOL = {"kind": "tool_call", "name": "query", "started_ms": 5.0, "duration_ms": 1.0, "status": "ok"}


def test_rounds_with_their_own_usage_are_priced_each_and_summed() -> None:
    report = {"steps": [model_round("OpenAIProvider", (1000, 100), model="gpt-x"), TOOL,
                        model_round("OpenAIProvider", (3000, 500), model="gpt-x")]}  # fmt: skip
    cost = costs.turn_cost(report, (4000, 600), PRICES, "USD")
    assert cost.per_round and [r.model for r in cost.rounds] == ["gpt-x", "gpt-x"]
    # 1000 * 2 / 1e6 + 100 * 8 / 1e6 = 0.0028; 3000 * 2 / 1e6 + 500 * 8 / 1e6 = 0.01
    assert [r.cost for r in cost.rounds] == [Decimal("0.0028"), Decimal("0.01")]
    assert cost.cost == Decimal("0.0128") and cost.cost_text == "0.0128 USD"
    assert cost.rounds[0].cost_text == "0.002800 USD"


def test_a_round_of_an_unpriced_model_leaves_the_turn_cost_unknown() -> None:
    report = {
        "steps": [
            model_round("A", (10, 1), model="gpt-x"),
            model_round("B", (10, 1), model="other"),
        ]
    }
    cost = costs.turn_cost(report, (20, 2), PRICES, "USD")
    assert cost.rounds[1].cost is None and cost.cost is None and cost.cost_text == "—"
    assert "no price for other" in (cost.note or "")


def test_without_usage_per_round_one_priced_model_prices_the_turn_total() -> None:
    # What the engine records today: rounds named by the provider class, usage per turn.
    report = {"steps": [model_round("ScriptedProvider"), TOOL, model_round("ScriptedProvider")]}
    cost = costs.turn_cost(report, (500_000, 500_000), PRICES, "EUR")
    assert not cost.per_round and len(cost.rounds) == 2
    assert cost.cost == Decimal(1) and cost.cost_text == "1.0000 EUR"
    assert "does not split it by round" in (cost.note or "")


def test_without_usage_per_round_several_models_or_no_price_give_no_guess() -> None:
    two = {"steps": [model_round("A", model="gpt-x"), model_round("B", model="other")]}
    assert costs.turn_cost(two, (10, 1), PRICES, "USD").cost is None
    unpriced = costs.turn_cost({"steps": [model_round("LocalProvider")]}, (10, 1), PRICES, "USD")
    assert unpriced.cost is None and "LocalProvider" in (unpriced.note or "")
    no_steps = costs.turn_cost({}, (10, 1), PRICES, "USD")
    assert no_steps.cost is None and no_steps.note
    # A turn the input chain decided ran no model and used no token: it cost nothing.
    assert costs.turn_cost({}, (0, 0), PRICES, "USD").cost == 0


def test_a_malformed_step_usage_is_not_read_as_tokens() -> None:
    step = {**model_round("gpt", model="gpt-x"), "usage": {"input_tokens": True}}
    report = {"steps": [step]}
    cost = costs.turn_cost(report, (3, 4), PRICES, "USD")
    assert not cost.per_round and cost.rounds[0].input_tokens is None


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"prices": {"m": {"input": "-1", "output": 1}}}, "['prices']['m']['input']"),
        ({"prices": {"m": {"input": "x", "output": 1}}}, "['prices']['m']['input']"),
        ({"prices": {"m": {"inpt": 1, "output": 1}}}, "['prices']['m']['inpt']"),
        ({"prices": {"m": {"output": 1}}}, "['prices']['m']['input']"),
        ({"currency": ""}, "['currency']"),
    ],
)
def test_a_wrong_price_table_is_named(value: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        conf.build_console_settings(value)
    assert f"CHATOMON_CONSOLE{named}" in str(raised.value)


@pytest.mark.django_db
def test_the_turn_page_shows_each_round_and_the_turn_cost(
    staff_client: Client, settings: Any
) -> None:
    settings.CHATOMON_CONSOLE = {"prices": {"gpt-x": {"input": "2", "output": "8"}}}
    turn = make_turn(tokens=(4000, 600), steps=[
        model_round("OpenAIProvider", (1000, 100), model="gpt-x"), TOOL,
        model_round("OpenAIProvider", (3000, 500), model="gpt-x"),
    ])  # fmt: skip
    page = staff_client.get(reverse("chatomon_console:turn_detail", args=[turn.id]))
    html = page.content.decode()
    assert page.status_code == 200 and 'id="cc-usage"' in html
    assert "0.002800 USD" in html and "0.010000 USD" not in html and "0.0100 USD" in html
    assert "0.0128 USD" in html


@pytest.mark.django_db
def test_the_turn_page_names_why_a_cost_is_unknown(staff_client: Client) -> None:
    turn = make_turn(tokens=(40, 6), steps=[model_round("LocalProvider")])
    html = staff_client.get(
        reverse("chatomon_console:turn_detail", args=[turn.id])
    ).content.decode()
    assert "no price for LocalProvider in CHATOMON_CONSOLE[&#x27;prices&#x27;]" in html
    assert "does not split usage by model round" in html


@pytest.mark.django_db
def test_the_turns_list_names_each_turns_models_and_cost(
    staff_client: Client, settings: Any
) -> None:
    settings.CHATOMON_CONSOLE = {"prices": {"gpt-x": {"input": "2", "output": "8"}}}
    make_turn(tokens=(1000, 100), steps=[model_round("OpenAIProvider", model="gpt-x")])
    make_turn(tokens=(10, 1), steps=[model_round("LocalProvider")])
    html = staff_client.get(reverse("chatomon_console:turns")).content.decode()
    assert "gpt-x" in html and "0.002800 USD" in html and "LocalProvider" in html
    assert html.count(" USD<") == 1  # the unpriced turn shows no cost


@pytest.mark.django_db
def test_the_compare_view_shows_each_turns_cost_and_the_difference(
    staff_client: Client, settings: Any
) -> None:
    settings.CHATOMON_CONSOLE = {"prices": {"gpt-x": {"input": "2", "output": "8"}}}
    a = make_turn(tokens=(1000, 100), steps=[model_round("OpenAIProvider", model="gpt-x")])
    later = NOW + timedelta(minutes=1)  # A is the earlier turn
    b = make_turn(
        started_at=later, tokens=(3000, 500), steps=[model_round("OpenAIProvider", model="gpt-x")]
    )
    html = staff_client.get(
        reverse("chatomon_console:turn_compare"), {"t": [a.id, b.id]}
    ).content.decode()
    # 0.0028 and 0.01 USD: B cost 0.0072 more.
    row = html[html.index("Cost (USD)") :]
    row = row[: row.index("</tr>")]
    assert "0.002800" in row and "0.010000" in row and "+0.007200" in row
    unpriced = make_turn(started_at=later, tokens=(10, 1), steps=[model_round("LocalProvider")])
    html = staff_client.get(
        reverse("chatomon_console:turn_compare"), {"t": [a.id, unpriced.id]}
    ).content.decode()
    row = html[html.index("Cost (USD)") :]
    assert row[: row.index("</tr>")].count("—") == 2  # B's cost, and so the difference
