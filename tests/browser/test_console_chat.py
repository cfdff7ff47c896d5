"""Staff log in and chat with the assistant in the console; the answer streams in."""

from __future__ import annotations

import itertools
import re

from playwright.sync_api import expect

from tests.browser.conftest import STAFF, TextRecorder, log_in, screenshot


def test_staff_log_in_and_see_the_dashboard(new_page) -> None:
    page = new_page()
    page.goto("/console/")
    expect(page).to_have_url(re.compile(r"/console/login/\?next=/console/$"))
    screenshot(page, "login")
    log_in(page, STAFF)
    expect(page.get_by_role("navigation", name="Console")).to_be_visible()
    screenshot(page, "dashboard")


def test_a_console_chat_streams_the_answer(new_page) -> None:
    page = new_page()
    log_in(page, STAFF, "/console/chat/")
    recorder = TextRecorder(page, ".cc-message--assistant .cc-text")
    page.get_by_label("Message").fill("How many parts are there?")
    page.get_by_role("button", name="Send").click()
    reply = page.locator(".cc-message--assistant .cc-text").last
    expect(reply).to_have_text(re.compile(r"^Acme Parts has \d+ parts in its catalogue\.$"))
    # The provider streams word by word and the output orbitals release the reply in windows
    # of a dozen characters: the bubble grew, piece by piece, to the whole text.
    texts = recorder.texts
    assert texts[-1] == reply.text_content()
    assert len(texts) >= 3, texts
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
    expect(page.locator(".cc-tool summary").last).to_contain_text("query")
    expect(page).to_have_url(re.compile(r"/console/chat/[0-9a-f-]{36}/$"))
    screenshot(page, "chat")


def test_staff_confirm_their_own_assignment_inline_in_the_console_chat(new_page) -> None:
    page = new_page()
    log_in(page, STAFF, "/console/chat/")
    page.get_by_label("Message").fill("Assign part P-1010 to project PRJ-103")
    page.get_by_role("button", name="Send").click()
    confirm = page.locator(".cc-message--confirm").last
    expect(confirm).to_contain_text("assignPartToProject waits for your confirmation")
    # Drawn as chatomon.preview draws it everywhere (a custom preview: its caption, then the
    # rest), not one JSON blob; the button says what the widget's says.
    expect(confirm.locator("table.cc-preview caption")).to_have_text(
        re.compile(r"^Assign ProjectManager #\d+$")
    )
    expect(confirm.locator("pre.cc-json")).not_to_contain_text('"action"')
    screenshot(page, "chat-confirmation")
    confirm.get_by_role("button", name="Confirm").click()
    expect(page.locator(".cc-message--assistant .cc-text").last).to_have_text(
        "Done: part P-1010 is now used by project PRJ-103."
    )
    # The asker's own decision reads "you", never the stored "user:<id>".
    expect(page.locator(".cc-message--note").last).to_have_text(
        "assignPartToProject approved by you"
    )
