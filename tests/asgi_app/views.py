"""Test-only helpers the server tests call over HTTP (never part of the library).

- `GET test/csrf/`: sets the CSRF cookie, returns the token;
- `POST test/login/` `{"username", "staff"?}`: creates the user if needed and logs in;
- `POST test/logout/`: logs the session's user out (Django's `logout()`);
- `POST test/staff/decide/` `{"confirmation_id", "confirmed"}`: a staff decision, as the
  console makes it, answered with the envelope of the resumed turn;
- `GET test/turns/`: the ten latest turns, newest first, with their status;
- `POST test/seed/`: creates a part, returns its id;
- `POST test/ping/`: an async view answering `{}` behind the project's middleware (the
  transport benchmark's floor: what any request costs before chat does anything).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model, login, logout
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie

from chatomon.data.actor import SimpleActor
from chatomon.django.service import chat_service
from chatomon.django.transports.admission import collect
from chatomon.django.transports.http import envelope


@ensure_csrf_cookie
def csrf_token(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"token": get_token(request)})


@csrf_exempt
def log_in(request: HttpRequest) -> HttpResponse:
    body: dict[str, Any] = json.loads(request.body)
    user, _ = get_user_model().objects.get_or_create(
        username=body["username"], defaults={"is_staff": bool(body.get("staff"))}
    )
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return JsonResponse({"id": user.pk})


@csrf_exempt
def log_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    return JsonResponse({})


@csrf_exempt
async def staff_decide(request: HttpRequest) -> HttpResponse:
    body: dict[str, Any] = json.loads(request.body)
    staff = SimpleActor(id=0, is_authenticated=True, is_staff=True)
    events = chat_service().resolve_confirmation(
        staff, body["confirmation_id"], bool(body["confirmed"]), decided_by="staff:tester"
    )
    return JsonResponse(envelope(await collect(events)))


async def recent_turns(request: HttpRequest) -> HttpResponse:
    turns = await chat_service().store.list_turns(limit=10)
    return JsonResponse({"turns": [{"id": t.id, "status": t.status} for t in turns]})


@csrf_exempt
def seed_part(request: HttpRequest) -> HttpResponse:
    """Create a part to change (staff approvals of updatePartCost need one)."""
    from django.utils import timezone  # noqa: PLC0415

    from tests.testapp.models import Part  # noqa: PLC0415

    part = Part.objects.create(name="Seeded", unit_cost="1.00", created_at=timezone.now())
    return JsonResponse({"id": part.pk})


async def ping(request: HttpRequest) -> HttpResponse:
    """The floor: an empty JSON object, nothing read or written."""
    return JsonResponse({})
