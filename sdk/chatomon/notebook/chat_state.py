"""`ChatState`: a chat's state as traitlets, and how each chat event changes it.

`ChatWidget` is a `ChatState`; its panels observe these traits. The state follows the
chat event contract (`text_chunk`, `tool_call`, `tool_result`, `confirm_mutation`,
`confirmation_resolved`, `done`, `error`) whether the events come from an Atom or a
ChatService. Streamed text is batched: chunks collect in a buffer that reaches `draft`
at most once per `flush_interval` seconds (and at once when the reply ends).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from traitlets import Dict, Float, HasTraits, Instance, List, Unicode

from chatomon.schemas import TurnReport

__all__ = ["BUSY", "TOOL_WAITING", "ChatState"]

BUSY = ("running", "awaiting_confirmation")
"""The statuses in which a new message cannot be sent."""

TOOL_WAITING = "waiting for confirmation"
"""The status of a tool entry whose call waits for a confirmation (not "running")."""


class ChatState(HasTraits):
    """The transcript, the streamed reply, the pending confirmation and the reports.

    Attributes:
        status: "idle", "running", "awaiting_confirmation", "error" or "stopped".
        draft: The reply being streamed.
        messages: The transcript: dicts with a "role" of "user", "assistant", "tool",
            "confirmation", "error" or "notice".
        pending: The `confirm_mutation` event waiting for a decision, or {}.
        error: The message of the last error event.
        last_report: The TurnReport of the last finished turn.
        reports: Every TurnReport received.
        flush_interval: Seconds between two updates of `draft` while text streams.
    """

    status = Unicode("idle")
    draft = Unicode("")
    messages: List[dict[str, Any]] = List()
    pending = Dict()
    error = Unicode("")
    last_report = Instance(TurnReport, allow_none=True)
    reports: List[TurnReport] = List()
    flush_interval = Float(0.05)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._chunks: list[str] = []
        self._flush_handle: asyncio.TimerHandle | None = None

    def handle_event(self, event: Mapping[str, Any]) -> None:
        """Apply one event of the chat event contract to the widget's state."""
        kind = event.get("type")
        if kind == "text_chunk":
            self._on_chunk(str(event.get("content", "")), reset=bool(event.get("reset")))
        elif kind == "tool_call":
            self._add({"role": "tool", **_pick(event, "id", "name", "args"), "status": "running"})
        elif kind == "tool_result":
            self._on_tool_result(event)
        elif kind == "confirm_mutation":
            self._on_confirm_mutation(event)
        elif kind == "confirmation_resolved":
            self._update_confirmation(str(event.get("id")), str(event.get("status", "")))
            self._set_waiting_tool(None, "running")
        elif kind == "done":
            self._on_done(event)
        elif kind == "error":
            self._on_error(event)

    def _on_chunk(self, content: str, *, reset: bool) -> None:
        if reset:
            self._chunks.clear()
            self.draft = ""
        self._chunks.append(content)
        if self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(self.flush_interval, self._flush)

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._chunks:
            self.draft += "".join(self._chunks)
            self._chunks.clear()

    def _end_reply(self, *, stopped: bool) -> None:
        """Move what was streamed into the transcript (a stopped reply keeps its text)."""
        self._flush()
        if stopped and self.draft:
            self._add({"role": "assistant", "text": self.draft, "stopped": True})
        self.draft = ""

    def _on_tool_result(self, event: Mapping[str, Any]) -> None:
        result = event.get("result")
        status = result.get("status", "ok") if isinstance(result, Mapping) else "ok"
        entries = list(self.messages)
        for index in range(len(entries) - 1, -1, -1):
            entry = entries[index]
            if entry.get("role") == "tool" and entry.get("id") == event.get("id"):
                entries[index] = {**entry, "result": result, "status": status}
                self.messages = entries
                return
        self._add({"role": "tool", **_pick(event, "id", "name", "result"), "status": status})

    def _on_confirm_mutation(self, event: Mapping[str, Any]) -> None:
        self._flush()
        fields = _pick(event, "id", "call_id", "mutation", "input", "preview", "approver")
        # The mutate call does not run while it waits: its entry (`call_id`) says so.
        self._set_waiting_tool(str(event.get("call_id")), TOOL_WAITING)
        self._add({"role": "confirmation", **fields, "status": "pending"})
        self.pending = dict(event)
        self.status = "awaiting_confirmation"

    def _set_waiting_tool(self, call_id: str | None, status: str) -> None:
        """Mark the tool entry of `call_id` (None: the one waiting) with `status`."""
        entries = list(self.messages)
        for index in range(len(entries) - 1, -1, -1):
            entry = entries[index]
            if entry.get("role") != "tool" or "result" in entry:
                continue
            if (call_id is None and entry.get("status") == TOOL_WAITING) or (
                call_id is not None and str(entry.get("id")) == call_id
            ):
                entries[index] = {**entry, "status": status}
                self.messages = entries
                return

    def _update_confirmation(self, confirmation_id: str, status: str) -> None:
        self.messages = [
            {**entry, "status": status}
            if entry.get("role") == "confirmation" and str(entry.get("id")) == confirmation_id
            else entry
            for entry in self.messages
        ]

    def _on_done(self, event: Mapping[str, Any]) -> None:
        self._end_reply(stopped=False)
        self._add(
            {
                "role": "assistant",
                "text": str(event.get("reply", "")),
                "final_action": event.get("final_action"),
            }
        )
        self._keep_report(event.get("report"))
        self.status = "idle"

    def _on_error(self, event: Mapping[str, Any]) -> None:
        self._end_reply(stopped=False)
        message = str(event.get("message", ""))
        self._add({"role": "error", "code": str(event.get("code", "error")), "message": message})
        self._keep_report(event.get("report"))
        self.pending = {}
        self.error = message
        self.status = "error"

    def _keep_report(self, report: object) -> None:
        if isinstance(report, TurnReport):
            self.reports = [*self.reports, report]
            self.last_report = report

    def _add(self, entry: dict[str, Any]) -> None:
        self.messages = [*self.messages, entry]


def _pick(event: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {name: event[name] for name in names if name in event}
