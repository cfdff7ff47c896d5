"""`{% chatomon_chat_widget %}` renders the embeddable chat widget."""

from __future__ import annotations

import gzip
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
    assert '<chatomon-chat data-chatomon-chat endpoint="/assistant/"' in html
    assert 'transport="websocket"' in html and 'mode="inline"' in html
    assert 'max-length="8000"' in html
    assert 'href="/static/chatomon/chat-widget.css"' in html
    assert 'src="/static/chatomon/chat-widget.js"' in html


@override_settings(CHATOMON=chatomon(), STATIC_URL="/static/")
def test_the_title_is_escaped_and_the_transport_can_be_sse() -> None:
    html = render('{% chatomon_chat_widget endpoint="/c/" transport="sse" title="<Parts> & co" %}')
    assert 'endpoint="/c/"' in html and 'transport="sse"' in html
    assert "&lt;Parts&gt; &amp; co" in html and "<Parts>" not in html


@override_settings(CHATOMON=chatomon(), STATIC_URL="/static/")
def test_an_unknown_transport_is_a_template_error() -> None:
    with pytest.raises(TemplateSyntaxError, match="'websocket' or 'sse'"):
        render('{% chatomon_chat_widget transport="pigeon" %}')


@override_settings(CHATOMON=chatomon(max_message_chars=500), STATIC_URL="/static/")
def test_mode_token_greeting_and_colour_scheme_reach_the_element() -> None:
    html = render(
        '{% chatomon_chat_widget mode="launcher" token="shop.a.b" greeting="<b>Hi</b>" '
        'color_scheme="dark" %}'
    )
    assert 'mode="launcher"' in html and 'token="shop.a.b"' in html
    assert 'greeting="&lt;b&gt;Hi&lt;/b&gt;"' in html and 'color-scheme="dark"' in html
    assert 'max-length="500"' in html
    assert 'position="right"' in html and "locale=" not in html  # the defaults


@override_settings(CHATOMON=chatomon(), STATIC_URL="/static/")
def test_position_and_locale_reach_the_element() -> None:
    html = render('{% chatomon_chat_widget position="left" locale="de-DE" %}')
    assert 'position="left"' in html and 'locale="de-DE"' in html


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ('mode="popup"', "'inline' or 'launcher'"),
        ('color_scheme="pink"', "'light' or 'dark'"),
        ('position="top"', "'right' or 'left'"),
    ],
)
@override_settings(CHATOMON=chatomon(), STATIC_URL="/static/")
def test_an_unknown_mode_or_scheme_is_a_template_error(tag: str, message: str) -> None:
    with pytest.raises(TemplateSyntaxError, match=message):
        render("{% chatomon_chat_widget " + tag + " %}")


def test_the_template_and_static_files_ship_with_chatomon_django_alone() -> None:
    """Found in the chatomon.django app's folders, and nowhere else (not the console's)."""
    app = Path(apps.get_app_config("chatomon").path)
    origin = get_template(WIDGET_TEMPLATE).origin.name
    assert Path(origin) == app / "templates" / WIDGET_TEMPLATE
    for name in ("chatomon/chat-widget.js", "chatomon/chat-widget.css"):
        assert [Path(found) for found in finders.find(name, find_all=True)] == [
            app / "static" / name
        ]


SCRIPT = Path(apps.get_app_config("chatomon").path) / "static" / "chatomon" / "chat-widget.js"


def test_the_script_stays_small() -> None:
    """Under 15 KB gzipped, as issue 23 asks: no framework, no build step."""
    assert len(gzip.compress(SCRIPT.read_bytes(), compresslevel=9)) < 15 * 1024


def test_the_script_never_parses_markup() -> None:
    """Model text reaches the page as DOM nodes only (the Markdown renderer builds them)."""
    source = SCRIPT.read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in source, sink
