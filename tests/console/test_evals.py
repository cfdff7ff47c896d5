"""The console's eval runs: what `--record` stores, the list's pass rates, a run's cases."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from chatomon.django.models import Turn
from chatomon.django.persistence.store import DjangoStore
from chatomon.evals.runner import Environment, run_cases_sync
from chatomon.evals.selection import ProviderChoice, select_cases
from tests.console.conftest import make_user
from tests.evals.helpers import dataset

pytestmark = pytest.mark.django_db(transaction=True)
STARTED = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

# mypy knows the console as the folder `console`; the installed app is chatomon.console.
eval_runs = importlib.import_module("chatomon.console.eval_runs")
models = importlib.import_module("chatomon.console.models")
EvalCaseResult, pass_rates, record_run = (
    models.EvalCaseResult,
    eval_runs.pass_rates,
    eval_runs.record_run,
)


def recorded_run() -> Any:
    selected = select_cases([dataset("toy_pass"), dataset("toy_fail")])
    results = run_cases_sync(selected, ProviderChoice.scripted(), Environment(store=DjangoStore))
    return record_run({"scripted": results}, "--provider=scripted", STARTED)


def test_a_recorded_run_keeps_each_case_with_its_stored_turns(staff: Any) -> None:
    run = recorded_run()
    assert (run.total, run.passed, run.providers) == (3, 2, ["scripted"])
    run.refresh_from_db()
    assert (run.started_at, run.command) == (STARTED, "--provider=scripted")
    rows = list(EvalCaseResult.objects.filter(run=run))
    assert [(r.dataset, r.case, r.passed) for r in rows] == [
        ("toy_pass", "list_parts", True),
        ("toy_pass", "greeting", True),
        ("toy_fail", "wrong_answer", False),
    ]
    failed = rows[2]
    assert {"judge": "answer_coverage", "passed": False,
            "reason": "turn 1: the answer lacks 'Bolt'"} in failed.verdicts  # fmt: skip
    assert (rows[0].tool_calls, rows[0].provider_rounds, rows[0].input_tokens) == (1, 2, 30)
    for row in rows:
        [turn_id] = row.turn_ids
        assert Turn.objects.filter(pk=turn_id).exists()
    assert [(r.dataset, r.passed, r.total, r.percent) for r in pass_rates(rows)] == [
        ("toy_pass", 2, 2, 100),
        ("toy_fail", 0, 1, 0),
    ]


def test_the_list_shows_pass_rates_per_dataset_and_provider(staff_client: Client) -> None:
    run = recorded_run()
    page = staff_client.get(reverse("chatomon_console:eval_runs"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "toy_pass · scripted: 2/2 (100%)" in text
    assert "toy_fail · scripted: 0/1 (0%)" in text
    assert reverse("chatomon_console:eval_run", args=[run.pk]) in text
    assert (
        reverse("chatomon_console:eval_runs")
        in staff_client.get(reverse("chatomon_console:dashboard")).content.decode()
    )  # the nav links the list


def test_a_run_page_lists_the_cases_and_opens_their_turns(staff_client: Client) -> None:
    run = recorded_run()
    page = staff_client.get(reverse("chatomon_console:eval_run", args=[run.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "answer_coverage: turn 1: the answer lacks &#x27;Bolt&#x27;" in text
    failed = EvalCaseResult.objects.get(run=run, case="wrong_answer")
    link = reverse("chatomon_console:turn_detail", args=[failed.turn_ids[0]])
    assert link in text
    assert staff_client.get(link).status_code == 200
    assert (
        staff_client.get(reverse("chatomon_console:eval_run", args=[run.pk + 1])).status_code == 404
    )


def test_eval_runs_need_the_view_turns_permission(db: Any) -> None:
    run = recorded_run()
    client = Client()
    client.force_login(make_user("bob", perms=("view_dashboard",)))
    for url in (
        reverse("chatomon_console:eval_runs"),
        reverse("chatomon_console:eval_run", args=[run.pk]),
    ):
        assert client.get(url).status_code == 403
