"""The chat routes: `path("chat/", include("chatomon.django.urls"))`.

| route            | view              | name                 |
|------------------|-------------------|----------------------|
| `POST chat/`     | `ChatView`        | `chatomon:chat`      |
| `POST chat/stream/` | `ChatStreamView` | `chatomon:stream`  |
| `GET chat/stream/resume/` | `ChatResumeView` | `chatomon:resume` |
| `POST chat/confirm/` | `ChatConfirmView` | `chatomon:confirm` |
| `GET chat/history/` | `ChatHistoryView` | `chatomon:history` |

`chat_urls()` mounts them under the `url` setting instead of a literal prefix:
`urlpatterns = [chat_urls(), ...]`.
"""

from __future__ import annotations

from django.urls import URLResolver, include, path

from chatomon.django.settings import chat_settings
from chatomon.django.transports.confirm import ChatConfirmView
from chatomon.django.transports.history import ChatHistoryView
from chatomon.django.transports.http import ChatView
from chatomon.django.transports.sse import ChatResumeView, ChatStreamView

__all__ = ["app_name", "chat_urls", "urlpatterns"]

app_name = "chatomon"
urlpatterns = [
    path("", ChatView.as_view(), name="chat"),
    path("stream/", ChatStreamView.as_view(), name="stream"),
    path("stream/resume/", ChatResumeView.as_view(), name="resume"),
    path("confirm/", ChatConfirmView.as_view(), name="confirm"),
    path("history/", ChatHistoryView.as_view(), name="history"),
]


def chat_urls() -> URLResolver:
    """The chat routes under the `url` setting's base path (default "chat/")."""
    return path(chat_settings().url_prefix, include("chatomon.django.urls"))
