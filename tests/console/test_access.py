"""Access: active staff only, per-area permissions, login redirects (HX-Redirect), CSRF."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.console.conftest import ALL_AREAS, login, make_confirmation, make_turn, make_user

pytestmark = pytest.mark.django_db

PAGES = {
    "/console/": "view_dashboard",
    "/console/chat/": "use_chat",
    "/console/approvals/": "view_approvals",
    "/console/approvals/history/": "view_approvals",
    "/console/turns/": "view_turns",
    "/console/turns/export.csv": "view_turns",
    "/console/turns/export.jsonl": "view_turns",
    "/console/escalations/": "view_turns",
    "/console/audit/": "view_audit",
    "/console/audit/export.csv": "view_audit",
}


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_visitors_are_sent_to_the_login_page(url):
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/console/login/?next=")


@pytest.mark.parametrize("url", ["/console/turns/", "/console/approvals/"])
def test_htmx_requests_get_hx_redirect_back_to_the_page_not_the_fragment(url):
    client = Client(
        headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/console/audit/?type=x"}
    )
    response = client.get(url)
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/console/login/?next=/console/audit/%3Ftype%3Dx"


@pytest.mark.parametrize("url", PAGES)
def test_users_who_are_not_active_staff_are_sent_to_the_login_page(url):
    member = make_user("member", staff=False)
    former = make_user("former")
    former.is_active = False
    former.save()
    for user in (member, former):
        response = login(user).get(url)
        assert response.status_code == 302, user
        assert response["Location"].startswith("/console/login/")


@pytest.mark.parametrize(("url", "permission"), PAGES.items())
def test_staff_without_the_areas_permission_get_403(url, permission):
    others = tuple(p for p in ALL_AREAS if p != permission)
    response = login(make_user("bob", perms=others)).get(url)
    assert response.status_code == 403
    assert f"chatomon_console.{permission}" in response.content.decode()


@pytest.mark.parametrize(("url", "permission"), PAGES.items())
def test_staff_with_only_that_permission_get_in(url, permission):
    response = login(make_user("carol", perms=(permission,))).get(url)
    assert response.status_code == 200


def test_a_superuser_needs_no_explicit_permission():
    admin = User.objects.create_superuser("root", password="pw")
    assert login(admin).get("/console/turns/").status_code == 200


def test_a_403_for_htmx_is_the_fragment_only():
    client = login(make_user("dave", perms=()))
    client.defaults["HTTP_HX_REQUEST"] = "true"
    response = client.get("/console/turns/")
    assert response.status_code == 403
    assert b"<html" not in response.content and b'id="cc-forbidden"' in response.content


def test_state_changes_need_the_csrf_token(staff):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    turn = make_turn(escalated=True)
    confirmation = make_confirmation()
    for url, data in [
        (f"/console/escalations/{turn.id}/review/", {"status": "resolved"}),
        (f"/console/approvals/{confirmation.id}/decide/", {"decision": "approve"}),
        ("/console/chat/send/", {"text": "hi"}),
        (f"/console/chat/confirm/{confirmation.id}/", {"decision": "approve"}),
    ]:
        assert client.post(url, data).status_code == 403, url


def test_reading_permissions_do_not_allow_deciding(staff):
    reader = login(make_user("erin", perms=("view_approvals",)))
    confirmation = make_confirmation()
    response = reader.post(f"/console/approvals/{confirmation.id}/decide/", {"decision": "approve"})
    assert response.status_code == 403
    page = reader.get("/console/approvals/").content.decode()
    assert "You may not decide approvals." in page and "disabled" in page


def test_the_login_page_renders_and_logs_staff_in(staff):
    client = Client()
    assert client.get("/console/login/").status_code == 200
    response = client.post(
        "/console/login/", {"username": "alice", "password": "pw", "next": "/console/turns/"}
    )
    assert response.status_code == 302 and response["Location"] == "/console/turns/"
