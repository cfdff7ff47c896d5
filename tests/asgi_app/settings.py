"""Settings of the test project's server processes: tests.django_settings plus chat.

Environment: DATABASE_URL (see tests.django_settings), REDIS_URL (Redis cache and
channels_redis; unset: local-memory cache and the in-memory channel layer),
CHATOMON_TEST_PREFIX (cache and channel-layer key prefix, so runs never share state),
CHATOMON_TEST_RATE_REQUESTS (the request budget), CHATOMON_TEST_PROVIDER_DELAY (seconds
the rules provider waits before each completion), CHATOMON_TEST_LAYER_SOCKET_TIMEOUT
(the channel layer's Redis socket_timeout: unset, the README's 10 s; "default", none given,
so redis-py's own default applies: 5 s in redis-py 8, the set-up of check chatomon.W003).
"""

from __future__ import annotations

import os

from tests.asgi_app import project
from tests.django_settings import *  # noqa: F403

_prefix = os.environ.get("CHATOMON_TEST_PREFIX", "chatomon-tests")
_redis = os.environ.get("REDIS_URL", "")

MIDDLEWARE = project.MIDDLEWARE
SESSION_ENGINE = project.SESSION_ENGINE
ROOT_URLCONF = project.ROOT_URLCONF
ALLOWED_HOSTS = project.ALLOWED_HOSTS
ASGI_APPLICATION = "tests.asgi_app.asgi.application"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CHATOMON = project.chatomon(
    provider_config={"delay_seconds": float(os.environ.get("CHATOMON_TEST_PROVIDER_DELAY", "0"))},
    rate_limit={
        "requests": int(os.environ.get("CHATOMON_TEST_RATE_REQUESTS", "100000")),
        "window_seconds": 3600,
    },
)
_layer_timeout = os.environ.get("CHATOMON_TEST_LAYER_SOCKET_TIMEOUT", "10")
_layer_host: str | dict[str, object] = _redis
if _layer_timeout != "default":
    # Longer than the layer's 5 s blocking receive (README: the Redis channel layer).
    _layer_host = {"address": _redis, "socket_timeout": float(_layer_timeout)}
if _redis:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _redis,
            "KEY_PREFIX": _prefix,
        }
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [_layer_host], "prefix": _prefix, "capacity": 1000},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {
        "django.request": {"handlers": ["stderr"], "level": "ERROR"},
        "chatomon.django.transports": {"handlers": ["stderr"], "level": "WARNING"},
    },
}
"""Server errors go to the process's stderr, which the tests' output shows."""
