"""System checks: each chatomon id fires for its problem, with a hint, only when enabled."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from django.core.checks import CheckMessage, run_checks
from django.test import override_settings
from pydantic import BaseModel

from chatomon.data import ManagerRegistry, mutation
from chatomon.errors import ConfigurationError, ProviderDependencyError

HERE = __name__


class QuietProvider:
    """A provider class without a configuration check."""


class CheckedProvider:
    """A provider whose configuration check refuses every key but `model`."""

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        unknown = sorted(set(config or {}) - {"model"})
        if unknown:
            raise ConfigurationError(f"unknown key {unknown[0]!r}", field=unknown[0])


class MissingSdkProvider:
    """A provider whose vendor SDK is not installed."""

    required_extra = "nosuchsdk"

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        raise ProviderDependencyError("nosuchsdk", "nosuchsdk")


class CrashingProvider:
    """A provider whose configuration check fails unexpectedly."""

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        raise RuntimeError("boom")


BASE = {
    "enabled": True,
    "provider": f"{HERE}.QuietProvider",
    "allowed_mutations": ["createPart"],
}


def chat_checks(**changes: Any) -> list[CheckMessage]:
    with override_settings(CHATOMON={**BASE, **changes}):
        return list(run_checks(tags=["chatomon"]))


def ids(messages: list[CheckMessage]) -> list[str]:
    return [str(message.id) for message in messages]


def only(messages: list[CheckMessage], check_id: str) -> CheckMessage:
    assert ids(messages) == [check_id], [str(message) for message in messages]
    assert messages[0].hint, "every chatomon check carries a hint"
    return messages[0]


def test_a_valid_enabled_configuration_passes() -> None:
    assert chat_checks() == []


def test_nothing_is_checked_while_chat_is_disabled() -> None:
    assert chat_checks(enabled=False, confirm_mutations=["deletePart"], max_results=0) == []


def test_e001_no_exposed_manager() -> None:
    message = only(chat_checks(registry=ManagerRegistry(), allowed_mutations=[]), "chatomon.E001")
    assert "chat_exposed" in message.msg


def test_e002_invalid_values_name_the_key() -> None:
    message = only(chat_checks(max_results=0), "chatomon.E002")
    assert "max_results" in message.msg


def test_e002_unknown_top_level_key() -> None:
    message = only(chat_checks(enabeld=True), "chatomon.E002")
    assert "did you mean 'enabled'" in message.msg


def test_e002_unknown_allowed_mutation_with_did_you_mean() -> None:
    message = only(chat_checks(allowed_mutations=["createPrat"]), "chatomon.E002")
    assert "did you mean 'createPart'" in message.msg


def test_e002_invalid_permission() -> None:
    message = only(chat_checks(permission=f"{HERE}.missing_permission"), "chatomon.E002")
    assert "permission" in message.msg


def test_e002_invalid_provider_config() -> None:
    messages = chat_checks(provider=f"{HERE}.CheckedProvider", provider_config={"modle": "x"})
    assert "modle" in only(messages, "chatomon.E002").msg


def test_e002_provider_config_that_is_not_a_mapping() -> None:
    messages = chat_checks(provider=f"{HERE}.CheckedProvider", provider_config=["model"])
    assert "provider_config" in only(messages, "chatomon.E002").msg


def test_e003_missing_provider_dependency() -> None:
    message = only(chat_checks(provider=f"{HERE}.MissingSdkProvider"), "chatomon.E003")
    assert 'pip install "chatomon[nosuchsdk]"' in str(message.hint)


def test_e004_provider_check_fails_otherwise() -> None:
    message = only(chat_checks(provider=f"{HERE}.CrashingProvider"), "chatomon.E004")
    assert "RuntimeError" in message.msg


def test_e004_provider_module_fails_to_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "chatomon_broken_provider.py").write_text("raise RuntimeError('broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "chatomon_broken_provider", raising=False)
    message = only(chat_checks(provider="chatomon_broken_provider.Provider"), "chatomon.E004")
    assert "broken" in message.msg


def test_e005_confirmations_outside_allowed_mutations() -> None:
    messages = chat_checks(
        confirm_mutations=["deletePart"], staff_approval_mutations=["createPart", "dropAll"]
    )
    assert ids(messages) == ["chatomon.E005", "chatomon.E005"]
    assert messages[0].msg.startswith("confirm_mutations ")
    assert messages[0].msg.endswith(": deletePart")
    assert messages[1].msg.startswith("staff_approval_mutations ")
    assert messages[1].msg.endswith(": dropAll"), "allowed createPart is not named"
    assert all(message.hint for message in messages)


def test_e005_reads_the_lists_as_the_tool_settings_do() -> None:
    assert chat_checks(allowed_mutations={"createPart"}, confirm_mutations=("createPart",)) == []
    message = only(chat_checks(allowed_mutations=set(), confirm_mutations={"x"}), "chatomon.E005")
    assert message.msg.endswith(": x")


@pytest.mark.parametrize("path", ["opneai", "nowhere.providers.Provider", f"{HERE}.NoSuchClass"])
def test_e006_unknown_provider_path(path: str) -> None:
    only(chat_checks(provider=path), "chatomon.E006")


def test_e006_suggests_the_short_name() -> None:
    message = only(chat_checks(provider="opneai"), "chatomon.E006")
    assert "did you mean 'openai'" in message.msg


def test_e007_invalid_orbital_path() -> None:
    message = only(chat_checks(atom={"input": ["chatomon.orbitals.NoSuchGuard"]}), "chatomon.E007")
    assert "atom.input[0]" in message.msg


def test_e008_wrong_declarations() -> None:
    class Input(BaseModel):
        name: str

    @mutation(name="createThing", input=Input, manager="NoSuchManager")
    def create_thing(actor: Any, data: Any) -> dict[str, Any]:
        return {}

    registry = ManagerRegistry([create_thing])
    message = only(chat_checks(registry=registry, allowed_mutations=[]), "chatomon.E008")
    assert "NoSuchManager" in message.msg


IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
REDIS_CACHE = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:6379/2",
    }
}


@override_settings(CHANNEL_LAYERS=IN_MEMORY, CACHES=REDIS_CACHE)
def test_w001_in_memory_channel_layer_with_several_workers() -> None:
    assert only(chat_checks(workers=3), "chatomon.W001").level < 40  # a Warning, not an Error
    assert chat_checks(workers=1) == []


@override_settings(CHANNEL_LAYERS=IN_MEMORY, CACHES=REDIS_CACHE)
def test_w001_reads_web_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    only(chat_checks(), "chatomon.W001")


REDIS_URL = "redis://127.0.0.1:6379/2"
REDIS_LAYER = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 10}]},
    }
}


@override_settings(
    CHANNEL_LAYERS=REDIS_LAYER,
    CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
)
def test_w002_local_memory_cache_with_several_workers() -> None:
    only(chat_checks(workers=2), "chatomon.W002")


def redis_layer(*hosts: Any, backend: str = "channels_redis.core.RedisChannelLayer") -> Any:
    return {"default": {"BACKEND": backend, "CONFIG": {"hosts": list(hosts)}}}


def redis_py_default_timeout() -> Any:
    from redis.asyncio import Redis  # noqa: PLC0415

    return inspect.signature(Redis).parameters["socket_timeout"].default


@pytest.mark.parametrize(
    "host",
    [
        {"address": REDIS_URL, "socket_timeout": 5},
        {"host": "127.0.0.1", "port": 6379, "socket_timeout": 2.5},
        f"{REDIS_URL}?socket_timeout=3",
    ],
    ids=["dict", "host-port-dict", "url-query"],
)
def test_w003_a_socket_timeout_not_longer_than_the_layers_blocking_receive(host) -> None:
    with override_settings(CHANNEL_LAYERS=redis_layer(host), CACHES=REDIS_CACHE):
        message = only(chat_checks(workers=1), "chatomon.W003")
    assert message.level < 40
    assert "socket_timeout" in message.msg and "socket_timeout" in str(message.hint)


@pytest.mark.skipif(
    redis_py_default_timeout() is None, reason="this redis-py gives no default socket_timeout"
)
@pytest.mark.parametrize("host", [REDIS_URL, ("127.0.0.1", 6379), {"address": REDIS_URL}])
def test_w003_redis_py_8s_default_timeout_is_exposed(host) -> None:
    with override_settings(CHANNEL_LAYERS=redis_layer(host), CACHES=REDIS_CACHE):
        message = only(chat_checks(), "chatomon.W003")
    assert f"({redis_py_default_timeout():g} s)" in message.msg


@pytest.mark.parametrize(
    "layers",
    [
        redis_layer({"address": REDIS_URL, "socket_timeout": 10}),
        redis_layer({"address": REDIS_URL, "socket_timeout": None}),
        redis_layer(f"{REDIS_URL}?socket_timeout=30"),
        redis_layer(REDIS_URL, backend="channels_redis.pubsub.RedisPubSubChannelLayer"),
        IN_MEMORY,
    ],
    ids=["longer", "none", "url-query", "pubsub", "in-memory"],
)
def test_w003_is_silent_where_the_receive_outlasts_its_block(layers) -> None:
    with override_settings(CHANNEL_LAYERS=layers, CACHES=REDIS_CACHE):
        assert chat_checks() == []


@pytest.mark.parametrize(
    "host",
    [{"address": REDIS_URL, "socket_timeout": "soon"}, f"{REDIS_URL}?socket_timeout=soon"],
)
def test_w003_leaves_a_socket_timeout_it_cannot_read_to_redis(host) -> None:
    # `manage.py check` raised ValueError on it (a traceback instead of the checks); the
    # Redis client reports such a value itself when it connects.
    with override_settings(CHANNEL_LAYERS=redis_layer(host), CACHES=REDIS_CACHE):
        assert chat_checks(workers=1) == []


POSTGRESQL = {"ENGINE": "django.db.backends.postgresql", "NAME": "chatomon"}
# The W004 tests change DATABASES for the check to read; no connection is made to them.
ONLY_READ = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES:UserWarning")


def databases(**entry: Any) -> dict[str, Any]:
    """DATABASES with the test run's own default and an `other` PostgreSQL entry."""
    from django.conf import settings  # noqa: PLC0415

    return {"default": settings.DATABASES["default"], "other": {**POSTGRESQL, **entry}}


@pytest.mark.parametrize(
    "entry",
    [
        {"CONN_MAX_AGE": 600},
        {"CONN_MAX_AGE": None},
        {"OPTIONS": {"pool": True}},
        {"OPTIONS": {"pool": {"min_size": 2}}, "CONN_HEALTH_CHECKS": False},
        {"ENGINE": "django.contrib.gis.db.backends.postgis", "CONN_MAX_AGE": 60},
    ],
    ids=["persistent", "forever", "pool", "pool-dict", "postgis"],
)
@ONLY_READ
def test_w004_kept_postgresql_connections_without_health_checks(entry) -> None:
    with override_settings(DATABASES=databases(**entry), CACHES=REDIS_CACHE):
        message = only(chat_checks(), "chatomon.W004")
    assert message.level < 40
    assert "DATABASES['other']" in message.msg
    assert "CONN_HEALTH_CHECKS" in str(message.hint)


@pytest.mark.parametrize(
    "entry",
    [
        {},
        {"CONN_MAX_AGE": 0},
        {"CONN_MAX_AGE": 600, "CONN_HEALTH_CHECKS": True},
        {"OPTIONS": {"pool": True}, "CONN_HEALTH_CHECKS": True},
        {"OPTIONS": {"pool": False}},
        {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:", "CONN_MAX_AGE": 600},
    ],
    ids=["default", "zero", "persistent-checked", "pool-checked", "no-pool", "sqlite"],
)
@ONLY_READ
def test_w004_is_silent_for_checked_short_lived_or_other_connections(entry) -> None:
    with override_settings(DATABASES=databases(**entry), CACHES=REDIS_CACHE):
        assert chat_checks() == []


def test_every_check_id_is_in_the_checks_docstring_and_the_readme() -> None:
    """The check list is documented where a developer looks: checks.py and the README."""
    import re  # noqa: PLC0415

    from chatomon.django.settings import checks  # noqa: PLC0415

    source = Path(checks.__file__).read_text()
    raised = set(re.findall(r'id="(chatomon\.[EW]\d{3})"', source))
    assert {"chatomon.E010", "chatomon.E011", "chatomon.E012"} <= raised
    assert "chatomon.E009" not in raised  # retired with the arrival of planned turns
    documented = set(re.findall(r"chatomon\.[EW]\d{3}", checks.__doc__ or ""))
    assert documented == raised
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert {check_id.removeprefix("chatomon.") for check_id in raised} <= set(
        re.findall(r"`chatomon\.([EW]\d{3})`", readme)
    )
