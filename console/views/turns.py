"""Turns: the TurnReport browser — filtered list, detail, report download and exports.

A report is shown, downloaded and exported as the redaction rule leaves it (reports
written by chatomon already are; this also covers rows from older versions or imports).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import Turn

from ..access import VIEW_TURNS, staff_view
from ..conf import console_settings
from ..converters import is_turn_id
from ..exports import csv_response, jsonl_response
from ..plan_tree import plan_tree
from ..rendering import render_screen, without_empty_filters
from ..timeline import waterfall
from ..turn_compare import compare_turns
from ..turn_context import content_visible, tool_payload, turn_context
from ..turn_filters import TurnFilterForm, filtered_turns
from ..turn_rows import EXPORT_COLUMNS, export_rows, rows_of
from ..turn_waits import turn_waits
from ..usage_costs import turn_cost

__all__ = [
    "turn_compare",
    "turn_detail",
    "turn_export",
    "turn_list",
    "turn_report_download",
    "turn_tool_download",
]

PAGE_SIZE = 25
PAIR = 2  # a comparison is of two turns


@staff_view(VIEW_TURNS)
def turn_list(request: HttpRequest) -> HttpResponse:
    """The filtered, sorted, paginated list of turns."""
    if (cleaned := without_empty_filters(request)) is not None:
        return cleaned
    form = TurnFilterForm(request.GET)
    page = Paginator(filtered_turns(form), PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "rows": rows_of(page.object_list)}
    return render_screen(request, "chatomon_console/turns/list.html", context, partial="results")


@staff_view(VIEW_TURNS)
def turn_detail(request: HttpRequest, turn_id: str) -> HttpResponse:
    """One turn: context, plan, chains, attempts, waits, waterfall, usage, cost, raw report."""
    turn = get_object_or_404(Turn.objects.select_related("conversation"), pk=turn_id)
    report = current_redaction().value(turn.report or {})
    items = turn_context(turn)
    prices = console_settings()
    context = {
        "turn": turn,
        "row": rows_of([turn])[0],
        "report": report,
        "context_items": items,
        "plan": plan_tree(report, items),
        "content_visible": content_visible(turn),
        "waterfall": waterfall(report),
        "waits": turn_waits(turn, report),
        "cost": turn_cost(
            report, (turn.input_tokens, turn.output_tokens), prices.prices, prices.currency
        ),
        **_neighbours(turn),
    }
    return render_screen(request, "chatomon_console/turns/detail.html", context, partial="detail")


def _neighbours(turn: Turn) -> dict[str, Turn | None]:
    """The turns before and after `turn` in its conversation."""
    same = Turn.objects.filter(conversation_id=turn.conversation_id).exclude(pk=turn.pk)
    return {
        "previous_turn": same.filter(started_at__lte=turn.started_at)
        .order_by("-started_at", "-pk")
        .first(),
        "next_turn": same.filter(started_at__gt=turn.started_at)
        .order_by("started_at", "pk")
        .first(),
    }


@staff_view(VIEW_TURNS)
def turn_compare(request: HttpRequest) -> HttpResponse:
    """Two turns side by side: ``?t=<turn id>&t=<turn id>`` (A, then B)."""
    ids = request.GET.getlist("t")
    template = "chatomon_console/turns/compare.html"
    if len(ids) != PAIR:
        error = {"error": f"Choose exactly two turns to compare ({len(ids)} chosen)."}
        return render_screen(request, template, error, partial="compare", status=400)
    if not all(is_turn_id(turn_id) for turn_id in ids):
        raise Http404("no such turn")  # as a malformed id in a path: never a query
    turns = Turn.objects.select_related("conversation")
    # A is the earlier turn, whatever order the list's checkboxes sent them in.
    a, b = sorted((get_object_or_404(turns, pk=turn_id) for turn_id in ids),
                  key=lambda turn: (turn.started_at, turn.pk))  # fmt: skip
    rows = rows_of([a, b])
    context: dict[str, Any] = {
        "comparison": compare_turns(a, b),
        "row_a": rows[0],
        "row_b": rows[1],
    }
    return render_screen(request, template, context, partial="compare")


@staff_view(VIEW_TURNS)
def turn_report_download(request: HttpRequest, turn_id: str) -> HttpResponse:
    """The raw report JSON as a file."""
    turn = get_object_or_404(Turn, pk=turn_id)
    response = HttpResponse(
        json.dumps(current_redaction().value(turn.report), indent=2, sort_keys=True),
        content_type="application/json",
    )
    response["Content-Disposition"] = f'attachment; filename="turn-{turn.id}.json"'
    return response


@staff_view(VIEW_TURNS)
def turn_tool_download(request: HttpRequest, turn_id: str, call_id: str) -> HttpResponse:
    """One tool call's whole arguments and result (redacted), when the turn shows its text."""
    turn = get_object_or_404(Turn, pk=turn_id)
    payload = tool_payload(turn, call_id)
    if payload is None:
        raise Http404("no such tool call, or its content is not captured")
    response = HttpResponse(
        json.dumps(payload, indent=2, sort_keys=True, default=str), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="turn-{turn.id}-tool.json"'
    return response


@staff_view(VIEW_TURNS)
def turn_export(request: HttpRequest, fmt: str) -> StreamingHttpResponse:
    """Every turn the list's filters select, as CSV or JSON Lines."""
    turns = filtered_turns(TurnFilterForm(request.GET))
    if fmt == "csv":
        return csv_response("turns.csv", EXPORT_COLUMNS, export_rows(turns, with_report=False))
    return jsonl_response("turns.jsonl", export_rows(turns, with_report=True))
