"""The machine's services a test needs: PostgreSQL (DATABASE_URL) and Redis (REDIS_URL).

`.ci/run` sets both where the services answer, so that these tests run there; elsewhere
they skip with the reason.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["ON_POSTGRES", "needs_postgres", "needs_postgres_and_redis"]

ON_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
"""Whether the suite runs on PostgreSQL (else on the embedded SQLite)."""

needs_postgres = pytest.mark.skipif(not ON_POSTGRES, reason="needs DATABASE_URL (PostgreSQL)")
"""Skip unless DATABASE_URL names a PostgreSQL database."""

needs_postgres_and_redis = pytest.mark.skipif(
    not ON_POSTGRES or not os.environ.get("REDIS_URL"),
    reason="needs DATABASE_URL (PostgreSQL) and REDIS_URL",
)
"""Skip unless DATABASE_URL names PostgreSQL and REDIS_URL is set."""
