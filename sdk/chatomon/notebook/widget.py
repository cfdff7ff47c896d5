"""`ChatWidget`: chat with an Atom or a ChatService inside a notebook.

```python
from chatomon.notebook import ChatWidget

widget = ChatWidget(service)          # or ChatWidget(atom)
widget                                # shows it: messages, input box, Send / Stop
widget.send("Rename Steel to Iron")   # the same from code; the turn runs in the background
await widget.wait()
widget.status, widget.pending         # "awaiting_confirmation", the confirm_mutation event
widget.approve()                      # what the Approve button does
await widget.wait()
widget.messages[-1]["text"], widget.reports[-1]
```

Each turn runs as a task on the kernel's event loop, so the kernel keeps handling clicks
(Approve, Reject, Stop) while it runs. Enter in the input sends and Shift+Enter starts a
new line, as in the web chat, when anywidget is installed (the box is a small anywidget
textarea, `chatomon.notebook.message_input`); without it the box is ipywidgets' one-line
`Text`, where Enter sends.

Displayed, the widget also leaves a static copy in the output (`text/html` and
`text/plain` beside the widget view): the status, the transcript, a pending confirmation
and the last report. The copy is updated in place (IPython display id) whenever a turn
settles, so a notebook saved later holds the conversation; nbconvert's HTML export, GitHub
and a notebook opened without the widget's kernel show that copy.

Streamed text reaches `draft` in batches, at most one change per `flush_interval`
seconds, not one per token. The state is in traitlets
(`status`, `draft`, `messages`, `pending`, `error`, `last_report`, `reports`); the
panels observe them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import ipywidgets

from chatomon.chat.pipeline.wire import error_event
from chatomon.errors import TurnStateError
from chatomon.notebook.chat_markup import (
    confirmation_html,
    confirmation_text,
    expires_in,
    status_html,
    transcript_html,
    transcript_text,
)
from chatomon.notebook.chat_state import BUSY, ChatState
from chatomon.notebook.markup import details, view
from chatomon.notebook.message_input import message_input
from chatomon.notebook.report_views import report_body_html
from chatomon.notebook.targets import AtomSession, ServiceSession, session_for
from chatomon.public_errors import GENERIC_ERROR_CODE

if TYPE_CHECKING:
    from chatomon.chat.events import ConfirmMutation
    from chatomon.chat.store.records import Owner

__all__ = ["ChatWidget"]


class ChatWidget(ChatState, ipywidgets.VBox):  # type: ignore[misc]
    """A chat panel over an Atom or a ChatService, scriptable from Python.

    Args:
        target: An `Atom`, or a `ChatService` (anything with `run_turn` and
            `resolve_confirmation`).
        actor: Who asks a ChatService (default: an authenticated notebook user, id 0).
        owner: The ChatService conversation owner; default `Owner.user(actor.id)`.
        staff_label: Decide staff approvals from this widget as this staff member; without
            it they wait for the console.
        flush_interval: Seconds between two updates of the streamed text.

    The state (`status`, `draft`, `messages`, `pending`, `error`, `last_report`,
    `reports`) is the `ChatState` traits, documented there.
    """

    def __init__(
        self,
        target: object,
        *,
        actor: Any = None,
        owner: Owner | None = None,
        staff_label: str | None = None,
        flush_interval: float = 0.05,
        **kwargs: Any,
    ) -> None:
        if actor is None:
            from chatomon.data.actor import SimpleActor  # noqa: PLC0415 - only services need it

            actor = SimpleActor(id=0, is_authenticated=True)
        self.session = session_for(target, actor=actor, owner=owner, staff_label=staff_label)
        self._tasks: set[asyncio.Task[None]] = set()
        self._status_panel = ipywidgets.HTML()
        self._transcript = ipywidgets.HTML()
        self._confirm_text = ipywidgets.HTML()
        self._approve_button = ipywidgets.Button(description="Approve", button_style="success")
        self._reject_button = ipywidgets.Button(description="Reject", button_style="danger")
        self._confirm_row = ipywidgets.VBox(
            [self._confirm_text, ipywidgets.HBox([self._approve_button, self._reject_button])]
        )
        self._input = message_input(width="60%")
        self._send_button = ipywidgets.Button(description="Send", button_style="primary")
        self._stop_button = ipywidgets.Button(description="Stop", button_style="warning")
        self._report_panel = ipywidgets.HTML()
        input_row = ipywidgets.HBox([self._input, self._send_button, self._stop_button])
        super().__init__(
            children=[
                self._status_panel,
                self._transcript,
                self._confirm_row,
                input_row,
                self._report_panel,
            ],
            **kwargs,
        )
        self.flush_interval = flush_interval
        self._expiry_tick: asyncio.TimerHandle | None = None
        self._send_button.on_click(self._on_send_click)
        # Enter in the box sends a "submit" message to its kernel-side widget.
        self._input.on_msg(self._on_input_msg)
        self._stop_button.on_click(self._on_stop_click)
        self._approve_button.on_click(self._on_approve_click)
        self._reject_button.on_click(self._on_reject_click)
        self.observe(self._render_transcript, names=["messages", "draft"])
        self.observe(self._render_controls, names=["status", "pending", "error"])
        self.observe(self._render_report, names=["last_report", "status"])
        self._displays: list[Any] = []  # IPython DisplayHandles of this widget's outputs
        self.observe(self._refresh_static_copies, names=["status"])
        self._render_transcript()
        self._render_controls()
        self._render_report()

    # The Python API -------------------------------------------------------------------

    def send(self, text: str) -> asyncio.Task[None]:
        """Start a turn for the user message `text`; returns its background task.

        Raises:
            TurnStateError: While a turn runs or waits for a confirmation.
        """
        if self.status in BUSY:
            raise TurnStateError(
                f"a turn is {self.status.replace('_', ' ')}; wait for it, decide it or stop it",
                state=self.status,
                operation="send",
            )
        self._add({"role": "user", "text": text})
        self.error = ""
        self.status = "running"
        return self._start(self.session.turn(text))

    def approve(self) -> asyncio.Task[None]:
        """Approve the pending confirmation (the Approve button)."""
        return self.decide(approved=True)

    def reject(self) -> asyncio.Task[None]:
        """Reject the pending confirmation (the Reject button)."""
        return self.decide(approved=False)

    def decide(self, *, approved: bool) -> asyncio.Task[None]:
        """Decide the pending confirmation; the resumed turn streams into this widget.

        Raises:
            TurnStateError: When no confirmation is pending.
        """
        if not self.pending:
            raise TurnStateError(
                "no confirmation is pending", state=self.status, operation="decide"
            )
        pending, self.pending = dict(self.pending), {}
        self.status = "running"
        return self._start(self.session.decide(pending, approved))

    async def confirm(self, pending: ConfirmMutation) -> bool:
        """A tool loop `Confirmer` answered by this widget's buttons (Atom targets).

        Build the atom's tool loop with it, or set it afterwards:
        `loop.confirmer = widget.confirm`.

        Raises:
            TypeError: When the widget's target is not an Atom.
        """
        if not isinstance(self.session, AtomSession):
            raise TypeError("ChatService turns confirm through the service; no confirmer needed")
        return await self.session.confirm(pending)

    def stop(self) -> None:
        """Cancel the running turn; text streamed so far stays in the transcript."""
        for task in self._tasks:
            task.cancel()
        if isinstance(self.session, AtomSession):
            self.session.cancel_waiting()
        self._end_reply(stopped=True)
        self.pending = {}
        self._add({"role": "notice", "text": "Stopped."})
        self.status = "stopped"

    def close(self) -> None:
        """Close the widget and its views; a pending confirmation's countdown stops too."""
        # Also called by ipywidgets' __del__, on a widget whose __init__ may have failed.
        tick = getattr(self, "_expiry_tick", None)
        if tick is not None:
            tick.cancel()
            self._expiry_tick = None
        super().close()

    async def wait(self) -> None:
        """Wait until the turn answered, failed or stopped, or waits for a confirmation.

        An Atom's tool loop waits for its confirmation inside the running task, so a
        pending confirmation ends the wait too: decide it, then wait again.
        """
        confirming: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake(change: Any) -> None:
            if change["new"] == "awaiting_confirmation" and not confirming.done():
                confirming.set_result(None)

        self.observe(wake, names=["status"])
        try:
            while self._tasks and self.status != "awaiting_confirmation":
                await asyncio.wait({*self._tasks, confirming}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.unobserve(wake, names=["status"])
            confirming.cancel()

    # Event handling -------------------------------------------------------------------

    def _start(self, events: AsyncIterator[dict[str, Any]]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(self._consume(events))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _consume(self, events: AsyncIterator[dict[str, Any]]) -> None:
        try:
            async for event in events:
                self.handle_event(event)
        except asyncio.CancelledError:
            raise  # stop() already recorded it
        except Exception as error:  # noqa: BLE001 - a notebook shows the failure, not a trace
            # The public code a ChatService turn ends with; the message keeps the detail
            # (the notebook's user is the developer of the target, not an end user).
            self.handle_event(error_event(GENERIC_ERROR_CODE, f"{type(error).__name__}: {error}"))
        if self.status == "running" and not self._others_running():
            self._end_reply(stopped=False)
            self.status = "idle"

    def _others_running(self) -> bool:
        current = asyncio.current_task()
        return any(task is not current and not task.done() for task in self._tasks)

    # Buttons and panels ---------------------------------------------------------------

    def _on_send_click(self, _button: object = None) -> None:
        text = self._input.value.strip()
        if text and self.status not in BUSY:
            self._input.value = ""
            self.send(text)

    def _on_input_msg(self, _widget: object, content: Any, _buffers: object = None) -> None:
        if not (isinstance(content, dict) and content.get("event") == "submit"):
            return
        text = content.get("text")
        if not isinstance(text, str):  # ipywidgets' Text: the value came before the message
            self._on_send_click()
        elif text.strip() and self.status not in BUSY:
            # Not `self._input.value = ""`: the box emptied itself, and the kernel's copy
            # may be stale, so writing it would erase what was typed since Enter.
            self.send(text.strip())
        elif text.strip():  # a turn runs or waits: the box (which emptied itself) gets it back
            self._input.send({"event": "restore", "text": text})

    def _on_stop_click(self, _button: object = None) -> None:
        if self.status in BUSY:
            self.stop()

    def _on_approve_click(self, _button: object = None) -> None:
        if self.pending:
            self.approve()

    def _on_reject_click(self, _button: object = None) -> None:
        if self.pending:
            self.reject()

    def _can_decide(self) -> bool:
        if self.pending.get("approver") != "staff":
            return True
        return isinstance(self.session, ServiceSession) and self.session.staff_label is not None

    def _render_transcript(self, _change: object = None) -> None:
        self._transcript.value = transcript_html(self.messages, self.draft)

    def _render_controls(self, _change: object = None) -> None:
        self._status_panel.value = status_html(self.status, self.error)
        self._render_confirmation()
        self._confirm_row.layout.display = "flex" if self.pending else "none"
        self._approve_button.disabled = self._reject_button.disabled = not self._can_decide()
        self._send_button.disabled = self.status in BUSY
        self._stop_button.disabled = self.status not in BUSY

    def _render_confirmation(self) -> None:
        self._confirm_text.value = confirmation_html(self.pending, can_decide=self._can_decide())
        # "expires in 29 s" counts down once a second while the confirmation is pending.
        if self._expiry_tick is not None:
            self._expiry_tick.cancel()
            self._expiry_tick = None
        if expires_in(self.pending.get("expires_at")).startswith("expires in"):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # rendered outside the kernel's loop: no countdown
                return
            self._expiry_tick = loop.call_later(1.0, self._render_confirmation)

    def _render_report(self, _change: object = None) -> None:
        self._report_panel.value = self._report_html()

    def _report_html(self) -> str:
        # While a turn runs or waits, the last report is the previous turn's: not shown.
        report = self.last_report
        if report is None or self.status in BUSY:
            return ""
        return view(details("Last turn report", report_body_html(report)))

    # The static copy --------------------------------------------------------------------

    def static_html(self) -> str:
        """The widget as it is now, as HTML without controls: the output's saved copy."""
        parts = [status_html(self.status, self.error), transcript_html(self.messages, self.draft)]
        if self.pending:
            parts.append(confirmation_html(self.pending, can_decide=self._can_decide()))
        parts.append(self._report_html())
        return "".join(parts)

    def static_text(self) -> str:
        """The widget as it is now, as plain text (its repr in a text-only front end)."""
        lines = [f"ChatWidget ({self.status.replace('_', ' ')})"]
        lines.append(transcript_text(self.messages, self.draft))
        if self.pending:
            lines.append(confirmation_text(self.pending))
        return "\n".join(lines)

    def _ipython_display_(self) -> None:
        """Display the widget with its static copy, under a display id.

        When a turn settles (answered, failed, stopped, or waiting for a confirmation) the
        copy is updated in place, so the notebook saved afterwards holds the conversation.
        """
        from IPython.display import display  # noqa: PLC0415 - only inside IPython

        bundle = self._repr_mimebundle_()
        if bundle is not None:
            handle = display(bundle, raw=True, display_id=True)  # type: ignore[no-untyped-call]
            self._displays.append(handle)

    def _refresh_static_copies(self, change: Any) -> None:
        if change["new"] == "running" or not self._displays:
            return
        bundle = self._repr_mimebundle_()
        if bundle is None:
            return
        for handle in self._displays:
            handle.update(bundle, raw=True)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The widget view, with the static copy as text/html and text/plain beside it."""
        bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if bundle is None:  # closed
            return None
        return {**bundle, "text/html": self.static_html(), "text/plain": self.static_text()}
