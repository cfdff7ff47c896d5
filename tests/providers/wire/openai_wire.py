"""OpenAI's wire formats for the loopback server: Chat Completions and the Responses API.

Both APIs stream server-sent events. Chat Completions sends `data: {chunk}` lines of
`chat.completion.chunk` objects and ends with `data: [DONE]`; with
`stream_options.include_usage` every chunk carries `"usage": null` and a last chunk with
`"choices": []` carries the usage. The Responses API sends `event: <type>` plus
`data: {event}` pairs with a `sequence_number`, and ends with `response.completed`
(there is no `[DONE]`). Errors are JSON bodies `{"error": {"message", "type", "param",
"code"}}` with the HTTP status. The payloads below copy the shape of real responses.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from chatomon.providers.openai import OpenAIProvider
from tests.providers.wire.behaviour import HISTORY, SECRET, TOOLS, ErrorKind
from tests.providers.wire.script import Call, Stall, Step, Text, Usage, split
from tests.providers.wire.server import Pause, RecordedRequest, Reply

MODEL = "gpt-4.1-mini"
SNAPSHOT = "gpt-4.1-mini-2025-04-14"
CREATED = 1741569952
SSE_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "x-request-id": "req_5f2b8c1d9e0a4b7c8d6e3f1a2b4c5d6e",
    "openai-processing-ms": "212",
}

Piece = bytes | Pause


def _arguments(call: Call) -> str:
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)


def _fragments(call: Call) -> list[str]:
    raw = _arguments(call)
    return split(raw, call.fragments) if raw else [""]


def _usage_of(steps: Sequence[Step]) -> Usage | None:
    return next((step for step in steps if isinstance(step, Usage)), None)


def error_body(
    message: str, kind: str | None, code: str | None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error envelope."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_reply(kind: ErrorKind, *, retry_after: int | None, input_param: str) -> Reply:
    """OpenAI's error response of that kind (the same envelope for both APIs)."""
    headers = {"x-request-id": "req_0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f"}
    if kind == "auth":
        # The real message quotes a masked key: the adapter must not pass it on.
        body = error_body(
            "Incorrect API key provided: sk-test-***************0d2b. You can find your API "
            "key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        )
        return Reply.json(401, body, headers)
    if kind == "rate_limit":
        body = error_body(
            f"Rate limit reached for {MODEL} in organization org-abc123 on tokens per min "
            "(TPM): Limit 200000, Used 199500, Requested 2100. Please try again in 480ms. "
            "Visit https://platform.openai.com/account/rate-limits to learn more.",
            "tokens",
            "rate_limit_exceeded",
        )
        headers |= {
            "x-ratelimit-limit-tokens": "200000",
            "x-ratelimit-remaining-tokens": "500",
            "x-ratelimit-reset-tokens": "480ms",
        }
        if retry_after is not None:
            headers["retry-after"] = str(retry_after)
        return Reply.json(429, body, headers)
    if kind == "context_length":
        body = error_body(
            "This model's maximum context length is 1047576 tokens. However, your messages "
            "resulted in 1180212 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
            input_param,
        )
        return Reply.json(400, body, headers)
    if kind == "server":
        body = error_body(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        )
        return Reply.json(500, body, headers)
    body = error_body(
        "Invalid value for 'temperature': expected a number between 0 and 2.",
        "invalid_request_error",
        "invalid_value",
        "temperature",
    )
    return Reply.json(400, body, headers)


class OpenAIChatVendor:
    """The Chat Completions API (`POST /v1/chat/completions`)."""

    name = "openai"
    path = "/v1/chat/completions"

    def provider(self, base_url: str, **config: Any) -> OpenAIProvider:
        return OpenAIProvider(
            api_key=SECRET, base_url=f"{base_url}/v1", max_retries=0, api="chat", **config
        )

    def chunk(self, delta: dict[str, Any] | None, finish: str | None = None) -> bytes:
        """One `data:` line of a `chat.completion.chunk`; delta None is the usage chunk."""
        payload: dict[str, Any] = {
            "id": "chatcmpl-BHu6v2Yv1x0mQZ8kJ3aFh5nT7pLcR",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": SNAPSHOT,
            "service_tier": "default",
            "system_fingerprint": "fp_6f2eabb9a5",
            "choices": []
            if delta is None
            else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": None,
        }
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def usage_chunk(self, usage: Usage) -> bytes:
        """The last chunk with `include_usage`: no choices, the token counts."""
        line = self.chunk(None)
        payload = json.loads(line[len(b"data: ") :])
        payload["usage"] = {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def stream(self, steps: Sequence[Step], *, drop: bool = False) -> Reply:
        body: list[Piece] = []
        first = True
        index = 0
        for step in steps:
            if isinstance(step, Stall):
                body.append(Pause(step.seconds))
            elif isinstance(step, Text):
                if first:
                    # A text answer opens with a role chunk whose content is "".
                    body.append(self.chunk({"role": "assistant", "content": "", "refusal": None}))
                body.append(self.chunk({"content": step.content}))
                first = False
            elif isinstance(step, Call):
                body.extend(self._call_chunks(step, index, first=first))
                index += 1
                first = False
        if not drop:  # a dropped connection ends right after the last step
            body.append(self.chunk({}, finish="tool_calls" if index else "stop"))
            usage = _usage_of(steps)
            if usage is not None:
                body.append(self.usage_chunk(usage))
            body.append(b"data: [DONE]\n\n")
        return Reply(status=200, headers=dict(SSE_HEADERS), body=body, drop=drop)

    def _call_chunks(self, call: Call, index: int, *, first: bool) -> Iterator[bytes]:
        opening: dict[str, Any] = {
            "tool_calls": [
                {
                    "index": index,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ]
        }
        if first:
            # A tool-call answer carries the role on its first tool-call chunk.
            opening = {"role": "assistant", "content": None, **opening, "refusal": None}
        yield self.chunk(opening)
        for piece in _fragments(call):
            yield self.chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})

    def error(self, kind: ErrorKind, *, retry_after: int | None = None) -> Reply:
        return error_reply(kind, retry_after=retry_after, input_param="messages")

    def expected_messages(self) -> list[dict[str, Any]]:
        """HISTORY in the Chat Completions format."""
        system, user, asked, result_a, result_b, answer, follow_up = HISTORY
        return [
            {"role": "system", "content": system.content},
            {"role": "user", "content": user.content},
            {
                "role": "assistant",
                "content": asked.content,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": dict(call.arguments)},
                    }
                    for call in asked.tool_calls
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": result_a.content},
            {"role": "tool", "tool_call_id": "call_b", "content": result_b.content},
            {"role": "assistant", "content": answer.content},
            {"role": "user", "content": follow_up.content},
        ]

    def expected_tools(self) -> list[dict[str, Any]]:
        """TOOLS in the Chat Completions format."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                },
            }
            for tool in TOOLS
        ]

    def assert_history(self, request: RecordedRequest) -> None:
        assert request.method == "POST"
        assert request.path == self.path
        assert request.headers["authorization"] == f"Bearer {SECRET}"
        body = request.json()
        for message in body["messages"]:
            for call in message.get("tool_calls", []):
                # Arguments travel as a JSON string; compare them decoded.
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        assert body["messages"] == self.expected_messages()
        assert body["tools"] == self.expected_tools()
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}


class OpenAIResponsesVendor:
    """The Responses API (`POST /v1/responses`)."""

    name = "openai"
    path = "/v1/responses"

    def provider(self, base_url: str, **config: Any) -> OpenAIProvider:
        return OpenAIProvider(
            api_key=SECRET, base_url=f"{base_url}/v1", max_retries=0, api="responses", **config
        )

    def stream(self, steps: Sequence[Step], *, drop: bool = False) -> Reply:
        encoder = _ResponsesEncoder()
        body: list[Piece] = [
            encoder.created("response.created"),
            encoder.created("response.in_progress"),
        ]
        for step in steps:
            if isinstance(step, Stall):
                body.append(Pause(step.seconds))
            elif isinstance(step, Text):
                body.extend(encoder.text(step.content))
            elif isinstance(step, Call):
                body.extend(encoder.close_message())
                body.extend(encoder.call(step))
        if not drop:
            body.extend(encoder.close_message())
            body.append(encoder.completed(_usage_of(steps)))
        return Reply(status=200, headers=dict(SSE_HEADERS), body=body, drop=drop)

    def error(self, kind: ErrorKind, *, retry_after: int | None = None) -> Reply:
        return error_reply(kind, retry_after=retry_after, input_param="input")

    def expected_input(self) -> list[dict[str, Any]]:
        """HISTORY (after its system message) as Responses API input items."""
        _, user, asked, result_a, result_b, answer, follow_up = HISTORY
        return [
            {"role": "user", "content": user.content},
            {"role": "assistant", "content": asked.content},
            *(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": dict(call.arguments),
                }
                for call in asked.tool_calls
            ),
            {"type": "function_call_output", "call_id": "call_a", "output": result_a.content},
            {"type": "function_call_output", "call_id": "call_b", "output": result_b.content},
            {"role": "assistant", "content": answer.content},
            {"role": "user", "content": follow_up.content},
        ]

    def expected_tools(self) -> list[dict[str, Any]]:
        """TOOLS in the Responses API format."""
        return [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
                "strict": False,
            }
            for tool in TOOLS
        ]

    def assert_history(self, request: RecordedRequest) -> None:
        assert request.method == "POST"
        assert request.path == self.path
        assert request.headers["authorization"] == f"Bearer {SECRET}"
        body = request.json()
        for item in body["input"]:
            if item.get("type") == "function_call":
                item["arguments"] = json.loads(item["arguments"])
        assert body["instructions"] == HISTORY[0].content
        assert body["input"] == self.expected_input()
        assert body["tools"] == self.expected_tools()
        assert body["stream"] is True


class _ResponsesEncoder:
    """Builds the Responses API event sequence: one message item per run of text."""

    def __init__(self) -> None:
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self.message: dict[str, Any] | None = None

    def event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode()

    def response(self, status: str, usage: Usage | None = None) -> dict[str, Any]:
        return {
            "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "max_output_tokens": None,
            "model": SNAPSHOT,
            "output": list(self.output) if status == "completed" else [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": None
            if usage is None
            else {
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.input_tokens + usage.output_tokens,
            },
            "user": None,
            "metadata": {},
        }

    def created(self, kind: str) -> bytes:
        return self.event(kind, response=self.response("in_progress"))

    def completed(self, usage: Usage | None) -> bytes:
        return self.event("response.completed", response=self.response("completed", usage))

    def text(self, content: str) -> Iterator[bytes]:
        if self.message is None:
            self.message = {
                "id": f"msg_67ccd2bf17f0819081ff3bb2cf6508e6{len(self.output):02d}",
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
                "text": "",
            }
            item = {key: value for key, value in self.message.items() if key != "text"}
            yield self.event("response.output_item.added", output_index=len(self.output), item=item)
            yield self.event(
                "response.content_part.added",
                item_id=self.message["id"],
                output_index=len(self.output),
                content_index=0,
                part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
            )
        self.message["text"] += content
        yield self.event(
            "response.output_text.delta",
            item_id=self.message["id"],
            output_index=len(self.output),
            content_index=0,
            delta=content,
            logprobs=[],
        )

    def close_message(self) -> Iterator[bytes]:
        if self.message is None:
            return
        message, self.message = self.message, None
        text = message.pop("text")
        index = len(self.output)
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        yield self.event(
            "response.output_text.done",
            item_id=message["id"],
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        yield self.event(
            "response.content_part.done",
            item_id=message["id"],
            output_index=index,
            content_index=0,
            part=part,
        )
        item = {**message, "status": "completed", "content": [part]}
        self.output.append(item)
        yield self.event("response.output_item.done", output_index=index, item=item)

    def call(self, call: Call) -> Iterator[bytes]:
        index = len(self.output)
        item = {
            "id": f"fc_67ccd3acc8d48190a77525dc6de64b55{index:02d}",
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call.id,
            "name": call.name,
        }
        yield self.event("response.output_item.added", output_index=index, item=item)
        for piece in _fragments(call):
            yield self.event(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=piece,
            )
        arguments = _arguments(call)
        yield self.event(
            "response.function_call_arguments.done",
            item_id=item["id"],
            output_index=index,
            arguments=arguments,
        )
        done = {**item, "status": "completed", "arguments": arguments}
        self.output.append(done)
        yield self.event("response.output_item.done", output_index=index, item=done)
