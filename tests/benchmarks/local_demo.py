"""The demo on the embedded model, as a user meets it: `python tests/benchmarks/local_demo.py`.

Starts `python -m chatomon.demo` with a fresh data folder and the default provider
(`local`, the default model), then, as soon as it says it serves, asks the page's read
question (the first answer after start-up, while the model may still be reading the chat
prompt), and asks it again in new conversations (later data turns). Reported: the times
to "serving" and to the warm-up's "ready" line, each turn's wall time, its tool calls and
the start of its answer, the demo process' resident memory, and the machine's load
average (other work on the CPU slows every figure). Writes results/local_demo.json.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.reporting import print_table, write_results
from tests.demo.process import DemoServer

READ_QUESTION = "Which projects use part P-1002?"
READY = re.compile(r"local model: ready, the chat prompt \((\d+) tokens\) read in ([\d.]+) s")
LOADED = re.compile(r"local model: loaded in ([\d.]+) s")
TURN_TIMEOUT_SECONDS = 600.0


def rss_mb(pid: int) -> float:
    """A process' resident memory (VmRSS) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def client(url: str) -> httpx.Client:
    """An HTTP client holding the demo's CSRF cookie and sending its token."""
    http = httpx.Client(base_url=url, timeout=TURN_TIMEOUT_SECONDS)
    http.get("/console/login/")
    http.headers["X-CSRFToken"] = http.cookies.get("csrftoken") or ""
    http.headers["Referer"] = url + "/"
    return http


def ask(url: str, text: str) -> dict[str, Any]:
    """One turn in a new conversation: wall time, tool calls, the answer's start."""
    http = client(url)
    try:
        start = time.perf_counter()
        response = http.post("/chat/", json={"text": text})
        seconds = time.perf_counter() - start
    finally:
        http.close()
    events = response.json().get("events", [])
    answer = "".join(e.get("content", "") for e in events if e.get("type") == "text_chunk")
    calls = [f"{e['name']}({e.get('args')})" for e in events if e.get("type") == "tool_call"]
    return {
        "seconds": round(seconds, 1),
        "status": response.status_code,
        "tool_calls": calls,
        "answer": answer.strip()[:200],
    }


def found(pattern: re.Pattern[str], log: str) -> re.Match[str] | None:
    """The pattern's first match in the log."""
    return pattern.search(log)


def main(argv: list[str] | None = None) -> None:
    """Start the demo, ask right away and then `--turns` more times; print and write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3, help="later data turns")
    turns = parser.parse_args(argv).turns
    load_at_start = [round(value, 2) for value in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="chatomon-demo-bench-") as data:
        started = time.perf_counter()
        server = DemoServer(Path(data))
        try:
            url = server.wait_until_serving()
            serving_s = time.perf_counter() - started
            first = ask(url, READ_QUESTION)
            first["after_serving_s"] = round(time.perf_counter() - started - serving_s, 1)
            later = [ask(url, READ_QUESTION) for _ in range(turns)]
            pid = server._process.pid
            memory = rss_mb(pid)
        finally:
            server.interrupt()
        log = server.log
    loaded, ready = found(LOADED, log), found(READY, log)
    rows = [{"turn": "first, right after serving", **first}] + [
        {"turn": f"later {index}", **turn} for index, turn in enumerate(later, start=1)
    ]
    print_table(
        f"demo on the default local model: {READ_QUESTION!r}",
        rows,
        ["turn", "seconds", "status", "tool_calls", "answer"],
    )
    payload = {
        "question": READ_QUESTION,
        "cpus": os.cpu_count(),
        "load_average_at_start": load_at_start,
        "load_average_at_end": [round(value, 2) for value in os.getloadavg()],
        "start_to_serving_s": round(serving_s, 1),
        "model_load_s": float(loaded[1]) if loaded else None,
        "warm_prompt_tokens": int(ready[1]) if ready else None,
        "warm_prompt_s": float(ready[2]) if ready else None,
        "demo_rss_mb": round(memory),
        "first_turn": first,
        "later_turns": later,
    }
    print(
        f"serving after {serving_s:.1f} s; model loaded in {payload['model_load_s']} s; "
        f"chat prompt ({payload['warm_prompt_tokens']} tokens) read in "
        f"{payload['warm_prompt_s']} s; demo process {memory:.0f} MB"
    )
    print(f"written: {write_results('local_demo', payload)}")


if __name__ == "__main__":
    main()
