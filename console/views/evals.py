"""Eval runs: the runs `python -m chatomon.evals --record` stored, and each run's cases.

The list gives every run's pass rate per dataset and provider; a run's page lists its
cases with the failing judges and links each case's turns to the turn page.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from ..access import VIEW_TURNS, staff_view
from ..eval_runs import pass_rates
from ..models import EvalCaseResult, EvalRun
from ..rendering import render_screen

__all__ = ["eval_run_detail", "eval_run_list"]

PAGE_SIZE = 20


@staff_view(VIEW_TURNS)
def eval_run_list(request: HttpRequest) -> HttpResponse:
    """The recorded runs, newest first, with pass rates per dataset and provider."""
    page = Paginator(EvalRun.objects.all(), PAGE_SIZE).get_page(request.GET.get("page"))
    shown = list(page.object_list)
    by_run: dict[int, list[EvalCaseResult]] = {run.pk: [] for run in shown}
    for result in EvalCaseResult.objects.filter(run__in=shown):
        by_run[result.run_id].append(result)
    runs = [{"run": run, "rates": pass_rates(by_run[run.pk])} for run in shown]
    context = {"page": page, "runs": runs}
    return render_screen(request, "chatomon_console/evals/list.html", context, partial="results")


@staff_view(VIEW_TURNS)
def eval_run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """One run: its rates, then every case with its verdicts and turns."""
    run = get_object_or_404(EvalRun, pk=run_id)
    results = list(EvalCaseResult.objects.filter(run=run))
    context = {"run": run, "rates": pass_rates(results), "results": results}
    return render_screen(request, "chatomon_console/evals/detail.html", context, partial="cases")
