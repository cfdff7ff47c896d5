"""`ChatConsumer`: chat over a WebSocket (Channels), the seed's client and server events.

Client events (JSON text frames; unknown fields ignored):
`{"type": "message", "text", "conversation_id"?}` and
`{"type": "confirm", "confirmation_id", "confirmed", "conversation_id"?}` and
`{"type": "resume", "turn_id", "after"?}`.

While the `enabled` setting is False a socket closes with 4404 on connect (the reference
mounts no route then; 4000 + HTTP's 404, as 4403 is for a denial).

On connect: a startup failure (bad settings, a provider that cannot be built) closes with
1011; so does a database that cannot be reached, after a `chat_error` event with
`reason: "store_unavailable"` (HTTP's 503); the `permission` setting denying closes with
4403. Then, per frame: a frame that is not a JSON object, of unknown type, or a malformed
confirm gives `bad_event`; the message checks of `chatomon.django.transports.requests`
apply; a message while a turn streams gives `turn_in_progress`, while this socket's client
confirmation is open `confirmation_pending` (a staff approval does not block: the user
cannot decide it); a confirm while a turn streams `turn_in_progress`; a confirm of an
unknown or another owner's id `bad_event`, of one already decided or expired
`confirmation_unavailable` (both from `ChatService`); every message, confirm and resume
counts against the rate limit. A frame whose handling fails gets a `chat_error` (with `reason:
"store_unavailable"` when the store could not be reached) and the socket stays open.

One turn runs at a time, in a task of its own (a `transports.relay.TurnFeed`). A
disconnect does not end it: the turn is detached, runs to its end and is recorded
normally, and any socket of its owner can follow it again with `resume`. Positions: each
event of the socket's own stream (a message's turn, a confirm's resumed turn, an expiry, a
resume) that names its turn carries `"position": n`, unique within the turn across its
streams and growing (the message's stream 1, 2, 3, ...; a stream continuing the turn after
its confirmation numbers on above them: `transports.relay`). Events of other turns that
reach the socket through a group carry none. `{"type": "resume", "turn_id", "after": n}`
answers the turn's events after position n (the last position the client received, 0 for
none; each missed event once), then the live ones until the terminal event: the turn's
latest stream, never an older one than n's; while it runs here or in another process
(through the cache log), or for a while after it ended. Another owner's turn, or one unknown or
long finished, gives `turn_not_found` (`GET chat/history/` has what was stored); a
malformed resume `bad_event`; a resume while a turn streams on the socket
`turn_in_progress`. The socket joins the channel-layer group of every conversation its
events name, so a turn resumed elsewhere (a staff approval, another process, an expiry)
reaches it; events of a turn this socket resumes itself (a confirm, an expiry, a `resume`)
arrive once, from its own stream. A socket of an authenticated user also joins the user's
group: a logout closes it with 4401, its turn (or the turn it resumed, when it runs in
this process) cancelled and recorded aborted (`transports.logout`).

The channel layer failing (Redis down) does not end the socket: its own turns go on, and
what needs the layer is skipped until it answers again, logged once per outage
(`transports.layer`). For that the socket reads the layer itself (`__call__`: its own
channel, read through a `LayerReceiver`, merged with the client's frames by an
`EitherReceive`), with Channels' own layer wiring turned off (`channel_layer_alias =
None`): a layer failure raised from the receive Channels would set up ends the consumer and
drops the socket with no close frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs
from uuid import UUID

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import BaseChannelLayer, get_channel_layer
from django.contrib.auth.models import AnonymousUser
from django.db import InterfaceError, OperationalError

from chatomon.chat.pipeline.wire import (
    GENERIC_ERROR_MESSAGE,
    error_event,
    pending_event,
    store_unavailable_event,
)
from chatomon.django.audit.signals import send_chat_error
from chatomon.django.persistence.connections import released
from chatomon.django.service import available_service, conversation_group, user_group
from chatomon.django.settings import chat_settings
from chatomon.django.transports.admission import (
    Admitted,
    identify,
    limit_refusal,
    limiter_for,
    permitted,
)
from chatomon.django.transports.expiry import awaits_client, seconds_left
from chatomon.django.transports.layer import EitherReceive, LayerReceiver, attempt
from chatomon.django.transports.logout import CLOSE_LOGGED_OUT
from chatomon.django.transports.relay import (
    TurnFeed,
    new_stream,
    relays,
    resume,
    turn_not_found_event,
    with_positions,
)
from chatomon.django.transports.requests import (
    BadRequest,
    ConfirmRequest,
    MessageRequest,
    decode_object,
    parse_confirm,
    parse_message,
)
from chatomon.django.transports.socket_state import SocketState
from chatomon.errors import StoreUnavailableError

if TYPE_CHECKING:
    from asgiref.typing import ASGIReceiveCallable, ASGISendCallable

__all__ = [
    "CLOSE_DISABLED",
    "CLOSE_FORBIDDEN",
    "CLOSE_LOGGED_OUT",
    "CLOSE_STARTUP_FAILED",
    "USER_UNAVAILABLE",
    "ChatConsumer",
]

logger = logging.getLogger(__name__)

CLOSE_DISABLED = 4404
CLOSE_FORBIDDEN = 4403
CLOSE_STARTUP_FAILED = 1011
USER_UNAVAILABLE = "chatomon.user_unavailable"
"""The scope key where `chatomon.django.routing` leaves the database error of a handshake
whose user could not be read (the user is then AnonymousUser)."""


class ChatConsumer(AsyncWebsocketConsumer):
    """One chat socket: one turn at a time, events as JSON text frames.

    Attributes:
        layer: The default channel layer, or None when CHANNEL_LAYERS has none.
        layer_channel: The socket's channel on it (`new_channel`), where group messages
            for the socket arrive.
    """

    # No alias is not a configured one: `get_channel_layer` gives None, so Channels sets up
    # no layer of its own, and the socket reads the default one itself (`__call__`). (The
    # stubs type the attribute as a str.)
    channel_layer_alias = None  # type: ignore[assignment]

    layer: BaseChannelLayer | None = None
    layer_channel: str = ""

    async def __call__(
        self, scope: Any, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        """Serve the socket: the client's frames and the layer's messages, dispatched in turn."""
        self.layer = get_channel_layer()
        if self.layer is None:
            await super().__call__(scope, receive, send)
            return
        self.layer_channel = await self.layer.new_channel()
        from_layer = LayerReceiver(partial(self.layer.receive, self.layer_channel), self._rejoin)
        either = EitherReceive([receive, from_layer])
        try:
            await super().__call__(scope, either, send)
        finally:
            await either.aclose()

    async def connect(self) -> None:
        """Accept, then close at once with 4404 (chat disabled), 1011 (startup failure) or 4403.

        `enabled` is read from the cached settings on each connect, before the service is
        built: a disabled chat builds no provider. A provider that cannot be built closes
        with 1011 (logged once: `available_service`). A database that cannot be reached
        (reading the user at the handshake, the session at admission, or the conversation
        named by `?conversation_id=`) sends the `chat_error` of HTTP's 503 (`reason:
        "store_unavailable"`), then closes with 1011.
        """
        await self.accept()
        self.state = SocketState()
        self.task: asyncio.Task[None] | None = None
        self.feed: TurnFeed | None = None
        """The socket's latest turn stream: cancelled on logout, detached on disconnect."""
        self.conversation_id: str | None = None
        """The socket's conversation: where its last turn ran (see `_follow`)."""
        self.expiry: asyncio.Task[None] | None = None
        """Waits for the open client confirmation to expire (`_expire_when_due`)."""
        self.watched: str | None = None
        """The id of that confirmation."""
        self.logged_out = False
        try:
            self.settings = chat_settings()
            if not self.settings.enabled:
                await self.close(code=CLOSE_DISABLED)
                return
            service = available_service(self.settings)
            if service is None:
                await self.close(code=CLOSE_STARTUP_FAILED)
                return
            self.service = service
            self.user = self.scope.get("user") or AnonymousUser()
            unreadable = self.scope.get(USER_UNAVAILABLE)
            if isinstance(unreadable, Exception):
                raise unreadable
            # `released`: a connection the database closed while idle is replaced, as
            # every store call's is, instead of failing the socket.
            if not await database_sync_to_async(released)(self._admit):
                await self.close(code=CLOSE_FORBIDDEN)
                return
            if self.owner.kind == "user":
                await self._join_group(user_group(self.owner.key))
            await self._subscribe_from_query()  # a store call: inside these handlers
        except (OperationalError, InterfaceError, StoreUnavailableError) as error:
            logger.error("chat socket refused: the database is unavailable: %s", error)
            send_chat_error("chat_error", GENERIC_ERROR_MESSAGE, exception=error)
            await self.send_event(store_unavailable_event())
            await self.close(code=CLOSE_STARTUP_FAILED)
            return
        except Exception as error:
            logger.exception("chat socket failed to start")
            send_chat_error("chat_error", "The chat socket failed to start.", exception=error)
            await self.close(code=CLOSE_STARTUP_FAILED)

    def _admit(self) -> bool:
        """The checks of a new socket, in one trip to a thread: permission, then identity."""
        if not permitted(self.settings, self.user, self.scope):
            return False
        client = self.scope.get("client") or (None,)
        self.owner, self.rate_scope = identify(
            self.user, self.scope.get("session"), client[0], save=True
        )
        return True

    async def disconnect(self, code: int) -> None:
        """Stop reading the running turn (detached: it runs on) and leave the groups."""
        await self._cancel_turn()
        state: SocketState | None = getattr(self, "state", None)
        if state is not None and self.layer is not None:
            for group in state.groups:
                await attempt(
                    "leaving a group", self.layer.group_discard(group, self.layer_channel)
                )

    async def _cancel_turn(self, *, abort: bool = False) -> None:
        self._stop_watching()
        feed: TurnFeed | None = getattr(self, "feed", None)
        if abort and feed is not None:
            feed.cancel()  # the turn itself, not only this socket's reading of it
        task = getattr(self, "task", None)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if abort and feed is not None and feed.task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await feed.task  # recorded aborted before the socket closes

    async def chat_logout(self, message: dict[str, Any]) -> None:
        """The user logged out (in any process): cancel the turn, close with 4401."""
        self.logged_out = True
        await self._cancel_turn(abort=True)
        await self.close(code=CLOSE_LOGGED_OUT)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Answer one client frame (none once the socket closed for a logout)."""
        if getattr(self, "logged_out", False):
            return
        try:
            await self._answer(text_data if text_data is not None else (bytes_data or b""))
        except StoreUnavailableError as error:
            # A confirm's lookup of its confirmation, before any turn runs.
            logger.error("chat socket frame refused: the store is unavailable: %s", error)
            send_chat_error("chat_error", GENERIC_ERROR_MESSAGE, exception=error, user=self.user)
            await self.send_event(store_unavailable_event())
        except Exception as error:
            # Raised out of this handler, any failure would end the consumer: the socket
            # dropped with no close frame. The frame gets a chat_error; the socket goes on.
            logger.exception("chat socket frame failed")
            send_chat_error("chat_error", GENERIC_ERROR_MESSAGE, exception=error, user=self.user)
            await self.send_event(error_event("chat_error", GENERIC_ERROR_MESSAGE))

    async def _answer(self, raw: str | bytes) -> None:
        decoded = decode_object(raw, "bad_event")
        if isinstance(decoded, BadRequest):
            await self.send_event(decoded.event)
        elif decoded.get("type") == "message":
            await self._on_message(decoded)
        elif decoded.get("type") == "confirm":
            await self._on_confirm(decoded)
        elif decoded.get("type") == "resume":
            await self._on_resume(decoded)
        else:
            await self.send_event(
                error_event("bad_event", "Unknown event type; send `message` or `confirm`.")
            )

    async def _on_message(self, payload: Any) -> None:
        message = parse_message(payload, self.settings.max_message_chars)
        if isinstance(message, BadRequest):
            await self.send_event(message.event)
            return
        refusal = self._busy() or self.state.open_confirmation() or self._expiring()
        if refusal is None:
            refusal = await self._rate_limited()
        if refusal is not None:
            await self.send_event(refusal)
            return
        if message.conversation_id is None and not message.new_conversation:
            # The socket keeps its conversation: the reference's clients send only text.
            message = dataclasses.replace(message, conversation_id=self.conversation_id)
        events = self._fed(self._admitted(message).run_turn())
        self.task = asyncio.ensure_future(self._stream(events))

    def _fed(
        self, events: AsyncIterator[dict[str, Any]], stream: int = 0
    ) -> AsyncIterator[dict[str, Any]]:
        """Run a turn's events in a feed of this process (it outlives the socket).

        `stream`: 0 for a message's turn, `new_stream()` for one continued after its
        confirmation (its positions above the message stream's).
        """
        self.feed = relays().start(self.owner, events, stream)
        return with_positions(self.feed.follow())

    async def _on_resume(self, payload: Mapping[str, Any]) -> None:
        turn_id, after = payload.get("turn_id"), payload.get("after", 0)
        if not isinstance(turn_id, str) or not turn_id or type(after) is not int or after < 0:
            message = "A resume names its turn_id and the count of events seen (after)."
            await self.send_event(error_event("bad_event", message))
            return
        refusal = self._busy() or await self._rate_limited()  # a resume counts as a request
        if refusal is not None:
            await self.send_event(refusal)
            return
        source = await resume(self.owner, turn_id, after)
        if source is None:
            event = turn_not_found_event(turn_id)
            await self.send_event(event)
            return
        # The turn runs in this process: a logout cancels it as it would the socket's own.
        local = relays().get(turn_id)
        self.feed = local if local is not None and not local.finished else None
        # A confirmation's answer is also published to the conversation's group: its
        # copies are dropped, this socket's own stream has them.
        self.state.suppress(turn_id)
        self.task = asyncio.ensure_future(self._stream(with_positions(source), turn_id, own=True))

    async def _on_confirm(self, payload: Any) -> None:
        decision = parse_confirm(payload)
        if isinstance(decision, BadRequest):
            await self.send_event(decision.event)
            return
        refusal = self._busy() or await self._rate_limited()
        if refusal is not None:
            await self.send_event(refusal)
            return
        if decision.confirmation_id == self.watched:
            self._stop_watching()  # decided before it expired
        resumed = await self._turn_of(decision.confirmation_id)
        self.state.forget(decision.confirmation_id)  # decided here: no longer open, won or not
        if resumed is not None:
            self.state.suppress(resumed)  # its events come from our own stream, not the group
        events = self._fed(self._admitted(decision).resolve_confirmation(), new_stream())
        self.task = asyncio.ensure_future(self._stream(events, resumed))

    def _admitted(self, request: MessageRequest | ConfirmRequest) -> Admitted:
        return Admitted(
            self.settings, self.service, self.user, self.owner, self.rate_scope, request
        )

    async def _rate_limited(self) -> dict[str, Any] | None:
        return limit_refusal(await limiter_for(self.settings).hit(self.rate_scope))

    def _busy(self) -> dict[str, Any] | None:
        if self.task is None or self.task.done():
            return None
        return error_event("turn_in_progress", "Wait for the current turn to finish.")

    async def _turn_of(self, confirmation_id: str) -> str | None:
        """The turn a confirmation resumes, when it is this owner's."""
        known = self.state.turn_of(confirmation_id)
        if known is not None:
            return known
        try:
            key = UUID(confirmation_id)
        except ValueError:
            return None
        found = await self.service.store.get_confirmation(key, owner=self.owner)
        return found.turn_id if found is not None else None

    async def _stream(self, events: Any, resumed: str | None = None, *, own: bool = False) -> None:
        """Send a turn's events; a resumed turn's group copies stay dropped (SocketState).

        `own`: the stream is the turn's, whoever claimed it (a `resume`): its group copies
        are never the client's to see.
        """
        won = own
        last: dict[str, Any] | None = None
        try:
            async with contextlib.aclosing(events) as stream:
                async for event in stream:
                    won = won or event.get("type") == "confirmation_resolved"
                    last = event
                    await self._follow(event)
                    await self.send_event(event)
            if awaits_client(last):
                assert last is not None
                self.watched = last["id"]
                self.expiry = asyncio.ensure_future(self._expire_when_due(last))
        except Exception as error:
            logger.exception("chat socket turn failed")
            send_chat_error("chat_error", GENERIC_ERROR_MESSAGE, exception=error, user=self.user)
            await self.send_event(error_event("chat_error", GENERIC_ERROR_MESSAGE))
        finally:
            if resumed is not None:
                # Lost the claim: what the winner published is this client's to see.
                for held in self.state.own_stream_ended(resumed, resumed=won):
                    self.state.observe(held)
                    await self.send_event(held)

    async def _expire_when_due(self, pending: dict[str, Any]) -> None:
        """When the client's confirmation runs out, resume its turn here, as timed out.

        The reference's `confirm_timeout_seconds`: the client sees the expiry when it
        happens. Nothing comes when the confirmation was decided elsewhere meanwhile.
        """
        await asyncio.sleep(seconds_left(pending))
        if self.task is not None and not self.task.done():
            await asyncio.wait({self.task})
        turn = pending["turn_id"]
        self.state.forget(pending["id"])
        self.state.suppress(turn)  # its events come from our own stream, not the group
        self.watched = self.expiry = None
        events = self._fed(self.service.expire_confirmation(pending["id"]), new_stream())
        self.task = asyncio.ensure_future(self._stream(events, turn))

    def _expiring(self) -> dict[str, Any] | None:
        """`confirmation_pending` until the watched confirmation is resolved.

        Also once it ran out but its expiry has not run yet: the timed-out turn comes
        first, as it happened first.
        """
        if self.watched is None:
            return None
        return pending_event(self.watched, self.conversation_id)

    def _stop_watching(self) -> None:
        expiry = getattr(self, "expiry", None)
        if expiry is not None:
            expiry.cancel()
        self.watched = self.expiry = None

    async def _follow(self, event: dict[str, Any]) -> None:
        """Track confirmations and join the event's conversation group."""
        self.state.observe(event)
        conversation_id = event.get("conversation_id")
        if event.get("code") == "conversation_not_found":
            if conversation_id == self.conversation_id:
                self.conversation_id = None  # the socket's own is gone: start anew next
        elif conversation_id:
            self.conversation_id = str(conversation_id)
            await self._join(str(conversation_id))

    async def _join(self, conversation_id: str) -> None:
        await self._join_group(conversation_group(conversation_id))

    async def _join_group(self, group: str) -> None:
        if self.layer is None:  # no CHANNEL_LAYERS configured
            return
        if self.state.join(group):  # kept when the layer fails: `_rejoin` adds it later
            await attempt("joining a group", self.layer.group_add(group, self.layer_channel))

    async def _rejoin(self) -> bool:
        """Join every group of the socket again (the layer was failing): whether all took."""
        state: SocketState | None = getattr(self, "state", None)
        if self.layer is None:
            return True
        joined = True
        for group in sorted(state.groups if state is not None else ()):
            add = self.layer.group_add(group, self.layer_channel)
            joined = await attempt("joining a group", add) and joined
        return joined

    async def _subscribe_from_query(self) -> None:
        """`?conversation_id=` on connect: follow that conversation of this owner."""
        query = parse_qs(self.scope.get("query_string", b"").decode("latin1"))
        for value in query.get("conversation_id", [])[:1]:
            try:
                key = UUID(value)
            except ValueError:
                continue
            if await self.service.store.get_conversation(self.owner, key) is not None:
                self.conversation_id = str(key)
                await self._join(str(key))

    async def chat_event(self, message: dict[str, Any]) -> None:
        """A group message: an event of a turn resumed elsewhere."""
        event = message.get("event")
        if not isinstance(event, dict) or not self.state.accept_group_event(event):
            return
        if event.get("type") == "confirmation_resolved" and event.get("id") == self.watched:
            self._stop_watching()  # decided elsewhere: nothing left to expire here
        self.state.observe(event)
        await self.send_event(event)

    async def send_event(self, event: dict[str, Any]) -> None:
        """Send one event as a JSON text frame."""
        await self.send(text_data=json.dumps(event, default=str))
