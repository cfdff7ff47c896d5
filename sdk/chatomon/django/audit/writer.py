"""`AuditWriter`: writes audit events as AuditEvent rows from a background thread, in batches.

A turn only appends to a list (microseconds); the thread takes up to `batch_size` events
at a time and writes each batch with one `bulk_create`. It starts on the first event and
ends by itself after `idle_seconds` without events, and closes its database connection
after every batch, so nothing has to be stopped; `close()` writes the rest and stops it at
once. A failing write is logged (the count and the exception type), never raised.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = ["AuditWriter"]

logger = logging.getLogger(__name__)


class AuditWriter:
    """Writes audit event mappings (as `chatomon.django.audit` builds them) to the database.

    Args:
        batch_size: Most rows written by one statement.
        idle_seconds: How long the thread waits for more events before it ends.
        using: The database alias.
    """

    def __init__(
        self, *, batch_size: int = 500, idle_seconds: float = 2.0, using: str = "default"
    ) -> None:
        self.batch_size = batch_size
        self.idle_seconds = idle_seconds
        self.using = using
        self._pending: list[Mapping[str, Any]] = []
        self._writing = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._condition = threading.Condition()

    def submit(self, event: Mapping[str, Any]) -> None:
        """Queue one event; the background thread writes it soon."""
        with self._condition:
            if self._closed:
                logger.error("audit event %s dropped: the writer is closed", event.get("type"))
                return
            self._pending.append(event)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="chatomon-audit-writer", daemon=True
                )
                self._thread.start()
            self._condition.notify_all()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued event is written; False when `timeout` ran out first."""
        with self._condition:
            return self._condition.wait_for(
                lambda: not self._pending and not self._writing, timeout
            )

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop the thread; later events are dropped (logged)."""
        self.flush(timeout)
        with self._condition:
            self._closed = True
            thread = self._thread
            self._condition.notify_all()
        if thread is not None:
            thread.join(timeout)

    def _next_batch(self) -> list[Mapping[str, Any]] | None:
        with self._condition:
            if not self._pending and not self._closed:
                self._condition.wait(self.idle_seconds)
            if not self._pending:
                self._thread = None  # idle or closed: the next submit starts a new thread
                self._condition.notify_all()
                return None
            batch = self._pending[: self.batch_size]
            del self._pending[: self.batch_size]
            self._writing = len(batch)
            return batch

    def _run(self) -> None:
        from django.db import connections  # noqa: PLC0415 - Django loads with the app

        while (batch := self._next_batch()) is not None:
            try:
                self._write(batch)
            finally:
                # This thread's connections only (they are per thread); closed after every
                # batch so that no idle connection outlives the events (a test database
                # can be dropped, a pooler can recycle).
                connections.close_all()
                with self._condition:
                    self._writing = 0
                    self._condition.notify_all()

    def _write(self, batch: list[Mapping[str, Any]]) -> None:
        from chatomon.django.models import AuditEvent  # noqa: PLC0415 - needs the app registry

        try:
            AuditEvent.objects.using(self.using).bulk_create(
                [
                    AuditEvent(
                        created_at=_time(event.get("time")),
                        type=str(event.get("type", ""))[:40],
                        actor=str(event.get("actor", ""))[:200],
                        conversation=str(event.get("conversation_id", ""))[:64],
                        turn=str(event.get("turn_id", ""))[:64],
                        payload=event.get("payload", {}),
                    )
                    for event in batch
                ]
            )
        except Exception as error:  # noqa: BLE001 - the audit trail never breaks chat
            logger.error("writing %d audit events failed: %s", len(batch), type(error).__name__)


def _time(value: Any) -> datetime:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    return datetime.now(UTC)
