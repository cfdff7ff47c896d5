"""Translation between chatomon's neutral history and Ollama's /api/chat format (private).

Plain dicts only: the `ollama` SDK validates them into its own types, so nothing here
imports it (the SDK modules are passed in). Also the `base_url` check, the tool-call ids,
the `retry-after` parsing and the mapping of SDK and transport errors to ProviderErrors.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderError,
    ProviderProtocolError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from chatomon.providers.base import Message
from chatomon.providers.shared_format import plain

__all__ = [
    "CallIds",
    "base_url_problem",
    "status_error",
    "stream_error",
    "to_ollama_messages",
]

_LABEL = "ollama"
_CONTEXT_WORDS = re.compile(r"context[ _-]?(length|size|window)|exceed_context_size", re.I)
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_ALLOWED = "http://host:port or https://host[:port], with an optional path"


def base_url_problem(value: object) -> tuple[str, object] | None:
    """Why `value` is not a usable Ollama base URL (message, value to show), or None.

    Allowed: an http or https URL with a host, an optional port (1-65535) and an optional
    path (for a reverse proxy). Refused: other schemes, a missing scheme or host, a bad
    port, credentials in the URL (they would end up in logs), a query or a fragment
    (the SDK would silently drop them). Messages never repeat embedded credentials.
    """
    if not isinstance(value, str):
        return _problem(f"must be a URL string such as 'http://127.0.0.1:11434', got {value!r}")
    if not value:
        return _problem("'' is empty; e.g. 'http://127.0.0.1:11434'", value)
    if any(ch.isspace() for ch in value):
        return _problem(f"{value!r} contains whitespace; allowed: {_ALLOWED}", value)
    if "://" not in value:
        return _problem(
            f"{value!r} has no scheme; write it as 'http://{value}' (allowed: {_ALLOWED})", value
        )
    scheme, _, rest = value.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "@" in netloc:
        userinfo = netloc.rpartition("@")[0]
        shown = f"{scheme}://***@{rest[len(userinfo) + 1 :]}"
        return _problem(
            f"{shown!r} embeds credentials; remove them (for ollama.com set OLLAMA_API_KEY)",
            shown,
        )
    if scheme.lower() not in ("http", "https"):
        return _problem(f"{value!r} uses scheme {scheme!r}; allowed: {_ALLOWED}", value)
    if "?" in rest:
        return _problem(f"{value!r} has a query string; allowed: {_ALLOWED}", value)
    if "#" in rest:
        return _problem(f"{value!r} has a fragment; allowed: {_ALLOWED}", value)
    host, port = _host_and_port(netloc)
    if not host:
        return _problem(f"{value!r} has no host; e.g. 'http://127.0.0.1:11434'", value)
    if not _valid_host(host):
        return _problem(f"{value!r} has an invalid host {host!r}; allowed: {_ALLOWED}", value)
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        return _problem(f"{value!r} has port {port!r}; a port is a number from 1 to 65535", value)
    return None


def _problem(message: str, value: object = None) -> tuple[str, object]:
    return f"base_url {message}", value


def _host_and_port(netloc: str) -> tuple[str, str | None]:
    if netloc.startswith("["):  # an IPv6 literal: [::1]:11434
        host, _, after = netloc.partition("]")
        return host + "]", (after[1:] if after.startswith(":") else None)
    host, colon, port = netloc.partition(":")
    return host, (port if colon else None)


def _valid_host(host: str) -> bool:
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return False
        return host.endswith("]")
    return _HOST.fullmatch(host) is not None


def to_ollama_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The history as /api/chat messages.

    System messages stay in place (Ollama takes them anywhere in `messages`). An
    assistant's tool calls become `tool_calls: [{"function": {"name", "arguments"}}]` with
    the arguments as an object. Ollama has no call ids: a tool result names its tool in
    `tool_name` and results follow their calls in order, which the neutral history keeps.
    """
    names = {call.id: call.name for message in messages for call in message.tool_calls}
    translated: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            item["tool_calls"] = [
                {"function": {"name": call.name, "arguments": plain(call.args)}}
                for call in message.tool_calls
            ]
        if message.role == "tool":
            item["tool_name"] = message.tool_name or names.get(message.tool_call_id or "", "")
        translated.append(item)
    return translated


class CallIds:
    """Deterministic tool-call ids for one completion: `call_1`, `call_2`, ...

    Ollama sends no call ids. Numbering skips every id already in the history, so that a
    later round's calls never collide with an earlier round's and the same history always
    yields the same ids.
    """

    def __init__(self, history: Sequence[Message]) -> None:
        self._taken = {call.id for message in history for call in message.tool_calls}
        self._taken |= {m.tool_call_id for m in history if m.tool_call_id}
        self._count = 0

    def next(self) -> str:
        """The next free id."""
        while True:
            self._count += 1
            candidate = f"call_{self._count}"
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate


def stream_error(
    error: BaseException,
    *,
    ollama: ModuleType,
    httpx: ModuleType,
    model: str,
    base_url: str,
    retry_after: float | None,
) -> ProviderError:
    """The typed ProviderError for what the SDK raised while sending or streaming."""
    if isinstance(error, ollama.ResponseError):
        return status_error(error.status_code, str(error.error), model, retry_after)
    if isinstance(error, httpx.TimeoutException | TimeoutError):
        return ProviderTimeoutError("the Ollama server did not answer in time", provider=_LABEL)
    if isinstance(error, httpx.ConnectError | ConnectionRefusedError):
        return ProviderUnavailableError(
            f"could not connect to Ollama at {base_url} (is `ollama serve` running?)",
            provider=_LABEL,
        )
    if isinstance(error, httpx.TransportError | OSError):
        return ProviderUnavailableError(
            f"the connection to Ollama was lost ({type(error).__name__})", provider=_LABEL
        )
    if isinstance(error, json.JSONDecodeError):
        return ProviderProtocolError(
            f"ollama sent a stream line that is not valid JSON (at character {error.pos})",
            provider=_LABEL,
        )
    # pydantic's ValidationError is a ValueError: tool arguments that are not an object,
    # a line that is JSON but not a chat chunk. Its text would quote the line: not copied.
    return ProviderProtocolError(
        f"ollama sent a stream line that is not a valid chat chunk ({type(error).__name__})",
        provider=_LABEL,
    )


def status_error(status: int, text: str, model: str, retry_after: float | None) -> ProviderError:
    """The ProviderError for an Ollama error response (status -1: an error line mid-stream).

    Ollama's messages can echo the request or an account name, so only the status and a
    classification of the wording go into the error.
    """
    code = status if status > 0 else None
    where = f"HTTP {status}" if code else "an error line mid-stream"
    if status in (401, 403):
        return ProviderAuthError(
            f"ollama refused the credentials ({where}); for ollama.com set OLLAMA_API_KEY",
            provider=_LABEL,
            status_code=code,
        )
    if status == 429:
        wait = f"; retry after {retry_after:g} s" if retry_after is not None else ""
        return ProviderRateLimitError(
            f"ollama rate-limited the call ({where}){wait}",
            provider=_LABEL,
            status_code=code,
            retry_after_seconds=retry_after,
        )
    if status == 413 or _CONTEXT_WORDS.search(text):
        return ProviderContextLengthError(
            f"the request exceeds the model's context window ({where}); shorten the history "
            "or raise options.num_ctx",
            provider=_LABEL,
            status_code=code,
        )
    if status == 404:
        hint = (
            f"model {model!r} is not on the server (run `ollama pull {model}`)"
            if "model" in text.lower()
            else "no Ollama API at this base_url"
        )
        return ProviderBadRequestError(f"{hint} (HTTP 404)", provider=_LABEL, status_code=404)
    if 400 <= status < 500:
        return ProviderBadRequestError(
            f"ollama rejected the request ({where})", provider=_LABEL, status_code=code
        )
    return ProviderUnavailableError(
        f"the Ollama server failed ({where})", provider=_LABEL, status_code=code
    )
