"""Anthropic Messages API on the wire: the SSE stream, the error bodies, the request format.

Streams are `text/event-stream` with one `event:` line and one compact JSON `data:` line
per event, separated by a blank line, in the order the API sends them: `message_start`,
then per content block `content_block_start` / `content_block_delta`... /
`content_block_stop` (a `ping` after the first block starts), then `message_delta` with
the stop reason and the cumulative output tokens, then `message_stop`. Errors are JSON
bodies `{"type": "error", "error": {"type", "message"}, "request_id"}` with the status
Anthropic uses for that error type.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chatomon.providers.anthropic import AnthropicProvider
from tests.providers.wire.behaviour import CALL_A, CALL_B, HISTORY, SECRET, TOOLS, ErrorKind
from tests.providers.wire.script import Call, Stall, Step, Text, Usage, split
from tests.providers.wire.server import Pause, RecordedRequest, Reply

REQUEST_ID = "req_011CWdepJvA2D819tdYYq4h7"
MODEL = "claude-3-5-haiku-20241022"

STREAM_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "request-id": REQUEST_ID,
    "anthropic-organization-id": "0d3f1c1e-0000-4000-8000-000000000000",
}

# (status, error.type, error.message) as the API sends them for each kind.
ERRORS: dict[str, tuple[int, str, str]] = {
    "auth": (401, "authentication_error", "invalid x-api-key"),
    "rate_limit": (
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per "
        "minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
    ),
    "context_length": (
        400,
        "invalid_request_error",
        "prompt is too long: 208656 tokens > 200000 maximum",
    ),
    "server": (529, "overloaded_error", "Overloaded"),
    "bad_request": (
        400,
        "invalid_request_error",
        "messages: text content blocks must be non-empty",
    ),
}


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One server-sent event exactly as the API frames it."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def error_body(kind: str, message: str, *, request_id: str | None = REQUEST_ID) -> dict[str, Any]:
    """The API's error body for an error type (in-stream `error` events carry no id)."""
    body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    if request_id:
        body["request_id"] = request_id
    return body


def message_start(input_tokens: int) -> bytes:
    """The `message_start` event: the empty message with the prompt usage."""
    return sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 1,
                    "service_tier": "standard",
                },
            },
        },
    )


class AnthropicVendor:
    """The `Vendor` of the behavioural suite for Anthropic."""

    name = "anthropic"

    def provider(self, base_url: str, **config: Any) -> AnthropicProvider:
        """The adapter pointed at the wire server, with the test key and no SDK retries."""
        return AnthropicProvider(api_key=SECRET, base_url=base_url, max_retries=0, **config)

    def stream(self, steps: Sequence[Step], *, drop: bool = False) -> Reply:
        """The SSE response for `steps`; `drop` cuts it before `message_delta`."""
        usage = next((s for s in steps if isinstance(s, Usage)), Usage(0, 0))
        body: list[bytes | Pause] = []
        first = 0
        while first < len(steps) and isinstance(steps[first], Stall):
            # Pauses before any byte delay the status line too: a slow first byte.
            body.append(Pause(steps[first].seconds))
            first += 1
        body.append(message_start(usage.input_tokens))
        index, open_text, pinged = 0, False, False

        def start(block: dict[str, Any]) -> None:
            nonlocal pinged
            body.append(
                sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block},
                )
            )
            if not pinged:
                body.append(sse("ping", {"type": "ping"}))
                pinged = True

        def delta(payload: dict[str, Any]) -> None:
            body.append(
                sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": payload},
                )
            )

        def stop() -> None:
            nonlocal index
            body.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1

        calls = 0
        for step in steps[first:]:
            if isinstance(step, Stall):
                body.append(Pause(step.seconds))
            elif isinstance(step, Text):
                if not open_text:
                    start({"type": "text", "text": ""})
                    open_text = True
                delta({"type": "text_delta", "text": step.content})
            elif isinstance(step, Call):
                if open_text:
                    stop()
                    open_text = False
                calls += 1
                start({"type": "tool_use", "id": step.id, "name": step.name, "input": {}})
                raw = step.raw_arguments
                if raw is None:
                    raw = json.dumps(dict(step.arguments), separators=(",", ":"))
                # The API opens every tool input with an empty fragment.
                delta({"type": "input_json_delta", "partial_json": ""})
                for fragment in split(raw, step.fragments) if raw else []:
                    delta({"type": "input_json_delta", "partial_json": fragment})
                stop()
        if open_text:
            stop()
        if not drop:
            body.append(
                sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {
                            "stop_reason": "tool_use" if calls else "end_turn",
                            "stop_sequence": None,
                        },
                        "usage": {"output_tokens": usage.output_tokens},
                    },
                )
            )
            body.append(sse("message_stop", {"type": "message_stop"}))
        return Reply(status=200, headers=dict(STREAM_HEADERS), body=body, drop=drop)

    def error(self, kind: ErrorKind, *, retry_after: int | None = None) -> Reply:
        """The API's error response of that kind (with `retry-after` on a 429)."""
        status, error_type, message = ERRORS[kind]
        headers = {"request-id": REQUEST_ID, "x-should-retry": "false"}
        if kind == "rate_limit":
            headers["anthropic-ratelimit-requests-limit"] = "50"
            headers["anthropic-ratelimit-requests-remaining"] = "0"
            if retry_after is not None:
                headers["retry-after"] = str(retry_after)
        return Reply.json(status, error_body(error_type, message), headers)

    def stream_error(self, error_type: str, message: str, *, after: Sequence[Step] = ()) -> Reply:
        """A 200 stream that fails with an `error` event (after the events of `after`)."""
        reply = self.stream(after, drop=True)
        body = [*reply.body, sse("error", error_body(error_type, message, request_id=None))]
        return Reply(status=200, headers=dict(STREAM_HEADERS), body=body)

    def assert_history(self, request: RecordedRequest) -> None:
        """HISTORY and TOOLS as Anthropic Messages parameters, with the key in a header."""
        assert (request.method, request.path) == ("POST", "/v1/messages")
        assert SECRET in (
            request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
        )
        assert request.headers["anthropic-version"]
        body = request.json()
        assert body["stream"] is True
        assert body["system"] == HISTORY[0].content
        assert body["messages"] == expected_messages()
        assert body["tools"] == [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in TOOLS
        ]


def expected_messages() -> list[dict[str, Any]]:
    """HISTORY in Anthropic's native format: roles alternate, tool results in one message."""
    return [
        {"role": "user", "content": "Which parts are heavy?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": CALL_A.id,
                    "name": "query",
                    "input": {**CALL_A.arguments},
                },
                {
                    "type": "tool_use",
                    "id": CALL_B.id,
                    "name": "query",
                    "input": {**CALL_B.arguments},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": HISTORY[3].content},
                {"type": "tool_result", "tool_use_id": "call_b", "content": HISTORY[4].content},
            ],
        },
        {"role": "assistant", "content": "Gear, made of cobalt."},
        {"role": "user", "content": "And the light ones?"},
    ]
