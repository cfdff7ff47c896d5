"""The demo's chat provider at start-up: what stops it answering, and warming the local model.

`provider_problem` names what would make every chat turn fail (a missing model or
runtime, a missing API key, a server that does not answer) in one sentence with its fix.
`load_model` loads the embedded model (2-4 s), then `start_warmup` reads the chat's first
prompt (system prompt and tools, the same for every first turn) into llama.cpp's cache in
a background thread, logging its progress, so that the first answer does not pay for it.
`read_prompt` does the same in the foreground: `python -m chatomon.demo warm`, which
`make demo` runs once per machine and prompt, so that the model's saved state of the
prompt is there when the server starts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from chatomon.errors import ChatomonError
from chatomon.providers.base import Message, ToolDefinition

__all__ = [
    "PROGRESS_SECONDS",
    "load_model",
    "provider_problem",
    "read_prompt",
    "start_warmup",
    "warm_request",
]

logger = logging.getLogger("chatomon.demo")

PROGRESS_SECONDS = 10.0
"""How often the warm-up says it is still going."""
CONNECT_TIMEOUT_SECONDS = 2.0
KEY_VARIABLES: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
"""The environment variables each vendor's SDK reads its key from."""
DEFAULT_PORTS = {"http": 80, "https": 443}


def provider_problem(provider: Any) -> str | None:
    """Why `provider` cannot answer, with the fix; None when nothing is known to be wrong.

    Checks without sending a request: the local model's runtime and file, a vendor's API
    key (setting or environment), and that a configured server (`base_url`) accepts a
    connection.
    """
    from chatomon.providers.local import LocalProvider  # noqa: PLC0415 - imports nothing heavy

    if isinstance(provider, LocalProvider):
        try:
            LocalProvider.check_configuration(provider.provider_config)
        except (ChatomonError, ImportError) as error:
            return f"the local model cannot run: {error}"
        return None
    settings: Mapping[str, Any] = getattr(provider, "settings", {})
    name = str(getattr(provider, "name", type(provider).__name__))
    variables = KEY_VARIABLES.get(name)
    keyless = variables and "api_key" in settings and not settings["api_key"]
    if keyless and not any(os.environ.get(variable) for variable in variables or ()):
        return (
            f"{name} has no API key: set {' or '.join(variables or ())} (or provider_config "
            "api_key), or unset CHATOMON_PROVIDER to use the embedded model"
        )
    base_url = settings.get("base_url")
    if isinstance(base_url, str) and base_url:
        return _unreachable(name, base_url)
    return None


def _unreachable(name: str, base_url: str) -> str | None:
    parts = urlsplit(base_url)
    host = parts.hostname
    if host is None:
        return None  # the provider's own checks judge the URL
    port = parts.port or DEFAULT_PORTS.get(parts.scheme, 80)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS):
            return None
    except OSError as error:
        return (
            f"{name} server {base_url} cannot be reached ({error.strerror or error}): start "
            "it, or correct base_url"
        )


def warm_request(service: Any) -> tuple[list[Message], list[ToolDefinition]]:
    """What a first chat turn of `service` sends its provider, up to a stand-in question."""
    from chatomon.chat.prompts import system_prompt  # noqa: PLC0415 - needs Django set up

    system = Message.system(system_prompt(service.system_prompt, (), service.toolset.catalogue))
    return [system, Message.user("Hello")], list(service.toolset.definitions)


def _rss_gb() -> float:
    # ru_maxrss is in KiB on Linux: the peak, which for a loaded model is its size.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def load_model(provider: Any) -> None:
    """Load the local model now, in the foreground, logging what it took.

    In the foreground because llama.cpp points the process' stdout and stderr at
    /dev/null while it loads a model: a line another thread logged then (the server's
    "serving on ...") would be lost.
    """
    started = time.monotonic()
    logger.info("local model: loading %s", provider.model_label)
    asyncio.run(provider.warm())
    logger.info(
        "local model: loaded in %.1f s (process memory %.1f GB)",
        time.monotonic() - started,
        _rss_gb(),
    )


def read_prompt(
    provider: Any,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition] = (),
    *,
    progress_seconds: float = PROGRESS_SECONDS,
) -> bool:
    """Read a first turn's prompt into the loaded model's cache; whether it worked.

    The local model also saves what it read (`saved_prompts`), so a later start loads it
    at once. Logs a line every `progress_seconds` while it lasts, and when it is done
    (or, as a warning, why it failed).
    """
    done = threading.Event()
    started = time.monotonic()

    def elapsed() -> float:
        return time.monotonic() - started

    def ticker() -> None:
        while not done.wait(progress_seconds):
            logger.info("local model: still reading the chat prompt (%.0f s)", elapsed())

    threading.Thread(target=ticker, name="chatomon-demo-warmup-progress", daemon=True).start()
    try:
        tokens = asyncio.run(provider.warm(messages, tools))
    except Exception as error:  # noqa: BLE001 - a failed warm-up is a warning, not a crash
        logger.warning(
            "local model: warm-up failed, chats will fail: %s: %s", type(error).__name__, error
        )
        return False
    finally:
        done.set()
    logger.info("local model: ready, the chat prompt (%d tokens) read in %.1f s", tokens, elapsed())
    return True


def start_warmup(
    provider: Any,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition] = (),
    *,
    progress_seconds: float = PROGRESS_SECONDS,
) -> threading.Thread:
    """`read_prompt` in a daemon thread, while the server starts; returns the started thread."""
    logger.info("local model: reading the chat prompt in the background")
    thread = threading.Thread(
        target=read_prompt,
        args=(provider, messages, tools),
        kwargs={"progress_seconds": progress_seconds},
        name="chatomon-demo-warmup",
        daemon=True,
    )
    thread.start()
    return thread
