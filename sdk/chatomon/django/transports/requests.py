r"""Reading chat requests: HTTP bodies and WebSocket frames, checked before any side effect.

Every bad input gets a stable error code and nothing else happens (no session, no rate
limit hit, no turn):

- `request_too_large`: the body or frame is over `MAX_BODY_BYTES` (1 MiB); HTTP 413.
- `bad_message`: a message request that is not a JSON object (not UTF-8, not JSON,
  nested deeper than `MAX_JSON_DEPTH`, or not an object); `text` absent, blank or not a
  string; a `conversation_id` that is not a string; `new_conversation` that is not true
  or false, or true beside a `conversation_id`; a `text` or `conversation_id` holding a
  character no store can keep (U+0000, or an unpaired surrogate sent as `"\ud800"`).
- `message_too_long`: `text` longer than `max_message_chars` (the event names the limit).
- `bad_event`: a confirmation (or WebSocket frame) that is not a JSON object (as above),
  an unknown frame `type`, a `confirmation_id` that is not a non-blank string, `confirmed`
  that is not true or false, a `confirmation_id` or `conversation_id` holding a character
  no store can keep.

A refusal of one field names it in `field`. Unknown fields are ignored (and never stored),
so clients may send more than the contract names.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chatomon.chat.pipeline.wire import error_event
from chatomon.storable import unstorable

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "BadRequest",
    "ConfirmRequest",
    "MessageRequest",
    "decode_object",
    "not_json",
    "parse_confirm",
    "parse_message",
]

MAX_BODY_BYTES = 1024 * 1024
"""The largest request body or WebSocket frame read (1 MiB)."""

MAX_JSON_DEPTH = 32
"""The deepest nesting of arrays and objects a body or frame may have.

The contract's bodies are flat objects (depth 1); 32 leaves clients room for nested
metadata in fields of their own. Python's parser recurses once per level and raises
RecursionError near 1,000 levels (fewer on a deep stack), which a 2 KB body reaches: the
depth is measured before anything is parsed.
"""

# A JSON string (quotes and escapes included), unrolled so the match never backtracks.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


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


def not_json(code: str) -> BadRequest:
    """The `code` refusal of a body that is not JSON (or that Django read as a form)."""
    return _bad(code, "The request body is not valid JSON.")


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
        # UTF-8 only (RFC 8259 §8.1): strict decoding also refuses encoded surrogates.
        text = raw.decode() if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        return not_json(code)
    if too_deep(text):
        message = f"The request body is nested deeper than {MAX_JSON_DEPTH} levels."
        return _bad(code, message, max_depth=MAX_JSON_DEPTH)
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: a deep stack, as a last resort
        return not_json(code)
    if not isinstance(decoded, dict):
        return _bad(code, "The request body must be a JSON object.")
    return decoded


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether arrays and objects nest deeper than `limit` in the JSON `text`.

    Brackets inside strings do not count. For text that is not JSON the answer is a
    guess (an unclosed string's brackets count), which is all a refusal needs. Linear
    time in C loops: regular expressions cut out the strings and all but the brackets,
    and only a body with more than `limit` opening brackets is walked.

    Examples:
        >>> too_deep('{"a": [1, {"b": "[[[["}]}', limit=3)
        False
        >>> too_deep("[[[[]]]]", limit=3)
        True
        >>> too_deep("[]" * 100, limit=3)
        False
    """
    if text.count("[") + text.count("{") <= limit:
        return False  # not even counting the brackets in strings: the common case
    brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text))
    if brackets.count("[") + brackets.count("{") <= limit:
        return False
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets))) > limit


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
    refused = _unstorable("bad_message", text=text, conversation_id=conversation_id)
    if refused is not None:
        return refused
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
    refused = _unstorable(
        "bad_event", confirmation_id=confirmation_id, conversation_id=conversation_id
    )
    if refused is not None:
        return refused
    return ConfirmRequest(confirmation_id.strip(), confirmed, conversation_id or None)


def _unstorable(code: str, **fields: str | None) -> BadRequest | None:
    """The `code` refusal naming the first field that holds text no store can keep."""
    for name, value in fields.items():
        found = None if value is None else unstorable(value)
        if found is not None:
            return _bad(code, found.describe(f"`{name}`"), field=name)
    return None


def _bad(code: str, message: str, **fields: Any) -> BadRequest:
    return BadRequest(error_event(code, message, **fields))
