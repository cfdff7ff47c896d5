"""Turns: the TurnReport browser — filtered list, detail, report download and exports.

A report is shown, downloaded and exported as the redaction rule leaves it (reports
written by chatomon already are; this also covers rows from older versions or imports).
"""

from __future__ import annotations

import json

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import Turn

from ..access import VIEW_TURNS, staff_view
from ..exports import csv_response, jsonl_response
from ..rendering import render_screen, without_empty_filters
from ..timeline import waterfall
from ..turn_context import content_visible, turn_context
from ..turn_filters import TurnFilterForm, filtered_turns
from ..turn_rows import EXPORT_COLUMNS, export_rows, rows_of
from ..turn_waits import turn_waits

__all__ = ["turn_detail", "turn_export", "turn_list", "turn_report_download"]

PAGE_SIZE = 25


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
    """One turn: its context, chains, attempts, waits, waterfall, usage and raw report."""
    turn = get_object_or_404(Turn.objects.select_related("conversation"), pk=turn_id)
    report = current_redaction().value(turn.report or {})
    context = {
        "turn": turn,
        "row": rows_of([turn])[0],
        "report": report,
        "context_items": turn_context(turn),
        "content_visible": content_visible(turn),
        "waterfall": waterfall(report),
        "waits": turn_waits(turn, report),
    }
    return render_screen(request, "chatomon_console/turns/detail.html", context, partial="detail")


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
def turn_export(request: HttpRequest, fmt: str) -> StreamingHttpResponse:
    """Every turn the list's filters select, as CSV or JSON Lines."""
    turns = filtered_turns(TurnFilterForm(request.GET))
    if fmt == "csv":
        return csv_response("turns.csv", EXPORT_COLUMNS, export_rows(turns, with_report=False))
    return jsonl_response("turns.jsonl", export_rows(turns, with_report=True))
