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


def compare_on_phone(phone: Any) -> dict[str, Any]:
    """Open the compare view of the two latest turns; the page's overflow, then the tables'.

    At 390 px the comparison reads without sideways scrolling: its tables fit the screen
    (long names wrap), and only the raw reports' line diff scrolls inside its own box.
    """
    phone.goto("/console/turns/")
    for box in phone.locator("#cc-turn-results tbody tr").get_by_role("checkbox").all()[:2]:
        box.check()
    phone.get_by_role("button", name="Compare the two selected turns").click()
    expect(phone.get_by_role("heading", level=1)).to_have_text("Compare turns")
    screenshot(phone, "phone-turn-compare")
    tables = phone.evaluate(
        """() => [...document.querySelectorAll("table.cc-compare, table.cc-compare-steps")]
            .map(t => ({table: t.className, width: t.scrollWidth,
                        box: t.parentElement.clientWidth}))"""
    )
    assert len(tables) == 2 and all(t["width"] <= t["box"] for t in tables), tables
    return overflow(phone)


def test_no_screen_scrolls_sideways_at_390_px(new_page, phone) -> None:
    chat_once(new_page)  # turns and their audit events, so the lists have rows
    chat_once(new_page)  # a second turn, to compare with the first
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
    measured["compare"] = compare_on_phone(phone)
    wide = {name: m for name, m in measured.items() if m["scroll"] > m["inner"]}
    assert not wide, wide
