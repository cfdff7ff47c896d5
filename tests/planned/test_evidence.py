"""EvidenceRecord snapshots, canonical call identities and the turn-local EvidenceStore."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import typing
from decimal import Decimal

import pytest

from chatomon.planned.evidence import (
    MAX_PAYLOAD_DEPTH,
    DuplicateEvidenceError,
    EvidenceError,
    EvidenceKind,
    EvidenceLinkError,
    EvidenceNotFoundError,
    EvidenceRecord,
    EvidenceStore,
    IncompatibleEvidenceError,
    InvalidEvidenceError,
    canonical_call_identity,
)
from chatomon.planned.models import EvidenceRequirement, PlannedTask

QUERY = EvidenceRequirement("query")
SCHEMA = EvidenceRequirement("schema")
COUNT = EvidenceRequirement("calculation", operation="count")
ROWS = {"data": [{"name": "bolt", "density": "7.85"}], "total_count": 1, "has_more": False}


def record(
    evidence_id: str = "e1", kind: EvidenceKind = "query", task_id: str = "t1", **fields
) -> EvidenceRecord:
    fields.setdefault("payload", ROWS)
    return EvidenceRecord(evidence_id, task_id, kind, **fields)


def test_the_error_classes_are_the_references() -> None:
    assert issubclass(EvidenceError, ValueError)
    for error in (
        InvalidEvidenceError,
        DuplicateEvidenceError,
        EvidenceNotFoundError,
        IncompatibleEvidenceError,
    ):
        assert issubclass(error, EvidenceError)
    assert EvidenceLinkError is IncompatibleEvidenceError
    assert typing.get_args(EvidenceKind) == ("schema", "path", "query", "calculation")


# --- records ------------------------------------------------------------------------------


def test_a_record_snapshots_its_payload() -> None:
    payload = {"data": [{"name": "bolt"}], "total_count": 1}
    provenance = {"tool": "query", "call_id": "t1.c1"}
    made = record(payload=payload, provenance=provenance)
    payload["data"].append({"name": "nut"})
    payload["total_count"] = 2
    provenance["tool"] = "mutate"
    assert made.to_json()["payload"] == {"data": [{"name": "bolt"}], "total_count": 1}
    assert made.provenance["tool"] == "query"


def test_a_record_is_deeply_immutable() -> None:
    made = record(provenance={"tool": "query"})
    with pytest.raises(TypeError):
        made.payload["data"] = []
    with pytest.raises(TypeError):
        made.payload["data"][0]["name"] = "nut"
    assert isinstance(made.payload["data"], tuple)
    with pytest.raises(TypeError):
        made.provenance["tool"] = "mutate"
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.payload = {}


def test_to_json_is_a_thawed_json_copy() -> None:
    made = record(provenance={"tool": "query", "path": ("a", 1)}, call_identity='{"x":1}')
    data = made.to_json()
    assert data == {
        "id": "e1",
        "task_id": "t1",
        "kind": "query",
        "payload": ROWS,
        "provenance": {"tool": "query", "path": ["a", 1]},
        "call_identity": '{"x":1}',
    }
    assert json.loads(json.dumps(data)) == data
    data["payload"]["data"].clear()
    assert len(made.payload["data"]) == 1


def test_defaults_and_scalars() -> None:
    made = EvidenceRecord("e1", "t1", "calculation", "12.5")
    assert made.payload == "12.5"
    assert dict(made.provenance) == {}
    assert made.call_identity is None
    assert made.call_hash is None
    values: tuple[object, ...] = (None, True, 3, 2.5, "x", [], {})
    for value in values:
        assert EvidenceRecord("e1", "t1", "query", value).to_json()["payload"] == value


def test_records_compare_by_value() -> None:
    assert record() == record(payload=json.loads(json.dumps(ROWS)))
    assert record() != record(payload={"data": []})


def test_records_are_hashable() -> None:
    assert len({record(), record(payload=json.loads(json.dumps(ROWS))), record("e2")}) == 2


def test_call_hash_is_the_sha256_of_the_identity() -> None:
    identity = canonical_call_identity("query", {"manager": "part"})
    assert record(call_identity=identity).call_hash == hashlib.sha256(identity.encode()).hexdigest()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (math.nan, "e1.payload: nan is not a JSON number"),
        ({"v": [math.inf]}, r"e1.payload.v\[0\]: inf is not a JSON number"),
        ({1: "x"}, "e1.payload: key 1 is not a string"),
        ({"v": Decimal("1.5")}, "e1.payload.v: a Decimal is not a JSON value"),
        ({"v": {1, 2}}, "e1.payload.v: a set is not a JSON value"),
        (object(), "e1.payload: a object is not a JSON value"),
        (b"raw", "e1.payload: a bytes is not a JSON value"),
    ],
)
def test_a_payload_that_is_not_json_is_refused(payload, message) -> None:
    with pytest.raises(InvalidEvidenceError, match=f"^{message}$"):
        record(payload=payload)


def test_provenance_must_be_a_json_mapping() -> None:
    with pytest.raises(InvalidEvidenceError, match=r"^evidence e1: provenance must be a mapping$"):
        record(provenance=["tool"])
    with pytest.raises(InvalidEvidenceError, match=r"^e1.provenance.at: nan is not a JSON number$"):
        record(provenance={"at": math.nan})


def test_nesting_is_bounded() -> None:
    deep: object = "leaf"
    for _ in range(MAX_PAYLOAD_DEPTH):
        deep = [deep]
    assert record(payload=deep).payload is not None
    with pytest.raises(
        InvalidEvidenceError, match=f"nested deeper than {MAX_PAYLOAD_DEPTH} levels"
    ):
        record(payload=[deep])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"evidence_id": ""}, "evidence id must be a non-empty string, not ''"),
        ({"evidence_id": 1}, "evidence id must be a non-empty string, not 1"),
        ({"task_id": ""}, "evidence task_id must be a non-empty string, not ''"),
        ({"kind": "mutation"}, "evidence e1: unknown kind 'mutation'"),
        ({"call_identity": 5}, "evidence e1: call_identity must be a string"),
    ],
)
def test_ill_formed_records_are_refused(fields, message) -> None:
    with pytest.raises(InvalidEvidenceError, match=f"^{message}$"):
        record(**fields)


# --- canonical call identity --------------------------------------------------------------


def test_identity_is_canonical_json() -> None:
    identity = canonical_call_identity("query", {"manager": "part", "filters": {"b": 1, "a": "é"}})
    assert identity == '{"args":{"filters":{"a":"é","b":1},"manager":"part"},"name":"query"}'


def test_identity_ignores_key_order_but_not_values() -> None:
    first = canonical_call_identity(
        "query", {"manager": "part", "limit": 5, "filters": {"x": 1, "y": 2}}
    )
    second = canonical_call_identity(
        "query", {"filters": {"y": 2, "x": 1}, "limit": 5, "manager": "part"}
    )
    assert first == second
    assert first != canonical_call_identity(
        "query", {"manager": "part", "limit": 6, "filters": {"x": 1, "y": 2}}
    )
    assert first != canonical_call_identity(
        "aggregate", {"manager": "part", "limit": 5, "filters": {"x": 1, "y": 2}}
    )


def test_identity_of_frozen_arguments_is_the_same() -> None:
    args = {"manager": "part", "fields": ["name", "density"]}
    frozen = record(payload=args).payload
    assert canonical_call_identity("query", frozen) == canonical_call_identity("query", args)


def test_identity_refuses_non_json_arguments() -> None:
    with pytest.raises(InvalidEvidenceError, match=r"call.args.limit: nan is not a JSON number"):
        canonical_call_identity("query", {"limit": math.nan})
    with pytest.raises(InvalidEvidenceError, match=r"call.args: key 1 is not a string"):
        canonical_call_identity("query", {1: "x"})  # type: ignore[dict-item]


# --- the store ----------------------------------------------------------------------------


def test_next_id_counts_and_skips_taken_ids() -> None:
    store = EvidenceStore()
    assert [store.next_id(), store.next_id()] == ["e1", "e2"]
    store.add(record("e3"))
    assert store.next_id() == "e4"  # e3 is taken
    assert store.next_id() == "e5"  # an issued id is reserved even when never added


def test_add_get_and_records_in_order() -> None:
    store = EvidenceStore()
    first, second = record("e2"), record("e1", kind="schema", payload={"manager": "part"})
    assert store.add(first) is first
    store.add(second)
    assert store.records == (first, second)
    assert store.get("e1") is second


def test_a_duplicate_id_is_refused() -> None:
    store = EvidenceStore()
    store.add(record("e1"))
    with pytest.raises(DuplicateEvidenceError, match=r"^evidence 'e1' is already in the store$"):
        store.add(record("e1", payload={}))
    assert store.get("e1").payload["total_count"] == 1


def test_an_unknown_id_is_not_found() -> None:
    store = EvidenceStore()
    with pytest.raises(EvidenceNotFoundError, match=r"^unknown evidence 'e7'$"):
        store.get("e7")
    with pytest.raises(EvidenceNotFoundError, match=r"^unknown evidence 'e7'$"):
        store.link("e7", "t1", QUERY)


def test_by_identity_finds_the_first_record_of_a_call() -> None:
    store = EvidenceStore()
    identity = canonical_call_identity("query", {"manager": "part"})
    first = store.add(record("e1", call_identity=identity))
    store.add(record("e2", call_identity=identity))
    assert store.by_identity(identity) is first
    assert store.by_identity(canonical_call_identity("query", {"manager": "material"})) is None


def test_add_with_a_requirement_links_it() -> None:
    store = EvidenceStore()
    task = PlannedTask("t1", "q", (QUERY,))
    assert not store.satisfied(task)
    store.add(record("e1"), requirement=("t1", QUERY))
    assert store.satisfied(task)
    assert store.linked("t1", QUERY) == (store.get("e1"),)


def test_an_incompatible_requirement_is_refused_and_nothing_is_added() -> None:
    store = EvidenceStore()
    with pytest.raises(
        IncompatibleEvidenceError,
        match=r"^evidence 'e1' is query evidence; the requirement needs schema evidence$",
    ):
        store.add(record("e1"), requirement=("t1", SCHEMA))
    assert store.records == ()
    store.add(record("e1"))
    with pytest.raises(EvidenceLinkError, match="needs calculation evidence"):
        store.link("e1", "t1", COUNT)
    assert store.linked("t1", COUNT) == ()


def test_satisfied_needs_every_requirement() -> None:
    store = EvidenceStore()
    task = PlannedTask("t1", "q", (SCHEMA, QUERY, COUNT))
    store.add(record("e1", kind="schema", payload={}), requirement=("t1", SCHEMA))
    store.add(record("e2"), requirement=("t1", QUERY))
    assert store.unmet(task) == (COUNT,)
    assert not store.satisfied(task)
    store.add(record("e3", kind="calculation", payload={"operation": "count", "value": "1"}))
    store.link("e3", "t1", COUNT)
    assert store.unmet(task) == ()
    assert store.satisfied(task)


def test_equal_requirements_each_need_their_own_record() -> None:
    store = EvidenceStore()
    task = PlannedTask("t1", "q", (QUERY, QUERY))
    store.add(record("e1"), requirement=("t1", QUERY))
    store.link("e1", "t1", QUERY)  # the same record twice counts once
    assert store.unmet(task) == (QUERY,)
    store.add(record("e2"), requirement=("t1", QUERY))
    assert store.satisfied(task)


def test_links_belong_to_one_task() -> None:
    store = EvidenceStore()
    store.add(record("e1"), requirement=("t1", QUERY))
    assert not store.satisfied(PlannedTask("t2", "q", (QUERY,)))
    store.link("e1", "t2", QUERY)  # reuse of t1's call by t2
    assert store.satisfied(PlannedTask("t2", "q", (QUERY,)))


def test_for_task_lists_produced_and_linked_records_in_order() -> None:
    store = EvidenceStore()
    store.add(record("e1", task_id="t1"))
    store.add(record("e2", task_id="t2"))
    store.add(record("e3", task_id="t1", kind="schema", payload={}))
    store.add(record("e4", task_id="t3"))
    store.link("e2", "t1", QUERY)
    assert [r.id for r in store.for_task("t1")] == ["e1", "e2", "e3"]
    assert [r.id for r in store.for_task("t2")] == ["e2"]
    assert store.for_task("t9") == ()


def test_link_returns_the_record() -> None:
    store = EvidenceStore()
    added = store.add(record("e1"))
    assert store.link("e1", "t1", QUERY) is added
