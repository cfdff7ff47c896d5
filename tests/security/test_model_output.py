"""Model output that no store can keep: shown, stored and completed, with U+FFFD in its place.

A model may answer with a NUL character or an unpaired surrogate (a vendor's broken
decoding, a local model's byte fallback). The user asked nothing wrong, so the turn is not
refused: every provider text is made storable where it enters chatomon
(`chatomon.providers.contract`, by `chatomon.storable.storable`). Before, the
turn ended with `chat_error` after the text had streamed (the store refused it: PostgreSQL
takes no NUL, no UTF-8 encodes a lone surrogate), and an SSE stream was cut with no
terminal event (`sse.frame` raised UnicodeEncodeError).

In process: `ChatService` on both stores. Over a real uvicorn server
(`tests.reliability.fault_providers.FaultProvider`, "unstorable output"): one turn on each
of HTTP, SSE and WebSocket, then a second turn in the same conversation (its history, read
back from the store, holds the replaced text).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import pytest

from chatomon.chat.store import ConversationStore
from chatomon.chat.store.records import Owner
from chatomon.django.transports.sse import frame
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call
from chatomon.storable import storable, unstorable
from tests.asgi_app.fixtures import close_worker_connections, sse_events
from tests.asgi_app.servers import AsgiServer, Visitor, latest_turn_status, receive_until_terminal
from tests.chat.services import USER, collect, service
from tests.ledger import Ledger
from tests.reliability.fault_providers import UNSTORABLE_CHUNKS
from tests.reliability.test_provider_faults import database_url, faulty, store

# Fixtures used by name: the in-memory then the Django store, the FaultProvider's server.
__all__ = ["close_worker_connections", "database_url", "faulty", "store"]

SHOWN = "A NUL \ufffd and a lone \ufffd surrogate"
"""What the user sees of `UNSTORABLE_CHUNKS`, and what is stored."""
SURFACES = ("http", "sse", "websocket")


def test_storable_replaces_what_no_store_keeps_and_keeps_the_rest() -> None:
    assert storable("".join(UNSTORABLE_CHUNKS)) == SHOWN
    assert storable("pair \ud83d\ude00, lone \udc00") == "pair \U0001f600, lone \ufffd"
    assert all(unstorable(storable(chr(c))) is None for c in range(0xE000))
    fine = "café \U0001f600 \t\n"
    assert storable(fine) is fine


def test_an_sse_frame_of_unencodable_text_is_written_not_raised() -> None:
    written = frame({"type": "text_chunk", "content": "a \ud800 b \x00"})
    assert written.startswith(b"data: ") and written.endswith(b"\n\n")
    assert json.loads(written[6:])["content"] == "a \ufffd b \x00"  # JSON escapes the NUL


async def test_unstorable_model_text_is_shown_stored_and_the_turn_completes(
    store: ConversationStore, ledger: Ledger
) -> None:
    chat = service(store, ScriptedProvider([list(UNSTORABLE_CHUNKS), ["Again."]]))
    events = await collect(chat.run_turn(USER, "Hi"))
    shown = "".join(e["content"] for e in events if e["type"] == "text_chunk")
    turn = await store.get_turn(events[-1]["turn_id"])
    conversation = events[-1]["conversation_id"]
    stored = await store.messages(Owner.user(USER.id), UUID(conversation))
    replies = [m.item.content for m in stored if m.item.kind == "assistant"]
    following = await collect(chat.run_turn(USER, "And now?", conversation))
    survived = events[-1]["type"] == "done" and turn is not None and turn.status == "completed"
    ledger.fault(
        f"model output no store can keep (in process, {type(store).__name__})",
        survived=survived and replies == [SHOWN],
    )
    ledger.running("model output (in process)", count=len(await store.list_turns(status="running")))
    assert survived, events
    assert shown == SHOWN
    assert replies == [SHOWN]
    assert following[-1]["type"] == "done", following


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        ({"manager": "PartManager", "fields": ["name\x00"]}, ["name\ufffd"]),
        ({"manager": "PartManager", "fields": ["name\ud800"]}, ["name\ufffd"]),
    ],
    ids=["nul", "lone-surrogate"],
)
async def test_unstorable_tool_call_arguments_are_stored_replaced(
    store: ConversationStore, ledger: Ledger, arguments: dict[str, Any], shown: list[str]
) -> None:
    """A model's tool call is model output too: its arguments are stored with the turn.

    Before, only text chunks were made storable: on PostgreSQL the turn ended chat_error
    when its tool call was stored (jsonb refuses a NUL; no UTF-8 encodes a lone surrogate).
    """
    chat = service(store, ScriptedProvider([[tool_call("query", arguments)], ["Done."]]))
    events = await collect(chat.run_turn(USER, "Hi"))
    started = [e for e in events if e["type"] == "tool_call"]
    conversation = UUID(events[-1]["conversation_id"])
    stored = await store.messages(Owner.user(USER.id), conversation)
    calls = [call for m in stored for call in getattr(m.item, "tool_calls", ()) or ()]
    survived = events[-1]["type"] == "done"
    ledger.fault(
        f"tool call arguments no store can keep (in process, {type(store).__name__})",
        survived=survived,
    )
    ledger.running(
        "tool call arguments (in process)", count=len(await store.list_turns(status="running"))
    )
    assert survived, events
    assert [e["args"]["fields"] for e in started] == [shown]
    assert [dict(call.args)["fields"] for call in calls] == [shown]


# --- over a real server -----------------------------------------------------------------


def stored_replies(url: str, conversation_id: str) -> list[str]:
    """The assistant texts the server's database holds for a conversation (asked directly)."""
    query = (
        "SELECT content FROM chatomon_chatmessage WHERE conversation_id = {} AND kind = 'assistant'"
        " ORDER BY position"
    )
    if url.startswith("postgres"):
        import psycopg  # noqa: PLC0415

        with psycopg.connect(url, autocommit=True) as connection:
            rows = connection.execute(query.format("%s"), (conversation_id,)).fetchall()
    else:
        path = Path(urlsplit(url).path)
        with sqlite3.connect(path) as connection:
            key = conversation_id.replace("-", "")
            rows = connection.execute(query.format("?"), (key,)).fetchall()
    return [str(row[0]) for row in rows]


async def one_turn(
    server: AsgiServer, surface: str, visitor: Visitor, payload: dict[str, Any]
) -> tuple[int | None, list[dict[str, Any]]]:
    """The HTTP status (None on a socket) and the events of one turn on `surface`."""
    if surface == "websocket":
        async with visitor.socket(server) as socket:
            await socket.send(json.dumps({"type": "message", **payload}))
            return None, await receive_until_terminal(socket, wait=30)
    path = "/chat/" if surface == "http" else "/chat/stream/"
    response = await visitor.post(server, path, payload)
    if surface == "http":
        return response.status_code, response.json()["events"]
    return response.status_code, sse_events(response.content)


@pytest.mark.parametrize("surface", SURFACES)
async def test_unstorable_model_text_on_a_real_server(
    faulty: AsgiServer, database_url: str, surface: str, ledger: Ledger
) -> None:
    visitor = Visitor()  # logged in: a socket cannot hand an anonymous session's cookie back
    await visitor.log_in(faulty, f"model-output-{surface}")
    status, events = await one_turn(faulty, surface, visitor, {"text": "unstorable output"})
    shown = "".join(e["content"] for e in events if e["type"] == "text_chunk")
    recorded = await latest_turn_status(faulty, "completed")
    conversation = str(events[-1].get("conversation_id"))
    replies = await asyncio.to_thread(stored_replies, database_url, conversation)
    following = await one_turn(
        faulty, surface, visitor, {"text": "hello again", "conversation_id": conversation}
    )
    survived = events[-1]["type"] == "done" and recorded == "completed" and replies == [SHOWN]
    ledger.fault(f"model output no store can keep ({surface}, real server)", survived=survived)
    assert status in (None, 200), status
    assert [e["type"] for e in events] == ["text_chunk", "text_chunk", "done"], events
    assert shown == SHOWN
    assert recorded == "completed"
    assert replies == [SHOWN]
    assert following[1][-1]["type"] == "done", following
