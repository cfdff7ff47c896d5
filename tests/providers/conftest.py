"""Fixtures of the provider tests: the llama_cpp stand-in for LocalProvider."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chatomon.providers import local as local_module
from tests.providers.fake_llama import FakeLlamaCpp


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeLlamaCpp:
    """llama_cpp replaced by `FakeLlamaCpp`, and a stand-in model file as the default."""
    module = FakeLlamaCpp()
    monkeypatch.setitem(sys.modules, "llama_cpp", module)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(16))
    monkeypatch.setattr(local_module, "default_model_path", lambda name=None: model)
    # The stand-in file is no published model: skip the sha256 check (test_local_models).
    monkeypatch.setattr(local_module, "verify", lambda named, path, progress=None: path)
    return module
