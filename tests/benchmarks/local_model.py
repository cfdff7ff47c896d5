"""The local model's speed and memory: `python tests/benchmarks/local_model.py [--model NAME]`.

`make bench` runs it for the default model (Qwen2.5-Coder-1.5B-Instruct) and for `smollm2`.
Measured per model: the load (time, and the process' resident memory after it), a typical
two-call data turn over chatomon's own data tools (the question's first round read cold and
again with its prompt cached, the tool result, the answer), and LocalProvider over a few
prompts, each several times after one warm-up: time to first event (prompt processing plus
the first token), generation speed in tokens per second after the first event (text answers
only: a tool call arrives whole, at the end), and the whole completion; and llama.cpp alone
on the same file (`raw_speed`: tokens read and written per second, and the instruction sets
its build uses). The prompts take turns, so llama.cpp's prompt cache (which keeps the
previous prompt) reuses only the prefix two prompts share: each time to first event includes
most of its prompt's processing, except where a prompt follows one with the same tools (as
in a conversation: the tool list and examples are then cached). The machine's load average
is recorded beside the figures: other work on the CPU slows every one of them.
Writes results/local_model.json (default model) or results/local_model_<name>.json.
Needs `pip install "chatomon[local]"` and the model (`make` installs both).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
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
from chatomon.providers.local_models import DEFAULT_MODEL, named_model
from chatomon.providers.local_runtime import LocalModel
from chatomon.providers.local_states import instruction_sets
from tests.benchmarks.reporting import print_table, write_results

RUNS = 3
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


def rss_mb() -> float:
    """This process' resident memory now (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


DATA_QUESTION = "Which projects use part P-1002?"
DATA_RESULT = {
    "data": [
        {"id": 3, "code": "PRJ-103", "name": "Harbour crane refit", "quantity": 12},
        {"id": 7, "code": "PRJ-107", "name": "Pump station upgrade", "quantity": 4},
    ],
    "total_count": 2,
}


def data_tools() -> list[ToolDefinition]:
    """chatomon's own read tools, as a chat turn offers them."""
    definitions = importlib.import_module("chatomon.chat.tools.definitions")
    return [*definitions.discovery_definitions(50), definitions.query_definition(50)]


async def data_turn(provider: LocalProvider) -> dict[str, Any]:
    """A two-call data turn: the question (cold, then cached), a tool result, the answer.

    With chatomon's own system prompt and read tools, as the chat service sends them.
    """
    tools = data_tools()
    prompts = importlib.import_module("chatomon.chat.prompts")
    system = Message.system(prompts.system_prompt("", ()))  # what a chat turn sends
    question = [system, Message.user(DATA_QUESTION)]
    cold = await one_completion(provider, question, tools)
    first = await one_completion(provider, question, tools)  # its prefix now cached
    call = ToolCall(
        "call_2_0", "query", {"manager": "ProjectManager", "filters": {"parts__number": "P-1002"}}
    )
    answered = [*question, Message.assistant("", [call]), Message.tool(call, DATA_RESULT)]
    answer = await one_completion(provider, answered, tools)
    return {
        "tools": len(tools),
        "first_round_cold_ms": round(cold["total_s"] * 1000),
        "first_round_prompt_tokens": cold["prompt_tokens"],
        "first_round_ms": round(first["total_s"] * 1000),
        "first_round_tool_calls": first["tool_calls"],
        "answer_ms": round(answer["total_s"] * 1000),
        "answer_tokens": answer["tokens"],
        "answer_tool_calls": answer["tool_calls"],
        "turn_ms": round((first["total_s"] + answer["total_s"]) * 1000),
    }


READ_TOKENS = 300
WRITE_TOKENS = 40
TABLE_LINE = "PRJ-101 | Apollo | Acme Space | active | 120000.00 | 2026-01-15 | 2026-09-30 | 1\n"


def raw_speed(provider: LocalProvider) -> dict[str, Any]:
    """llama.cpp's own speed on the provider's model file, with no chatomon in between.

    Reading `READ_TOKENS` of query rows into an empty cache, then writing `WRITE_TOKENS`
    greedily, median of `RUNS`; and the instruction sets the runtime was built for (an
    AVX-512 build reads about 1.4 times as fast as an AVX2 one; both write at the speed
    of memory). Blocking: loads the file again as the provider does, after it closed.
    """
    llama_cpp = importlib.import_module("llama_cpp")
    model = LocalModel.load(llama_cpp, provider.model_path, provider.settings, "raw_speed")
    llm = model.llm
    try:
        tokens = llm.tokenize((TABLE_LINE * 100).encode())[:READ_TOKENS]
        read_s, write_s = [], []
        for _ in range(RUNS):
            llm.reset()
            start = time.perf_counter()
            llm.eval(tokens)
            read_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            for _ in range(WRITE_TOKENS):
                llm.eval([llm.sample(temp=0.0)])
            write_s.append(time.perf_counter() - start)
    finally:
        model.close()
    return {
        "built_for": " ".join(instruction_sets(llama_cpp)),
        "read_tokens_per_s": round(READ_TOKENS / statistics.median(read_s), 1),
        "write_tokens_per_s": round(WRITE_TOKENS / statistics.median(write_s), 1),
    }


async def measure(model: str) -> dict[str, Any]:
    """Load `model`, time a data turn and every prompt RUNS times; the results' payload."""
    LocalProvider.check_configuration({"model": model})
    load_average = [round(value, 2) for value in os.getloadavg()]
    before = rss_mb()
    provider = LocalProvider(model=model, max_tokens=MAX_TOKENS, seed=1)
    try:
        start = time.perf_counter()
        await provider.warm()
        load_s = time.perf_counter() - start
        loaded_rss = rss_mb()
        turn = await data_turn(provider)
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in PROMPTS}
        for _ in range(RUNS + 1):  # the first round is a warm-up
            for label, messages, tools in PROMPTS:
                runs[label].append(await one_completion(provider, messages, tools))
        rows = [summary(label, measured[1:]) for label, measured in runs.items()]
        peak_rss = rss_mb()
    finally:
        await provider.aclose()
    threads = provider.settings["threads"]
    speed = await asyncio.to_thread(raw_speed, provider)
    print_table(
        f"LocalProvider, {provider.model_path.name}, threads={threads}, median of {RUNS} runs",
        rows,
        ["prompt", "prompt_tokens", "tokens", "ttft_ms", "tokens_per_s", "total_ms", "tool_calls"],
    )
    print_table("a two-call data turn (chatomon's read tools)", [turn], list(turn))
    print_table(
        f"llama.cpp alone: {READ_TOKENS} tokens read, {WRITE_TOKENS} written, median of {RUNS}",
        [speed],
        list(speed),
    )
    print(
        f"load {load_s * 1000:.0f} ms; memory {loaded_rss - before:.0f} MB for the model, "
        f"{peak_rss:.0f} MB for the process at the end"
    )
    return {
        "model": named_model(model).name,
        "file": provider.model_path.name,
        "file_mb": round(provider.model_path.stat().st_size / 1e6),
        "threads": threads,
        "context_size": provider.settings["context_size"],
        "cpus": os.cpu_count(),
        "load_average_at_start": load_average,
        "max_tokens": MAX_TOKENS,
        "runs": RUNS,
        "load_ms": round(load_s * 1000, 1),
        "rss_model_mb": round(loaded_rss - before),
        "rss_process_mb": round(peak_rss),
        "data_turn": turn,
        "raw_speed": speed,
        "prompts": rows,
    }


async def main(argv: list[str] | None = None) -> None:
    """Measure the model named on the command line (default: the default model)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="a named model (smollm2, ...)")
    model = parser.parse_args(argv).model
    payload = await measure(model)
    payload["load_average_at_end"] = [round(value, 2) for value in os.getloadavg()]
    name = "local_model" if model == DEFAULT_MODEL else f"local_model_{model}"
    print(f"written: {write_results(name, payload)}")


if __name__ == "__main__":
    asyncio.run(main())
