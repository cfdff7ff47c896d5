"""settings.CHATOMON: defaults, merging, validation of every key, caching and refresh."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from pydantic import BaseModel

from chatomon.chat.loop import LoopLimits
from chatomon.chat.tools.context import ToolSettings
from chatomon.data import ManagerRegistry
from chatomon.data.mutations import mutation
from chatomon.django.settings import (
    DEFAULTS,
    ChatSettings,
    chat_settings,
    get_chat_settings,
    validate_chat_settings,
)
from chatomon.errors import ChatConfigurationError, ConfigurationError
from chatomon.orbitals import Orbital, orbital
from chatomon.orbitals.injection import PromptInjectionGuard
from chatomon.orbitals.lexical import MaxLength
from chatomon.orbitals.pii import PIIGuard
from chatomon.schemas import OrbitalContext, Verdict


def invalid(configured: Any) -> ChatConfigurationError:
    with override_settings(CHATOMON=configured), pytest.raises(ChatConfigurationError) as caught:
        validate_chat_settings()
    return caught.value


@orbital
def always_allow(ctx: OrbitalContext) -> Verdict:
    return Verdict.allow()


def make_length_guard() -> Orbital:
    return MaxLength(max_chars=50)


def permission_check(user: Any, scope: Any) -> bool:
    return True


def test_defaults_are_the_seeds_except_the_local_provider() -> None:
    settings = validate_chat_settings()
    assert settings == ChatSettings(
        registry=None,
        provider_config={},
        provider_profiles={},
        planned={"enabled": False},
    )
    assert settings.provider == "local"
    assert settings.url == "/chat/"
    assert settings.url_prefix == "chat/"
    assert settings.rate_limit.requests == 60
    assert settings.rate_limit.window_seconds == 3600
    assert settings.audit.redact_fields == ("password", "secret", "token", "key", "credential")
    assert settings.audit.max_result_size == 4096
    assert settings.limits == LoopLimits()
    assert settings.tools == ToolSettings()
    assert settings.confirm_timeout_seconds == 30
    assert settings.max_message_chars == 8000


def test_nested_mappings_merge_key_by_key_and_defaults_are_not_mutated() -> None:
    with override_settings(CHATOMON={"rate_limit": {"requests": 5}, "audit": {"level": "all"}}):
        merged = get_chat_settings()
        merged["rate_limit"]["window_seconds"] = 1
    assert merged["rate_limit"]["requests"] == 5
    assert merged["audit"]["max_result_size"] == 4096
    assert DEFAULTS["rate_limit"]["window_seconds"] == 3600


def test_a_non_mapping_chatomon_setting_is_refused() -> None:
    error = invalid(["enabled"])
    assert "must be a mapping" in str(error)


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [("enabeld", "enabled"), ("allowed_mutation", "allowed_mutations"), ("zzz", None)],
)
def test_unknown_top_level_keys_are_named_with_a_did_you_mean(
    key: str, suggestion: str | None
) -> None:
    error = invalid({key: True})
    assert error.key == key
    assert error.suggestion == suggestion
    assert repr(key) in str(error)
    if suggestion:
        assert f"did you mean {suggestion!r}" in str(error)


def test_unknown_nested_keys_are_named_with_their_path() -> None:
    error = invalid({"rate_limit": {"request": 3}})
    assert error.key == "rate_limit.request"
    assert error.suggestion == "requests"
    assert "CHATOMON['rate_limit']['request']" in str(error)


@pytest.mark.parametrize(
    ("configured", "key", "value"),
    [
        ({"enabled": "yes"}, "enabled", "yes"),
        ({"url": "https://example.com/chat/"}, "url", "https://example.com/chat/"),
        ({"provider": ""}, "provider", ""),
        ({"provider_config": ["model"]}, "provider_config", ["model"]),
        ({"confirm_timeout_seconds": 0}, "confirm_timeout_seconds", 0),
        ({"max_results": 0}, "max_results", 0),
        ({"max_results": True}, "max_results", True),
        ({"query_timeout_seconds": -1}, "query_timeout_seconds", -1),
        ({"max_retries_per_message": -1}, "max_retries_per_message", -1),
        ({"max_retries_counts": "failed_rounds"}, "max_retries_counts", "failed_rounds"),
        ({"max_mutations_per_message": 1.5}, "max_mutations_per_message", 1.5),
        ({"tool_strategy": "everything"}, "tool_strategy", "everything"),
        ({"recover_missing_tool_calls": 1}, "recover_missing_tool_calls", 1),
        ({"system_prompt": None}, "system_prompt", None),
        ({"max_recent_messages": 0}, "max_recent_messages", 0),
        ({"summarize_after": -1}, "summarize_after", -1),
        ({"ttl_hours": "24"}, "ttl_hours", "24"),
        ({"rate_limit": {"requests": "60"}}, "rate_limit.requests", "60"),
        ({"rate_limit": {"window_seconds": 0}}, "rate_limit.window_seconds", 0),
        ({"rate_limit": 60}, "rate_limit", 60),
        ({"audit": {"enabled": "on"}}, "audit.enabled", "on"),
        ({"audit": {"max_result_size": 0}}, "audit.max_result_size", 0),
        ({"audit": {"redact_fields": "password"}}, "audit.redact_fields", "password"),
        ({"allowed_origins": "https://a.example"}, "allowed_origins", "https://a.example"),
        ({"allowed_mutations": "createPart"}, "allowed_mutations", "createPart"),
        ({"staff_approval_timeout_seconds": -5}, "staff_approval_timeout_seconds", -5),
        ({"max_message_chars": 0}, "max_message_chars", 0),
        ({"workers": 0}, "workers", 0),
        ({"registry": 42}, "registry", 42),
        ({"atom": {"name": ""}}, "atom.name", ""),
        (
            {"atom": {"input": "chatomon.orbitals.PIIGuard"}},
            "atom.input",
            "chatomon.orbitals.PIIGuard",
        ),
    ],
)
def test_every_wrong_value_is_named_with_key_value_and_what_is_allowed(
    configured: dict[str, Any], key: str, value: Any
) -> None:
    error = invalid(configured)
    assert error.key == key
    assert error.value == value
    assert error.allowed, "the error says what would be accepted"
    assert repr(value) in str(error) or key == "rate_limit"
    assert isinstance(error, ConfigurationError)
    assert isinstance(error, ValueError)


def test_choices_get_a_did_you_mean() -> None:
    error = invalid({"audit": {"level": "messagse"}})
    assert error.key == "audit.level"
    assert error.allowed == ("off", "messages", "all")
    assert error.suggestion == "messages"


def test_confirm_mutations_outside_allowed_mutations_are_invalid_confirm_mutations() -> None:
    error = invalid({"allowed_mutations": ["createPart"], "confirm_mutations": ["deletePart"]})
    assert error.key == "confirm_mutations"
    assert error.value == ["deletePart"]
    assert error.allowed == ("createPart",)
    assert "missing from allowed_mutations" in str(error)


def test_staff_approval_mutations_outside_allowed_mutations_are_invalid_confirm_mutations() -> None:
    error = invalid({"staff_approval_mutations": ["deletePart"]})
    assert error.key == "staff_approval_mutations"
    assert error.value == ["deletePart"]


def test_a_mutation_needing_both_approvals_is_refused() -> None:
    error = invalid(
        {
            "allowed_mutations": ["createPart"],
            "confirm_mutations": ["createPart"],
            "staff_approval_mutations": ["createPart"],
        }
    )
    assert error.key == "staff_approval_mutations"
    assert "both" in str(error)


@pytest.mark.parametrize("value", [0, -1, True, 2.5, "3"])
def test_a_bad_round_cap_is_invalid_turn_limit(value: Any) -> None:
    error = invalid({"max_total_rounds_per_message": value})
    assert error.key == "max_total_rounds_per_message"
    assert error.value == value
    assert error.allowed == ("a positive whole number or None",)


def test_a_round_cap_reaches_the_loop_limits() -> None:
    configured = {"max_total_rounds_per_message": 4, "recover_missing_tool_calls": True}
    with override_settings(CHATOMON=configured):
        limits = validate_chat_settings().limits
    assert limits.total_rounds == 4
    assert limits.recover_missing_tool_calls is True


def test_zero_and_negative_limits_create_no_budget() -> None:
    configured = {"rate_limit": {"requests": 0, "tokens": -3, "input_tokens": 500}}
    with override_settings(CHATOMON=configured):
        limits = validate_chat_settings().rate_limit
    assert limits.requests is None
    assert limits.tokens is None
    assert limits.token_limits() == {"input_tokens": 500}


def test_permission_resolves_dotted_paths_and_refuses_non_callables() -> None:
    path = f"{__name__}.permission_check"
    with override_settings(CHATOMON={"permission": path}):
        assert validate_chat_settings().permission is permission_check
    error = invalid({"permission": f"{__name__}.nothing_here"})
    assert error.key == "permission"
    assert "cannot be imported" in str(error)
    assert invalid({"permission": 3}).key == "permission"


def test_audit_logger_resolves_a_dotted_path() -> None:
    with override_settings(CHATOMON={"audit": {"logger": f"{__name__}.permission_check"}}):
        assert validate_chat_settings().audit.logger is permission_check
    assert invalid({"audit": {"logger": "no.such.module.log"}}).key == "audit.logger"


def test_orbitals_resolve_from_paths_classes_factories_and_instances() -> None:
    instance = MaxLength(max_chars=10, name="input_length")
    configured = {
        "atom": {
            "input": [
                "chatomon.orbitals.PromptInjectionGuard",
                instance,
                f"{__name__}.always_allow",
            ],
            "output": [f"{__name__}.make_length_guard", PIIGuard],
            "refusal": "Not here.",
            "capture_content": "hash",
            "options": {"max_attempts": 2},
        }
    }
    with override_settings(CHATOMON=configured):
        atom = validate_chat_settings().atom_config()
    assert isinstance(atom.input[0], PromptInjectionGuard)
    assert atom.input[1] is instance
    assert atom.input[2] is always_allow
    assert isinstance(atom.output[0], MaxLength)
    assert isinstance(atom.output[1], PIIGuard)
    assert atom.capture_content == "hash"
    assert atom.options == {"max_attempts": 2, "refusal": "Not here."}


@pytest.mark.parametrize(
    ("spec", "detail"),
    [
        ("chatomon.orbitals.NoSuchGuard", "cannot be imported"),
        ("nowhere.at_all.Guard", "cannot be imported"),
        (f"{__name__}.permission_check", "building"),
        (f"{__name__}.DEFAULTS", "must be an orbital"),
    ],
)
def test_invalid_orbitals_name_their_position(spec: str, detail: str) -> None:
    error = invalid({"atom": {"output": ["chatomon.orbitals.PIIGuard", spec]}})
    assert error.key == "atom.output[1]"
    assert error.value == spec
    assert detail in str(error)


def test_atom_options_are_atom_keyword_arguments() -> None:
    error = invalid({"atom": {"options": {"max_attempt": 2}}})
    assert error.key == "atom.options.max_attempt"
    assert error.suggestion == "max_attempts"
    assert invalid({"atom": {"capture_content": "all"}}).key == "atom.capture_content"


def test_url_is_normalized() -> None:
    for configured, url, prefix in [("assist", "/assist/", "assist/"), ("/", "/", "")]:
        with override_settings(CHATOMON={"url": configured}):
            settings = validate_chat_settings()
        assert (settings.url, settings.url_prefix) == (url, prefix)


def test_unknown_allowed_mutations_are_named_with_a_did_you_mean() -> None:
    class PartInput(BaseModel):
        name: str

    @mutation(name="createPart", input=PartInput)
    def create_part(actor: Any, data: Any) -> dict[str, Any]:
        return {}

    registry = ManagerRegistry([create_part])
    with override_settings(CHATOMON={"allowed_mutations": ["createPrat", "createPart"]}):
        settings = validate_chat_settings()
    with pytest.raises(ChatConfigurationError) as caught:
        settings.check_mutation_names(registry)
    assert caught.value.key == "allowed_mutations"
    assert caught.value.value == ["createPrat"]
    assert caught.value.suggestion == "createPart"
    assert "did you mean 'createPart'" in str(caught.value)


def test_the_chat_registry_is_autodiscovered_and_checked() -> None:
    from chatomon.data import registry as default_registry  # noqa: PLC0415

    with override_settings(CHATOMON={"allowed_mutations": ["createPart"]}):
        found = validate_chat_settings().chat_registry()
    assert found is default_registry
    assert "createPart" in found.mutations  # tests.testapp.chat, imported by autodiscovery
    configured = ManagerRegistry()
    with override_settings(CHATOMON={"registry": lambda: configured}):
        assert validate_chat_settings().chat_registry() is configured
    with (
        override_settings(CHATOMON={"registry": configured, "allowed_mutations": ["createPart"]}),
        pytest.raises(ChatConfigurationError) as caught,
    ):
        validate_chat_settings().chat_registry()
    assert caught.value.key == "allowed_mutations"


def test_registry_setting_accepts_a_registry_or_a_factory() -> None:
    registry = ManagerRegistry()
    with override_settings(CHATOMON={"registry": registry}):
        assert validate_chat_settings().manager_registry() is registry
    with override_settings(CHATOMON={"registry": lambda: registry}):
        assert validate_chat_settings().manager_registry() is registry
    with (
        override_settings(CHATOMON={"registry": lambda: "nope"}),
        pytest.raises(ChatConfigurationError),
    ):
        validate_chat_settings().manager_registry()


def test_planned_settings_are_checked() -> None:
    profile = {"provider": "local", "trust_group": "local"}
    other = {"provider": "local", "trust_group": "remote"}
    error = invalid(
        {"planned": {"enabled": True, "roles": {}}, "provider_profiles": {"a": profile}}
    )
    assert error.key == "planned"
    assert "missing" in str(error)
    roles = dict.fromkeys(
        ("planner", "simple_executor", "complex_executor", "synthesizer"), "a"
    ) | {"fallback_executor": "b"}
    mixed = invalid(
        {
            "planned": {"enabled": True, "roles": roles},
            "provider_profiles": {"a": profile, "b": other},
        }
    )
    assert "trust_group" in str(mixed)
    assert invalid({"planned": {"enable": True}}).suggestion == "enabled"


def test_workers_fall_back_to_web_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEB_CONCURRENCY", "4")
    assert validate_chat_settings().worker_count() == 4
    with override_settings(CHATOMON={"workers": 2}):
        assert validate_chat_settings().worker_count() == 2
    monkeypatch.delenv("WEB_CONCURRENCY")
    assert validate_chat_settings().worker_count() == 1


def test_cached_settings_refresh_when_chatomon_changes() -> None:
    first = chat_settings()
    assert chat_settings() is first
    with override_settings(CHATOMON={"max_results": 7}):
        assert chat_settings().tools.max_results == 7
    assert chat_settings().tools.max_results == 200


def test_an_atom_that_cannot_be_built_fails_at_startup_not_at_every_turn() -> None:
    error = invalid(
        {"atom": {"input": ["chatomon.orbitals.PIIGuard", "chatomon.orbitals.PIIGuard"]}}
    )
    assert error.key == "atom" and "pii_guard" in str(error)
    error = invalid({"atom": {"options": {"max_attempts": 0}}})
    assert error.key == "atom.options.max_attempts" and error.value == 0
