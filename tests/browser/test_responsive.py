"""The console on a 390 px wide phone: no screen scrolls sideways.

Wide content (tables, charts) may scroll inside its own box; the page itself may not, so
`document.documentElement.scrollWidth` stays within `innerWidth` on every screen.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import STAFF, TIMEOUT_MS, log_in, screenshot
from tests.browser.test_console_screens import chat_once

PHONE = {"width": 390, "height": 844}
SCREENS = {
    "dashboard": "/console/",
    "turns": "/console/turns/",
    "audit": "/console/audit/",
    "approvals": "/console/approvals/",
    "escalations": "/console/escalations/",
}


@pytest.fixture
def phone(browser: Any, demo: Any) -> Any:
    context = browser.new_context(base_url=demo.url, viewport=PHONE)
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


def overflow(page: Any) -> dict[str, Any]:
    """How wide the document is against the window, and the widest offenders."""
    return dict(
        page.evaluate(
            """() => ({
                scroll: document.documentElement.scrollWidth,
                inner: window.innerWidth,
                wide: [...document.querySelectorAll("body *")]
                    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
                    .filter(e => !e.closest(".cc-scroll"))
                    .slice(0, 5).map(e => e.tagName + "." + (e.getAttribute("class") || "")),
            })"""
        )
    )


def test_no_screen_scrolls_sideways_at_390_px(new_page, phone) -> None:
    chat_once(new_page)  # a turn and its audit events, so the lists have rows
    log_in(phone, STAFF, "/console/")
    measured = {}
    for name, path in SCREENS.items():
        phone.goto(path)
        expect(phone.get_by_role("heading", level=1)).to_be_visible()
        measured[name] = overflow(phone)
        screenshot(phone, f"phone-{name}")
    phone.goto("/console/turns/")
    phone.locator("#cc-turn-results tbody tr a").first.click()
    expect(phone.get_by_role("heading", level=1)).to_contain_text("Turn")
    measured["turn page"] = overflow(phone)
    screenshot(phone, "phone-turn-detail")
    wide = {name: m for name, m in measured.items() if m["scroll"] > m["inner"]}
    assert not wide, wide
