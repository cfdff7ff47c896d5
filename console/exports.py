"""CSV and JSON Lines downloads, streamed row by row so a large export needs little memory."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse

__all__ = ["csv_response", "jsonl_response"]


class _Echo:
    """A file-like object whose write returns the line, for csv.writer."""

    def write(self, value: str) -> str:
        return value


def _csv_lines(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow([_cell(row.get(column)) for column in columns])


def _cell(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, cls=DjangoJSONEncoder, sort_keys=True)
    return "" if value is None else value


def _attachment(response: StreamingHttpResponse, filename: str) -> StreamingHttpResponse:
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def csv_response(
    filename: str, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]
) -> StreamingHttpResponse:
    """A streamed CSV download with a header row of `columns`."""
    response = StreamingHttpResponse(_csv_lines(columns, rows), content_type="text/csv")
    return _attachment(response, filename)


def jsonl_response(filename: str, rows: Iterable[Mapping[str, Any]]) -> StreamingHttpResponse:
    """A streamed JSON Lines download: one JSON object per line."""
    lines = (json.dumps(row, cls=DjangoJSONEncoder, sort_keys=True) + "\n" for row in rows)
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    return _attachment(response, filename)
