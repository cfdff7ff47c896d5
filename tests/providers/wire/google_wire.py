"""The Gemini API's wire format for the behavioural suite: SSE streams and error bodies.

`streamGenerateContent?alt=sse` answers `text/event-stream` whose events are
`data: <GenerateContentResponse JSON>\\r\\n\\r\\n` (the separator the API sends and the
google-genai SDK parses). Text parts arrive as they are generated; function calls arrive
whole, with `args` as a JSON object and, on the Gemini API, without ids; every event
carries the running `usageMetadata` and the last one the `finishReason`. Errors are Google
API error bodies: `{"error": {"code", "message", "status", "details"}}`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chatomon.providers.google import GeminiProvider
from tests.providers.wire.behaviour import HISTORY, SECRET, TOOLS, ErrorKind
from tests.providers.wire.script import Call, Stall, Step, Text, Usage
from tests.providers.wire.server import Pause, RecordedRequest, Reply

MODEL = "gemini-2.5-flash"
STREAM_PATH = f"/v1/models/{MODEL}:streamGenerateContent?alt=sse"
"""The path google-genai 3.x posts to (it defaults to API version v1)."""

STREAM_HEADERS = {
    "content-type": "text/event-stream",
    "content-disposition": "attachment",
    "vary": "Origin, X-Origin, Referer",
    "server": "scaffolding on HTTPServer2",
}
ERROR_HEADERS = {"content-type": "application/json; charset=UTF-8", "vary": "Origin, X-Origin"}


def sse(payload: str) -> bytes:
    """One SSE event carrying `payload` (a JSON text, or anything for malformed tests)."""
    return f"data: {payload}\r\n\r\n".encode()


def chunk(
    parts: list[dict[str, Any]],
    usage: dict[str, int] | None = None,
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A GenerateContentResponse with one candidate made of `parts`."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish_reason:
        candidate["finishReason"] = finish_reason
    candidate["index"] = 0
    response: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        response["usageMetadata"] = usage
    response["modelVersion"] = MODEL
    response["responseId"] = "wIi2aP7xKLzDnvgPwsXx0Ak"
    return response


def error_body(code: int, status: str, message: str, details: list[Any] | None = None) -> bytes:
    """A Google API error body, pretty-printed as the API sends it."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return json.dumps({"error": error}, indent=2).encode() + b"\n"


def error_reply(code: int, status: str, message: str, details: list[Any] | None = None) -> Reply:
    """An error response of the Gemini API."""
    return Reply(
        status=code, headers=dict(ERROR_HEADERS), body=[error_body(code, status, message, details)]
    )


class GeminiVendor:
    """The `Vendor` of the behavioural suite for the Gemini adapter."""

    name = "gemini"

    def provider(self, base_url: str, **config: Any) -> GeminiProvider:
        """The adapter pointed at the wire server, with the test key and no retries."""
        return GeminiProvider(api_key=SECRET, base_url=base_url, max_retries=0, **config)

    def stream(self, steps: Sequence[Step], *, drop: bool = False, ids: bool = False) -> Reply:
        """The SSE response for `steps`; `ids=True` sends the calls' ids (Vertex AI does).

        Text steps are one event each; consecutive calls share one event (Gemini sends
        parallel calls as parts of one candidate) and `fragments` is ignored, since Gemini
        never splits arguments. `raw_arguments` is written into the JSON text as is.
        """
        usage = next((s for s in steps if isinstance(s, Usage)), None)
        running = (
            {"promptTokenCount": usage.input_tokens, "totalTokenCount": usage.input_tokens}
            if usage
            else None
        )
        items: list[dict[str, Any] | Pause] = []
        raw: dict[str, str] = {}
        for step in steps:
            if isinstance(step, Text):
                items.append(chunk([{"text": step.content}], running))
            elif isinstance(step, Call):
                call: dict[str, Any] = {"name": step.name, "args": dict(step.arguments)}
                if step.raw_arguments is not None:
                    marker = f"@raw{len(raw)}@"
                    raw[json.dumps(marker)] = step.raw_arguments
                    call["args"] = marker
                if ids:
                    call["id"] = step.id
                last = items[-1] if items else None
                if isinstance(last, dict) and "functionCall" in _parts(last)[-1]:
                    _parts(last).append({"functionCall": call})
                else:
                    items.append(chunk([{"functionCall": call}], running))
            elif isinstance(step, Stall):
                items.append(Pause(step.seconds))
            elif isinstance(step, Usage):
                last_chunk = next((i for i in reversed(items) if isinstance(i, dict)), None)
                if last_chunk is None:
                    last_chunk = chunk([{"text": ""}])
                    items.append(last_chunk)
                last_chunk["candidates"][0]["finishReason"] = "STOP"
                last_chunk["usageMetadata"] = {
                    "promptTokenCount": step.input_tokens,
                    "candidatesTokenCount": step.output_tokens,
                    "totalTokenCount": step.input_tokens + step.output_tokens,
                    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": step.input_tokens}],
                }
        body: list[bytes | Pause] = []
        for item in items:
            if isinstance(item, Pause):
                body.append(item)
                continue
            text = json.dumps(item, separators=(",", ": "))
            for marker, value in raw.items():
                text = text.replace(marker, value)
            body.append(sse(text))
        return Reply(status=200, headers=dict(STREAM_HEADERS), body=body, drop=drop)

    def error(self, kind: ErrorKind, *, retry_after: int | None = None) -> Reply:
        """The Gemini API's error response of that kind, as the API words it."""
        if kind == "auth":
            # A wrong key is a 400 INVALID_ARGUMENT with reason API_KEY_INVALID, not a 401.
            message = "API key not valid. Please pass a valid API key."
            return error_reply(
                400,
                "INVALID_ARGUMENT",
                message,
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                        "domain": "googleapis.com",
                        "metadata": {"service": "generativelanguage.googleapis.com"},
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                        "locale": "en-US",
                        "message": message,
                    },
                ],
            )
        if kind == "rate_limit":
            details: list[Any] = [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/"
                            "generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                            "quotaDimensions": {"location": "global", "model": MODEL},
                            "quotaValue": "10",
                        }
                    ],
                },
                {
                    "@type": "type.googleapis.com/google.rpc.Help",
                    "links": [
                        {
                            "description": "Learn more about Gemini API quotas",
                            "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                        }
                    ],
                },
            ]
            if retry_after is not None:
                details.append(
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{retry_after}s",
                    }
                )
            return error_reply(
                429,
                "RESOURCE_EXHAUSTED",
                "You exceeded your current quota, please check your plan and billing details. "
                "For more information on this error, head to: "
                "https://ai.google.dev/gemini-api/docs/rate-limits.",
                details,
            )
        if kind == "context_length":
            return error_reply(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1200293) exceeds the maximum number of tokens "
                "allowed (1048576).",
            )
        if kind == "server":
            return error_reply(
                503, "UNAVAILABLE", "The model is overloaded. Please try again later."
            )
        return error_reply(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")

    def assert_history(self, request: RecordedRequest) -> None:
        """Assert that the request carried HISTORY and TOOLS as Gemini contents and tools."""
        assert request.method == "POST"
        assert request.path == STREAM_PATH
        assert request.headers["x-goog-api-key"] == SECRET
        body = request.json()
        expected = {
            "contents": [
                {"role": "user", "parts": [{"text": "Which parts are heavy?"}]},
                {
                    "role": "model",
                    "parts": [
                        {"text": "Let me look."},
                        {
                            "functionCall": {
                                "id": "call_a",
                                "name": "query",
                                "args": {"manager": "PartManager", "limit": 5},
                            }
                        },
                        {
                            "functionCall": {
                                "id": "call_b",
                                "name": "query",
                                "args": {"manager": "MaterialManager"},
                            }
                        },
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": "call_a",
                                "name": "query",
                                "response": {"data": [{"name": "Gear"}], "total_count": 1},
                            }
                        },
                        {
                            "functionResponse": {
                                "id": "call_b",
                                "name": "query",
                                "response": {"data": [{"name": "Cobalt"}], "total_count": 1},
                            }
                        },
                    ],
                },
                {"role": "model", "parts": [{"text": "Gear, made of cobalt."}]},
                {"role": "user", "parts": [{"text": "And the light ones?"}]},
            ],
            # The SDK sends a text system instruction as a "user" content.
            "systemInstruction": {"parts": [{"text": HISTORY[0].content}], "role": "user"},
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": "query",
                            "description": TOOLS[0].description,
                            # google-genai sends this field under its proto name, which
                            # the API's JSON parser accepts beside the camelCase one.
                            "parameters_json_schema": dict(TOOLS[0].parameters),
                        },
                        {"name": "search_managers", "description": TOOLS[1].description},
                    ]
                }
            ],
            "generationConfig": {},
        }
        assert body == expected, json.dumps(body, indent=1)


def _parts(response: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = response["candidates"][0]["content"]["parts"]
    return parts
