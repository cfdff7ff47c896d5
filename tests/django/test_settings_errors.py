"""The one mapping of pydantic's errors: settings and provider configurations alike."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from chatomon._suggest import closest, did_you_mean
from chatomon.django.settings import validate_chat_settings
from chatomon.errors import ChatConfigurationError, ConfigurationError
from chatomon.providers.anthropic import AnthropicProvider
from chatomon.providers.openai import OpenAIProvider


def invalid(configured: dict[str, Any]) -> ChatConfigurationError:
    with override_settings(CHATOMON=configured), pytest.raises(ChatConfigurationError) as caught:
        validate_chat_settings()
    return caught.value


def test_an_unknown_key_names_its_path_the_known_keys_and_the_closest() -> None:
    error = invalid({"audit": {"max_result_sise": 10}})
    assert error.key == "audit.max_result_sise"
    assert error.value == "max_result_sise"
    assert error.suggestion == "max_result_size"
    assert "max_result_size" in error.allowed and "redact_fields" in error.allowed
    assert str(error).startswith(
        "CHATOMON['audit']['max_result_sise'] is unknown; did you mean 'max_result_size'?"
    )


def test_a_key_of_a_named_profile_is_named_below_the_profile() -> None:
    error = invalid({"provider_profiles": {"fast": {"provider": "local", "trust": "x"}}})
    assert error.key == "provider_profiles.fast.trust"
    assert error.suggestion == "trust_group"
    assert "CHATOMON['provider_profiles']['fast']['trust']" in str(error)


def test_a_missing_profile_key_says_it_is_required() -> None:
    error = invalid({"provider_profiles": {"fast": {"trust_group": "local"}}})
    assert error.key == "provider_profiles.fast.provider"
    assert "is required" in str(error)


def test_a_wrong_type_names_the_value_and_what_is_allowed() -> None:
    error = invalid({"rate_limit": {"window_seconds": "3600"}})
    assert error.key == "rate_limit.window_seconds"
    assert error.value == "3600"
    assert error.allowed == ("a number above 0",)
    assert (
        str(error)
        == "CHATOMON['rate_limit']['window_seconds'] must be a number above 0, got '3600'"
    )


@pytest.mark.parametrize(
    ("configured", "key", "value"),
    [
        ({"max_results": 0}, "max_results", 0),
        ({"audit": {"max_result_size": -4}}, "audit.max_result_size", -4),
        ({"ttl_hours": float("inf")}, "ttl_hours", float("inf")),
        ({"planned": {"max_concurrent_tasks": 0}}, "planned.max_concurrent_tasks", 0),
    ],
)
def test_an_out_of_range_value_is_refused(configured: dict[str, Any], key: str, value: Any) -> None:
    error = invalid(configured)
    assert (error.key, error.value) == (key, value)
    assert f"got {value!r}" in str(error)


def test_a_bool_is_not_a_number() -> None:
    error = invalid({"workers": True})
    assert (error.key, error.value) == ("workers", True)


def test_a_choice_lists_the_choices_and_suggests_one() -> None:
    error = invalid({"tool_strategy": "directt"})
    assert error.allowed == ("discovery", "direct")
    assert error.suggestion == "direct"
    assert "did you mean 'direct'?" in str(error)


def test_a_nested_mutation_name_is_named_by_its_position() -> None:
    error = invalid({"allowed_mutations": ["createPart", ""]})
    assert error.key == "allowed_mutations[1]"


def test_validation_errors_are_not_chained_to_pydantic_text() -> None:
    error = invalid({"provider_config": {"api_key": "sk-secret"}, "url": 3})
    assert error.__cause__ is None
    assert "sk-secret" not in str(error)


def test_providers_read_errors_the_same_way() -> None:
    with pytest.raises(ConfigurationError) as caught:
        AnthropicProvider.check_configuration({"temperature": 1.5})
    assert str(caught.value) == (
        "AnthropicProvider setting 'temperature' must be a number from 0 to 1, or None, got 1.5"
    )
    assert caught.value.allowed == ("a number from 0 to 1, or None",)
    with pytest.raises(ConfigurationError) as unknown:
        OpenAIProvider.check_configuration({"temprature": 1})
    assert str(unknown.value).startswith(
        "OpenAIProvider setting 'temprature' is unknown; did you mean 'temperature'?"
    )


def test_a_secret_is_never_shown() -> None:
    with pytest.raises(ConfigurationError) as caught:
        OpenAIProvider.check_configuration({"organization": " "})
    assert caught.value.value == "<redacted>"
    assert "got <redacted>" in str(caught.value)


def test_the_one_did_you_mean() -> None:
    assert closest("enabeld", ["enabled", "url"]) == "enabled"
    assert closest("zzz", ["enabled"]) is None
    assert did_you_mean("opneai", ["openai", "local"]) == "; did you mean 'openai'?"
    assert did_you_mean("zzz", ["openai"]) == ""
