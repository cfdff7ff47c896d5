"""`python manage.py chat_cleanup`: expire overdue confirmations, abort orphaned turns, prune.

With chat enabled, each expired confirmation's turn is resumed through the chat service:
the model is told the change timed out and answers, and the answer reaches the
conversation's sockets. With chat disabled the confirmations are marked expired and their
turns aborted.

Orphaned turns: a turn left `running` whose process died mid-turn (killed, crashed,
redeployed), or whose database stayed down longer than that process kept retrying its
close (10 minutes; `chatomon.chat.pipeline.recovery`), is recorded as `aborted` once it is
stale: started more than `--stale-after` seconds ago (default 3600) with no confirmation
of it decided since. No live turn runs that long (each provider round has its timeouts,
a turn its round limits, and a turn waiting for a decision is `awaiting_confirmation`,
not `running`), so the sweep never ends a turn a live process is still driving, in
whichever worker; it is not run at start-up for that reason: one worker starting must
not end the turns its siblings drive.

Schedule the command with the deployment's task runner; nothing schedules it for you.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatomon.django.persistence import confirmations, conversations, turns
from chatomon.django.settings import ChatSettings, chat_settings
from chatomon.errors import ChatConfigurationError

STALE_AFTER_SECONDS = 3600.0
"""The default of `--stale-after`: a turn running this long is taken as orphaned."""


class Command(BaseCommand):
    """Expire overdue confirmations, abort orphaned turns, delete what is past `ttl_hours`."""

    help = (
        "Expire overdue confirmations (resuming their turns when chat is enabled), abort "
        "turns left running longer than --stale-after seconds (orphaned by a dead process "
        "or a long database outage), and delete conversations (with messages and turns) "
        'and resolved confirmations older than CHATOMON["ttl_hours"] (default 24).'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """`--stale-after SECONDS`: when a running turn counts as orphaned (default 3600)."""
        parser.add_argument(
            "--stale-after",
            type=float,
            default=STALE_AFTER_SECONDS,
            help="abort turns running with no sign of life for this many seconds (3600)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Run the cleanup and print what it did."""
        try:
            settings = chat_settings()
        except ChatConfigurationError as error:
            raise CommandError(str(error)) from error
        stale_after = float(options.get("stale_after", STALE_AFTER_SECONDS))
        if stale_after <= 0:
            raise CommandError("--stale-after must be a number of seconds above 0")
        expired = self._expire(settings)
        now = datetime.now(UTC)
        orphaned = turns.abort_stale(now - timedelta(seconds=stale_after), now)
        hours = settings.ttl_hours
        counts = conversations.prune(now - timedelta(hours=hours))
        self.stdout.write(
            f"chat_cleanup (ttl_hours={hours:g}): expired {expired} confirmation(s); "
            f"aborted {len(orphaned)} orphaned turn(s); "
            f"deleted {counts['conversations']} conversation(s), {counts['messages']} "
            f"message(s), {counts['turns']} turn(s), {counts['confirmations']} "
            "confirmation(s)"
        )

    def _expire(self, settings: ChatSettings) -> int:
        if not settings.enabled:
            now = datetime.now(UTC)
            expired = confirmations.expire_due(now)
            for confirmation in expired:  # nothing can resume them: they end here
                turns.update_turn(confirmation.turn_id, "aborted", None, None, now)
            return len(expired)
        from chatomon.django.service import chat_service  # noqa: PLC0415 - needs ready apps

        resumed: int = async_to_sync(chat_service().expire_due)()
        return resumed
