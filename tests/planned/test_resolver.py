"""ManagerResolver: deterministic ranking of at most five exposed managers."""

from __future__ import annotations

import json

import pytest

from chatomon.data.fields import FieldSpec
from chatomon.data.fixtures import large_registry, toy_registry
from chatomon.data.manager import Manager
from chatomon.data.registration import ManagerRegistry
from chatomon.data.schema import SchemaIndex
from chatomon.planned.catalog import ManagerCatalog, ManagerCatalogEntry, load_manager_catalog
from chatomon.planned.resolver import (
    AUDIT_MATCH_SOURCES,
    WEIGHTS,
    ManagerCandidate,
    ManagerResolver,
)


@pytest.fixture(scope="module")
def toy() -> SchemaIndex:
    return toy_registry().schema_index()


@pytest.fixture(scope="module")
def large() -> SchemaIndex:
    return large_registry().schema_index()


def names(candidates: tuple[ManagerCandidate, ...]) -> list[str]:
    return [candidate.manager for candidate in candidates]


def documented_order(candidate: ManagerCandidate) -> tuple[bool, bool, bool, int, str]:
    """The module's lexicographic order, spelled again from its documentation."""
    return (
        "exact_name" not in candidate.match_sources,
        "exact_alias" not in candidate.match_sources,
        not candidate.anchored,
        -candidate.score,
        candidate.manager,
    )


def test_audit_match_sources_are_the_reference_mapping_read_only() -> None:
    assert dict(AUDIT_MATCH_SOURCES) == {
        "exact manager name": "exact_name",
        "exact catalog alias": "exact_alias",
        "catalog domain": "catalog_domain",
        "catalog aliases": "catalog_alias",
        "catalog use_when": "catalog_use_when",
        "schema description": "schema_description",
        "schema fields": "schema_field",
        "schema filters": "schema_filter",
        "schema relations": "schema_relation",
    }
    with pytest.raises(TypeError):
        AUDIT_MATCH_SOURCES["x"] = "y"


def test_a_named_manager_ranks_first_with_its_sources(toy: SchemaIndex) -> None:
    resolver = ManagerResolver(toy)
    first = resolver.resolve("What is the density of each material?")[0]
    assert first == ManagerCandidate(
        "MaterialManager",
        score=WEIGHTS["exact_name"]
        + WEIGHTS["schema_name_word"]
        + WEIGHTS["schema_field"]
        + WEIGHTS["schema_description"],
        match_sources=("exact_name", "schema_description", "schema_field"),
    )
    for spelling in ("PartManager", "part manager", "parts", "Part"):
        assert resolver.resolve(spelling)[0].manager == "PartManager"
        assert resolver.resolve(spelling)[0].match_sources[0] == "exact_name"


def test_an_exact_name_outranks_a_higher_score(toy: SchemaIndex) -> None:
    entry = ManagerCatalogEntry("ProjectManager", domain="components", aliases=("component",))
    catalog = ManagerCatalog.build({"ProjectManager": entry})
    found = ManagerResolver(toy, catalog).resolve("parts and their components")
    assert names(found)[:2] == ["PartManager", "ProjectManager"]
    part, project = found[:2]
    assert project.score > part.score
    assert "exact_alias" in project.match_sources and "exact_name" not in project.match_sources


def test_an_exact_alias_outranks_an_anchored_higher_score(large: SchemaIndex) -> None:
    catalog = load_manager_catalog(
        {
            "SchoolLeaseManager": {"aliases": ["locker rental"]},
            "PortRouteManager": {
                "domain": "shipping logistics",
                "use_when": "vessel movements between harbours",
            },
        },
        large,
    )
    found = ManagerResolver(large, catalog).resolve(
        "locker rentals, routes at the port for shipping logistics: vessel movements between "
        "harbours",
        anchors=["PortAuditManager"],  # PortRouteManager --next_item--> PortAuditManager
    )
    assert names(found)[:2] == ["SchoolLeaseManager", "PortRouteManager"]
    lease, route = found[:2]
    assert lease.match_sources[0] == "exact_alias" and not lease.anchored
    assert route.anchored and route.score > lease.score


def test_an_anchor_connected_by_a_relation_path_ranks_before_a_higher_score(
    large: SchemaIndex,
) -> None:
    resolver = ManagerResolver(large)
    plain = resolver.resolve("paused routes")
    assert {c.score for c in plain} == {9}  # the ten route managers tie: by name
    assert names(plain) == [
        f"{d}RouteManager" for d in ("Clinic", "Farm", "Fleet", "Library", "Mine")
    ]
    # FleetAuditManager's chain: FleetPermit -> FleetRoute -> FleetAudit -> FleetSensor -> ...
    anchored = resolver.resolve("paused routes", anchors=["FleetAuditManager"])
    assert [(c.manager, c.score, c.anchored) for c in anchored] == [
        ("FleetRouteManager", 9, True),
        ("FleetClaimManager", 2, True),  # only "paused" (a status choice), but connected
        ("FleetInvoiceManager", 2, True),
        ("FleetLeaseManager", 2, True),
        ("FleetPermitManager", 2, True),
    ]


def test_an_anchor_is_not_anchored_to_itself(toy: SchemaIndex) -> None:
    found = ManagerResolver(toy).resolve("parts", anchors=["PartManager"])
    assert [(c.manager, c.anchored) for c in found] == [
        ("PartManager", False),
        ("ProjectManager", True),
        ("MaterialManager", True),
    ]


def test_anchors_reorder_but_never_add_and_unknown_anchors_are_ignored(toy: SchemaIndex) -> None:
    resolver = ManagerResolver(toy)
    assert resolver.resolve("density", anchors=["ProjectManager"]) == (
        ManagerCandidate("MaterialManager", WEIGHTS["schema_field"], ("schema_field",), True),
    )
    assert resolver.resolve("density", anchors=["SalaryManager", "nope"]) == (
        ManagerCandidate("MaterialManager", WEIGHTS["schema_field"], ("schema_field",), False),
    )


def test_no_meaningful_word_gives_no_candidate(toy: SchemaIndex) -> None:
    resolver = ManagerResolver(toy)
    assert resolver.resolve("") == ()
    assert resolver.resolve("which of these are there?") == ()
    assert resolver.resolve("unicorns") == ()


def test_at_most_five_candidates_in_the_documented_order(large: SchemaIndex) -> None:
    resolver = ManagerResolver(large)
    for query in ("status of orders", "paused fleet routes", "codes", "clinic", "visits"):
        found = resolver.resolve(query)
        assert 0 < len(found) <= 5
        assert list(found) == sorted(found, key=documented_order)
        assert len({c.manager for c in found}) == len(found)


def test_ranking_is_deterministic_across_resolvers_and_catalog_order(large: SchemaIndex) -> None:
    entries = {
        "ClinicVisitManager": {"aliases": ["appointment"], "domain": "healthcare"},
        "SalesOrderManager": {"aliases": ["purchase order"], "domain": "commerce"},
    }
    reversed_entries = dict(reversed(list(entries.items())))
    one = ManagerResolver(large, load_manager_catalog(entries, large))
    two = ManagerResolver(large, load_manager_catalog(reversed_entries, large))
    for query in ("open purchase orders", "appointments in healthcare", "orders", "visits"):
        assert one.resolve(query) == one.resolve(query) == two.resolve(query)
    ties = one.resolve("visits")
    assert len({c.score for c in ties}) == 1  # a tie, broken by name
    assert names(ties) == sorted(names(ties))


def test_aliases_and_descriptions_pick_the_right_manager_among_150(large: SchemaIndex) -> None:
    assert len(large.names) == 150
    catalog = load_manager_catalog(
        {
            "ClinicVisitManager": {
                "domain": "healthcare",
                "aliases": ["patient appointment", "consultation"],
                "use_when": "Questions about patients seeing a doctor.",
                "distinguish_from": ["SchoolVisitManager"],
            },
            "PortContractManager": {"aliases": ["berth agreement"], "domain": "shipping"},
        },
        large,
    )
    resolver = ManagerResolver(large, catalog)
    picks = {
        "How many patient appointments were there last week?": "ClinicVisitManager",
        "Which doctor consultations are archived?": "ClinicVisitManager",
        "list berth agreements": "PortContractManager",
        "routes of the port domain": "PortRouteManager",  # description only: both words
        "Which fleet routes are paused?": "FleetRouteManager",  # the name, as words
        "the status of SalesInvoiceManager": "SalesInvoiceManager",
    }
    for query, manager in picks.items():
        assert resolver.resolve(query)[0].manager == manager, query
    # Without the catalog, "patient appointments" means nothing to the schema.
    assert ManagerResolver(large).resolve("patient appointments") == ()


def test_the_catalog_never_exposes_a_hidden_manager() -> None:
    salaries = Manager.from_records(
        "SalaryManager",
        description="Salaries of employees.",
        records=[{"id": 1, "amount": 10}],
        fields={"amount": FieldSpec("integer", description="Salary amount.")},
        chat_exposed=False,
    )
    registry = toy_registry()
    index = ManagerRegistry([*registry.managers.values(), salaries]).schema_index()
    assert "SalaryManager" not in index.names
    hand_built = ManagerCatalog.build(
        {"SalaryManager": ManagerCatalogEntry("SalaryManager", aliases=("salary", "pay"))}
    )
    resolver = ManagerResolver(index, hand_built)
    for query in ("salaries", "SalaryManager", "employee pay amount"):
        assert all(c.manager in index.names for c in resolver.resolve(query))
        assert "SalaryManager" not in json.dumps(resolver.schema_slice(resolver.resolve(query)))
    assert names(resolver.resolve("salary pay for parts"))[0] == "PartManager"
    forged = ManagerCandidate("SalaryManager", 99, ("exact_name",))
    assert resolver.schema_slice([forged]) == []


def test_match_sources_are_audit_values_in_their_order(large: SchemaIndex) -> None:
    catalog = load_manager_catalog(
        {
            "FarmBatchManager": {
                "domain": "agriculture",
                "aliases": ["harvest lot"],
                "use_when": "crops brought in",
            }
        },
        large,
    )
    found = ManagerResolver(large, catalog).resolve(
        "agriculture harvest lots: crops brought in, farm batch codes, status paused, next item"
    )
    first = found[0]
    assert first.manager == "FarmBatchManager"
    assert first.match_sources == tuple(AUDIT_MATCH_SOURCES.values())  # every one, in order


def test_schema_slice_is_the_candidates_schemas_only(toy: SchemaIndex) -> None:
    resolver = ManagerResolver(toy)
    found = resolver.resolve("parts")
    sliced = resolver.schema_slice(found[:1] + found[:1])
    assert sliced == [toy.get("PartManager").to_json()]
    assert resolver.schema_slice(()) == []


def test_a_schema_slice_stays_small_in_a_large_index(large: SchemaIndex) -> None:
    resolver = ManagerResolver(large)
    candidates = resolver.resolve("paused fleet routes")
    assert len(candidates) == 5
    sliced = json.dumps(resolver.schema_slice(candidates))
    whole = json.dumps([schema.to_json() for schema in large.managers.values()])
    assert len(sliced) * 25 < len(whole)


def test_the_indexing_of_an_index_and_catalog_pair_is_shared(large: SchemaIndex) -> None:
    """A turn builds resolvers on the registry's current index: 150 managers indexed once."""
    catalog = load_manager_catalog({"FarmBatchManager": {"aliases": ["harvest lot"]}}, large)
    first = ManagerResolver(large, catalog)
    assert ManagerResolver(large, catalog)._profiles is first._profiles
    assert ManagerResolver(large)._profiles is not first._profiles
    assert ManagerResolver(large_registry().schema_index(), catalog)._profiles is not (
        first._profiles
    )
    assert ManagerResolver(large)._profiles is ManagerResolver(large, None)._profiles
