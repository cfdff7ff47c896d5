"""Malformed ids in console URLs answer 404 (on PostgreSQL a NUL or an out-of-range
integer reached the query and answered 500), and well-formed ones still resolve."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from .conftest import make_confirmation, make_turn

MALFORMED = [
    ("GET", "/console/turns/%00/"),
    ("GET", "/console/turns/a%00b/report.json"),
    ("GET", f"/console/turns/{'a' * 65}/"),
    ("GET", "/console/turns/%C3%A9t%C3%A9/"),
    ("GET", "/console/turns/%F0%9F%92%A5/"),
    ("GET", "/console/turns/compare/?t=%00&t=a"),
    ("GET", f"/console/turns/compare/?t=a&t={'a' * 65}"),
    ("POST", "/console/escalations/%00/review/"),
    ("GET", "/console/audit/abc/"),
    ("GET", "/console/audit/-1/"),
    ("GET", "/console/audit/%C2%B2/"),
    ("GET", "/console/audit/9223372036854775808/"),
    ("GET", "/console/audit/99999999999999999999999/"),
    ("GET", "/console/chat/not-a-uuid/"),
    ("POST", "/console/views/9223372036854775808/delete/"),
    ("POST", "/console/chat/confirm/%00/"),
    ("POST", "/console/approvals/%00/decide/"),
]


@pytest.mark.parametrize(("method", "url"), MALFORMED)
def test_a_malformed_id_answers_404(staff_client: Client, method: str, url: str) -> None:
    assert staff_client.generic(method, url).status_code == 404


@pytest.mark.parametrize(
    "after",
    ["2026-02-30T00:00:00+00:00_1", "2026-01-01T00:00:00+00:00_²", "2026-01-01T00:00:00_1",
     f"2026-01-01T00:00:00+00:00_{2**63}"],
)  # fmt: skip
def test_a_malformed_audit_cursor_gives_the_first_page(staff_client: Client, after: str) -> None:
    assert staff_client.get("/console/audit/", {"after": after}).status_code == 200


def test_well_formed_ids_still_resolve(staff_client: Client) -> None:
    turn = make_turn()
    confirmation = make_confirmation()
    assert (
        staff_client.get(reverse("chatomon_console:turn_detail", args=[turn.id])).status_code == 200
    )
    assert staff_client.get(f"/console/turns/{turn.id}/report.json").status_code == 200
    assert staff_client.get("/console/audit/9223372036854775807/").status_code == 404
    assert (
        f"/console/turns/{confirmation.turn_id}/"
        in staff_client.get("/console/approvals/").content.decode()
    )
