"""`python manage.py chat_cleanup`: prune stale chat data older than `ttl_hours`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatomon.django import queries

DEFAULT_TTL_HOURS = 24


def ttl_hours() -> float:
    """`settings.CHATOMON["ttl_hours"]`, 24 when unset; a positive number."""
    value = (getattr(settings, "CHATOMON", None) or {}).get("ttl_hours", DEFAULT_TTL_HOURS)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise CommandError(f'CHATOMON["ttl_hours"] must be a positive number, got {value!r}')
    return float(value)


class Command(BaseCommand):
    """Expire overdue confirmations, then delete conversations and resolved confirmations."""

    help = (
        "Expire overdue confirmations and delete conversations (with messages and turns) "
        'and resolved confirmations older than CHATOMON["ttl_hours"] (default 24).'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """No options: the retention comes from settings."""

    def handle(self, *args: Any, **options: Any) -> None:
        """Run the cleanup and print the counts."""
        hours = ttl_hours()
        now = datetime.now(UTC)
        expired = queries.expire_due(now)
        counts = queries.prune(now - timedelta(hours=hours))
        self.stdout.write(
            f"chat_cleanup (ttl_hours={hours:g}): expired {len(expired)} confirmation(s); "
            f"deleted {counts['conversations']} conversation(s), {counts['messages']} "
            f"message(s), {counts['turns']} turn(s), {counts['confirmations']} "
            "confirmation(s)"
        )
