"""ChatWidget state transitions through its traitlets and button handlers: send, stream,
tool call, confirmation click, stop, error — over an Atom and over a ChatService."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any
from uuid import UUID

import pytest

from chatomon import Atom, Blocklist, TurnReport
from chatomon.chat.loop import ToolLoop
from chatomon.chat.pipeline import ChatService
from chatomon.chat.store import MemoryStore
from chatomon.data.actor import SimpleActor
from chatomon.errors import ProviderUnavailableError, TurnStateError
from chatomon.notebook import ChatWidget
from chatomon.providers import ProviderNucleus, ScriptedProvider
from chatomon.providers.testing import Delay, tool_call
from tests.chat.services import RENAME, confirm_settings, service


def chat_service(
    provider: ScriptedProvider, log: list[dict[str, Any]], *, staff: bool = False
) -> ChatService:
    """A ChatService on a MemoryStore whose renameMaterial is confirmed (or staff-approved)."""
    return service(MemoryStore(), provider, log=log, settings=confirm_settings(staff=staff))


def roles(widget: ChatWidget) -> list[str]:
    return [entry["role"] for entry in widget.messages]


def watch(widget: ChatWidget, name: str) -> list[Any]:
    seen: list[Any] = []
    widget.observe(lambda change: seen.append(change["new"]), names=[name])
    return seen


async def test_send_runs_the_turn_in_the_background_then_goes_idle() -> None:
    atom = Atom("echo", nucleus=lambda messages, guidance: f"You said {messages[-1].content}")
    widget = ChatWidget(atom)
    statuses = watch(widget, "status")
    task = widget.send("hi")
    assert widget.status == "running" and not task.done()
    assert widget.messages == [{"role": "user", "text": "hi"}]
    await widget.wait()
    assert statuses == ["running", "idle"]
    assert widget.messages[-1] == {
        "role": "assistant",
        "text": "You said hi",
        "final_action": "answered",
    }
    assert isinstance(widget.last_report, TurnReport)
    assert widget.reports == [widget.last_report]
    assert "answered" in widget._report_panel.value
    widget.send("again")
    await widget.wait()
    assert len(widget.reports) == 2
    # The atom session carries the history from turn to turn.
    assert [m.content for m in widget.session.history] == [
        "hi",
        "You said hi",
        "again",
        "You said again",
    ]


async def test_the_send_button_sends_the_input_box_and_clears_it() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    widget._input.value = "  hello  "
    widget._send_button.click()
    assert widget._input.value == "" and widget._send_button.disabled
    await widget.wait()
    assert roles(widget) == ["user", "assistant"] and widget.messages[0]["text"] == "hello"
    widget._input.value = "   "
    widget._send_button.click()  # nothing to send
    assert widget.status == "idle" and len(widget.messages) == 2


async def test_streamed_text_reaches_draft_in_batches() -> None:
    chunks = [f"w{n} " for n in range(40)]
    provider = ScriptedProvider([chunks], chunk_delay=0.002)
    widget = ChatWidget(Atom("s", ProviderNucleus(provider)), flush_interval=0.03)
    drafts = watch(widget, "draft")
    widget.send("talk")
    await widget.wait()
    streamed = [d for d in drafts if d]
    assert streamed, "the draft showed text while it streamed"
    assert len(streamed) < len(chunks) / 3  # batched, not one change per chunk
    assert all("".join(chunks).startswith(d) for d in streamed)
    assert widget.draft == "" and widget.messages[-1]["text"] == "".join(chunks)


async def test_a_reset_chunk_discards_the_streamed_text() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    widget.status = "running"
    widget.handle_event({"type": "text_chunk", "content": "Acme is "})
    widget._flush()
    widget.handle_event({"type": "text_chunk", "content": "We are", "reset": True})
    widget._flush()
    assert widget.draft == "We are"


async def test_a_tool_call_becomes_one_entry_completed_by_its_result() -> None:
    provider = ScriptedProvider(
        [[tool_call("query", {"manager": "PartManager", "fields": ["name"]})], ["Three."]]
    )
    widget = ChatWidget(chat_service(provider, []))
    widget.send("Which parts?")
    await widget.wait()
    assert roles(widget) == ["user", "tool", "assistant"]
    tool = widget.messages[1]
    assert tool["name"] == "query" and tool["status"] == "ok"
    assert tool["args"] == {"manager": "PartManager", "fields": ["name"]}
    assert tool["result"]["total_count"] == 3
    html = widget._transcript.value
    assert "<details><summary>tool" in html and "PartManager" in html
    assert isinstance(widget.last_report, TurnReport)  # read back from the service's store


async def test_approve_click_resolves_the_confirmation_and_streams_the_resumed_turn() -> None:
    log: list[dict[str, Any]] = []
    service = chat_service(ScriptedProvider([[RENAME], ["Renamed."]]), log)
    widget = ChatWidget(service)
    widget.send("Rename Steel to Iron")
    await widget.wait()
    assert widget.status == "awaiting_confirmation"
    assert widget.pending["mutation"] == "renameMaterial"
    UUID(widget.pending["id"])  # the public confirmation id
    assert widget._confirm_row.layout.display == "flex"
    assert not widget._approve_button.disabled and widget._send_button.disabled
    assert log == []
    with pytest.raises(TurnStateError):
        widget.send("another")
    widget._approve_button.click()
    assert widget.pending == {} and widget.status == "running"
    await widget.wait()
    assert log == [{"material_id": 1, "name": "Iron"}]
    assert widget.status == "idle"
    confirmation = next(e for e in widget.messages if e["role"] == "confirmation")
    assert confirmation["status"] == "approved"
    assert widget.messages[-1]["text"] == "Renamed."
    assert widget._confirm_row.layout.display == "none"
    assert widget.last_report is not None


async def test_reject_click_rejects_and_the_turn_answers() -> None:
    log: list[dict[str, Any]] = []
    service = chat_service(ScriptedProvider([[RENAME], ["Left as is."]]), log)
    widget = ChatWidget(service)
    widget.send("Rename Steel to Iron")
    await widget.wait()
    widget._reject_button.click()
    await widget.wait()
    assert log == []
    confirmation = next(e for e in widget.messages if e["role"] == "confirmation")
    assert confirmation["status"] == "rejected"
    assert widget.messages[-1]["text"] == "Left as is." and widget.status == "idle"


async def test_deciding_without_a_pending_confirmation_is_refused() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "ok"))
    with pytest.raises(TurnStateError, match="no confirmation is pending"):
        widget.approve()
    widget._approve_button.click()  # a stray click does nothing
    assert widget.status == "idle"


async def test_staff_approvals_wait_for_staff_unless_the_widget_is_staff() -> None:
    log: list[dict[str, Any]] = []
    waiting = ChatWidget(chat_service(ScriptedProvider([[RENAME]]), log, staff=True))
    waiting.send("Rename")
    await waiting.wait()
    assert waiting.pending["approver"] == "staff"
    assert waiting._approve_button.disabled and "waits for a staff member" in (
        waiting._confirm_text.value
    )
    staff = ChatWidget(
        chat_service(ScriptedProvider([[RENAME], ["Approved by staff."]]), log, staff=True),
        staff_label="ada",
    )
    staff.send("Rename")
    await staff.wait()
    assert not staff._approve_button.disabled
    staff.approve()
    await staff.wait()
    assert log == [{"material_id": 1, "name": "Iron"}]
    assert staff.messages[-1]["text"] == "Approved by staff."


async def test_an_atom_tool_loop_confirms_through_the_widget() -> None:
    log: list[dict[str, Any]] = []
    toolset = chat_service(ScriptedProvider([]), log).toolset
    loop = ToolLoop(ScriptedProvider([[RENAME], ["Done."]]), toolset, actor=SimpleActor(id=3))
    widget = ChatWidget(Atom("data", loop))
    loop.confirmer = widget.confirm
    task = widget.send("Rename")
    await widget.wait()  # returns while the loop waits for the decision
    assert widget.status == "awaiting_confirmation" and not task.done()
    assert widget.pending["mutation"] == "renameMaterial"
    widget.approve()
    await widget.wait()
    assert log == [{"material_id": 1, "name": "Iron"}]
    assert widget.messages[-1]["text"] == "Done." and widget.status == "idle"


async def test_stop_cancels_the_running_turn_and_keeps_what_was_streamed() -> None:
    provider = ScriptedProvider([["Part one, ", Delay(30), "never"]])
    widget = ChatWidget(Atom("slow", ProviderNucleus(provider)), flush_interval=0.01)
    task = widget.send("go")
    for _ in range(200):
        if widget.draft:
            break
        await asyncio.sleep(0.01)
    assert widget.draft == "Part one, " and not widget._stop_button.disabled
    widget._stop_button.click()
    assert widget.status == "stopped"
    await widget.wait()
    assert task.cancelled()
    assert widget.messages[-2] == {"role": "assistant", "text": "Part one, ", "stopped": True}
    assert widget.messages[-1] == {"role": "notice", "text": "Stopped."}
    assert widget.draft == "" and widget._stop_button.disabled
    widget.send("next")  # a stopped widget takes a new message
    assert widget.status == "running"
    widget.stop()
    await widget.wait()


async def test_stop_aborts_a_service_turn() -> None:
    provider = ScriptedProvider([["Thinking", Delay(30), "..."]])
    service = chat_service(provider, [])
    widget = ChatWidget(service, flush_interval=0.01)
    widget.send("go")
    for _ in range(200):
        if widget.draft:
            break
        await asyncio.sleep(0.01)
    widget.stop()
    await widget.wait()
    assert widget.status == "stopped"
    conversation = UUID(widget.session.conversation_id)
    turns = await service.store.list_turns(conversation_id=conversation)
    assert [turn.status for turn in turns] == ["aborted"]


async def test_an_error_event_shows_and_the_next_message_can_be_sent() -> None:
    provider = ScriptedProvider([ProviderUnavailableError("down", provider="scripted"), ["Back."]])
    widget = ChatWidget(chat_service(provider, []))
    widget.send("hi")
    await widget.wait()
    assert widget.status == "error" and widget.error
    assert widget.messages[-1]["role"] == "error"
    # Reference: provider failures keep their stable reason ("provider_failed").
    assert widget.messages[-1]["code"] == "provider_failed"
    assert "error" in widget._status_panel.value
    widget.send("again")
    await widget.wait()
    assert widget.status == "idle" and widget.messages[-1]["text"] == "Back."
    assert widget.error == ""


async def test_a_failing_atom_turn_reports_the_error_with_its_report() -> None:
    def broken(messages: Any, guidance: Any) -> str:
        raise RuntimeError("nucleus down")

    widget = ChatWidget(Atom("broken", broken))
    widget.send("hi")
    await widget.wait()
    assert widget.status == "error" and "nucleus down" in widget.error
    assert widget.last_report is not None and widget.last_report.final_action == "aborted"


async def test_an_exception_of_the_target_becomes_an_error_entry() -> None:
    class Exploding:
        def run_turn(self, *args: Any, **kwargs: Any) -> Any:
            raise OSError("socket closed")

        def resolve_confirmation(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("not called")

    widget = ChatWidget(Exploding())
    widget.send("hi")
    await widget.wait()
    assert widget.status == "error"
    # A stable code of the event contract, never a class name; the developer gets the detail.
    assert widget.messages[-1] == {
        "role": "error",
        "code": "chat_error",
        "message": "OSError: socket closed",
    }


async def test_the_transcript_escapes_what_it_shows() -> None:
    widget = ChatWidget(Atom("a", nucleus=lambda messages, guidance: "<img src=x onerror=1>"))
    widget.send("<script>alert(1)</script>")
    await widget.wait()
    html = widget._transcript.value
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "&lt;img" in html


def test_a_target_that_is_neither_an_atom_nor_a_service_is_refused() -> None:
    with pytest.raises(TypeError, match="an Atom or a ChatService"):
        ChatWidget(object())


def test_output_orbitals_apply_to_what_the_widget_shows() -> None:
    async def scenario() -> ChatWidget:
        atom = Atom("shop", nucleus=lambda m, g: "Acme is best.", output=[Blocklist(["Acme"])])
        widget = ChatWidget(atom)
        widget.send("who?")
        await widget.wait()
        return widget

    widget = asyncio.run(scenario())
    assert widget.messages[-1]["text"] == widget.session.atom.refusal
    assert "Acme" not in widget._transcript.value


def test_without_ipywidgets_the_error_names_the_notebook_extra() -> None:
    code = (
        "import sys; sys.modules['ipywidgets'] = None\n"
        "import chatomon.notebook as nb\n"
        "try:\n    nb.ChatWidget\nexcept ImportError as e:\n"
        "    print(type(e).__name__, e.extra, 'chatomon[notebook]' in str(e))\n"
        "print(nb.reports_to_dataframe.__name__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={}
    )
    assert result.stdout.split() == [
        "OptionalDependencyError",
        "notebook",
        "True",
        "reports_to_dataframe",
    ]


async def test_closing_the_widget_stops_the_expiry_countdown() -> None:
    service = chat_service(ScriptedProvider([[RENAME], ["Renamed."]]), [])
    widget = ChatWidget(service)
    widget.send("Rename Steel to Iron")
    await widget.wait()
    tick = widget._expiry_tick
    assert tick is not None and not tick.cancelled()  # "expires in ..." counts down
    widget.close()
    # It re-rendered a closed widget once a second until the confirmation expired.
    assert tick.cancelled() and widget._expiry_tick is None
