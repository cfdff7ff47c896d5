"""Reading chat requests, and the socket's bookkeeping: every bad input has its stable code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chatomon.django.transports.requests import (
    MAX_BODY_BYTES,
    MAX_JSON_DEPTH,
    BadRequest,
    ConfirmRequest,
    MessageRequest,
    decode_object,
    parse_confirm,
    parse_message,
    too_deep,
)
from chatomon.django.transports.socket_state import SocketState


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"text"', "must be a JSON object"),
        (b"null", "must be a JSON object"),
        (b"42", "must be a JSON object"),
    ],
)
@pytest.mark.parametrize("code", ["bad_message", "bad_event"])
def test_anything_but_a_json_object_is_refused_with_the_routes_code(raw, message, code):
    refused = decode_object(raw, code)
    assert isinstance(refused, BadRequest)
    assert refused.status == 400
    assert refused.event["type"] == "error"
    assert refused.event["code"] == code
    assert message in refused.event["message"]


def test_a_body_over_one_mebibyte_is_refused_with_413_before_it_is_parsed():
    raw = b'{"text": "' + b"x" * MAX_BODY_BYTES + b'"}'
    refused = decode_object(raw, "bad_message")
    assert isinstance(refused, BadRequest)
    assert refused.status == 413
    assert refused.event["code"] == "request_too_large"
    assert refused.event["max_bytes"] == MAX_BODY_BYTES
    assert decode_object(b'{"text": "' + b"x" * 1000 + b'"}', "bad_message") == {"text": "x" * 1000}


def nested(depth: int, opener: str = "[", closer: str = "]") -> str:
    return '{"text": "hi", "x": ' + opener * depth + "1" + closer * depth + "}"


@pytest.mark.parametrize(("opener", "closer"), [("[", "]"), ('{"a": ', "}")])
@pytest.mark.parametrize("code", ["bad_message", "bad_event"])
def test_json_nested_past_the_limit_is_refused_before_it_is_parsed(opener, closer, code):
    # The body object is one level: MAX_JSON_DEPTH - 1 more fit, one more does not.
    assert decode_object(nested(MAX_JSON_DEPTH - 1, opener, closer), code)["text"] == "hi"
    for depth in (MAX_JSON_DEPTH, 1000, 100_000):  # 1,000: Python's parser recursed out
        refused = decode_object(nested(depth, opener, closer).encode(), code)
        assert isinstance(refused, BadRequest)
        assert (refused.status, refused.event["code"]) == (400, code)
        assert refused.event["max_depth"] == MAX_JSON_DEPTH
        assert "nested deeper than" in refused.event["message"]


def test_an_unclosed_deep_body_is_refused_as_too_deep():
    refused = decode_object("[" * 5000, "bad_event")
    assert isinstance(refused, BadRequest)
    assert refused.event["code"] == "bad_event"


def test_brackets_inside_strings_are_not_nesting():
    text = '{"text": "' + "[{" * 1000 + '\\" [[[", "x": [[["\\"]"]]]}'
    assert not too_deep(text)
    assert decode_object(text, "bad_message")["text"].startswith("[{[{")
    assert too_deep("[" * 4 + "]" * 4, limit=3)
    assert not too_deep("[]" * 1000, limit=3)  # many arrays, none deep


@pytest.mark.parametrize(
    "raw",
    [
        '{"text": "\ud800"}'.encode("utf-8", "surrogatepass"),  # CESU-8: not UTF-8
        '{"text": "hi"}'.encode("utf-16"),  # JSON is UTF-8 (RFC 8259 §8.1)
        b"\xef\xbb\xbf{}",  # a byte-order mark
    ],
)
def test_bodies_that_are_not_utf8_json_are_refused(raw):
    refused = decode_object(raw, "bad_message")
    assert isinstance(refused, BadRequest)
    assert refused.event["code"] == "bad_message"


UNSTORABLE = [
    ("\x00", "U+0000 (a NUL character)"),
    ("\ud800", "U+D800 (an unpaired surrogate)"),
    ("\udfff", "U+DFFF (an unpaired surrogate)"),
]


@pytest.mark.parametrize(("character", "named"), UNSTORABLE)
@pytest.mark.parametrize("field", ["text", "conversation_id"])
def test_message_text_or_ids_no_store_can_keep_are_a_bad_message_naming_the_field(
    character, named, field
):
    payload = {"text": "hello", field: f"ab{character}c"}
    refused = parse_message(payload, 100)
    assert isinstance(refused, BadRequest)
    assert (refused.event["code"], refused.event["field"]) == ("bad_message", field)
    assert refused.event["message"] == (
        f"`{field}` holds {named} at position 2, which cannot be stored."
    )


@pytest.mark.parametrize(("character", "named"), UNSTORABLE)
@pytest.mark.parametrize("field", ["confirmation_id", "conversation_id"])
def test_confirmation_ids_no_store_can_keep_are_a_bad_event_naming_the_field(
    character, named, field
):
    payload = {"confirmation_id": "abc", "confirmed": True, field: character}
    refused = parse_confirm(payload)
    assert isinstance(refused, BadRequest)
    assert (refused.event["code"], refused.event["field"]) == ("bad_event", field)
    assert named in refused.event["message"]


def test_escaped_characters_a_store_keeps_are_accepted():
    # A surrogate pair as two escapes decodes to one character (an emoji); control
    # characters other than NUL are text like any other.
    decoded = decode_object(b'{"text": "\\ud83d\\ude00 \\u0001 \\t"}', "bad_message")
    assert parse_message(decoded, 100) == MessageRequest("\U0001f600 \x01 \t")


@pytest.mark.parametrize(
    "payload", [{}, {"text": ""}, {"text": "  \n"}, {"text": 5}, {"text": None}, {"text": ["hi"]}]
)
def test_absent_blank_or_non_string_text_is_a_bad_message(payload):
    refused = parse_message(payload, 100)
    assert isinstance(refused, BadRequest)
    assert refused.event["code"] == "bad_message"


def test_text_over_max_message_chars_is_message_too_long_naming_the_limit():
    refused = parse_message({"text": "x" * 11}, 10)
    assert isinstance(refused, BadRequest)
    assert refused.event["code"] == "message_too_long"
    assert refused.event["max_message_chars"] == 10
    assert parse_message({"text": "x" * 10}, 10) == MessageRequest("x" * 10)


def test_a_message_keeps_its_conversation_and_ignores_unknown_fields():
    parsed = parse_message({"text": "hi", "conversation_id": "abc", "extra": {"x": 1}}, 100)
    assert parsed == MessageRequest("hi", "abc")
    assert parse_message({"text": "hi", "conversation_id": None}, 100) == MessageRequest("hi")
    refused = parse_message({"text": "hi", "conversation_id": 7}, 100)
    assert isinstance(refused, BadRequest)
    assert (refused.event["code"], refused.event["field"]) == ("bad_message", "conversation_id")


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"confirmed": True},
        {"confirmation_id": "", "confirmed": True},
        {"confirmation_id": 5, "confirmed": True},
        {"confirmation_id": "abc"},
        {"confirmation_id": "abc", "confirmed": "yes"},
        {"confirmation_id": "abc", "confirmed": 1},
        {"confirmation_id": "abc", "confirmed": True, "conversation_id": 3},
    ],
)
def test_a_malformed_confirmation_is_a_bad_event(payload):
    refused = parse_confirm(payload)
    assert isinstance(refused, BadRequest)
    assert refused.event["code"] == "bad_event"


def test_a_confirmation_reads_id_decision_and_conversation():
    payload = {"confirmation_id": " abc ", "confirmed": False, "conversation_id": "c", "x": 1}
    assert parse_confirm(payload) == ConfirmRequest("abc", False, "c")


def announced(
    confirmation_id: str = "c1", *, approver: str = "client", turn_id: str = "t1", minutes: int = 5
) -> dict[str, str]:
    expires = datetime.now(UTC) + timedelta(minutes=minutes)
    return {
        "type": "confirm_mutation",
        "id": confirmation_id,
        "approver": approver,
        "turn_id": turn_id,
        "expires_at": expires.isoformat(),
    }


def test_an_open_client_confirmation_blocks_messages_until_resolved():
    state = SocketState()
    assert state.open_confirmation() is None
    state.observe(announced())
    refusal = state.open_confirmation()
    assert refusal is not None
    assert (refusal["code"], refusal["confirmation_id"]) == ("confirmation_pending", "c1")
    assert state.turn_of("c1") == "t1"
    state.observe({"type": "confirmation_resolved", "id": "c1"})
    assert state.open_confirmation() is None


def test_staff_approvals_do_not_block_and_expired_confirmations_lapse():
    state = SocketState()
    state.observe(announced(approver="staff"))
    assert state.open_confirmation() is None
    assert state.turn_of("c1") == "t1"
    state.observe(announced("c2", minutes=-1))
    assert state.open_confirmation() is None
    state.observe(announced("c3"))
    state.forget("c3")
    assert state.open_confirmation() is None


def test_group_copies_of_a_turn_the_socket_resumes_are_dropped_until_its_terminal_event():
    state = SocketState()
    state.suppress("t1")
    assert not state.accept_group_event({"type": "confirmation_resolved", "turn_id": "t1"})
    assert state.accept_group_event({"type": "text_chunk", "turn_id": "t2"})
    state.own_stream_ended("t1", resumed=True)
    assert not state.accept_group_event({"type": "text_chunk", "turn_id": "t1"})
    assert not state.accept_group_event({"type": "done", "turn_id": "t1"})
    # Later events of the same turn (resumed again, by staff) reach the socket.
    assert state.accept_group_event({"type": "text_chunk", "turn_id": "t1"})


def test_group_copies_that_arrive_before_the_own_stream_ends_are_dropped_too():
    state = SocketState()
    state.suppress("t1")
    assert not state.accept_group_event({"type": "done", "turn_id": "t1"})
    state.own_stream_ended("t1", resumed=True)
    assert state.accept_group_event({"type": "done", "turn_id": "t1"})


def test_a_lost_claim_stops_suppressing_at_once():
    state = SocketState()
    state.suppress("t1")
    state.own_stream_ended("t1", resumed=False)
    assert state.accept_group_event({"type": "done", "turn_id": "t1"})


def test_groups_are_joined_once():
    state = SocketState()
    assert state.join("g") is True
    assert state.join("g") is False
