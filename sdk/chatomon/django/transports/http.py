"""`POST chat/`: one turn answered as the JSON envelope `{"events": [...], "answer": "..."}`.

`ChatEndpoint` is what the chat views share (`POST chat/`, `chat/stream/`, `chat/confirm/`;
`GET chat/stream/resume/` too, which asks with its URL instead of a body: its `payload`):
while the `enabled` setting is False (read on every request), Django's 404 for every
request, as if the routes were not mounted; else its method only (Django's 405 otherwise),
CSRF-protected (Django's 403), then, in this order and before any turn runs: the
`permission` setting (403 `permission_denied`), the body (413 `request_too_large`, 400
`bad_message` / `message_too_long` / `bad_event`), the owner (the user, else the session,
created now so its cookie goes out with the response), the chat service (a provider that
cannot be built: 500 `chat_error`, logged once), and one request counted against the rate
limit (429 `rate_limited`, with `Retry-After`). Refusals use the endpoint's own format,
never Django's HTML pages: a body that Django would parse as a form for the CSRF check
(`multipart/form-data`, refused before that check; an urlencoded one with too many fields
or too large) gets the body's code, and checks that fail on the database (reading the user
or the session) get `chat_error`, 503 with `reason: "store_unavailable"` (any other
failure of theirs: 500). A turn that ends with that reason (its store could not be
reached) is answered with 503 too (`envelope_status`).

The views are async views: under Django's `ASGIHandler` they run on the server's event
loop and iterate `ChatService.run_turn` there; under WSGI Django runs each on an event
loop of its own (`POST chat/` and `POST chat/confirm/` work there; streaming wants ASGI).
A streaming answer (SSE) is an async iterator the handler streams from the loop.

Plain HTTP cannot pause for the end user: a mutation in `confirm_mutations` ends the turn
with `confirmation_required_transport`. Staff approvals still pause (the envelope ends with
`confirm_mutation`, approver "staff"); the console resumes them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import wraps
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.db import InterfaceError, OperationalError, transaction
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
    RawPostDataException,
)
from django.views import View
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from chatomon.chat.pipeline.wire import (
    GENERIC_ERROR_MESSAGE,
    STORE_UNAVAILABLE_REASON,
    error_event,
    store_unavailable_event,
)
from chatomon.chat.store.records import Owner
from chatomon.django.audit.signals import send_chat_error
from chatomon.django.persistence.connections import release_spent_connections, released
from chatomon.django.service import available_service
from chatomon.django.settings import ChatSettings, chat_settings
from chatomon.django.transports.admission import (
    Admitted,
    collect,
    denied_event,
    identify,
    limit_refusal,
    limiter_for,
    permitted,
)
from chatomon.django.transports.embedding import embeddable
from chatomon.django.transports.requests import (
    MAX_BODY_BYTES,
    BadRequest,
    decode_object,
    not_json,
    parse_message,
    too_large,
)

__all__ = [
    "ChatEndpoint",
    "ChatView",
    "envelope",
    "envelope_status",
    "while_enabled",
]

logger = logging.getLogger(__name__)


def envelope(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON envelope: the events in order, and every text chunk joined as the answer.

    Examples:
        >>> envelope([{"type": "text_chunk", "content": "Hi"}, {"type": "done"}])["answer"]
        'Hi'
    """
    listed = [dict(event) for event in events]
    answer = "".join(e["content"] for e in listed if e.get("type") == "text_chunk")
    return {"events": listed, "answer": answer}


def while_enabled(view: Callable[..., Any]) -> Callable[..., Awaitable[HttpResponseBase]]:
    """`view`, answering Django's 404 while the `enabled` setting is False.

    The reference registers no chat route unless `enabled` is True; here the project
    mounts the routes itself (the Django convention), so they refuse instead, reading the
    cached setting on every request (`override_settings` flips it at once).
    """

    @wraps(view)
    async def gated(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not chat_settings().enabled:
            raise Http404("chat is disabled")
        response: HttpResponseBase = await view(request, *args, **kwargs)
        return response

    return gated


def _asgi_scope(request: HttpRequest) -> Mapping[str, Any]:
    scope = getattr(request, "scope", None)
    if isinstance(scope, Mapping):
        return scope
    return {"type": "http", "method": request.method, "path": request.path}


def _read(request: HttpRequest, code: str) -> Mapping[str, Any] | BadRequest:
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return too_large()
    try:
        body = request.body
    except RequestDataTooBig:
        return too_large()
    except RawPostDataException:
        # Something before this view (a project's middleware) read a multipart body as a
        # form (request.POST): Django keeps no bytes of it. The view's own CSRF check never
        # does (`_form_bodies_refused` refuses multipart before it). A chat body is JSON.
        return not_json(code)
    return decode_object(body, code)


def _form_bodies_refused(endpoint: type[ChatEndpoint], view: Any) -> Any:
    """`view`, refusing in the endpoint's format what Django fails on as a form body.

    The CSRF check reads `request.POST`, which parses a multipart or urlencoded body as a
    form before the view runs: a multipart body is refused before that (Django would keep
    none of its bytes, and a malformed one fails to parse), and an urlencoded one with too
    many fields or over DATA_UPLOAD_MAX_MEMORY_SIZE fails as Django's HTML 400 otherwise.
    An endpoint that takes no POST reads no body (the resume view's request is its URL and
    headers), and a safe method's CSRF check reads none: its view is returned as it is.
    """
    if "post" not in endpoint.http_method_names:
        return view

    @wraps(view)
    async def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        refusal = not_json(endpoint.body_error)
        if request.content_type == "multipart/form-data":
            return endpoint().refuse(request, refusal.status, refusal.event)
        try:
            response: HttpResponseBase = await view(request, *args, **kwargs)
        except RequestDataTooBig:
            refusal = too_large()
        except TooManyFieldsSent:
            pass
        else:
            return response
        return endpoint().refuse(request, refusal.status, refusal.event)

    return guarded


def envelope_status(events: Sequence[Mapping[str, Any]]) -> int:
    """The HTTP status of a turn's envelope: 503 when its store could not be reached, else 200.

    A turn the database kept from opening or from being recorded ends with `chat_error`
    and `reason: "store_unavailable"`: nothing of it may be stored, and the client may
    send the message again later. Every other ending (done, confirm_mutation, any other
    error) is a 200, as the reference's envelope is.
    """
    last = events[-1] if events else {}
    unavailable = last.get("type") == "error" and last.get("reason") == STORE_UNAVAILABLE_REASON
    return 503 if unavailable else 200


class ChatEndpoint(View):
    """The checks and refusals every chat view shares (see the module docstring)."""

    http_method_names = ("post",)
    body_error = "bad_message"
    """The code of a body that is not a JSON object."""

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Any:
        """The view: gated by `enabled`, CSRF-protected, left out of ATOMIC_REQUESTS.

        A turn waits on a model for seconds, and its records must survive the request
        failing (a client gone mid-turn is recorded as aborted). `csrf_protect` wraps the
        async view function itself, so Django applies it as an async decorator. The
        `enabled` gate comes before the CSRF check (the middleware is told the gate is
        exempt, and `csrf_protect` checks behind it), so a disabled route is a 404 for
        every request, as an unmounted one would be (for a GET endpoint the check passes
        every request: a safe method). Requests from pages of other sites go through
        `chatomon.django.transports.embedding.embeddable` (CORS, visitor tokens).
        """
        view = super().as_view(**initkwargs)
        protected = _form_bodies_refused(cls, csrf_protect(view))
        # A visitor token (chatomon.django.embed) is sent by the page's script, never by
        # the browser on its own: such a request has no ambient credential to forge.
        visiting = _form_bodies_refused(cls, view)
        gated = embeddable(protected, visiting, lambda r, s, e: cls().refuse(r, s, e))
        return transaction.non_atomic_requests(csrf_exempt(while_enabled(gated)))

    def payload(self, request: HttpRequest, settings: ChatSettings) -> Any:
        """What the request asks for (`Admitted.payload`), or the BadRequest refusing it.

        By default its JSON body, read through `parse` (the resume view reads its URL and
        `Last-Event-ID` instead).
        """
        decoded = _read(request, self.body_error)
        return decoded if isinstance(decoded, BadRequest) else self.parse(decoded, settings)

    def parse(self, payload: Mapping[str, Any], settings: ChatSettings) -> Any:
        """The request this endpoint reads from the decoded body, or a BadRequest."""
        return parse_message(payload, settings.max_message_chars)

    def identify(self, request: HttpRequest) -> tuple[Owner, str] | HttpResponse:
        """The request's owner and rate-limit scope, or the refusal to send; sync.

        The user, else the session's chat identity, created now (its cookie goes out with
        the response). An anonymous request without SessionMiddleware has no owner: 403.
        """
        user = request.user
        session = getattr(request, "session", None)
        if session is None and not user.is_authenticated:
            return self.refuse(request, 403, denied_event())
        return identify(user, session, request.META.get("REMOTE_ADDR"))

    def refuse(self, request: HttpRequest, status: int, event: dict[str, Any]) -> HttpResponse:
        """A refusal in this endpoint's format (default: the JSON envelope)."""
        return JsonResponse(envelope([event]), status=status)

    async def admit(self, request: HttpRequest) -> Admitted | HttpResponseBase:
        """Run every check; the admitted request, or the refusal to send.

        Every check takes ONE trip to a worker thread (`check`): permission, body and
        identity (the user and the session may be read from the database), the service,
        and the request counted against the rate limit (on Redis a network round trip:
        done in the same trip instead of one more). A failure of the checks is a
        `chat_error` in the endpoint's format, never Django's HTML 500: 503 (`reason:
        "store_unavailable"`) when the database cannot be reached (reading the user or
        the session), else 500; so is a service that cannot be built (see
        `available_service`).
        """
        settings = chat_settings()
        try:
            # `released`: a dead connection met by the user's or the session's first read
            # (the database closed it while idle) is replaced, not a failed request.
            checked = await sync_to_async(released)(self.check, request, settings)
        except Exception as error:  # noqa: BLE001 - answered as chat_error, logged
            return self.failure(request, error)
        return checked

    def failure(self, request: HttpRequest, error: Exception) -> HttpResponse:
        """The `chat_error` answer of a request whose checks failed unexpectedly.

        A database that cannot be reached is 503 with `reason: "store_unavailable"` (the
        client may try again); anything else is 500. Both are logged and signalled.
        """
        send_chat_error("chat_error", GENERIC_ERROR_MESSAGE, exception=error)
        if isinstance(error, OperationalError | InterfaceError):
            logger.error("chat request refused: the database is unavailable: %s", error)
            return self.refuse(request, 503, store_unavailable_event())
        logger.error("chat request failed before its turn", exc_info=error)
        return self.refuse(request, 500, error_event("chat_error", GENERIC_ERROR_MESSAGE))

    def check(self, request: HttpRequest, settings: ChatSettings) -> Admitted | HttpResponseBase:
        """Permission, payload, identity, service, then rate limit, in that order; sync.

        For a worker thread (`admit`). Returns the admitted request, or the refusal to send.
        """
        user = request.user
        if not permitted(settings, user, _asgi_scope(request)):
            return self.refuse(request, 403, denied_event())
        parsed = self.payload(request, settings)
        if isinstance(parsed, BadRequest):
            return self.refuse(request, parsed.status, parsed.event)
        identified = self.identify(request)
        if isinstance(identified, HttpResponseBase):
            return identified
        owner, scope = identified
        # The last database work on the request's thread before the turn, which may wait
        # on its model for long (a stream): what Django would close at the request's end
        # (the user's and the session's connection) is released now, not when it ends.
        release_spent_connections()
        service = available_service(settings)
        if service is None:
            return self.refuse(request, 500, error_event("chat_error", GENERIC_ERROR_MESSAGE))
        limited = limit_refusal(limiter_for(settings).admit(scope))
        if limited is not None:
            response = self.refuse(request, 429, limited)
            response["Retry-After"] = str(limited["retry_after_seconds"])
            return response
        return Admitted(settings, service, user, owner, scope, parsed)


class ChatView(ChatEndpoint):
    """`POST chat/`: `{"text", "conversation_id"?}` → 200 with the envelope of the turn."""

    async def post(self, request: HttpRequest) -> HttpResponseBase:
        """Run the turn to its end and answer with every event."""
        admitted = await self.admit(request)
        if isinstance(admitted, HttpResponseBase):
            return admitted
        events = await collect(admitted.run_turn(can_confirm=False))
        return JsonResponse(envelope(events), status=envelope_status(events))
