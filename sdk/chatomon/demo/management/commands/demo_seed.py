"""`manage.py demo_seed [--owner USERNAME] [--history]`: create the demo rows that are missing.

`--history` also seeds a few days of conversations through the pipeline
(`chatomon.demo.history`), decided and reviewed by the owner, into a database without turns.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatomon.demo.history import seed_history
from chatomon.demo.seed import seed


class Command(BaseCommand):
    """Seed the demo data set; existing rows (and changes made to them) are kept."""

    help = "Create the demo's materials, suppliers, parts and projects that are missing."

    def add_arguments(self, parser: CommandParser) -> None:
        """`--owner`: the user owning the private projects."""
        parser.add_argument("--owner", help="username owning the private projects")
        parser.add_argument(
            "--history",
            action="store_true",
            help="also seed a few days of conversations, decided by the owner (needs --owner)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Seed and print one line per kind of row."""
        owner = None
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"there is no user {options['owner']!r}")
        if options["history"] and owner is None:
            raise CommandError("--history needs --owner: the staff user who decides")
        for line in seed(owner=owner).lines():
            self.stdout.write(line)
        if options["history"]:
            for line in seed_history(owner).lines():
                self.stdout.write(line)
