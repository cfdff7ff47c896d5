"""Adapter overhead per streamed chunk and per completion: `python tests/benchmarks/providers.py`.

Each adapter (with its real vendor SDK) reads completions of 200 text chunks from the
loopback wire server. The same bytes are also read with plain httpx, so that the figure
that matters, the adapter's own cost (SDK parsing + translation) per chunk, is the
difference between the two. Writes results/providers.json.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx

from chatomon.providers import Message, run_completion
from tests.benchmarks.reporting import print_table, write_results
from tests.providers.wire.anthropic_wire import AnthropicVendor
from tests.providers.wire.google_wire import GeminiVendor
from tests.providers.wire.ollama_wire import OllamaWire
from tests.providers.wire.openai_wire import OpenAIChatVendor, OpenAIResponsesVendor
from tests.providers.wire.script import Text, Usage
from tests.providers.wire.server import Reply, WireServer

CHUNKS = 200
COMPLETIONS = 30
VENDORS: list[tuple[str, Any]] = [
    ("openai (chat)", OpenAIChatVendor()),
    ("openai (responses)", OpenAIResponsesVendor()),
    ("anthropic", AnthropicVendor()),
    ("ollama", OllamaWire()),
    ("gemini", GeminiVendor()),
]


def script() -> list[Any]:
    """A completion of CHUNKS short text deltas and its usage."""
    return [*(Text(f"word{i} ") for i in range(CHUNKS)), Usage(100, CHUNKS)]


async def adapter_time(vendor: Any, server: WireServer) -> list[float]:
    """Seconds per completion through the adapter and run_completion."""
    provider = vendor.provider(server.url, timeout_seconds=10, stream_timeout_seconds=10)
    samples = []
    for _ in range(COMPLETIONS + 3):
        server.push(vendor.stream(script()))
        started = time.perf_counter()
        count = 0
        async for _event in run_completion(provider, [Message.user("Hi")], []):
            count += 1
        samples.append(time.perf_counter() - started)
        assert count == CHUNKS + 1, f"expected {CHUNKS} chunks and done, got {count}"
    return samples[3:]


async def raw_time(reply: Reply, server: WireServer) -> list[float]:
    """Seconds per completion reading the same bytes with plain httpx (the floor)."""
    samples = []
    async with httpx.AsyncClient() as client:
        for _ in range(COMPLETIONS + 3):
            server.push(reply)
            started = time.perf_counter()
            async with client.stream("POST", server.url + "/raw", json={}) as response:
                async for _line in response.aiter_lines():
                    pass
            samples.append(time.perf_counter() - started)
    return samples[3:]


async def run() -> list[dict[str, Any]]:
    """Measure every vendor."""
    rows = []
    for label, vendor in VENDORS:
        with WireServer() as server:
            adapter = statistics.median(await adapter_time(vendor, server))
            raw = statistics.median(await raw_time(vendor.stream(script()), server))
        overhead = max(adapter - raw, 0.0)
        rows.append(
            {
                "adapter": label,
                "completion_ms": round(adapter * 1000, 2),
                "raw_http_ms": round(raw * 1000, 2),
                "overhead_ms": round(overhead * 1000, 2),
                "us_per_chunk": round(overhead / CHUNKS * 1e6, 1),
                "events_per_s": round((CHUNKS + 1) / adapter),
            }
        )
    return rows


def main() -> None:
    """Measure, print the table, write the JSON."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rows = asyncio.run(run())
    print_table(
        f"adapter overhead, {CHUNKS}-chunk completions from the loopback wire server "
        f"(median of {COMPLETIONS})",
        rows,
        ["adapter", "completion_ms", "raw_http_ms", "overhead_ms", "us_per_chunk", "events_per_s"],
    )
    print(f"written: {write_results('providers', {'chunks': CHUNKS, 'rows': rows})}")


if __name__ == "__main__":
    main()
