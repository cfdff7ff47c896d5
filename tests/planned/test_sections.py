"""The configured sections (provider_profiles entries, planned), as SDK and Django read them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chatomon.planned.sections import (
    DEFAULT_PROFILE,
    REQUIRED_ROLES,
    PlannedSection,
    ProfileSection,
)

LOCAL = ProfileSection(provider="local", trust_group="local")
ROLES = dict.fromkeys(REQUIRED_ROLES, "a")


def test_planned_defaults_are_the_reference_ones_and_off() -> None:
    planned = PlannedSection()
    assert planned.enabled is False
    assert planned.catalog is None
    assert dict(planned.roles) == {}
    assert planned.max_concurrent_tasks == 3
    assert planned.evidence_timeout_seconds == 90
    assert planned.synthesis_timeout_seconds == 30
    assert (planned.max_rounds, planned.max_rounds_per_root) == (24, 8)
    assert planned.request_timeout_seconds is None


def test_a_profile_holds_its_configuration_read_only() -> None:
    config = {"model": "small"}
    profile = ProfileSection(provider="local", provider_config=config)
    config["model"] = "changed"
    assert profile.provider_config == {"model": "small"}
    assert profile.trust_group == DEFAULT_PROFILE
    with pytest.raises(TypeError):
        profile.provider_config["model"] = "x"


@pytest.mark.parametrize(
    "changes",
    [
        {"enabled": 1},
        {"max_concurrent_tasks": True},
        {"max_rounds": 0},
        {"evidence_timeout_seconds": float("inf")},
        {"roles": {"judge": "a"}},
        {"roles": {"planner": " "}},
        {"surprise": 1},
    ],
)
def test_wrong_planned_values_are_refused(changes: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        PlannedSection(**changes)


def test_role_problems_only_matter_when_enabled() -> None:
    assert PlannedSection(roles={"planner": "nowhere"}).role_problem({"a": LOCAL}) is None


def test_role_problems_when_enabled() -> None:
    profiles = {"a": LOCAL, "b": ProfileSection(provider="local", trust_group="cloud")}
    assert PlannedSection(enabled=True, roles=ROLES).role_problem(profiles) is None
    missing = PlannedSection(enabled=True, roles={"planner": "a"}).role_problem(profiles)
    assert missing == (
        "roles must assign every role; missing: simple_executor, complex_executor, "
        "synthesizer, fallback_executor"
    )
    unknown = PlannedSection(enabled=True, roles={**ROLES, "planner": "c"})
    assert unknown.role_problem(profiles) == "roles name unknown provider_profiles: c"
    mixed = PlannedSection(enabled=True, roles={**ROLES, "synthesizer": "b"})
    assert mixed.role_problem(profiles) == (
        "every role's profile must share one trust_group, got cloud, local"
    )


def test_without_profiles_roles_may_name_only_the_implicit_one() -> None:
    assert PlannedSection(enabled=True).role_problem({}) is None
    implicit = PlannedSection(enabled=True, roles={"planner": DEFAULT_PROFILE})
    assert implicit.role_problem({}) is None
    named = PlannedSection(enabled=True, roles={"planner": "a"}).role_problem({})
    assert named is not None and "unknown provider_profiles: a" in named
