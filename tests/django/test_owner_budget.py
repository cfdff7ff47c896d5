"""A turn someone else resumes spends the asker's token budget, not the decider's.

The reference: "Once a token budget is exhausted, the completed usage is recorded and the
next tool, confirmation write, summary, or provider round is rejected with rate_limited."
The budget is the asker's (the user, else the session): a staff decision or an expiry
resumes the turn on the asker's budget.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from chatomon.chat.store.records import Owner
from chatomon.data.actor import SimpleActor
from chatomon.django.service import chat_service
from chatomon.django.settings import chat_settings
from chatomon.django.transports.ratelimit import RateLimiter
from chatomon.schemas import TokenUsage
from tests.asgi_app.fixtures import configure, make_part, make_user
from tests.testapp.models import Part

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
STAFF = SimpleActor(id=0, is_authenticated=True, is_staff=True)


@pytest.mark.parametrize("resumed_by", ["staff", "expiry"])
async def test_a_resumed_turn_spends_the_askers_exhausted_budget(settings, resumed_by):
    configure(
        settings,
        rate_limit={"requests": 1000, "window_seconds": 3600, "tokens": 5},
        staff_approval_timeout_seconds=0.2,
    )
    user = await make_user()
    part = await make_part()
    owner = Owner.user(user.pk)
    limiter = RateLimiter(chat_settings())
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "7.00"}}'
    service = chat_service()
    events = [e async for e in service.run_turn(user, text, owner=owner)]
    waiting = events[-1]
    assert (waiting["type"], waiting["approver"]) == ("confirm_mutation", "staff")
    # The asker spends the rest of the budget meanwhile (another turn, elsewhere).
    await limiter.owner_budget(owner).record(TokenUsage(input_tokens=10, output_tokens=0))
    if resumed_by == "staff":
        stream = service.resolve_confirmation(STAFF, waiting["id"], True, decided_by="staff:c")
        resumed = [e async for e in stream]
    else:
        await asyncio.sleep(0.25)
        resumed = [e async for e in service.expire_confirmation(waiting["id"])]
    assert resumed[-1]["type"] == "error" and resumed[-1]["code"] == "rate_limited"
    cost = (await Part.objects.aget(pk=part)).unit_cost
    assert cost != Decimal("7.00")  # the write was refused, whoever decided
