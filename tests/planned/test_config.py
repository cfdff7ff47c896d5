"""Planned-chat settings: profiles, roles, the implicit default profile and profile providers."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from chatomon.errors import ChatConfigurationError, ConfigurationError, ProviderDependencyError
from chatomon.planned.config import (
    REQUIRED_ROLES,
    PlannedChatSettings,
    ProviderProfile,
    build_profile_provider,
    build_role_providers,
    get_planned_chat_settings,
    profile_for_role,
    validate_profile_provider,
)
from chatomon.providers.local import LocalProvider
from chatomon.providers.testing import ScriptedProvider

HERE = __name__


class Configured:
    """A provider built from a profile's configuration, recording it."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Configured:
        return cls(config)


class Checked(Configured):
    """A provider whose configuration check refuses every key but `model`."""

    checked: list[dict[str, Any]] = []  # noqa: RUF012 - records calls across instances

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        cls.checked.append(dict(config or {}))
        unknown = sorted(set(config or {}) - {"model"})
        if unknown:
            raise ConfigurationError(f"unknown key {unknown[0]!r}", field=unknown[0])


class MissingSdk(Configured):
    """A provider whose vendor SDK is not installed."""

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        raise ProviderDependencyError("nosuchsdk", "nosuchsdk")


class NoFromConfig:
    """A provider class a profile cannot build (no from_config)."""


FAST = {
    "provider": f"{HERE}.Configured",
    "provider_config": {"model": "small"},
    "trust_group": "local",
}
STRONG = {
    "provider": f"{HERE}.Configured",
    "provider_config": {"model": "large"},
    "trust_group": "local",
}
ROLES = {
    "planner": "strong",
    "simple_executor": "fast",
    "complex_executor": "strong",
    "synthesizer": "strong",
    "fallback_executor": "strong",
}
CHAT: dict[str, Any] = {
    "provider": "openai:gpt-4.1-mini",
    "provider_config": {"api_key": "sk-legacy", "temperature": 0.1},
    "provider_profiles": {"fast": FAST, "strong": STRONG},
    "planned": {"enabled": True, "roles": ROLES, "catalog": {"PartManager": {}}},
    "allowed_mutations": ["createPart"],  # other CHATOMON keys are not planned's business
}


def invalid(chat: Any) -> ChatConfigurationError:
    with pytest.raises(ChatConfigurationError) as caught:
        get_planned_chat_settings(chat)
    assert caught.value.key == "planned"
    assert str(caught.value).startswith("planned settings are invalid: ")
    return caught.value


def test_required_roles_are_the_reference_tuple() -> None:
    assert REQUIRED_ROLES == (
        "planner",
        "simple_executor",
        "complex_executor",
        "synthesizer",
        "fallback_executor",
    )


def test_planned_mode_off_gives_disabled_settings_on_the_implicit_legacy_profile() -> None:
    settings = get_planned_chat_settings({**CHAT, "planned": {"roles": ROLES}})
    assert settings.enabled is False
    assert list(settings.profiles) == ["default"]
    default = settings.profiles["default"]
    assert default.implicit is True
    assert default.provider == "openai:gpt-4.1-mini"
    assert dict(default.provider_config) == {"api_key": "sk-legacy", "temperature": 0.1}
    assert dict(settings.roles) == dict.fromkeys(REQUIRED_ROLES, "default")
    assert settings.trust_group == "default"


def test_no_mapping_is_the_local_provider_disabled_with_the_reference_defaults() -> None:
    settings = get_planned_chat_settings()
    assert settings == get_planned_chat_settings({})
    assert settings.profiles["default"].provider == "local"
    assert (settings.max_concurrent_tasks, settings.max_rounds, settings.max_rounds_per_root) == (
        3,
        24,
        8,
    )
    assert settings.evidence_timeout_seconds == 90.0
    assert settings.synthesis_timeout_seconds == 30.0
    assert settings.request_timeout_seconds is None
    assert settings.catalog is None


def test_enabled_without_profiles_puts_every_role_on_the_implicit_profile() -> None:
    chat = {"provider": "local", "provider_config": {"threads": 2}, "planned": {"enabled": True}}
    settings = get_planned_chat_settings(chat)
    assert settings.enabled is True
    assert settings.profiles == {
        "default": ProviderProfile("default", "local", {"threads": 2}, "default", implicit=True)
    }
    assert all(profile_for_role(settings, role).implicit for role in REQUIRED_ROLES)


def test_named_profiles_carry_their_own_configuration_never_the_legacy_one() -> None:
    settings = get_planned_chat_settings(CHAT)
    assert settings.enabled is True
    assert sorted(settings.profiles) == ["fast", "strong"]
    fast = profile_for_role(settings, "simple_executor")
    assert fast == ProviderProfile("fast", f"{HERE}.Configured", {"model": "small"}, "local")
    assert dict(profile_for_role(settings, "planner").provider_config) == {"model": "large"}
    assert all("api_key" not in p.provider_config for p in settings.profiles.values())
    assert settings.trust_group == "local"
    assert settings.catalog == {"PartManager": {}}


def test_profiles_no_role_uses_are_left_out() -> None:
    profiles = {"fast": FAST, "strong": STRONG, "remote": {**FAST, "trust_group": "cloud"}}
    settings = get_planned_chat_settings({**CHAT, "provider_profiles": profiles})
    assert sorted(settings.profiles) == ["fast", "strong"]


def test_the_planned_limits_are_read() -> None:
    planned = {
        **CHAT["planned"],
        "max_concurrent_tasks": 2,
        "evidence_timeout_seconds": 12,
        "synthesis_timeout_seconds": 4.5,
        "max_rounds": 10,
        "max_rounds_per_root": 3,
        "request_timeout_seconds": 7,
    }
    settings = get_planned_chat_settings({**CHAT, "planned": planned})
    assert settings.max_concurrent_tasks == 2
    assert settings.evidence_timeout_seconds == 12
    assert settings.synthesis_timeout_seconds == 4.5
    assert (settings.max_rounds, settings.max_rounds_per_root) == (10, 3)
    assert settings.request_timeout_seconds == 7


def test_settings_and_profiles_are_read_only_copies() -> None:
    config = {"model": "small"}
    profile = ProviderProfile("fast", "local", config)
    config["model"] = "changed"
    assert profile.provider_config == {"model": "small"}
    with pytest.raises(TypeError):
        profile.provider_config["model"] = "x"
    settings = get_planned_chat_settings(CHAT)
    with pytest.raises(TypeError):
        settings.roles["planner"] = "fast"
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.enabled = False


def test_a_profile_repr_leaves_its_configuration_out() -> None:
    """provider_config holds credentials: a logged profile must not show them."""
    assert "sk-legacy" not in repr(get_planned_chat_settings(CHAT | {"planned": {}}))


def test_roles_must_all_be_assigned_to_known_profiles_of_one_trust_group() -> None:
    missing = invalid({**CHAT, "planned": {"enabled": True, "roles": {"planner": "fast"}}})
    assert "missing: simple_executor, complex_executor, synthesizer, fallback_executor" in str(
        missing
    )
    unknown = invalid({**CHAT, "planned": {"enabled": True, "roles": {**ROLES, "planner": "fsat"}}})
    assert "unknown provider_profiles: fsat; did you mean 'fast'?" in str(unknown)
    mixed = {**CHAT, "provider_profiles": {"fast": FAST, "strong": {**STRONG, "trust_group": "x"}}}
    assert "share one trust_group, got local, x" in str(invalid(mixed))


def test_without_profiles_roles_may_only_name_the_implicit_profile() -> None:
    planned = {"enabled": True, "roles": {"planner": "strong"}}
    assert "implicit 'default' profile" in str(invalid({"planned": planned}))
    named = {"enabled": True, "roles": dict.fromkeys(REQUIRED_ROLES, "default")}
    assert get_planned_chat_settings({"planned": named}).profiles["default"].implicit


def test_unknown_roles_and_keys_are_refused_with_a_suggestion() -> None:
    assert "planned.roles.planer is unknown; did you mean 'planner'?" in str(
        invalid({"planned": {"roles": {"planer": "fast"}}})
    )
    assert "planned.enable is unknown; did you mean 'enabled'?" in str(
        invalid({"planned": {"enable": True}})
    )
    assert "provider_profiles.fast.trust is unknown" in str(
        invalid({"provider_profiles": {"fast": {"provider": "local", "trust": "x"}}})
    )


def test_a_planned_problem_keeps_the_value_what_is_allowed_and_the_suggestion() -> None:
    # The same error fields as CHATOMON's own problems (ChatConfigurationError.from_problem).
    misspelled = invalid({"planned": {"enable": True}})
    assert (misspelled.value, misspelled.suggestion) == ("enable", "enabled")
    assert "enabled" in misspelled.allowed
    wrong = invalid({"planned": {"max_concurrent_tasks": 0}})
    assert (wrong.value, wrong.suggestion) == (0, None)
    assert wrong.allowed and "whole number" in wrong.allowed[0]


@pytest.mark.parametrize(
    ("planned", "expected"),
    [
        ({"enabled": "yes"}, "planned.enabled must be True or False, got 'yes'"),
        ({"max_concurrent_tasks": 0}, "planned.max_concurrent_tasks must be a whole number"),
        ({"max_rounds": 4, "max_rounds_per_root": 5}, "must not exceed max_rounds (4), got 5"),
        ({"evidence_timeout_seconds": -1}, "planned.evidence_timeout_seconds must be a number"),
        ({"request_timeout_seconds": "5"}, "planned.request_timeout_seconds must be a number"),
    ],
)
def test_wrong_values_name_the_key(planned: dict[str, Any], expected: str) -> None:
    assert expected in str(invalid({"planned": planned}))


def test_enabled_named_profiles_need_a_provider_class_with_from_config() -> None:
    """The reference: each configured provider must support build_profile_provider's way."""
    odd = {**CHAT, "provider_profiles": {"fast": {**FAST, "provider": f"{HERE}.NoFromConfig"},
                                         "strong": STRONG}}  # fmt: skip
    assert "provider_profiles.fast.provider names NoFromConfig" in str(invalid(odd))
    typo = {**CHAT, "provider_profiles": {"fast": FAST, "strong": {**STRONG, "provider": "olama"}}}
    assert "unknown provider 'olama'; did you mean 'ollama'?" in str(invalid(typo))
    off = {**odd, "planned": {**CHAT["planned"], "enabled": False}}
    assert get_planned_chat_settings(off).enabled is False  # off: nothing is imported


def test_a_mapping_is_required() -> None:
    assert "must be a mapping, got list" in str(invalid([]))
    assert "planned must be a mapping of planned settings" in str(invalid({"planned": "on"}))


def test_hand_built_settings_are_checked_too() -> None:
    profile = ProviderProfile("a", "local", {}, "one")
    with pytest.raises(ValueError, match="roles without a profile: planner"):
        PlannedChatSettings(True, {"a": profile}, dict.fromkeys(REQUIRED_ROLES[1:], "a"))
    other = ProviderProfile("b", "local", {}, "two")
    roles = {**dict.fromkeys(REQUIRED_ROLES, "a"), "planner": "b"}
    with pytest.raises(ValueError, match="share one trust_group"):
        PlannedChatSettings(True, {"a": profile, "b": other}, roles)


def test_profile_for_role_refuses_an_unknown_role() -> None:
    with pytest.raises(ValueError, match="unknown planned role 'planer'; did you mean 'planner'"):
        profile_for_role(get_planned_chat_settings(), "planer")


def test_build_role_providers_builds_one_instance_per_profile() -> None:
    providers = build_role_providers(get_planned_chat_settings(CHAT))
    assert set(providers) == set(REQUIRED_ROLES)
    assert providers["planner"] is providers["synthesizer"] is providers["fallback_executor"]
    assert providers["simple_executor"] is not providers["planner"]
    assert providers["simple_executor"].config == {"model": "small"}
    assert providers["complex_executor"].config == {"model": "large"}


def test_the_implicit_profile_builds_like_the_legacy_provider() -> None:
    settings = get_planned_chat_settings({"provider": "local", "planned": {"enabled": True}})
    provider = build_profile_provider(profile_for_role(settings, "planner"))
    assert isinstance(provider, LocalProvider)


def test_a_named_profile_builds_through_from_config() -> None:
    profile = ProviderProfile("s", "chatomon.providers.testing.ScriptedProvider", {})
    assert isinstance(build_profile_provider(profile), ScriptedProvider)
    implied = build_profile_provider(ProviderProfile("f", f"{HERE}.Configured", {"model": "m"}))
    assert implied.config == {"model": "m"}


def test_a_named_profile_needs_a_provider_with_from_config() -> None:
    profile = ProviderProfile("odd", f"{HERE}.NoFromConfig", {})
    with pytest.raises(ChatConfigurationError, match="no from_config") as caught:
        build_profile_provider(profile)
    assert caught.value.key == "provider_profiles.odd.provider"


def test_an_unknown_provider_names_the_profile() -> None:
    with pytest.raises(ChatConfigurationError) as caught:
        build_profile_provider(ProviderProfile("typo", "opnai:gpt", {}))
    assert caught.value.key == "provider_profiles.typo.provider"
    assert "provider_profiles.typo.provider ('opnai:gpt'): unknown provider" in str(caught.value)
    assert "did you mean 'openai'?" in str(caught.value)


def test_validate_profile_provider_runs_the_check_with_the_profile_configuration() -> None:
    Checked.checked.clear()
    provider = validate_profile_provider(ProviderProfile("c", f"{HERE}.Checked", {"model": "m"}))
    assert isinstance(provider, Checked)
    assert Checked.checked == [{"model": "m"}]
    with pytest.raises(ChatConfigurationError, match="unknown key 'modle'") as caught:
        validate_profile_provider(ProviderProfile("c", f"{HERE}.Checked", {"modle": "m"}))
    assert caught.value.key == "provider_profiles.c.provider"


def test_validate_profile_provider_lets_a_missing_dependency_through() -> None:
    with pytest.raises(ProviderDependencyError):
        validate_profile_provider(ProviderProfile("v", f"{HERE}.MissingSdk", {}))


def test_validate_profile_provider_checks_real_providers() -> None:
    with pytest.raises(ChatConfigurationError, match=r"provider_profiles\.l\.provider"):
        validate_profile_provider(ProviderProfile("l", "local", {"nonsense_key": 1}))
    assert isinstance(validate_profile_provider(ProviderProfile("l", "local", {})), LocalProvider)
