"""`{% chatomon_chat_widget %}` renders the embeddable chat widget."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.staticfiles import finders
from django.template import Context, Template, TemplateSyntaxError
from django.template.loader import get_template
from django.test import override_settings

from chatomon.django.templatetags.chatomon_widget import WIDGET_TEMPLATE
from tests.asgi_app.project import chatomon


def render(source: str) -> str:
    return Template("{% load chatomon_widget %}" + source).render(Context())


@override_settings(CHATOMON=chatomon(url="/assistant/"), STATIC_URL="/static/")
def test_the_widget_uses_the_chat_base_path_and_its_static_files() -> None:
    html = render("{% chatomon_chat_widget %}")
    assert 'data-endpoint="/assistant/"' in html
    assert 'data-transport="websocket"' in html
    assert 'href="/static/chatomon/chat-widget.css"' in html
    assert 'src="/static/chatomon/chat-widget.js"' in html


@override_settings(CHATOMON=chatomon(), STATIC_URL="/static/")
def test_the_title_is_escaped_and_the_transport_can_be_sse() -> None:
    html = render('{% chatomon_chat_widget endpoint="/c/" transport="sse" title="<Parts> & co" %}')
    assert 'data-endpoint="/c/"' in html and 'data-transport="sse"' in html
    assert "&lt;Parts&gt; &amp; co" in html and "<Parts>" not in html


@override_settings(CHATOMON=chatomon(), STATIC_URL="/static/")
def test_an_unknown_transport_is_a_template_error() -> None:
    with pytest.raises(TemplateSyntaxError, match="'websocket' or 'sse'"):
        render('{% chatomon_chat_widget transport="pigeon" %}')


def test_the_template_and_static_files_ship_with_chatomon_django_alone() -> None:
    """Found in the chatomon.django app's folders, and nowhere else (not the console's)."""
    app = Path(apps.get_app_config("chatomon").path)
    origin = get_template(WIDGET_TEMPLATE).origin.name
    assert Path(origin) == app / "templates" / WIDGET_TEMPLATE
    for name in ("chatomon/chat-widget.js", "chatomon/chat-widget.css"):
        assert [Path(found) for found in finders.find(name, find_all=True)] == [
            app / "static" / name
        ]
