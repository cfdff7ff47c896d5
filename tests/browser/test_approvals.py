"""A user's write that needs staff approval: queued live in the console, approved, resumed.

Two browser contexts are two people: alice chats on the demo's landing page over the
WebSocket; a staff member keeps the console's approval queue open. Nobody reloads a page.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.browser.conftest import STAFF, log_in, open_chat, say, screenshot


def open_queue(new_page: Any) -> Any:
    page = new_page()
    # The queue is live once its SSE stream is open: wait for that response, not a delay.
    with page.expect_response(lambda response: "/console/live/" in response.url):
        log_in(page, STAFF, "/console/approvals/")
    return page


def ask_for_a_cost_change(user: Any, number: str, cost: str) -> None:
    say(user, f"Please set the unit cost of part {number} to {cost}")
    waiting = user.locator(".chatomon-confirm").last
    expect(waiting).to_contain_text("updatePartCost waits for a staff approval")
    expect(waiting.locator("ins").first).to_have_text(cost)


def pending_card(staff: Any, number: str) -> Any:
    card = staff.locator("#cc-approval-queue .cc-approval", has_text=number)
    expect(card).to_have_count(1)
    expect(card).to_contain_text("staff approval")
    return card


def pending_count(staff: Any) -> int:
    badge = staff.get_by_role("navigation", name="Console").get_by_text(re.compile("pending"))
    return int(re.search(r"\d+", badge.text_content() or "")[0])


def test_a_users_request_appears_live_staff_approve_and_the_turn_continues(new_page) -> None:
    staff = open_queue(new_page)
    before = pending_count(staff)
    user = open_chat(new_page)
    ask_for_a_cost_change(user, "P-1001", "14.50")
    card = pending_card(staff, "P-1001")  # pushed to the open queue: nobody reloaded it
    expect(staff.get_by_role("navigation", name="Console")).to_contain_text(f"{before + 1} pending")
    expect(card.locator(".cc-preview")).to_contain_text("unit_cost")
    expect(card.locator(".cc-preview ins")).to_have_text("14.50")
    screenshot(staff, "approvals-pending")
    screenshot(user, "user-waiting-for-approval")

    card.get_by_role("button", name="Approve").click()
    expect(staff.locator("#cc-approval-queue .cc-approval", has_text="P-1001")).to_have_count(0)
    # The decided card stays, with its outcome and the resumed turn, after the live refresh
    # (the badge comes back down in the same pushed update that re-renders the queue).
    expect(staff.get_by_role("navigation", name="Console")).to_contain_text(f"{before} pending")
    decided = staff.locator("#cc-approval-decisions .cc-approval", has_text="P-1001")
    expect(decided.get_by_role("status")).to_contain_text("Approved by staff")
    expect(decided.get_by_role("link", name="open the resumed turn")).to_be_visible()
    screenshot(staff, "approvals-decided")

    expect(user.locator(".chatomon-note").last).to_have_text("Decision: approved by a staff member")
    expect(user.locator(".chatomon-assistant").last).to_have_text(
        "Done: part P-1001 now costs 14.50 EUR per unit."
    )
    screenshot(user, "user-turn-continued")

    staff.get_by_role("link", name="Decided confirmations (history)").click()
    decided = staff.locator(".cc-approval", has_text="P-1001")
    expect(decided).to_contain_text("approved by staff")
    screenshot(staff, "approvals-history")


def test_a_rejected_approval_tells_the_user_nothing_changed(new_page) -> None:
    staff = open_queue(new_page)
    user = open_chat(new_page)

    ask_for_a_cost_change(user, "P-1003", "1.00")
    card = pending_card(staff, "P-1003")
    card.get_by_label("Reason (for a rejection)").fill("too cheap")
    card.get_by_role("button", name="Reject").click()

    expect(user.locator(".chatomon-note").last).to_have_text("Decision: rejected by a staff member")
    expect(user.locator(".chatomon-assistant").last).to_contain_text("The change was not made")
    # The reason typed on the card is kept with the decision.
    staff.get_by_role("link", name="Decided confirmations (history)").click()
    decided = staff.locator(".cc-approval", has_text="P-1003")
    expect(decided).to_contain_text("rejected by staff")
    expect(decided).to_contain_text("reason: too cheap")


def test_the_user_confirms_their_own_assignment_in_the_chat(new_page) -> None:
    user = open_chat(new_page)

    say(user, "Assign part P-1002 to project PRJ-102")
    confirm = user.locator(".chatomon-confirm").last
    expect(confirm).to_contain_text("assignPartToProject needs your confirmation")
    expect(confirm).to_contain_text("PRJ-102")
    screenshot(user, "user-confirmation")
    confirm.get_by_role("button", name="Confirm").click()

    expect(user.locator(".chatomon-assistant").last).to_have_text(
        "Done: part P-1002 is now used by project PRJ-102."
    )


def test_a_second_staff_decision_sees_who_decided_first(new_page) -> None:
    first = open_queue(new_page)
    # The second console is offline from the live stream, so its card stays decidable.
    second = new_page()
    second.route("**/console/live/**", lambda route: route.abort())
    user = open_chat(new_page)
    ask_for_a_cost_change(user, "P-1005", "7.75")
    log_in(second, STAFF, "/console/approvals/")
    stale = pending_card(second, "P-1005")

    pending_card(first, "P-1005").get_by_role("button", name="Approve").click()
    expect(user.locator(".chatomon-assistant").last).to_have_text(
        "Done: part P-1005 now costs 7.75 EUR per unit."
    )

    stale.get_by_role("button", name="Reject").click()
    conflict = second.locator(".cc-approval", has_text="P-1005").get_by_role("alert")
    expect(conflict).to_contain_text("Already approved by staff")
    expect(conflict).to_contain_text("Nothing was executed again")
    screenshot(second, "approvals-conflict")
    assert user.locator(".chatomon-assistant", has_text="P-1005").count() == 1


def test_keys_move_between_cards_and_decide_after_a_confirmation(new_page) -> None:
    staff = open_queue(new_page)
    user = open_chat(new_page)
    for number, cost in (("P-1010", "3.10"), ("P-1011", "4.20")):
        ask_for_a_cost_change(user, number, cost)
        pending_card(staff, number)
    cards = staff.locator("#cc-approval-queue .cc-approval")
    current = staff.locator("#cc-approval-queue .cc-approval--current")
    staff.locator("h1").click()  # the page has the keyboard, no field does
    for _ in range(cards.count()):  # j until the P-1010 card is current (older ones may wait)
        staff.keyboard.press("j")
        if "P-1010" in (current.text_content() or ""):
            break
    expect(current).to_contain_text("P-1010")
    staff.keyboard.press("j")
    expect(current).to_contain_text("P-1011")
    staff.keyboard.press("k")
    expect(current).to_contain_text("P-1010")
    expect(staff.locator(":focus")).to_contain_text("P-1010")
    screenshot(staff, "approvals-keyboard")

    staff.once("dialog", lambda dialog: dialog.dismiss())  # asked first: "no" decides nothing
    staff.keyboard.press("a")
    expect(current).to_contain_text("P-1010")
    staff.once("dialog", lambda dialog: dialog.accept())
    staff.keyboard.press("a")
    decided = staff.locator("#cc-approval-decisions .cc-approval", has_text="P-1010")
    expect(decided.get_by_role("status")).to_contain_text("Approved by staff")
    expect(user.locator(".chatomon-assistant", has_text="P-1010")).to_contain_text("3.10")

    staff.locator("h1").click()
    for _ in range(cards.count()):
        staff.keyboard.press("j")
        if "P-1011" in (current.text_content() or ""):
            break
    staff.once("dialog", lambda dialog: dialog.accept())
    staff.keyboard.press("r")
    rejected = staff.locator("#cc-approval-decisions .cc-approval", has_text="P-1011")
    expect(rejected.get_by_role("status")).to_contain_text("Rejected by staff")
