"""Console chat: a streamed confirmation's card comes from the server (one preview renderer).

console.js draws no preview of its own: it fetches the card the conversation page draws.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import STAFF, log_in


def test_the_streamed_card_is_the_servers_and_matches_the_page_after_a_reload(new_page) -> None:
    page = new_page()
    log_in(page, STAFF, "/console/chat/")
    cards = []
    page.on("request", lambda r: cards.append(r.url) if "/chat/confirmations/" in r.url else None)
    page.get_by_label("Message").fill("Assign part P-1011 to project PRJ-104")
    page.get_by_role("button", name="Send").click()
    streamed = page.locator(".cc-message--confirm").last
    expect(streamed.locator("table.cc-preview caption")).to_have_text(
        re.compile(r"^Assign ProjectManager #\d+$")
    )
    assert len(cards) == 1  # fetched once, from the server
    drawn = streamed.inner_html()
    page.reload()  # the conversation page draws its waiting confirmation itself
    reloaded = page.locator(".cc-message--confirm").last
    expect(reloaded.locator("table.cc-preview caption")).to_be_visible()
    token = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')
    assert token.sub("", reloaded.inner_html()).strip() == token.sub("", drawn).strip()


def test_a_card_that_cannot_be_fetched_says_so(new_page) -> None:
    page = new_page()
    log_in(page, STAFF, "/console/chat/")
    page.route("**/console/chat/confirmations/**", lambda route: route.fulfill(status=500))
    page.get_by_label("Message").fill("Assign part P-1012 to project PRJ-105")
    page.get_by_role("button", name="Send").click()
    card = page.locator(".cc-message--confirm").last
    expect(card).to_have_text("The confirmation could not be shown: reload the page to decide it.")
    expect(card).to_have_attribute("role", "alert")
