"""`Atom`: an LLM nucleus wrapped by input and output orbitals.

```python
from chatomon import Atom, Blocklist, MaxLength, Verdict, orbital

@orbital(side="input")
def opening_hours(ctx):
    if "open" in ctx.message.lower():
        return Verdict.respond("We are open Monday to Friday, 9 to 18.")
    return Verdict.allow()

atom = Atom("support", nucleus=lambda messages, guidance: "Happy to help!",
            input=[opening_hours, MaxLength(2000)], output=[Blocklist(["Acme"])])
result = atom.chat_sync("When are you open?")
assert result.report.final_action == "orbital_response"
```
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, get_args

from chatomon._engine.chain import Step, compile_chain
from chatomon._engine.snapshot import restore_turn
from chatomon._engine.streaming import release_mode, stream_turn
from chatomon._engine.sync import run_sync
from chatomon._rich_display import RichDisplay
from chatomon.errors import ConfigurationError
from chatomon.events import TurnDone
from chatomon.nucleus import Nucleus, as_nucleus
from chatomon.orbitals.base import Orbital, ParallelGroup
from chatomon.redaction import DEFAULT_REDACTION, record_filters
from chatomon.schemas import (
    DEFAULT_BLOCKED_GUIDANCE,
    DEFAULT_BLOCKED_PLACEHOLDER,
    DEFAULT_REFUSAL,
    CaptureContent,
    ErrorPolicy,
    Message,
    TurnPause,
    TurnReport,
)
from chatomon.turn import Turn

__all__ = ["Atom", "ChatResult", "TurnSink"]

TurnSink = Callable[[TurnReport], Awaitable[None] | None]
"""A callable (sync or async) that receives every TurnReport of an atom."""

HistoryInput = Iterable[Message | dict[str, str]]

_CAPTURE_LEVELS: tuple[str, ...] = get_args(CaptureContent)
_ERROR_POLICIES: tuple[str, ...] = get_args(ErrorPolicy)


@dataclass(frozen=True, slots=True)
class ChatResult(RichDisplay):
    """What `Atom.chat` returns.

    Attributes:
        reply: The text sent to the user.
        report: The TurnReport of the turn.
        history: The conversation as the next turn should receive it (a blocked user
            message is already replaced by the placeholder).
    """

    reply: str
    report: TurnReport
    history: tuple[Message, ...]


class Atom:
    """A nucleus with its guards: the unit that runs a conversation turn.

    Args:
        name: Label of the atom in reports and logs.
        nucleus: What writes the replies: a `Nucleus` (an object with `run(request)`, such
            as a provider's nucleus or the data assistant's tool loop) or any sync or async
            callable `(messages: list[Message], guidance: tuple[str, ...]) -> str`.
        input: Orbitals run on the user message, in order; `parallel(...)` groups run
            concurrently.
        output: Orbitals run on each reply of the nucleus, in order.
        refusal: Reply sent when a message is blocked without a specific reply, and when
            the output chain rejects the last allowed reply.
        blocked_placeholder: Text that replaces a blocked user message in the history.
        blocked_guidance: Guidance the nucleus receives first in a guided refusal; None
            for none.
        max_attempts: How many nucleus replies the output chain may check in one turn.
        capture_content: How much text reports hold: "none", "hash" (SHA-256) or "full".
        orbital_timeout: Seconds an orbital may take unless it sets its own `timeout`.
        on_error: What an orbital's failure or timeout means unless it sets its own
            `on_error`: "block" (fail closed, the default) or "allow".
        on_turn: Callables (sync or async) receiving every TurnReport; one that raises is
            logged and never breaks the turn.
        stream_window: With streaming output orbitals, the fewest new characters checked
            and released at once by `stream`.

    Attributes:
        record_redaction: The rule every record and every shown payload of the atom's
            turns passes (its reports' texts, tool payloads and mutation inputs where a
            surface shows them): `chatomon.redaction`'s default, plus what the atom's
            orbitals hide in records (a `PIIGuard`'s personal data).

    Raises:
        ConfigurationError: For any invalid argument, naming it and what is allowed.
    """

    def __init__(
        self,
        name: str,
        nucleus: Nucleus | Callable[..., Any],
        *,
        input: Sequence[Orbital | ParallelGroup] = (),
        output: Sequence[Orbital | ParallelGroup] = (),
        refusal: str = DEFAULT_REFUSAL,
        blocked_placeholder: str = DEFAULT_BLOCKED_PLACEHOLDER,
        blocked_guidance: str | None = DEFAULT_BLOCKED_GUIDANCE,
        max_attempts: int = 3,
        capture_content: CaptureContent = "none",
        orbital_timeout: float = 10.0,
        on_error: ErrorPolicy = "block",
        on_turn: Sequence[TurnSink] = (),
        stream_window: int = 40,
    ) -> None:
        _require_text("name", name)
        _require_text("refusal", refusal)
        _require_text("blocked_placeholder", blocked_placeholder)
        if blocked_guidance is not None:
            _require_text("blocked_guidance", blocked_guidance)
        _require_positive_int("max_attempts", max_attempts)
        _require_positive_int("stream_window", stream_window)
        if isinstance(orbital_timeout, bool) or not (
            isinstance(orbital_timeout, int | float) and orbital_timeout > 0
        ):
            raise ConfigurationError(
                f"orbital_timeout must be a positive number of seconds, got {orbital_timeout!r}",
                field="orbital_timeout",
                value=orbital_timeout,
            )
        if on_error not in _ERROR_POLICIES:
            raise ConfigurationError(
                f"on_error must be one of {_ERROR_POLICIES}, got {on_error!r}",
                field="on_error",
                value=on_error,
                allowed=_ERROR_POLICIES,
            )
        if capture_content not in _CAPTURE_LEVELS:
            raise ConfigurationError(
                f"capture_content must be one of {_CAPTURE_LEVELS}, got {capture_content!r}",
                field="capture_content",
                value=capture_content,
                allowed=_CAPTURE_LEVELS,
            )
        for sink in on_turn:
            if not callable(sink):
                raise ConfigurationError(
                    f"on_turn items must be callables receiving a TurnReport, "
                    f"got {type(sink).__name__}",
                    field="on_turn",
                    value=type(sink).__name__,
                )
        self.name = name
        self.nucleus = as_nucleus(nucleus)
        self.refusal = refusal
        self.blocked_placeholder = blocked_placeholder
        self.blocked_guidance = blocked_guidance
        self.max_attempts = max_attempts
        self.capture_content: CaptureContent = capture_content
        self.on_turn: tuple[TurnSink, ...] = tuple(on_turn)
        self.stream_window = stream_window
        names: set[str] = set()
        self.input_steps: tuple[Step, ...] = compile_chain(
            _as_list("input", input),
            side="input",
            default_timeout=orbital_timeout,
            default_on_error=on_error,
            taken_names=names,
        )
        self.output_steps: tuple[Step, ...] = compile_chain(
            _as_list("output", output),
            side="output",
            default_timeout=orbital_timeout,
            default_on_error=on_error,
            taken_names=names,
        )
        self.release_mode = release_mode(self.output_steps)
        self.record_redaction = DEFAULT_REDACTION.with_filters(
            record_filters((*self.input_steps, *self.output_steps))
        )

    def begin(
        self,
        text: str,
        *,
        history: HistoryInput = (),
        conversation_id: str | None = None,
        turn_id: str | None = None,
    ) -> Turn:
        """Start a turn to drive step by step (the connector API); see `Turn`."""
        if not isinstance(text, str):
            raise TypeError(f"the user message must be a str, got {type(text).__name__}")
        return Turn(
            self,
            text,
            history=_as_history(history),
            conversation_id=conversation_id,
            turn_id=turn_id,
        )

    def stream(
        self,
        text: str,
        *,
        history: HistoryInput = (),
        conversation_id: str | None = None,
        turn_id: str | None = None,
    ) -> AsyncIterator[Any]:
        """Run a turn, yielding `TextChunk`s as the user may see them, then `TurnDone`.

        Text passes straight through when the atom has no output orbitals. When every
        output orbital declares `streaming = True`, text is released window by window
        (`stream_window` characters at least, never splitting a word) as each prefix
        passes the chain. Otherwise the reply is held until the output chain accepts it.
        A chunk with `reset=True` tells the client to discard the text it showed of this
        reply (shown text rejected afterwards). Other events of the nucleus (tool calls of
        a tool loop) pass through as they come.

        Raises:
            NucleusError: When the nucleus fails; the turn is reported as aborted.
        """
        turn = self.begin(text, history=history, conversation_id=conversation_id, turn_id=turn_id)
        return stream_turn(turn, self.nucleus, window=self.stream_window)

    def resume(
        self, snapshot: Mapping[str, Any], *, pause: TurnPause | None = None
    ) -> AsyncIterator[Any]:
        """Continue a suspended turn from its `TurnSuspended.snapshot`, in any process.

        The input chain is not run again; this atom's nucleus continues the reply that was
        being written, so build the atom with a nucleus restored from the
        `TurnSuspended.state` it saved (the tool loop's `resume`). Events are those of
        `stream`, ending with `TurnDone` (one report for the whole turn, `pause` in its
        `pauses`) or another `TurnSuspended`.

        Raises:
            TurnStateError: For a snapshot of another atom or snapshot version.
        """
        turn, progress = restore_turn(self, snapshot)
        if pause is not None:
            turn.record_pause(pause)
        return stream_turn(turn, self.nucleus, window=self.stream_window, progress=progress)

    async def chat(
        self,
        text: str,
        *,
        history: HistoryInput = (),
        conversation_id: str | None = None,
        turn_id: str | None = None,
    ) -> ChatResult:
        """Run a whole turn and return the reply, its report and the next history.

        Raises:
            NucleusError: When the nucleus fails; `error.report` is the aborted turn's report.
        """
        done: TurnDone | None = None
        # Read the stream to its end (done is its last event) so it closes here, not later
        # through the event loop's async-generator finalizer.
        async for event in self.stream(
            text, history=history, conversation_id=conversation_id, turn_id=turn_id
        ):
            if isinstance(event, TurnDone):
                done = event
        assert done is not None, "a turn that returns always ends with its done event"
        return ChatResult(reply=done.reply, report=done.report, history=done.history)

    def chat_sync(
        self,
        text: str,
        *,
        history: HistoryInput = (),
        conversation_id: str | None = None,
        turn_id: str | None = None,
    ) -> ChatResult:
        """`chat` for synchronous code; works in plain scripts and inside a running loop."""
        return run_sync(
            lambda: self.chat(
                text, history=history, conversation_id=conversation_id, turn_id=turn_id
            )
        )

    def __repr__(self) -> str:
        return (
            f"<Atom {self.name!r} input={len(self.input_steps)} output={len(self.output_steps)} "
            f"capture={self.capture_content}>"
        )


def _require_text(field: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(
            f"{field} must be a non-empty string, got {value!r}", field=field, value=value
        )


def _require_positive_int(field: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            f"{field} must be a whole number of at least 1, got {value!r}",
            field=field,
            value=value,
        )


def _as_list(field: str, value: object) -> list[Any]:
    if isinstance(value, Orbital | ParallelGroup):
        return [value]
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"{field} must be a list of orbitals, got {type(value).__name__}",
            field=field,
            value=type(value).__name__,
        )
    return list(value)


def _as_history(history: HistoryInput) -> tuple[Message, ...]:
    return tuple(
        item if isinstance(item, Message) else Message.model_validate(item) for item in history
    )
