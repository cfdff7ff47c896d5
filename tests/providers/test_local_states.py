"""Warm-up prompts kept on disk: read once, loaded by a later warm-up of the same model.

A stand-in runtime stores a state as its tokens; the real default model saves and loads
one in the real_llm tier at the end.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chatomon.providers import Message, local_states
from chatomon.providers.base import TextChunkEvent
from chatomon.providers.local import LocalProvider, default_model_path
from chatomon.providers.local_runtime import LocalModel
from chatomon.providers.local_states import SavedPrompts, instruction_sets
from tests.providers.test_local_models import PrefillLlama


def fake_runtime(version: str = "1.0", features: bytes = b"CPU : AVX2 = 1 | ") -> Any:
    """llama_cpp's state-file surface: a state file holds the tokens, as JSON.

    `features` is what `llama_print_system_info` says the build was compiled for.
    """

    def save(ctx: object, path: bytes, tokens: Any, count: int) -> bool:
        Path(path.decode()).write_text(json.dumps(list(tokens[:count])))
        return True

    def load(ctx: object, path: bytes, out: Any, capacity: int, count: Any) -> bool:
        try:
            tokens = json.loads(Path(path.decode()).read_text())
        except ValueError:
            return False
        out[: len(tokens)] = tokens
        ctypes.cast(count, ctypes.POINTER(ctypes.c_size_t))[0] = len(tokens)
        return True

    return SimpleNamespace(
        __version__=version,
        llama_print_system_info=lambda: features,
        llama_token=ctypes.c_int32,
        llama_state_save_file=save,
        llama_state_load_file=load,
    )


def model_on(runtime: Any) -> tuple[LocalModel, PrefillLlama]:
    llm = PrefillLlama()
    llm.ctx = object()
    return LocalModel(runtime, llm, {"max_tokens": 8}, "local"), llm


def refuse(monkeypatch: pytest.MonkeyPatch, method: str, why: str) -> None:
    """Make `Path.<method>` fail as the file system would."""

    def refused(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(why)

    monkeypatch.setattr(Path, method, refused)


@pytest.fixture
def saved(tmp_path: Path) -> SavedPrompts:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")
    return SavedPrompts(tmp_path / "prompts", weights, context_size=64, keep=2)


def test_a_prompt_read_once_is_loaded_by_the_next_model_instead_of_read(
    saved: SavedPrompts,
) -> None:
    runtime = fake_runtime()
    first, llm = model_on(runtime)
    assert first.prefill("a bb ccc dddd", chunk=2, saved=saved) == 4
    assert llm.chunks == [[1, 2], [3, 4]]
    assert len(list(saved.folder.glob("*.kv"))) == 1

    second, fresh = model_on(runtime)  # a later start: an empty cache
    assert second.prefill("a bb ccc dddd", chunk=2, saved=saved) == 4
    assert fresh.chunks == []
    assert (fresh.n_tokens, fresh.input_ids[:4]) == (4, [1, 2, 3, 4])
    # What it loaded is the start of a real request: only the rest is read.
    assert second.prefill("a bb ccc dddd e", chunk=2) == 5
    assert fresh.chunks == [[1]]


def test_the_instruction_sets_are_the_ones_the_build_set() -> None:
    info = b"CPU : SSE3 = 1 | AVX512 = 0 | AVX512_VNNI = 1 | REPACK = 1 | "
    runtime = fake_runtime(features=info)

    assert instruction_sets(runtime) == ("SSE3", "AVX512_VNNI", "REPACK")


def test_another_prompt_model_file_or_runtime_never_loads_the_state(
    saved: SavedPrompts, tmp_path: Path
) -> None:
    runtime = fake_runtime()
    model_on(runtime)[0].prefill("a bb ccc", saved=saved)
    tokens = [1, 2, 3]
    assert saved.path_for(runtime, tokens).is_file()
    assert saved.path_for(runtime, [1, 2, 4]) != saved.path_for(runtime, tokens)
    assert saved.path_for(fake_runtime("2.0"), tokens) != saved.path_for(runtime, tokens)
    avx512 = fake_runtime(features=b"CPU : AVX2 = 1 | AVX512 = 1 | ")
    assert saved.path_for(avx512, tokens) != saved.path_for(runtime, tokens)
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF")
    elsewhere = SavedPrompts(saved.folder, other, context_size=64, keep=2)
    assert elsewhere.path_for(runtime, tokens) != saved.path_for(runtime, tokens)
    longer = SavedPrompts(saved.folder, tmp_path / "model.gguf", context_size=128, keep=2)
    assert longer.path_for(runtime, tokens) != saved.path_for(runtime, tokens)


def test_a_state_that_does_not_load_is_deleted_and_the_prompt_read(
    saved: SavedPrompts, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = fake_runtime()
    model_on(runtime)[0].prefill("a bb ccc", saved=saved)
    (state,) = saved.folder.glob("*.kv")
    state.write_text("cut sh")  # a state file cut short
    model, llm = model_on(runtime)
    assert model.prefill("a bb ccc", chunk=8, saved=saved) == 3
    assert llm.chunks == [[1, 2, 3]]
    assert "did not load" in caplog.text
    # Read again, the prompt is saved again, whole.
    assert json.loads(state.read_text()) == [1, 2, 3]


def test_the_newest_states_stay(saved: SavedPrompts) -> None:
    runtime = fake_runtime()
    for number, prompt in enumerate(["a", "bb", "ccc"]):
        model_on(runtime)[0].prefill(prompt, saved=saved)
        path = saved.path_for(runtime, [len(prompt)])
        os.utime(path, (time.time() + number, time.time() + number))
    kept = sorted(path.name for path in saved.folder.glob("*.kv"))
    assert kept == sorted(saved.path_for(runtime, [n]).name for n in (2, 3))


def test_each_model_keeps_its_own_newest_states_and_dead_partials_go(
    saved: SavedPrompts, tmp_path: Path
) -> None:
    runtime = fake_runtime()
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF")
    theirs = SavedPrompts(saved.folder, other, context_size=64, keep=1)
    model_on(runtime)[0].prefill("zz", saved=theirs)
    for prompt in ["a", "bb", "ccc"]:
        model_on(runtime)[0].prefill(prompt, saved=saved)
    assert theirs.path_for(runtime, [2]).is_file()  # another model's state stays
    dead = saved.folder / "x.kv.123.partial"
    dead.write_text("cut")
    fresh = saved.folder / "y.kv.456.partial"  # a process may still be writing this one
    fresh.write_text("cut")
    long_ago = time.time() - 7200
    os.utime(dead, (long_ago, long_ago))
    legacy = saved.folder / ("0" * 32 + ".kv")  # named before states had a model prefix
    legacy.write_text("old")
    saved.prune()
    assert not dead.exists() and fresh.exists() and not legacy.exists()
    # Another model's state goes once unused for STALE_STATE_DAYS.
    forgotten = time.time() - (local_states.STALE_STATE_DAYS + 1) * 86400
    os.utime(theirs.path_for(runtime, [2]), (forgotten, forgotten))
    saved.prune()
    assert not theirs.path_for(runtime, [2]).exists()


def test_a_state_that_cannot_be_deleted_stays_and_the_warm_up_goes_on(
    saved: SavedPrompts, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = fake_runtime()
    model_on(runtime)[0].prefill("a", saved=saved)
    refuse(monkeypatch, "unlink", "another user's file")
    for prompt in ["bb", "ccc", "dddd"]:  # keep=2: the oldest cannot go
        assert model_on(runtime)[0].prefill(prompt, saved=saved) == 1
    assert saved.path_for(runtime, [1]).exists()


def test_a_read_only_cache_still_loads(
    saved: SavedPrompts, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = fake_runtime()
    model_on(runtime)[0].prefill("a bb", saved=saved)
    refuse(monkeypatch, "touch", "read-only file system")
    model, llm = model_on(runtime)
    assert model.prefill("a bb", saved=saved) == 2 and llm.chunks == []


def test_a_warm_up_stopped_by_closing_saves_nothing(saved: SavedPrompts) -> None:
    model, llm = model_on(fake_runtime())
    llm.on_eval = model.closing.set
    model.prefill("a bb ccc dddd", chunk=2, saved=saved)
    assert not saved.folder.exists() or not list(saved.folder.glob("*.kv"))


def test_saved_prompts_is_a_setting_zero_turns_it_off() -> None:
    assert LocalProvider.default_config["saved_prompts"] == 4
    assert LocalProvider(model_path="any.gguf", saved_prompts=0).settings["saved_prompts"] == 0
    with pytest.raises(Exception, match="saved_prompts"):
        LocalProvider(model_path="any.gguf", saved_prompts=-1)


@pytest.mark.real_llm
def test_the_default_model_loads_a_saved_warm_up_prompt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CHATOMON_CACHE_DIR", raising=False)
    weights = default_model_path()
    if weights is None or not weights.is_file():
        if os.environ.get("CHATOMON_REQUIRE_REAL_LLM"):
            pytest.fail("the real_llm tier is required here, but the default model is missing")
        pytest.skip("the default local model is not installed (make .venv/.local-model)")
    monkeypatch.setenv("CHATOMON_CACHE_DIR", str(tmp_path))
    messages = [
        Message.system("You answer in one word. " * 40),
        Message.user("Say OK."),
    ]
    first = LocalProvider(model_path=str(weights), max_tokens=4, seed=1, temperature=0.0)
    try:
        tokens = asyncio.run(first.warm(messages))
    finally:
        first.close()
    (state,) = (tmp_path / "prompts").glob("*.kv")
    assert tokens > 100 and state.stat().st_size > 0

    second = LocalProvider(model_path=str(weights), max_tokens=4, seed=1, temperature=0.0)
    try:
        asyncio.run(second.warm())  # loads the model only
        model = second._model
        assert model is not None
        read: list[int] = []
        evaluate = model.llm.eval

        def counted(batch: list[int]) -> None:
            read.extend(batch)
            evaluate(batch)

        model.llm.eval = counted
        assert asyncio.run(second.warm(messages)) == tokens
        assert read == [] and model.llm.n_tokens == tokens  # loaded, not read
        answer = asyncio.run(_answer(second, messages))
    finally:
        second.close()
    assert answer.strip()


async def _answer(provider: LocalProvider, messages: list[Message]) -> str:
    return "".join(
        [
            event.content
            async for event in provider.complete(messages, [])
            if isinstance(event, TextChunkEvent)
        ]
    )
