"""Planned settings in Django: get_planned_chat_settings() and the system checks E010-E012."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from django.core.checks import CheckMessage, run_checks
from django.test import override_settings

from chatomon.django.settings import get_planned_chat_settings, sections
from chatomon.errors import ChatConfigurationError, ConfigurationError, ProviderDependencyError
from chatomon.planned.config import REQUIRED_ROLES, PlannedChatSettings
from chatomon.planned.sections import PlannedSection, ProfileSection

HERE = __name__


class BuiltProvider:
    """A provider a profile can build, refusing every configuration key but `model`."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BuiltProvider:
        return cls(config)

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        unknown = sorted(set(config or {}) - {"model"})
        if unknown:
            raise ConfigurationError(f"unknown key {unknown[0]!r}", field=unknown[0])


class LegacyOnlyProvider:
    """A provider class without from_config: fine as the legacy provider, not for a profile."""


class MissingSdkProvider(BuiltProvider):
    """A provider whose vendor SDK is not installed."""

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        raise ProviderDependencyError("nosuchsdk", "nosuchsdk")


class ExplodingProvider(BuiltProvider):
    """A provider whose construction fails unexpectedly."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BuiltProvider:
        raise RuntimeError("constructor exploded")


def failing_catalog() -> dict[str, Any]:
    raise RuntimeError("catalog service down")


def part_catalog() -> dict[str, Any]:
    return {"PartManager": {"aliases": ["component"], "distinguish_from": ["MaterialManager"]}}


def profile(provider: str = "BuiltProvider", **extra: Any) -> dict[str, Any]:
    return {"provider": f"{HERE}.{provider}", "trust_group": "local", **extra}


PROFILES = {"fast": profile(provider_config={"model": "s"}), "strong": profile()}
ROLES = {**dict.fromkeys(REQUIRED_ROLES, "strong"), "simple_executor": "fast"}
PLANNED = {"enabled": True, "roles": ROLES, "catalog": f"{HERE}.part_catalog"}
BASE = {
    "enabled": True,
    "provider": f"{HERE}.LegacyOnlyProvider",
    "provider_profiles": PROFILES,
    "planned": PLANNED,
}


def chat_checks(**changes: Any) -> list[CheckMessage]:
    with override_settings(CHATOMON={**BASE, **changes}):
        return list(run_checks(tags=["chatomon"]))


def planned_checks(**changes: Any) -> list[CheckMessage]:
    return chat_checks(planned={**PLANNED, **changes})


def only(messages: list[CheckMessage], check_id: str) -> CheckMessage:
    assert [str(m.id) for m in messages] == [check_id], [str(m) for m in messages]
    assert messages[0].hint, "every chatomon check carries a hint"
    return messages[0]


def test_a_complete_planned_configuration_passes() -> None:
    assert chat_checks() == []


def test_planned_settings_that_stay_off_are_not_built() -> None:
    """The reference: planned orchestration is opt-in; off, nothing of it is constructed."""
    broken = {"x": profile("LegacyOnlyProvider")}
    roles = dict.fromkeys(REQUIRED_ROLES, "x")
    off = {"enabled": False, "roles": roles, "catalog": {"NoSuchManager": {}}}
    assert chat_checks(provider_profiles=broken, planned=off) == []
    assert chat_checks(planned={}) == []
    assert chat_checks(enabled=False, planned={**PLANNED, "roles": {"planner": "nope"}}) == []


def test_the_implicit_profile_is_the_legacy_provider_and_passes() -> None:
    """Without provider_profiles every role runs on the legacy provider (no from_config needed)."""
    assert chat_checks(provider_profiles={}, planned={"enabled": True}) == []


def test_e010_every_role_on_one_trust_group() -> None:
    mixed = {**PROFILES, "fast": profile(trust_group="cloud")}
    message = only(chat_checks(provider_profiles=mixed), "chatomon.E010")
    assert "share one trust_group, got cloud, local" in message.msg
    assert "trust_group" in str(message.hint) and "planner" in str(message.hint)


def test_e010_ignores_the_trust_group_of_a_profile_no_role_uses() -> None:
    unused = {**PROFILES, "remote": profile(trust_group="cloud")}
    assert chat_checks(provider_profiles=unused) == []


@pytest.mark.parametrize(
    ("planned", "expected"),
    [
        ({"roles": {"planner": "strong"}}, "missing: simple_executor"),
        ({"roles": {**ROLES, "planner": "strnog"}}, "unknown provider_profiles: strnog"),
        ({"roles": {**ROLES, "planer": "strong"}}, "did you mean 'planner'?"),
        ({"max_rounds": 0}, "CHATOMON['planned']['max_rounds'] must be a whole number"),
        ({"max_rounds": 4, "max_rounds_per_root": 5}, "must not exceed max_rounds (4)"),
        ({"enabled": "yes"}, "CHATOMON['planned']['enabled'] must be True or False"),
    ],
)
def test_e010_names_the_wrong_planned_key(planned: dict[str, Any], expected: str) -> None:
    assert expected in only(planned_checks(**planned), "chatomon.E010").msg


def test_e010_covers_a_malformed_profile_too() -> None:
    bad = {**PROFILES, "fast": {"provider": "local", "trust": "local"}}
    message = only(chat_checks(provider_profiles=bad), "chatomon.E010")
    assert "CHATOMON['provider_profiles']['fast']['trust'] is unknown" in message.msg


def test_e011_a_profile_provider_without_from_config() -> None:
    profiles = {**PROFILES, "fast": profile("LegacyOnlyProvider")}
    message = only(chat_checks(provider_profiles=profiles), "chatomon.E011")
    assert "planned profile 'fast' cannot build its provider" in message.msg
    assert "no from_config" in message.msg
    assert "CHATOMON['provider_profiles']['fast']" in str(message.hint)


def test_e011_a_profile_configuration_the_provider_refuses() -> None:
    profiles = {**PROFILES, "strong": profile(provider_config={"modle": "x"})}
    message = only(chat_checks(provider_profiles=profiles), "chatomon.E011")
    assert (
        "unknown key 'modle'" in message.msg and "provider_profiles.strong.provider" in message.msg
    )


def test_e011_an_unknown_provider_name_and_a_failing_constructor() -> None:
    unknown = {**PROFILES, "fast": {"provider": "opnai:gpt-4.1", "trust_group": "local"}}
    assert (
        "did you mean 'openai'?"
        in only(chat_checks(provider_profiles=unknown), "chatomon.E011").msg
    )
    exploding = {**PROFILES, "fast": profile("ExplodingProvider")}
    message = only(chat_checks(provider_profiles=exploding), "chatomon.E011")
    assert "RuntimeError: constructor exploded" in message.msg


def test_e003_a_profile_provider_whose_sdk_is_missing() -> None:
    profiles = {**PROFILES, "fast": profile("MissingSdkProvider")}
    message = only(chat_checks(provider_profiles=profiles), "chatomon.E003")
    assert 'pip install "chatomon[nosuchsdk]"' in str(message.hint)


def test_each_profile_is_reported_once_whatever_the_roles_using_it() -> None:
    profiles = {"fast": profile("LegacyOnlyProvider"), "strong": profile("LegacyOnlyProvider")}
    assert [m.id for m in chat_checks(provider_profiles=profiles)] == ["chatomon.E011"] * 2


@pytest.mark.parametrize(
    ("catalog", "expected"),
    [
        ({"SupplierManager": {}}, "'SupplierManager', which is not a chat-exposed manager"),
        ({"PartManagr": {}}, "did you mean 'PartManager'?"),
        ({"PartManager": {"distinguish_from": ["SupplierManager"]}}, "distinguish_from names"),
        ({"PartManager": {"alias": ["x"]}}, "did you mean 'aliases'?"),
        ("nowhere.catalog", "names 'nowhere.catalog', which cannot be imported"),
        (f"{HERE}.failing_catalog", "RuntimeError: catalog service down"),
    ],
)
def test_e012_a_catalog_that_does_not_load(catalog: Any, expected: str) -> None:
    message = only(planned_checks(catalog=catalog), "chatomon.E012")
    assert message.msg.startswith("planned.catalog does not load: ")
    assert expected in message.msg
    assert "chat-exposed manager names" in str(message.hint)


def test_the_django_sections_are_the_sdk_models() -> None:
    """One validation for both: a key or default cannot differ between Django and the SDK."""
    assert sections.PlannedSettings is PlannedSection
    assert sections.ProviderProfile is ProfileSection
    assert sections.PLANNED_ROLES is REQUIRED_ROLES


def test_get_planned_chat_settings_reads_chatomon() -> None:
    with override_settings(CHATOMON=BASE):
        settings = get_planned_chat_settings()
        assert isinstance(settings, PlannedChatSettings)
        assert settings.enabled is True
        assert settings.roles["simple_executor"] == "fast"
        assert dict(settings.profiles["fast"].provider_config) == {"model": "s"}
        assert settings.trust_group == "local"
        assert settings.catalog == f"{HERE}.part_catalog"
        assert get_planned_chat_settings() is settings  # cached


def test_get_planned_chat_settings_follows_a_changed_chatomon() -> None:
    with override_settings(CHATOMON=BASE):
        assert get_planned_chat_settings().enabled is True
    with override_settings(CHATOMON={"provider": "local"}):
        settings = get_planned_chat_settings()
        assert settings.enabled is False
        assert settings.profiles["default"].implicit
        assert settings.profiles["default"].provider == "local"
    with override_settings(CHATOMON={**BASE, "planned": {**PLANNED, "max_concurrent_tasks": 5}}):
        assert get_planned_chat_settings().max_concurrent_tasks == 5


def test_get_planned_chat_settings_raises_the_settings_error() -> None:
    with (
        override_settings(CHATOMON={**BASE, "planned": {**PLANNED, "enable": True}}),
        pytest.raises(ChatConfigurationError, match="did you mean 'enabled'") as caught,
    ):
        get_planned_chat_settings()
    assert caught.value.key == "planned.enable"
