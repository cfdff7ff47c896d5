"""ToolSettings, ToolContext and Toolset: validation, configuration errors, calls, audit."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from chatomon.chat.tools import ERROR_CODES, ToolContext, Toolset, ToolSettings, tool_error
from chatomon.chat.tools.results import is_tool_error
from chatomon.data import DataConfigurationError, Manager, ManagerRegistry, mutation
from chatomon.data.fixtures import toy_registry
from chatomon.errors import ConfigurationError
from tests.data.catalog import records_catalog
from tests.testapp.inputs import CreatePartInput


def test_defaults_match_the_settings_reference() -> None:
    settings = ToolSettings()
    assert settings.max_results == 200
    assert settings.query_timeout_seconds is None
    assert settings.allowed_mutations == ()
    assert settings.confirm_mutations == ()
    assert settings.staff_approval_mutations == ()
    assert settings.tool_strategy == "discovery"


def test_lists_become_tuples_and_settings_are_frozen() -> None:
    settings = ToolSettings(allowed_mutations=["a", "b"], confirm_mutations=["a"])
    assert settings.allowed_mutations == ("a", "b")
    assert settings.approver("a") == "client"
    assert settings.approver("b") is None
    with pytest.raises(AttributeError):
        settings.max_results = 5


def test_from_mapping_takes_the_tool_keys_of_a_chatomon_mapping() -> None:
    settings = ToolSettings.from_mapping(
        {
            "max_results": 20,
            "tool_strategy": "direct",
            "provider": "x",
            "allowed_mutations": ["a"],
            "staff_approval_mutations": ["a"],
        }
    )
    assert (settings.max_results, settings.tool_strategy, settings.approver("a")) == (
        20,
        "direct",
        "staff",
    )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"max_results": 0}, "max_results must be a positive integer"),
        ({"max_results": True}, "max_results"),
        ({"max_results": 2.5}, "max_results"),
        ({"query_timeout_seconds": 0}, "query_timeout_seconds"),
        ({"query_timeout_seconds": "1"}, "query_timeout_seconds"),
        ({"tool_strategy": "smart"}, "'discovery' or 'direct'"),
        ({"allowed_mutations": "createPart"}, "list of mutation names"),
        ({"allowed_mutations": [""]}, "mutation names"),
        ({"confirm_mutations": ["createPart"]}, "missing from allowed_mutations: createPart"),
        (
            {"staff_approval_mutations": ["x"], "allowed_mutations": ["y"]},
            "missing from allowed_mutations",
        ),
        (
            {
                "allowed_mutations": ["a"],
                "confirm_mutations": ["a"],
                "staff_approval_mutations": ["a"],
            },
            "both client confirmation and staff approval",
        ),
    ],
)
def test_bad_settings_are_configuration_errors(options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        ToolSettings(**options)


def test_allowed_mutations_must_be_registered() -> None:
    with pytest.raises(
        DataConfigurationError,
        match="no mutation 'createPrt' is registered; did you mean 'createPart'",
    ):
        Toolset(records_catalog().registry, ToolSettings(allowed_mutations=["createPrt"]))


def test_an_allowed_mutation_must_write_an_exposed_manager() -> None:
    hidden = Manager.from_records("VaultManager", records=[{"name": "x"}], chat_exposed=False)
    create = mutation(name="createVault", input=CreatePartInput, manager="VaultManager")(
        lambda a, d: None
    )
    registry = ManagerRegistry([hidden, create])
    with pytest.raises(DataConfigurationError, match="not chat_exposed"):
        Toolset(registry, ToolSettings(allowed_mutations=["createVault"]))
    Toolset(registry)  # not allowed: nothing to check


def test_a_broken_registry_fails_when_the_toolset_is_built() -> None:
    broken = ManagerRegistry(
        [
            Manager.from_records(
                "PartManager", records=[{"name": "a"}], relations={"material": "MaterialManager"}
            )
        ]
    )
    with pytest.raises(DataConfigurationError, match="no manager named 'MaterialManager'"):
        Toolset(broken)


def test_unknown_tools_and_malformed_arguments_are_results() -> None:
    toolset = Toolset(toy_registry())
    context = toolset.context()
    unknown = toolset.call_sync("serch_managers", {"query": "x"}, context)
    assert unknown["code"] == "unknown_tool"
    assert "did you mean 'search_managers'" in unknown["message"]
    assert toolset.call_sync("search_managers", ["x"], context)["code"] == "invalid_value"
    assert (
        toolset.call_sync("search_managers", {"query": 5}, context)["message"]
        == "query must be a string"
    )
    assert (
        toolset.call_sync("search_managers", None, context)["message"] == "the call needs 'query'"
    )


async def test_call_runs_records_tools_inline_from_the_event_loop() -> None:
    toolset = Toolset(toy_registry())
    result = await toolset.call(
        "query", {"manager": "MaterialManager", "order_by": ["-density"]}, toolset.context()
    )
    assert [row["name"] for row in result["data"]] == ["Cobalt", "Steel", "Aluminum"]


def test_every_call_is_audited_with_labels() -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    toolset = Toolset(toy_registry())
    context = toolset.context(audit=lambda kind, payload: events.append((kind, dict(payload))))
    toolset.call_sync("query", {"manager": "PartManager"}, context)
    toolset.call_sync("query", {"manager": "Nope"}, context)
    assert [kind for kind, _ in events] == ["tool_called", "tool_called"]
    assert {k: v for k, v in events[0][1].items() if k != "duration_ms"} == {
        "tool": "query",
        "status": "ok",
    }
    assert events[1][1]["status"] == "error"
    assert events[1][1]["code"] == "unknown_manager"
    assert events[0][1]["duration_ms"] >= 0
    assert "Bolt" not in str(events)


def test_a_failing_audit_hook_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken(kind: str, payload: Any) -> None:
        raise RuntimeError("sink down")

    toolset = Toolset(toy_registry())
    with caplog.at_level(logging.WARNING, logger="chatomon.chat.tools.context"):
        result = toolset.call_sync(
            "query", {"manager": "PartManager"}, toolset.context(audit=broken)
        )
    assert result["total_count"] == 3
    assert "audit hook failed for tool_called" in caplog.text


def test_the_context_settings_govern_execution() -> None:
    toolset = Toolset(toy_registry())
    tight = ToolContext(settings=ToolSettings(max_results=1))
    assert (
        toolset.call_sync("query", {"manager": "PartManager", "limit": 2}, tight)["code"]
        == "limit_exceeded"
    )


@pytest.mark.parametrize(
    ("result", "error"),
    [
        (tool_error("unknown_field", "no such field"), True),
        ({"status": "executed", "mutation": "renameProject"}, False),
        ({"data": [], "total_count": 0}, False),
        ("error", False),
        (None, False),
    ],
)
def test_an_error_result_is_told_apart_from_any_other(result: Any, error: bool) -> None:
    assert is_tool_error(result) is error


def test_tool_error_shape() -> None:
    assert tool_error("unknown_field", "no such field", ["a"], hint=1) == {
        "status": "error",
        "code": "unknown_field",
        "message": "no such field",
        "allowed": ["a"],
        "hint": 1,
    }
    assert tool_error("invalid_value", "bad") == {
        "status": "error",
        "code": "invalid_value",
        "message": "bad",
    }
    assert {
        "unknown_manager",
        "unknown_field",
        "unknown_filter",
        "invalid_value",
        "limit_exceeded",
        "query_timeout",
        "mutation_not_allowed",
        "invalid_input",
        "not_authenticated",
        "permission_denied",
    } <= set(ERROR_CODES)
