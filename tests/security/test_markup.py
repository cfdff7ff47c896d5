"""HTML and template syntax in every text a page shows, rendered in Chromium: nothing runs.

The demo is served with `MarkupProvider` (tests/security/providers.py): the user's text,
the model's answer, a data row (a part it creates, named with markup), a mutation's input
and preview (waiting for staff) all carry `<script>`, `<img onerror>`, `<svg onload>`, a
`javascript:` link and `{{ }}` / `{% %}` template syntax, each setting
`window.__chatomonPwned` if it ran. In the chat widget and in the staff console (the chat,
the approvals queue and history, the turn list and the turn page, the audit list and an
audit event), every page must show the text literally: no flag set, no dialog opened, no
element made from the markup, and the template syntax shown rather than rendered.

Chromium and Playwright as in tests/browser/ (Debian's chromium; skipped without it,
failing where CHATOMON_REQUIRE_BROWSER is set).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import (
    END_USER,
    MISSING,
    STAFF,
    TIMEOUT_MS,
    apply_filter,
    launch_chromium,
    log_in,
    served_demo,
)
from tests.security.providers import FLAG, MODEL_MARKUP, ROW_NAME, markup

if MISSING is None:
    from playwright.sync_api import expect

PROVIDER = "tests.security.providers.MarkupProvider"
USER_MARKUP = markup("user")
INJECTED = "img[src='x'], svg[onload], a[href^='javascript:'], script:not([src])"
"""Elements the markup would make if a page parsed it (pages ship no inline script)."""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo answering with `MarkupProvider`, with a staff user and an end user: its URL."""
    if MISSING is not None:
        pytest.skip(MISSING)
    with served_demo(tmp_path_factory, PROVIDER) as served:
        yield served.url


@pytest.fixture(scope="module")
def browser(demo: str) -> Iterator[Any]:
    """One Chromium for the module."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


class Watched:
    """A page whose dialogs are recorded (and dismissed): a script that ran might open one."""

    def __init__(self, browser: Any, url: str) -> None:
        self.context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def assert_inert(self, *texts: str) -> None:
        """Nothing ran on the page, nothing was made of markup, and `texts` show literally.

        Literally: the template syntax in them too (a rendered `{{ request.user.username }}`
        would name the viewer, a rendered `{% now %}` the year).
        """
        for text in texts:
            expect(self.page.locator("body")).to_contain_text(text)
        self.page.wait_for_timeout(300)  # an onerror or onload fires after the page settles
        assert self.page.evaluate(f"window.{FLAG}") is None, self.page.url
        assert self.dialogs == [], self.page.url
        assert self.page.locator(INJECTED).count() == 0, self.page.url


@pytest.fixture
def watched(browser: Any, demo: str) -> Iterator[Any]:
    """Open watched pages, each in a context (a session) of its own."""
    opened: list[Watched] = []

    def open_page() -> Watched:
        page = Watched(browser, demo)
        opened.append(page)
        return page

    yield open_page
    for page in opened:
        page.context.close()


def chat(page: Any, text: str) -> None:
    """Send `text` from the widget or the console chat form."""
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_markup_is_shown_literally_in_the_widget_and_every_console_page(watched) -> None:
    user = watched()
    log_in(user.page, END_USER, "/")
    expect(user.page.locator(".chatomon-status")).to_have_text("connected")

    # A data row and a mutation input with markup; the cost change waits for staff.
    chat(user.page, f"approve {USER_MARKUP}")
    waiting = user.page.locator(".chatomon-confirm").last
    expect(waiting).to_contain_text("waits for a staff approval")
    expect(waiting).to_contain_text(ROW_NAME)  # the preview names the part
    user.assert_inert(USER_MARKUP)

    # The model's answer, after a query whose rows hold the new part's name.
    chat(user.page, f"Hello {USER_MARKUP}")
    expect(user.page.locator(".chatomon-assistant").last).to_contain_text(MODEL_MARKUP)
    user.assert_inert(USER_MARKUP, MODEL_MARKUP)
    rows = user.page.locator(".chatomon-tool").last  # the query's rows: the new part's
    rows.locator("summary").click()
    expect(rows).to_contain_text(ROW_NAME)
    user.assert_inert(ROW_NAME)

    staff = watched()
    log_in(staff.page, STAFF, "/console/approvals/")
    card = staff.page.locator(".cc-approval", has_text="updatePartCost").first
    expect(card).to_contain_text(ROW_NAME)
    staff.assert_inert(ROW_NAME)
    card.get_by_role("button", name="Approve").click()
    expect(user.page.locator(".chatomon-assistant").last).to_contain_text(MODEL_MARKUP)
    user.assert_inert(MODEL_MARKUP)

    staff.page.goto("/console/approvals/history/")
    staff.assert_inert(ROW_NAME)

    staff.page.goto("/console/turns/")
    staff.assert_inert()
    for number in range(2):  # the answered turn and the approved one
        staff.page.goto("/console/turns/")
        staff.page.locator("#cc-turn-results tbody tr").nth(number).get_by_role(
            "link"
        ).first.click()
        expect(staff.page.get_by_role("heading", level=1)).to_contain_text("Turn")
        staff.page.get_by_text("Report JSON", exact=True).click()
        staff.assert_inert(USER_MARKUP, ROW_NAME, MODEL_MARKUP)

    staff.page.goto("/console/audit/")
    staff.assert_inert()
    apply_filter(staff.page, "Search in payload", "onerror", "q")
    events = staff.page.locator("#cc-audit-results tbody tr")
    expect(events.first).to_be_visible()
    staff.assert_inert()
    events.first.get_by_role("link").first.click()
    staff.page.wait_for_url(lambda url: re.search(r"/console/audit/\d+/$", urlsplit(url).path))
    staff.assert_inert(f"onerror='window.{FLAG}=")


def test_markup_is_shown_literally_in_the_console_chat(watched) -> None:
    staff = watched()
    log_in(staff.page, STAFF, "/console/chat/")
    chat(staff.page, f"Hello {USER_MARKUP}")
    answer = staff.page.locator(".cc-message--assistant").last
    expect(answer).to_contain_text(MODEL_MARKUP)
    staff.assert_inert(USER_MARKUP, MODEL_MARKUP)
    staff.page.reload()  # the conversation rendered by the server this time
    staff.assert_inert(USER_MARKUP, MODEL_MARKUP)


def test_the_markup_runs_where_a_page_parses_it(watched) -> None:
    # The control: the same strings, parsed as HTML, do set the flag and make elements, so
    # the checks above would see an escaping that went missing.
    page = watched()
    page.page.goto("/console/login/")
    # (innerHTML-style insertion runs no <script>, but every event handler fires.)
    page.page.evaluate(
        "(html) => document.body.insertAdjacentHTML('beforeend', html)", MODEL_MARKUP + ROW_NAME
    )
    page.page.wait_for_timeout(300)
    assert page.page.evaluate(f"window.{FLAG}") is not None
    assert page.page.locator(INJECTED).count() >= 4
