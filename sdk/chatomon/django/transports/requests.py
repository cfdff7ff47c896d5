"""Reading chat requests: HTTP bodies and WebSocket frames, checked before any side effect.

Every bad input gets a stable error code and nothing else happens (no session, no rate
limit hit, no turn):

- `request_too_large`: the body or frame is over `MAX_BODY_BYTES` (1 MiB); HTTP 413.
- `bad_message`: a message request that is not a JSON object; `text` absent, blank or
  not a string; a `conversation_id` that is not a string; `new_conversation` that is not
  true or false, or true beside a `conversation_id`.
- `message_too_long`: `text` longer than `max_message_chars` (the event names the limit).
- `bad_event`: a confirmation (or WebSocket frame) that is not a JSON object, an unknown
  frame `type`, a `confirmation_id` that is not a non-blank string, `confirmed` that is
  not true or false.

Unknown fields are ignored, so clients may send more than the contract names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chatomon.chat.pipeline.wire import error_event

__all__ = [
    "MAX_BODY_BYTES",
    "BadRequest",
    "ConfirmRequest",
    "MessageRequest",
    "decode_object",
    "parse_confirm",
    "parse_message",
]

MAX_BODY_BYTES = 1024 * 1024
"""The largest request body or WebSocket frame read (1 MiB)."""


@dataclass(frozen=True, slots=True)
class BadRequest:
    """A request refused before anything ran: the error event and the HTTP status."""

    event: dict[str, Any]
    status: int = 400


@dataclass(frozen=True, slots=True)
class MessageRequest:
    """A user message: its text, and which conversation it belongs to.

    Attributes:
        text: The message.
        conversation_id: The conversation to continue; None continues the owner's current
            one (a WebSocket: the socket's own), as the reference's clients expect.
        new_conversation: Start a new conversation instead (the explicit form).
    """

    text: str
    conversation_id: str | None = None
    new_conversation: bool = False


@dataclass(frozen=True, slots=True)
class ConfirmRequest:
    """A decision on a pending confirmation."""

    confirmation_id: str
    confirmed: bool
    conversation_id: str | None = None


def too_large() -> BadRequest:
    """The refusal of a body or frame over `MAX_BODY_BYTES`."""
    message = f"The request is larger than {MAX_BODY_BYTES} bytes."
    event = error_event("request_too_large", message, max_bytes=MAX_BODY_BYTES)
    return BadRequest(event, status=413)


def decode_object(raw: bytes | str, code: str) -> Mapping[str, Any] | BadRequest:
    """The JSON object in `raw`, or the `code` refusal for anything else.

    Examples:
        >>> decode_object(b'{"text": "hi"}', "bad_message")
        {'text': 'hi'}
        >>> decode_object(b"[1]", "bad_message").event["code"]
        'bad_message'
    """
    if len(raw) > MAX_BODY_BYTES:
        return too_large()
    try:
        decoded = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return _bad(code, "The request body is not valid JSON.")
    if not isinstance(decoded, dict):
        return _bad(code, "The request body must be a JSON object.")
    return decoded


def parse_message(payload: Mapping[str, Any], max_chars: int) -> MessageRequest | BadRequest:
    """The message in a decoded request, or why it is refused."""
    text = payload.get("text")
    if not isinstance(text, str) or not text.strip():
        return _bad("bad_message", "Send the message as a non-blank string in `text`.")
    if len(text) > max_chars:
        message = f"The message is longer than {max_chars} characters."
        return BadRequest(error_event("message_too_long", message, max_message_chars=max_chars))
    conversation_id = payload.get("conversation_id")
    if conversation_id is not None and not isinstance(conversation_id, str):
        return _bad("bad_message", "`conversation_id` must be a string.", field="conversation_id")
    new_conversation = payload.get("new_conversation", False)
    if not isinstance(new_conversation, bool):
        return _bad(
            "bad_message", "`new_conversation` must be true or false.", field="new_conversation"
        )
    if new_conversation and conversation_id:
        return _bad(
            "bad_message",
            "Send `new_conversation` or a `conversation_id`, not both.",
            field="new_conversation",
        )
    return MessageRequest(text, conversation_id or None, new_conversation)


def parse_confirm(payload: Mapping[str, Any]) -> ConfirmRequest | BadRequest:
    """The decision in a decoded confirmation, or why it is refused."""
    confirmation_id = payload.get("confirmation_id")
    if not isinstance(confirmation_id, str) or not confirmation_id.strip():
        return _bad("bad_event", "Send the confirmation's id as a string in `confirmation_id`.")
    confirmed = payload.get("confirmed")
    if not isinstance(confirmed, bool):
        return _bad("bad_event", "Send `confirmed` as true or false.")
    conversation_id = payload.get("conversation_id")
    if conversation_id is not None and not isinstance(conversation_id, str):
        return _bad("bad_event", "`conversation_id` must be a string.", field="conversation_id")
    return ConfirmRequest(confirmation_id.strip(), confirmed, conversation_id or None)


def _bad(code: str, message: str, **fields: Any) -> BadRequest:
    return BadRequest(error_event(code, message, **fields))
