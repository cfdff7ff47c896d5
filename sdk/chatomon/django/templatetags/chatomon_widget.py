"""`{% chatomon_chat_widget %}`: the embeddable chat widget on any page.

```django
{% load chatomon_widget %}
{% chatomon_chat_widget title="Ask about your parts" %}
```

renders the template `chatomon/chat_widget.html`: the widget's stylesheet, its element
and its script (static files `chatomon/chat-widget.css` and `chatomon/chat-widget.js`).
All three ship with the `chatomon.django` app, where Django's app-directories template
loader and static files finder find them; a project may override the template. The
endpoint defaults to the chat routes' base path (the `url` setting); `transport` is
"websocket" (a turn approved by staff elsewhere continues live) or "sse". The page must
set Django's CSRF cookie for the SSE transport (`{% csrf_token %}` or `ensure_csrf_cookie`).

While the `enabled` setting is False the tag renders nothing: the chat routes answer 404
and the socket closes, so a widget would only show a chat that cannot answer. The page
around it renders as usual.
"""

from __future__ import annotations

from typing import Literal

from django import template
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from chatomon.django.settings import chat_settings

__all__ = ["WIDGET_TEMPLATE", "chatomon_chat_widget"]

WIDGET_TEMPLATE = "chatomon/chat_widget.html"
"""The template the tag renders (in chatomon.django's `templates/`)."""

register = template.Library()


@register.simple_tag
def chatomon_chat_widget(
    endpoint: str | None = None,
    transport: Literal["websocket", "sse"] = "websocket",
    title: str = "Chat with the assistant",
) -> SafeString:
    """The widget's stylesheet, element and script as HTML; nothing while chat is disabled."""
    if transport not in ("websocket", "sse"):
        raise template.TemplateSyntaxError(
            f"chatomon_chat_widget transport must be 'websocket' or 'sse', got {transport!r}"
        )
    settings = chat_settings()
    if not settings.enabled:
        return SafeString()
    path = endpoint if endpoint is not None else "/" + settings.url_prefix
    # The template applies force_escape, not autoescaping: string literals written in a
    # template arrive marked safe, and a title or a path is text, never markup.
    html = render_to_string(
        WIDGET_TEMPLATE, {"endpoint": str(path), "transport": transport, "title": str(title)}
    )
    # render_to_string returns the rendered template, already escaped; simple_tag would
    # escape a plain str once more.
    return mark_safe(html.strip())  # noqa: S308 - the template escaped every value
