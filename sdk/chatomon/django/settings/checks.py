"""System checks of the chat settings (`python manage.py check`), run only when chat is enabled.

| id              | problem                                                             |
|-----------------|---------------------------------------------------------------------|
| chatomon.E001   | no manager with chat_exposed = True is registered                   |
| chatomon.E002   | settings, permission or mutation allow-lists are invalid            |
| chatomon.E003   | the provider's optional dependency is missing                       |
| chatomon.E004   | the provider import failed for another reason                       |
| chatomon.E005   | confirm_mutations / staff_approval_mutations not in allowed_mutations |
| chatomon.E006   | the provider path names no provider (unknown short name, module or class) |
| chatomon.E007   | an orbital of the atom setting cannot be imported or built          |
| chatomon.E008   | the registered managers or mutations are declared wrong             |
| chatomon.E010   | provider_profiles or planned are invalid (roles, one trust_group, limits) |
| chatomon.E011   | a planned role's profile provider cannot be built or configured      |
| chatomon.E012   | planned.catalog does not load against the exposed managers           |
| chatomon.W001   | in-memory channel layer while more than one worker serves chat      |
| chatomon.W002   | local-memory cache while more than one worker serves chat           |
| chatomon.W003   | a Redis channel layer whose client times out its blocking receive   |
| chatomon.W004   | PostgreSQL connections kept (CONN_MAX_AGE, a pool) but not health-checked |
| chatomon.W005   | the chat store's SQLite database opens its transactions DEFERRED    |

"More than one worker" is `CHATOMON["workers"]`, else the WEB_CONCURRENCY environment
variable (read by gunicorn and uvicorn), else 1.

W003: channels_redis' `RedisChannelLayer` waits for a socket's messages with a blocking
Redis read of `brpop_timeout` seconds (5); redis-py 8 gives every connection a default
`socket_timeout` of 5 s, so the client gives up first, every few seconds, on every socket.
chatomon's sockets survive that (`transports.layer` retries), but each retry reconnects and a
message popped as the client gave up is lost. Fixed by giving the layer's hosts a longer
`socket_timeout` (the README's CHANNEL_LAYERS does: 10 s), or None.

W004: a connection kept between requests (`CONN_MAX_AGE` other than 0) or lent by Django's
psycopg pool (`"OPTIONS": {"pool": ...}`) looks healthy to Django after the database closed
it while idle (a restart, a failover, an idle timeout), until a query fails on it. chatomon's
own paths replace such a connection (`chatomon.django.persistence.connections.released`:
the store, the chat views' checks, the WebSocket handshake), but every other read does
not: the console, the admin and the project's own views answer HTTP 500 on it, once per
dead connection. `CONN_HEALTH_CHECKS = True` makes Django check a connection before it
reuses one (one round trip per request).

W005: a transaction that reads before it writes (a mutation the assistant runs, in
`transaction.atomic`, usually reads its row first; `chat_cleanup`'s prune counts, then
deletes) starts DEFERRED on SQLite (its default): without a lock, upgraded to a writer at
its first write. When another connection is writing then, the upgrade fails at once with
"database is locked" (the busy `timeout` does not apply to it, since waiting could
deadlock): a confirmed change fails, or a turn ends `store_unavailable`.
`"OPTIONS": {"transaction_mode": "IMMEDIATE"}` (Django 5.1+) takes the write lock at
`BEGIN`, where SQLite does wait up to the busy timeout. In-memory databases are left out:
no deployment serves from one.

E010 is a validation error of `provider_profiles` or `planned` (with planned.enabled: every
role assigned to a known profile, all of them of one trust_group), with a hint of its own.
E011 and E012 run only with planned.enabled: what a planned turn builds at its start (each
role's provider, the catalog against the registry's schema index) is built once here, so a
mistake fails `manage.py check` instead of the first planned turn. The implicit profile
(no provider_profiles) is the legacy provider, checked by E003/E004/E006; a named profile's
missing SDK is E003 too. (E009, "planned turns are not available yet", went with the
arrival of planned turns; its id is not reused.)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.apps import AppConfig
from django.conf import settings as django_settings
from django.core.checks import CheckMessage, Error, Warning
from django.db import router
from django.utils.module_loading import import_string

from chatomon.data.errors import DataConfigurationError
from chatomon.django.settings import (
    ChatSettings,
    build_chat_settings,
    get_chat_settings,
    unallowed_confirmations,
)
from chatomon.errors import (
    ChatConfigurationError,
    ConfigurationError,
    OptionalDependencyError,
    ProviderDependencyError,
)
from chatomon.planned.catalog import load_manager_catalog
from chatomon.planned.config import REQUIRED_ROLES, ProviderProfile, validate_profile_provider
from chatomon.providers.registry import resolve_provider

__all__ = ["check_chat"]

IN_MEMORY_LAYER = "channels.layers.InMemoryChannelLayer"
LOCAL_MEMORY_CACHE = "django.core.cache.backends.locmem.LocMemCache"
ORBITAL_KEYS = ("atom.input[", "atom.output[")
PLANNED_KEYS = ("planned", "provider_profiles")
# Transaction modes that take SQLite's write lock at BEGIN, where the busy timeout applies.
WRITER_TRANSACTION_MODES = frozenset({"IMMEDIATE", "EXCLUSIVE"})


def check_chat(app_configs: Iterable[AppConfig] | None = None, **_: Any) -> list[CheckMessage]:
    """Every problem of settings.CHATOMON, when chat is enabled (registered by the app)."""
    try:
        raw = get_chat_settings()
    except ChatConfigurationError as error:
        return [_settings_error(error)]
    if not raw.get("enabled"):
        return []
    messages = _confirmation_errors(raw)
    settings = None
    try:
        settings = build_chat_settings(raw)
    except ChatConfigurationError as error:
        if error.key not in unallowed_confirmations(raw):
            messages.append(_settings_error(error))
    messages += _provider_errors(raw.get("provider"), raw.get("provider_config"))
    if settings is not None:
        messages += _permission_errors(settings.permission)
        messages += _registry_errors(settings)
        messages += _planned_errors(settings)
        messages += _deployment_warnings(settings)
        messages += _layer_timeout_warnings()
        messages += _connection_health_warnings()
        messages += _sqlite_transaction_warnings()
    return messages


def _settings_error(error: ChatConfigurationError) -> Error:
    if error.key and error.key.startswith(ORBITAL_KEYS):
        return Error(
            f"chat setting {error.key} is not a usable orbital: {error}",
            hint="Give an Orbital instance or class, a factory returning one, or the dotted "
            "path of one of these (e.g. 'chatomon.orbitals.PIIGuard').",
            id="chatomon.E007",
        )
    if error.key and error.key.split(".")[0] in PLANNED_KEYS:
        return Error(
            f"planned chat settings are invalid: {error}",
            hint="Correct CHATOMON['planned'] or CHATOMON['provider_profiles']: planned['roles'] "
            f"assigns each role ({', '.join(REQUIRED_ROLES)}) a profile of provider_profiles, "
            "all of one trust_group (omit provider_profiles to run every role on the legacy "
            "provider); limits are whole numbers of at least 1, timeouts seconds above 0.",
            id="chatomon.E010",
        )
    return Error(
        f"chat settings are invalid: {error}",
        hint="Correct settings.CHATOMON; chatomon.django.settings.DEFAULTS lists every key "
        "with its default.",
        id="chatomon.E002",
    )


def _confirmation_errors(raw: Mapping[str, Any]) -> list[CheckMessage]:
    return [
        Error(
            f"{key} names mutations missing from allowed_mutations: {', '.join(names)}",
            hint=f"Add {', '.join(names)} to CHATOMON['allowed_mutations'] or remove them "
            f"from CHATOMON[{key!r}]: only allowed mutations can need an approval.",
            id="chatomon.E005",
        )
        for key, names in unallowed_confirmations(raw).items()
    ]


def _planned_errors(settings: ChatSettings) -> list[CheckMessage]:
    """E011/E003/E004 for each role's named profile provider, E012 for the catalog."""
    planned = settings.planned
    if not planned.enabled:
        return []
    messages: list[CheckMessage] = []
    if settings.provider_profiles:  # without them, the roles use the legacy provider
        for name in sorted(set(planned.roles.values())):
            entry = settings.provider_profiles[name]
            profile = ProviderProfile(
                name, entry.provider, entry.provider_config, entry.trust_group
            )
            messages += _profile_errors(profile)
    if planned.catalog is not None:
        messages += _catalog_errors(settings, planned.catalog)
    return messages


def _profile_errors(profile: ProviderProfile) -> list[CheckMessage]:
    try:
        validate_profile_provider(profile)
    except OptionalDependencyError as error:
        return [_dependency_error(profile.provider, error)]
    except ImportError as error:  # the provider module's own imports failed
        return [_import_error(profile.provider, error)]
    except Exception as error:  # noqa: BLE001 - a profile that cannot build is E011, whatever the cause
        problem = _described(error)
        return [
            Error(
                f"planned profile {profile.name!r} cannot build its provider: {problem}",
                hint=f"Correct CHATOMON['provider_profiles'][{profile.name!r}]: a provider short "
                "name or the dotted path of a provider class with from_config(config), and a "
                "provider_config that provider accepts (it never inherits the top-level one).",
                id="chatomon.E011",
            )
        ]
    return []


def _described(error: Exception) -> str:
    """A configuration error's own message; any other error's type too (what failed)."""
    if isinstance(error, ChatConfigurationError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _catalog_errors(settings: ChatSettings, source: Any) -> list[CheckMessage]:
    try:
        index = settings.chat_registry().schema_index()
    except (ChatConfigurationError, DataConfigurationError):
        return []  # reported by _registry_errors
    try:
        load_manager_catalog(source, index)
    except Exception as error:  # noqa: BLE001 - a catalog callable may fail any way: E012
        problem = _described(error)
        return [
            Error(
                f"planned.catalog does not load: {problem}",
                hint="Key CHATOMON['planned']['catalog'] by chat-exposed manager names, each "
                "entry with domain, aliases, use_when and distinguish_from only; a callable "
                "or dotted path must return such a mapping.",
                id="chatomon.E012",
            )
        ]
    return []


def _permission_errors(check: Callable[..., Any] | None) -> list[CheckMessage]:
    """E002 for a `permission` callable that cannot answer True or False for (user, scope).

    The reference denies on False only, so a check answering None would let everyone in
    or, read as falsy, deny silently: a mistake to report now. Startup has no user to
    call it with, so it reads the signature: the callable must take (user, scope) and
    must not be declared to return None.
    """
    if check is None:
        return []
    try:
        signature = inspect.signature(check)
    except (TypeError, ValueError):
        return []  # no readable signature (a builtin): nothing to tell before a request
    try:
        signature.bind(None, None)
    except TypeError:
        problem = "it cannot be called with the two arguments (user, scope)"
    else:
        if signature.return_annotation not in (None, type(None), "None"):
            return []
        problem = "it is declared to return None; return True to allow, False to deny"
    name = getattr(check, "__qualname__", type(check).__qualname__)
    label = f"{getattr(check, '__module__', None) or '?'}.{name}"
    error = ChatConfigurationError.invalid_permission(label, problem)
    return [
        Error(
            f"chat settings are invalid: {error}",
            hint="Point CHATOMON['permission'] at a callable def allow(user, scope) -> bool "
            "that returns False to deny, True to allow.",
            id="chatomon.E002",
        )
    ]


def _provider_errors(path: Any, config: Any) -> list[CheckMessage]:
    if not isinstance(path, str):
        return []  # validation reports the wrong type
    try:
        cls, implied = resolve_provider(path)
    except ProviderDependencyError as error:
        return [_dependency_error(path, error)]
    except ConfigurationError as error:
        return [
            Error(
                f"chat provider {path!r} names no provider: {error}",
                hint="Use a short name (local, openai, anthropic, ollama, gemini) or the "
                "dotted path of a provider class.",
                id="chatomon.E006",
            )
        ]
    except Exception as error:  # noqa: BLE001 - any failure importing the module is E004
        return [_import_error(path, error)]
    if not isinstance(config, Mapping):
        return []  # validation reports the wrong type
    return _configuration_errors(path, cls, {**implied, **config})


def _configuration_errors(
    path: str, cls: type[Any], config: Mapping[str, Any]
) -> list[CheckMessage]:
    check = getattr(cls, "check_configuration", None)
    if check is None:
        return []
    try:
        check(config)
    except ImportError as error:
        return [_dependency_error(path, error, getattr(cls, "required_extra", None))]
    except ConfigurationError as error:
        return [
            Error(
                f"provider_config is invalid for {path!r}: {error}",
                hint="Correct CHATOMON['provider_config'] (the provider's documentation "
                "lists its keys).",
                id="chatomon.E002",
            )
        ]
    except Exception as error:  # noqa: BLE001 - a provider check failing otherwise is E004
        return [_import_error(path, error)]
    return []


def _dependency_error(path: str, error: ImportError, extra: str | None = None) -> Error:
    extra = getattr(error, "extra", None) or extra
    install = f'pip install "chatomon[{extra}]"' if extra else f"pip install {error.name or ''}"
    return Error(
        f"chat provider {path!r} needs a package that is not installed: {error}",
        hint=f"Install the provider's optional dependency: {install.strip()}",
        id="chatomon.E003",
    )


def _import_error(path: str, error: BaseException) -> Error:
    return Error(
        f"chat provider {path!r} could not be imported: {type(error).__name__}: {error}",
        hint="Importing the provider module failed inside the module itself; run "
        f'`python -c "import {path.rpartition(".")[0] or path}"` to see the traceback.',
        id="chatomon.E004",
    )


def _registry_errors(settings: ChatSettings) -> list[CheckMessage]:
    try:
        exposed = settings.chat_registry().schema_index().names
    except ChatConfigurationError as error:
        return [_settings_error(error)]
    except DataConfigurationError as error:
        return [
            Error(
                f"chat managers or mutations are declared wrong: {error}",
                hint="Fix the declarations in your apps' chat.py modules.",
                id="chatomon.E008",
            )
        ]
    if not exposed:
        return [
            Error(
                str(ChatConfigurationError.missing_graphql_schema()),
                hint="Set chat_exposed = True on a Manager registered in an app's chat.py, "
                "or point CHATOMON['registry'] at a registry that has one.",
                id="chatomon.E001",
            )
        ]
    return []


def _deployment_warnings(settings: ChatSettings) -> list[CheckMessage]:
    workers = settings.worker_count()
    if workers < 2:
        return []
    warnings: list[CheckMessage] = []
    layers = getattr(django_settings, "CHANNEL_LAYERS", {}) or {}
    if layers.get("default", {}).get("BACKEND") == IN_MEMORY_LAYER:
        warnings.append(
            Warning(
                f"the in-memory channel layer cannot reach across the {workers} workers "
                "serving chat: approvals and resumed turns miss sockets of other workers",
                hint="Use channels_redis.core.RedisChannelLayer in CHANNEL_LAYERS, or set "
                "CHATOMON['workers'] = 1 (WEB_CONCURRENCY) if only one process serves chat.",
                id="chatomon.W001",
            )
        )
    caches = getattr(django_settings, "CACHES", {}) or {}
    if caches.get("default", {}).get("BACKEND") == LOCAL_MEMORY_CACHE:
        warnings.append(
            Warning(
                f"the local-memory cache is per process: each of the {workers} workers "
                "counts its own rate limits",
                hint="Use django.core.cache.backends.redis.RedisCache for the default cache.",
                id="chatomon.W002",
            )
        )
    return warnings


def _layer_timeout_warnings() -> list[CheckMessage]:
    """W003 for each Redis channel layer whose client would time out its blocking receive."""
    warnings: list[CheckMessage] = []
    layers = getattr(django_settings, "CHANNEL_LAYERS", {}) or {}
    for alias, layer in layers.items():
        blocking = _blocking_receive_seconds(layer.get("BACKEND"))
        if blocking is None:
            continue
        hosts = (layer.get("CONFIG") or {}).get("hosts") or ["redis://localhost:6379"]
        timeouts = [_socket_timeout(host) for host in hosts]
        short = [t for t in timeouts if t is not None and t <= blocking]
        if short:
            warnings.append(
                Warning(
                    f"CHANNEL_LAYERS[{alias!r}]: the Redis client's socket_timeout "
                    f"({min(short):g} s) is not longer than the layer's blocking receive "
                    f"({blocking:g} s): every socket's receive times out and reconnects, "
                    "and a message arriving then can be lost",
                    hint="Give each host as a dict with a longer socket_timeout, e.g. "
                    '"hosts": [{"address": "redis://...", "socket_timeout": 10}] '
                    "(redis-py 8 defaults to 5 s).",
                    id="chatomon.W003",
                )
            )
    return warnings


def _connection_health_warnings() -> list[CheckMessage]:
    """W004 for each PostgreSQL database whose kept or pooled connections go unchecked."""
    warnings: list[CheckMessage] = []
    databases = getattr(django_settings, "DATABASES", {}) or {}
    for alias, database in databases.items():
        if not isinstance(database, Mapping) or database.get("CONN_HEALTH_CHECKS"):
            continue
        kept = database.get("CONN_MAX_AGE", 0) != 0
        pooled = bool((database.get("OPTIONS") or {}).get("pool"))
        if not (kept or pooled) or not _is_postgresql(database.get("ENGINE")):
            continue
        how = "pooled" if pooled else f"kept for CONN_MAX_AGE = {database.get('CONN_MAX_AGE')}"
        warnings.append(
            Warning(
                f"DATABASES[{alias!r}]: PostgreSQL connections are {how} without "
                "CONN_HEALTH_CHECKS: after the database closes an idle one (a restart, a "
                "failover, an idle timeout), the next request that reads on it fails",
                hint=f"Set DATABASES[{alias!r}]['CONN_HEALTH_CHECKS'] = True. chatomon's chat "
                "replaces such a connection itself (the store, the chat views, the WebSocket "
                "handshake); the console, the admin and the project's other views answer "
                "HTTP 500 on it.",
                id="chatomon.W004",
            )
        )
    return warnings


def _sqlite_transaction_warnings() -> list[CheckMessage]:
    """W005 for the chat store's SQLite file databases whose transactions start DEFERRED."""
    from chatomon.django import models  # noqa: PLC0415 - the models load once apps are ready

    store_models = (models.Conversation, models.Turn, models.PendingConfirmation)
    aliases = sorted({router.db_for_write(model) for model in store_models})
    databases = getattr(django_settings, "DATABASES", {}) or {}
    warnings: list[CheckMessage] = []
    for alias in aliases:
        database = databases.get(alias)
        if not isinstance(database, Mapping) or not _is_sqlite(database.get("ENGINE")):
            continue
        if _in_memory(database.get("NAME")):
            continue
        mode = (database.get("OPTIONS") or {}).get("transaction_mode")
        if isinstance(mode, str) and mode.upper() in WRITER_TRANSACTION_MODES:
            continue
        how = "transaction_mode not set" if mode is None else f"transaction_mode {mode!r}"
        warnings.append(
            Warning(
                f"DATABASES[{alias!r}]: the chat store's SQLite transactions start DEFERRED "
                f"({how}): one that reads before it writes (a mutation the assistant runs, "
                "chat_cleanup's prune) fails at once with 'database is locked' when another "
                "connection writes (the busy timeout does not apply to a read transaction's "
                "upgrade)",
                hint=f"Set DATABASES[{alias!r}]['OPTIONS']['transaction_mode'] = 'IMMEDIATE': "
                "each transaction then takes the write lock at BEGIN, waiting up to the "
                "OPTIONS 'timeout' (5 s by default) for it.",
                id="chatomon.W005",
            )
        )
    return warnings


def _in_memory(name: Any) -> bool:
    """Whether a SQLite NAME is an in-memory database (as set, or as the test runner names it)."""
    text = str(name or ":memory:")
    return text == ":memory:" or "mode=memory" in text


def _is_postgresql(engine: Any) -> bool:
    """Whether the backend at `engine` (a DATABASES ENGINE) is PostgreSQL's, or one built on it."""
    return _is_vendor(engine, "postgresql", (".postgresql", ".postgis"))


def _is_sqlite(engine: Any) -> bool:
    """Whether the backend at `engine` (a DATABASES ENGINE) is SQLite's, or one built on it."""
    return _is_vendor(engine, "sqlite", (".sqlite3", ".spatialite"))


def _is_vendor(engine: Any, vendor: str, suffixes: tuple[str, ...]) -> bool:
    """Whether the backend at `engine` (a DATABASES ENGINE) is of `vendor`.

    Asked of its `base.DatabaseWrapper`, the class Django loads from every ENGINE; by the
    name's `suffixes` when it cannot be loaded here (no driver, no GDAL: Django reports
    that itself).
    """
    if not isinstance(engine, str):
        return False
    try:
        wrapper = import_string(f"{engine}.base.DatabaseWrapper")
    except Exception:  # noqa: BLE001 - ImportError, or ImproperlyConfigured from its set-up
        return engine.endswith(suffixes)
    return getattr(wrapper, "vendor", None) == vendor


def _blocking_receive_seconds(backend: Any) -> float | None:
    """The blocking read of a channels_redis-style layer (`brpop_timeout`), else None."""
    if not isinstance(backend, str):
        return None
    try:
        layer_class = import_string(backend)
    except ImportError:
        return None  # Channels reports a layer it cannot import
    seconds = getattr(layer_class, "brpop_timeout", None)
    return float(seconds) if isinstance(seconds, int | float) else None


def _socket_timeout(host: Any) -> float | None:
    """The socket_timeout a channels_redis host entry gives its connections (None: none).

    A value that is not a number is None too: the Redis client refuses it when it
    connects, and a check must not fail on what it cannot read.
    """
    if isinstance(host, Mapping):
        if "socket_timeout" in host:
            return _seconds(host["socket_timeout"])
        address = host.get("address")
    elif isinstance(host, str | bytes):
        address = host.decode() if isinstance(host, bytes) else host
    else:
        address = None  # a (host, port) pair: the client's defaults
    if isinstance(address, str):
        query = parse_qs(urlsplit(address).query)
        if query.get("socket_timeout"):
            return _seconds(query["socket_timeout"][0])
    return _client_default_socket_timeout()


def _seconds(value: Any) -> float | None:
    """`value` as a number of seconds; None when it is None or not a number."""
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _client_default_socket_timeout() -> float | None:
    """redis-py's default socket_timeout for new connections (None before redis-py 8)."""
    try:
        from redis.asyncio import Connection  # noqa: PLC0415 - optional: channels_redis's
    except ImportError:
        return None
    for cls in Connection.__mro__:  # the base class that takes socket_timeout declares it
        parameter = inspect.signature(vars(cls).get("__init__", object)).parameters.get(
            "socket_timeout"
        )
        if parameter is not None:
            default = parameter.default
            return float(default) if isinstance(default, int | float) else None
    return None
