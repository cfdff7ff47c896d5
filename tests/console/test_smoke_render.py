from __future__ import annotations

import pytest

from tests.console.conftest import make_confirmation, make_turn, orbital

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/console/",
        "/console/turns/",
        "/console/escalations/",
        "/console/approvals/",
        "/console/approvals/history/",
        "/console/audit/",
        "/console/chat/",
    ],
)
def test_pages_render(staff_client, url):
    make_turn(escalated=True, input=[orbital("pii", "block")], final_action="blocked")
    make_confirmation()
    response = staff_client.get(url)
    assert response.status_code == 200, response.content[:2000]
