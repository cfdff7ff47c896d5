"""Chat: staff talk to the assistant through the same ChatService as end users.

Their conversations are their own (owner = the staff user). Sending posts the message;
console.js asks for ``text/event-stream`` and renders the events as they stream (text,
tool cards), while a plain form post runs the turn and redirects back. A streamed
confirmation's card is drawn here, as the page draws it (`chat_card`: one preview
renderer, `chatomon.preview`), and fetched by console.js when the event arrives.

While the `enabled` setting is False chat is off for staff too: the page says so (200, it
is the console's own page) and sending or confirming runs nothing (503 with that notice).

Every message and confirmation counts against the staff member's `console_requests`
budget (`rate_limit`), apart from their chat elsewhere; their turns spend their own token
budgets. Over it, nothing runs: 429 with Retry-After, as the `rate_limited` event for
console.js's stream, else the page with the notice.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from asgiref.sync import sync_to_async
from django import forms
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from chatomon.chat.pipeline.wire import PENDING_MESSAGE
from chatomon.django.service import chat_service, owner_for
from chatomon.django.settings import chat_settings
from chatomon.django.transports.admission import console_scope, limit_refusal, limiter_for
from chatomon.django.transports.confirm import wants_event_stream
from chatomon.django.transports.ratelimit import TokenBudget
from chatomon.django.transports.sse import event_stream_response, refusal_response
from chatomon.public_errors import PLANNED_PUBLIC_MESSAGES

from ..access import USE_CHAT, staff_view
from ..chat_history import (
    chat_entries,
    confirmation_card,
    conversations_of,
    owned_conversation,
    pending_confirmations,
)
from ..chat_stream import drain
from ..rendering import render_screen

__all__ = ["chat_card", "chat_confirm", "chat_home", "chat_send"]

ERRORS = {
    "rate_limited": "Too many messages right now: try again in a moment.",
    "conversation_not_found": "That conversation does not exist or is not yours.",
    "confirmation_unavailable": "That confirmation was already decided or has expired.",
    "bad_event": "That confirmation does not exist or is not yours to decide.",
    "confirmation_pending": PENDING_MESSAGE,
    # A failed turn's stable reasons show their public messages.
    **{code: PLANNED_PUBLIC_MESSAGES[code] for code in ("provider_failed", "deadline_exceeded")},
}


class MessageForm(forms.Form):
    """One chat message, optionally continuing a conversation."""

    text = forms.CharField(max_length=8000, label="Message", widget=forms.Textarea)
    conversation_id = forms.UUIDField(required=False, widget=forms.HiddenInput)


class ConfirmForm(forms.Form):
    """The staff member's own answer to a client confirmation."""

    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])


def _page_context(user: Any, conversation_id: UUID | None, error: str | None) -> dict[str, Any]:
    conversation = owned_conversation(user, conversation_id) if conversation_id else None
    if conversation_id and conversation is None:
        raise Http404("no such conversation")
    return {
        "conversations": conversations_of(user),
        "conversation": conversation,
        "entries": chat_entries(conversation) if conversation else [],
        "confirmations": pending_confirmations(conversation) if conversation else [],
        "form": MessageForm(initial={"conversation_id": conversation_id}),
        "error": ERRORS.get(error or "", "The turn failed." if error else None),
    }


def _disabled(request: HttpRequest, status: int) -> HttpResponse:
    """The notice that chat is turned off, with how to turn it on."""
    return render_screen(
        request, "chatomon_console/chat_disabled.html", {}, partial="notice", status=status
    )


@staff_view(USE_CHAT)
def chat_home(request: HttpRequest, conversation_id: UUID | None = None) -> HttpResponse:
    """The conversation list and one conversation (or a new one)."""
    if not chat_settings().enabled:
        return _disabled(request, 200)
    context = _page_context(request.user, conversation_id, request.GET.get("error"))
    return render_screen(request, "chatomon_console/chat.html", context, partial="conversation")


@staff_view(USE_CHAT)
def chat_card(request: HttpRequest, confirmation_id: UUID) -> HttpResponse:
    """One confirmation of the staff member's own conversation as its card (404 otherwise)."""
    card = confirmation_card(request.user, confirmation_id)
    if card is None:
        raise Http404("no such confirmation in your conversations")
    return render(request, "chatomon_console/chat_confirmation.html", {"c": card})


def _back(conversation_id: str | None, error: str | None) -> HttpResponse:
    url = (
        reverse("chatomon_console:chat_conversation", args=[conversation_id])
        if conversation_id
        else reverse("chatomon_console:chat")
    )
    return redirect(f"{url}?{urlencode({'error': error})}" if error else url)


async def _over_budget(
    request: HttpRequest, user: Any, conversation_id: UUID | str | None
) -> HttpResponseBase | None:
    """Count the request against the user's console budget; the refusal when it is spent."""
    refusal = limit_refusal(await limiter_for(chat_settings()).hit(console_scope(user)))
    if refusal is None:
        return None
    seconds = refusal["retry_after_seconds"]
    response: HttpResponseBase
    if wants_event_stream(request):
        response = refusal_response(429, refusal)
    else:
        response = await sync_to_async(_refused_page)(request, user, conversation_id, seconds)
    response["Retry-After"] = str(seconds)
    return response


def _refused_page(
    request: HttpRequest, user: Any, conversation_id: UUID | str | None, seconds: int
) -> HttpResponse:
    try:
        context = _page_context(user, UUID(str(conversation_id)), None)
    except (ValueError, Http404):  # none, or not theirs: the page of a new conversation
        context = _page_context(user, None, None)
    context["error"] = f"Too many messages right now: try again in {seconds} seconds."
    return render_screen(
        request, "chatomon_console/chat.html", context, partial="conversation", status=429
    )


def _token_budget(user: Any) -> TokenBudget:
    """The user's own token budgets (those their chat anywhere spends)."""
    return limiter_for(chat_settings()).budget(console_scope(user))


@require_POST
@staff_view(USE_CHAT)
async def chat_send(request: HttpRequest) -> HttpResponseBase:
    """Run one turn: streamed as SSE to console.js, or to the end for a plain form."""
    if not chat_settings().enabled:
        return await sync_to_async(_disabled)(request, 503)
    form = MessageForm(request.POST)
    if not form.is_valid():
        return HttpResponse("A message is needed (at most 8000 characters).", status=422)
    user = await request.auser()
    conversation_id = form.cleaned_data["conversation_id"]
    refused = await _over_budget(request, user, conversation_id)
    if refused is not None:
        return refused
    events = chat_service().run_turn(
        user,
        form.cleaned_data["text"],
        str(conversation_id) if conversation_id else None,
        owner=owner_for(user, None),
        budget=_token_budget(user),
        new_conversation=not conversation_id,  # the console's "New chat" is explicit
    )
    if wants_event_stream(request):
        return event_stream_response(events)
    finished, error = await drain(events)
    if error == "conversation_not_found":
        # Gone, or never theirs: no conversation to go back to, so a new one with the notice.
        return await sync_to_async(_back)(None, error)
    return await sync_to_async(_back)(
        finished or (str(conversation_id) if conversation_id else None), error
    )


@require_POST
@staff_view(USE_CHAT)
async def chat_confirm(request: HttpRequest, confirmation_id: UUID) -> HttpResponseBase:
    """Answer a confirmation of the staff member's own turn and resume it."""
    if not chat_settings().enabled:
        return await sync_to_async(_disabled)(request, 503)
    form = ConfirmForm(request.POST)
    if not form.is_valid():
        return HttpResponse("Approve or reject.", status=422)
    user = await request.auser()
    refused = await _over_budget(request, user, request.POST.get("conversation_id"))
    if refused is not None:
        return refused
    events = chat_service().resolve_confirmation(
        user,
        str(confirmation_id),
        form.cleaned_data["decision"] == "approve",
        owner=owner_for(user, None),
        budget=_token_budget(user),
    )
    if wants_event_stream(request):
        return event_stream_response(events)
    finished, error = await drain(events)
    return await sync_to_async(_back)(finished or request.POST.get("conversation_id"), error)
