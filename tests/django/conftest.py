"""The transport tests' fixtures (`chat_project`, `close_worker_connections`), offered here once.

They only apply where a test asks for them (`pytest.mark.usefixtures`).
"""

from tests.asgi_app.fixtures import chat_project, close_worker_connections

__all__ = ["chat_project", "close_worker_connections"]
