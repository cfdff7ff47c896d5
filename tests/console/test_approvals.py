"""Approvals: queue, before→after previews, expiry, one-winner decisions, history, live push."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth.models import User
from django.test import AsyncClient

from chatomon.django.models import PendingConfirmation
from tests.console.conftest import conversation, login, make_confirmation, make_user
from tests.console.services import Harness

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def harness(monkeypatch):
    harness = Harness()
    monkeypatch.setattr("chatomon.console.decisions.chat_service", harness.build)
    return harness


def test_queue_shows_preview_links_and_which_items_staff_may_decide(staff_client):
    bob = User.objects.create_user("bob")
    staff_item = make_confirmation(conversation(str(bob.pk)))
    client_item = make_confirmation(approver="client", mutation="assignPart")
    html = staff_client.get("/console/approvals/").content.decode()
    assert "<del>Steel</del>" in html and "<ins>Iron</ins>" in html
    assert "Asked by bob" in html and f"/console/turns/{staff_item.turn_id}/" in html
    assert f"/console/approvals/{staff_item.id}/decide/" in html
    assert f"/console/approvals/{client_item.id}/decide/" not in html  # read-only
    assert "client confirmation · read-only" in html


def test_expired_items_are_greyed_with_disabled_buttons_and_cannot_be_decided(
    harness, staff_client
):
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    PendingConfirmation.objects.filter(pk=pending["id"]).update(
        expires_at=datetime.now(UTC) - timedelta(seconds=1)
    )
    html = staff_client.get("/console/approvals/").content.decode()
    card = html[html.index(f'id="cc-approval-{pending["id"]}"') - 80 :]
    card = card[: card.index("</li>")]
    assert "cc-approval--expired" in card and "<strong>expired</strong>" in card
    assert card.count("disabled>") == 3  # reason, approve, reject
    response = staff_client.post(
        f"/console/approvals/{pending['id']}/decide/", {"decision": "approve"},
        headers={"HX-Request": "true"},
    )  # fmt: skip
    assert response.status_code == 409 and harness.log == []
    # The first touch resolved it as timed out; it now lives in the history.
    row = PendingConfirmation.objects.get(pk=pending["id"])
    assert (row.status, row.reason) == ("expired", "confirmation_timed_out")
    history = staff_client.get("/console/approvals/history/?status=expired").content.decode()
    assert f'id="cc-approval-{pending["id"]}"' in history


def test_approving_runs_the_mutation_once_and_a_second_decider_gets_409(harness):
    bob = User.objects.create_user("bob")
    pending = harness.suspended_turn(bob)
    alice, carol = login(make_user("alice")), login(make_user("carol"))
    url = f"/console/approvals/{pending['id']}/decide/"
    first = alice.post(url, {"decision": "approve"}, headers={"HX-Request": "true"})
    assert first.status_code == 200
    assert harness.log == [{"material_id": 1, "name": "Iron"}]
    second = carol.post(
        url, {"decision": "reject", "reason": "late"}, headers={"HX-Request": "true"}
    )
    assert second.status_code == 409
    text = second.content.decode()
    assert "Already approved by alice at" in text and b"<html" not in second.content
    assert harness.log == [{"material_id": 1, "name": "Iron"}]  # never a second execution
    row = PendingConfirmation.objects.get(pk=pending["id"])
    assert (row.status, row.decided_by) == ("approved", "alice")


def test_a_plain_form_decision_redirects_and_a_lost_one_is_a_full_409_page(harness):
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    url = f"/console/approvals/{pending['id']}/decide/"
    alice = login(make_user("alice"))
    assert (
        alice.post(url, {"decision": "reject", "reason": "wrong part"})["Location"]
        == "/console/approvals/"
    )
    row = PendingConfirmation.objects.get(pk=pending["id"])
    assert (row.status, row.reason) == ("rejected", "wrong part") and harness.log == []
    again = alice.post(url, {"decision": "approve"})
    assert again.status_code == 409 and b"<html" in again.content
    assert "Already rejected by alice" in again.content.decode()


def test_two_concurrent_decisions_have_one_winner(harness):
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    url = f"/console/approvals/{pending['id']}/decide/"
    deciders = [make_user(name) for name in ("alice", "carol")]

    async def decide(user: User) -> Any:
        client = AsyncClient()
        await client.aforce_login(user)
        return await client.post(url, {"decision": "approve"}, headers={"HX-Request": "true"})

    async def both() -> list[Any]:
        return await asyncio.gather(*(decide(u) for u in deciders))

    statuses = sorted(r.status_code for r in asyncio.run(both()))
    assert statuses == [200, 409] and len(harness.log) == 1


def test_client_confirmations_cannot_be_decided_by_staff(staff_client):
    item = make_confirmation(approver="client")
    response = staff_client.post(
        f"/console/approvals/{item.id}/decide/",
        {"decision": "approve"},
        headers={"HX-Request": "true"},
    )
    assert (
        response.status_code == 409
        and "The user decides this confirmation" in response.content.decode()
    )
    assert PendingConfirmation.objects.get(pk=item.id).status == "pending"


def test_history_filters_by_status_decider_and_time(staff_client):
    now = datetime.now(UTC)
    made = {
        "a": make_confirmation(status="approved", decided_by="alice", decided_at=now, mutation="a"),
        "b": make_confirmation(
            status="rejected", decided_by="carol", decided_at=now - timedelta(days=3), mutation="b"
        ),
        "c": make_confirmation(status="expired", decided_at=now, mutation="c"),
        "p": make_confirmation(mutation="p"),
    }  # fmt: skip

    def shown(query: str) -> set[str]:
        html = staff_client.get(f"/console/approvals/history/?{query}").content.decode()
        return {k for k, c in made.items() if f'id="cc-approval-{c.id}"' in html}

    assert shown("") == {"a", "b", "c"}
    assert shown("status=rejected") == {"b"}
    assert shown("decided_by=alice") == {"a"}
    assert shown(f"date_to={(now - timedelta(days=2)).date()}") == {"b"}
    part = staff_client.get(
        "/console/approvals/history/?status=approved", headers={"HX-Request": "true"}
    )
    assert b"<html" not in part.content and b'id="cc-history-results"' in part.content


async def test_the_live_stream_pushes_the_queue_and_badge_out_of_band():
    user = await sync_to_async(make_user)("alice")
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get("/console/live/")
    assert response["Content-Type"] == "text/event-stream"
    chunks = aiter(response.streaming_content)
    assert b": connected" in await anext(chunks)
    await sync_to_async(make_confirmation)(mutation="updatePartCost")
    await get_channel_layer().group_send(
        "chatomon_console.approvals", {"type": "approvals.changed"}
    )
    event = (await asyncio.wait_for(anext(chunks), 1.0)).decode()
    assert event.startswith("event: approvals\n")
    assert (
        'id="cc-pending-badge"' in event and 'hx-swap-oob="true"' in event and "1 pending" in event
    )
    assert 'id="cc-approval-queue"' in event and "updatePartCost" in event
    await chunks.aclose()


async def test_a_decision_announces_itself_to_every_open_console(harness):
    bob = await sync_to_async(User.objects.create_user)("bob")
    pending = await sync_to_async(harness.suspended_turn)(bob)
    watcher = AsyncClient()
    await watcher.aforce_login(await sync_to_async(make_user)("watcher"))
    chunks = aiter((await watcher.get("/console/live/")).streaming_content)
    await anext(chunks)
    decider = AsyncClient()
    await decider.aforce_login(await sync_to_async(make_user)("alice"))
    await decider.post(f"/console/approvals/{pending['id']}/decide/", {"decision": "approve"})
    event = (await asyncio.wait_for(anext(chunks), 1.0)).decode()
    assert "0 pending" in event and pending["id"] not in event
    await chunks.aclose()


async def test_confirmations_from_elsewhere_appear_within_a_second_without_a_message():
    user = await sync_to_async(make_user)("alice")
    client = AsyncClient()
    await client.aforce_login(user)
    chunks = aiter((await client.get("/console/live/")).streaming_content)
    await anext(chunks)
    await sync_to_async(make_confirmation)(mutation="createPart")  # no group message sent
    event = (await asyncio.wait_for(anext(chunks), 2.5)).decode()
    assert "createPart" in event and "1 pending" in event
    await chunks.aclose()
