"""One redaction rule wherever a mutation input, a tool payload or a blocked message shows.

A mutation whose input holds a `password` and an `api_token` waits for a staff approval
(and, in a second conversation, for the asker's own confirmation). Neither value may
appear in the `confirm_mutation` event, the approvals queue and history, the turn page,
the raw report, the exports, the console's own chat, or the audit trail; the stored
confirmation keeps them, and the approved write receives them. A message an input
`PIIGuard` blocked is not kept verbatim in the audit trail (nor found by its search) nor
in the report, even with `capture_content="full"`. A provider's exception message in a
report captured in full has its secrets masked as the audit trail masks them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client, override_settings
from pydantic import BaseModel

from chatomon import Atom, MaxLength, PIIGuard, parallel
from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.service import AtomConfig
from chatomon.chat.store import Owner
from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.fixtures import toy_registry
from chatomon.data.mutations import mutation
from chatomon.django.audit.listener import AuditListener
from chatomon.django.audit.writer import AuditWriter
from chatomon.django.models import AuditEvent, PendingConfirmation
from chatomon.django.persistence.store import DjangoStore
from chatomon.django.settings import validate_chat_settings
from chatomon.notebook.chat_markup import confirmation_html, transcript_html
from chatomon.notebook.chat_state import ChatState
from chatomon.providers import ScriptedProvider
from chatomon.providers.nucleus import ProviderNucleus
from chatomon.providers.testing import FunctionProvider, tool_call
from chatomon.redaction import Redaction, record_filters
from chatomon.schemas import TurnReport
from tests.chat.services import collect
from tests.console.conftest import login, make_user
from tests.ledger import Ledger

PASSWORD = "hunter2-Zq9xPw"
TOKEN = "tok-7Hc2Lm4Rr8"
SECRETS = (PASSWORD, TOKEN)
CARD = "4111 1111 1111 1111"
INPUT = {"account_id": 3, "password": PASSWORD, "api_token": TOKEN}
CALL = tool_call("mutate", {"mutation": "setCredentials", "input": INPUT})

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _close_worker_connections() -> Iterator[None]:
    """Close what asgiref's worker threads opened, or the test database stays busy."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())


class Credentials(BaseModel):
    account_id: int
    password: str
    api_token: str


def credential_service(written: list[dict[str, Any]], *, staff: bool) -> ChatService:
    """A ChatService whose `setCredentials` waits for staff (or the asker) and logs writes."""
    registry = toy_registry()

    @mutation(name="setCredentials", input=Credentials)
    def set_credentials(actor: Any, data: Credentials) -> dict[str, Any]:
        written.append(data.model_dump())
        return {"id": data.account_id}

    registry.register(set_credentials)
    names = ["setCredentials"]
    tools = (
        ToolSettings(allowed_mutations=names, staff_approval_mutations=names)
        if staff
        else ToolSettings(allowed_mutations=names, confirm_mutations=names)
    )
    return ChatService(
        store=DjangoStore(),
        provider=ScriptedProvider([[CALL], ["Saved."]]),
        toolset=Toolset(registry, tools),
        atom_config=AtomConfig(capture_content="full"),
    )


def shows_no_secret(text: str) -> bool:
    return not any(secret in text for secret in SECRETS)


@pytest.fixture
def staff_user() -> User:
    return make_user("reviewer")


@pytest.fixture
def staff_client(staff_user: User) -> Client:
    return login(staff_user)


def suspended(service: ChatService, user: User) -> dict[str, Any]:
    events = async_to_sync(collect)(
        service.run_turn(user, "Set my credentials", owner=Owner.user(user.pk))
    )
    assert events[-1]["type"] == "confirm_mutation", events
    return events[-1]


def test_the_confirm_mutation_event_hides_the_secrets_the_stored_row_keeps_them(
    ledger: Ledger,
) -> None:
    asker = make_user("asker", staff=False, perms=())
    written: list[dict[str, Any]] = []
    event = suspended(credential_service(written, staff=False), asker)
    assert event["input"] == {"account_id": 3, "password": "[redacted]", "api_token": "[redacted]"}
    assert shows_no_secret(json.dumps(event))
    stored = PendingConfirmation.objects.get(pk=event["id"])
    assert stored.input == INPUT, "the write needs the real values"
    ledger.cases("redaction: confirm_mutation event", tried=1, errors=0)


def test_streamed_tool_calls_hide_the_mutation_input() -> None:
    asker = make_user("streamer", staff=False, perms=())
    events = async_to_sync(collect)(
        credential_service([], staff=False).run_turn(
            asker, "Set my credentials", owner=Owner.user(asker.pk)
        )
    )
    assert [e["type"] for e in events][-1] == "confirm_mutation"
    assert shows_no_secret(json.dumps(events))


def test_the_notebook_confirmation_panel_and_transcript_hide_the_secrets() -> None:
    asker = make_user("scientist", staff=False, perms=())
    events = async_to_sync(collect)(
        credential_service([], staff=False).run_turn(
            asker, "Set my credentials", owner=Owner.user(asker.pk)
        )
    )
    state = ChatState()
    for event in events:
        state.handle_event(event)
    assert state.status == "awaiting_confirmation"
    panel = confirmation_html(state.pending, can_decide=True)
    assert "setCredentials" in panel
    assert shows_no_secret(panel + transcript_html(state.messages, state.draft))


def test_the_approvals_queue_history_turn_page_and_exports_hide_the_secrets(
    staff_client: Client, ledger: Ledger
) -> None:
    asker = make_user("owner", staff=False, perms=())
    written: list[dict[str, Any]] = []
    service = credential_service(written, staff=True)
    event = suspended(service, asker)
    confirmation = PendingConfirmation.objects.get(pk=event["id"])
    pages = {
        "queue": staff_client.get("/console/approvals/"),
        "turn page": staff_client.get(f"/console/turns/{confirmation.turn_id}/"),
    }
    decided = async_to_sync(collect)(
        service.resolve_confirmation(asker, str(confirmation.id), True, decided_by="staff:1")
    )
    assert decided[-1]["type"] == "done", decided
    assert written == [INPUT], "the approved write received the real values"
    pages |= {
        "history": staff_client.get("/console/approvals/history/"),
        "turn page after": staff_client.get(f"/console/turns/{confirmation.turn_id}/"),
        "report": staff_client.get(f"/console/turns/{confirmation.turn_id}/report.json"),
        "turn export": staff_client.get("/console/turns/export.jsonl"),
        "audit export": staff_client.get("/console/audit/export.jsonl"),
    }
    leaks = []
    for name, response in pages.items():
        assert response.status_code == 200, name
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if not shows_no_secret(body.decode()):
            leaks.append(name)
    assert "[redacted]" in pages["queue"].content.decode()
    assert "password" in pages["queue"].content.decode(), "the field is named, its value not"
    ledger.cases("redaction: console pages", tried=len(pages), errors=len(leaks))
    assert not leaks


def test_the_console_chat_hides_the_secrets_of_the_staff_members_own_turn(
    staff_client: Client, staff_user: User, settings: Any
) -> None:
    settings.CHATOMON = {"enabled": True}
    service = credential_service([], staff=False)
    event = suspended(service, staff_user)
    html = staff_client.get(f"/console/chat/{event['conversation_id']}/").content.decode()
    assert "setCredentials" in html
    assert shows_no_secret(html)


def audited_settings(capture: str, logged: list[Any]) -> Any:
    with override_settings(
        CHATOMON={
            "audit": {"enabled": True, "level": "all", "logger": logged.append},
            "atom": {"capture_content": capture, "input": [PIIGuard()]},
        }
    ):
        return validate_chat_settings()


@pytest.mark.parametrize("capture", ["full", "hash", "none"])
def test_a_message_blocked_for_personal_data_is_not_kept_in_the_audit_trail(
    capture: str, staff_client: Client, ledger: Ledger
) -> None:
    logged: list[Any] = []
    settings = audited_settings(capture, logged)
    service = ChatService(
        store=DjangoStore(),
        provider=ScriptedProvider([["I cannot help with that."]]),
        toolset=Toolset(toy_registry()),
        atom_config=settings.atom_config(),
        listeners=[AuditListener(settings, store_events=False)],
    )
    asker = make_user(f"carder-{capture}", staff=False, perms=())
    events = async_to_sync(collect)(
        service.run_turn(asker, f"my card is {CARD}", owner=Owner.user(asker.pk))
    )
    # The rows the background writer makes of the logged events, written once the turn is
    # over: SQLite in memory refuses a second writer at once (tests only).
    writer = AuditWriter()
    try:
        for event in logged:
            writer.submit(event)
        assert writer.flush()
    finally:
        writer.close()
    assert events[-1]["type"] == "done"
    rows = list(AuditEvent.objects.values_list("type", "payload"))
    assert {kind for kind, _ in rows} >= {"message_received", "turn_finished"}
    leaked = [kind for kind, payload in rows if CARD in json.dumps(payload)]
    search = staff_client.get("/console/audit/", {"q": CARD}).content.decode()
    search = search[search.index('id="cc-audit-results"') :]  # the rows, not the Type select
    found = "message_received" in search or "turn_finished" in search
    turn = events[-1]["turn_id"]
    for page in (f"/console/turns/{turn}/", f"/console/turns/{turn}/report.json"):
        assert CARD not in staff_client.get(page).content.decode(), page
    ledger.cases("redaction: audit of a PII-blocked message", tried=1, errors=int(bool(leaked)))
    assert not leaked
    assert not found, "the console's audit search finds the card number"
    received = next(payload for kind, payload in rows if kind == "message_received")
    if capture == "full":
        assert received["text"] == "my card is [credit_card removed]"
    elif capture == "none":
        assert received["text"] is None


class KeyLeakError(RuntimeError):
    """A custom provider's error quoting its credentials."""


def test_a_provider_error_message_is_masked_in_a_full_report() -> None:
    message = (
        "401 from https://svc:pa55w0rd@api.example.org with Authorization: Bearer "
        "abcdefghijklmnop1234 and key sk-live0123456789abcdef"
    )

    def failing(messages: Any, tools: Any) -> Any:
        return KeyLeakError(message)

    reports: list[TurnReport] = []
    atom = Atom(
        "custom",
        nucleus=ProviderNucleus(FunctionProvider(failing)),
        capture_content="full",
        on_turn=[reports.append],
    )
    with pytest.raises(Exception):  # noqa: B017, PT011 - the nucleus' failure, whatever its type
        atom.chat_sync("hello")
    error = reports[-1].error_message or ""
    assert reports[-1].error_type == "KeyLeakError"
    assert "api.example.org" in error, "the message stays useful"
    for secret in ("pa55w0rd", "abcdefghijklmnop1234", "sk-live0123456789abcdef"):
        assert secret not in error


def test_the_rule_judges_preview_rows_by_their_field_and_finds_guards_in_groups() -> None:
    rule = Redaction(("password", "token")).with_filters(
        record_filters([parallel(MaxLength(100), PIIGuard(["email"]))])
    )
    preview = {
        "action": "update",
        "changes": [
            {"field": "apiToken", "before": "old-value", "after": "new-value"},
            {"field": "name", "before": "Ada", "after": "ada@example.org"},
        ],
        "values": {"password": "pw", "input_tokens": 3},
    }
    assert rule.value(preview) == {
        "action": "update",
        "changes": [
            {"field": "apiToken", "before": "[redacted]", "after": "[redacted]"},
            {"field": "name", "before": "Ada", "after": "[email removed]"},
        ],
        "values": {"password": "[redacted]", "input_tokens": 3},
    }
