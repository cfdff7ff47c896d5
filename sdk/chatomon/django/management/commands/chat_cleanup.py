"""`python manage.py chat_cleanup`: expire overdue confirmations, prune data past `ttl_hours`.

With chat enabled, each expired confirmation's turn is resumed through the chat service:
the model is told the change timed out and answers, and the answer reaches the
conversation's sockets. With chat disabled the confirmations are marked expired and their
turns aborted.
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


class Command(BaseCommand):
    """Expire overdue confirmations, then delete conversations and resolved confirmations."""

    help = (
        "Expire overdue confirmations (resuming their turns when chat is enabled) and delete "
        "conversations (with messages and turns) and resolved confirmations older than "
        'CHATOMON["ttl_hours"] (default 24).'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """No options: the retention comes from settings."""

    def handle(self, *args: Any, **options: Any) -> None:
        """Run the cleanup and print what it did."""
        try:
            settings = chat_settings()
        except ChatConfigurationError as error:
            raise CommandError(str(error)) from error
        expired = self._expire(settings)
        hours = settings.ttl_hours
        counts = conversations.prune(datetime.now(UTC) - timedelta(hours=hours))
        self.stdout.write(
            f"chat_cleanup (ttl_hours={hours:g}): expired {expired} confirmation(s); "
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
