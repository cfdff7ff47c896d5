"""What a chat socket remembers between frames: open confirmations, groups, echoes to drop.

Kept apart from the consumer so the rules can be read (and tested) without a socket:

- a client confirmation announced on the socket stays open until it is resolved (by this
  socket, or in a group event), or its `expires_at` passes; while open, a new message gets
  `confirmation_pending`. Staff approvals are remembered only to find their turn.
- a turn this socket resumes itself is also published to the conversation's group; its
  group copies are dropped until the group delivered that turn's terminal event (a lost
  echo lapses after `ECHO_WINDOW_SECONDS`). Until the socket's own stream shows whether its
  claim won, they are held: when it lost (someone else, or the expiry its late decision
  touched, resumed the turn), the held events are the client's to see after all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chatomon.chat.pipeline.wire import TERMINAL_TYPES, pending_event

__all__ = ["ECHO_WINDOW_SECONDS", "SocketState"]

ECHO_WINDOW_SECONDS = 30.0


@dataclass
class _Echo:
    """The group copies of one resumed turn still to drop."""

    own_ended_at: float | None = None
    group_terminal_seen: bool = False
    held: list[dict[str, Any]] = field(default_factory=list)
    """Group events that came while the socket's own stream ran."""


@dataclass(frozen=True, slots=True)
class _Announced:
    turn_id: str
    approver: str
    expires_at: datetime | None
    conversation_id: str | None = None


def _expiry(value: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class SocketState:
    """The per-socket bookkeeping of `ChatConsumer`."""

    groups: set[str] = field(default_factory=set)
    announced: dict[str, _Announced] = field(default_factory=dict)
    echoes: dict[str, _Echo] = field(default_factory=dict)

    def join(self, group: str) -> bool:
        """Record a group; True when the socket was not in it yet."""
        if group in self.groups:
            return False
        self.groups.add(group)
        return True

    def observe(self, event: dict[str, Any]) -> None:
        """Follow confirmations announced and resolved in the events sent."""
        kind = event.get("type")
        if kind == "confirm_mutation" and isinstance(event.get("id"), str):
            self.announced[event["id"]] = _Announced(
                str(event.get("turn_id", "")),
                str(event.get("approver", "client")),
                _expiry(event.get("expires_at")),
                event.get("conversation_id"),
            )
        elif kind == "confirmation_resolved" and isinstance(event.get("id"), str):
            self.announced.pop(event["id"], None)

    def forget(self, confirmation_id: str) -> None:
        """Stop tracking a confirmation (the socket just decided it)."""
        self.announced.pop(confirmation_id, None)

    def turn_of(self, confirmation_id: str) -> str | None:
        """The turn of a confirmation this socket announced."""
        known = self.announced.get(confirmation_id)
        return known.turn_id if known is not None and known.turn_id else None

    def open_confirmation(self, now: datetime | None = None) -> dict[str, Any] | None:
        """The `confirmation_pending` refusal while a client confirmation is open."""
        moment = now or datetime.now(UTC)
        for confirmation_id, known in list(self.announced.items()):
            if known.expires_at is not None and known.expires_at <= moment:
                del self.announced[confirmation_id]
            elif known.approver == "client":
                return pending_event(confirmation_id, known.conversation_id)
        return None

    def suppress(self, turn_id: str) -> None:
        """This socket resumes `turn_id`: drop its group copies."""
        self.echoes[turn_id] = _Echo()

    def own_stream_ended(self, turn_id: str, *, resumed: bool) -> list[dict[str, Any]]:
        """The socket's own stream of `turn_id` ended (`resumed`: the claim won).

        Returns the held group events to send now: those of a turn another claim resumed.
        """
        echo = self.echoes.get(turn_id)
        if echo is None:
            return []
        if not resumed:
            del self.echoes[turn_id]
            return echo.held
        if echo.group_terminal_seen:
            del self.echoes[turn_id]
        else:
            echo.own_ended_at = time.monotonic()
        return []

    def accept_group_event(self, event: dict[str, Any]) -> bool:
        """Whether a group event is new to this socket (not a copy of its own stream)."""
        turn_id = event.get("turn_id")
        echo = self.echoes.get(turn_id) if isinstance(turn_id, str) else None
        if echo is None:
            return True
        ended = echo.own_ended_at
        if ended is not None and time.monotonic() - ended > ECHO_WINDOW_SECONDS:
            del self.echoes[str(turn_id)]
            return True
        if ended is None:
            echo.held.append(event)
        if event.get("type") in TERMINAL_TYPES:
            if ended is not None:
                del self.echoes[str(turn_id)]
            else:
                echo.group_terminal_seen = True
        return False
