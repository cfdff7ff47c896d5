"""`POST chat/confirm/`: the end user's decision on a pending mutation confirmation.

Body: `{"confirmation_id": "<the confirm_mutation event's id>", "confirmed": true|false,
"conversation_id"?}`. The claim is atomic and scoped to the asking user (or anonymous
session). As the seed's codes say: a malformed body gives `bad_event` (HTTP 400); an id
that is malformed, unknown or someone else's gives `bad_event` too ("the confirmation ID is
invalid"; in the envelope, HTTP 200); a known one already decided or expired gives
`confirmation_unavailable` (HTTP 200). Both answers come from `ChatService`. A database
that cannot be reached gives `chat_error` with `reason: "store_unavailable"` (HTTP 503).

The winner's answer is `confirmation_resolved` followed by the resumed turn's events (the
mutation's tool_result, the reply, done; or another confirm_mutation). As the seed says, the
answer is the JSON envelope; beyond the seed, a request whose `Accept` names
`text/event-stream` gets the same events as an event stream (see `chatomon.django.transports.sse`).
That stream runs in a `chatomon.django.transports.relay.TurnFeed` like `POST chat/stream/`'s:
its frames carry `id:` lines (the turn's next stream: positions above every earlier one of
the turn, `relay.new_stream`), and a client that goes away detaches it and resumes it with
`GET chat/stream/resume/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from chatomon.django.settings import ChatSettings
from chatomon.django.transports.admission import collect
from chatomon.django.transports.http import ChatEndpoint, envelope, envelope_status
from chatomon.django.transports.relay import new_stream
from chatomon.django.transports.requests import parse_confirm
from chatomon.django.transports.sse import (
    HEARTBEAT_SECONDS,
    refusal_response,
    turn_stream_response,
)

__all__ = ["ChatConfirmView", "wants_event_stream"]


def wants_event_stream(request: HttpRequest) -> bool:
    """Whether the request's Accept header asks for `text/event-stream`."""
    return "text/event-stream" in request.headers.get("Accept", "")


class ChatConfirmView(ChatEndpoint):
    """`POST chat/confirm/`: resolve a confirmation; the envelope, or SSE on request."""

    body_error = "bad_event"
    heartbeat_seconds: float = HEARTBEAT_SECONDS

    def parse(self, payload: Mapping[str, Any], settings: ChatSettings) -> Any:
        """The decision in the body, or a BadRequest (`bad_event`)."""
        return parse_confirm(payload)

    def refuse(self, request: HttpRequest, status: int, event: dict[str, Any]) -> HttpResponse:
        """A refusal in the format the client asked for."""
        if wants_event_stream(request):
            return refusal_response(status, event)
        return super().refuse(request, status, event)

    async def post(self, request: HttpRequest) -> HttpResponseBase:
        """Claim the confirmation and run the resumed turn."""
        admitted = await self.admit(request)
        if isinstance(admitted, HttpResponseBase):
            return admitted
        events = admitted.resolve_confirmation()
        if wants_event_stream(request):
            return turn_stream_response(
                admitted, events, self.heartbeat_seconds, stream=new_stream()
            )
        collected = await collect(events)
        return JsonResponse(envelope(collected), status=envelope_status(collected))
