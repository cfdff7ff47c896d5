"""Translation between chatomon's neutral history and the Gemini API's native shapes.

Private helper of `chatomon.providers.google`; it imports no SDK. The request parts are
plain dicts with the google-genai field names (`function_call`, `function_response`),
which the adapter validates into SDK objects; the error helpers read Google's error
bodies (`{"error": {"code", "message", "status", "details"}}`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from chatomon.providers.base import Message, ToolDefinition
from chatomon.providers.shared_format import retry_after_seconds

__all__ = [
    "GeminiRequest",
    "api_error",
    "build_request",
    "call_id_prefix",
    "function_response",
    "tool_call_id",
]

# Wording of the 400 INVALID_ARGUMENT Gemini sends when the request does not fit the
# model ("The input token count (1200293) exceeds the maximum number of tokens allowed
# (1048576).").
_CONTEXT = re.compile(
    r"exceeds the maximum number of tokens|input token count|context (window|length)", re.I
)
_LABEL = re.compile(r"^[A-Za-z0-9_ .\-]{1,60}$")
_AUTH_STATUSES = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})


@dataclass(frozen=True)
class GeminiRequest:
    """One generateContent request: system instruction, contents, function declarations."""

    system_instruction: str | None
    contents: list[dict[str, Any]]
    function_declarations: list[dict[str, Any]] = field(default_factory=list)


def build_request(
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    *,
    signatures: Mapping[str, bytes] | None = None,
    fallback_signature: bytes | None = None,
) -> GeminiRequest:
    """Translate the neutral history and tools into Gemini's contents and declarations.

    System messages become the one `system_instruction`; assistant messages are "model"
    turns with a text part and one `function_call` part per call; consecutive tool
    results form one "user" turn of `function_response` parts, linked by id and name.

    Args:
        messages: The neutral history.
        tools: The tools offered.
        signatures: Thought signatures Gemini gave with earlier calls, by call id; they
            go back on those calls (Gemini 3 models refuse function calls without them).
        fallback_signature: Put on the first call of a model turn whose signature is
            unknown (a history from elsewhere), for models that need one.
    """
    system = [m.content for m in messages if m.role == "system" and m.content]
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        if message.role == "user":
            contents.append({"role": "user", "parts": [{"text": message.content}]})
        elif message.role == "assistant":
            parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
            for position, call in enumerate(message.tool_calls):
                names[call.id] = call.name
                args = dict(call.args)
                part: dict[str, Any] = {
                    "function_call": {"id": call.id, "name": call.name, "args": args}
                }
                known = (signatures or {}).get(call.id)
                signature = known or (fallback_signature if position == 0 else None)
                if signature:
                    part["thought_signature"] = signature
                parts.append(part)
            if parts:  # Gemini rejects a turn without parts; an empty reply says nothing
                contents.append({"role": "model", "parts": parts})
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            result = {
                "function_response": {
                    "id": call_id,
                    "name": message.tool_name or names.get(call_id, ""),
                    "response": function_response(message.content),
                }
            }
            previous = contents[-1] if contents else None
            if previous is not None and _is_function_responses(previous):
                previous["parts"].append(result)
            else:
                contents.append({"role": "user", "parts": [result]})
    return GeminiRequest(
        system_instruction="\n\n".join(system) or None,
        contents=contents,
        function_declarations=[_declaration(tool) for tool in tools],
    )


def _is_function_responses(content: Mapping[str, Any]) -> bool:
    return content["role"] == "user" and all("function_response" in p for p in content["parts"])


def _declaration(tool: ToolDefinition) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
    schema = dict(tool.input_schema)
    # `parameters_json_schema` takes JSON Schema as is (additionalProperties included),
    # unlike `parameters`, Gemini's OpenAPI subset. A tool without parameters sends none,
    # as the API documents for functions without arguments.
    if schema.get("properties") or schema.get("required"):
        declaration["parameters_json_schema"] = schema
    return declaration


def function_response(content: str) -> dict[str, Any]:
    """The `response` object of a tool result: its JSON object, else `{"result": value}`."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        value = content  # a tool that returned plain text
    return value if isinstance(value, dict) else {"result": value}


def call_id_prefix(messages: Sequence[Message]) -> str:
    """The prefix of the ids generated for one request's calls: a digest of its history.

    The Gemini API sends calls without ids. Generated ids are deterministic (the same
    history gives the same ids) yet unique across rounds and conversations, since the
    histories differ; `tool_call_id` appends the call's position in the reply.
    """
    history = [
        [m.role, m.content, m.tool_call_id, [[c.id, c.name, c.args] for c in m.tool_calls]]
        for m in messages
    ]
    digest = hashlib.sha256(json.dumps(history, sort_keys=True, default=str).encode())
    return f"call_{digest.hexdigest()[:16]}"


def tool_call_id(given: str | None, prefix: str, index: int) -> str:
    """The id of a streamed call: Gemini's own when it sends one, else `<prefix>_<index>`."""
    return given or f"{prefix}_{index}"


def api_error(
    provider: str,
    code: int | None,
    *,
    status: str | None,
    message: str | None,
    body: Any,
    headers: Mapping[str, str] | None,
) -> ProviderError:
    """The typed error for a Google API error response; never copies the vendor's message.

    Args:
        provider: The provider label for the error.
        code: The HTTP status (or the body's `error.code`).
        status: The body's `error.status` ("RESOURCE_EXHAUSTED", ...).
        message: The body's `error.message`, only matched against known phrases.
        body: The decoded error body, for `details` (ErrorInfo reasons, RetryInfo).
        headers: The response headers, for `retry-after`.
    """
    details = _details(body)
    reasons = {str(d.get("reason", "")) for d in details if _is_type(d, "ErrorInfo")}
    text = message if isinstance(message, str) else ""
    label = f"HTTP {code}" if code else "an error"
    if isinstance(status, str) and _LABEL.match(status):
        label += f" {status}"
    if (
        code in (401, 403)
        or status in _AUTH_STATUSES
        or any(r.startswith("API_KEY") for r in reasons)
    ):
        kind: type[ProviderError] = ProviderAuthError
        what = "refused the credentials"
    elif code == 429 or status == "RESOURCE_EXHAUSTED":
        retry_after = retry_after_seconds(headers) or _retry_delay(details)
        return ProviderRateLimitError(
            f"{provider} throttled the request ({label})",
            provider=provider,
            status_code=code,
            retry_after_seconds=retry_after,
        )
    elif code == 400 and _CONTEXT.search(text):
        kind, what = ProviderContextLengthError, "rejected the request as too long for the model"
    elif code == 408 or status == "DEADLINE_EXCEEDED":
        kind, what = ProviderTimeoutError, "timed out"
    elif code is not None and 400 <= code < 500:
        kind, what = ProviderBadRequestError, "rejected the request"
    else:
        kind, what = ProviderUnavailableError, "failed"
    return kind(f"{provider} {what} ({label})", provider=provider, status_code=code)


def _details(body: Any) -> list[Mapping[str, Any]]:
    error = body.get("error", body) if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    return [d for d in details if isinstance(d, Mapping)] if isinstance(details, list) else []


def _is_type(detail: Mapping[str, Any], name: str) -> bool:
    return str(detail.get("@type", "")).endswith(f"google.rpc.{name}")


def _retry_delay(details: Sequence[Mapping[str, Any]]) -> float | None:
    """The RetryInfo `retryDelay` of the details: a JSON Duration ("17s", "0.5s")."""
    for detail in details:
        delay = detail.get("retryDelay") if _is_type(detail, "RetryInfo") else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
        if isinstance(delay, Mapping):  # the protobuf object form {"seconds": .., "nanos": ..}
            try:
                return float(delay.get("seconds", 0)) + float(delay.get("nanos", 0)) / 1e9
            except (TypeError, ValueError):
                return None
    return None
