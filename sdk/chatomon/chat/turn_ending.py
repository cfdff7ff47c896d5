"""The end of a completed turn, made by a sync caller on its own thread.

A turn that completes is closed in the store (its last items and report written), told
to the listeners (`turn_finished`, `assistant_message`), and answered with `done`. Inside
`ChatService.run_turn` that closing is a store call, which for a store on a thread (the
Django ORM's) is a trip from the event loop to that thread and back. A sync caller already
on such a thread, that reads the whole stream before answering (a view on its request
thread), can end the turn there instead:

```python
ending = TurnEnding()
events = async_to_sync(collect)(service.run_turn(user, text, ending=ending))
if ending.ready:  # the answer is complete: record it here, then answer `done`
    events.append(ending.finish(close_turn_here))
```

The stream then ends without `done`; `finish` closes the turn through the sync `close`
given (the store's close on this thread), tells the listeners in the same order as the
stream would have (awaiting on the event loop only what a listener returns to await), and
returns the `done` event. When closing fails, the turn is recorded as aborted and `finish`
returns the `error` event the stream would have ended with.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol
from uuid import UUID

from asgiref.sync import async_to_sync

from chatomon.chat.service_events import done_event
from chatomon.chat.store.records import MessageItem, Owner, PlannedTurn, TurnStatus
from chatomon.chat.turn_driver import (
    TurnDriver,
    TurnRun,
    closing_fields,
    finished_payload,
    reply_payload,
)
from chatomon.events import TurnDone
from chatomon.schemas import TurnReport

__all__ = ["TurnCloser", "TurnEnding"]

logger = logging.getLogger("chatomon.chat.service")


class TurnCloser(Protocol):
    """A sync `ConversationStore.close_turn`, run on the caller's thread."""

    def __call__(  # noqa: D102 - the store's close_turn, documented there
        self,
        owner: Owner,
        conversation_id: UUID,
        turn_id: str,
        *,
        items: Sequence[MessageItem],
        status: TurnStatus,
        report: TurnReport | None,
        position: int | None,
        planned: PlannedTurn | None = None,
    ) -> None: ...


class TurnEnding:
    """A completed turn handed to its caller to record and announce (module docstring)."""

    def __init__(self) -> None:
        self._handed: tuple[TurnDriver, TurnRun, TurnDone] | None = None

    @property
    def ready(self) -> bool:
        """Whether a completed turn waits for `finish`."""
        return self._handed is not None

    def hand_over(self, driver: TurnDriver, run: TurnRun, done: TurnDone) -> None:
        """Called by the driver when the turn completes, instead of ending it itself.

        Raises:
            ValueError: The turn publishes its events (a resumed turn): those are sent
                from the event loop as they happen, so it cannot end on the caller's thread.
        """
        if run.publish:
            raise ValueError("a turn that publishes its events ends in its stream")
        self._handed = (driver, run, done)

    def finish(self, close: TurnCloser) -> dict[str, Any]:
        """Close the turn with `close`, tell the listeners; the `done` (or `error`) event.

        Raises:
            RuntimeError: No completed turn was handed over (see `ready`).
        """
        if self._handed is None:
            raise RuntimeError("no completed turn to finish")
        driver, run, done = self._handed
        self._handed = None
        try:
            close(run.owner, run.conversation_id, run.turn_id, **closing_fields(run, done))
            run.planned = None
        except Exception as error:
            logger.exception("chat turn %s failed", run.turn_id)
            return {**async_to_sync(driver.failed)(run, None, error), **run.ids}
        driver.tell_now(run, "turn_finished", **finished_payload("completed", done.report))
        driver.tell_now(run, "assistant_message", **reply_payload(done))
        return {**done_event(done, str(run.conversation_id)), **run.ids}
