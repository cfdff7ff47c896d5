"""The ChatService the console runs: the project's, as chatomon.django configures it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatomon.chat.service import ChatService

__all__ = ["console_chat_service", "staff_label"]


def console_chat_service() -> ChatService:
    """The same pipeline, and the same service, end users get (settings.CHATOMON).

    The process's service, not one per request: its provider may hold a loaded model.
    """
    # Imported here: chatomon.django.service reads settings and the app registry.
    from chatomon.django.service import chat_service  # noqa: PLC0415

    return chat_service()


def staff_label(user: Any) -> str:
    """How a staff member is named as the decider of a confirmation."""
    return str(user.get_username())
