"""`{% chatomon_chat_widget %}`: the chat widget, `<chatomon-chat>`, on any page.

```django
{% load chatomon_widget %}
{% chatomon_chat_widget title="Ask about your parts" %}
```

renders the template `chatomon/chat_widget.html`: the widget's stylesheet, the
`<chatomon-chat>` element and its script (static files `chatomon/chat-widget.css` and
`chatomon/chat-widget.js`). All three ship with the `chatomon.django` app, where Django's
app-directories template loader and static files finder find them; a project may override
the template. The endpoint defaults to the chat routes' base path (the `url` setting);
`transport` is "websocket" (a turn approved by staff elsewhere continues live) or "sse";
`mode` is "inline" (the chat in the page's flow) or "launcher" (a button opening it as a
dialog); `token` is a visitor token (`chatomon.django.embed.sign_visitor`) for a page of
another site; `greeting` is shown first; `color_scheme` is "light", "dark" or "auto";
`position` puts the launcher and its dialog at the "right" or "left"; `locale` (a BCP 47
tag such as "de-DE") formats the times on decided cards (default: the browser's). The
input's limit is the `max_message_chars` setting. The page must set Django's CSRF cookie
for the SSE transport without a token (`{% csrf_token %}` or `ensure_csrf_cookie`).

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
    *,
    mode: Literal["inline", "launcher"] = "inline",
    token: str = "",
    greeting: str = "",
    color_scheme: Literal["light", "dark", "auto"] = "auto",
    position: Literal["right", "left"] = "right",
    locale: str = "",
) -> SafeString:
    """The widget's stylesheet, element and script as HTML; nothing while chat is disabled."""
    _one_of("transport", transport, ("websocket", "sse"))
    _one_of("mode", mode, ("inline", "launcher"))
    _one_of("color_scheme", color_scheme, ("light", "dark", "auto"))
    _one_of("position", position, ("right", "left"))
    settings = chat_settings()
    if not settings.enabled:
        return SafeString()
    path = endpoint if endpoint is not None else "/" + settings.url_prefix
    context = {
        "endpoint": str(path),
        "transport": transport,
        "title": str(title),
        "mode": mode,
        "token": str(token),
        "greeting": str(greeting),
        "color_scheme": color_scheme,
        "position": position,
        "locale": str(locale),
        "max_length": settings.max_message_chars,
    }
    # The template applies force_escape, not autoescaping: string literals written in a
    # template arrive marked safe, and a title or a path is text, never markup.
    html = render_to_string(WIDGET_TEMPLATE, context)
    # render_to_string returns the rendered template, already escaped; simple_tag would
    # escape a plain str once more.
    return mark_safe(html.strip())  # noqa: S308 - the template escaped every value


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        quoted = " or ".join(f"'{choice}'" for choice in allowed)
        raise template.TemplateSyntaxError(
            f"chatomon_chat_widget {name} must be {quoted}, got {value!r}"
        )
