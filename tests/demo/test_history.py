"""The demo's seeded history: conversations run through the pipeline, spread over days.

Run in a demo process of its own (`tests.demo.process`), as the other demo tests do.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.demo.process import manage

KINDS = "chatomon.Turn", "chatomon.PendingConfirmation", "chatomon_console.EscalationReview"


def rows(data_dir: Path) -> dict[str, list[dict[str, Any]]]:
    output = manage(data_dir, "dumpdata", *KINDS, "--skip-checks").stdout
    found: dict[str, list[dict[str, Any]]] = {kind.lower(): [] for kind in KINDS}
    for row in json.loads(output):
        found[row["model"]].append(row["fields"])
    return found


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data_dir = tmp_path_factory.mktemp("demo-history")
    manage(data_dir, "migrate", "--verbosity", "0", "--skip-checks")
    staff = "from chatomon.demo.staff import ensure_staff_user; ensure_staff_user()"
    manage(data_dir, "shell", "-c", staff)
    output = manage(data_dir, "demo_seed", "--owner", "staff", "--history", "--skip-checks").stdout
    return data_dir, output


def test_history_is_a_few_days_of_turns_with_decisions_and_escalations(seeded) -> None:
    data_dir, output = seeded
    assert "history: 9 turns" in output.splitlines()
    found = rows(data_dir)
    turns = found["chatomon.turn"]
    days = {datetime.fromisoformat(t["started_at"]).date() for t in turns}
    assert len(days) == 5  # four days back, and today's waiting approval
    escalated = [t for t in turns if t["escalated"]]
    # Escalations with content: what was asked, and the answer the asker read.
    assert len(escalated) == 2
    assert all(t["report"]["user_message"] and t["report"]["final_reply"] for t in escalated)
    assert all(
        any(r["name"] == "human_handoff" and r["escalate"] for r in t["report"]["input"])
        for t in escalated
    )
    assert sum(t["final_action"] == "blocked" for t in turns) == 2
    assert sum(t["input_tokens"] > 0 for t in turns) == 4  # the model ran in four turns
    # The report's start moved with the turn.
    assert all(t["report"] is None or t["report"]["started_at"][:10] == t["started_at"][:10]
               for t in turns)  # fmt: skip
    decisions = sorted((c["approver"], c["status"]) for c in found["chatomon.pendingconfirmation"])
    assert decisions == [("client", "approved"), ("staff", "approved"), ("staff", "pending"),
                         ("staff", "rejected")]  # fmt: skip
    (review,) = found["chatomon_console.escalationreview"]
    assert review["status"] == "resolved" and review["note"]


def test_seeding_history_again_changes_nothing(seeded) -> None:
    data_dir, _ = seeded
    before = rows(data_dir)
    output = manage(data_dir, "demo_seed", "--owner", "staff", "--history", "--skip-checks").stdout
    assert "history: skipped (the database has turns already)" in output
    assert rows(data_dir) == before


def test_history_needs_the_staff_user_who_decides(tmp_path: Path) -> None:
    manage(tmp_path, "migrate", "--verbosity", "0", "--skip-checks")
    with pytest.raises(AssertionError, match="--history needs --owner"):
        manage(tmp_path, "demo_seed", "--history", "--skip-checks")


def test_the_history_can_be_turned_off_for_an_empty_console(tmp_path: Path) -> None:
    # In the demo's own process: the demo's models are not the test project's.
    ask = (
        "from chatomon.demo.history import history_wanted as w; "
        "print(w({}), w({'CHATOMON_DEMO_HISTORY': '1'}), w({'CHATOMON_DEMO_HISTORY': ' 0 '}), w())"
    )
    output = manage(tmp_path, "shell", "-c", ask, env={"CHATOMON_DEMO_HISTORY": "0"}).stdout
    assert output.split()[-4:] == ["True", "True", "False", "False"]
