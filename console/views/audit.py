"""Audit: the AuditEvent browser — filters, payload search, JSON detail, exports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404

from chatomon.django.models import AuditEvent

from ..access import VIEW_AUDIT, staff_view
from ..audit_queries import AuditFilterForm, Cursor, audit_events, audit_page
from ..exports import csv_response, jsonl_response
from ..people import display_names
from ..rendering import render_screen, without_empty_filters

__all__ = ["audit_detail", "audit_export", "audit_list"]

COLUMNS = ("id", "created_at", "type", "actor", "conversation", "turn", "payload")


@staff_view(VIEW_AUDIT)
def audit_list(request: HttpRequest) -> HttpResponse:
    """One keyset page of the filtered events."""
    if (cleaned := without_empty_filters(request)) is not None:
        return cleaned
    form = AuditFilterForm(request.GET)
    page = audit_page(form, Cursor.decode(request.GET.get("after")))
    context = {
        "form": form,
        "page": page,
        "next_after": page.next_cursor.encode() if page.next_cursor else None,
        "first_page": not request.GET.get("after"),
        "people": display_names(event.actor for event in page.events),
    }
    return render_screen(request, "chatomon_console/audit/list.html", context, partial="results")


@staff_view(VIEW_AUDIT)
def audit_detail(request: HttpRequest, event_id: int) -> HttpResponse:
    """One event with its whole (sanitized) payload."""
    event = get_object_or_404(AuditEvent, pk=event_id)
    return render_screen(
        request, "chatomon_console/audit/detail.html", {"event": event}, partial="detail"
    )


def _rows(form: AuditFilterForm) -> Iterator[dict[str, Any]]:
    for event in audit_events(form).iterator(chunk_size=1000):
        yield {column: getattr(event, column) for column in COLUMNS}


@staff_view(VIEW_AUDIT)
def audit_export(request: HttpRequest, fmt: str) -> StreamingHttpResponse:
    """Every event the filters select, as CSV or JSON Lines."""
    rows = _rows(AuditFilterForm(request.GET))
    if fmt == "csv":
        return csv_response("audit.csv", COLUMNS, rows)
    return jsonl_response("audit.jsonl", rows)
