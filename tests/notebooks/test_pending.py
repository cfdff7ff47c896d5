"""A notebook's ChatWidget over a ChatService is refused a message while a confirmation waits.

The widget's own state refuses a send while it shows the buttons; a stopped widget (or any
other session of the conversation) reaches the service, which refuses it too.
"""

from __future__ import annotations

from typing import Any

from chatomon.chat.pipeline.wire import PENDING_MESSAGE
from chatomon.chat.store import MemoryStore
from chatomon.notebook import ChatWidget
from chatomon.notebook.targets import ServiceSession
from chatomon.providers import ScriptedProvider
from tests.chat.services import RENAME, collect, confirm_settings, service


async def test_a_stopped_widget_cannot_slip_a_message_past_the_confirmation() -> None:
    log: list[dict[str, Any]] = []
    chat = service(
        MemoryStore(), ScriptedProvider([[RENAME], ["Done."]]), log=log, settings=confirm_settings()
    )
    widget = ChatWidget(chat)
    widget.send("Rename Steel to Iron")
    await widget.wait()
    waiting = dict(widget.pending)
    assert widget.status == "awaiting_confirmation"
    widget.stop()  # the buttons are gone; the confirmation still waits in the store
    widget.send("something else")
    await widget.wait()
    error = widget.messages[-1]
    assert (error["role"], error["code"], error["message"]) == (
        "error",
        "confirmation_pending",
        PENDING_MESSAGE,
    )
    assert log == []
    # Another session of the same owner and conversation (a second widget, a re-run cell).
    assert isinstance(widget.session, ServiceSession)
    session = ServiceSession(chat, widget.session.actor, owner=widget.session.owner)
    session.conversation_id = waiting["conversation_id"]
    events = await collect(session.turn("and again"))
    assert [(e["code"], e["confirmation_id"]) for e in events] == [
        ("confirmation_pending", waiting["id"])
    ]
