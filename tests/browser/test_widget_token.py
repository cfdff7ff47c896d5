"""`<chatomon-chat>`'s `token` attribute is observed, in real Chromium.

A visitor token expires; the widget says so and fires `chatomon-token-expired`; the site
sets a fresh token on the element (as its script would on that event) and the widget
restores the conversation and connects its socket with it, no reload needed. (A socket
closed with 4401 for an expired token is covered by tests/js/widget.test.js.)
"""

from __future__ import annotations

import time
from typing import Any

from chatomon.django.embed import sign_visitor
from tests.browser.conftest import MISSING, screenshot
from tests.browser.test_widget_embed import KEY, open_widget, page, say, sites

if MISSING is None:
    from playwright.sync_api import expect

__all__ = ["page", "sites"]  # the embedding fixtures: the chat project, the other site, a page

COUNT_EVENTS = """document.addEventListener("chatomon-token-expired", () => {
  window.expiredEvents = (window.expiredEvents || 0) + 1;
});"""


def test_a_fresh_token_set_on_the_element_reconnects_the_socket(sites: Any, page: Any) -> None:
    server, pages = sites
    expired = sign_visitor("shop", "visitor-7", key=KEY, now=time.time() - 3600)
    page.add_init_script(COUNT_EVENTS)
    page.goto(pages.show(server.url, expired, transport="websocket"))
    dialog = open_widget(page)
    # Its history is refused first: the widget stops there, opening no socket.
    expect(dialog.get_by_role("alert").last).to_have_text(
        "The visitor token has expired: reload the page."
    )
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    expect(dialog.locator(".chatomon-status")).not_to_have_text("connected")
    assert page.evaluate("window.expiredEvents") >= 1
    screenshot(page, "widget-token-expired")

    fresh = sign_visitor("shop", "visitor-7", key=KEY)
    page.evaluate("t => document.querySelector('chatomon-chat').setAttribute('token', t)", fresh)
    expect(dialog.locator(".chatomon-status")).to_have_text("connected")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    say(page, "still here")
    expect(dialog.locator(".chatomon-assistant").last).to_have_text("Echo: still here")
    screenshot(page, "widget-token-refreshed")
