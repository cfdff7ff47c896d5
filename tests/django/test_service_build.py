"""The process's chat service is built once, even when its first callers come at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from chatomon.django.persistence.connections import in_tool_worker
from chatomon.django.service import chat_service
from tests.asgi_app.fixtures import configure
from tests.asgi_app.providers import RulesProvider

pytestmark = pytest.mark.django_db


class CountedProvider(RulesProvider):
    """`RulesProvider` that counts its instances and is slow to build, like a model load."""

    built: ClassVar[list[int]] = []
    built_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        time.sleep(0.05)  # a window in which every other first caller arrives
        with self.built_lock:
            self.built.append(1)
        super().__init__(config, **options)


def test_concurrent_first_calls_build_the_service_once(settings: Any) -> None:
    CountedProvider.built.clear()
    configure(settings, provider=f"{__name__}.CountedProvider")  # a fresh settings object
    threads = 8
    start = threading.Barrier(threads)
    services: list[Any] = []

    def first_call() -> None:
        start.wait()
        services.append(chat_service())

    workers = [threading.Thread(target=first_call) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert len(services) == threads
    assert len(CountedProvider.built) == 1
    assert all(service is services[0] for service in services)
    assert chat_service() is services[0]  # kept for these settings


def test_changed_settings_build_a_new_service(settings: Any) -> None:
    CountedProvider.built.clear()
    configure(settings, provider=f"{__name__}.CountedProvider")
    first = chat_service()
    configure(settings, provider=f"{__name__}.CountedProvider")
    assert chat_service() is not first
    assert len(CountedProvider.built) == 2


def test_the_services_tools_run_their_database_work_as_units_of_their_own(settings: Any) -> None:
    # Not on the request's thread (a new one per request under Django's ASGIHandler: a new
    # SQLite connection per read), but on threads of their own, released around it.
    configure(settings)
    assert chat_service().toolset.run_blocking is in_tool_worker
