"""What the database itself costs on this machine, beside the transport benchmark's figures.

A chat turn commits its writes (a plain one, at least twice: opening the turn, closing it),
and the store releases its connection after each call. What a commit and a reconnection
cost depends on the disk and on what else runs, not on chatomon, so the benchmark prints
them with its figures: median milliseconds of `REPEATS`, on a scratch table of the
benchmark's database, straight through the driver (no Django):

- `round_trip_ms`: `SELECT 1` on an open connection;
- `commit_ms`: one INSERT committed on an open connection (on PostgreSQL a WAL flush with
  the default `synchronous_commit`; on SQLite in WAL mode with `synchronous=NORMAL`, no
  sync at all);
- `reopen_write_ms` (SQLite): connect, the settings' PRAGMAs, one INSERT committed, close,
  while no other connection is open: the last connection to close checkpoints the WAL
  into the database file and syncs it, which is what a store call that releases its
  connection pays when nothing else holds one.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

REPEATS = 200
SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")
"""The PRAGMAs tests.django_settings gives a SQLite file (its `init_command`)."""


def median_ms(action: Callable[[], Any]) -> float:
    """The median milliseconds of REPEATS runs of `action`."""
    samples = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 3)


def database_costs(database_url: str) -> dict[str, float | None]:
    """The costs of the module docstring on the database of `database_url`."""
    if database_url.startswith("sqlite"):
        return sqlite_costs(urlsplit(database_url).path)
    return postgres_costs(database_url)


def sqlite_costs(path: str) -> dict[str, float | None]:
    """The costs on a SQLite file (WAL, synchronous=NORMAL)."""

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(path)
        for pragma in SQLITE_PRAGMAS:
            connection.execute(pragma)
        return connection

    def reopen_write() -> None:
        connection = connect()
        connection.execute("INSERT INTO benchmark_scratch VALUES (1)")
        connection.commit()
        connection.close()

    kept = connect()
    try:
        kept.execute("CREATE TABLE IF NOT EXISTS benchmark_scratch (x integer)")
        kept.commit()
        round_trip = median_ms(lambda: kept.execute("SELECT 1").fetchone())

        def commit() -> None:
            kept.execute("INSERT INTO benchmark_scratch VALUES (1)")
            kept.commit()

        committed = median_ms(commit)
    finally:
        kept.close()
    reopened = median_ms(reopen_write)
    with connect() as connection:
        connection.execute("DROP TABLE benchmark_scratch")
    return {"round_trip_ms": round_trip, "commit_ms": committed, "reopen_write_ms": reopened}


def postgres_costs(database_url: str) -> dict[str, float | None]:
    """The costs on a PostgreSQL database (its server's own `synchronous_commit`)."""
    import psycopg  # noqa: PLC0415

    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS benchmark_scratch (x integer)")
        round_trip = median_ms(lambda: connection.execute("SELECT 1").fetchone())
        committed = median_ms(
            lambda: connection.execute("INSERT INTO benchmark_scratch VALUES (1)")
        )
        connection.execute("DROP TABLE benchmark_scratch")
    return {"round_trip_ms": round_trip, "commit_ms": committed, "reopen_write_ms": None}
