"""Two of a user's turns compared side by side, chosen from the turn list."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.browser.conftest import STAFF, log_in, screenshot
from tests.browser.test_console_screens import chat_once


def test_two_turns_picked_in_the_list_open_side_by_side(new_page: Any) -> None:
    first, second = chat_once(new_page), chat_once(new_page)
    staff = new_page()
    log_in(staff, STAFF, "/console/turns/")
    rows = staff.locator("#cc-turn-results tbody tr")
    for marker in (first, second):
        rows.filter(has_text=marker).get_by_role("checkbox").check()
    staff.get_by_role("button", name="Compare the two selected turns").click()
    expect(staff).to_have_url(re.compile(r"/console/turns/compare/\?t=\w+&t=\w+$"))
    expect(staff.get_by_role("heading", level=1)).to_have_text("Compare turns")
    figures = staff.locator("table.cc-compare")
    expect(figures).to_contain_text("Running time")
    expect(figures).to_contain_text(first)  # each column names its turn by what was asked
    expect(figures).to_contain_text(second)
    steps = staff.locator("table.cc-compare-steps tbody tr")
    expect(steps.first).to_contain_text("input ·")
    expect(staff.locator("pre.cc-diff .cc-diff__line--added").first).to_be_visible()
    screenshot(staff, "turn-compare")
