"""Turns as rows: what the list shows and what the exports write, from one definition.

Exported reports pass the redaction rule (`chatomon.django.audit.rule`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import QuerySet

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import Turn

from .owners import owner_labels

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


def rows_of(turns: Iterable[Turn]) -> list[dict[str, Any]]:
    """Rows of a page of turns, naming their owners in one query."""
    turns = list(turns)
    owners = owner_labels(t.conversation for t in turns)
    return [{**turn_row(t, owners), "turn": t} for t in turns]


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
    rule = current_redaction()
    for turn in turns:
        row = turn_row(turn, owners)
        if with_report:
            row["report"] = rule.value(turn.report)
        yield row
