"""A real ChatService on the Django store for the console tests: renameMaterial needs staff."""

from __future__ import annotations

import importlib
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import AnonymousUser, User

from chatomon.chat.store import Owner
from chatomon.chat.tools.context import ToolSettings
from chatomon.django.persistence.store import DjangoStore
from tests.chat.services import collect, rename_script, service

# mypy knows the console as the folder `console`; the installed app is chatomon.console.
approval_activity_listener = importlib.import_module(
    "chatomon.console.live"
).approval_activity_listener


async def load_actor(owner: Owner) -> Any:
    if owner.kind != "user":
        return AnonymousUser()
    return await sync_to_async(User.objects.get)(pk=int(owner.key))


class Harness:
    """One scripted provider shared by every service the console builds during a test."""

    def __init__(self, *, staff: bool = True, answer: str = "Renamed.") -> None:
        self.provider = rename_script(answer)
        self.log: list[dict[str, Any]] = []
        names = ["renameMaterial"]
        self.settings = (
            ToolSettings(allowed_mutations=names, staff_approval_mutations=names)
            if staff
            else ToolSettings(allowed_mutations=names, confirm_mutations=names)
        )

    def build(self) -> Any:
        # The listener chatomon.django's service adds when the console is installed.
        return service(
            DjangoStore(), self.provider, log=self.log, settings=self.settings,
            actor_loader=load_actor, listeners=[approval_activity_listener],
        )  # fmt: skip

    def suspended_turn(self, user: User) -> dict[str, Any]:
        """Run a turn for `user` up to its confirm_mutation event."""
        events = async_to_sync(collect)(
            self.build().run_turn(user, "Rename material 1 to Iron", owner=Owner.user(user.pk))
        )
        assert events[-1]["type"] == "confirm_mutation", events
        return events[-1]
