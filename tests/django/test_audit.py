"""The audit trail: key-segment redaction, secret masking, levels, logger and database sink."""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import replace
from typing import Any, get_args

import pytest
from django.test import override_settings

from chatomon import TokenUsage
from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.activity import Activity, ActivityKind
from chatomon.chat.store.memory import MemoryStore
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.fixtures import toy_registry
from chatomon.django.audit.listener import (
    REDACTED,
    AuditListener,
    audit_event,
    key_matches,
    key_segments,
    mask_secrets,
    sanitize,
)
from chatomon.django.audit.writer import AuditWriter
from chatomon.django.models import AuditEvent
from chatomon.django.settings import AuditSettings, validate_chat_settings
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call

TERMS = ("password", "secret", "token", "key", "credential")
USER = SimpleActor(id=7, is_authenticated=True)


def activity(kind: str, **payload: Any) -> Activity:
    return Activity(kind=kind, conversation_id="c-1", turn_id="t-1", actor=USER, payload=payload)


def audit(level: str = "all", **options: Any) -> AuditSettings:
    return AuditSettings(enabled=True, level=level, **options)


@pytest.mark.parametrize("key", ["api_key", "apiKey", "x-api-key", "API_KEY", "key", "ApiKeyId"])
def test_keys_holding_the_term_as_a_whole_segment_match(key: str) -> None:
    assert key_matches(key, TERMS)


@pytest.mark.parametrize("key", ["input_tokens", "tokens", "monkey", "keyboard", "passwords"])
def test_keys_holding_the_term_only_inside_a_word_do_not_match(key: str) -> None:
    assert not key_matches(key, TERMS)


def test_key_segments_split_case_and_separators() -> None:
    assert key_segments("x-api-key") == ("x", "api", "key")
    assert key_segments("apiKey") == ("api", "key")
    assert key_segments("HTTPAuthToken") == ("http", "auth", "token")
    assert key_segments("input_tokens") == ("input", "tokens")


def test_a_term_of_several_words_matches_those_words_in_a_row() -> None:
    assert key_matches("x-api-key", ("api_key",))
    assert not key_matches("key_api", ("api_key",))


def test_redaction_is_recursive_and_spares_token_counts() -> None:
    payload = {
        "args": {"filters": {"name": "Bolt"}, "auth": {"apiKey": "abc123", "password": "hunter2"}},
        "usage": {"input_tokens": 100, "output_tokens": 20},
        "rows": [{"access_token": "zzz", "name": "n"}],
    }
    clean = sanitize(payload, TERMS)
    assert clean["args"]["auth"] == {"apiKey": REDACTED, "password": REDACTED}
    assert clean["args"]["filters"] == {"name": "Bolt"}
    assert clean["usage"] == {"input_tokens": 100, "output_tokens": 20}
    assert clean["rows"] == [{"access_token": REDACTED, "name": "n"}]
    assert payload["args"]["auth"]["apiKey"] == "abc123", "the original is not changed"


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def", "eyJhbGciOiJIUzI1NiJ9", "Bearer"),
        ("my key is sk-proj-AbCdEf0123456789xyz ok", "sk-proj-AbCdEf0123456789xyz", "my key is"),
        ("postgres://bob:hunter2@db.internal:5432/app", "hunter2", "postgres://bob:"),
        ("https://example.com/x?api_key=s3cr3tvalue&page=2", "s3cr3tvalue", "page=2"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdef", "token"),
        ("AKIAIOSFODNN7EXAMPLE is an access key id", "AKIAIOSFODNN7EXAMPLE", "access key"),
    ],
)
def test_values_that_look_like_secrets_are_masked_wherever_they_appear(
    text: str, secret: str, kept: str
) -> None:
    masked = mask_secrets(text)
    assert secret not in masked
    assert REDACTED in masked
    assert kept in masked
    assert sanitize({"note": {"deep": [text]}}, TERMS)["note"]["deep"][0] == masked


def test_ordinary_text_and_urls_are_left_alone() -> None:
    for text in ["https://example.com/parts/7", "Which parts cost more than 5?", "sk-short"]:
        assert mask_secrets(text) == text


def test_an_exception_becomes_its_type_name_only() -> None:
    event = audit_event(
        activity("error", code="chat_error", exception=ValueError("sk-" + "x" * 20)), audit()
    )
    assert event["payload"]["exception"] == "ValueError"
    assert "x" * 20 not in str(event)


def test_tool_results_are_cut_at_max_result_size() -> None:
    rows = [{"name": f"part {index}"} for index in range(100)]
    event = audit_event(
        activity("tool_called", id="1", name="query", args={}, result={"data": rows}),
        audit(max_result_size=50),
    )
    result = event["payload"]["result"]
    assert result["truncated"] is True
    assert len(result["preview"]) == 50
    assert result["size"] > 50
    small = audit_event(activity("tool_called", result={"data": []}), audit(max_result_size=50))
    assert small["payload"]["result"] == {"data": []}


def test_the_event_names_its_type_actor_conversation_and_turn() -> None:
    event = audit_event(activity("message_received", text="Hi"), audit())
    assert {key: event[key] for key in ("type", "actor", "conversation_id", "turn_id")} == {
        "type": "message_received",
        "actor": "user:7",
        "conversation_id": "c-1",
        "turn_id": "t-1",
    }
    anonymous = Activity("message_received", "c", "t", SimpleActor(id=None), {"text": "Hi"})
    assert audit_event(anonymous, audit())["actor"] == "anonymous"


ALL_KINDS = list(get_args(ActivityKind))  # a kind added later is covered too


@pytest.mark.parametrize(
    ("settings", "recorded"),
    [
        (audit("messages"), ["message_received", "assistant_message"]),
        (audit("all"), ALL_KINDS),
        (audit("off"), []),
        (AuditSettings(enabled=False, level="all"), []),
    ],
)
def test_levels_choose_what_is_recorded(settings: AuditSettings, recorded: list[str]) -> None:
    seen: list[Any] = []
    listener = AuditListener(replace(settings, logger=seen.append), store_events=False)
    for kind in ALL_KINDS:
        listener(activity(kind))
    assert [event["type"] for event in seen] == recorded


def test_a_failing_logger_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken(event: Any) -> None:
        raise RuntimeError("logger down")

    listener = AuditListener(audit(logger=broken), store_events=False)
    with caplog.at_level(logging.ERROR, logger="chatomon.django.audit"):
        listener(activity("message_received", text="Hi"))
    assert "RuntimeError" in caplog.text


def test_the_logger_comes_from_the_settings() -> None:
    seen: list[Any] = []
    with override_settings(
        CHATOMON={
            "audit": {"enabled": True, "level": "messages", "logger": seen.append},
            "atom": {"capture_content": "full"},
        }
    ):
        listener = AuditListener(validate_chat_settings(), store_events=False)
    listener(activity("assistant_message", text="Done.", final_action="answered"))
    assert seen[0]["payload"] == {"text": "Done.", "final_action": "answered"}


@pytest.mark.parametrize("capture", ["none", "hash", "full"])
def test_message_texts_are_kept_as_capture_content_allows(capture: str) -> None:
    seen: list[Any] = []
    with override_settings(
        CHATOMON={
            "audit": {"enabled": True, "level": "messages", "logger": seen.append},
            "atom": {"capture_content": capture},
        }
    ):
        listener = AuditListener(validate_chat_settings(), store_events=False)
    listener(activity("assistant_message", text="Done.", final_action="answered"))
    kept = {"none": None, "hash": hashlib.sha256(b"Done.").hexdigest(), "full": "Done."}
    expected = kept[capture]
    assert seen[0]["payload"] == {"text": expected, "final_action": "answered"}


@pytest.mark.django_db(transaction=True)
def test_events_are_written_as_audit_event_rows() -> None:
    listener = AuditListener(audit())
    try:
        listener(activity("message_received", text="Call me at sk-abcdefghijklmnopqrst"))
        listener(activity("tool_called", id="1", name="query", args={"apiKey": "k"}, result={}))
        assert listener.flush()
    finally:
        listener.close()
    rows = list(AuditEvent.objects.order_by("id"))
    assert [(row.type, row.actor, row.conversation, row.turn) for row in rows] == [
        ("message_received", "user:7", "c-1", "t-1"),
        ("tool_called", "user:7", "c-1", "t-1"),
    ]
    assert "sk-abc" not in rows[0].payload["text"]
    assert rows[1].payload["args"] == {"apiKey": REDACTED}
    assert rows[0].created_at <= rows[1].created_at


def test_a_failing_database_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    listener = AuditListener(audit(), writer=AuditWriter(using="no_such_database"))
    try:
        with caplog.at_level(logging.ERROR, logger="chatomon.django.audit.writer"):
            listener(activity("message_received", text="Hi"))
            assert listener.flush()
    finally:
        listener.close()
    assert "writing 1 audit events failed" in caplog.text


def test_a_slow_database_does_not_slow_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[int] = []

    def slow_write(self: AuditWriter, batch: list[Any]) -> None:
        time.sleep(0.3)
        written.append(len(batch))

    monkeypatch.setattr(AuditWriter, "_write", slow_write)
    listener = AuditListener(audit())
    try:
        started = time.perf_counter()
        for _ in range(200):
            listener(activity("message_received", text="Hi"))
        elapsed = time.perf_counter() - started
        assert listener.flush()
    finally:
        listener.close()
    assert elapsed < 0.2, f"200 audited activities took {elapsed:.3f}s"
    assert sum(written) == 200
    assert len(written) < 200, "events are written in batches"


async def test_a_whole_turn_is_audited_through_chat_service() -> None:
    seen: list[Any] = []
    provider = ScriptedProvider(
        [
            [tool_call("search_managers", {"query": "material"})],
            ["Iron is a material.", TokenUsage(input_tokens=3, output_tokens=2)],
        ]
    )
    listener = AuditListener(audit(logger=seen.append), store_events=False)
    service = ChatService(
        store=MemoryStore(),
        provider=provider,
        toolset=Toolset(toy_registry()),
        listeners=[listener],
    )
    events = [event async for event in service.run_turn(USER, "Which materials?")]
    assert events[-1]["type"] == "done"
    kinds = [event["type"] for event in seen]
    assert kinds[0] == "message_received"
    assert "tool_called" in kinds
    assert "assistant_message" in kinds
    finished = seen[kinds.index("turn_finished")]["payload"]
    assert finished["status"] == "completed"
    assert finished["usage"] == {"input_tokens": 3, "output_tokens": 2}
    assert isinstance(finished["report"], dict), "the TurnReport is reduced to JSON"
    assert all(event["turn_id"] == events[-1]["turn_id"] for event in seen)
