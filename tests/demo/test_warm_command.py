"""`python -m chatomon.demo warm`: the chat's prompt read ahead and saved, for `make demo`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from chatomon.providers.local_models import model_file, named_model
from tests.demo.process import run_demo


def warm(data_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_demo(data_dir, "warm", env=env, timeout=300)


def test_a_vendors_provider_has_nothing_to_warm(tmp_path: Path) -> None:
    result = warm(tmp_path, {"CHATOMON_PROVIDER": "tests.browser.provider.DemoScriptProvider"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no local model to warm" in result.stdout + result.stderr


def test_a_missing_model_fails_naming_it(tmp_path: Path) -> None:
    config = {"model_path": str(tmp_path / "missing.gguf")}
    result = warm(
        tmp_path, {"CHATOMON_PROVIDER": "local", "CHATOMON_PROVIDER_CONFIG": json.dumps(config)}
    )
    assert result.returncode == 1
    assert "chat is not available: the local model cannot run" in result.stdout + result.stderr


def test_a_file_that_is_no_model_fails_to_load_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(64))  # the magic number, and nothing a model needs
    config = {"model_path": str(broken)}
    result = warm(
        tmp_path, {"CHATOMON_PROVIDER": "local", "CHATOMON_PROVIDER_CONFIG": json.dumps(config)}
    )
    assert result.returncode == 1
    assert "chat is not available: the local model failed to load" in result.stdout + result.stderr


def test_the_command_takes_no_arguments(tmp_path: Path) -> None:
    assert "read the chat's prompt" in run_demo(tmp_path, "warm", "--help").stdout.lower()
    wrong = run_demo(tmp_path, "warm", "--now")
    assert wrong.returncode == 2 and "unrecognized arguments: --now" in wrong.stderr


@pytest.mark.real_llm
def test_the_prompt_is_saved_where_the_servers_start_loads_it(tmp_path: Path) -> None:
    weights = model_file(named_model("smollm2"))
    if weights is None:
        if os.environ.get("CHATOMON_REQUIRE_REAL_LLM"):
            pytest.fail("the real_llm tier is required here, but SmolLM2 is not installed")
        pytest.skip("SmolLM2 is not installed (make .venv/.local-model)")
    cache = tmp_path / "cache"
    env = {
        "CHATOMON_PROVIDER": "local",
        "CHATOMON_PROVIDER_CONFIG": json.dumps({"model_path": str(weights)}),
        "CHATOMON_CACHE_DIR": str(cache),
    }
    result = warm(tmp_path / "data", env)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "local model: ready, the chat prompt" in log
    (state,) = (cache / "prompts").glob("*.kv")
    assert state.stat().st_size > 0
    again = warm(tmp_path / "data", env)  # the same prompt: its one saved state is found
    assert again.returncode == 0
    assert list((cache / "prompts").glob("*.kv")) == [state]
