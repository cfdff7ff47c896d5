"""A mutation whose preview changes nothing asks nobody and writes nothing (both backends)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from chatomon.chat.tools import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.mutation_runs import unchanged_reason
from chatomon.redaction import Redaction
from tests.data.catalog import BACKENDS, Catalog, open_catalog

ALL = ("createPart", "updatePartCost", "assignPartToProject")


@pytest.fixture(params=BACKENDS)
def catalog(request: pytest.FixtureRequest) -> Catalog:
    return open_catalog(request)


def mutate(catalog: Catalog, name: str, data: Any, **settings: Any) -> Any:
    settings.setdefault("allowed_mutations", ALL)
    return catalog.call(
        "mutate",
        {"mutation": name, "input": data},
        actor=catalog.actor,
        settings=ToolSettings(**settings),
    )


@pytest.mark.parametrize("approval", ["confirm_mutations", "staff_approval_mutations"])
def test_an_update_to_the_value_already_stored_is_unchanged(
    catalog: Catalog, approval: str
) -> None:
    bearing = catalog.id_of("PartManager", "Bearing")
    # 12.5 is the stored 12.50: the preview's before and after are equal once serialized.
    result = mutate(
        catalog, "updatePartCost", {"part_id": bearing, "unit_cost": "12.5"}, **{approval: ALL}
    )
    reason = f"PartManager #{bearing} already has unit_cost 12.50"
    assert result == {
        "status": "unchanged",
        "mutation": "updatePartCost",
        "input": {"part_id": bearing, "unit_cost": "12.5"},
        "reason": reason,
        "message": f"{reason}: nothing to change, so nothing was written and nobody needs "
        "to confirm.",
    }
    assert catalog.stored_part("Bearing")["unit_cost"] == Decimal("12.50")


def test_an_update_that_changes_a_value_still_asks(catalog: Catalog) -> None:
    bearing = catalog.id_of("PartManager", "Bearing")
    result = mutate(
        catalog, "updatePartCost", {"part_id": bearing, "unit_cost": "12.51"}, confirm_mutations=ALL
    )
    assert result["status"] == "confirmation_required"


def test_an_unchanged_write_is_audited_as_such(catalog: Catalog) -> None:
    events: list[tuple[str, Any]] = []
    toolset = Toolset(catalog.registry, ToolSettings(allowed_mutations=ALL, confirm_mutations=ALL))
    context = toolset.context(catalog.actor, audit=lambda kind, data: events.append((kind, data)))
    bolt = catalog.id_of("PartManager", "Bolt")
    async_to_sync(toolset.call)(
        "mutate",
        {"mutation": "updatePartCost", "input": {"part_id": bolt, "unit_cost": "0.25"}},
        context,
    )
    assert events[0] == ("mutation_unchanged", {"mutation": "updatePartCost"})
    assert events[1][0] == "tool_called"


@pytest.mark.parametrize(
    ("preview", "reason"),
    [
        (
            {"action": "assign", "unchanged": True, "reason": "P-1 is already in PRJ-1"},
            "P-1 is already in PRJ-1",
        ),
        ({"action": "assign", "unchanged": True}, "nothing would change"),
        ({"action": "assign", "unchanged": True, "reason": "  "}, "nothing would change"),
        (
            {
                "action": "update",
                "manager": "PartManager",
                "id": 3,
                "changes": [
                    {"field": "unit_cost", "before": "1.00", "after": "1.00"},
                    {"field": "status", "before": "active", "after": "active"},
                ],
            },
            "PartManager #3 already has unit_cost 1.00, status active",
        ),
        ({"changes": [{"field": "x", "before": 1, "after": 1}]}, "the object already has x 1"),
    ],
)
def test_unchanged_reason_of_previews_that_change_nothing(
    preview: dict[str, Any], reason: str
) -> None:
    assert unchanged_reason(preview) == reason


@pytest.mark.parametrize(
    "preview",
    [
        None,
        "a text preview",
        {"action": "create", "values": {"name": "Nut"}},
        {"action": "assign", "unchanged": False},
        {"action": "assign", "unchanged": "yes"},  # only True says so
        {"action": "assign", "already_assigned": True},  # no convention: cannot tell
        {"changes": [{"field": "unit_cost", "before": "1.00", "after": "2.00"}]},
        # one field changes, one does not: something changes
        {
            "changes": [
                {"field": "unit_cost", "before": "1.00", "after": "2.00"},
                {"field": "status", "before": "active", "after": "active"},
            ]
        },
        # input the changes do not show may still change something
        {"changes": [], "input": {"note": "why"}},
        # a write given only its target (archive, delete, approve): no field shows what it does
        {"action": "update", "manager": "PartManager", "id": 3, "changes": []},
        # a secret kept as it is: "unchanged" would confirm a guess, and the reason repeat it
        {"changes": [{"field": "api_token", "before": "abc123", "after": "abc123"}]},
        {
            "changes": [
                {"field": "status", "before": "active", "after": "active"},
                {"field": "password", "before": "hunter2", "after": "hunter2"},
            ]
        },
        {"changes": ["unit_cost"]},
        {"changes": "none"},
    ],
)
def test_previews_that_change_something_or_cannot_tell(preview: Any) -> None:
    assert unchanged_reason(preview) is None


def test_a_field_the_projects_rule_marks_sensitive_is_never_answered_unchanged(
    catalog: Catalog,
) -> None:
    # The project's own redaction keys, not only the defaults: "unchanged" would confirm
    # a guessed value, and the reason would repeat it.
    bearing = catalog.id_of("PartManager", "Bearing")
    settings = ToolSettings(allowed_mutations=ALL, confirm_mutations=ALL)
    toolset = Toolset(catalog.registry, settings, redaction=Redaction(keys=("unit_cost",)))
    args = {"mutation": "updatePartCost", "input": {"part_id": bearing, "unit_cost": "12.5"}}
    call = async_to_sync(toolset.call)
    result = call("mutate", args, toolset.context(catalog.actor))
    assert result["status"] == "confirmation_required"
    assert "12.50" not in str(result.get("reason", ""))
    default = Toolset(catalog.registry, settings)
    assert call("mutate", args, default.context(catalog.actor))["status"] == "unchanged"


def test_unchanged_reason_asks_the_rule_it_is_given() -> None:
    kept = {"changes": [{"field": "pin", "before": "1234", "after": "1234"}]}
    assert unchanged_reason(kept) == "the object already has pin 1234"
    assert unchanged_reason(kept, Redaction(keys=("pin",)).sensitive) is None


def test_a_change_summary_says_what_a_declined_write_would_have_changed() -> None:
    from chatomon.chat.loop.suspension import declined_result  # noqa: PLC0415
    from chatomon.data.mutation_runs import change_summary  # noqa: PLC0415
    from chatomon.redaction import SENSITIVE_KEYS, Redaction  # noqa: PLC0415

    preview = {
        "action": "update", "manager": "UserManager", "id": 4,
        "changes": [
            {"field": "name", "before": "Ann", "after": "A" * 60},
            {"field": "password", "before": "old-secret", "after": "new-secret"},
            {"field": "pin", "before": "1234", "after": None},
        ],
    }  # fmt: skip
    summary = change_summary(preview)
    assert summary == (
        f"name from Ann to {'A' * 39}…, password, pin from 1234 to none on UserManager #4"
    )  # the default rule keeps the password's values out
    assert change_summary({"action": "create", "values": {"name": "x"}}) is None
    # The service's own rule applies: a configured `pin` is named without its values.
    pin = Redaction((*SENSITIVE_KEYS, "pin")).sensitive
    message = declined_result("renameUser", "rejected", preview, pin)["message"]
    assert message.endswith(
        "password, pin on UserManager #4) was rejected, so nothing was written."
    )
    assert "1234" not in message and "secret" not in message
    assert declined_result("renameUser", "rejected", None, pin)["message"] == (
        "The change was rejected, so nothing was written."
    )
