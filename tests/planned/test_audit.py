import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from chatomon.planned.audit import (
    PLANNED_AUDIT_FIELDS,
    clean_planned_audit_fields,
    emit_planned_audit_event,
    planned_audit_lineage_id,
)
from chatomon.planned.config import REQUIRED_ROLES
from chatomon.planned.evidence import canonical_call_identity
from chatomon.planned.resolver import AUDIT_MATCH_SOURCES
from chatomon.schemas import PlannedCoverage, PlannedUnresolved, TokenUsage

CALL_HASH = hashlib.sha256(b'{"args":{},"name":"query"}').hexdigest()
LINEAGE = planned_audit_lineage_id("turn-1")
TASK_LINEAGE = planned_audit_lineage_id("turn-1", "t1")
VALID: dict[str, Any] = {
    "event": "task",
    "lineage_id": LINEAGE,
    "task_lineage_id": TASK_LINEAGE,
    "role": "simple_executor",
    "trust_group_valid": True,
    "match_sources": ["exact_name", "catalog_alias"],
    "call_hash": CALL_HASH,
    "duplicate": False,
    "progress": "resolved",
    "round_budget": {"used": 3, "limit": 24, "remaining": 21, "root_used": 2, "root_limit": 8},
    "latency_ms": 12.5,
    "usage": {"input_tokens": 100, "output_tokens": 20},
    "cost": 0.0031,
    "evidence_kinds": {"query": 1, "calculation": 1},
    "coverage": {"status": "complete", "resolved": 1, "total": 1, "unresolved": 0},
    "terminal_reason": "budget_exhausted",
}


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, Mapping[str, Any]]] = []

    def __call__(self, event: str, payload: Mapping[str, Any]) -> None:
        self.events.append((event, payload))


def test_lineage_ids_are_deterministic_opaque_hashes():
    assert planned_audit_lineage_id("turn-1", "t1") == TASK_LINEAGE
    assert TASK_LINEAGE.startswith("pl_")
    assert len(TASK_LINEAGE) == 3 + 24
    assert set(TASK_LINEAGE[3:]) <= set("0123456789abcdef")
    assert len({LINEAGE, TASK_LINEAGE, planned_audit_lineage_id("turn-2", "t1")}) == 3


def test_lineage_parts_cannot_be_shifted_across_each_other():
    assert planned_audit_lineage_id("turn", "ab", "c") != planned_audit_lineage_id(
        "turn", "a", "bc"
    )


def test_every_allowlisted_field_passes_with_a_valid_value():
    sink = Sink()

    sent = emit_planned_audit_event(sink, "task", VALID)

    assert sent == VALID
    assert sink.events == [("planned_task", VALID)]
    assert set(PLANNED_AUDIT_FIELDS) == set(VALID)


def test_a_call_hash_from_the_evidence_identity_passes():
    identity = canonical_call_identity("query", {"manager": "PartManager"})
    call_hash = hashlib.sha256(identity.encode()).hexdigest()

    assert clean_planned_audit_fields({"call_hash": call_hash}) == {"call_hash": call_hash}


def test_every_role_and_match_source_category_passes():
    for role in REQUIRED_ROLES:
        assert clean_planned_audit_fields({"role": role}) == {"role": role}
    categories = list(AUDIT_MATCH_SOURCES.values())
    assert clean_planned_audit_fields({"match_sources": categories}) == {
        "match_sources": categories
    }


def test_usage_and_coverage_values_are_normalized_to_counts():
    coverage = PlannedCoverage(
        status="partial",
        resolved=1,
        total=2,
        unresolved=(PlannedUnresolved(task_id="secret-task", reason="dependency_blocked"),),
    )

    cleaned = clean_planned_audit_fields(
        {"usage": TokenUsage(input_tokens=7, output_tokens=2), "coverage": coverage}
    )

    assert cleaned == {
        "usage": {"input_tokens": 7, "output_tokens": 2},
        "coverage": {"status": "partial", "resolved": 1, "total": 2, "unresolved": 1},
    }


def test_the_wire_form_of_coverage_passes_without_its_task_ids():
    wire = {
        "status": "partial",
        "resolved": 1,
        "total": 2,
        "unresolved": [{"task_id": "which_parts_use_steel", "reason": "dependency_blocked"}],
    }

    cleaned = clean_planned_audit_fields({"coverage": wire})

    assert cleaned == {
        "coverage": {"status": "partial", "resolved": 1, "total": 2, "unresolved": 1}
    }


@pytest.mark.parametrize(
    "key",
    [
        "result",
        "rows",
        "manager",
        "managers",
        "plan",
        "plan_text",
        "profile",
        "trust_group",
        "exception",
        "error",
        "message",
        "question",
        "provider_config",
        "api_key",
    ],
)
def test_a_field_not_on_the_allowlist_never_passes(key):
    assert clean_planned_audit_fields({key: "anything", "duplicate": True}) == {"duplicate": True}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("role", "strong_local"),  # a profile name
        ("role", "PartManager"),
        ("lineage_id", "turn-1"),  # a raw id rather than its hash
        ("task_lineage_id", "pl_which parts use steel"),
        ("call_hash", '{"name":"query","args":{"manager":"PartManager"}}'),
        ("call_hash", CALL_HASH.upper()),
        ("match_sources", ["exact_name", "PartManager"]),  # one manager name taints the list
        ("match_sources", "exact_name"),
        ("terminal_reason", "ProviderError: strong_local refused the key"),
        ("terminal_reason", "rate_limited"),
        ("progress", "found 3 rows of steel parts"),
        ("duplicate", "yes"),
        ("trust_group_valid", "local"),
        ("latency_ms", float("nan")),
        ("latency_ms", -1),
        ("latency_ms", True),
        ("cost", "0.01 USD"),
        ("usage", {"input_tokens": 1, "output_tokens": 2, "prompt": "Which parts?"}),
        ("usage", {"input_tokens": True}),
        ("round_budget", {"used": 1, "profile": 2}),
        ("round_budget", {"used": -1}),
        ("evidence_kinds", {"query": 1, "rows": 3}),
        ("evidence_kinds", [("query", 1)]),
        ("coverage", {"status": "complete", "resolved": 1, "total": 1}),
        ("coverage", {"status": "great", "resolved": 1, "total": 1, "unresolved": 0}),
        ("coverage", {"status": "complete", "resolved": 1, "total": 1, "unresolved": "t2"}),
        ("event", "Planned Task: Which parts?"),
    ],
)
def test_a_value_of_the_wrong_type_or_outside_its_set_is_dropped(key, value):
    assert clean_planned_audit_fields({key: value}) == {}


def test_raw_results_names_plans_profiles_and_exceptions_never_reach_the_sink():
    secrets = [
        "Bolt",
        "PartManager",
        "strong_local",
        "trust-local",
        "Which parts use steel?",
        "KeyError",
        "sk-live-123",
    ]
    error = KeyError("PartManager")
    sink = Sink()
    emit_planned_audit_event(
        sink,
        "task",
        {
            **VALID,
            "result": {"data": [{"name": "Bolt"}]},
            "manager": "PartManager",
            "plan": {"tasks": [{"question": "Which parts use steel?"}]},
            "profile": "strong_local",
            "trust_group": "trust-local",
            "error": error,
            "role": "strong_local",
            "match_sources": ["PartManager"],
            "terminal_reason": repr(error),
            "usage": {"input_tokens": 1, "api_key": "sk-live-123"},
        },
    )

    sent = json.dumps(sink.events)
    assert not [secret for secret in secrets if secret in sent]
    assert "role" not in sink.events[0][1]


def test_without_a_sink_nothing_is_built_or_sent():
    assert emit_planned_audit_event(None, "task", VALID) is None


def test_an_event_label_that_is_not_a_plain_label_is_not_sent(caplog):
    sink = Sink()

    with caplog.at_level(logging.WARNING, logger="chatomon.planned.audit"):
        assert emit_planned_audit_event(sink, "task for PartManager", VALID) is None

    assert sink.events == []
    assert "PartManager" not in caplog.text


def test_a_failing_sink_is_logged_and_never_fails_the_turn(caplog):
    def broken(event: str, payload: Mapping[str, Any]) -> None:
        raise ConnectionError("audit store down")

    with caplog.at_level(logging.WARNING, logger="chatomon.planned.audit"):
        assert emit_planned_audit_event(broken, "turn", VALID) is None

    assert "planned audit sink failed for planned_turn" in caplog.text


def test_fields_that_are_not_a_mapping_are_logged_not_raised(caplog):
    sink = Sink()

    with caplog.at_level(logging.WARNING, logger="chatomon.planned.audit"):
        assert emit_planned_audit_event(sink, "turn", ["not", "a", "mapping"]) is None

    assert sink.events == []
