"""Settings of the reliability suite's server processes: the test project's, with the
database connections a deployment may choose, set by the environment.

CHATOMON_TEST_CONNECTIONS:
- "persistent": `CONN_MAX_AGE = 600`, no pool, no `CONN_HEALTH_CHECKS` (Django's
  default): each worker thread keeps its connection between store calls, unchecked;
- "pooled": Django's psycopg pool without `CONN_HEALTH_CHECKS` (lent unchecked), waiting
  at most 2 s for a connection (psycopg_pool's default is 30 s);
- unset: as `tests.asgi_app.settings` (DATABASE_URL's own).

Neither checks a connection before use: the hard case for a database that closed one,
unless CHATOMON_TEST_HEALTH_CHECKS=1 turns Django's `CONN_HEALTH_CHECKS` on.
CHATOMON_TEST_PROVIDER: the dotted path of the provider, when not the rules provider.
"""

from __future__ import annotations

import os

from tests.asgi_app import project
from tests.asgi_app.settings import *  # noqa: F403
from tests.asgi_app.settings import DATABASES

_connections = os.environ.get("CHATOMON_TEST_CONNECTIONS", "")
_database = dict(DATABASES["default"])
_database.pop("OPTIONS", None)
_database["CONN_HEALTH_CHECKS"] = os.environ.get("CHATOMON_TEST_HEALTH_CHECKS") == "1"
if _connections == "persistent":
    _database["CONN_MAX_AGE"] = 600
    DATABASES = {"default": _database}
elif _connections == "pooled":
    _database["OPTIONS"] = {"pool": {"min_size": 2, "max_size": 8, "timeout": 2}}
    DATABASES = {"default": _database}

if os.environ.get("CHATOMON_TEST_PROVIDER"):
    CHATOMON = project.chatomon(
        provider=os.environ["CHATOMON_TEST_PROVIDER"],
        rate_limit={"requests": 100000, "window_seconds": 3600},
    )
