"""The transport tests' fixtures (`chat_project`, `close_worker_connections`), offered here once.

They only apply where a test asks for them (`pytest.mark.usefixtures`); every test here
ends by stopping the turns it left running detached (`stop_detached_turns`).
"""

from collections.abc import AsyncIterator

import pytest

from chatomon.django.transports.relay import relays
from tests.asgi_app.fixtures import chat_project, close_worker_connections

__all__ = ["chat_project", "close_worker_connections", "stop_detached_turns"]


@pytest.fixture(autouse=True)
async def stop_detached_turns() -> AsyncIterator[None]:
    """Cancel and await the turns a test left running detached (before its database goes)."""
    yield
    await relays().aclose()
