"""Settings of the transport benchmark: the test project's, with PostgreSQL's connection pool.

`tests.asgi_app.settings` builds DATABASES from DATABASE_URL without a pool
(`tests.django_settings.database_from_url`). A deployment on PostgreSQL under Django's
`ASGIHandler` wants one: the handler runs each request's sync work on a thread of its own,
so without a pool every request connects anew (CONN_MAX_AGE cannot help a thread that
ends with its request), and the pool also caps the sessions one server process holds,
which is what lets the load pass under PostgreSQL's default `max_connections=100`. So the
benchmark adds Django's pool (`OPTIONS["pool"]`, psycopg_pool) when psycopg_pool is
importable; without it, PostgreSQL runs unpooled and the benchmark says so.
"""

from __future__ import annotations

import importlib.util

from tests.asgi_app.settings import *  # noqa: F403
from tests.asgi_app.settings import DATABASES

POOL_OPTIONS = {"min_size": 4, "max_size": 20, "timeout": 60}
"""The pool of one server process: 20 sessions at most, a fifth of PostgreSQL's default
`max_connections`, so that several processes (or the other test runs on the same server)
fit beside it; a request waits up to 60 s for a free session before it fails."""

DATABASE_POOLED = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and (
    importlib.util.find_spec("psycopg_pool") is not None
)
"""Whether the default database runs on Django's PostgreSQL connection pool."""

if DATABASE_POOLED:
    DATABASES = {"default": {**DATABASES["default"], "OPTIONS": {"pool": POOL_OPTIONS}}}
