"""Audit: filters, payload search, keyset pages, JSON detail, exports; indexed at 100k rows."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatomon.django.models import AuditEvent

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, tzinfo=UTC)
TYPES = ("message_received", "tool_called", "assistant_message", "turn_finished")


def seed(count: int) -> None:
    AuditEvent.objects.bulk_create(
        (
            AuditEvent(
                created_at=T0 + timedelta(seconds=i),
                type=TYPES[i % 4],
                actor=f"user:{100 + i % 7}",
                conversation=f"conv-{i % 50}",
                turn=f"turn-{i // 4}",
                payload={"n": i, "text": "needle" if i % 1000 == 0 else "hay"},
            )
            for i in range(count)
        ),
        batch_size=5000,
    )


def event_numbers(response: Any) -> list[int]:
    html = response.content.decode()
    return [int(n) for n in re.findall(r"&quot;n&quot;: (\d+)", html)]


def test_filters_and_search(staff_client):
    seed(200)
    bob = User.objects.create_user("bob")
    AuditEvent.objects.create(
        created_at=T0, type="error", actor=f"user:{bob.pk}", payload={"n": 999}
    )
    assert len(event_numbers(staff_client.get("/console/audit/?type=tool_called"))) == 50
    assert event_numbers(staff_client.get("/console/audit/?actor=bob")) == [999]
    assert event_numbers(staff_client.get("/console/audit/?q=needle")) == [0]
    assert set(
        event_numbers(staff_client.get("/console/audit/?conversation=conv-3&type=turn_finished"))
    ) == {3, 103}
    assert event_numbers(staff_client.get("/console/audit/?turn=turn-2")) == [11, 10, 9, 8]
    since = (T0 + timedelta(seconds=195)).strftime("%Y-%m-%dT%H:%M:%S")
    assert event_numbers(staff_client.get(f"/console/audit/?since={since}")) == [
        199,
        198,
        197,
        196,
        195,
    ]


def test_keyset_pages_walk_the_whole_trail_newest_first(staff_client, htmx_client):
    seed(120)
    seen, url = [], "/console/audit/?type="
    while url:
        response = htmx_client.get(url)
        assert b"<html" not in response.content and "HX-Request" in response["Vary"]
        seen += event_numbers(response)
        marker = 'rel="next" href="'
        html = response.content.decode()
        url = (
            ("/console/audit/" + html.split(marker)[1].split('"')[0].replace("&amp;", "&"))
            if marker in html
            else ""
        )
    assert seen == list(range(119, -1, -1))


def test_detail_and_exports(staff_client):
    seed(10)
    event = AuditEvent.objects.get(payload__n=3)
    html = staff_client.get(f"/console/audit/{event.pk}/").content.decode()
    assert "Payload (sanitized)" in html and "&quot;n&quot;: 3" in html
    rows = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    staff_client.get("/console/audit/export.csv?type=tool_called").streaming_content
                ).decode()
            )
        )
    )
    assert sorted(json.loads(r["payload"])["n"] for r in rows) == [1, 5, 9]
    lines = (
        b"".join(staff_client.get("/console/audit/export.jsonl?q=needle").streaming_content)
        .decode()
        .splitlines()
    )
    assert [json.loads(line)["payload"]["n"] for line in lines] == [0]


def explain(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE chatomon_auditevent")
            cursor.execute("EXPLAIN " + sql)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
        return "\n".join(" ".join(str(c) for c in row) for row in cursor.fetchall())


def test_pages_stay_one_indexed_query_at_100k_events(staff_client):
    seed(100_000)
    staff_client.get("/console/audit/")  # warm the session and permission caches
    for query in ("", "type=tool_called", "actor=user:103", "conversation=conv-7", "turn=turn-9"):
        with CaptureQueriesContext(connection) as first:
            response = staff_client.get(f"/console/audit/?{query}")
        pages = [first]
        html = response.content.decode()
        if 'rel="next" href="' in html:
            nxt = html.split('rel="next" href="')[1].split('"')[0].replace("&amp;", "&")
            with CaptureQueriesContext(connection) as deeper:
                staff_client.get(f"/console/audit/{nxt}")
            pages.append(deeper)
        for page in pages:
            audit = [q["sql"] for q in page.captured_queries if "chatomon_auditevent" in q["sql"]]
            assert len(audit) == 1, query
            assert "COUNT(" not in audit[0].upper() and "OFFSET" not in audit[0].upper()
            # Session, user, permissions ..., the page, one naming the page's actors and one
            # for the viewer's saved views.
            assert len(page.captured_queries) == len(first.captured_queries) <= 8
            plan = explain(audit[0])
            if connection.vendor == "postgresql":
                assert "Index Scan" in plan or "Index Only Scan" in plan, (query, plan)
            else:
                assert "USING INDEX chatomon_audit_" in plan, (query, plan)
                assert "TEMP B-TREE" not in plan, (query, plan)


def test_actors_are_shown_by_display_name(staff_client):
    ada = User.objects.create_user("ada", first_name="Ada", last_name="Lovelace")
    for n in range(3):
        AuditEvent.objects.create(
            created_at=T0 + timedelta(seconds=n), type="message_received",
            actor=f"user:{ada.pk}", payload={},
        )  # fmt: skip
    AuditEvent.objects.create(created_at=T0, type="message_received", actor="user:999", payload={})
    html = staff_client.get("/console/audit/").content.decode()
    assert html.count(">Ada Lovelace</a>") == 3 and ">user #999</a>" in html
    assert f'href="?actor=user%3A{ada.pk}"' in html  # the filter link keeps the stored actor
    detail = AuditEvent.objects.filter(actor=f"user:{ada.pk}").first()
    assert "Ada Lovelace" in staff_client.get(f"/console/audit/{detail.pk}/").content.decode()
