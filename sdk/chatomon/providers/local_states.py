"""Warm-up prompts kept on disk (private to `local`): read once per machine, loaded after.

Reading a chat's first prompt (its system prompt and tools, about 1,320 tokens for the
demo) takes the default model about 15 s on 2 cores with AVX-512, 21 s with AVX2 alone;
loading llama.cpp's state of the same prompt from a file takes a few hundredths of a
second. `SavedPrompts` keeps the state of each prompt `LocalProvider.warm` read, in
`<cache_dir>/prompts/` (about 30 KB per token for the default model), and
`LocalModel.prefill` loads it instead of reading the prompt again, on a later start of
the same model.

A state belongs to one model file and one llama.cpp build: the file's name is made of a
sha256 of the model file (path, size, modification time) and the context size, then one
of the runtime's build (`_build`) and the prompt's tokens, so a changed prompt, model or
runtime never loads another's state. A file that does not load (cut short, from another
build) is deleted and the prompt read as if there were none. The newest `keep` files of
each model file stay; older ones are deleted, and so is a partial file a process left
when it died while saving.

A state holds the prompt it was read from, in the model's terms: warm with what may be
kept on disk (the demo warms with its system prompt, tools and a stand-in question).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["SavedPrompts", "instruction_sets"]

logger = logging.getLogger(__name__)

SUFFIX = ".kv"
STALE_PARTIAL_SECONDS = 3600
"""A partial state file older than this was left by a process that died while saving."""
STALE_STATE_DAYS = 30
"""Another model file's state unused this long is deleted (its file was likely replaced)."""
_NAMED = re.compile(rf"^[0-9a-f]{{12}}-[0-9a-f]{{24}}{re.escape(SUFFIX)}$")


_FEATURE_ON = re.compile(r"\b([A-Z][A-Z0-9_]*) = 1\b")


def instruction_sets(llama_cpp: Any) -> tuple[str, ...]:
    """What the runtime's build of llama.cpp was compiled to use (AVX2, AVX512, ...).

    Read from `llama_print_system_info` ("CPU : SSE3 = 1 | AVX512 = 0 | ..."): the names
    set to 1, in its order.
    """
    text = bytes(llama_cpp.llama_print_system_info()).decode("utf-8", "replace")
    return tuple(_FEATURE_ON.findall(text))


def _build(llama_cpp: Any) -> str:
    """The runtime's version and the instruction sets it was compiled for.

    Two builds of one version whose instruction sets differ compute slightly different
    floating-point results (an AVX-512 build and an AVX2 one answered the same question
    with different calls): a state one of them read is not the other's.
    """
    return f"{getattr(llama_cpp, '__version__', '?')}|{','.join(instruction_sets(llama_cpp))}"


class SavedPrompts:
    """The saved prompt states of one model file, in `folder` (at most `keep` files)."""

    def __init__(self, folder: Path, model_path: Path, context_size: int, keep: int) -> None:
        self.folder = folder
        self.keep = keep
        stat = model_path.stat()
        model_key = f"{model_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{context_size}"
        self._model_prefix = hashlib.sha256(model_key.encode()).hexdigest()[:12]

    def path_for(self, llama_cpp: Any, tokens: Sequence[int]) -> Path:
        """Where the state of `tokens` is kept for this model and runtime."""
        digest = hashlib.sha256(f"{_build(llama_cpp)}|".encode())
        digest.update(",".join(map(str, tokens)).encode())
        return self.folder / f"{self._model_prefix}-{digest.hexdigest()[:24]}{SUFFIX}"

    def load(self, llama_cpp: Any, llm: Any, tokens: Sequence[int]) -> bool:
        """Load the saved state of `tokens` into `llm`; False when there is none (or it failed).

        On a failure the file is deleted and `llm` keeps no token: the caller reads the
        prompt from the start.
        """
        path = self.path_for(llama_cpp, tokens)
        if not path.is_file():
            return False
        capacity = int(llm.n_ctx())
        read = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        loaded = bool(
            llama_cpp.llama_state_load_file(
                llm.ctx, str(path).encode(), read, capacity, ctypes.byref(count)
            )
        )
        if loaded and list(read[: count.value]) == list(tokens):
            llm.input_ids[: len(tokens)] = tokens
            llm.n_tokens = len(tokens)
            with contextlib.suppress(OSError):  # a read-only cache still loads
                path.touch()  # the most recently used stay (see `prune`)
            logger.info("local: a saved state of the %d-token prompt loaded", len(tokens))
            return True
        logger.warning("local: a saved prompt state did not load; reading the prompt instead")
        llm.n_tokens = 0  # whatever the failed load left in the cache is read again
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return False

    def save(self, llama_cpp: Any, llm: Any, tokens: Sequence[int]) -> None:
        """Keep `llm`'s state of `tokens` (just read) on disk; a failure is only logged."""
        path = self.path_for(llama_cpp, tokens)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            written = (llama_cpp.llama_token * len(tokens))(*tokens)
            if not llama_cpp.llama_state_save_file(
                llm.ctx, str(partial).encode(), written, len(tokens)
            ):
                raise OSError("llama.cpp could not write the state")
            partial.replace(path)  # whole or absent: another process may be loading it
        except OSError as error:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
            logger.warning("local: the prompt state was not saved (%s)", error)
            return
        self.prune()

    def prune(self) -> None:
        """Delete all but this model's `keep` most recently used states, and stale files.

        Stale: partial files of a process that died while saving, states unused for
        `STALE_STATE_DAYS` (another model file's, or one since replaced), and files of an
        older naming. A file that cannot be deleted stays.
        """
        used: list[tuple[float, Path]] = []
        stale: list[Path] = []
        now = time.time()
        for path in self.folder.iterdir():
            with contextlib.suppress(FileNotFoundError):  # another process pruned it
                age = now - path.stat().st_mtime
                if path.name.startswith(f"{self._model_prefix}-") and _NAMED.match(path.name):
                    used.append((-age, path))
                elif _NAMED.match(path.name):
                    if age > STALE_STATE_DAYS * 86400:
                        stale.append(path)
                elif path.name.endswith(".partial"):
                    if age > STALE_PARTIAL_SECONDS:
                        stale.append(path)
                elif path.suffix == SUFFIX:  # named before the model's prefix was
                    stale.append(path)
        stale += [path for _, path in sorted(used, reverse=True)[self.keep :]]
        for path in stale:
            with contextlib.suppress(OSError):  # another user's file, a read-only folder
                path.unlink(missing_ok=True)
