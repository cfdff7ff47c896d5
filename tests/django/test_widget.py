"""`{% chatomon_chat_widget %}` renders the embeddable chat widget."""

from __future__ import annotations

import pytest
from django.template import Context, Template, TemplateSyntaxError
from django.test import override_settings

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
