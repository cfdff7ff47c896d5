"""Turns whose end could not be stored: aborted as soon as the store answers again.

A turn ends in its driver (`chatomon.chat.pipeline.driver`). When the store cannot be
reached at that moment (the database is down, restarting or failing over), the client
still gets its terminal `error` event at once, and `TurnCloser.abort_later` keeps trying
to record the turn as `aborted` in the background: after 0.5 s, then doubling up to 30 s
between tries, for `give_up_seconds` (10 minutes by default). So an outage shorter than
that leaves no turn `running` once the database is back, without a sweep.

What this process cannot do (it was killed, or the outage outlasted the retries) the
sweep does: `python manage.py chat_cleanup` aborts turns left `running` past its
staleness rule (`--stale-after`; see that command).
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from chatomon.chat.store.protocol import ConversationStore
from chatomon.errors import StoreError, TurnTransitionError
from chatomon.schemas import TurnReport

__all__ = ["RETRY_DELAYS", "TurnCloser"]

logger = logging.getLogger(__name__)

RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
"""Seconds between tries; the last repeats until `give_up_seconds`."""


class TurnCloser:
    """Records turns as aborted once the store answers (see the module docstring).

    Args:
        store: The store the turns live in.
        give_up_seconds: How long to keep trying one turn before leaving it to the sweep.
    """

    def __init__(self, store: ConversationStore, *, give_up_seconds: float = 600) -> None:
        self.store = store
        self.give_up_seconds = give_up_seconds
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        """How many turns are still waiting for their close to be stored."""
        return len(self._tasks)

    async def abort(self, turn_id: str, report: TurnReport | None = None) -> bool:
        """Record the turn as aborted now; on a store failure, keep trying in the background.

        Returns whether it was recorded now. Never raises a store failure: the turn's
        client must still get its terminal event.
        """
        try:
            await self.store.update_turn(turn_id, status="aborted", report=report)
        except StoreError as error:
            if not _ended(error):
                self.abort_later(turn_id, report, error)
            return False
        except Exception as error:  # noqa: BLE001 - a failure to record never hides the turn's end
            logger.error("recording chat turn %s as aborted failed: %r", turn_id, error)
            self.abort_later(turn_id, report, error)
            return False
        return True

    def abort_later(
        self, turn_id: str, report: TurnReport | None, error: BaseException | None = None
    ) -> None:
        """Keep trying to record the turn as aborted, in a task of the running loop."""
        logger.warning(
            "chat turn %s could not be recorded as ended (%r); retrying in the background",
            turn_id,
            error,
        )
        task = asyncio.get_running_loop().create_task(self._retry(turn_id, report))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _retry(self, turn_id: str, report: TurnReport | None) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.give_up_seconds
        for attempt in itertools.count():
            await asyncio.sleep(RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)])
            try:
                await self.store.update_turn(turn_id, status="aborted", report=report)
            except Exception as error:  # noqa: BLE001 - retried until the deadline
                if _ended(error):
                    return
                if loop.time() >= deadline:
                    logger.error(
                        "chat turn %s is still recorded as running after %.0f s of retries "
                        "(%r); chat_cleanup will abort it",
                        turn_id,
                        self.give_up_seconds,
                        error,
                    )
                    return
                continue
            logger.info("chat turn %s recorded as aborted once the store answered", turn_id)
            return


def _ended(error: BaseException) -> bool:
    """Whether the failure says the turn already ended (or is gone): nothing left to do.

    A close whose commit went through but whose answer was lost leaves the turn ended.
    """
    return isinstance(error, TurnTransitionError | LookupError)
