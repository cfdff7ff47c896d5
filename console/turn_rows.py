"""Turns as rows: what the list shows and what the exports write, from one definition.

Exported reports pass the redaction rule (`chatomon.django.audit.rule`). A turn waiting
for a decision has no report yet: its atom and its usage so far come from the snapshot
stored with its pending confirmation. The list previews what was asked and answered
within ``capture_content`` (`snippets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import QuerySet

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import PendingConfirmation, Turn

from .conf import console_settings
from .owners import owner_labels
from .snippets import report_snippets
from .usage_costs import turn_cost

__all__ = ["EXPORT_COLUMNS", "export_rows", "rows_of", "turn_row"]

EXPORT_COLUMNS = (
    "turn_id", "conversation_id", "owner", "status", "started_at", "finished_at",
    "atom_name", "final_action", "escalated", "duration_ms", "input_tokens",
    "output_tokens", "error_type", "capture_content",
)  # fmt: skip
CHUNK = 500


def turn_row(turn: Turn, owners: dict[str, str]) -> dict[str, Any]:
    """The fields of one turn the list and the exports show."""
    report = turn.report or {}
    return {
        "turn_id": turn.id,
        "conversation_id": str(turn.conversation_id),
        "owner": owners.get(str(turn.conversation_id), ""),
        "status": turn.status,
        "started_at": turn.started_at,
        "finished_at": turn.finished_at,
        "atom_name": report.get("atom_name"),
        "final_action": turn.final_action,
        "escalated": turn.escalated,
        "duration_ms": report.get("duration_ms"),
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "error_type": report.get("error_type"),
        "capture_content": report.get("capture_content"),
    }


def waiting_details(turns: Iterable[Turn]) -> dict[str, dict[str, Any]]:
    """Turn id → atom_name, input_tokens, output_tokens of turns that have no report yet.

    Read from the snapshot each suspended turn stored with its confirmation, in one query.
    """
    ids = [t.id for t in turns if not (t.report or {}).get("atom_name")]
    if not ids:
        return {}
    details: dict[str, dict[str, Any]] = {}
    snapshots = (
        PendingConfirmation.objects.filter(turn_id__in=ids)
        .order_by("created_at")  # the latest snapshot of a turn wins
        .values_list("turn_id", "state__snapshot__atom", "state__snapshot__usage")
    )
    for turn_id, atom, stored_usage in snapshots:
        usage = stored_usage if isinstance(stored_usage, dict) else {}
        details[turn_id] = {
            "atom_name": atom if isinstance(atom, str) else None,
            "input_tokens": int(usage.get("input_tokens") or 0),
            "output_tokens": int(usage.get("output_tokens") or 0),
        }
    return details


def _filled(row: dict[str, Any], waiting: dict[str, Any] | None) -> dict[str, Any]:
    if waiting is None:
        return row
    return {
        **row,
        "atom_name": row["atom_name"] or waiting["atom_name"],
        "input_tokens": row["input_tokens"] or waiting["input_tokens"],
        "output_tokens": row["output_tokens"] or waiting["output_tokens"],
    }


def rows_of(turns: Iterable[Turn]) -> list[dict[str, Any]]:
    """Rows of a page of turns with their previews, owners and waiting turns in one query each.

    Each row also names the models of the turn's rounds and its cost (`usage_costs`).
    """
    turns = list(turns)
    owners = owner_labels(t.conversation for t in turns)
    waiting = waiting_details(turns)
    prices = console_settings()
    rows = []
    for turn in turns:
        asked, answered = report_snippets(turn.report or {})
        row = _filled(turn_row(turn, owners), waiting.get(turn.id))
        tokens = (row["input_tokens"], row["output_tokens"])
        cost = turn_cost(turn.report or {}, tokens, prices.prices, prices.currency)
        models = ", ".join(sorted({r.model for r in cost.rounds}))
        rows.append({**row, "turn": turn, "asked": asked, "answered": answered,
                     "models": models, "cost": cost})  # fmt: skip
    return rows


def export_rows(turns: QuerySet[Turn], *, with_report: bool) -> Iterator[dict[str, Any]]:
    """Every turn of the queryset as a row, in chunks (and with the report for JSONL)."""
    chunk: list[Turn] = []
    for turn in turns.iterator(chunk_size=CHUNK):
        chunk.append(turn)
        if len(chunk) == CHUNK:
            yield from _export_chunk(chunk, with_report)
            chunk = []
    yield from _export_chunk(chunk, with_report)


def _export_chunk(turns: list[Turn], with_report: bool) -> Iterator[dict[str, Any]]:
    owners = owner_labels(t.conversation for t in turns)
    waiting = waiting_details(turns)
    rule = current_redaction()
    for turn in turns:
        row = _filled(turn_row(turn, owners), waiting.get(turn.id))
        if with_report:
            row["report"] = rule.value(turn.report)
        yield row
