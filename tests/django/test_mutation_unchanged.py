"""Through Django: a write that would change nothing is a tool result, not a confirmation."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import AsyncClient

from chatomon.django.models import PendingConfirmation, Turn
from tests.asgi_app.fixtures import make_part, make_user, sse_events, types
from tests.testapp.models import Part

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]


@pytest.mark.parametrize("path", ["/chat/", "/chat/stream/"])
async def test_a_staff_approval_of_the_cost_a_part_has_asks_nobody(path: str) -> None:
    client = AsyncClient()
    await client.aforce_login(await make_user())
    part = await make_part()  # unit cost 1.00
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "1"}}'
    response = await client.post(path, json.dumps({"text": text}), content_type="application/json")
    assert response.status_code == 200
    if path == "/chat/":
        events = response.json()["events"]
    else:
        events = sse_events(b"".join([chunk async for chunk in response.streaming_content]))
    assert types(events) == ["tool_call", "tool_result", "text_chunk", "done"]
    result = events[1]["result"]
    assert result["status"] == "unchanged"
    assert result["reason"] == f"PartManager #{part} already has unit_cost 1.00"
    # The rules provider repeats (the start of) the tool result it answers from.
    assert "already has unit_cost 1.00" in events[-1]["reply"]
    assert not await PendingConfirmation.objects.aexists()
    turn = await Turn.objects.aget(pk=events[-1]["turn_id"])
    assert turn.status == "completed"
    assert turn.report is not None and turn.report["pauses"] == []
    assert (await Part.objects.aget(pk=part)).unit_cost == Decimal("1.00")
