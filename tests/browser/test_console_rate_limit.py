"""A console chat message refused by the staff member's `console_requests` budget shows why."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from chatomon.django.transports.admission import limit_refusal
from chatomon.django.transports.ratelimit import Admission
from chatomon.django.transports.sse import frame
from tests.browser.conftest import STAFF, log_in


def test_a_refused_message_shows_the_rate_limit_notice(new_page: Any) -> None:
    page = new_page()
    log_in(page, STAFF, "/console/chat/")
    # The console's refusal (console/views/chat.py): 429, Retry-After, and the rate_limited
    # event as a one-frame event stream, as the chat endpoints' SSE refusals are.
    refusal = limit_refusal(Admission(allowed=False, retry_after_seconds=42))
    assert refusal is not None
    page.route(
        "**/console/chat/send/",
        lambda route: route.fulfill(
            status=429,
            headers={"Content-Type": "text/event-stream", "Retry-After": "42"},
            body=frame(refusal),
        ),
    )
    page.get_by_label("Message").fill("One more, please")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".cc-message.cc-error").last).to_have_text(
        "Chat rate limit exceeded. Try again later."
    )
