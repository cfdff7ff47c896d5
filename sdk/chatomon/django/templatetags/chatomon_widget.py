"""`{% chatomon_chat_widget %}`: the embeddable chat widget on any page.

```django
{% load chatomon_widget %}
{% chatomon_chat_widget title="Ask about your parts" %}
```

renders the widget's stylesheet, its element and its script (static files
`chatomon/chat-widget.css` and `chatomon/chat-widget.js`, which ship with the
`chatomon.console` app: add it to INSTALLED_APPS for the static files finder). The
endpoint defaults to the chat routes' base path (the `url` setting); `transport` is
"websocket" (a turn approved by staff elsewhere continues live) or "sse". The page must
set Django's CSRF cookie for the SSE transport (`{% csrf_token %}` or `ensure_csrf_cookie`).
"""

from __future__ import annotations

from typing import Literal

from django import template
from django.templatetags.static import static
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString

from chatomon.django.settings import chat_settings

__all__ = ["chatomon_chat_widget"]

register = template.Library()


@register.simple_tag
def chatomon_chat_widget(
    endpoint: str | None = None,
    transport: Literal["websocket", "sse"] = "websocket",
    title: str = "Chat with the assistant",
) -> SafeString:
    """The widget's stylesheet, element and script as HTML."""
    if transport not in ("websocket", "sse"):
        raise template.TemplateSyntaxError(
            f"chatomon_chat_widget transport must be 'websocket' or 'sse', got {transport!r}"
        )
    path = endpoint if endpoint is not None else "/" + chat_settings().url_prefix
    # escape(), not format_html's conditional escaping: string literals written in a
    # template arrive marked safe, and a title is text, never markup.
    path, title = escape(str(path)), escape(str(title))
    return format_html(
        '<link rel="stylesheet" href="{}">'
        '<section data-chatomon-chat data-endpoint="{}" data-transport="{}" data-title="{}" '
        'aria-label="{}"></section>'
        '<script src="{}" defer></script>',
        static("chatomon/chat-widget.css"),
        path,
        transport,
        title,
        title,
        static("chatomon/chat-widget.js"),
    )
