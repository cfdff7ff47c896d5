"""Ollama's /api/chat wire format, byte for byte, for the behavioural suite.

A streamed chat is NDJSON (`application/x-ndjson`): one compact JSON object per line, as
Go's `json.Marshal` writes it (field order of the server's `ChatResponse`, HTML
characters escaped as \\u003c, \\u003e, \\u0026). Text comes as `message.content` pieces
with `"done":false`; a tool call comes whole in `message.tool_calls`, its arguments an
object (Ollama never fragments them and sends no call id); the last line has
`"done":true`, `done_reason` and the counts. Errors are `{"error": "..."}` bodies with
the HTTP status (gin's `c.JSON`), or an `{"error": ...}` line in the middle of a stream.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chatomon.providers.ollama import OllamaProvider
from tests.providers.wire.behaviour import ErrorKind
from tests.providers.wire.script import Call, Stall, Step, Text, Usage
from tests.providers.wire.server import Pause, RecordedRequest, Reply

MODEL = "gemma4:e4b"
NDJSON = {"content-type": "application/x-ndjson"}
JSON = {"content-type": "application/json; charset=utf-8"}

ERROR_BODIES: dict[ErrorKind, tuple[int, str]] = {
    # ollama.com (or an authenticating proxy) without a valid OLLAMA_API_KEY.
    "auth": (401, "unauthorized"),
    "rate_limit": (
        429,
        "you (someone) have reached your session usage limit, please wait or upgrade to continue",
    ),
    # Ollama 0.12 with truncation off; 0.34+ wraps llama-server's error (see below).
    "context_length": (400, "the input length exceeds the context length"),
    "server": (
        500,
        "model runner has unexpectedly stopped, this may be due to resource limitations "
        "or an internal error, check ollama server logs for details",
    ),
    "bad_request": (400, "invalid message format"),
}

LLAMA_SERVER_OVERFLOW = json.dumps(
    {
        "error": {
            "code": 400,
            "message": "request (2622 tokens) exceeds the available context size (512 tokens), "
            "try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 2622,
            "n_ctx": 512,
        }
    },
    separators=(",", ":"),
)
"""The context overflow of Ollama 0.34+: llama-server's error object, as a string."""


def go_json(value: Any) -> bytes:
    """`value` encoded as Go's json.Marshal does: compact, UTF-8, HTML characters escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


class OllamaWire:
    """The `Vendor` of the behavioural suite for Ollama."""

    name = "ollama"

    def __init__(self) -> None:
        self._clock = 0

    def provider(self, base_url: str, **config: Any) -> OllamaProvider:
        """The adapter at `base_url`; Ollama takes no key and the SDK has no retries."""
        return OllamaProvider(base_url=base_url, **config)

    def _created_at(self) -> str:
        self._clock += 1
        return f"2026-05-04T10:00:00.{self._clock:09d}Z"

    def chunk(self, message: dict[str, Any], **final: Any) -> bytes:
        """One stream line; `final` fields (done_reason, counts) make it the last one."""
        head = {"model": MODEL, "created_at": self._created_at(), "message": message}
        if final:
            return go_json({**head, **final}) + b"\n"
        return go_json({**head, "done": False}) + b"\n"

    def done(self, usage: Usage | None, reason: str = "stop") -> bytes:
        """The final line with Ollama's metrics (nanosecond durations)."""
        counts: dict[str, Any] = {"total_duration": 812_553_291, "load_duration": 61_904_084}
        if usage is not None:
            counts |= {
                "prompt_eval_count": usage.input_tokens,
                "prompt_eval_duration": 98_000_000,
                "eval_count": usage.output_tokens,
                "eval_duration": 640_000_000,
            }
        return self.chunk(
            {"role": "assistant", "content": ""}, done_reason=reason, done=True, **counts
        )

    def call_line(self, call: Call, index: int) -> bytes:
        """A whole tool call; `raw_arguments` is spliced in verbatim (malformed tests)."""
        if call.raw_arguments is None:
            arguments = go_json(dict(call.arguments)).decode()
        else:
            arguments = call.raw_arguments
        placeholder = "__ARGUMENTS__"
        function = {"index": index, "name": call.name, "arguments": placeholder}
        message = {"role": "assistant", "content": "", "tool_calls": [{"function": function}]}
        line = self.chunk(message).decode()
        return line.replace(json.dumps(placeholder), arguments, 1).encode()

    def stream(self, steps: Sequence[Step], *, drop: bool = False) -> Reply:
        """The NDJSON stream for `steps`; without a Usage step the done line has no counts."""
        body: list[bytes | Pause] = []
        calls = 0
        finished = False
        for step in steps:
            if isinstance(step, Text):
                body.append(self.chunk({"role": "assistant", "content": step.content}))
            elif isinstance(step, Call):
                body.append(self.call_line(step, calls))
                calls += 1
            elif isinstance(step, Usage):
                body.append(self.done(step))
                finished = True
            elif isinstance(step, Stall):
                body.append(Pause(step.seconds))
        if not finished and not drop:
            body.append(self.done(None))
        return Reply(status=200, headers=dict(NDJSON), body=body, drop=drop)

    def error(self, kind: ErrorKind, *, retry_after: int | None = None) -> Reply:
        """Ollama's error response of that kind."""
        status, message = ERROR_BODIES[kind]
        return self.error_reply(status, message, retry_after=retry_after)

    def error_reply(self, status: int, message: str, *, retry_after: int | None = None) -> Reply:
        """An `{"error": message}` response with `status`."""
        headers = dict(JSON)
        if retry_after is not None:
            headers["retry-after"] = str(retry_after)
        return Reply(status=status, headers=headers, body=[go_json({"error": message})])

    def error_line(self, message: str) -> bytes:
        """The line Ollama writes when generation fails after the 200 was sent."""
        return go_json({"error": message}) + b"\n"

    def assert_history(self, request: RecordedRequest) -> None:
        """HISTORY and TOOLS as /api/chat messages and function tools."""
        assert (request.method, request.path) == ("POST", "/api/chat")
        body = request.json()
        assert body["model"] == MODEL
        assert body["stream"] is True
        assert body["messages"] == expected_messages()
        assert body["tools"] == expected_tools()


def expected_messages() -> list[dict[str, Any]]:
    """HISTORY as Ollama messages: calls by name with object arguments, results by name."""
    return [
        {"role": "system", "content": "Answer from tool results only."},
        {"role": "user", "content": "Which parts are heavy?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "function": {
                        "name": "query",
                        "arguments": {"manager": "PartManager", "limit": 5},
                    }
                },
                {"function": {"name": "query", "arguments": {"manager": "MaterialManager"}}},
            ],
        },
        {
            "role": "tool",
            "content": '{"data": [{"name": "Gear"}], "total_count": 1}',
            "tool_name": "query",
        },
        {
            "role": "tool",
            "content": '{"data": [{"name": "Cobalt"}], "total_count": 1}',
            "tool_name": "query",
        },
        {"role": "assistant", "content": "Gear, made of cobalt."},
        {"role": "user", "content": "And the light ones?"},
    ]


def expected_tools() -> list[dict[str, Any]]:
    """TOOLS as the SDK sends them: its Tool model keeps type, description, enum, items
    and required, and drops other JSON Schema keywords such as additionalProperties."""
    return [
        {
            "type": "function",
            "function": {
                "name": "query",
                "description": "Query rows of one manager.",
                "parameters": {
                    "type": "object",
                    "required": ["manager"],
                    "properties": {
                        "manager": {"type": "string", "description": "Manager name."},
                        "limit": {"type": "integer"},
                    },
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "search_managers",
                "description": "Find managers by words.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]


__all__ = [
    "ERROR_BODIES",
    "LLAMA_SERVER_OVERFLOW",
    "MODEL",
    "OllamaWire",
    "expected_messages",
    "expected_tools",
    "go_json",
]
