"""`<chatomon-chat>` embedded on another site's page, in real Chromium.

Two loopback origins: the chat project (uvicorn, the test project with `CHATOMON["embed"]`
and the widget's static files) and a plain page server on another port, whose page loads
the widget's script from the chat origin and gives it a visitor token. The visitor chats,
confirms a change, reloads with a confirmation pending and still decides it, and finds the
conversation again after a reload; reloaded mid-stream (SSE or WebSocket), it sees the turn
finish once; the same page without a token is told why it is refused.
"""

from __future__ import annotations

import http.server
import os
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatomon.django.embed import sign_visitor
from tests.asgi_app.servers import AsgiServer, free_port, migrate, server_environment
from tests.browser.conftest import MISSING, TIMEOUT_MS, screenshot

if MISSING is None:
    from playwright.sync_api import expect

KEY = "embed-browser-test-key-" + "x" * 20

SETTINGS = """
from tests.asgi_app.settings import *  # noqa: F403
STATIC_URL = "/static/"
CHATOMON = {{**CHATOMON, "embed": {{"shop": {{"key": {key!r}, "origins": [{origin!r}],
    "user": "tests.browser.test_widget_embed.site_user"}}}}}}
"""
ASGI = """
from django.core.asgi import get_asgi_application
django_application = get_asgi_application()
from channels.routing import ProtocolTypeRouter
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from chatomon.django.routing import chat_websocket_application
application = ProtocolTypeRouter({
    "http": ASGIStaticFilesHandler(django_application),
    "websocket": chat_websocket_application(),
})
"""
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body><main><h1>A shop on another site</h1><p>Ask our assistant.</p></main>
<chatomon-chat endpoint="{chat}/chat/" transport="{transport}" {token} title="Shop assistant"
 greeting="Hello! Ask me about **parts**."></chatomon-chat>
<script src="{chat}/static/chatomon/chat-widget.js" defer></script></body></html>"""


def site_user(site: str, subject: str) -> Any:
    """The shop's visitors are users of the chat project (mutations need a user)."""
    from django.contrib.auth import get_user_model  # noqa: PLC0415

    user, _ = get_user_model().objects.get_or_create(username=f"{site}-{subject}")
    return user


class Pages:
    """The other site: serves the page the test sets, on a loopback port of its own."""

    def __init__(self) -> None:
        self.html = ""
        pages = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.html.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def show(self, chat: str, token: str | None, transport: str = "sse") -> str:
        attribute = f'token="{token}"' if token else ""
        self.html = PAGE.format(chat=chat, token=attribute, transport=transport)
        return self.url + "/"


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AsgiServer, Pages]]:
    if MISSING is not None:
        pytest.skip(MISSING)
    folder: Path = tmp_path_factory.mktemp("embed")
    pages = Pages()
    (folder / "embed_settings.py").write_text(SETTINGS.format(key=KEY, origin=pages.url))
    (folder / "embed_asgi.py").write_text(ASGI)
    env = server_environment(
        DATABASE_URL=f"sqlite:///{folder / 'chat.sqlite3'}",
        CHATOMON_TEST_PREFIX=f"embed-{free_port()}",
    )
    env["DJANGO_SETTINGS_MODULE"] = "embed_settings"
    env["PYTHONPATH"] = f"{folder}:{env['PYTHONPATH']}"
    migrate(env)
    server = _EmbedServer(env)
    server.start()
    try:
        yield server, pages
    finally:
        server.stop()
        pages.server.shutdown()
        pages.server.server_close()


class _EmbedServer(AsgiServer):
    """uvicorn serving `embed_asgi:application` (the test project and static files)."""

    def start(self, timeout: float = 30) -> AsgiServer:
        import subprocess  # noqa: PLC0415
        import sys  # noqa: PLC0415
        import time  # noqa: PLC0415

        import httpx  # noqa: PLC0415

        command = [
            sys.executable, "-m", "uvicorn", "embed_asgi:application", "--host", "127.0.0.1",
            "--port", str(self.port), "--log-level", "warning", "--lifespan", "off",
            "--ws", "websockets-sansio",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, env=self.env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/test/csrf/", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the embedding test's chat server did not answer in time")


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


def open_widget(page: Any) -> Any:
    page.get_by_role("button", name="Shop assistant").click()
    dialog = page.get_by_role("dialog", name="Shop assistant")
    expect(dialog).to_be_visible()
    return dialog


def say(page: Any, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_a_visitor_chats_confirms_and_finds_the_conversation_after_reloads(sites, page):
    server, pages = sites
    token = sign_visitor("shop", "visitor-1", key=KEY)
    page.goto(pages.show(server.url, token))
    dialog = open_widget(page)
    expect(page.get_by_label("Message")).to_be_focused()
    expect(dialog.locator(".chatomon-assistant").first).to_contain_text(
        "Hello! Ask me about parts."
    )
    expect(dialog.locator(".chatomon-assistant strong").first).to_have_text("parts")
    say(page, "hello there")
    expect(dialog.locator(".chatomon-assistant").last).to_have_text("Echo: hello there")
    screenshot(page, "widget-embed-answer")

    say(page, 'mutate createPart {"name": "Bolt"}')
    card = dialog.locator(".chatomon-confirm").last
    expect(card).to_contain_text("createPart needs your confirmation")
    expect(card.get_by_role("table")).to_contain_text("Bolt")
    screenshot(page, "widget-embed-confirmation")

    # Reloaded with the confirmation pending: the card comes back, buttons and all.
    page.reload()
    dialog = open_widget(page)
    card = dialog.locator(".chatomon-confirm").last
    expect(card).to_contain_text("Needs your confirmation.")
    expect(dialog.locator(".chatomon-user").first).to_have_text("hello there")
    # A new message is refused by the server while the change waits.
    say(page, "something else")
    expect(dialog.locator(".chatomon-error").last).to_have_text(
        "Confirm or reject the pending change first."
    )
    card.get_by_role("button", name="Confirm").click()
    expect(page.get_by_label("Message")).to_be_focused()
    expect(card).to_contain_text("Approved by you")
    expect(dialog.locator(".chatomon-assistant").last).to_contain_text("Tool said:")
    expect(dialog.locator(".chatomon-tool").last).to_contain_text("Made the change createPart")
    screenshot(page, "widget-embed-approved")

    page.reload()
    dialog = open_widget(page)
    expect(dialog.locator(".chatomon-confirm").last).to_contain_text("Approved by you")
    expect(dialog.locator(".chatomon-confirm button")).to_have_count(0)
    dialog.get_by_role("button", name="New conversation").click()
    expect(dialog.locator(".chatomon-confirm")).to_have_count(0)
    say(page, "fresh start")
    expect(dialog.locator(".chatomon-assistant").last).to_have_text("Echo: fresh start")
    page.reload()
    dialog = open_widget(page)
    expect(dialog.locator(".chatomon-user")).to_have_count(1)
    expect(dialog.locator(".chatomon-user")).to_have_text("fresh start")
    # Restored after the greeting, which stays first.
    expect(dialog.locator(".chatomon-assistant").first).to_contain_text("Hello!")
    expect(dialog.locator(".chatomon-assistant").last).to_have_text("Echo: fresh start")


def test_a_visitor_socket_chats_over_the_websocket_with_its_token(sites, page):
    server, pages = sites
    token = sign_visitor("shop", "visitor-2", key=KEY)
    page.goto(pages.show(server.url, token, transport="websocket"))
    dialog = open_widget(page)
    expect(dialog.locator(".chatomon-status")).to_have_text("connected")
    say(page, "over the socket")
    expect(dialog.locator(".chatomon-assistant").last).to_have_text("Echo: over the socket")


@pytest.mark.parametrize("transport", ["sse", "websocket"])
def test_a_reload_mid_stream_resumes_the_turn_and_shows_its_answer_once(sites, page, transport):
    server, pages = sites
    token = sign_visitor("shop", f"reloader-{transport}", key=KEY)
    page.goto(pages.show(server.url, token, transport=transport))
    dialog = open_widget(page)
    say(page, "drip 4 tick")  # a chunk a second
    expect(dialog.locator(".chatomon-assistant").last).to_contain_text("tick 1")
    page.reload()  # mid-stream: the turn goes on on the server, detached
    dialog = open_widget(page)
    answer = "tick 1 tick 2 tick 3 tick 4"
    expect(dialog.locator(".chatomon-assistant").last).to_have_text(answer)
    expect(dialog.locator(".chatomon-assistant")).to_have_count(2)  # the greeting, the answer
    expect(dialog.locator(".chatomon-user")).to_have_text("drip 4 tick")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    screenshot(page, f"widget-embed-resumed-{transport}")
    page.reload()  # finished: the history has it, once
    dialog = open_widget(page)
    expect(dialog.locator(".chatomon-assistant").last).to_have_text(answer)
    expect(dialog.locator(".chatomon-assistant")).to_have_count(2)


def test_the_page_without_a_token_is_refused_and_says_why(sites, page):
    server, pages = sites
    page.goto(pages.show(server.url, None))
    dialog = open_widget(page)
    expect(dialog.get_by_role("alert").first).to_have_text(
        "This chat can only be embedded on another site with a visitor token."
    )
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    screenshot(page, "widget-embed-refused")


def test_the_length_limit_shows_before_sending(sites, page):
    server, pages = sites
    page.goto(pages.show(server.url, sign_visitor("shop", "visitor-3", key=KEY)))
    open_widget(page)
    box = page.get_by_label("Message")
    expect(box).to_have_attribute("maxlength", "8000")
    box.fill("x" * 9000)
    assert len(box.input_value()) == 8000
    expect(page.get_by_text("8000 / 8000 characters")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("button", name="Shop assistant")).to_be_focused()


AXE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / "axe-core" / "axe.min.js"


def test_axe_finds_no_serious_or_critical_violation_in_the_open_widget(sites, page):
    if not AXE.exists():
        if os.environ.get("CHATOMON_REQUIRE_BROWSER"):
            raise RuntimeError(f"axe-core is required here: run `npm ci --prefix tests/js` ({AXE})")
        pytest.skip("axe-core is not installed: npm ci --prefix tests/js")
    server, pages = sites
    page.goto(pages.show(server.url, sign_visitor("shop", "visitor-4", key=KEY)))
    dialog = open_widget(page)
    say(page, 'mutate createPart {"name": "Nut"}')
    expect(dialog.locator(".chatomon-confirm").last).to_contain_text("needs your confirmation")
    page.add_script_tag(path=str(AXE))
    # A new message fades in (0.15 s, unless the visitor asks for reduced motion): axe run
    # mid-fade reads the half-transparent colours and reports a contrast failure the
    # settled widget does not have, so the check waits for the widget's animations.
    page.evaluate(
        "() => Promise.all(document.querySelector('chatomon-chat').shadowRoot"
        ".getAnimations().map(a => a.finished))"
    )
    for scheme in ("light", "dark"):
        page.evaluate(
            "s => document.querySelector('chatomon-chat').setAttribute('color-scheme', s)", scheme
        )
        found = page.evaluate(
            "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
            ".map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target)}))"
        )
        serious = [v for v in found if v["impact"] in ("serious", "critical")]
        assert serious == [], (scheme, serious)
        screenshot(page, f"widget-embed-axe-{scheme}")
